"""Execute parsed GGSCI commands against a home: one method per command type.

The executor holds what a GGSCI session holds: the home, the database login (DBLOGIN) and
the command history.  Every failure is a :class:`~trailgate.errors.TrailgateError` whose
message the shell prints after ``ERROR:``; nothing here prints a traceback.  Database and
Spark modules are imported by the commands that need them, so ``INFO ALL`` starts instantly.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Protocol

from trailgate.checkpoint import Checkpoint
from trailgate.errors import ConfigError, TrailgateError
from trailgate.ggsci import commands as c
from trailgate.ggsci import display, operations
from trailgate.ggsci.history import CommandHistory
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.process import lifecycle
from trailgate.process.lifecycle import CommandFactory, Status
from trailgate.wallet.masking import mask_secrets

__all__ = ["Executor", "GgsciError", "TextOut", "mask_secrets"]

_DEFAULT_MEGABYTES = 500
_NOT_LOGGED_IN = "Not logged into database, use DBLOGIN."


class TextOut(Protocol):
    """Where GGSCI prints: what it needs of a text stream (a file, or a wrapper of one)."""

    def write(self, text: str, /) -> int: ...
    def flush(self) -> None: ...


class GgsciError(TrailgateError):
    """A command failed; ``reported`` means its ERROR lines were already printed (a
    wildcard command reports each group's failure as it happens)."""

    def __init__(self, message: str, *, reported: bool = False):
        super().__init__(message)
        self.reported = reported


class Executor:
    """Runs commands for one GGSCI session.

    ``run_command`` builds the argv that runs a group (default: ``python -m trailgate.cli
    run extract|replicat NAME``); ``on_obey`` runs an obey file (the shell supplies it, since
    obey files echo and number their commands like typed ones).
    """

    def __init__(self, home: Home, out: TextOut, *, interactive: bool = False,
                 history: CommandHistory | None = None,
                 run_command: CommandFactory | None = None,
                 start_wait: float = lifecycle.DEFAULT_START_WAIT,
                 stop_timeout: float = lifecycle.DEFAULT_STOP_TIMEOUT,
                 environ: Mapping[str, str] | None = None,
                 on_obey: Callable[[str], None] | None = None):
        self.home = home
        self.out = out
        self.interactive = interactive
        self.history = history if history is not None else CommandHistory()
        self.run_command = run_command
        self.start_wait = start_wait
        self.stop_timeout = stop_timeout
        self.environ = os.environ if environ is None else environ
        self.on_obey = on_obey
        self.conn: Any = None  # psycopg connection of DBLOGIN
        self.login: Any = None  # its LoginReport
        self.wallet_open = False  # OPEN WALLET or CREATE WALLET ran in this session
        self._handlers: dict[type, Callable[[Any], bool | None]] = {
            c.DbLogin: self._dblogin,
            c.TranData: self._trandata,
            c.SchemaTranData: self._schematrandata,
            c.DdlSupport: self._ddlsupport,
            c.AddCheckpointTable: self._checkpoint_table,
            c.InfoCheckpointTable: self._checkpoint_table,
            c.DeleteCheckpointTable: self._checkpoint_table,
            c.AddExtract: self._add_extract,
            c.AddReplicat: self._add_replicat,
            c.AlterGroup: self._alter,
            c.AddTrail: self._add_trail,
            c.DeleteTrail: self._delete_trail,
            c.InfoTrail: self._info_trail,
            c.DeleteGroup: self._delete_group,
            c.StartGroup: self._start,
            c.StopGroup: self._stop,
            c.KillGroup: self._kill,
            c.InfoGroup: self._info_group,
            c.StatsGroup: self._stats,
            c.LagGroup: self._lag,
            c.InfoAll: self._info_all,
            c.CompareGroups: self._compare,
            c.SendSnapshot: self._send_snapshot,
            c.ViewReport: self._view_report,
            c.ViewParams: self._view_params,
            c.EditParams: self._edit_params,
            c.ViewGgsevt: self._view_ggsevt,
            c.AddCredentialStore: self._add_credentialstore,
            c.DeleteCredentialStore: self._delete_credentialstore,
            c.AlterCredentialStore: self._alter_credentialstore,
            c.InfoCredentialStore: self._info_credentialstore,
            c.WalletCommand: self._wallet,
            c.MasterKeyCommand: self._masterkey,
            c.ManagerCommand: self._manager,
            c.HeartbeatTable: self._heartbeat,
            c.Obey: self._obey,
            c.Help: self._help,
            c.History: self._history,
            c.Exit: lambda _cmd: True,
        }

    # -- plumbing -----------------------------------------------------------------------
    def execute(self, cmd: c.Command, line: str | None = None) -> bool:
        """Run one command; True when the session should end (EXIT).  ``line`` is the text
        as typed, written (passwords masked) to the event log for commands that change
        something, as GoldenGate logs GGSCI commands."""
        handler = self._handlers.get(type(cmd))
        if handler is None:
            raise GgsciError(f"{type(cmd).__name__} cannot be executed here.")
        if line is not None and _changes_something(cmd):
            self._log_command(line)
        return bool(handler(cmd))

    def close(self) -> None:
        """Close the DBLOGIN connection."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn = self.login = None

    def print(self, *lines: str) -> None:
        for text in lines:
            self.out.write(text + "\n")
        self.out.flush()

    def _log_command(self, line: str) -> None:
        with contextlib.suppress(OSError):
            self.home.log_event("INFO", "OGG-00987",
                                f"GGSCI command ({getpass.getuser()}): "
                                f"{mask_secrets(line.strip())}.")

    def _require_login(self) -> Any:
        if self.conn is None or self.conn.closed:
            raise GgsciError(_NOT_LOGGED_IN)
        return self.conn

    def _groups(self, kind: str | None, pattern: str) -> list[GroupInfo]:
        """The groups a name or wildcard designates; an error naming what is missing."""
        pattern = pattern.upper()
        kinds = ("EXTRACT", "REPLICAT") if kind in (None, "ER") else (kind,)
        groups = [g for g in self.home.groups()
                  if g.kind in kinds and fnmatchcase(g.name, pattern)]
        if groups:
            return groups
        what = kind if kind in ("EXTRACT", "REPLICAT") else "group"
        if any(ch in pattern for ch in "*?"):
            raise GgsciError(f"No {what} matches {pattern}; INFO ALL lists the groups.")
        other = self.home.group(pattern)
        if other is not None:
            raise GgsciError(f"{pattern} is a {other.kind}, not a {kind}.")
        raise GgsciError(f"{what.upper() if kind else 'Group'} {pattern} does not exist.")

    def _each(self, groups: list[GroupInfo], action: Callable[[GroupInfo], None]) -> None:
        """Run ``action`` per group; with several groups, one's failure is reported and the
        others still run (as GGSCI does for ``START ER *``)."""
        if len(groups) == 1:
            action(groups[0])
            return
        failed = 0
        for group in groups:
            try:
                action(group)
            except TrailgateError as exc:
                failed += 1
                self.print(_error_text(exc))
        if failed:
            raise GgsciError(f"{failed} of {len(groups)} groups failed.", reported=False)

    def _checkpoint(self, group: GroupInfo) -> Checkpoint | None:
        return self.home.checkpoints.load(group.name, group.kind)

    # -- database -----------------------------------------------------------------------
    def _dblogin(self, cmd: c.DbLogin) -> None:
        from trailgate.db.connect import (
            DEFAULT_DOMAIN,
            credential_conninfo,
            login_conninfo,
        )
        from trailgate.db.prereqs import dblogin

        if cmd.useridalias:
            cred = self._store().get(cmd.useridalias, cmd.domain or DEFAULT_DOMAIN)
            conninfo = credential_conninfo(cred, cmd.sourcedb)
        else:
            password = cmd.password
            if password is None and cmd.userid and self.interactive:
                password = getpass.getpass("Password: ")
            conninfo = login_conninfo(sourcedb=cmd.sourcedb, userid=cmd.userid,
                                      password=password)
        conn, report = dblogin(conninfo)
        self.close()
        self.conn, self.login = conn, report
        self.print(*report.lines())
        if report.problems:
            self.print(f"Capture from {report.server} is not possible until the ERROR lines "
                       f"above are fixed; TRANDATA commands work meanwhile.")

    def _trandata(self, cmd: c.TranData) -> None:
        from trailgate.capture.postgres import trandata as td

        conn = self._require_login()
        if cmd.action == "INFO":
            self.print(*td.info_trandata(conn, cmd.table))
        elif cmd.action == "DELETE":
            self.print(*td.delete_trandata(conn, cmd.table))
        elif not cmd.allcols:
            self.print(*td.add_trandata(conn, cmd.table,
                                        cols=list(cmd.cols) if cmd.cols else None,
                                        nokey=cmd.nokey))
        else:
            tables = td.resolve_tables(conn, cmd.table)
            if not tables:  # the usual "no table matches" message
                self.print(*td.add_trandata(conn, cmd.table))
            for oid, schema, table in tables:
                cols = [r[0] for r in conn.execute(
                    "SELECT attname::text FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
                    "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
                    (oid,)).fetchall()]
                self.print(*td.add_trandata(conn, _quoted(schema, table), cols=cols))

    def _schematrandata(self, cmd: c.SchemaTranData) -> None:
        from trailgate.capture.postgres import trandata as td

        conn = self._require_login()
        if cmd.action == "ADD":
            if cmd.allcols:
                raise GgsciError(
                    f"ADD SCHEMATRANDATA {cmd.schema}, ALLCOLS is not supported on "
                    f"PostgreSQL: use ADD SCHEMATRANDATA {cmd.schema} for the keys, and ADD "
                    f"TRANDATA {cmd.schema}.*, ALLCOLS to log every column of existing tables.")
            self.print(*td.add_schematrandata(conn, cmd.schema))
        elif cmd.action == "INFO":
            self.print(*td.info_schematrandata(conn, cmd.schema))
        else:
            self.print(*td.delete_schematrandata(conn, cmd.schema))

    def _ddlsupport(self, cmd: c.DdlSupport) -> None:
        from trailgate.capture.postgres import ddl_setup
        from trailgate.params import parse_globals

        conn = self._require_login()
        schema = parse_globals(self.home.globals_file).ggschema
        fn = {"ADD": ddl_setup.add_ddlsupport, "INFO": ddl_setup.info_ddlsupport,
              "DELETE": ddl_setup.delete_ddlsupport}[cmd.action]
        self.print(*fn(conn, schema))

    def _checkpoint_table(self, cmd: Any) -> None:
        from trailgate.apply import checkpoint_table as ct

        conn = self._require_login()
        name = cmd.table or self._globals_checkpoint_table()
        if name is None:
            raise GgsciError("No checkpoint table given and none in GLOBALS: name one "
                             "(ADD CHECKPOINTTABLE schema.table) or add CHECKPOINTTABLE "
                             "schema.table to dirprm/GLOBALS.")
        fn = {c.AddCheckpointTable: ct.add_checkpoint_table,
              c.InfoCheckpointTable: ct.info_checkpoint_table,
              c.DeleteCheckpointTable: ct.delete_checkpoint_table}[type(cmd)]
        self.print(*fn(conn, name))

    def _globals_checkpoint_table(self) -> str | None:
        from trailgate.params import parse_globals
        return parse_globals(self.home.globals_file).checkpoint_table

    # -- groups ---------------------------------------------------------------------------
    def _add_extract(self, cmd: c.AddExtract) -> None:
        self.home.create()
        existing = self.home.group(cmd.name)
        if existing is not None:
            raise GgsciError(f"{existing.kind} {cmd.name} already exists.")
        begin: str | dict[str, Any] | None = _begin(cmd.begin, cmd.position)
        source, source_path = cmd.source, cmd.source_path
        slot_lines: list[str] = []
        created_slot = False
        if cmd.source == "SOURCEISTABLE":
            begin = None
        elif cmd.source == "TRANLOG" and cmd.dumpdir:
            source, source_path = "DUMPDIR", cmd.dumpdir
        elif cmd.source == "TRANLOG" and cmd.initialload:
            load = self.home.group(cmd.initialload)
            if load is not None and load.source != "SOURCEISTABLE":
                raise GgsciError(f"INITIALLOAD {cmd.initialload}: {load.kind} "
                                 f"{cmd.initialload} is not an initial load (ADD EXTRACT "
                                 f"{cmd.initialload}, SOURCEISTABLE).")
            begin = {"initialload": cmd.initialload}
            slot_lines.append(f"Its replication slot is created by the initial load "
                              f"{cmd.initialload} (START EXTRACT {cmd.initialload}), with the "
                              f"snapshot the load reads.")
        elif cmd.source == "TRANLOG":
            if cmd.begin != "NOW":
                raise GgsciError(
                    f"ADD EXTRACT {cmd.name}: a PostgreSQL Extract captures from when its "
                    f"replication slot is created, so use BEGIN NOW; for Oracle redo dumps "
                    f"add DUMPDIR dir.")
            if self.conn is None or self.conn.closed:
                raise GgsciError(f"{_NOT_LOGGED_IN} ADD EXTRACT {cmd.name}, TRANLOG creates "
                                 f"its replication slot in the source database.")
            from trailgate.capture.postgres.pgoutput import format_lsn
            from trailgate.capture.postgres.slots import add_extract
            src = add_extract(self.conn, cmd.name)
            created_slot = True
            begin = {"lsn": format_lsn(src.begin_lsn)}
            slot_lines.append(f"Replication slot {src.slot} created at LSN "
                              f"{format_lsn(src.begin_lsn)} (publication {src.publication}).")
        elif begin is None:
            begin = {"seqno": 0, "rba": 0}
        info = GroupInfo(cmd.name, "EXTRACT", source, source_path, begin=begin,
                         description=cmd.description)
        try:
            self.home.add_group(info)
        except TrailgateError:
            if created_slot:
                from trailgate.capture.postgres.slots import delete_extract
                with contextlib.suppress(Exception):
                    delete_extract(self.conn, cmd.name)
            raise
        if source == "EXTTRAILSOURCE":
            operations.register_reader_of(self.home, source_path, cmd.name, "EXTRACT",
                                          self.print)
        self.print(*slot_lines,
                   "EXTRACT (Integrated) added." if cmd.integrated else "EXTRACT added.")

    def _add_replicat(self, cmd: c.AddReplicat) -> None:
        self.home.create()
        existing = self.home.group(cmd.name)
        if existing is not None:
            raise GgsciError(f"{existing.kind} {cmd.name} already exists.")
        table = cmd.checkpoint_table
        if table is None and not cmd.nodbcheckpoint:
            table = self._globals_checkpoint_table()
        begin = _begin(cmd.begin, cmd.position) or {"seqno": 0, "rba": 0}
        self.home.add_group(GroupInfo(cmd.name, "REPLICAT", "EXTTRAIL", cmd.exttrail,
                                      checkpoint_table=table, begin=begin,
                                      description=cmd.description))
        operations.register_reader_of(self.home, cmd.exttrail, cmd.name, "REPLICAT",
                                      self.print)
        self.print("REPLICAT added.")

    def _alter(self, cmd: c.AlterGroup) -> None:
        group = self._groups(cmd.kind, cmd.name)[0]
        self._require_stopped(group, "ALTER")
        cp = self._checkpoint(group)
        if cmd.etrollover:
            if cp is None or cp.write_position is None:
                raise GgsciError(f"EXTRACT {group.name} has not written a trail yet: "
                                 f"nothing to roll over.")
            from trailgate.model import TrailPosition
            cp.write_position = TrailPosition(cp.write_position.seqno + 1, 0)
            self.home.checkpoints.save(cp)
            self.print(f"Rollover performed: {group.name} writes trail sequence number "
                       f"{cp.write_position.seqno} when it starts. Reposition the trail's "
                       f"reader with ALTER EXTRACT|REPLICAT name, EXTSEQNO "
                       f"{cp.write_position.seqno}, EXTRBA 0; it does not move by itself.",
                       f"{group.kind} altered.")
            return
        if cmd.position is not None:
            position = dict(cmd.position)
            _check_position_kind(group, position)
            if group.source == "TRANLOG" and cp is None:
                raise GgsciError(
                    f"EXTRACT {group.name} has not run yet: it begins where its replication "
                    f"slot was created. ALTER ... LSN repositions it after its first start; "
                    f"to begin now, DELETE EXTRACT and ADD EXTRACT ..., BEGIN NOW.")
            if group.source == "TRANLOG" and cp is not None:
                from trailgate.capture.postgres.pgoutput import format_lsn, parse_lsn
                done = _lsn_number(cp.read_position.get("lsn"))
                if parse_lsn(position["lsn"]) < done:
                    raise GgsciError(f"EXTRACT {group.name} has read up to LSN "
                                     f"{format_lsn(done)}; a replication slot cannot move "
                                     f"back, so ALTER ... LSN can only move it forward.")
            group.begin = position
            if cp is not None:
                from trailgate.capture.postgres.pgoutput import parse_lsn
                cp.read_position = ({"lsn": parse_lsn(position["lsn"])} if "lsn" in position
                                    else dict(position))  # checkpoints hold LSNs as numbers
                cp.recovery_position = None
                self.home.checkpoints.save(cp)
        else:
            if cp is not None:
                raise GgsciError(
                    f"{group.kind} {group.name} has a checkpoint (read position "
                    f"{display.position_summary(cp.read_position)}); BEGIN applies only "
                    f"before the first start. Reposition with "
                    f"{'LSN x/y' if group.source == 'TRANLOG' else 'EXTSEQNO n, EXTRBA n'}, "
                    f"or DELETE and ADD the group.")
            group.begin = _begin(cmd.begin, None)
        self.home.update_group(group)
        self.print(f"{group.kind} altered.")

    def _require_stopped(self, group: GroupInfo, verb: str) -> None:
        state = lifecycle.process_state(self.home, group.name)
        if state.status in (Status.RUNNING, Status.STARTING):
            raise GgsciError(f"{group.kind} {group.name} is running (pid {state.pid}); STOP "
                             f"{group.kind} {group.name} before {verb}.")

    def _delete_group(self, cmd: c.DeleteGroup) -> None:
        group = self._groups(cmd.kind, cmd.name)[0]
        self._require_stopped(group, "DELETE")
        lines: list[str] = []
        logged_in = self.conn is not None and not self.conn.closed
        if group.kind == "EXTRACT" and group.source == "TRANLOG":
            from trailgate.capture.postgres.slots import delete_extract, slot_name
            slot = slot_name(group.name)
            if logged_in:
                dropped = delete_extract(self.conn, group.name)
                lines.append(f"Replication slot {slot} dropped." if dropped else
                             f"Replication slot {slot} did not exist.")
            elif cmd.force:
                lines.append(f"WARNING: replication slot {slot} was not dropped (not logged "
                             f"into database); it keeps WAL until dropped: "
                             f"SELECT pg_drop_replication_slot('{slot}').")
            else:
                raise GgsciError(f"{_NOT_LOGGED_IN} DELETE EXTRACT {group.name} drops its "
                                 f"replication slot {slot}; DELETE EXTRACT {group.name} ! "
                                 f"deletes the group and leaves the slot.")
        if group.kind == "REPLICAT" and group.checkpoint_table:
            if logged_in:
                lines += self._delete_checkpoint_rows(group)
            elif not cmd.force:
                raise GgsciError(
                    f"{_NOT_LOGGED_IN} DELETE REPLICAT {group.name} removes its rows from "
                    f"checkpoint table {group.checkpoint_table} (a new group of the same name "
                    f"would otherwise skip batches); DELETE REPLICAT {group.name} ! leaves "
                    f"them.")
        if group.source == "SOURCEISTABLE":
            from trailgate.load.manifest import manifest_path

            manifest_path(self.home.dirchk, group.name).unlink(missing_ok=True)
            shutil.rmtree(self.home.dirtmp / f"load-{group.name.lower()}", ignore_errors=True)
        self.home.delete_group(group.name)
        operations.unregister_reader_of(self.home, group)
        lifecycle.pid_file(self.home, group.name).unlink(missing_ok=True)
        (self.home.dirchk / f"{group.name}.trailstate").unlink(missing_ok=True)
        shutil.rmtree(self.home.spark_checkpoint_dir(group.name), ignore_errors=True)
        self.print(*lines, f"Deleted {group.kind} {group.name}.")

    def _delete_checkpoint_rows(self, group: GroupInfo) -> list[str]:
        from psycopg import sql

        from trailgate.apply.checkpoint_table import table_identifier
        assert group.checkpoint_table is not None
        schema, table, ident = table_identifier(group.checkpoint_table)
        exists = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                   (ident.as_string(self.conn),)).fetchone()
        if not exists or not exists[0]:
            return []
        cur = self.conn.execute(sql.SQL("DELETE FROM {} WHERE group_name = %s").format(ident),
                                (group.name,))
        return [f"Deleted {cur.rowcount} row(s) of {group.name} from checkpoint table "
                f"{schema}.{table}."]

    # -- trails ---------------------------------------------------------------------------
    def _add_trail(self, cmd: c.AddTrail) -> None:
        self.home.add_trail(cmd.extract, TrailInfo(cmd.path, cmd.kind,
                                                   cmd.megabytes or _DEFAULT_MEGABYTES))
        self.print(f"{cmd.kind} added.")

    def _delete_trail(self, cmd: c.DeleteTrail) -> None:
        for group in self.home.groups():
            for trail in group.trails:
                if trail.path == cmd.path and trail.kind != cmd.kind:
                    raise GgsciError(f"{cmd.path} is an {trail.kind} of EXTRACT {group.name}; "
                                     f"use DELETE {trail.kind} {cmd.path}.")
        group = self.home.delete_trail(cmd.path)
        what = "extract" if cmd.kind == "EXTTRAIL" else "remote"
        self.print(f"Deleting {what} trail {cmd.path} for extract {group.name}")

    def _info_trail(self, cmd: c.InfoTrail) -> None:
        found = 0
        for group in self.home.groups():
            cp = None
            for trail in group.trails:
                if trail.kind != cmd.kind or (cmd.path != "*" and trail.path != cmd.path):
                    continue
                if cp is None:
                    cp = self._checkpoint(group)
                seqno = rba = 0
                if cp is not None and cp.write_position is not None and (
                        cp.write_trail in (None, trail.path) or len(group.trails) == 1):
                    seqno, rba = cp.write_position.seqno, cp.write_position.rba
                self.print(*display.info_trail(trail.path, trail.kind, group.name,
                                               trail.megabytes, seqno, rba))
                found += 1
        if not found:
            what = "extract" if cmd.kind == "EXTTRAIL" else "remote"
            raise GgsciError(f"No {what} trail matches {cmd.path}; ADD {cmd.kind} "
                             f"creates one." if cmd.path != "*" else
                             f"No {what} trails exist; ADD {cmd.kind} creates one.")

    # -- processes ------------------------------------------------------------------------
    def _start(self, cmd: c.StartGroup) -> None:
        extra: list[str] = []
        if cmd.atcsn is not None:
            extra = ["--atcsn", cmd.atcsn]
        elif cmd.aftercsn is not None:
            extra = ["--aftercsn", cmd.aftercsn]

        def start(group: GroupInfo) -> None:
            params = self._param_path(group.name)
            if not params.exists():
                raise GgsciError(f"Parameter file {params} does not exist; EDIT PARAMS "
                                 f"{group.name} creates it.")
            kwargs: dict[str, Any] = {"extra_args": extra, "wait": self.start_wait}
            if self.run_command is not None:
                kwargs["command"] = self.run_command
            lifecycle.start_group(self.home, group.kind, group.name, **kwargs)
            self.print(f"{group.kind} {group.name} starting")

        self._each(self._groups(cmd.kind, cmd.name), start)

    def _stop(self, cmd: c.StopGroup) -> None:
        def stop(group: GroupInfo) -> None:
            state = lifecycle.process_state(self.home, group.name)
            if state.status not in (Status.RUNNING, Status.STARTING):
                self.print(f"{group.kind} {group.name} is already stopped.")
                return
            self.print(f"Sending STOP request to {group.kind} {group.name} ...")
            lifecycle.stop_group(self.home, group.kind, group.name,
                                 timeout=self.stop_timeout, wait=not cmd.force)
            self.print("Request processed." if not cmd.force else
                       f"Request sent; not waiting for {group.kind} {group.name} to stop.")

        self._each(self._groups(cmd.kind, cmd.name), stop)

    def _kill(self, cmd: c.KillGroup) -> None:
        def kill(group: GroupInfo) -> None:
            pid = lifecycle.kill_group(self.home, group.kind, group.name)
            self.print(f"Killed process ({pid}) for {group.kind} {group.name}")

        self._each(self._groups(cmd.kind, cmd.name), kill)

    # -- status ---------------------------------------------------------------------------
    def _info_all(self, _cmd: c.InfoAll) -> None:
        rows = []
        broken = []
        for group in self.home.groups():
            try:
                cp = self._checkpoint(group)
            except ConfigError as exc:
                cp = None
                broken.append(str(exc))
            state = lifecycle.process_state(self.home, group.name)
            rows.append((group, state.status.value, cp))
        self.print(*display.info_all(rows, manager=operations.manager_status(self.home)))
        for message in broken:
            self.print(f"WARNING: {message}")

    def _info_group(self, cmd: c.InfoGroup) -> None:
        groups = self._groups(cmd.kind, cmd.name)
        for n, group in enumerate(groups):
            if n:
                self.print("")
            state = lifecycle.process_state(self.home, group.name)
            cp = self._checkpoint(group)
            started = state.since or self._last_started(group)
            self.print(*display.info_group(group, state.status.value, state.pid, started, cp))
            self.print(*operations.heartbeat_lag_lines(self.home, group, short=True))
            if group.source == "SOURCEISTABLE":
                self.print(*self._load_lines(group))
            if cmd.showch:
                self.print(*display.showch(group, cp, cmd.showch_count))
            if cmd.detail:
                self.print(*self._detail(group, cp))

    def _load_lines(self, group: GroupInfo) -> list[str]:
        """An initial load's tables: ranges done, rows, and whether it is complete."""
        from trailgate.load.manifest import Manifest, manifest_path
        from trailgate.load.progress import summary_lines

        manifest = Manifest.load(manifest_path(self.home.dirchk, group.name))
        if manifest is None:
            return ["Initial load         not started yet (START EXTRACT "
                    f"{group.name} runs it)"]
        cuts = sorted({r.cut for t in manifest.tables for r in t.ranges
                       if r.done and r.cut is not None})
        state = "complete" if manifest.complete else "INCOMPLETE"
        lines = [f"Initial load         {state}, output {manifest.output}, "
                 f"{manifest.runs} run(s)"]
        if cuts:
            from trailgate.capture.postgres.pgoutput import format_lsn
            lines.append("Cut(s) (LSN)         " + ", ".join(format_lsn(c) for c in cuts[:6])
                         + (" …" if len(cuts) > 6 else ""))
        return [*lines, "", *summary_lines(manifest)]

    def _last_started(self, group: GroupInfo) -> Any:
        """When the group last logged "starting" (OGG-00975) in ggserr.log, if it did."""
        try:
            with open(self.home.ggserr_log, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 256 * 1024))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            return None
        needle = f"OGG-00975  trailgate {group.kind} {group.name} starting"
        for line in reversed(tail.splitlines()):
            if needle in line:
                return display.parse_time(line[:19].replace(" ", "T"))
        return None

    def _detail(self, group: GroupInfo, cp: Checkpoint | None) -> list[str]:
        out = [""]
        if group.kind == "EXTRACT":
            out += ["  Target Extract Trails:", "",
                    f"  {'Trail Name':<40}{'Seqno':>10}{'RBA':>12}{'Max MB':>8} Trail Type"]
            for trail in group.trails:
                seqno = rba = 0
                if cp is not None and cp.write_position is not None and (
                        cp.write_trail in (None, trail.path) or len(group.trails) == 1):
                    seqno, rba = cp.write_position.seqno, cp.write_position.rba
                out.append(f"  {trail.path:<40}{seqno:>10}{rba:>12}{trail.megabytes:>8} "
                           f"{trail.kind}")
            if not group.trails:
                out.append("  (none: ADD EXTTRAIL or ADD RMTTRAIL names one)")
            out.append("")
        elif group.checkpoint_table:
            out += [f"  Checkpoint table     {group.checkpoint_table}", ""]
        if group.source in ("EXTTRAILSOURCE", "EXTTRAIL", "DUMPDIR"):
            out.append(f"  Source               {group.source_path}")
        suffix = "cpe" if group.kind == "EXTRACT" else "cpr"
        out += [f"  Current directory    {self.home.path}",
                f"  Report file          {self.home.report_file(group.name)}",
                f"  Parameter file       {self._param_path(group.name)}",
                f"  Checkpoint file      {self.home.dirchk / f'{group.name}.{suffix}'}",
                f"  Process file         {lifecycle.pid_file(self.home, group.name)}",
                f"  Error log            {self.home.ggserr_log}"]
        return out

    def _stats(self, cmd: c.StatsGroup) -> None:
        from trailgate.params import match_table

        table_filter = None
        if cmd.table is not None:
            pattern = cmd.table
            table_filter = lambda name: match_table(pattern, name)  # noqa: E731
        for n, group in enumerate(self._groups(cmd.kind, cmd.name)):
            if n:
                self.print("")
            cp = self._checkpoint(group)
            self.print(*display.stats_lines(group, cp, table_filter=table_filter,
                                            report_rate=cmd.report_rate))
            if cmd.reset and cp is not None:
                self._require_stopped(group, "STATS ..., RESET")
                cp.reset_stats()
                self.home.checkpoints.save(cp)
                self.print(f"Statistics of {group.kind} {group.name} reset.")

    def _lag(self, cmd: c.LagGroup) -> None:
        for n, group in enumerate(self._groups(cmd.kind, cmd.name)):
            if n:
                self.print("")
            state = lifecycle.process_state(self.home, group.name)
            self.print(*display.lag_lines(group, self._checkpoint(group),
                                          state.status is Status.RUNNING))
            self.print(*operations.heartbeat_lag_lines(self.home, group))

    def _send_snapshot(self, cmd: c.SendSnapshot) -> None:
        from trailgate.extract.postgres.snapshot_runner import add_request

        group = self._groups("EXTRACT", cmd.name)[0]
        if group.source != "TRANLOG" or group.source_path:
            raise GgsciError(f"EXTRACT {group.name} does not capture from PostgreSQL: a "
                             f"snapshot is taken by a PostgreSQL Extract.")
        add_request(self.home.dirchk, group.name, cmd.table, cmd.resync)
        state = lifecycle.process_state(self.home, group.name)
        running = state.status in (Status.RUNNING, Status.STARTING)
        self.print(f"Sending SNAPSHOT request to EXTRACT {group.name} ...",
                   f"Request queued: {cmd.table}" + (", RESYNC" if cmd.resync else "")
                   + ("" if running else f" (EXTRACT {group.name} is not running: it starts "
                      "the snapshot when it runs)") + ".")

    def _compare(self, cmd: c.CompareGroups) -> None:
        from trailgate.compare.run import CompareOptions, compare

        outcome = compare(self.home, cmd.extract, cmd.replicat, CompareOptions(
            tables=list(cmd.tables),
            report=self.home.resolve(cmd.report) if cmd.report else None,
            repair=self.home.resolve(cmd.repair) if cmd.repair else None,
            apply_repair=cmd.apply_repair, confirm=cmd.confirm,
            confirm_timeout=cmd.confirm_wait, out=self.out))
        if not outcome.in_sync:
            raise GgsciError(f"the target of REPLICAT {cmd.replicat} is not in sync with "
                             f"the source (see the table above).", reported=False)

    # -- files ----------------------------------------------------------------------------
    def _param_path(self, name: str) -> Path:
        if name.upper() == "GLOBALS":
            return self.home.globals_file
        return self.home.param_file(name)

    def _show_file(self, path: Path, what: str) -> None:
        try:
            text = path.read_text("utf-8", errors="replace")
        except FileNotFoundError:
            raise GgsciError(f"{what} {path} does not exist.") from None
        except OSError as exc:
            raise GgsciError(f"cannot read {what.lower()} {path}: {exc.strerror}") from None
        self.print(*text.splitlines())

    def _view_report(self, cmd: c.ViewReport) -> None:
        self._show_file(self.home.report_file(cmd.name), "Report file")

    def _view_params(self, cmd: c.ViewParams) -> None:
        self._show_file(self._param_path(cmd.name), "Parameter file")

    def _view_ggsevt(self, _cmd: c.ViewGgsevt) -> None:
        if not self.home.ggserr_log.exists():
            self.print(f"The event log {self.home.ggserr_log} is empty.")
            return
        self._show_file(self.home.ggserr_log, "Event log")

    def _edit_params(self, cmd: c.EditParams) -> None:
        self.home.create()
        path = self._param_path(cmd.name)
        if not path.exists():
            group = self.home.group(cmd.name) if cmd.name != "GLOBALS" else None
            path.write_text(f"{group.kind} {group.name}\n" if group is not None else "",
                            "utf-8")
        editor = self.environ.get("VISUAL") or self.environ.get("EDITOR")
        if self.interactive and editor:
            try:
                subprocess.run([*shlex.split(editor), str(path)], check=False)
            except OSError as exc:
                raise GgsciError(f"cannot run the editor {editor!r}: {exc.strerror}; edit "
                                 f"{path} with any editor.") from None
        else:
            self.print(str(path))

    # -- credential store -------------------------------------------------------------------
    def _store(self) -> Any:
        from trailgate.wallet import CredentialStore
        return CredentialStore(self.home.path, self.environ)

    def _add_credentialstore(self, _cmd: c.AddCredentialStore) -> None:
        store = self._store()
        if not store.create():
            self.print(f"Credential store in {store.directory}/ already exists.")
            return
        self.print(f"Credential store created in {store.directory}/.")

    def _delete_credentialstore(self, _cmd: c.DeleteCredentialStore) -> None:
        store = self._store()
        if not store.exists():
            raise GgsciError(f"The credential store in {store.directory}/ does not exist.")
        store.remove()
        self.print(f"Credential store in {store.directory}/ deleted.")

    def _alter_credentialstore(self, cmd: c.AlterCredentialStore) -> None:
        from trailgate.wallet import DEFAULT_DOMAIN
        store = self._store()
        domain = cmd.domain or DEFAULT_DOMAIN
        existing = {(cred.domain, cred.alias): cred for cred in store.list()}
        if cmd.action == "DELETE":
            aliases = [cmd.alias] if cmd.alias else [
                cred.alias for (dom, _), cred in existing.items()
                if dom == domain and cred.userid == cmd.user]
            if not aliases:
                raise GgsciError(f"No alias for user {cmd.user} in domain {domain}; INFO "
                                 f"CREDENTIALSTORE lists them.")
            for alias in aliases:
                store.delete(alias, domain)
        else:
            assert cmd.alias is not None and cmd.user is not None
            present = (domain, cmd.alias) in existing
            if cmd.action == "ADD" and present:
                raise GgsciError(f"Alias {cmd.alias} already exists in domain {domain}; use "
                                 f"ALTER CREDENTIALSTORE REPLACE USER … ALIAS {cmd.alias}.")
            if cmd.action == "REPLACE" and not present:
                raise GgsciError(f"Alias {cmd.alias} does not exist in domain {domain}; use "
                                 f"ALTER CREDENTIALSTORE ADD USER … ALIAS {cmd.alias}.")
            password = cmd.password
            if password is None:
                if not self.interactive:
                    raise GgsciError(f"{cmd.action} USER {cmd.user} needs PASSWORD pw "
                                     f"(GGSCI asks for it only when run interactively).")
                password = getpass.getpass("Password: ")
            store.add(cmd.alias, cmd.user, password, domain)
        self.print(f"Credential store in {store.directory}/ altered.")

    def _info_credentialstore(self, cmd: c.InfoCredentialStore) -> None:
        """GoldenGate's layout: the default domain's aliases (or DOMAIN d's), then the names
        of the other domains; user ids with any password in them masked."""
        from trailgate.wallet import DEFAULT_DOMAIN
        store = self._store()
        if not store.exists():
            raise GgsciError(f"The credential store in {store.directory}/ does not exist; "
                             f"ADD CREDENTIALSTORE creates it.")
        creds = store.list()
        domain = cmd.domain or DEFAULT_DOMAIN
        self.print("Reading from credential store:", "")
        self.print(f"{'Default domain' if cmd.domain is None else 'Domain'}: {domain}", "")
        shown = [cred for cred in creds if cred.domain == domain]
        if not shown:
            self.print("  No aliases.", "")
        for cred in shown:
            self.print(f"  Alias: {cred.alias}", f"  Userid: {mask_secrets(cred.userid)}", "")
        others = sorted({cred.domain for cred in creds} - {domain})
        if others and cmd.domain is None:
            self.print("Other domains:", "", *(f"  {d}" for d in others), "",
                       "To view other domains, use INFO CREDENTIALSTORE DOMAIN <domain>")

    # -- master-key wallet ------------------------------------------------------------------
    def _wallet_store(self) -> Any:
        from trailgate.wallet import MasterKeyWallet
        return MasterKeyWallet(self.home.path, self.environ)

    def _wallet(self, cmd: c.WalletCommand) -> None:
        wallet = self._wallet_store()
        where = f"location '{wallet.location}'"
        if cmd.action == "CREATE":
            if wallet.create():
                self.print(f"Created wallet at {where}.")
            else:
                self.print(f"Wallet at {where} already exists.")
            wallet.open()
            self.wallet_open = True
            self.print(f"Opened wallet at {where}.")
        elif cmd.action == "OPEN":
            if not wallet.exists():
                raise GgsciError(f"There is no wallet at {where}; CREATE WALLET creates it.")
            wallet.open()
            self.wallet_open = True
            self.print(f"Opened wallet at {where}.")
        else:
            self._require_wallet()
            gone = wallet.purge()
            self.print(f"Wallet at {where} purged: "
                       + (f"versions {', '.join(map(str, gone))} removed." if gone
                          else "no version was marked for deletion."))

    def _require_wallet(self) -> None:
        if not self.wallet_open:
            raise GgsciError("The wallet is not open; use OPEN WALLET (or CREATE WALLET) "
                             "first.")

    def _masterkey(self, cmd: c.MasterKeyCommand) -> None:
        self._require_wallet()
        wallet = self._wallet_store()
        where = f"wallet at location '{wallet.location}'"
        if cmd.action == "ADD":
            wallet.add()
            self.print(f"Master key '{wallet.name()}' added to {where}.")
        elif cmd.action == "RENEW":
            version = wallet.renew()
            self.print(f"Masterkey '{wallet.name()}' renewed to version {version} in {where}.")
        elif cmd.action in ("DELETE", "UNDELETE"):
            versions = cmd.versions or tuple(v.version for v in wallet.versions())
            if not versions:
                raise GgsciError(f"The {where} has no master key.")
            done = wallet.mark(versions, deleted=cmd.action == "DELETE")
            verb = "deleted from" if cmd.action == "DELETE" else "undeleted from"
            name = wallet.name()
            for v in done:
                self.print(f"Version {v} of Masterkey '{name}' {verb} {where}.")
        else:
            self.print(*display.masterkey_info(wallet, cmd.versions[0] if cmd.versions
                                               else None))

    # -- operations -----------------------------------------------------------------------
    def _manager(self, cmd: c.ManagerCommand) -> None:
        confirm = None
        if self.interactive:
            confirm = lambda text: input(text).strip().lower().startswith("y")  # noqa: E731
        operations.manager_command(self.home, cmd, self.print, confirm)

    def _heartbeat(self, cmd: c.HeartbeatTable) -> None:
        operations.heartbeat_command(self.home, self._require_login(), cmd, self.print)

    # -- session --------------------------------------------------------------------------
    def _obey(self, cmd: c.Obey) -> None:
        if self.on_obey is None:
            raise GgsciError("OBEY is not available here.")
        self.on_obey(cmd.path)

    def _help(self, cmd: c.Help) -> None:
        if cmd.topic is not None:
            self.print(c.HELP_TOPICS[cmd.topic])
            return
        self.print("GGSCI commands (HELP command shows one, e.g. HELP ADD EXTRACT):", "")
        self.print(*(f"  {text}" for text in c.HELP_TOPICS.values()))

    def _history(self, cmd: c.History) -> None:
        self.print("GGSCI Command History", "")
        self.print(*(f"{n:>5}: {text}" for n, text in self.history.last(cmd.count)))


# -- helpers -------------------------------------------------------------------------------
def _error_text(exc: BaseException) -> str:
    """An exception as GGSCI's ``ERROR: …`` line."""
    text = str(exc).strip()
    return text if text.startswith("ERROR:") else f"ERROR: {text}"


def _quoted(schema: str, table: str) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, table))


def _begin(begin: Any, position: dict[str, Any] | None) -> str | dict[str, Any] | None:
    """The registry form of BEGIN / a position: ``NOW``, an ISO timestamp or a dict."""
    if position is not None:
        return dict(position)
    if begin is None or begin == "NOW":
        return begin
    return str(begin.isoformat())


def _lsn_number(value: Any) -> int:
    """A checkpoint LSN (a number, as the Extract writes it, or ``X/Y`` text) as a number."""
    from trailgate.capture.postgres.pgoutput import parse_lsn
    if isinstance(value, str) and "/" in value:
        return parse_lsn(value)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _check_position_kind(group: GroupInfo, position: dict[str, Any]) -> None:
    wants = {"TRANLOG": "lsn", "DUMPDIR": "scn"}.get(group.source, "seqno")
    if wants not in position:
        label = {"lsn": "LSN x/y", "scn": "SCN n", "seqno": "EXTSEQNO n, EXTRBA n"}[wants]
        raise GgsciError(f"{group.kind} {group.name} reads "
                         f"{display.source_label(group)}: reposition it with {label}.")


_MUTATING = (c.SendSnapshot, c.DbLogin, c.TranData, c.SchemaTranData, c.DdlSupport,
             c.AddCheckpointTable,
             c.DeleteCheckpointTable, c.AddExtract, c.AddReplicat, c.AlterGroup, c.AddTrail,
             c.DeleteTrail, c.DeleteGroup, c.StartGroup, c.StopGroup, c.KillGroup,
             c.AddCredentialStore, c.DeleteCredentialStore, c.AlterCredentialStore,
             c.ManagerCommand)


def _changes_something(cmd: c.Command) -> bool:
    if isinstance(cmd, c.TranData | c.SchemaTranData | c.DdlSupport):
        return cmd.action != "INFO"
    if isinstance(cmd, c.StatsGroup):
        return cmd.reset
    if isinstance(cmd, c.ManagerCommand | c.HeartbeatTable | c.MasterKeyCommand):
        return cmd.action != "INFO"
    if isinstance(cmd, c.WalletCommand):
        return cmd.action != "OPEN"
    return isinstance(cmd, _MUTATING)
