"""DML throughput through Extract → Data Pump → Replicat with DDL in the stream, beside the
same DML without DDL, in one run; and how long a DDL takes from the source's commit to the
target.

    ./dev bench ddl [--txns 2000] [--txn-rows 10] [--every 1000,100] [--repeat 2]
                    [--backlog] [--stages] [--trigger "1 SECONDS"] [--keep DIR]

Two embedded servers; DDL support installed in the source (ADD DDLSUPPORT) and the schema
prepared (ADD SCHEMATRANDATA); the Extract takes ``DDL INCLUDE MAPPED``, the Data Pump
passes it on, the Replicat applies to PostgreSQL.  Each round runs ``--txns`` transactions
of ``--txn-rows`` inserts
(then updates of a fifth of them) into ``bench.t``; a variant with DDL adds, every N
transactions, ``ALTER TABLE bench.t ADD COLUMN dK int`` (and drops the previous one): the
DML itself is the same in every variant.  A round's time is from its first statement until
the target has its marker row (committed after the workload; the Replicat applies in
commit order), so rows/s includes the source's own work.  Variants alternate within each
repeat and the best round of each counts (the machine is shared).  A thread polls the
target's catalog every 10 ms for each DDL's column: its delay is from the source's COMMIT
returning to the column being visible in the target; with ``--stages`` another thread
tails the local and the remote trail for each DDL's statement, which splits that delay by
group (Extract, Data Pump, Replicat).  The aim: within 10% of the no-DDL
rows/s with a DDL every 1,000 transactions.

A live round cannot be faster than the source's own workload: when the pipeline keeps up,
it times the source.  ``--backlog`` times the pipeline alone: its three groups (with their
JVMs and Spark workers) are paused (SIGSTOP) while the workload runs, then resumed, and the
round is timed from the resume to the marker row in the target (no DDL delays then: each
DDL waited in the backlog).
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from process_tree import signal_tree  # noqa: E402  (benchmarks/)
from trailgate.db.connect import connect  # noqa: E402
from trailgate.demo.databases import Databases, run_sql  # noqa: E402
from trailgate.demo.pipeline import Pipeline, PipelineSpec  # noqa: E402
from trailgate.home import Home  # noqa: E402
from trailgate.process.lifecycle import pid_file, read_pid  # noqa: E402
from trailgate.spark.session import SPARK_DIR_ENV  # noqa: E402

SCHEMA = """\
CREATE SCHEMA bench;
CREATE TABLE bench.t (id bigint PRIMARY KEY, v text, n numeric(12,2));
"""


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class ColumnWatch(threading.Thread):
    """Polls the target's columns of bench.t; when each was first seen."""

    def __init__(self, conninfo: str):
        super().__init__(daemon=True)
        self.conninfo = conninfo
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        with connect(self.conninfo, application_name="bench ddl watch") as conn:
            while not self.stop.is_set():
                now = time.monotonic()
                for (name,) in conn.execute(
                        "SELECT attname::text FROM pg_attribute WHERE attrelid = "
                        "'bench.t'::regclass AND attnum > 0 AND NOT attisdropped").fetchall():
                    self.seen.setdefault(name, now)
                time.sleep(0.01)


class TrailWatch(threading.Thread):
    """Tails the trail files ``dirdat/PREFIX*`` (only the bytes added since the last look)
    for the round's ``ADD COLUMN`` statements; when each column's was first seen, by
    prefix."""

    STATEMENT = re.compile(rb"ADD COLUMN (d\d+x\d+x\d+)")

    def __init__(self, dirdat: Path, prefixes: tuple[str, ...]):
        super().__init__(daemon=True)
        self.dirdat, self.prefixes = dirdat, prefixes
        self.seen: dict[str, dict[str, float]] = {p: {} for p in prefixes}
        self.stop = threading.Event()
        self._read: dict[Path, tuple[int, bytes]] = {}  # file: (bytes read, their tail)

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            for prefix in self.prefixes:
                for path in sorted(self.dirdat.glob(prefix + "[0-9]*")):
                    self._look(prefix, path, now)
            time.sleep(0.01)

    def _look(self, prefix: str, path: Path, now: float) -> None:
        done, tail = self._read.get(path, (0, b""))
        try:
            with path.open("rb") as f:
                f.seek(done)
                new = f.read()
        except OSError:
            return
        if not new:
            return
        for m in self.STATEMENT.finditer(tail + new):
            self.seen[prefix].setdefault(m.group(1).decode(), now)
        self._read[path] = (done + len(new), (tail + new)[-64:])


def _delays(name: str, delays: list[float]) -> str:
    delays = sorted(delays)
    return (f"{name}: p50 {statistics.median(delays) * 1000:.0f} ms, max "
            f"{delays[-1] * 1000:.0f} ms" if delays else f"{name}: none")


def workload(conninfo: str, first: int, txns: int, txn_rows: int, every: int | None,
             tag: str) -> tuple[int, dict[str, float]]:
    """The round's DML (and DDL every ``every`` transactions); (row changes, the commit
    time of each DDL by the column it added)."""
    changes = 0
    added: dict[str, float] = {}
    previous: str | None = None
    with connect(conninfo, autocommit=False, application_name="bench ddl workload") as conn:
        for i in range(txns):
            if every and i and i % every == 0:
                column = f"d{tag}{i}"
                conn.execute(f"ALTER TABLE bench.t ADD COLUMN {column} int")
                if previous is not None:
                    conn.execute(f"ALTER TABLE bench.t DROP COLUMN {previous}")
                conn.commit()
                added[column] = time.monotonic()
                previous = column
            start = first + i * txn_rows
            if i % 5 == 4:  # an update of the rows of four transactions ago
                changes += conn.execute(
                    "UPDATE bench.t SET n = n + 1 WHERE id BETWEEN %s AND %s",
                    (start - 4 * txn_rows, start - 3 * txn_rows - 1)).rowcount
            changes += conn.execute(
                "INSERT INTO bench.t (id, v, n) SELECT g, md5(g::text), g * 0.5 FROM "
                "generate_series(%s::bigint, %s::bigint) g",
                (start, start + txn_rows - 1)).rowcount
            conn.commit()
        if previous is not None:
            conn.execute(f"ALTER TABLE bench.t DROP COLUMN {previous}")
            conn.commit()
    return changes, added


def wait_marker(target: str, marker_id: int, pipeline: Pipeline, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    with connect(target) as conn:
        while True:
            if conn.execute("SELECT 1 FROM bench.t WHERE id = %s", (marker_id,)).fetchone():
                return time.monotonic()
            pipeline.check_running()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the target did not get marker {marker_id}")
            time.sleep(0.02)


def pause(home: Home, pipeline: Pipeline, sig: int) -> None:
    """Send ``sig`` (SIGSTOP, SIGCONT) to every group's process tree."""
    for group in pipeline.groups:
        pid = read_pid(pid_file(home, group.name))
        if pid is None:
            raise SystemExit(f"{group.kind} {group.name} has no pid file")
        signal_tree(pid, sig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--txns", type=int, default=2000)
    ap.add_argument("--txn-rows", type=int, default=10)
    ap.add_argument("--every", default="1000,100", help="DDL every N transactions (list)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--backlog", action="store_true",
                    help="pause the groups during each workload; time the pipeline alone")
    ap.add_argument("--stages", action="store_true",
                    help="live rounds: also time each DDL into the local and remote trail")
    ap.add_argument("--trigger", default="1 SECONDS",
                    help="each group's SPARK TRIGGER (its micro-batch window)")
    ap.add_argument("--keep", help="keep the databases and home here")
    args = ap.parse_args()
    variants: list[int | None] = [None] + [int(n) for n in args.every.split(",") if n]
    directory = Path(args.keep or tempfile.mkdtemp(prefix="tg-bench-ddl-"))
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    dbs = Databases(directory / "pg", source_db="src", target_db="tgt")
    pipeline: Pipeline | None = None
    try:
        say("starting two embedded PostgreSQL servers ...")
        dbs.start()
        source, target = dbs.source_conninfo, dbs.target_conninfo
        run_sql(source, SCHEMA)
        run_sql(target, SCHEMA)
        home = Home(directory / "gg").create()
        import os

        os.environ[SPARK_DIR_ENV] = str(home.dirtmp / "spark")
        spec = PipelineSpec(tables=["bench.*"], maps=[("bench.*", "bench.*")],
                            source_db="src", target_db="tgt", pump=True,
                            replicat_delta=False, extract="BEXT", pump_name="BPMP",
                            replicat_pg_name="BREP",
                            ddl_schemas=["bench"], trigger=args.trigger)
        pipeline = Pipeline(home, spec)
        setup, start = pipeline.write_files(Databases.login(source), Databases.login(target))
        mark = pipeline.event_mark()
        pipeline.ggsci([setup, start], io.StringIO())
        say("starting the Extract, the Data Pump and the Replicat (Spark) ...")
        with connect(source) as conn:  # warms up the groups (the pump starts at a first file)
            conn.execute("INSERT INTO bench.t VALUES (-1000000, 'warm', 0)")
        while len(pipeline.started_since(mark)) < len(pipeline.groups):
            pipeline.check_running()
            time.sleep(1)
        wait_marker(target, -1000000, pipeline, 600)
        watch = ColumnWatch(target)
        watch.start()
        trails = TrailWatch(home.dirdat, ("lt", "rt")) if args.stages else None
        if trails is not None:
            trails.start()
        results: dict[int | None, list[float]] = {v: [] for v in variants}
        delays: list[float] = []
        stages: dict[str, list[float]] = {"lt": [], "rt": []}
        first = 1
        for r in range(args.repeat):
            for variant in variants:
                marker_id = -(r * len(variants) + variants.index(variant) + 1)
                if args.backlog:
                    pause(home, pipeline, signal.SIGSTOP)
                t0 = time.monotonic()
                try:
                    changes, added = workload(source, first, args.txns, args.txn_rows,
                                              variant, f"{r}x{variant or 0}x")
                    with connect(source) as conn:
                        conn.execute("INSERT INTO bench.t VALUES (%s, 'marker', 0)",
                                     (marker_id,))
                finally:
                    if args.backlog:
                        t0 = time.monotonic()
                        pause(home, pipeline, signal.SIGCONT)
                t1 = wait_marker(target, marker_id, pipeline, 1800)
                first += args.txns * args.txn_rows + 10
                rate = changes / (t1 - t0)
                results[variant].append(rate)
                for column, committed in added.items():
                    if column in watch.seen and not args.backlog:
                        delays.append(watch.seen[column] - committed)
                    for prefix, seen in (trails.seen if trails and not args.backlog
                                         else {}).items():
                        if column in seen:
                            stages[prefix].append(seen[column] - committed)
                label = "no DDL" if variant is None else f"DDL every {variant}"
                say(f"  round {r + 1} {label:<16} {changes:>8} rows in {t1 - t0:6.1f} s "
                    f"= {rate:8.0f} rows/s ({len(added)} DDL)")
        watch.stop.set()
        if trails is not None:
            trails.stop.set()
        base = max(results[None])
        say("")
        say(f"{'backlog' if args.backlog else 'live'} rounds (time: "
            f"{'from resuming the groups' if args.backlog else 'from the first statement'} "
            "to the target having the round's marker row)")
        say(f"{'workload':<18} {'best rows/s':>12} {'ratio to no DDL':>16}")
        say("-" * 48)
        for variant in variants:
            best = max(results[variant])
            label = "no DDL" if variant is None else f"DDL every {variant} txns"
            say(f"{label:<18} {best:>12.0f} {best / base:>16.2f}")
        if delays:
            delays.sort()
            say("")
            say(f"DDL end-to-end delay (source commit -> column in the target), {len(delays)} "
                f"DDL: p50 {statistics.median(delays) * 1000:.0f} ms, max "
                f"{delays[-1] * 1000:.0f} ms")
        if stages["lt"] or stages["rt"]:
            say("  by stage, from the source commit: "
                + "; ".join((_delays("in the local trail (Extract)", stages["lt"]),
                             _delays("in the remote trail (+ Data Pump)", stages["rt"]),
                             _delays("in the target (+ Replicat)", delays))))
        ratio = max(results[1000]) / base if 1000 in results else None
        if ratio is not None:
            say(f"aim: DDL every 1,000 transactions within 10% of no DDL: ratio {ratio:.2f} "
                f"({'met' if ratio >= 0.9 else 'NOT met'})")
        return 0
    finally:
        if pipeline is not None:
            for line in pipeline.stop_all():
                say(line)
        dbs.stop()
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
