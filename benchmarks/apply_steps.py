"""The Replicat's stream apply alone, step by step: where its time goes per step size.

A trail of ``--rows`` updates of ``bench.orders`` (``apply_pg``'s table, every column in each
update, as the PostgreSQL Extract writes them; ``--op insert``: inserts of new rows;
``--op mixed``: ``apply_pg``'s ``mixed`` preset, inserts then updates of a fifth and deletes
of a tenth of them, key-only deletes, into an empty table) in
``--txn-rows``-row transactions is applied to a fresh embedded PostgreSQL holding those rows,
the way the stream apply does it (``apply_range`` with the checkpoint row moved, BATCHSQL),
in steps of at most ``--step-records`` change records each — one step for a backlog, a few
transactions for a live trail.  No Spark, no Extract: only the apply's own driver work and
the target backend.

Prints, per step size, rows/s by wall clock and the CPU seconds per change of this process
(the driver: reading, planning, sending) and of the target backend (the set statements, the
checkpoint row, the commits).  ``--src DIR`` runs another checkout's ``src`` (an A/B
against the code before a change, interleaved round by round on the same machine).

``--live``: the trail grows as on a live system instead — each step's transactions are
written, then the Replicat's own :class:`ApplyStreamer` is asked (``sync``) to apply them —
so each step is what the streamer does on a live trail (its look, its boundary scan
resuming where the last ended, ``apply_range``, its bookkeeping); the driver's figure is
the streamer thread's CPU alone (the writing is not counted).

    .venv/bin/python benchmarks/apply_steps.py [--rows 100000] [--txn-rows 100]
        [--step-records 100000 1000 100] [--repeat 2] [--op update|insert|mixed] [--live]
        [--src OTHER/src]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import os, shutil, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import psycopg
from trailgate.apply import PgApplier
from trailgate.apply.checkpoint_table import STREAM_BATCH, add_checkpoint_table
from trailgate.capture.postgres.types import classify, trail_from_pg_text
from trailgate.changes.routing import Router
from trailgate.db.cluster import Cluster
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition, Transaction
from trailgate.params import parse_params_text
from trailgate.replicat.range_apply import apply_range
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail.writer import TrailWriter

rows, txn_rows, step = (int(a) for a in sys.argv[2:5])
work = Path(sys.argv[5])
op = sys.argv[6]
live = sys.argv[7] == "live"
COLS = [("id", "bigint"), ("customer", "text"), ("amount", "numeric(12,2)"),
        ("created", "timestamp with time zone"), ("note", "text")]
table = TableDef("bench", "orders", [Column(n, i, classify(t).kind, t, classify(t).length,
                                            classify(t).precision, classify(t).scale)
                                     for i, (n, t) in enumerate(COLS)], ["id"], "PRIMARY")
kinds = [classify(t) for _, t in COLS]


def image(k, note="upd"):
    texts = [str(k), f"customer {k}", f"{k * 1.25 + 1:.2f}", "2026-11-28 10:00:00.123456+00",
             note]
    return {i: trail_from_pg_text(v, kinds[i]) for i, v in enumerate(texts)}


cluster = Cluster(work / "pg", fast=True)
cluster.create()
cluster.start()
try:
    conninfo = cluster.create_database("target")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA bench; CREATE TABLE bench.orders (id bigint PRIMARY KEY, "
                     "customer text, amount numeric(12,2), created timestamptz, note text)")
        add_checkpoint_table(conn, "gg.ckpt")
        if op == "update":
            conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                         "clock_timestamp(), md5(g::text) FROM generate_series(1, %s) g",
                         (rows,))
        conn.execute("VACUUM ANALYZE bench.orders")
    prefix = str(work / "trail" / "ut")
    (work / "trail").mkdir()

    def transactions():
        kind = OpType.FIELD_COMP if op == "update" else OpType.INSERT
        for n in range(0, rows, txn_rows):
            changes = [Change(kind, "bench.orders", image(k, "ins" if op == "mixed" else "upd"))
                       for k in range(n + 1, min(n + txn_rows, rows) + 1)]
            yield Transaction(f"0.{n}.1", 100 + n, changes, 2_460_000_000_000_000 + n)
        if op != "mixed":
            return
        # apply_pg's mixed preset: updates of a fifth, then deletes of a tenth (key only)
        for n, (first, every, kind) in enumerate([(1, txn_rows * 5, OpType.FIELD_COMP),
                                                  (3, txn_rows * 10, OpType.DELETE)]):
            for start in range(first, rows + 1, every):
                keys = range(start, min(start + txn_rows - 1, rows) + 1)
                changes = ([Change(kind, "bench.orders", image(k, "upd")) for k in keys]
                           if kind is OpType.FIELD_COMP else
                           [Change(kind, "bench.orders", before={0: image(k)[0]})
                            for k in keys])
                at = rows * (n + 1) + start
                yield Transaction(f"{n + 1}.{start}.1", 100 + at, changes,
                                  2_460_000_000_000_000 + at)

    if not live:
        with TrailWriter(prefix, fsync=False) as w:
            for txn in transactions():
                w.write_transaction(txn, {"bench.orders": table})
    params = parse_params_text("REPLICAT rep\nTARGETDB x\nBATCHSQL\n"
                               "MAP bench.orders, TARGET bench.orders;\n", "rep.prm")
    router = Router.of([("bench.*", None)], [])
    applier = PgApplier(conninfo, params, checkpoint_table="gg.ckpt")
    applier.validate()
    backend = applier.conn.info.backend_pid
    tick = os.sysconf("SC_CLK_TCK")

    def backend_cpu():
        fields = Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    at, recorded, steps = TrailPosition(0, 0), "", 0
    if live:
        from trailgate.replicat.stream_apply import ApplyStreamer
        # each step's transactions (at least one) written, then applied by the streamer
        per_step = max(1, step // txn_rows)
        writer = TrailWriter(prefix, fsync=False)
        txns = list(transactions())
        writer.write_transaction(txns[0], {"bench.orders": table})  # the file exists
        streamer = ApplyStreamer(applier, prefix, router, at)
        clock = time.pthread_getcpuclockid(streamer._thread.ident)
        streamer.sync(writer.write_through())
        first = streamer.transactions
        b0, c0, t0 = backend_cpu(), time.clock_gettime(clock), time.perf_counter()
        for n in range(1, len(txns), per_step):
            for txn in txns[n:n + per_step]:
                writer.write_transaction(txn, {"bench.orders": table})
            streamer.sync(writer.write_through())
        wall, pg = time.perf_counter() - t0, backend_cpu() - b0
        driver = time.clock_gettime(clock) - c0
        steps = streamer.transactions - first
        rows -= len(txns[0].changes)  # the first transaction was applied before the clock
        streamer.close()
        writer.close()
    else:
        b0, c0, t0 = backend_cpu(), time.process_time(), time.perf_counter()
        while True:
            end, _, _ = scan_boundary(prefix, at, max_records=step)
            if end <= at:
                break
            apply_range(applier, STREAM_BATCH, prefix, at, end, router,
                        advance=(recorded, str(end)))
            recorded, at, steps = str(end), end, steps + 1
        wall, driver, pg = (time.perf_counter() - t0, time.process_time() - c0,
                            backend_cpu() - b0)
    with psycopg.connect(conninfo) as conn:
        done = conn.execute("SELECT count(*) FROM bench.orders WHERE note = 'upd'").fetchone()[0]
        held = conn.execute("SELECT count(*) FROM bench.orders").fetchone()[0]
    applier.close()
    expected = rows + (len(txns[0].changes) if live else 0)
    if op == "mixed":  # every change timed; the rows left, and those of them updated
        txns, deleted, updated = list(transactions()), set(), set()
        for t in txns:
            for c in t.changes:
                if c.op is OpType.DELETE:
                    deleted.add(int(c.before[0]))
                elif c.op is OpType.FIELD_COMP:
                    updated.add(int(c.after[0]))
        inserted = rows + (len(txns[0].changes) if live else 0)
        rows = sum(len(t.changes) for t in txns) - (len(txns[0].changes) if live else 0)
        expected = len(updated - deleted) if held == inserted - len(deleted) else -1
    if done != expected:
        raise SystemExit(f"{done} rows updated of {expected}")
    print(steps, wall, driver, pg, applier.set_fallbacks, rows)
finally:
    cluster.stop()
    cluster.destroy()
'''


def run(src: Path, rows: int, txn_rows: int, step: int, op: str, live: bool
        ) -> tuple[int, float, float, float, int, int]:
    """One round in a fresh process (its own ``src``) and a fresh server: steps, wall,
    driver and backend CPU seconds, fallbacks, rows timed."""
    work = Path(tempfile.mkdtemp(prefix="tg-bench-steps-"))
    os.chmod(work, 0o755)  # the server's OS user must reach its directory
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(src), str(rows), str(txn_rows),
                              str(step), str(work), op, "live" if live else "backlog"],
                             capture_output=True, text=True,
                             check=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"a round failed:\n{out.stderr[-3000:]}")
    steps, wall, driver, pg, fallbacks, timed = out.stdout.split()[-6:]
    return int(steps), float(wall), float(driver), float(pg), int(fallbacks), int(timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--txn-rows", type=int, default=100)
    parser.add_argument("--step-records", type=int, nargs="+", default=[100_000, 1000, 100])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--op", choices=("update", "insert", "mixed"), default="update",
                        help="the trail's changes: updates of existing rows, inserts, or "
                             "apply_pg's mixed preset (inserts, then updates of a fifth and "
                             "deletes of a tenth of them)")
    parser.add_argument("--src", type=Path, help="another checkout's src, run beside this one")
    parser.add_argument("--live", action="store_true",
                        help="grow the trail step by step and apply it with the streamer")
    args = parser.parse_args()
    sources = [("this", ROOT / "src")] + ([("other", args.src)] if args.src else [])
    print(f"{args.rows:,} {args.op}s in {args.txn_rows}-row transactions"
          f"{', live' if args.live else ''}; load {os.getloadavg()[0]:.1f}")
    print(f"{'step records':>12} {'code':>6} {'steps':>6} {'rows/s':>9} "
          f"{'driver µs/chg':>14} {'backend µs/chg':>15} {'driver µs/step':>15} "
          f"{'backend µs/step':>16} {'fallbacks':>9}")
    for step in args.step_records:
        for _ in range(args.repeat):
            for name, src in sources:
                steps, wall, driver, pg, fallbacks, rows = run(
                    src, args.rows, args.txn_rows, step, args.op, args.live)
                print(f"{step:>12,} {name:>6} {steps:>6} {rows / wall:>9,.0f} "
                      f"{driver / rows * 1e6:>14.2f} {pg / rows * 1e6:>15.2f} "
                      f"{driver / steps * 1e6:>15.0f} {pg / steps * 1e6:>16.0f} "
                      f"{fallbacks:>9}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
