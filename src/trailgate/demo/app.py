"""``trailgate demo``: seed 003 replicated end to end, on screen.

Embedded PostgreSQL source and target → GGSCI (credential store, ADD TRANDATA, ADD EXTRACT,
pump, Replicats, START) → the seed's statements and a generated workload on the source →
live progress from the groups' checkpoints → STATS → source, target and Delta compared →
everything stopped.  Ctrl-C at any point stops the groups and the servers and exits 130.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from trailgate.db.connect import connect
from trailgate.demo import seed003
from trailgate.demo.compare import compare_tables, render_comparison
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.pipeline import Pipeline, PipelineError, PipelineSpec, available_stages
from trailgate.demo.workload import StudentWorkload, Workload, run_statements
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.spark.session import SPARK_DIR_ENV

__all__ = ["add_arguments", "run"]

DEFAULT_HOME = "demo-home"
MARKER = ".trailgate-demo"
STEPS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", dest="demo_home", metavar="DIR",
                        help=f"the demo's home (default ./{DEFAULT_HOME}); a previous demo "
                        "there is cleaned first, its PostgreSQL clusters reused")
    parser.add_argument("--transactions", type=int, default=1500, metavar="N",
                        help="generated transactions after the seed's (default 1500)")
    parser.add_argument("--rate", type=float, default=50.0, metavar="TPS",
                        help="generated transactions per second, 0 for as fast as possible "
                        "(default 50)")
    parser.add_argument("--threads", type=int, default=2, metavar="N",
                        help="concurrent source connections (default 2)")
    parser.add_argument("--seed", type=int, default=3, help="random seed of the workload")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                        help="how long to wait for the groups to catch up (default 600)")
    parser.add_argument("--fresh", action="store_true",
                        help="also recreate the PostgreSQL clusters of a previous run")


class Screen:
    """Numbered steps, indented detail, and one live progress line (rewritten in place on a
    terminal, printed every few seconds otherwise)."""

    def __init__(self, out: TextIO):
        self.out = out
        self.tty = out.isatty()
        self.step_no = 0
        self._live = False
        self._last_plain = 0.0

    def step(self, text: str) -> None:
        self.end_live()
        self.step_no += 1
        self.out.write(f"\n[{self.step_no}/{STEPS}] {text}\n")
        self.out.flush()

    def line(self, text: str = "") -> None:
        self.end_live()
        self.out.write(f"{text}\n")
        self.out.flush()

    def live(self, text: str, *, force: bool = False) -> None:
        """Show ``text`` as the progress line; ``force`` prints it also when not on a
        terminal (a final state)."""
        if self.tty:
            self.out.write(f"\r\033[K  {text}")
            self._live = True
            self.out.flush()
        elif force or time.monotonic() - self._last_plain >= 5:
            self._last_plain = time.monotonic()
            self.line(f"  {text}")

    def end_live(self) -> None:
        if self._live:
            self.out.write("\n")
            self._live = False


class Demo:
    """One run of the demo: owns the home, the servers, the pipeline and the workload, and
    stops them all whatever happens."""

    def __init__(self, args: argparse.Namespace, out: TextIO):
        self.args = args
        self.screen = Screen(out)
        path = Path(getattr(args, "demo_home", None) or getattr(args, "home", None)
                    or DEFAULT_HOME)
        self.home = Home(path)
        self.dbs = Databases(self.home.path / "pg")
        self.pipeline: Pipeline | None = None
        self.workload: Workload | None = None
        self.rows_before = 0  # seed rows, counted with the generated ones
        self.start_mark = 0
        self.started_at = time.monotonic()
        self.active = False  # servers (maybe) started: there is something to stop

    # -- steps ----------------------------------------------------------------------------
    def prepare_home(self) -> None:
        home, s = self.home, self.screen
        path = home.path
        shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
        if path.exists() and any(path.iterdir()):
            if not (path / MARKER).exists():
                raise TrailgateError(f"{path} exists and is not a trailgate demo home: "
                                     "choose another with --home DIR")
            self._stop_leftovers()
            keep = {"pg"} if not self.args.fresh else set()
            for child in path.iterdir():
                if child.name in keep:
                    continue
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            reused = "its PostgreSQL clusters reused" if keep else "everything removed"
            s.step(f"Demo home {shown}: the previous run's groups, trails and tables removed, "
                   f"{reused}")
        else:
            s.step(f"Demo home {shown} (new)")
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
        (path / MARKER).write_text("trailgate demo home: `trailgate demo` may clean it\n")
        home.create()
        os.environ[SPARK_DIR_ENV] = str(home.dirtmp / "spark")  # the groups inherit it

    def _stop_leftovers(self) -> None:
        """A previous demo killed hard may have left groups running: stop them first."""
        from trailgate.process import lifecycle
        from trailgate.process.lifecycle import Status

        with contextlib.suppress(TrailgateError):
            for g in self.home.groups():
                if lifecycle.process_state(self.home, g.name).status is Status.RUNNING:
                    with contextlib.suppress(TrailgateError):
                        lifecycle.kill_group(self.home, g.kind, g.name)
        self.dbs.stop()

    def start_databases(self) -> None:
        s = self.screen
        s.step("PostgreSQL: embedded source and target servers")
        t0 = time.monotonic()
        self.active = True
        self.dbs.start()
        for cluster, db in ((self.dbs.source, self.dbs.source_db),
                            (self.dbs.target, self.dbs.target_db)):
            with connect(cluster.conninfo()) as conn:
                for (slot,) in conn.execute("SELECT slot_name FROM pg_replication_slots "
                                            "WHERE database = %s", (db,)).fetchall():
                    conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            cluster.create_database(db)
        s.line(f"  source  127.0.0.1:{self.dbs.source.port}/{self.dbs.source_db}   "
               f"({self.dbs.source.directory})")
        s.line(f"  target  127.0.0.1:{self.dbs.target.port}/{self.dbs.target_db}   "
               f"({self.dbs.target.directory})   ready in {time.monotonic() - t0:.0f} s")

    def create_tables(self) -> None:
        s = self.screen
        s.step("Seed 003's tables: us03.course and us03.student")
        run_sql(self.dbs.source_conninfo, seed003.SOURCE_DDL)
        run_sql(self.dbs.target_conninfo, seed003.TARGET_DDL)
        s.line("  source: the seed's DDL (NUMBER → numeric, VARCHAR2 → varchar), with its "
               "primary, unique and foreign keys")
        s.line("  target: the same columns and primary keys (Replicat applies by key in "
               "parallel; the source enforces the rest)")

    def setup_groups(self) -> None:
        s = self.screen
        pump, replicat = available_stages()
        spec = PipelineSpec(tables=list(seed003.TABLES), maps=[("us03.*", "us03.*")],
                            source_db=self.dbs.source_db, target_db=self.dbs.target_db,
                            pump=pump, replicat_pg=replicat, replicat_delta=replicat)
        self.pipeline = p = Pipeline(self.home, spec)
        setup, start = p.write_files(Databases.login(self.dbs.source_conninfo),
                                     Databases.login(self.dbs.target_conninfo))
        s.step("GGSCI: credential store, ADD TRANDATA, groups and trails, START")
        missing = [name for name, ok in (("Data Pump", pump), ("Replicat", replicat)) if not ok]
        if missing:
            s.line(f"  NOTE: this trailgate has no {' and no '.join(missing)} yet: those stages "
                   "are left out of the demo.")
        s.line(f"  parameter files in {self.home.dirprm}: "
               + ", ".join(sorted(f.name for f in self.home.dirprm.iterdir())))
        for g in p.groups:
            s.line(f"    {g.name:<6} {g.role}")
        s.line(f"  obey files: {setup.name} and {start.name}, run in one GGSCI session:")
        s.line()
        out = _Indented(s.out)
        self.start_mark = p.event_mark()
        p.ggsci([setup, start], out)
        self.started_at = time.monotonic()
        s.line("  capture began at ADD EXTRACT: what the source commits from now on is "
               "captured, while the groups are still starting Spark")

    def wait_started(self) -> None:
        """Wait for every group's OGG-00993 (Spark up, query running).  A pump logs it once
        its input trail has a file, so this comes after the seed's statements."""
        s, p = self.screen, self.pipeline
        assert p is not None
        pending = p.groups
        while pending:
            pending = [g for g in p.groups if g not in p.started_since(self.start_mark)]
            p.check_running()
            took = time.monotonic() - self.started_at
            if took > self.args.timeout:
                raise PipelineError(f"{', '.join(g.name for g in pending)} did not start "
                                    f"within {self.args.timeout:.0f} s")
            if pending:
                s.live(f"groups starting Spark: {took:.0f} s (waiting for "
                       f"{', '.join(g.name for g in pending)}) │ {self.progress_text()}")
                time.sleep(0.5)
        s.line(f"  all {len(p.groups)} groups running (OGG-00993) "
               f"{time.monotonic() - self.started_at:.0f} s after START")
        p.wait_caught_up(self.dbs.source_conninfo, timeout=self.args.timeout,
                         tick=lambda: s.live(f"first micro-batches: {self.progress_text()}"))
        s.live(self.progress_text(), force=True)
        s.line(f"  the seed's {self.rows_before} changes went through every group "
               f"{time.monotonic() - self.started_at:.0f} s after START")

    def run_seed(self) -> None:
        s = self.screen
        s.step("Seed 003's data and statements on the source (captured: the targets start "
               "empty)")
        conninfo = self.dbs.source_conninfo
        with connect(conninfo, autocommit=False, application_name="trailgate demo") as conn:
            load = seed003.initial_load()
            self.rows_before += run_statements(conn, [(q, None) for q in load])
            conn.commit()
            s.line(f"  {'initial data':<18} {len(seed003.COURSES)} courses and "
                   f"{len(seed003.STUDENTS)} students, one transaction")
            for step in seed003.seed_steps():
                if step.preparation:  # rows of the TEMP table are not captured
                    for q in step.preparation:
                        rows = run_statements(conn, [(q, None)])
                        self.rows_before += rows if f"{seed003.SCHEMA}." in q else 0
                    conn.commit()
                rows = run_statements(conn, [(q, None) for q in step.statements])
                conn.commit()
                self.rows_before += rows
                shown = step.statements[0].replace(f"{seed003.SCHEMA}.", "")
                if len(shown) > 76:
                    shown = shown[:73] + "..."
                s.line(f"  {step.title:<18} SQL> {shown};  {rows} row{'s' * (rows != 1)}")
            prep = sum(1 for st in seed003.seed_steps() if st.preparation)
            s.line(f"  (and {prep} preparations, each committed first as the seed does; "
                   "INSERT /*+ APPEND */ is an ordinary insert in PostgreSQL)")

    def progress_text(self) -> str:
        p, w = self.pipeline, self.workload
        assert p is not None
        parts = []
        if w is not None:
            parts.append(f"source {w.progress.transactions:,}/{w.total:,} txns "
                         f"{w.progress.rows + self.rows_before:,} rows")
        else:
            parts.append(f"source {self.rows_before:,} rows")
        for g in p.groups:
            parts.append(f"{g.name} {p.operations(g):,}")
        last = p.groups[-1]
        lag = p.lag_seconds(last)
        if lag is not None:
            parts.append(f"lag {lag:.1f} s")
        return " │ ".join(parts)

    def run_workload(self) -> None:
        s, a = self.screen, self.args
        pace = f"{a.rate:g}/s" if a.rate > 0 else "as fast as possible"
        s.step(f"Generated workload: {a.transactions:,} transactions on {a.threads} "
               f"connections, {pace} (inserts, updates, NULLs, key changes, deletes, "
               "set-based updates)")
        s.line("  counts: rows changed on the source │ operations each group checkpointed")
        self.workload = w = Workload(self.dbs.source_conninfo, StudentWorkload(a.threads),
                                     transactions=a.transactions, threads=a.threads,
                                     rate=a.rate, seed=a.seed)
        w.start()
        assert self.pipeline is not None
        while not w.done:
            w.check()
            self.pipeline.check_running()
            s.live(self.progress_text())
            time.sleep(0.5)
        w.wait(timeout=5)
        s.live(self.progress_text(), force=True)

    def catch_up(self) -> None:
        s = self.screen
        p = self.pipeline
        assert p is not None
        s.step("Waiting for every group to reach the source's last commit")
        t0 = time.monotonic()
        csn = p.wait_caught_up(self.dbs.source_conninfo, timeout=self.args.timeout,
                               tick=lambda: s.live(self.progress_text()))
        s.live(self.progress_text(), force=True)
        s.line(f"  caught up at CSN {csn} in {time.monotonic() - t0:.0f} s")

    def stats_and_compare(self) -> bool:
        s = self.screen
        p = self.pipeline
        assert p is not None
        s.step("STATS per group, then source, target and Delta compared")
        script = "\n".join(f"STATS {g.kind} {g.name.lower()}" for g in p.groups) + "\n"
        p.ggsci(script, _Indented(s.out), "stats")
        delta = p.delta_root if p.spec.replicat_delta else None
        target = self.dbs.target_conninfo if p.spec.replicat_pg else None
        if target is None and delta is None:
            s.line("  no Replicat ran: nothing to compare (the trail holds the changes: "
                   f"trailgate logdump {self.home.dirdat / 'lt000000000'})")
            return True
        results = compare_tables(self.dbs.source_conninfo, list(seed003.TABLES),
                                 target=target, delta_root=delta)
        s.line("  rows and content hash (sha-256 of the sorted rows, compared by type):")
        for line in render_comparison(results):
            s.line(f"  {line}")
        ok = all(r.equal for r in results)
        s.line()
        s.line("  ✓ source, target and Delta tables are equal" if ok else
               "  ✗ the copies differ from the source (details above)")
        return ok

    # -- stop -----------------------------------------------------------------------------
    def shutdown(self, quiet: bool = False) -> None:
        """Stop the workload, the groups and the servers; never raises."""
        if self.workload is not None:
            with contextlib.suppress(Exception):
                self.workload.stop()
        if self.pipeline is not None:
            with contextlib.suppress(Exception):
                lines = self.pipeline.stop_all()
                if not quiet:
                    self.screen.line("  " + "; ".join(lines) if lines else "")
                    with contextlib.suppress(Exception):
                        self.pipeline.ggsci("INFO ALL\n", _Indented(self.screen.out), "stop")
        self.dbs.stop()


class _Indented:
    """A text stream that indents GGSCI's transcript under a step."""

    def __init__(self, out: TextIO):
        self.out = out
        self._bol = True

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self._bol:
                self.out.write("    ")
            self.out.write(piece)
            self._bol = piece.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return False


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo; 0 when source and targets are equal, 1 when not (or on an error),
    130 after Ctrl-C."""
    out = out or sys.stdout
    demo = Demo(args, out)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # kill, closed terminal: stop as for Ctrl-C
        signal.signal(sig, _interrupt)
    out.write("trailgate demo: seed 003 replicated end to end — PostgreSQL → Extract → trail → "
              "Data Pump → Replicat → PostgreSQL and Delta Lake, each group on local Spark.\n")
    out.flush()
    status = 1
    stopping = False
    try:
        demo.prepare_home()
        demo.start_databases()
        demo.create_tables()
        demo.setup_groups()
        demo.run_seed()
        demo.wait_started()
        demo.run_workload()
        demo.catch_up()
        status = 0 if demo.stats_and_compare() else 1
        demo.screen.line("\nStopping the groups and the servers ...")
        stopping = True
        _ignore_signals()
        demo.shutdown()
        home = demo.home.path
        demo.screen.line(f"Done. The home {home} is kept: `./dev trailgate --home {home} "
                         "ggsci` (INFO ALL, VIEW REPORT ext1), `./dev trailgate logdump "
                         f"{home}/dirdat/lt000000000`.")
        return status
    except KeyboardInterrupt:
        _ignore_signals()
        demo.screen.end_live()
        if not stopping:
            demo.shutdown(quiet=True)
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            out.write("\nInterrupted: the groups and PostgreSQL were stopped; "
                      f"the home {demo.home.path} is kept (the next run cleans it).\n")
        return 130
    except (TrailgateError, PipelineError) as exc:
        _ignore_signals()
        demo.screen.end_live()
        out.write(f"\ntrailgate demo: {exc}\n")
        if demo.active:
            out.write("Stopping the groups and the servers ...\n")
            demo.shutdown(quiet=True)
        return 1
    except Exception as exc:  # a message, never a traceback
        _ignore_signals()
        demo.screen.end_live()
        out.write(f"\ntrailgate demo: unexpected error: {type(exc).__name__}: {exc}\n")
        if demo.active:
            out.write("Stopping the groups and the servers ...\n")
            demo.shutdown(quiet=True)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _ignore_signals() -> None:
    """While stopping: a second Ctrl-C (or kill) must not cut the clean-up short."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
