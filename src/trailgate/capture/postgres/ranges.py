"""How a table is split for a parallel initial load: key ranges, or ctid block ranges.

A key starting with an integer column gives open-ended ranges at ``pg_stats`` bounds (or
even steps); they stay valid across snapshots, so a restarted load redoes only unfinished
ones.  Any other table is split into heap block ranges (``ctid``), valid only inside one
snapshot, so a restart redoes it whole.  Small tables are one range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import psycopg

from trailgate.capture.postgres.catalog import SourceTable

__all__ = ["ROWS_PER_RANGE", "KeyRange", "TablePlan", "plan_ranges"]

#: Rows a range aims at: small enough for progress and resumption, large enough that the
#: per-range cost (a task, two connections, a commit) does not show.
ROWS_PER_RANGE = 250_000
#: Heap bytes per range when the row estimate is unknown.
BYTES_PER_RANGE = 64 << 20
MAX_RANGES = 512


@dataclass(frozen=True, slots=True)
class KeyRange:
    """Range ``index`` of a table: ``lower`` ≤ value < ``upper`` (None: open) of the key's
    first column (``kind`` "key") or of the heap block number (``kind`` "ctid"); kind
    "all" is the whole table."""

    index: int
    kind: str
    lower: int | None = None
    upper: int | None = None

    def predicate(self, key_column: str | None) -> str:
        """The WHERE condition selecting this range (empty: the whole table)."""
        if self.kind == "all":
            return ""
        if self.kind == "ctid":
            parts = []
            if self.lower is not None:
                parts.append(f"ctid >= '({self.lower},0)'::tid")
            if self.upper is not None:
                parts.append(f"ctid < '({self.upper},0)'::tid")
            return " AND ".join(parts)
        assert key_column is not None
        col = '"' + key_column.replace('"', '""') + '"'
        parts = []
        if self.lower is not None:
            parts.append(f"{col} >= {self.lower}")
        if self.upper is not None:
            parts.append(f"{col} < {self.upper}")
        return " AND ".join(parts)

    def contains(self, value: int) -> bool:
        return ((self.lower is None or value >= self.lower)
                and (self.upper is None or value < self.upper))

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind, "lower": self.lower,
                "upper": self.upper}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KeyRange:
        return cls(int(data["index"]), str(data["kind"]), data.get("lower"),
                   data.get("upper"))


@dataclass(slots=True)
class TablePlan:
    """One table of a load: where it goes and how it is split."""

    number: int
    source: SourceTable
    target_schema: str
    target_name: str
    columns: list[tuple[str, str]]  # (source column, target column), in target order
    ranges: list[KeyRange] = field(default_factory=list)

    @property
    def split(self) -> str:
        return self.ranges[0].kind if self.ranges else "all"

    @property
    def key_column(self) -> str | None:
        return self.source.key[0] if self.split == "key" else None

    @property
    def target(self) -> str:
        return f"{self.target_schema}.{self.target_name}"


def _bounds_from_stats(conn: psycopg.Connection[Any], table: SourceTable, column: str,
                       wanted: int) -> list[int] | None:
    row = conn.execute(
        "SELECT histogram_bounds::text::text[] FROM pg_stats WHERE schemaname = %s AND "
        "tablename = %s AND attname = %s", (table.schema, table.name, column)).fetchone()
    if row is None or not row[0]:
        return None
    try:
        values = sorted({int(v) for v in row[0]})
    except (TypeError, ValueError):
        return None
    if len(values) < 3:
        return None
    step = max(1, len(values) // wanted)
    return values[step::step][: wanted - 1]


def _even_bounds(conn: psycopg.Connection[Any], table: SourceTable, column: str,
                 wanted: int) -> list[int]:
    col = '"' + column.replace('"', '""') + '"'
    lo, hi = conn.execute(f"SELECT min({col}), max({col}) FROM {table.sql_name}").fetchone() \
        or (None, None)
    if lo is None or hi is None or hi <= lo:
        return []
    width = (int(hi) - int(lo) + 1) / wanted
    bounds = sorted({int(lo) + math.ceil(width * i) for i in range(1, wanted)})
    return [b for b in bounds if lo < b <= hi]


def plan_ranges(conn: psycopg.Connection[Any], table: SourceTable, *,
                rows_per_range: int = ROWS_PER_RANGE, max_ranges: int = MAX_RANGES
                ) -> list[KeyRange]:
    """The ranges of ``table`` (see the module docstring)."""
    if table.estimate is not None:
        wanted = math.ceil(table.estimate / max(1, rows_per_range))
    else:
        wanted = math.ceil(table.pages * 8192 / BYTES_PER_RANGE)
    wanted = max(1, min(max_ranges, wanted))
    if wanted == 1:
        return [KeyRange(0, "all")]
    if table.integer_leading_key:
        column = table.key[0]
        bounds = (_bounds_from_stats(conn, table, column, wanted)
                  or _even_bounds(conn, table, column, wanted))
        edges: list[int | None] = [None, *bounds, None]
        return [KeyRange(i, "key", edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    pages = max(1, table.pages)
    per = max(1, math.ceil(pages / wanted))
    starts = list(range(0, pages, per))
    out = []
    for i, start in enumerate(starts):
        upper = starts[i + 1] if i + 1 < len(starts) else None
        out.append(KeyRange(i, "ctid", start if i else None, upper))
    return out
