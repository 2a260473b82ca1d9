"""What an Extract checks before it captures: the database, the slot, the tables.

Problems that make capture impossible (an unreachable server, no slot) stop the group with
a message saying what to do; tables captured without supplemental logging only warn, as
GoldenGate's Extract does, and go to the report and ``ggserr.log``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trailgate.capture.postgres.ddl_setup import installed, upgrade_needed
from trailgate.capture.postgres.trandata import capture_warnings, resolve_tables
from trailgate.db.connect import connect, query_value
from trailgate.errors import SourceError
from trailgate.extract.postgres.config import ExtractConfig
from trailgate.extract.postgres.source import advance_slot, slot_state, wait_for_slot
from trailgate.params.names import match_table

__all__ = ["StartupReport", "check_source"]


@dataclass(slots=True)
class StartupReport:
    """What the start-up found: the server, the slot, the tables and the warnings."""

    server_version: str = ""
    restart_lsn: int = 0
    confirmed_lsn: int = 0
    tables: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ddl: str = ""  # how DDL is captured, for the report


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_source(cfg: ExtractConfig, resume_lsn: int | None) -> StartupReport:
    """Connect, check the slot, publish and report the captured tables, and move the slot
    to ``resume_lsn`` (the checkpoint's read position: everything before it is durable in
    the trail, and a previous run may have stopped before telling the slot)."""
    report = StartupReport()
    with connect(cfg.conninfo, application_name=f"trailgate {cfg.slot} start") as conn:
        report.server_version = str(query_value(conn, "SHOW server_version"))
        begin = cfg.info.begin if isinstance(cfg.info.begin, dict) else {}
        load = begin.get("initialload")
        if load and conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                 (cfg.slot,)).fetchone() is None:
            raise SourceError(
                f"EXTRACT {cfg.group} begins where the initial load {load} reads its "
                f"snapshot, and that load creates its slot {cfg.slot}: START EXTRACT {load} "
                f"first (this Extract can start as soon as the load has begun)")
        slot_state(conn, cfg.slot)  # a clear error when ADD EXTRACT was not run
        try:
            wait_for_slot(conn, cfg.slot, timeout=30)
        except SourceError:
            raise SourceError(
                f"replication slot {cfg.slot} is in use: is EXTRACT {cfg.group} already "
                "running (INFO EXTRACT), or did a killed run leave a session behind? "
                "Stop it, or end the session with pg_terminate_backend, then start again"
            ) from None
        names: list[str] = []
        for spec in cfg.params.tables:
            found = resolve_tables(conn, spec.name)
            if not found:
                report.warnings.append(f"WARNING: no table matches TABLE {spec.name} in "
                                       f"database {conn.info.dbname} ({spec.path}, line "
                                       f"{spec.line}); nothing is captured for it until one "
                                       "is created.")
            for _oid, schema, table in found:
                name = f"{schema}.{table}"
                if name in report.tables or any(match_table(x, name)
                                                 for x in cfg.params.table_excludes):
                    continue
                report.tables.append(name)
                names.append(f"{_quote(schema)}.{_quote(table)}")
        report.ddl = _ddl_support(conn, cfg)
        if cfg.ggschema is not None and installed(conn, cfg.ggschema):
            problem = upgrade_needed(conn, cfg.ggschema)
            if problem:
                report.warnings.append(f"WARNING: {problem}.")
        report.warnings.extend(w for w in capture_warnings(conn, names,
                                                           publication=cfg.publication)
                               if not w.startswith("WARNING: no table matches"))
        if resume_lsn:
            advance_slot(conn, cfg.slot, resume_lsn, patience=5.0)
        report.restart_lsn, report.confirmed_lsn, _ = slot_state(conn, cfg.slot)
    return report


def _ddl_support(conn: object, cfg: ExtractConfig) -> str:
    """How this Extract captures DDL; a DDL parameter without DDL support installed in
    GGSCHEMA stops the start (its DDL would silently be missing from the trail)."""
    if cfg.ggschema is None:
        return "not captured (no GGSCHEMA in GLOBALS)"
    if not installed(conn, cfg.ggschema):  # type: ignore[arg-type]
        if cfg.params.ddl_given:
            raise SourceError(f"DDL: DDL support is not installed in schema {cfg.ggschema} "
                              f"of the source: run GGSCI DBLOGIN, then ADD DDLSUPPORT "
                              f"({cfg.params.path})")
        return f"not captured (no DDL support in schema {cfg.ggschema})"
    if not cfg.params.ddl_given:
        return f"not captured (no DDL parameter; markers in {cfg.ggschema} are skipped)"
    rules = ", ".join(r.text() for r in cfg.params.ddl)
    return f"DDL {rules} (markers in {cfg.ggschema})"
