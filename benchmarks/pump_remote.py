"""Records/s and MB/s through a remote Data Pump over loopback — plain TCP, TLS, TLS with
COMPRESS — beside the local Pump writing to another directory, in one run.

    ./dev bench pump_remote [--txns 20000] [--rows 5] [--payload 200] [--repeat 2]
                            [--keep DIR]

One input trail (``--txns`` transactions of ``--rows`` inserts, each with a ``--payload``-
byte text) is pumped, with ``--once``, by a Pump in a fresh home per round: to a local
directory (RMTTRAIL without RMTHOST), and to a ``trailgate collector`` process on
127.0.0.1 (a token; TLS with a test CA's certificate; TLS and COMPRESS).  A round is timed
from the Pump's start to its return, which for a remote Pump is after the collector has
acknowledged the last byte fsynced; the Spark session is shared, started and warmed up by
an untimed local round before.  Variants alternate within each repeat, each first in turn,
and the best round of each counts (the machine is shared); ratios are to the local Pump of
the same run.  The aim (issue 22): ≥ 1.0× local for plain, ≥ 0.7× with TLS.  The sync
itself (14 MB to a collector process) takes tenths of a second; the rest is the Pump's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))  # the test certificates' maker

from collector_support import make_certs  # noqa: E402

from trailgate.collector.cli import TOKEN_DOMAIN  # noqa: E402
from trailgate.db.connect import CredentialStore  # noqa: E402
from trailgate.errors import EngineError  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402
from trailgate.model import Change, OpType, Transaction  # noqa: E402
from trailgate.trail import TrailWriter  # noqa: E402
from trailgate.trail.naming import TrailName  # noqa: E402

TOKEN = "bench-token"
VARIANTS = ("local", "plain", "tls", "tls+compress")


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def write_input(trail: Path, txns: int, rows: int, payload: int) -> int:
    from trailgate.capture.postgres.types import classify
    from trailgate.model import Column, TableDef

    cols = []
    for i, (name, kind) in enumerate((("id", "bigint"), ("note", "text"))):
        t = classify(kind)
        cols.append(Column(name, i, t.kind, kind, t.length, t.precision, t.scale))
    table = TableDef("bench", "t", cols, ["id"])
    writer = TrailWriter(trail, megabytes=500, fsync=False)
    text = (b"0123456789abcdef" * (payload // 16 + 1))[:payload]
    n = 0
    for t in range(txns):
        changes = []
        for _ in range(rows):
            n += 1
            changes.append(Change(OpType.INSERT, "bench.t", io_time=1000 + n,
                                  after={0: str(n).encode(), 1: text}))
        writer.write_transaction(Transaction(f"0.{t}.1", 10_000 + t, changes),
                                 {"bench.t": table})
    writer.close()
    return n


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Collector:
    def __init__(self, home: Home, tls: tuple[str, str] | None):
        home.create()
        CredentialStore(home.path).add("bench", "collector", TOKEN, TOKEN_DOMAIN)
        self.port = free_port()
        cmd = [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "collector",
               "--port", str(self.port), "--token-alias", "bench"]
        if tls:
            cmd += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        with open(home.path / "collector.log", "ab") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the collector did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def pump_home(path: Path, source: Path, rmthost: str, trail: str) -> Home:
    home = Home(path).create()
    CredentialStore(home.path).add("bench", "pump1", TOKEN, TOKEN_DOMAIN)
    home.add_group(GroupInfo("PUMP1", "EXTRACT", "EXTTRAILSOURCE", str(source),
                             begin={"seqno": 0, "rba": 0}))
    home.add_trail("PUMP1", TrailInfo(trail, "RMTTRAIL", megabytes=500))
    home.param_file("PUMP1").write_text(
        f"EXTRACT pump1\n{rmthost}RMTTRAIL {trail}\nPASSTHRU\nTABLE bench.*;\n")
    return home


def trail_size(trail: Path) -> int:
    name = TrailName(trail)
    return sum(name.file(s).stat().st_size for s in name.sequence_numbers())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--txns", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--payload", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", help="work in this directory and keep it")
    opts = parser.parse_args()
    work = Path(opts.keep) if opts.keep else Path(tempfile.mkdtemp(prefix="tg-bench-pr-"))
    work.mkdir(parents=True, exist_ok=True)
    from trailgate.pump.group import run_pump
    from trailgate.spark.session import get_spark

    try:
        source = work / "input" / "aa"
        records = write_input(source, opts.txns, opts.rows, opts.payload)
        say(f"input: {records} records in {opts.txns} transactions, "
            f"{trail_size(source) / 1e6:.1f} MB; load {os.getloadavg()[0]:.1f}")
        certs = make_certs(work / "certs")
        plain = Collector(Home(work / "target-plain"), None)
        tls = Collector(Home(work / "target-tls"), (certs.server_cert, certs.server_key))
        spark = get_spark(app_name="bench pump_remote")
        best: dict[str, float] = {}
        size: dict[str, int] = {}
        args = argparse.Namespace(once=True, max_batches=None, trigger=None)
        # untimed: Spark's first query (the JVM's code paths, the Python workers) costs
        # seconds that no variant should pay
        warm = pump_home(work / "warm-up", source, "", str(work / "warm-up-out" / "wu"))
        assert run_pump(warm, "PUMP1", args, spark=spark) == 0
        try:
            for rep in range(opts.repeat):
                order = VARIANTS[rep % len(VARIANTS):] + VARIANTS[:rep % len(VARIANTS)]
                for variant in order:  # each variant first in turn: no place is favoured
                    number = VARIANTS.index(variant)
                    prefix = f"{'lptc'[number]}{rep % 10}"
                    trail = f"./dirdat/{prefix}"
                    if variant == "local":
                        out = work / f"local-out-{rep}" / prefix
                        home = pump_home(work / f"{variant}-{rep}", source, "", str(out))
                    else:
                        collector = plain if variant == "plain" else tls
                        extra = (f", TLS, CAFILE {certs.ca}" if variant != "plain" else "")
                        extra += ", COMPRESS" if variant.endswith("compress") else ""
                        home = pump_home(work / f"{variant}-{rep}", source,
                                         f"RMTHOST localhost, PORT {collector.port}, "
                                         f"TOKENALIAS bench{extra}\n", trail)
                        out = (work / ("target-plain" if variant == "plain" else
                                       "target-tls") / "dirdat" / prefix)
                    start = time.perf_counter()
                    try:
                        assert run_pump(home, "PUMP1", args, spark=spark) == 0
                    except EngineError as exc:  # Spark's own (a worker late under load)
                        say(f"  round {rep + 1} {variant}: {exc}; not counted")
                        continue
                    took = time.perf_counter() - start
                    size[variant] = trail_size(out)
                    best[variant] = min(best.get(variant, took), took)
                    say(f"  round {rep + 1} {variant:<13} {took:7.2f} s  "
                        f"{records / took:10,.0f} records/s  "
                        f"{size[variant] / took / 1e6:7.1f} MB/s")
        finally:
            plain.stop()
            tls.stop()
        say(f"\nbest of {opts.repeat} (load {os.getloadavg()[0]:.1f}):")
        for variant in VARIANTS:
            if variant not in best or "local" not in best:
                say(f"  {variant:<13} no round counted")
                continue
            took = best[variant]
            say(f"  {variant:<13} {records / took:10,.0f} records/s  "
                f"{size[variant] / took / 1e6:7.1f} MB/s  "
                f"{best['local'] / took:5.2f}x local")
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
