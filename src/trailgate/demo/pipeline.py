"""Extract → Data Pump → Replicat(s), set up and driven the way a GoldenGate user would: a
credential store, parameter files in ``dirprm``, one GGSCI obey file, START/STOP.

Used by ``trailgate demo``, the end-to-end tests and ``benchmarks/apply_pg.py``: one place
knows the topology, how to tell that the Replicats caught up, and how to stop everything.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from trailgate.checkpoint import Checkpoint
from trailgate.db.connect import connect
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status
from trailgate.trail.keys import DEFAULT_KEY_NAME, EncKeysFile, add_key, enckeys_path
from trailgate.wallet import CredentialStore

if TYPE_CHECKING:
    from trailgate.ggsci.executor import TextOut

__all__ = ["Group", "Pipeline", "PipelineError", "PipelineSpec", "available_stages"]


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b[^ ]*: \S")


class PipelineError(TrailgateError):
    """A group stopped, or the pipeline did not catch up in time."""


def available_stages() -> tuple[bool, bool]:
    """(pump, replicat): whether this trailgate can run a Data Pump and a Replicat."""
    from trailgate import cli

    replicat = ("run", "replicat") in cli._COMMANDS
    pump = importlib.util.find_spec("trailgate.pump") is not None
    return pump, replicat


@dataclass(frozen=True, slots=True)
class Group:
    """One process of the pipeline: ``kind`` EXTRACT or REPLICAT, ``role`` for people."""

    kind: str
    name: str
    role: str


@dataclass(slots=True)
class PipelineSpec:
    """What to replicate and how.  ``maps`` are (source pattern, target pattern) pairs;
    ``pump``/``replicat_pg``/``replicat_delta`` choose the stages that run."""

    tables: list[str]
    maps: list[tuple[str, str]]
    source_db: str = "north"
    target_db: str = "south"
    pump: bool = True
    replicat_pg: bool = True
    replicat_delta: bool = True
    extract: str = "EXT1"
    pump_name: str = "PMP1"
    replicat_pg_name: str = "REPPG"
    replicat_delta_name: str = "REPDL"
    local_trail: str = "./dirdat/lt"
    remote_trail: str = "./dirdat/rt"
    #: options after EXTTRAIL/RMTTRAIL, e.g. ", FORMAT RELEASE 21.1" (docs/trail-format.md)
    local_trail_options: str = ""
    remote_trail_options: str = ""
    #: ENCRYPTTRAIL before the Extract's EXTTRAIL (e.g. "AES256, KEYNAME demo"): the key is
    #: made in the home's ENCKEYS file; the Pump passes the trail through encrypted
    encrypt_trail: str = ""
    delta_dir: str = "./delta"
    checkpoint_table: str = "ggadmin.ggs_checkpoint"
    #: SPARK TRIGGER of every group; None: none (each group's own batch window)
    trigger: str | None = "1 SECONDS"
    extract_master: str = "local[1]"
    replicat_master: str = "local[2]"
    #: ``SPARK CONF key=value`` settings for every group (a shared cluster's share each)
    spark_conf: list[str] = field(default_factory=list)
    batchsql: bool = True
    extra_replicat_params: list[str] = field(default_factory=list)
    extra_extract_params: list[str] = field(default_factory=list)
    #: DDL replication: ADD DDLSUPPORT and ADD SCHEMATRANDATA for these schemas (instead of
    #: ADD TRANDATA per table), DDL INCLUDE MAPPED in the Extract, DDLOPTIONS REPORT
    ddl_schemas: list[str] = field(default_factory=list)

    @property
    def apply_trail(self) -> str:
        """The trail the Replicats read: the pump's, or the Extract's without a pump."""
        return self.remote_trail if self.pump else self.local_trail

    def groups(self) -> list[Group]:
        out = [Group("EXTRACT", self.extract, "Extract (capture)")]
        if self.pump:
            out.append(Group("EXTRACT", self.pump_name, "Data Pump"))
        if self.replicat_pg:
            out.append(Group("REPLICAT", self.replicat_pg_name, "Replicat → PostgreSQL"))
        if self.replicat_delta:
            out.append(Group("REPLICAT", self.replicat_delta_name, "Replicat → Delta Lake"))
        return out


def _make_key(home: Home, encrypt: str) -> None:
    """The ENCKEYS key ``ENCRYPTTRAIL encrypt`` names, made unless the home has it."""
    words = encrypt.replace(",", " ").split()
    upper = [w.upper() for w in words]
    name = words[upper.index("KEYNAME") + 1] if "KEYNAME" in upper[:-1] else DEFAULT_KEY_NAME
    path = enckeys_path(home.path)
    if EncKeysFile(path).current(name) is None:
        add_key(path, name)


def _spark_lines(master: str, trigger: str | None, conf: list[str]) -> list[str]:
    return [f"SPARK MASTER {master}", *([f"SPARK TRIGGER {trigger}"] if trigger else []),
            *(f"SPARK CONF {setting}" for setting in conf)]


class Pipeline:
    """A home with one pipeline in it: files, GGSCI, state, catch-up, stop."""

    def __init__(self, home: Home, spec: PipelineSpec):
        self.home = home
        self.spec = spec

    @property
    def groups(self) -> list[Group]:
        return self.spec.groups()

    @property
    def delta_root(self) -> Path:
        return self.home.resolve(self.spec.delta_dir)

    # -- files --------------------------------------------------------------------------
    def write_files(self, source_login: tuple[str, str], target_login: tuple[str, str],
                    ) -> tuple[Path, Path]:
        """GLOBALS, one parameter file per group, the two logins in the credential store
        (aliases ``ggsrc`` and ``ggtgt``), and the obey files ``setup.oby`` (TRANDATA, groups)
        and ``start.oby``; returns the two obey files."""
        s, home = self.spec, self.home
        home.create()
        home.globals_file.write_text(f"GGSCHEMA ggadmin\nCHECKPOINTTABLE {s.checkpoint_table}\n")
        if s.encrypt_trail:
            _make_key(home, s.encrypt_trail)
        tables = "".join(f"TABLE {t};\n" for t in s.tables)
        ddl = ["DDL INCLUDE MAPPED", "DDLOPTIONS REPORT"] if s.ddl_schemas else []
        home.param_file(s.extract).write_text(
            f"EXTRACT {s.extract.lower()}\n"
            f"SOURCEDB {s.source_db}, USERIDALIAS ggsrc\n"
            + (f"ENCRYPTTRAIL {s.encrypt_trail}\n" if s.encrypt_trail else "")
            + f"EXTTRAIL {s.local_trail}{s.local_trail_options}\n"
            "REPORTCOUNT EVERY 30 SECONDS, RATE\n"
            + "".join(f"{line}\n" for line in [*ddl, *s.extra_extract_params])
            + "\n".join(_spark_lines(s.extract_master, s.trigger, s.spark_conf))
            + "\n" + tables)
        if s.pump:
            home.param_file(s.pump_name).write_text(
                f"EXTRACT {s.pump_name.lower()}\n"
                f"RMTTRAIL {s.remote_trail}{s.remote_trail_options}\n"
                "PASSTHRU\n"
                + "\n".join(_spark_lines(s.extract_master, s.trigger, s.spark_conf))
                + "\n" + tables)
        maps = "".join(f"MAP {src}, TARGET {tgt};\n" for src, tgt in s.maps)
        common = ["REPORTCOUNT EVERY 30 SECONDS, RATE", *ddl[1:], *s.extra_replicat_params,
                  *_spark_lines(s.replicat_master, s.trigger, s.spark_conf)]
        if s.replicat_pg:
            name = s.replicat_pg_name
            lines = [f"REPLICAT {name.lower()}", f"TARGETDB {s.target_db}, USERIDALIAS ggtgt",
                     f"DISCARDFILE ./dirdsc/{name.lower()}.dsc, PURGE", *common]
            if s.batchsql:
                lines.append("BATCHSQL")
            home.param_file(name).write_text("\n".join(lines) + "\n" + maps)
        if s.replicat_delta:
            name = s.replicat_delta_name
            lines = [f"REPLICAT {name.lower()}", f"TARGETDELTA {s.delta_dir}",
                     f"DISCARDFILE ./dirdsc/{name.lower()}.dsc, PURGE", *common]
            home.param_file(name).write_text("\n".join(lines) + "\n" + maps)

        # the passwords go straight into the sealed credential store, never into a file
        store = CredentialStore(home.path)
        store.create()
        store.add("ggsrc", *source_login)
        store.add("ggtgt", *target_login)
        setup = [
            "-- trailgate demo: supplemental logging, groups and trails. The aliases ggsrc and",
            "-- ggtgt are in the credential store already (ALTER CREDENTIALSTORE ADD USER …",
            "-- ALIAS …): no password is written in any file.",
            "INFO CREDENTIALSTORE",
            "DBLOGIN USERIDALIAS ggsrc",
            *(["ADD DDLSUPPORT"] if s.ddl_schemas else []),
            *(f"ADD SCHEMATRANDATA {schema}" for schema in s.ddl_schemas),
            *(f"ADD TRANDATA {t}" for t in s.tables if not s.ddl_schemas),
            f"ADD EXTRACT {s.extract.lower()}, TRANLOG, BEGIN NOW",
            f"ADD EXTTRAIL {s.local_trail}, EXTRACT {s.extract.lower()}, MEGABYTES 100",
        ]
        if s.pump:
            setup += [f"ADD EXTRACT {s.pump_name.lower()}, EXTTRAILSOURCE {s.local_trail}",
                      f"ADD RMTTRAIL {s.remote_trail}, EXTRACT {s.pump_name.lower()}, "
                      "MEGABYTES 100"]
        if s.replicat_pg:
            setup += ["DBLOGIN USERIDALIAS ggtgt", "ADD CHECKPOINTTABLE",
                      f"ADD REPLICAT {s.replicat_pg_name.lower()}, EXTTRAIL {s.apply_trail}, "
                      f"CHECKPOINTTABLE {s.checkpoint_table}"]
        if s.replicat_delta:
            setup.append(f"ADD REPLICAT {s.replicat_delta_name.lower()}, EXTTRAIL "
                         f"{s.apply_trail}, NODBCHECKPOINT")
        start = [f"START {g.kind} {g.name.lower()}" for g in self.groups] + ["INFO ALL"]
        setup_file, start_file = home.path / "setup.oby", home.path / "start.oby"
        setup_file.write_text("\n".join(setup) + "\n")
        start_file.write_text("\n".join(start) + "\n")
        return setup_file, start_file

    # -- GGSCI ----------------------------------------------------------------------------
    def ggsci(self, scripts: str | Path | list[str | Path], out: TextOut,
              name: str = "demo") -> None:
        """Run obey files (or script texts) in one GGSCI session printing to ``out``."""
        from trailgate.ggsci.shell import Shell

        shell = Shell(self.home, out)
        try:
            for script in scripts if isinstance(scripts, list) else [scripts]:
                if isinstance(script, Path):
                    shell.run_file(str(script))
                else:
                    shell.run_script(script, name)
        except TrailgateError:
            raise
        except Exception as exc:  # _ObeyFailed: GGSCI printed the error already
            raise PipelineError(f"GGSCI stopped: {exc or 'see the lines above'}") from None
        finally:
            shell.close()

    # -- state ----------------------------------------------------------------------------
    def checkpoint(self, group: Group) -> Checkpoint | None:
        try:
            return self.home.checkpoints.load(group.name, group.kind)
        except TrailgateError:
            return None  # being replaced right now: the next look sees it

    def operations(self, group: Group) -> int:
        """Operations the group has written or applied, from its checkpoint."""
        ck = self.checkpoint(group)
        return sum(s.total for s in ck.stats.values()) if ck else 0

    def lag_seconds(self, group: Group) -> float | None:
        """Lag at checkpoint: the checkpoint's time minus the last source commit it covers."""
        ck = self.checkpoint(group)
        if ck is None or not ck.read_time:
            return None
        try:
            updated = datetime.fromisoformat(ck.updated)
            read = datetime.fromisoformat(ck.read_time)
        except ValueError:
            return None
        if read.tzinfo is None:
            read = read.replace(tzinfo=UTC)
        return max(0.0, (updated - read).total_seconds())

    def event_mark(self) -> int:
        """Where the event log ends now: :meth:`started_since` looks after it."""
        try:
            return self.home.ggserr_log.stat().st_size
        except OSError:
            return 0

    def started_since(self, mark: int) -> list[Group]:
        """Groups that logged OGG-00993 (started: Spark is up, the query runs) after
        ``mark``."""
        try:
            with self.home.ggserr_log.open("rb") as fh:
                fh.seek(mark)
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        return [g for g in self.groups
                if f"OGG-00993  trailgate {g.kind} {g.name} started" in text]

    def check_running(self) -> None:
        """Raise if a group abended or stopped on its own, with the reason its report gives."""
        for g in self.groups:
            state = lifecycle.process_state(self.home, g.name)
            if state.status in (Status.ABENDED, Status.STOPPED):
                raise PipelineError(f"{g.kind} {g.name} is {state.status.value}: "
                                    f"{self.abend_reason(g)} (report "
                                    f"{self.home.report_file(g.name)})")

    def abend_reason(self, group: Group) -> str:
        """The most telling line of a stopped group's report: the last Python exception
        (not Java's stack around it), else the abend event, else the last line."""
        try:
            text = self.home.report_file(group.name).read_text("utf-8", errors="replace")
        except OSError:
            return "no report"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for line in reversed(lines):
            if _EXCEPTION.match(line) and not line.startswith(("py4j", "org.", "java.")):
                return line[:400]
        for line in reversed(lines):
            if "ABENDING" in line or line.startswith("trailgate:"):
                return line[:400]
        return lines[-1][:400] if lines else "empty report"

    def report_tail(self, group: Group, lines: int = 6) -> str:
        try:
            text = self.home.report_file(group.name).read_text("utf-8", errors="replace")
        except OSError:
            return "(no report)"
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return "last lines of its report:\n    " + "\n    ".join(tail)

    # -- catch-up -------------------------------------------------------------------------
    def wait_caught_up(self, source_conninfo: str, *, timeout: float,
                       tick: Callable[[], None] | None = None) -> int | None:
        """Wait until every group has everything the source committed so far; returns the
        CSN (commit LSN) of the last captured transaction (None: nothing was captured).

        The Extract is caught up when its read position passes the WAL end seen now (it
        moves even when the captured tables are idle); the last transaction it wrote is then
        the last source commit, and the other groups are caught up when their checkpoints
        reach its CSN.
        """
        with connect(source_conninfo) as conn:
            row = conn.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8").fetchone()
        end = int(row[0]) if row else 0
        deadline = time.monotonic() + timeout
        extract, *rest = self.groups

        def wait(done: Callable[[], bool], what: str) -> None:
            while not done():
                self.check_running()
                if time.monotonic() >= deadline:
                    raise PipelineError(f"timed out after {timeout:.0f} s waiting for {what}")
                if tick is not None:
                    tick()
                time.sleep(0.5)

        def extract_done() -> bool:
            ck = self.checkpoint(extract)
            return ck is not None and ck.read_lsn >= end

        wait(extract_done, f"EXTRACT {extract.name} to read the source's WAL")
        ck = self.checkpoint(extract)
        target = int(ck.last_csn) if ck and ck.last_csn is not None else None
        if target is None:
            return None
        for g in rest:
            def done(g: Group = g) -> bool:
                c = self.checkpoint(g)
                return c is not None and c.last_csn is not None and int(c.last_csn) >= target

            wait(done, f"{g.kind} {g.name} to reach CSN {target}")
        return target

    # -- stop -----------------------------------------------------------------------------
    def running(self) -> list[Group]:
        out = []
        for g in self.groups:
            with contextlib.suppress(TrailgateError):
                if lifecycle.process_state(self.home, g.name).status in (
                        Status.RUNNING, Status.STARTING):
                    out.append(g)
        return out

    def stop_all(self, timeout: float = 90.0) -> list[str]:
        """Stop every running group (SIGTERM: each finishes its batch and checkpoints), all
        at once, then wait; a group still running after ``timeout`` is killed.  Returns one
        line per group for people.  Never raises: it runs on every way out."""
        lines = []
        asked = []
        for g in self.running():
            try:
                lifecycle.stop_group(self.home, g.kind, g.name, wait=False)
                asked.append(g)
            except TrailgateError as exc:
                lines.append(f"{g.kind} {g.name}: {exc}")
        deadline = time.monotonic() + timeout
        for g in asked:
            while g in self.running() and time.monotonic() < deadline:
                time.sleep(0.3)
            if g in self.running():
                with contextlib.suppress(TrailgateError):
                    lifecycle.kill_group(self.home, g.kind, g.name)
                lines.append(f"{g.kind} {g.name} did not stop within {timeout:.0f} s: killed "
                             "(it resumes from its checkpoint)")
            else:
                lines.append(f"{g.kind} {g.name} stopped")
        return lines
