"""The compare beside hashing both tables with one SQL aggregate each, in the same run.

    ./dev bench compare [--rows 5000000] [--repeat 2] [--keep DIR]

Two embedded PostgreSQL servers hold the same three tables of ten columns (60/30/10 % of
``--rows``; the target filled by ``pg_dump --data-only | psql``).  Each round times:

1. the reference: per table, one aggregate over every row —
   ``SELECT count(*), sum(hashtextextended(t::text, 0)) FROM t`` — the least a person does
   to learn whether two copies agree (and it says nothing about where they differ); the two
   servers are queried at the same time (a connection each, its tables one after another),
   as the compare reads both at once; the one-after-the-other time is printed beside it;
2. ``trailgate compare`` of the same tables (the Extract's TABLEs, the Replicat's MAPs), on
   a ``local[2]`` Spark session started beforehand (start-up printed apart): its hash pass
   over key ranges finds them equal.

Then a few rows are changed on the target and the compare runs again: it names every
difference (the row pass reads only the ranges whose hashes differ).  The ratio is the
reference's best time / the compare's best time on equal tables (the aim: at least 0.5).
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from initial_load import DDL, FILL, TABLES, pg_dump_pipe  # noqa: E402
from trailgate.compare.run import CompareOptions, compare  # noqa: E402
from trailgate.db.cluster import Cluster  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402


def _side(conninfo: str) -> list[tuple[int, int]]:
    with connect(conninfo) as conn:
        return [conn.execute(f"SELECT count(*), sum(hashtextextended(t::text, 0)) "
                             f"FROM {table} t").fetchone() for table in TABLES]


def reference(src: str, tgt: str, *, together: bool = True) -> float:
    """Seconds to hash both sides: both servers at once (``together``) or one after the
    other."""
    started = time.monotonic()
    if together:
        with ThreadPoolExecutor(2) as pool:
            a, b = pool.map(_side, (src, tgt))
    else:
        a, b = _side(src), _side(tgt)
    elapsed = time.monotonic() - started
    assert a == b, "the copies differ before the benchmark"
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="work in DIR and leave it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tg-bench-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    source, target = Cluster(work / "src", fast=True), Cluster(work / "tgt", fast=True)
    try:
        for c in (source, target):
            if not c.exists():
                c.create()
            c.start()
        src, tgt = source.create_database("app"), target.create_database("app")
        print(f"Filling {args.rows:,} rows in {len(TABLES)} tables of 10 columns on both "
              f"servers …", flush=True)
        with connect(src) as conn:
            for name, share in TABLES.items():
                conn.execute(DDL.format(name=name))
                conn.execute(FILL.format(name=name, rows=int(args.rows * share)))
            conn.execute("VACUUM ANALYZE")
        with connect(tgt) as conn:
            for name in TABLES:
                conn.execute(DDL.format(name=name))
        pg_dump_pipe(src, tgt)
        with connect(tgt) as conn:
            conn.execute("VACUUM ANALYZE")
        home = Home(work / "gg").create()
        if home.group("EXT") is None:
            home.add_group(GroupInfo("EXT", "EXTRACT", "TRANLOG"))
            home.add_trail("EXT", TrailInfo("./dirdat/aa"))
            home.add_group(GroupInfo("REP", "REPLICAT", "EXTTRAIL", "./dirdat/aa"))
        (home.dirprm / "ext.prm").write_text(f"EXTRACT ext\nSOURCEDB {src}\n"
                                             "EXTTRAIL ./dirdat/aa\nTABLE bench.t_*;\n")
        (home.dirprm / "rep.prm").write_text(f"REPLICAT rep\nTARGETDB {tgt}\n"
                                             "MAP bench.*, TARGET bench.*;\n")
        from trailgate.spark import get_spark

        started = time.monotonic()
        spark = get_spark("trailgate bench compare", master="local[2]")
        spark_start = time.monotonic() - started
        opts = CompareOptions(confirm=False, spark=spark, out=io.StringIO())
        started = time.monotonic()
        compare(home, "EXT", "REP", CompareOptions(confirm=False, spark=spark,
                                                   out=io.StringIO(), tables=["bench.t_c"]))
        warm_up = time.monotonic() - started
        refs, serial, runs = [], [], []
        for r in range(args.repeat):
            refs.append(reference(src, tgt))
            serial.append(reference(src, tgt, together=False))
            started = time.monotonic()
            outcome = compare(home, "EXT", "REP", opts)
            runs.append(time.monotonic() - started)
            assert outcome.in_sync, "the compare found differences in equal tables"
            print(f"round {r + 1}: one aggregate per table and side {refs[-1]:.1f} s "
                  f"(sides one after the other {serial[-1]:.1f} s), compare {runs[-1]:.1f} s",
                  flush=True)
        with connect(tgt) as conn:
            conn.execute("DELETE FROM bench.t_a WHERE id = 17")
            conn.execute("UPDATE bench.t_b SET note = note || '!' WHERE id = 1234")
            conn.execute("UPDATE bench.t_c SET created = created + interval '1 microsecond' "
                         "WHERE id = 99")
            conn.execute("INSERT INTO bench.t_c (id, customer) VALUES (999999999, 1)")
        started = time.monotonic()
        out = io.StringIO()
        outcome = compare(home, "EXT", "REP", CompareOptions(confirm=False, spark=spark,
                                                             out=out))
        located = time.monotonic() - started
        found = sum(r.out_of_sync for r in outcome.results)
        rows = sum(r.compared for r in outcome.results)
        best_ref, best = min(refs), min(runs)
        print()
        print(f"{'':<44}{'seconds':>10}{'rows/s':>14}")
        print(f"{'one SQL aggregate per table, sides at once':<44}{best_ref:>10.1f}"
              f"{2 * rows / best_ref:>14,.0f}")
        print(f"{'  the same, one side after the other':<44}{min(serial):>10.1f}"
              f"{2 * rows / min(serial):>14,.0f}")
        print(f"{'trailgate compare, equal tables':<44}{best:>10.1f}{2 * rows / best:>14,.0f}")
        print(f"{'trailgate compare, 4 differences located':<44}{located:>10.1f}"
              f"{2 * rows / located:>14,.0f}")
        print(f"\n{rows:,} rows per side; found {found} of 4 differences; best of "
              f"{args.repeat} (all: reference {', '.join(f'{x:.1f}' for x in refs)} s; "
              f"compare {', '.join(f'{x:.1f}' for x in runs)} s)")
        print(f"apart: Spark session start-up {spark_start:.1f} s, first compare (Python "
              f"workers started) {warm_up:.1f} s")
        print(f"ratio (aggregate time, sides at once / compare time): {best_ref / best:.2f} "
              f"(aim: at least 0.5); sides one after the other: {min(serial) / best:.2f}")
        return 0 if found == 4 else 1
    finally:
        from trailgate.spark import stop_spark

        stop_spark()
        for c in (source, target):
            c.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
