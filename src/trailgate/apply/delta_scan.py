"""Reading the rows of a Delta table that a filter selects, whatever its string layout.

Files written by a Delta merge may hold string columns as ``string_view``, which pyarrow's
statistics pruning cannot compare with a filter's plain strings; this module keeps that
detail away from the appliers (``apply.delta``, ``apply.delta_history``), and spells
their merges' key predicates and column names the same way.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["key_predicate", "plain_strings", "quote", "rows_matching"]


def quote(name: str) -> str:
    """A column name quoted for a Delta merge's predicate and updates."""
    return '"' + name.replace('"', '""') + '"'


def key_predicate(key_cols: list[str], source: pa.Table) -> str:
    """A merge predicate matching target ``t`` and source ``s`` rows on ``key_cols``.

    A key column that is null in some source row (a nullable KEYCOLS column, a table keyed
    on all its columns) is compared with ``IS NOT DISTINCT FROM``, so a null key finds its
    row instead of inserting a second one; the others keep plain equality, which the merge
    can join on by hash.
    """
    parts = []
    for c in key_cols:
        op = "IS NOT DISTINCT FROM" if source.column(c).null_count else "="
        parts.append(f"(t.{quote(c)} {op} s.{quote(c)})")
    return " AND ".join(parts)


def rows_matching(dataset: Any, filt: Any, key_cols: list[str]) -> pa.Table:
    """The rows of ``dataset`` that ``filt`` selects.

    Files written by a Delta merge may hold string columns as ``string_view``, which pyarrow's
    statistics pruning cannot compare with the filter's plain strings (no ``greater_equal``
    kernel for string and string_view).  Then only the key columns are scanned and matched
    here, and the matching rows are taken by position: still no full-row scan of the table.
    """
    try:
        return plain_strings(dataset.to_table(filter=filt))
    except pa.ArrowNotImplementedError:
        pass
    keys = plain_strings(dataset.to_table(columns=key_cols))
    keys = keys.append_column("__row", pa.array(range(keys.num_rows), pa.int64()))
    positions = keys.filter(filt).column("__row")
    return plain_strings(dataset.take(positions))


def plain_strings(table: pa.Table) -> pa.Table:
    """``table`` with string_view/large_string columns as plain strings (comparable, stable)."""
    fields = [
        pa.field(f.name, pa.string(), f.nullable)
        if pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type) else f
        for f in table.schema
    ]
    schema = pa.schema(fields)
    return table if schema == table.schema else table.cast(schema)
