"""A load's target tables created, or checked for rows.

A missing PostgreSQL target is an error unless ``CREATETARGETS`` asks to create it
(columns, types, NOT NULL, primary key); a missing Delta table is created with the types
the Delta Replicat uses, as that Replicat would create it.  A table that already holds rows
is refused by the caller: the load adds rows, and starting on rows would double them.
Where tables go and which columns map is :mod:`trailgate.apply.table_map`.
"""

from __future__ import annotations

from typing import Any

import psycopg

from trailgate.apply.arrow_types import column_arrow_type
from trailgate.apply.table_map import Destination
from trailgate.capture.postgres.catalog import SourceTable, quote_name
from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.errors import TargetError

__all__ = ["create_delta_table", "create_pg_table", "pg_target_rows"]


def pg_target_rows(conn: psycopg.Connection[Any], schema: str, name: str) -> bool:
    """Whether the target table holds any row."""
    row = conn.execute(f"SELECT EXISTS (SELECT 1 FROM {quote_name(schema, name)})").fetchone()
    return bool(row and row[0])


def create_pg_table(conn: psycopg.Connection[Any], table: SourceTable, dest: Destination,
                    columns: list[ReadColumn]) -> str:
    """``CREATE TABLE`` the target (columns, types, NOT NULL, primary key); the DDL run."""
    by_source = {c.source: c for c in columns}
    lines = []
    for c in columns:
        src = table.column(c.source)
        lines.append(f'"{c.target}" {c.target_type}' + (" NOT NULL" if src.not_null else ""))
    key = [by_source[k].target for k in table.key if k in by_source]
    if key and len(key) == len(table.key):
        kind = "PRIMARY KEY" if table.key_kind == "PRIMARY" else "UNIQUE"
        lines.append(f"{kind} ({', '.join(chr(34) + k + chr(34) for k in key)})")
    ddl = (f"CREATE TABLE {quote_name(dest.schema, dest.name)} (\n    "
           + ",\n    ".join(lines) + "\n)")
    try:
        with conn.transaction():
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS \"{dest.schema}\"")
            conn.execute(ddl)
    except psycopg.Error as exc:
        raise TargetError(f"cannot create target table {dest.schema}.{dest.name}: "
                          f"{exc.diag.message_primary or exc}") from None
    return ddl


def create_delta_table(path: str, table: SourceTable, columns: list[ReadColumn]) -> None:
    """Create the Delta table with the Delta Replicat's types for the source columns, every
    column nullable as the Replicat creates them (its merges carry NULLs for deletes)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    tdef = {c.name: c for c in table.table_def().columns}
    fields = [pa.field(c.target, column_arrow_type(tdef[c.source]), True)
              for c in columns]
    try:
        DeltaTable.create(path, pa.schema(fields), mode="ignore")
    except Exception as exc:
        raise TargetError(f"cannot create Delta table {path}: {exc}") from None
