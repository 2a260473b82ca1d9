"""A source table as the PostgreSQL catalog describes it: columns, key, size, row estimate.

The initial load, the compare and the Extract's incremental snapshot all need the same
facts about a table before they read it (which columns, in which types, which key orders
its rows, how big it is), and each must describe it exactly as capture does, so the trail
definition a load writes equals the one the Extract writes for the same table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from trailgate.capture.postgres.trandata import resolve_tables
from trailgate.capture.postgres.types import classify
from trailgate.errors import ConfigError
from trailgate.model import Column, TableDef

__all__ = ["INTEGER_TYPES", "SourceColumn", "SourceTable", "describe_table", "find_tables",
           "quote_name"]

#: Key types whose order Python reproduces exactly (key ranges are checked in Python).
INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})


def quote_name(schema: str, table: str) -> str:
    """``"schema"."table"`` for SQL text."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, table))


@dataclass(frozen=True, slots=True)
class SourceColumn:
    """One column: its name, ``format_type`` spelling, NOT NULL, generated (never read)."""

    name: str
    type_name: str
    not_null: bool = False
    generated: bool = False


@dataclass(frozen=True, slots=True)
class SourceTable:
    """A table to read.  ``key`` is the primary key, else the first unique index (by name)
    of NOT NULL columns, else empty; ``pages`` its size in blocks now; ``estimate`` the
    planner's row estimate scaled to that size (None: never analysed)."""

    oid: int
    schema: str
    name: str
    columns: list[SourceColumn]
    key: list[str] = field(default_factory=list)
    key_kind: str = "NONE"  # PRIMARY | UNIQUE | NONE
    pages: int = 0
    estimate: int | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def sql_name(self) -> str:
        return quote_name(self.schema, self.name)

    @property
    def ident(self) -> sql.Composable:
        return sql.Identifier(self.schema, self.name)

    @property
    def read_columns(self) -> list[SourceColumn]:
        """The columns a load reads (generated columns are computed by the target)."""
        return [c for c in self.columns if not c.generated]

    def column(self, name: str) -> SourceColumn:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    @property
    def integer_leading_key(self) -> bool:
        """Whether the key's first column is an integer: key ranges then split the table."""
        return bool(self.key) and self.column(self.key[0]).type_name in INTEGER_TYPES

    def table_def(self) -> TableDef:
        """The trail definition capture would write for this table (same kinds, types)."""
        cols = []
        for i, col in enumerate(self.read_columns):
            t = classify(col.type_name)
            cols.append(Column(col.name, i, t.kind, t.source_type, t.length, t.precision,
                               t.scale, not col.not_null, segcol=i + 1))
        kind = self.key_kind if self.key else "ALL"
        key = list(self.key) if self.key else [c.name for c in cols]
        return TableDef(self.schema, self.name, cols, key, kind, self.oid)


_COLUMNS = """
SELECT a.attname::text, format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype
                                         ELSE a.atttypid END,
                                    CASE WHEN t.typtype = 'd' AND a.atttypmod < 0
                                         THEN t.typtypmod ELSE a.atttypmod END),
       a.attnotnull, a.attgenerated <> ''
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""

_KEY = """
SELECT i.indisprimary,
       array(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
             ORDER BY k.ord)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = %s AND (i.indisprimary OR (i.indisunique AND i.indpred IS NULL
      AND i.indexprs IS NULL AND i.indimmediate
      AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey) k(attnum)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                      WHERE NOT a.attnotnull)))
      AND i.indisvalid
ORDER BY i.indisprimary DESC, c.relname
LIMIT 1
"""

_SIZE = """
SELECT c.reltuples::float8, c.relpages::int8,
       (pg_relation_size(c.oid) / current_setting('block_size')::int8)::int8
FROM pg_class c WHERE c.oid = %s
"""


def describe_table(conn: psycopg.Connection[Any], oid: int, schema: str, name: str
                   ) -> SourceTable:
    """The catalog's description of table ``oid`` (``schema.name``)."""
    cols = [SourceColumn(r[0], r[1], bool(r[2]), bool(r[3]))
            for r in conn.execute(_COLUMNS, (oid,)).fetchall()]
    key_row = conn.execute(_KEY, (oid,)).fetchone()
    key: list[str] = []
    kind = "NONE"
    if key_row is not None:
        key, kind = list(key_row[1]), "PRIMARY" if key_row[0] else "UNIQUE"
    reltuples, relpages, pages = conn.execute(_SIZE, (oid,)).fetchone() or (-1, 0, 0)
    estimate: int | None
    if reltuples is None or reltuples < 0:
        estimate = None if pages else 0
    elif relpages > 0:
        estimate = int(reltuples / relpages * pages)  # the planner's own scaling
    else:
        estimate = int(reltuples) if reltuples > 0 or not pages else None
    return SourceTable(oid, schema, name, cols, key, kind, int(pages), estimate)


def find_tables(conn: psycopg.Connection[Any], pattern: str,
                excludes: list[str] | None = None) -> list[SourceTable]:
    """The tables ``pattern`` (``schema.table``, ``*``/``?`` wildcards) matches, described;
    ``excludes`` are patterns (TABLEEXCLUDE) that remove tables."""
    from trailgate.params.names import match_table

    try:
        found = resolve_tables(conn, pattern)
    except ConfigError:
        raise
    out = []
    for oid, schema, table in found:
        name = f"{schema}.{table}"
        if any(match_table(x, name) for x in excludes or []):
            continue
        out.append(describe_table(conn, oid, schema, table))
    return out
