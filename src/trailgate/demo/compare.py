"""Is the target equal to the source?  Row counts, content hashes and row differences, for
PostgreSQL tables and the Delta tables a Replicat writes.

Values compare by the source column's PostgreSQL type, not their Python form: a ``numeric``
as a decimal (Delta may keep it as text), ``real`` as a 32-bit float, ``char(n)`` without
its padding, ``json`` as its value, ``timestamptz`` as an instant.  The content hash is over
the sorted canonical rows, so equal tables hash equal in any physical order.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import struct
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from psycopg import sql

from trailgate.db.connect import connect

__all__ = ["Column", "TableComparison", "canonical", "compare_tables", "delta_rows",
           "pg_columns", "pg_rows", "render_comparison"]

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Column:
    """A source column: its name and PostgreSQL type as ``format_type`` spells it."""

    name: str
    type: str

    @property
    def base(self) -> str:
        """The type without modifiers: ``numeric(12,2)`` → ``numeric``."""
        return self.type.split("(")[0].strip().removesuffix("[]")


def pg_columns(conninfo: str, table: str) -> list[Column]:
    """The columns of ``schema.table`` in order."""
    schema, name = table.split(".", 1)
    with connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY a.attnum", (schema, name)).fetchall()
    return [Column(str(r[0]), str(r[1])) for r in rows]


def _json_canonical(value: Any) -> Any:
    """A JSON value with numbers as normalized decimals and objects as sorted pairs."""
    if isinstance(value, dict):
        return {"{}": sorted((k, _json_canonical(v)) for k, v in value.items())}
    if isinstance(value, list):
        return [_json_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    return ("number", format(Decimal(str(value)).normalize(), "f"))  # 1 = 1.0 ≠ "1"


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", float(value)))[0])


def _float_text(value: float) -> str:
    return "NaN" if math.isnan(value) else repr(value)


def _instant(value: Any) -> str:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:  # a Delta timestamp without zone holding UTC
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).isoformat()


def _timestamp(value: Any) -> str:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat()


def canonical(column: Column, value: Any) -> Any:
    """``value`` in the canonical form for ``column``'s type (None stays None)."""
    if value is None:
        return None
    base = column.base
    if base in ("smallint", "integer", "bigint"):
        return int(value)
    if base == "numeric":
        d = Decimal(str(value))
        return "NaN" if d.is_nan() else format(d.normalize(), "f")
    if base == "real":
        return _float_text(_float32(value))
    if base == "double precision":
        return _float_text(float(value))
    if base == "boolean":
        return value if isinstance(value, bool) else str(value).lower() in ("t", "true")
    if base == "character":
        return str(value).rstrip(" ")
    if base == "date":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if base == "timestamp without time zone":
        return _timestamp(value)
    if base == "timestamp with time zone":
        return _instant(value)
    if base == "bytea":
        if isinstance(value, str):
            return value.removeprefix("\\x").lower()
        return bytes(value).hex()
    if base in ("json", "jsonb"):  # always JSON text here: pg_rows selects it as text
        text = value.decode() if isinstance(value, bytes) else str(value)
        return repr(_json_canonical(json.loads(text, parse_float=Decimal)))
    if base == "uuid":
        return str(uuid.UUID(str(value)))
    return str(value)


def _sort_key(row: Row) -> tuple[tuple[int, str], ...]:
    return tuple((0, "") if v is None else (1, repr(v)) for v in row)


def pg_rows(conninfo: str, table: str, columns: list[Column]) -> list[Row]:
    """Every row of a PostgreSQL table, canonical and sorted."""
    schema, name = table.split(".", 1)
    # JSON as text: psycopg would parse it, and a JSON string is then a str like JSON text
    query = sql.SQL("SELECT {} FROM {}.{}").format(
        sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c.name))
                           if c.base in ("json", "jsonb") else sql.Identifier(c.name)
                           for c in columns),
        sql.Identifier(schema), sql.Identifier(name))
    with connect(conninfo) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        raw = conn.execute(query).fetchall()
    rows = [tuple(canonical(c, v) for c, v in zip(columns, r, strict=True)) for r in raw]
    return sorted(rows, key=_sort_key)


def delta_rows(path: Path, columns: list[Column]) -> list[Row] | None:
    """Every row of the Delta table at ``path`` (None when there is no table), canonical and
    sorted; Delta column names are the lower-cased source names."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(str(path)).to_pyarrow_table()
    except TableNotFoundError:
        return None
    names = {n.lower(): n for n in table.column_names}
    data = {c.name: table.column(names[c.name.lower()]).to_pylist()
            if c.name.lower() in names else [None] * table.num_rows for c in columns}
    rows = [tuple(canonical(c, data[c.name][i]) for c in columns)
            for i in range(table.num_rows)]
    return sorted(rows, key=_sort_key)


def content_hash(rows: list[Row]) -> str:
    """A short digest of sorted canonical rows."""
    h = hashlib.sha256()
    for row in rows:
        h.update(repr(row).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:12]


@dataclass(slots=True)
class Side:
    """One copy of a table: its rows (None: the table does not exist)."""

    label: str
    rows: list[Row] | None

    @property
    def count(self) -> int | None:
        return None if self.rows is None else len(self.rows)

    @property
    def digest(self) -> str:
        return "-" if self.rows is None else content_hash(self.rows)


@dataclass(slots=True)
class TableComparison:
    """A source table and its copies; ``differences`` says how a copy differs."""

    table: str
    columns: list[Column]
    source: Side
    copies: list[Side]
    differences: dict[str, list[str]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not any(self.differences.values())


def _diff(columns: list[Column], expected: list[Row], actual: list[Row] | None,
          limit: int = 5) -> list[str]:
    """Up to ``limit`` lines describing rows missing, extra or different."""
    if actual is None:
        return ["the table does not exist"]
    if expected == actual:
        return []
    want, have = Counter(expected), Counter(actual)
    missing, extra = list(want - have), list(have - want)
    names = [c.name for c in columns]
    out = [f"{len(missing)} row(s) missing or different, {len(extra)} unexpected"]
    out += [f"  missing  {dict(zip(names, r, strict=True))}" for r in missing[:limit]]
    out += [f"  extra    {dict(zip(names, r, strict=True))}" for r in extra[:limit]]
    return out


def compare_tables(source: str, tables: list[str], *, target: str | None = None,
                   target_names: dict[str, str] | None = None,
                   delta_root: Path | None = None) -> list[TableComparison]:
    """Compare each source table with its PostgreSQL copy in ``target`` and its Delta copy
    under ``delta_root/<schema>/<table>`` (either may be omitted).  ``target_names`` maps a
    source table to its target name when they differ."""
    out = []
    for table in tables:
        columns = pg_columns(source, table)
        expected = pg_rows(source, table, columns)
        cmp = TableComparison(table, columns, Side("source", expected), [])
        tname = (target_names or {}).get(table, table)
        if target is not None:
            rows = pg_rows(target, tname, columns) if pg_columns(target, tname) else None
            cmp.copies.append(Side("PostgreSQL target", rows))
        if delta_root is not None:
            schema, name = tname.split(".", 1)
            cmp.copies.append(Side("Delta", delta_rows(delta_root / schema / name, columns)))
        for side in cmp.copies:
            cmp.differences[side.label] = _diff(columns, expected, side.rows)
        out.append(cmp)
    return out


def render_comparison(results: list[TableComparison]) -> list[str]:
    """The comparison table people read: per table and copy, rows, hash and ✓/✗."""
    labels = ["source"] + [s.label for s in results[0].copies] if results else []
    width = max([len("table"), *(len(r.table) for r in results)])
    head = f"{'table':<{width}}  " + "  ".join(f"{lab:>22}" for lab in labels)
    lines = [head, "-" * len(head)]
    for r in results:
        cells = [f"{r.source.count:>7} {r.source.digest:<12}  "]
        for side in r.copies:
            mark = "✓" if not r.differences.get(side.label) else "✗"
            count = "-" if side.count is None else str(side.count)
            cells.append(f"{count:>7} {side.digest:<12} {mark}")
        lines.append(f"{r.table:<{width}}  " + "  ".join(f"{c:>22}" for c in cells))
    for r in results:
        for label, diff in r.differences.items():
            if diff:
                lines.append(f"{r.table} vs {label}: {diff[0]}")
                lines.extend(diff[1:])
    return lines
