"""Extract capture rate beside PostgreSQL's own pg_recvlogical, on the same changes.

    ./dev bench capture_pg [--rows 200000] [--txn-rows 100] [--keep DIR]

Generates a workload on an embedded PostgreSQL (inserts, updates, deletes in transactions of
``--txn-rows`` rows) with two slots created before it, and measures:

* ``pg_recvlogical`` reads one slot (pgoutput, the same publication) to the WAL end the
  workload reached, writing the stream to a file; its rate is rows / its wall time;
* ``trailgate run extract`` runs first, warmed up by one transaction (Spark's start-up is
  printed apart), and captures while the workload runs: its rate is the workload's row
  changes / the time from the workload's start until the checkpoint says the trail holds
  them all (steady state, as a running Extract sees it).

Prints both rates and their ratio (the aim: Extract at least half of pg_recvlogical).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from trailgate.capture.postgres.slots import add_extract  # noqa: E402
from trailgate.capture.postgres.trandata import add_trandata  # noqa: E402
from trailgate.db.cluster import Cluster, postgres_bin_dir  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402


def workload(conninfo: str, rows: int, txn_rows: int) -> int:
    """Inserts ``rows`` rows, then updates a fifth and deletes a tenth of them, all in
    transactions of ``txn_rows`` rows; returns the number of row changes."""
    changes = 0
    with connect(conninfo, autocommit=False) as conn:
        for start in range(1, rows + 1, txn_rows):
            stop = min(start + txn_rows - 1, rows)
            conn.execute("INSERT INTO bench SELECT g, 'customer ' || g, g * 1.25, now(), "
                         "md5(g::text) FROM generate_series(%s::int, %s::int) g",
                         (start, stop))
            conn.commit()
            changes += stop - start + 1
        for start in range(1, rows + 1, txn_rows * 5):
            stop = min(start + txn_rows - 1, rows)
            changes += conn.execute("UPDATE bench SET amount = amount + 1 WHERE id BETWEEN "
                                    "%s AND %s", (start, stop)).rowcount
            conn.commit()
        for start in range(3, rows + 1, txn_rows * 10):
            stop = min(start + txn_rows - 1, rows)
            changes += conn.execute("DELETE FROM bench WHERE id BETWEEN %s AND %s",
                                    (start, stop)).rowcount
            conn.commit()
    return changes


def flush_lsn(conninfo: str) -> str:
    with connect(conninfo) as conn:
        return str(conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0])


def run_recvlogical(cluster: Cluster, conninfo: str, slot: str, endpos: str,
                    out: Path) -> float:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(conninfo)
    env = dict(os.environ, PGPASSWORD=str(params.get("password", "")))
    argv = [str(postgres_bin_dir() / "pg_recvlogical"), "-h", str(params["host"]),
            "-p", str(params["port"]), "-U", str(params["user"]), "-d", str(params["dbname"]),
            "--slot", slot, "--start", "--no-loop", "-f", str(out), "-E", endpos,
            "-o", "proto_version=1", "-o", "publication_names=trailgate"]
    t0 = time.monotonic()
    subprocess.run(argv, check=True, env=env, capture_output=True)
    return time.monotonic() - t0


def _checkpoint_lsn(home: Home) -> int:
    try:
        ck = json.loads((home.dirchk / "BENCH.cpe").read_text())
    except (OSError, ValueError):
        return 0
    return int((ck.get("read_position") or {}).get("lsn", 0))


def _trail_rows(home: Home) -> int:
    try:
        ck = json.loads((home.dirchk / "BENCH.cpe").read_text())
    except (OSError, ValueError):
        return 0
    return sum(sum(v for k, v in s.items() if k != "discards")
               for s in ck["stats"].values())


def run_extract(home: Home, conninfo: str, rows: int, txn_rows: int
                ) -> tuple[float, int, float]:
    """Start the Extract, warm it up, run the workload while it captures, and time until
    the trail holds everything: (seconds, row changes, start-up seconds)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    t0 = time.monotonic()
    log = open(home.path / "extract.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "trailgate.cli", "--home", str(home.path),
                             "run", "extract", "BENCH", "--trigger", "0.2"], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        with connect(conninfo) as conn:  # a first transaction: Spark's workers are warm after
            conn.execute("INSERT INTO bench VALUES (0, 'warm-up', 0, now(), '')")
        target = flush_lsn_int(conninfo)
        _wait(lambda: _checkpoint_lsn(home) >= target, proc, home)
        startup = time.monotonic() - t0
        before = _trail_rows(home)
        t1 = time.monotonic()
        changes = workload(conninfo, rows, txn_rows)
        target = flush_lsn_int(conninfo)
        _wait(lambda: _checkpoint_lsn(home) >= target, proc, home)
        elapsed = time.monotonic() - t1
        captured = _trail_rows(home) - before
        if captured != changes:
            print(f"WARNING: the trail got {captured:,} changes, the workload made {changes:,}")
        return elapsed, changes, startup
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
        log.close()


def _wait(done, proc: subprocess.Popen, home: Home) -> None:
    while not done():
        if proc.poll() is not None:
            raise SystemExit("the Extract stopped:\n" +
                             (home.path / "extract.log").read_text()[-3000:])
        time.sleep(0.05)


def flush_lsn_int(conninfo: str) -> int:
    with connect(conninfo) as conn:
        return int(conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                                ).fetchone()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--txn-rows", type=int, default=100)
    parser.add_argument("--keep", help="keep the cluster and home in this directory")
    args = parser.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="tg-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    cluster = Cluster(base / "pg", fast=True)
    try:
        cluster.create()
        cluster.start()
        conninfo = cluster.create_database("bench")
        with connect(conninfo) as conn:
            conn.execute("CREATE TABLE bench (id int PRIMARY KEY, customer text, "
                         "amount numeric(12,2), at timestamptz, note text)")
            add_trandata(conn, "public.bench")
            add_extract(conn, "RECV")
        home = Home(base / "home").create()
        home.add_group(GroupInfo("BENCH", "EXTRACT", "TRANLOG"))
        home.add_trail("BENCH", TrailInfo("./dirdat/bb", megabytes=500))
        with connect(conninfo) as conn:
            add_extract(conn, "BENCH")
        (home.dirprm / "bench.prm").write_text(
            f"EXTRACT bench\nSOURCEDB {conninfo}\nEXTTRAIL ./dirdat/bb\nTABLE public.bench;\n")
        # the Extract first, capturing while the workload runs (steady state: Spark is up)
        cap_s, changes, startup = run_extract(home, conninfo, args.rows, args.txn_rows)
        rate = changes / cap_s
        print(f"workload: {changes:,} row changes in transactions of {args.txn_rows} rows")
        print(f"Extract:        {cap_s:.2f} s from the workload's start until the trail held "
              f"it all, {rate:,.0f} rows/s (Spark start-up before it: {startup:.1f} s)")
        # pg_recvlogical reads the same changes from its own slot, after the fact
        endpos = flush_lsn(conninfo)
        recv_s = run_recvlogical(cluster, conninfo, "trailgate_recv", endpos,
                                 base / "recvlogical.out")
        recv_rate = changes / recv_s
        print(f"pg_recvlogical: {recv_s:.2f} s, {recv_rate:,.0f} rows/s")
        print(f"ratio Extract / pg_recvlogical: {rate / recv_rate:.2f} (aim: >= 0.5)")
    finally:
        cluster.stop()
        cluster.destroy()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
