"""What COMMIT NOWAIT saves the Replicat's stream apply on a target that syncs its disk.

A fresh embedded PostgreSQL with ``fsync`` on (the other benchmarks' servers turn it off, so
a commit's wait costs them nothing) holds ``bench.orders``; one-row update transactions are
appended to a trail one at a time, and the Replicat's own :class:`ApplyStreamer` applies each
as it lands.  Per transaction: the time from its write to its step's commit, for steps that
wait for the target's disk (``DBOPTIONS DISABLECOMMITNOWAIT``) and for steps that do not (the
default), in alternating rounds on the same server; then the ratio.

    .venv/bin/python benchmarks/commit_nowait.py [--txns 400] [--repeat 2] [--gap-ms 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import psycopg  # noqa: E402

from trailgate.apply import PgApplier  # noqa: E402
from trailgate.apply.checkpoint_table import add_checkpoint_table  # noqa: E402
from trailgate.capture.postgres.types import classify, trail_from_pg_text  # noqa: E402
from trailgate.changes.routing import Router  # noqa: E402
from trailgate.db.cluster import Cluster  # noqa: E402
from trailgate.model import (  # noqa: E402
    Change,
    Column,
    OpType,
    TableDef,
    TrailPosition,
    Transaction,
)
from trailgate.params import parse_params_text  # noqa: E402
from trailgate.replicat.stream_apply import ApplyStreamer  # noqa: E402
from trailgate.trail.writer import TrailWriter  # noqa: E402

KINDS = [classify("bigint"), classify("text")]
TABLE = TableDef("bench", "orders", [Column(n, i, k.kind, t, k.length, k.precision, k.scale)
                                     for i, (n, t, k) in enumerate(
                                         [("id", "bigint", KINDS[0]),
                                          ("note", "text", KINDS[1])])], ["id"], "PRIMARY")


def image(key: int, note: str) -> dict[int, bytes]:
    return {0: trail_from_pg_text(str(key), KINDS[0]), 1: trail_from_pg_text(note, KINDS[1])}
PARAMS = "REPLICAT rep\nTARGETDB x\nBATCHSQL\nMAP bench.orders, TARGET bench.orders;\n"


def one_round(conninfo: str, trail: Path, txns: int, nowait: bool, base: int, gap: float
              ) -> list[float]:
    """Seconds from each transaction's write to its step's commit."""
    shutil.rmtree(trail, ignore_errors=True)
    trail.mkdir()
    prefix = str(trail / "cn")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DELETE FROM gg.ckpt")
    applier = PgApplier(conninfo, parse_params_text(PARAMS, "rep.prm"),
                        checkpoint_table="gg.ckpt")
    writer = TrailWriter(prefix, fsync=False)
    first = Transaction("0.0.1", base, [Change(OpType.FIELD_COMP, "bench.orders",
                                               image(1, "first"))], 2_460_000_000_000_000)
    writer.write_transaction(first, {"bench.orders": TABLE})
    streamer = ApplyStreamer(applier, prefix, Router.of([("bench.*", None)], []),
                             TrailPosition(0, 0), nowait=nowait)
    lags: list[float] = []
    try:
        streamer.sync(writer.write_through())
        for n in range(1, txns + 1):
            key = (n % 1000) + 1
            txn = Transaction(f"0.{n}.1", base + n, [Change(
                OpType.FIELD_COMP, "bench.orders", image(key, "upd"))],
                2_460_000_000_000_000 + n)
            writer.write_transaction(txn, {"bench.orders": TABLE})
            end = writer.write_through()
            t0 = time.perf_counter()
            while streamer._progress.position < end:  # committed, durable or not
                time.sleep(0.0001)
            lags.append(time.perf_counter() - t0)
            time.sleep(gap)  # a trickle, past the streamer's step spacing: one step each
    finally:
        streamer.close()
        writer.close()
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--txns", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--gap-ms", type=float, default=20.0,
                        help="pause after each transaction is applied (default 20 ms)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tg-bench-nowait-"))
    os.chmod(work, 0o755)  # the server's OS user must reach its directory
    cluster = Cluster(work / "pg")  # fsync on: a commit that waits pays for the disk
    cluster.create()
    cluster.start()
    try:
        conninfo = cluster.create_database("target")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA bench; CREATE TABLE bench.orders "
                         "(id bigint PRIMARY KEY, note text)")
            conn.execute("INSERT INTO bench.orders SELECT g, 'x' FROM generate_series(1, 1001) g")
            add_checkpoint_table(conn, "gg.ckpt")
        results: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.repeat):
            for nowait in (False, True):
                lags = one_round(conninfo, work / "trail", args.txns, nowait,
                                 1000 + r * 10 * args.txns, args.gap_ms / 1000)
                results[nowait].extend(lags)
                print(f"round {r + 1} {'nowait' if nowait else 'wait  '}: "
                      f"p50 {statistics.median(lags) * 1000:6.2f} ms", flush=True)
    finally:
        cluster.stop()
        cluster.destroy()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'one-row steps, write → commit':<34} {'wait':>10} {'nowait':>10} {'ratio':>7}")
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        w, n = (sorted(results[k])[int(q * (len(results[k]) - 1))] for k in (False, True))
        print(f"{name:<34} {w * 1000:>8.2f}ms {n * 1000:>8.2f}ms {w / n:>7.2f}")
    mean_w, mean_n = (statistics.fmean(results[k]) for k in (False, True))
    print(f"{'mean':<34} {mean_w * 1000:>8.2f}ms {mean_n * 1000:>8.2f}ms "
          f"{mean_w / mean_n:>7.2f}   (wait / nowait: how many times longer a step takes)")


if __name__ == "__main__":
    main()
