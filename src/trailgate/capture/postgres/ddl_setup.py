"""``ADD | INFO | DELETE DDLSUPPORT``: seed 004's DDL objects installed in GGSCHEMA.

What GoldenGate's ``marker_setup.sql``, ``ddl_setup.sql`` and ``ddl_enable.sql`` do, as one
GGSCI verb: the marker table and sequence, the history table, and event triggers on
``ddl_command_end`` and ``sql_drop`` whose function writes each DDL's marker rows in the
DDL's own transaction (the SQL is in ``ddl_sql``).  Both tables join the Extract's
publication, so markers reach the Extract in commit order with the DML around them.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from trailgate.capture.postgres.ddl_sql import (
    ALL_TRIGGERS,
    DDL_OBJECTS_SQL,
    DDL_TRIGGERS_SQL,
    EVENT_TRIGGERS,
    GUARD_TRIGGERS,
)
from trailgate.capture.postgres.trandata import DEFAULT_PUBLICATION, ensure_catalog
from trailgate.errors import ConfigError, SourceError
from trailgate.trail.ddl import report_line

__all__ = ["HISTORY_TABLE", "MARKER_TABLE", "add_ddlsupport", "ddl_schema",
           "delete_ddlsupport", "info_ddlsupport", "installed", "upgrade_needed"]

MARKER_TABLE = "ggs_marker"
HISTORY_TABLE = "ggs_ddl_hist"
_CAPTURE = "ggs_ddl_capture(text, text, text, text[])"
_FUNCTIONS = ("ggs_ddl_guard()", "ggs_ddl_trigger()", _CAPTURE,
              "ggs_ddl_pieces(text)", "ggs_ddl_metadata(oid, bigint, text, text, text)",
              "ggs_ddl_statement(text, text, text[])", "ggs_ddl_key(text)",
              "ggs_ddl_split(text)", "ggs_q(text)")

Conn = psycopg.Connection[Any]


def ddl_schema(ggschema: str | None) -> str:
    """The schema of the DDL objects: GLOBALS ``GGSCHEMA`` (unquoted folds to lower case)."""
    if not ggschema:
        raise ConfigError("DDL support needs GGSCHEMA in dirprm/GLOBALS (the schema of the DDL "
                          "marker and history tables), e.g. GGSCHEMA ggadmin")
    text = ggschema.strip()
    if text.startswith('"') and text.endswith('"') and len(text) > 1:
        return text[1:-1].replace('""', '"')
    return text.lower()


def _script(conn: Conn, template: str, schema: str, publication: str) -> str:
    return (template.replace("@S@", sql.Identifier(schema).as_string(conn))
            .replace("@SNAME@", sql.Literal(schema).as_string(conn))
            .replace("@PUB@", sql.Literal(publication).as_string(conn)))


def _fail(exc: psycopg.Error, what: str) -> SourceError:
    message = exc.diag.message_primary or str(exc)
    if exc.sqlstate == "42501":
        message += ": DDL support needs a superuser (event triggers), as SCHEMATRANDATA does"
    return SourceError(f"{what} failed: {message}")


def _stamp(text: str) -> str:
    return report_line("INFO", "", text)


def add_ddlsupport(conn: Conn, ggschema: str | None, *,
                   publication: str = DEFAULT_PUBLICATION) -> list[str]:
    """Install (or refresh) DDL support in GGSCHEMA; the lines GGSCI prints."""
    schema = ddl_schema(ggschema)
    ensure_catalog(conn, publication)
    ident = sql.Identifier(schema)
    try:
        with conn.transaction():
            conn.execute("SET LOCAL trailgate.internal_ddl = 'on'")
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('trailgate.ddlsupport'))")
            conn.execute(_script(conn, DDL_OBJECTS_SQL, schema, publication))
            conn.execute(_script(conn, DDL_TRIGGERS_SQL, schema, publication))
            for table in (MARKER_TABLE, HISTORY_TABLE):
                member = conn.execute(
                    "SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = "
                    "r.prpubid WHERE p.pubname = %s AND r.prrelid = %s::regclass",
                    (publication, f"{ident.as_string(conn)}.{table}")).fetchone()
                if not member:
                    conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(
                        sql.Identifier(publication), sql.Identifier(schema, table)))
            # Only the event triggers run these; an install before the capture trigger
            # was SECURITY DEFINER granted ggs_ddl_capture to PUBLIC: this takes it back.
            conn.execute("REVOKE ALL ON FUNCTION " + ", ".join(
                f"{ident.as_string(conn)}.{f}" for f in _FUNCTIONS) + " FROM PUBLIC")
            for name, event, function in ALL_TRIGGERS:
                conn.execute(sql.SQL("DROP EVENT TRIGGER IF EXISTS {}").format(
                    sql.Identifier(name)))
                conn.execute(sql.SQL("CREATE EVENT TRIGGER {} ON {} EXECUTE FUNCTION {}.{}()"
                                     ).format(sql.Identifier(name), sql.SQL(event), ident,
                                              sql.Identifier(function)))
    except psycopg.Error as exc:
        raise _fail(exc, f"ADD DDLSUPPORT in schema {schema}") from None
    return [
        f"MARKER TABLE {schema}.{MARKER_TABLE} ... OK",
        f"MARKER SEQUENCE {schema}.ggs_marker_seq ... OK",
        f"DDL HISTORY TABLE {schema}.{HISTORY_TABLE} ... OK",
        *(f"DDL TRIGGER {name} ON {event} ... OK"
          for name, event, _ in ALL_TRIGGERS),
        f"PUBLICATION {publication}: {schema}.{MARKER_TABLE} and {schema}.{HISTORY_TABLE} "
        "... OK",
        _stamp(f"DDL support is installed in schema {schema} and enabled."),
    ]


def installed(conn: Conn, ggschema: str | None) -> bool:
    """Whether the marker table and both event triggers exist (and are enabled)."""
    schema = ddl_schema(ggschema)
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL AND (SELECT count(*) FROM pg_event_trigger "
        "WHERE evtname = ANY(%s) AND evtenabled <> 'D') = %s",
        (f"{sql.Identifier(schema).as_string(conn)}.{MARKER_TABLE}",
         [name for name, _, _ in EVENT_TRIGGERS], len(EVENT_TRIGGERS))).fetchone()
    return bool(row and row[0])


def info_ddlsupport(conn: Conn, ggschema: str | None) -> list[str]:
    """``INFO DDLSUPPORT``: each object, present or not, and the last DDL captured."""
    schema = ddl_schema(ggschema)
    ident = sql.Identifier(schema).as_string(conn)
    lines = []
    for label, name in (("MARKER TABLE", MARKER_TABLE), ("MARKER SEQUENCE", "ggs_marker_seq"),
                        ("DDL HISTORY TABLE", HISTORY_TABLE)):
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                             (f"{ident}.{name}",)).fetchone()
        lines.append(f"{label} {schema}.{name} ... {'OK' if found and found[0] else 'MISSING'}")
    every = ALL_TRIGGERS
    triggers = dict(conn.execute("SELECT evtname::text, evtenabled::text FROM pg_event_trigger "
                                 "WHERE evtname = ANY(%s)",
                                 ([n for n, _, _ in every],)).fetchall())
    for name, event, _ in every:
        state = triggers.get(name)
        lines.append(f"DDL TRIGGER {name} ON {event} ... "
                     + ("MISSING" if state is None else "DISABLED" if state == "D"
                        else "ENABLED"))
    if installed(conn, schema):
        row = conn.execute(sql.SQL("SELECT count(DISTINCT seqno), max(seqno), max(optime) "
                                   "FROM {}").format(sql.Identifier(schema, MARKER_TABLE))
                           ).fetchone()
        count, last, when = row if row else (0, None, None)
        lines.append(f"DDL support is enabled in schema {schema}: {count} DDL operation(s) "
                     f"marked" + (f", the last sequence {last} at {when}." if last else "."))
        problem = upgrade_needed(conn, schema)
        if problem:
            lines.append(problem)
    else:
        lines.append(f"DDL support is not installed in schema {schema}: ADD DDLSUPPORT "
                     f"installs it.")
    return lines


def upgrade_needed(conn: Conn, ggschema: str | None) -> str | None:
    """What an installed DDL support made by an earlier trailgate lacks (its capture
    function executable by every user, who could write forged DDL markers into the trail;
    no guard triggers), with what to do; ``None`` when it is as ADD DDLSUPPORT makes it."""
    schema = ddl_schema(ggschema)
    function = f"{sql.Identifier(schema).as_string(conn)}.{_CAPTURE}"
    row = conn.execute(
        "SELECT to_regprocedure(%s) IS NOT NULL AND has_function_privilege('public', "
        "to_regprocedure(%s), 'EXECUTE'), (SELECT count(*) FROM pg_event_trigger "
        "WHERE evtname = ANY(%s))", (function, function,
                                     [n for n, _, _ in GUARD_TRIGGERS])).fetchone()
    public, guards = (bool(row[0]), int(row[1])) if row else (False, 0)
    missing = []
    if public:
        missing.append(f"{schema}.ggs_ddl_capture is executable by PUBLIC (any user could "
                       "write DDL markers)")
    if guards < len(GUARD_TRIGGERS):
        missing.append("the guard triggers are missing (a user who sets "
                       "trailgate.internal_ddl could hide a DDL)")
    if not missing:
        return None
    return (f"DDL support in schema {schema} was installed by an earlier trailgate: "
            + "; ".join(missing) + ". Run GGSCI DBLOGIN (as a superuser), then ADD "
            "DDLSUPPORT again: it keeps the tables and their rows")


def delete_ddlsupport(conn: Conn, ggschema: str | None) -> list[str]:
    """``DELETE DDLSUPPORT``: drop the event triggers, functions, tables and sequence (the
    schema itself stays: it may hold other objects)."""
    schema = ddl_schema(ggschema)
    ident = sql.Identifier(schema)
    try:
        with conn.transaction():
            conn.execute("SET LOCAL trailgate.internal_ddl = 'on'")
            for name, _, _ in ALL_TRIGGERS:
                conn.execute(sql.SQL("DROP EVENT TRIGGER IF EXISTS {}").format(
                    sql.Identifier(name)))
            for function in _FUNCTIONS:
                conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}.{}").format(
                    ident, sql.SQL(function)))
            for table in (MARKER_TABLE, HISTORY_TABLE):
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                    sql.Identifier(schema, table)))
            conn.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(
                sql.Identifier(schema, "ggs_marker_seq")))
    except psycopg.Error as exc:
        raise _fail(exc, f"DELETE DDLSUPPORT in schema {schema}") from None
    return [_stamp(f"DDL support is removed from schema {schema}: event triggers, marker and "
                   f"history tables, sequence and functions dropped.")]
