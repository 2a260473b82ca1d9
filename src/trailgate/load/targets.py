"""Where each source table goes, and its target table checked or created.

A direct load goes through the Replicat's ``MAP``s — the same name translation, and
columns by name or ``COLMAP (tcol = scol)`` — so the Replicat that continues finds the rows
where it expects them.  A target that exists is checked before anything is read: every
source column needs a target column, a target column without a source must accept NULL,
and a table that already holds rows is refused (the load adds rows; starting on rows would
double them).  A missing PostgreSQL target is an error unless ``CREATETARGETS`` asks to
create it (columns, types, NOT NULL, primary key); a missing Delta table is created with
the types the Delta Replicat uses, as that Replicat would create it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from trailgate.apply.arrow_types import arrow_type
from trailgate.apply.mapping import TargetTable
from trailgate.apply.values import pg_type_for_source
from trailgate.capture.postgres.catalog import SourceTable, quote_name
from trailgate.errors import ConfigError, TargetError
from trailgate.load.job import LoadColumn
from trailgate.params.model import ColumnRef, MapSpec, ReplicatParams
from trailgate.params.names import find_map, parse_name, target_name

__all__ = ["Destination", "check_columns", "create_delta_table", "create_pg_table",
           "destination", "pg_target_rows"]


@dataclass(frozen=True, slots=True)
class Destination:
    """A source table's target: schema and name (as the target's catalog spells them) and
    the MAP that sent it there (None: a load to a file keeps the source's names)."""

    schema: str
    name: str
    spec: MapSpec | None


def destination(table: SourceTable, params: ReplicatParams | None) -> Destination | None:
    """Where ``table`` goes through ``params``' MAPs (None: no MAP takes it)."""
    if params is None:
        return Destination(table.schema, table.name, None)
    source = f"{_part(table.schema)}.{_part(table.name)}"
    spec = find_map(params.maps, source, params.map_excludes)
    if spec is None:
        return None
    where = {"path": spec.path or None, "line": spec.line or None}
    if spec.where is not None:
        raise ConfigError(f"MAP {spec.source}, WHERE: an initial load copies whole tables; "
                          f"load {table.qualified_name} without the WHERE (a MAP of its own) "
                          f"or filter its rows afterwards", **where)
    for entry in spec.colmap or []:
        if not isinstance(entry.expr, ColumnRef):
            raise ConfigError(f"MAP {spec.source}, COLMAP ({entry.target} = …): an initial "
                              f"load maps columns by name or as tcol = scol; load "
                              f"{table.qualified_name} into a table without the expression "
                              f"column, or fill it afterwards", **where)
    parts = [p.text if p.quoted else p.text.lower()
             for p in parse_name(target_name(spec, source))]
    return Destination(parts[-2], parts[-1], spec)


def _part(text: str) -> str:
    return text if text == text.lower() and text.replace("_", "").isalnum() else \
        '"' + text.replace('"', '""') + '"'


def _pairs(table: SourceTable, spec: MapSpec | None) -> list[tuple[str, str]]:
    """(source column, target column name as mapped) for every column the load reads."""
    explicit: dict[str, str] = {}
    for entry in (spec.colmap or []) if spec is not None else []:
        assert isinstance(entry.expr, ColumnRef)
        explicit[entry.expr.name if entry.expr.quoted else entry.expr.name.lower()] = (
            entry.target if entry.target_quoted else entry.target.lower())
    by_default = spec is None or spec.colmap is None or spec.usedefaults
    out = []
    for col in table.read_columns:
        target = explicit.get(col.name) or explicit.get(col.name.lower())
        if target is None and by_default:
            target = col.name
        if target is not None:
            out.append((col.name, target))
    return out


def check_columns(table: SourceTable, dest: Destination, target: TargetTable | None,
                  where: str) -> list[LoadColumn]:
    """The load's columns for ``table`` into ``target`` (None: a table to create, with the
    source's types); a ConfigError naming the table and what to do when they do not fit."""
    pairs = _pairs(table, dest.spec)
    what = f"{dest.schema}.{dest.name}"
    if target is None:
        return [LoadColumn(s, table.column(s).type_name, t, table.column(s).type_name)
                for s, t in pairs]
    out = []
    unmapped = []
    for s, t in pairs:
        col = target.find(t)
        if col is None:
            unmapped.append(s)
            continue
        out.append(LoadColumn(s, table.column(s).type_name, col.name, col.type_name))
    if unmapped:
        raise ConfigError(
            f"target table {what} in {where} has no column for "
            f"{', '.join(unmapped)} of source table {table.qualified_name}: add the "
            f"column(s) to the target, or map them with COLMAP in the MAP; the load copies "
            f"every column and leaves nothing out silently")
    filled = {c.target for c in out}
    required = [c.name for c in target.columns if c.name not in filled and not c.nullable]
    if required:
        raise ConfigError(
            f"target table {what} in {where} has NOT NULL column(s) {', '.join(required)} "
            f"that no column of source table {table.qualified_name} fills: map them with "
            f"COLMAP, allow NULL, or give them a default and drop NOT NULL for the load")
    return out


def pg_target_rows(conn: psycopg.Connection[Any], schema: str, name: str) -> bool:
    """Whether the target table holds any row."""
    row = conn.execute(f"SELECT EXISTS (SELECT 1 FROM {quote_name(schema, name)})").fetchone()
    return bool(row and row[0])


def create_pg_table(conn: psycopg.Connection[Any], table: SourceTable, dest: Destination,
                    columns: list[LoadColumn]) -> str:
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


def create_delta_table(path: str, table: SourceTable, columns: list[LoadColumn]) -> None:
    """Create the Delta table with the Delta Replicat's types for the source columns, every
    column nullable as the Replicat creates them (its merges carry NULLs for deletes)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    tdef = {c.name: c for c in table.table_def().columns}
    fields = [pa.field(c.target, arrow_type(pg_type_for_source(tdef[c.source])), True)
              for c in columns]
    try:
        DeltaTable.create(path, pa.schema(fields), mode="ignore")
    except Exception as exc:
        raise TargetError(f"cannot create Delta table {path}: {exc}") from None
