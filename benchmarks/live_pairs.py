"""Live end to end in interleaved rounds: trailgate and native replication take turns, so
the shared machine's load drifts over both alike.

    ./dev bench live_pairs [--rows 20000] [--txn-rows 1] [--pairs 3] [--none] [--awake]
                           [--keep DIR]

``apply_pg`` runs all of one method, then all of the other: its live rounds of one-row
transactions measure the source client's own speed, which moves by a quarter from one
minute to the next on a shared machine, so the order decides much of its live ratio
(docs/performance.md, "Live one-row transactions: whose time is the source's?").  Here both
are set up at once on one pair of servers — trailgate's Extract and Replicat into the target
database, a native subscription into a second one — and each pair of rounds runs one of
each, the order alternating from pair to pair.  While one method runs the other is off:
the subscription disabled, or trailgate's groups stopped (a held group's JVM still polls),
so each trailgate round after another method's starts fresh JVMs (warmed by two
transactions): that counts against trailgate.
A round is ``apply_pg``'s: ``--rows`` updates in ``--txn-rows``-row transactions of rows
inserted and replicated before it, timed from the first statement until the target has the
marker committed after them; the source client's own time beside it.  ``--none`` adds a
round with nothing replicating to each pair.  Prints every round, the ratio of each pair
and their median, and each method's threads in its best round (``thread_sched.py``).
``--awake`` runs a busy loop per core at ``SCHED_IDLE`` (it gets a core only when nothing
else wants one) so idle cores do not halt: in a VM whose idle vCPUs halt at once, each
wakeup of a halted core costs the one-row client's round trips more beside the method
that leaves the cores idle more often (docs/performance.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import apply_pg as ap
from thread_sched import ThreadMeter, ThreadRow, format_threads
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.pipeline import Pipeline, PipelineSpec
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.process.lifecycle import pid_file, read_pid
from trailgate.spark.session import SPARK_DIR_ENV

NATIVE, TRAILGATE, NONE = "native", "trailgate", "nothing"
NATIVE_DB = "south_native"


class Setup:
    """Both replicators on one pair of servers, one on at a time (module docstring)."""

    def __init__(self, work: Path, args: argparse.Namespace):
        self.args = args
        self.home = Home(work / "gg").create()
        os.environ[SPARK_DIR_ENV] = str(self.home.dirtmp / "spark")
        self.dbs = Databases(work / "pg", source_db="north", target_db="south")
        for cluster in (self.dbs.source, self.dbs.target):
            cluster.extra_settings["track_commit_timestamp"] = "on"
        self.pipeline: Pipeline | None = None
        self.running = False
        self.subscribed = False
        self.warm_ups = 0

    @property
    def native_target(self) -> str:
        return self.dbs.target.conninfo(NATIVE_DB)

    def start(self) -> None:
        dbs = self.dbs
        dbs.start()
        dbs.target.create_database(NATIVE_DB)
        run_sql(dbs.source_conninfo, ap.SOURCE_DDL)
        for target in (dbs.target_conninfo, self.native_target):
            run_sql(target, ap.TARGET_DDL)
        src = ap.conninfo_to_dict(dbs.source_conninfo)
        with ap.connect(dbs.source_conninfo) as conn:
            conn.execute("CREATE PUBLICATION bench_pub FOR TABLE bench.orders, bench.ticks")
        with ap.connect(self.native_target) as conn:
            conn.execute(
                f"CREATE SUBSCRIPTION bench_sub CONNECTION 'host={src['host']} "
                f"port={src['port']} dbname={src['dbname']} user={src['user']} "
                f"password={src['password']}' PUBLICATION bench_pub "
                "WITH (copy_data = false, enabled = false)")
        spec = PipelineSpec(tables=["bench.orders", "bench.ticks"],
                            maps=[("bench.*", "bench.*")], source_db=dbs.source_db,
                            target_db=dbs.target_db, pump=False, replicat_delta=False,
                            extract="BEXT", replicat_pg_name="BREP", trigger=None,
                            replicat_master="local[2]", extra_replicat_params=[])
        self.pipeline = Pipeline(self.home, spec)
        self._setup, self._start = self.pipeline.write_files(
            Databases.login(dbs.source_conninfo), Databases.login(dbs.target_conninfo))
        rep = self.pipeline.groups[-1]
        prm = self.home.param_file(rep.name)
        prm.write_text("\n".join(line for line in prm.read_text().splitlines()
                                 if not line.startswith("SPARK TRIGGER ")) + "\n")
        self._groups([self._setup, self._start])

    def _groups(self, scripts: list[str | Path]) -> None:
        """Start trailgate's groups and warm them (two transactions through both)."""
        assert self.pipeline is not None
        with ap.connect(self.dbs.source_conninfo) as conn:  # the warm-up's own rows again
            conn.execute("DELETE FROM bench.ticks WHERE id < 0")
        mark = self.pipeline.event_mark()
        self.pipeline.ggsci(scripts, io.StringIO())
        ap.warm_up(self.dbs, self.args, self.pipeline, mark, time.monotonic())
        self.running = True

    def use(self, method: str) -> None:
        """Only ``method`` replicates from now on."""
        assert self.pipeline is not None
        if method != TRAILGATE and self.running:
            self.pipeline.stop_all()
            self.running = False
        want = method == NATIVE
        if want != self.subscribed:
            with ap.connect(self.native_target) as conn:
                conn.execute(f"ALTER SUBSCRIPTION bench_sub {'ENABLE' if want else 'DISABLE'}")
            self.subscribed = want
        if method == TRAILGATE and not self.running:
            self._groups([self._start])

    def roots(self) -> dict[str, int]:
        roots = ap.server_roots(self.dbs)
        if self.running and self.pipeline is not None:
            for g in self.pipeline.groups:
                pid = read_pid(pid_file(self.home, g.name))
                if pid is not None:
                    roots[g.name] = pid
        return roots

    def stop(self) -> None:
        if self.pipeline is not None:
            self.pipeline.stop_all()
        with contextlib.suppress(Exception), ap.connect(self.native_target) as conn:
            conn.execute("DROP SUBSCRIPTION IF EXISTS bench_sub")
        self.dbs.stop()


def awake_loops() -> list[subprocess.Popen[bytes]]:
    """A busy loop per core at SCHED_IDLE: the cores never halt, and lose nothing to it."""
    def idle() -> None:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))

    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=idle)
            for _ in range(os.cpu_count() or 1)]


def one_round(setup: Setup, method: str, n: int, args: argparse.Namespace
              ) -> tuple[float, float, tuple[dict[str, ThreadRow], tuple[int, int, int, int]]]:
    """One round of ``method``: (source wrote, all applied, threads)."""
    dbs = setup.dbs
    setup.use(method)
    first, marker_id = 1 + n * 10 ** (len(str(args.rows)) + 1), -1 - n
    target = {NATIVE: setup.native_target, TRAILGATE: dbs.target_conninfo}.get(method)
    with ap.connect(dbs.source_conninfo, autocommit=False) as conn:
        for start in range(first, first + args.rows, 10_000):
            conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                         "clock_timestamp(), md5(g::text) "
                         "FROM generate_series(%s::bigint, %s::bigint) g",
                         (start, min(start + 9_999, first + args.rows - 1)))
            conn.commit()
    if target is not None:  # the round's rows (and what the other method's rounds wrote)
        prep = marker_id - 1_000_000
        ap.marker(dbs.source_conninfo, prep)
        ap.wait_marker(target, prep, args.timeout, f"{method} to apply the round's rows",
                       time.monotonic())
    meter = ThreadMeter(setup.roots())
    session = ap.workload_session(dbs.source_conninfo)
    try:
        meter.add_own("bench client (the load generator)")
        before = meter.sample()
        t0 = time.monotonic()
        ap.throughput_workload(dbs.source_conninfo, args.rows, args.txn_rows, first,
                               "update", session)
        wrote = time.monotonic() - t0
        ap.marker(dbs.source_conninfo, marker_id)
        if target is not None:
            ap.wait_marker(target, marker_id, args.timeout, method, t0)
        total = time.monotonic() - t0
        threads = ThreadMeter.used(before, meter.sample())
    finally:
        session.close()
    ap.end_live()
    if target is not None:  # a round that lost or doubled a change is not timed
        ap.same_rows(dbs, first, args.rows, marker_id, target=target)
    return wrote, total, threads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--txn-rows", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--none", action="store_true",
                        help="a round with nothing replicating in each pair too")
    parser.add_argument("--awake", action="store_true",
                        help="keep idle cores from halting (busy loops at SCHED_IDLE)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    if args.rows <= 0 or args.txn_rows <= 0 or args.pairs <= 0:
        parser.error("--rows, --txn-rows and --pairs must be positive")
    args.partitions, args.replicat_param = 2, []
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tg-bench-pairs-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    setup = Setup(work, args)
    status = 0
    loops = awake_loops() if args.awake else []
    try:
        ap.say(f"Starting the servers and trailgate's groups under {work} ...")
        setup.start()
        ap.say(f"{args.rows:,} updates in {args.txn_rows}-row transactions a round; "
               f"{args.pairs} pairs, the order alternating")
        ap.say(f"{'pair':>4} {'method':<10} {'load':>5} {'source wrote':>13} "
               f"{'all applied':>12} {'client CPU':>11} {'backend CPU':>12}")
        rounds: dict[str, list[tuple[float, tuple[dict[str, ThreadRow],
                                                 tuple[int, int, int, int]]]]] = {}
        ratios = []
        n = 0
        for p in range(args.pairs):
            order = [NATIVE, TRAILGATE] if p % 2 == 0 else [TRAILGATE, NATIVE]
            if args.none:
                order.append(NONE)
            got = {}
            for method in order:
                n += 1
                load = os.getloadavg()[0]
                wrote, total, threads = one_round(setup, method, n, args)
                rows = threads[0]
                client = rows.get("bench client (the load generator)", ThreadRow(""))
                backend = max((r for k, r in rows.items() if k.startswith("source backend")),
                              key=lambda r: r.run, default=ThreadRow(""))
                ap.say(f"{p + 1:>4} {method:<10} {load:>5.1f} {wrote:>12.2f}s "
                       f"{total:>11.2f}s {client.run:>10.2f}s {backend.run:>11.2f}s")
                rounds.setdefault(method, []).append((total, threads))
                got[method] = total
            ratios.append(got[NATIVE] / got[TRAILGATE])
        ap.say("\nratio trailgate / native (rows/s), pair by pair: "
               + ", ".join(f"{r:.2f}" for r in ratios)
               + f"; median {statistics.median(ratios):.2f}")
        best = {m: min(lst, key=lambda x: x[0]) for m, lst in rounds.items()}
        ap.say("")
        for line in format_threads(
                "== Threads in each method's best round: run and run-queue wait (CPU s), "
                "context switches a second ==",
                {m: b[1] for m, b in best.items()}, {m: b[0] for m, b in best.items()}):
            ap.say(line)
    except KeyboardInterrupt:
        ap.say("\ninterrupted: stopping everything ...")
        status = 130
    except (TrailgateError, psycopg.Error) as exc:
        ap.say(f"\nlive_pairs: {exc}")
        status = 1
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        setup.stop()
        if not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    return status


if __name__ == "__main__":
    sys.exit(main())
