"""The Replicat checkpoint table (``ADD|INFO|DELETE CHECKPOINTTABLE``) in PostgreSQL.

A Replicat commits each partition it applies together with a row of this table, in the same
target transaction, so a replayed batch skips what was committed: that is what makes apply
exactly-once.  A Replicat applying as the trail grows keeps one row of its own (batch
:data:`STREAM_BATCH`), which each of its transactions moves.  Columns: docs/replicat.md,
"PostgreSQL target"; the commands: docs/ggsci.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from trailgate.errors import ConfigError, TargetError
from trailgate.params.names import parse_name

__all__ = ["COLUMNS", "STREAM_BATCH", "add_checkpoint_table", "delete_checkpoint_table",
           "info_checkpoint_table", "table_identifier"]

COLUMNS = ("group_name", "batch_id", "partition", "position", "updated")
#: The batch id of a streaming Replicat's row (Spark's batch ids are never negative).
STREAM_BATCH = -1
_COMMENT = "trailgate checkpoint table, created {created}"

_DDL = """CREATE TABLE {table} (
    group_name text NOT NULL,
    batch_id bigint NOT NULL,
    partition integer NOT NULL,
    position text NOT NULL,
    updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_name, batch_id, partition)
)"""

Conn = psycopg.Connection[Any]


def table_identifier(name: str) -> tuple[str, str, sql.Composable]:
    """``schema.table`` as (schema, table, SQL identifier); unquoted parts fold to lower case
    (PostgreSQL's rule), ``"Quoted"`` parts are kept exactly."""
    try:
        parts = parse_name(name)
    except ValueError as exc:
        raise ConfigError(f"invalid checkpoint table name {name!r}: {exc}") from None
    if len(parts) != 2 or any(p.has_wildcard or not p.text for p in parts):
        raise ConfigError(f"invalid checkpoint table name {name!r}: use schema.table, "
                          "without wildcards")
    schema, table = (p.text if p.quoted else p.text.lower() for p in parts)
    return schema, table, sql.Identifier(schema, table)


def _exists(conn: Conn, schema: str, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                       (sql.Identifier(schema, table).as_string(conn),)).fetchone()
    return bool(row and row[0])


def add_checkpoint_table(conn: Conn, name: str) -> list[str]:
    """Create the table (and its schema if missing); an error if it already exists."""
    schema, table, ident = table_identifier(name)
    if _exists(conn, schema, table):
        raise ConfigError(f"Checkpoint table {schema}.{table} already exists; "
                          f"INFO CHECKPOINTTABLE {schema}.{table} shows it.")
    created = datetime.now().astimezone().isoformat(timespec="seconds")
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                sql.Identifier(schema)))
            conn.execute(sql.SQL(_DDL).format(table=ident))
            conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                ident, sql.Literal(_COMMENT.format(created=created))))
    except psycopg.Error as exc:
        raise TargetError(f"cannot create checkpoint table {schema}.{table}: "
                          f"{exc.diag.message_primary or exc}") from None
    return [f"Successfully created checkpoint table {schema}.{table}."]


def info_checkpoint_table(conn: Conn, name: str) -> list[str]:
    """When the table was created, and the last batch each Replicat recorded in it."""
    schema, table, ident = table_identifier(name)
    if not _exists(conn, schema, table):
        raise ConfigError(f"Checkpoint table {schema}.{table} does not exist; "
                          f"ADD CHECKPOINTTABLE {schema}.{table} creates it.")
    row = conn.execute("SELECT obj_description(%s::regclass, 'pg_class')",
                       (ident.as_string(conn),)).fetchone()
    comment = row[0] if row and row[0] else ""
    created = comment.rsplit("created ", 1)[-1] if "created " in comment else "(unknown)"
    out = [f"Checkpoint table {schema}.{table} created {created}."]
    try:
        groups = conn.execute(sql.SQL(
            "SELECT group_name, max(batch_id) FILTER (WHERE batch_id <> %s), count(*), "
            "max(updated), max(position) FILTER (WHERE batch_id = %s) FROM {} "
            "GROUP BY group_name ORDER BY group_name").format(ident),
            (STREAM_BATCH, STREAM_BATCH)).fetchall()
    except psycopg.Error as exc:
        raise TargetError(f"cannot read checkpoint table {schema}.{table}: "
                          f"{exc.diag.message_primary or exc}") from None
    for group, batch, rows, updated, streamed in groups:
        last = "no batch" if batch is None else f"last batch {batch}"
        through = "" if streamed is None else f", applied through trail position {streamed}"
        out.append(f"  {group}: {last}{through}, {rows} row(s), updated "
                   f"{updated:%Y-%m-%d %H:%M:%S}")
    return out


def delete_checkpoint_table(conn: Conn, name: str) -> list[str]:
    """Drop the table; an error if it does not exist."""
    schema, table, ident = table_identifier(name)
    if not _exists(conn, schema, table):
        raise ConfigError(f"Checkpoint table {schema}.{table} does not exist.")
    try:
        conn.execute(sql.SQL("DROP TABLE {}").format(ident))
    except psycopg.Error as exc:
        raise TargetError(f"cannot drop checkpoint table {schema}.{table}: "
                          f"{exc.diag.message_primary or exc}") from None
    return [f"Successfully deleted checkpoint table {schema}.{table}."]
