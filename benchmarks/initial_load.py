"""Initial load beside ``pg_dump --data-only | psql``, between the same two servers.

    ./dev bench initial_load [--rows 5000000] [--repeat 2] [--threads N] [--spark-too]
                             [--keep DIR]

Two embedded PostgreSQL servers (source and target, ``fast`` settings for both), a set of
three tables of ten columns (60/30/10 % of ``--rows``) on the source, the same empty tables
(with their primary keys) on the target.  Each round empties the target and times:

1. ``pg_dump --data-only -t …`` of the three tables piped into ``psql`` (the embedded
   server's own binaries, so versions match): the reference;
2. the initial load (``ADD EXTRACT …, SOURCEISTABLE``, ``RMTTASK REPLICAT`` into the target
   PostgreSQL, ``SPARK MASTER local[2]``) from a cold start: ``trailgate run extract eload``
   as a new process, timed from its start to its exit — Python's start, the cut, the copy,
   and a Spark session if the load's route starts one (``docs/instantiation.md``).

The ratio of each round is pg_dump's time / the load's (the aim: at least 1.0); the peak
resident memory of the load's process (its copy threads) is printed.  ``--spark-too`` also
times a cold load made to start Spark beside its threads (``SPARK CONF
trailgate.load.sparkRanges=0``).  Then the same tables are loaded into Delta tables on a
session started beforehand (rows/s; its start-up and first job printed apart), and the
peak resident memory of Spark's Python workers is printed.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from trailgate.db.cluster import Cluster, postgres_bin_dir  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.home import GroupInfo, Home  # noqa: E402
from trailgate.load.group import LoadOptions, run_load  # noqa: E402
from trailgate.load.manifest import manifest_path  # noqa: E402

TABLES = {"bench.t_a": 0.6, "bench.t_b": 0.3, "bench.t_c": 0.1}
DDL = """
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE {name} (
    id bigint PRIMARY KEY, customer integer NOT NULL, amount numeric(12,2),
    price double precision, qty smallint, note text, code varchar(40),
    created timestamptz, day date, active boolean);
"""
FILL = """
INSERT INTO {name} SELECT g, (g % 10007)::int, (g % 100000) / 100.0, g * 0.5,
    (g % 300)::smallint, 'note number ' || g, 'C-' || (g % 997),
    timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',
    date '2020-01-01' + (g % 2000), g % 3 = 0
FROM generate_series(1, {rows}) g
"""


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def worker_peak_rss(jvm_pid: int) -> tuple[int, int]:
    """(Python workers found, the largest peak RSS among them in KiB) under the JVM."""
    peak, count = 0, 0
    for pid in _descendants(jvm_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"pyspark" not in cmd and b"python" not in cmd:
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
                    count += 1
        except OSError:
            continue
    return count, peak


def cold_load(home: Home, group: str) -> tuple[float, int]:
    """``trailgate run extract group`` as a new process: (seconds, its peak RSS in KiB)."""
    manifest_path(home.dirchk, group).unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "trailgate.cli", "--home", str(home.path),
                             "run", "extract", group], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, cwd=home.path)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"the load {group} failed: {err.decode()[-2000:]}")
    return elapsed, int(usage.ru_maxrss)


def _env(conninfo: str) -> dict[str, str]:
    params = conninfo_to_dict(conninfo)
    return {**os.environ, "PGHOST": str(params["host"]), "PGPORT": str(params["port"]),
            "PGUSER": str(params["user"]), "PGPASSWORD": str(params["password"]),
            "PGDATABASE": str(params["dbname"])}


def pg_dump_pipe(src: str, tgt: str) -> float:
    bins = postgres_bin_dir()
    args = [str(bins / "pg_dump"), "--data-only", "--no-owner"]
    for name in TABLES:
        args += ["-t", name]
    started = time.monotonic()
    dump = subprocess.Popen(args, stdout=subprocess.PIPE, env=_env(src))
    restore = subprocess.run([str(bins / "psql"), "-q", "-v", "ON_ERROR_STOP=1"],
                             stdin=dump.stdout, env=_env(tgt), capture_output=True)
    dump.wait()
    elapsed = time.monotonic() - started
    if dump.returncode or restore.returncode:
        raise SystemExit(f"pg_dump | psql failed: {restore.stderr.decode()[-500:]}")
    return elapsed


def empty_target(tgt: str) -> None:
    with connect(tgt) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)}")
        if conn.execute("SELECT to_regclass('trailgate.load_ranges')").fetchone()[0]:
            conn.execute("TRUNCATE trailgate.load_ranges")
        conn.execute("CHECKPOINT")


def warm(home: Home, src: str, spark: object) -> None:
    """A one-row load into Delta: Spark starts its Python workers and they import the load."""
    with connect(src) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench.warm (id int PRIMARY KEY)")
        conn.execute("TRUNCATE bench.warm")
        conn.execute("INSERT INTO bench.warm VALUES (1)")
    (home.dirprm / "ewarm.prm").write_text(
        f"EXTRACT ewarm\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP repd\n"
        "TABLE bench.warm;\n")
    if home.group("EWARM") is None:
        home.add_group(GroupInfo("EWARM", "EXTRACT", "SOURCEISTABLE"))
    manifest_path(home.dirchk, "EWARM").unlink(missing_ok=True)
    shutil.rmtree(home.path / "delta", ignore_errors=True)
    run_load(home, "EWARM", LoadOptions(out=io.StringIO(), spark=spark))


def count(conninfo: str) -> int:
    with connect(conninfo) as conn:
        return sum(int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
                   for t in TABLES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="work in DIR and leave it")
    parser.add_argument("--threads", type=int, help="the load's driver threads (SPARK CONF "
                        "trailgate.load.driverThreads; default: the master's 2 cores)")
    parser.add_argument("--spark-too", action="store_true",
                        help="also time a cold load that starts Spark beside its threads")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tg-bench-load-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    source, target = Cluster(work / "src", fast=True), Cluster(work / "tgt", fast=True)
    try:
        for c in (source, target):
            if not c.exists():
                c.create()
            c.start()
        src, tgt = source.create_database("app"), target.create_database("app")
        print(f"Filling {args.rows:,} rows in {len(TABLES)} tables of 10 columns …", flush=True)
        with connect(src) as conn:
            for name, share in TABLES.items():
                conn.execute(DDL.format(name=name))
                conn.execute(FILL.format(name=name, rows=int(args.rows * share)))
            conn.execute("VACUUM ANALYZE")
        with connect(tgt) as conn:
            for name in TABLES:
                conn.execute(DDL.format(name=name))
        home = Home(work / "gg").create()
        tables = "".join(f"TABLE {t};\n" for t in TABLES)
        threads = (f"SPARK CONF trailgate.load.driverThreads={args.threads}\n"
                   if args.threads is not None else "")
        for group, extra in (("eload", threads),
                             ("espark", threads + "SPARK CONF trailgate.load.sparkRanges=0\n")):
            (home.dirprm / f"{group}.prm").write_text(
                f"EXTRACT {group}\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP rep\n"
                f"SPARK MASTER local[2]\n{extra}" + tables)
        (home.dirprm / "rep.prm").write_text(f"REPLICAT rep\nTARGETDB {tgt}\n"
                                             "MAP bench.*, TARGET bench.*;\n")
        (home.dirprm / "edelta.prm").write_text(
            f"EXTRACT edelta\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP repd\n"
            + tables)
        (home.dirprm / "repd.prm").write_text("REPLICAT repd\nTARGETDELTA ./delta\n"
                                              "MAP bench.*, TARGET bench.*;\n")
        for name, source_kind, trail in (("ELOAD", "SOURCEISTABLE", None),
                                         ("ESPARK", "SOURCEISTABLE", None),
                                         ("EDELTA", "SOURCEISTABLE", None),
                                         ("REP", "EXTTRAIL", "./dirdat/rt"),
                                         ("REPD", "EXTTRAIL", "./dirdat/rt")):
            if home.group(name) is None:
                kind = "EXTRACT" if name.startswith("E") else "REPLICAT"
                home.add_group(GroupInfo(name, kind, source_kind, trail))
        rows = count(src)
        dumps, loads, peaks = [], [], []
        for r in range(args.repeat):
            empty_target(tgt)
            dumps.append(pg_dump_pipe(src, tgt))
            assert count(tgt) == rows
            empty_target(tgt)
            seconds, peak = cold_load(home, "ELOAD")
            loads.append(seconds)
            peaks.append(peak)
            assert count(tgt) == rows, "the load did not copy every row"
            print(f"round {r + 1}: pg_dump | psql {dumps[-1]:.1f} s, initial load (cold) "
                  f"{loads[-1]:.1f} s: ratio {dumps[-1] / loads[-1]:.2f}", flush=True)
        both = None
        if args.spark_too:
            empty_target(tgt)
            both, _ = cold_load(home, "ESPARK")
            assert count(tgt) == rows, "the load did not copy every row"
            report = (home.dirrpt / "ESPARK.rpt").read_text()
            split = next((line.split(":", 1)[1].strip() for line in report.splitlines()
                          if line.startswith("Ranges:")), "")
        from trailgate.spark import get_spark

        started = time.monotonic()
        spark = get_spark("trailgate bench initial_load", master="local[2]")
        spark_start = time.monotonic() - started
        started = time.monotonic()  # the first job starts Spark's Python workers
        warm(home, src, spark)
        warm_up = time.monotonic() - started
        jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]
        shutil.rmtree(home.path / "delta", ignore_errors=True)
        manifest_path(home.dirchk, "EDELTA").unlink(missing_ok=True)
        started = time.monotonic()
        run_load(home, "EDELTA", LoadOptions(out=io.StringIO(), spark=spark))
        delta = time.monotonic() - started
        workers, rss = worker_peak_rss(jvm)
        best_dump, best_load = min(dumps), min(loads)
        print()
        print(f"{'':<40}{'seconds':>10}{'rows/s':>14}")
        print(f"{'pg_dump --data-only | psql':<40}{best_dump:>10.1f}{rows / best_dump:>14,.0f}")
        print(f"{'initial load → PostgreSQL, cold':<40}{best_load:>10.1f}"
              f"{rows / best_load:>14,.0f}")
        if both is not None:
            print(f"{'  the same, Spark started beside it':<40}{both:>10.1f}"
                  f"{rows / both:>14,.0f}   ({split})")
        print(f"{'initial load → Delta (session up)':<40}{delta:>10.1f}{rows / delta:>14,.0f}")
        whole = delta + spark_start + warm_up
        print(f"{'  counting its start-up and first job':<40}{whole:>10.1f}"
              f"{rows / whole:>14,.0f}")
        print(f"\n{rows:,} rows; best of {args.repeat} rounds (all rounds: pg_dump | psql "
              f"{', '.join(f'{d:.1f}' for d in dumps)} s; load "
              f"{', '.join(f'{x:.1f}' for x in loads)} s)")
        print("ratio per round (pg_dump | psql time / cold load time, same round): "
              + ", ".join(f"{d / x:.2f}" for d, x in zip(dumps, loads, strict=True))
              + "  (aim: at least 1.0)")
        print(f"Delta: Spark session start-up {spark_start:.1f} s, first job (Python workers "
              f"started, a one-row load) {warm_up:.1f} s")
        print(f"peak RSS of the PostgreSQL load's process (its copy threads): "
              f"{max(peaks) / 1024:.0f} MiB")
        print(f"peak RSS of the Delta load's Python workers: {rss / 1024:.0f} MiB (largest "
              f"of {workers} processes under Spark's JVM)")
        return 0
    finally:
        from trailgate.spark import stop_spark

        stop_spark()
        for c in (source, target):
            c.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
