"""GGSCI's operations commands: START/STOP/INFO MANAGER, the heartbeat table, heartbeat lag.

Kept beside the executor so that the executor only dispatches to them: the Manager itself
is :mod:`trailgate.manager`, the heartbeat tables :mod:`trailgate.db.heartbeat`; here are
GGSCI's words around them (``Manager started.``, ``Manager is running (IP port
host.7809, Process ID n).``, ``Manager is DOWN!``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from trailgate.errors import ConfigError, TrailgateError
from trailgate.ggsci import commands as c
from trailgate.home import GroupInfo, Home
from trailgate.manager import control
from trailgate.manager.readers import register_reader, unregister_reader
from trailgate.process.lifecycle import Status

__all__ = ["heartbeat_command", "heartbeat_lag_lines", "manager_command", "manager_status",
           "register_reader_of", "unregister_reader_of"]

Print = Callable[..., None]


def manager_status(home: Home) -> str:
    """INFO ALL's Status of the Manager."""
    return control.manager_state(home).status.value


def manager_command(home: Home, cmd: c.ManagerCommand, out: Print,
                    confirm: Callable[[str], bool] | None) -> None:
    """START, STOP or INFO MANAGER."""
    if cmd.action == "START":
        try:
            state = control.start_manager(home)
        except ConfigError as exc:  # mgr.prm's file and line stay in the message
            raise TrailgateError(str(exc)) from None
        out(f"Manager started (port {state.port}).")
    elif cmd.action == "STOP":
        state = control.manager_state(home)
        if state.status not in (Status.RUNNING, Status.STARTING):
            raise TrailgateError("Manager is not running.")
        if confirm is not None and not cmd.force and not confirm(
                "Manager process is required by other GGS processes.\nAre you sure you want "
                "to stop it (y/n)? "):
            out("STOP MANAGER cancelled.")
            return
        out("Sending STOP request to MANAGER ...")
        control.stop_manager(home)
        out("Request processed.", "Manager stopped.")
    else:
        state = control.manager_state(home)
        if state.status is Status.RUNNING:
            where = f"IP port {state.address or 'localhost'}.{state.port}, " \
                if state.port else ""
            out(f"Manager is running ({where}Process ID {state.pid}).")
        elif state.status is Status.ABENDED:
            out("Manager is DOWN! (it ABENDED: VIEW REPORT MGR shows why)")
        else:
            out("Manager is DOWN!")


def _schema(home: Home) -> str:
    from trailgate.params import parse_globals

    schema = parse_globals(home.globals_file).ggschema
    if not schema:
        raise TrailgateError("No heartbeat table schema available (OGG-02735): add GGSCHEMA "
                         "schema to dirprm/GLOBALS, the schema of the heartbeat tables.")
    return schema


def heartbeat_command(home: Home, conn: Any, cmd: c.HeartbeatTable, out: Print) -> None:
    """ADD, ALTER, INFO or DELETE HEARTBEATTABLE in the logged-in database."""
    from trailgate.capture.postgres import trandata as td
    from trailgate.db import heartbeat as hb
    schema = _schema(home)
    seed = f'"{schema}".{hb.SEED}'
    if cmd.action == "ADD":
        lines = hb.add_heartbeat_table(conn, schema, frequency=cmd.frequency,
                                       retention_days=cmd.retention_time,
                                       purge_frequency_days=cmd.purge_frequency,
                                       target_only=cmd.target_only)
        if lines[0].startswith("ERROR:"):
            raise TrailgateError(lines[0])
        out(*lines)
        if not cmd.target_only:  # captured like data: in the publication, keyed
            out(*td.add_trandata(conn, seed))
    elif cmd.action == "ALTER":
        lines = hb.alter_heartbeat_table(conn, schema, frequency=cmd.frequency,
                                         retention_days=cmd.retention_time,
                                         purge_frequency_days=cmd.purge_frequency)
        if lines[0].startswith("ERROR:"):
            raise TrailgateError(lines[0])
        out(*lines)
    elif cmd.action == "INFO":
        out(*hb.info_heartbeat_table(conn, schema))
    else:
        if hb.heartbeat_objects(conn, schema)[hb.SEED]:
            with contextlib.suppress(Exception):
                td.delete_trandata(conn, seed)
        lines = hb.delete_heartbeat_table(conn, schema)
        if lines[0].startswith("ERROR:"):
            raise TrailgateError(lines[0])
        out(*lines)


def heartbeat_lag_lines(home: Home, group: GroupInfo, *, short: bool = False) -> list[str]:
    """The heartbeat lag of the paths ``group`` is on (GG_LAG of the home's PostgreSQL
    Replicat targets); nothing when there is no heartbeat table or none can be read."""
    from trailgate.manager.lag import LagMonitor, format_hms
    from trailgate.manager.params import ManagerParams

    monitor = LagMonitor(home, ManagerParams(), lambda *_: None, purge=False)
    try:
        monitor.sample([])
        rows = monitor.heartbeat_for(group.kind, group.name)
    finally:
        monitor.close()
    out = []
    for row in rows:
        lag, age = row.get("incoming_lag"), row.get("incoming_heartbeat_age")
        if short:
            out.append(f"Heartbeat Lag        {format_hms(lag)} ({float(lag or 0):.3f} s, "
                       f"{row['incoming_path']}, {format_hms(age)} ago)")
            continue
        hops = ", ".join(f"{name} {float(row[col]):.3f}" for name, col in (
            ("extract", "incoming_extract_lag"), ("routing", "incoming_routing_lag"),
            ("replicat", "incoming_replicat_lag")) if row.get(col) is not None)
        out.append(f"Heartbeat lag (GG_LAG), path {row['incoming_path']}: "
                   f"{float(lag or 0):.3f} seconds end to end ({hops}); last heartbeat "
                   f"{format_hms(age)} ago.")
    return out


def register_reader_of(home: Home, trail: str | None, group: str, kind: str,
                       out: Print) -> None:
    """Tell the trail that this group reads it (a Manager in any home then keeps its
    files); a trail directory that cannot be written only warns."""
    if not trail:
        return
    try:
        register_reader(home, trail, group, kind)
    except (OSError, ValueError) as exc:
        out(f"WARNING: {trail} does not know {kind} {group} reads it ({exc}); a Manager of "
            "another home purging it would not keep this group's files.")


def unregister_reader_of(home: Home, info: GroupInfo) -> None:
    if info.source in ("EXTTRAIL", "EXTTRAILSOURCE") and info.source_path:
        with contextlib.suppress(OSError, ValueError):
            unregister_reader(home, info.source_path, info.name)
