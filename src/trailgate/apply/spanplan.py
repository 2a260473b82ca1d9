"""BATCHSQL set plans straight from a batch's trail bytes, in C (``_spanplan.plan_span``).

In Python, reading the trail into ``Change`` objects, mapping and planning them cost the
Replicat more per change than PostgreSQL's share, so for the common case (plain column
mappings, a key that is not every column, no triggers, chains that collapse) ``plan_span``
does the three in one pass and writes the rows as COPY text.  Anything else returns ``None``
and the Python path, the reference, does it.  Optional: without the C module ``available``
is false.  docs/replicat.md, "PostgreSQL target".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trailgate.apply.mapping import TableMapping
from trailgate.apply.setplan import CopyRows, SetPlan
from trailgate.apply.values import converter_name
from trailgate.model import ColumnKind, TableDef
from trailgate.trail._accel import load_optional

__all__ = ["SpanResult", "available", "copy_columns", "plan_span", "table_spec"]

_FIXED_KINDS = frozenset({ColumnKind.CHAR, ColumnKind.DATE, ColumnKind.TIMESTAMP})
#: ``_spanplan.c``'s converter codes (its CONV_* enum, in order).
_CODES = {name: code for code, name in enumerate(
    ("utf8", "ascii", "bool", "raw", "date", "timestamp", "timestamptz"))}


_module = load_optional("trailgate.apply._spanplan")
#: True when set plans can be made in C.
available = _module is not None


def _code(convert: Callable[[bytes], str]) -> int | None:
    """The C converter doing what ``convert`` (one of values.text_converter's) does."""
    name = converter_name(convert)
    return None if name is None else _CODES.get(name)


def table_spec(spec_id: int, mapping: TableMapping, source: TableDef) -> tuple[Any, ...] | None:
    """What ``plan_span`` needs of one table, or None when its changes need the Python
    path: COLMAP expressions or WHERE (no ``plain``), an all-columns key, triggers or rules,
    a key column not mapped straight, a converter C does not have."""
    plain = mapping.plain
    if (plain is None or not plain or mapping.where is not None or mapping.all_columns_key
            or mapping.target.triggers):
        return None
    slots = {name: slot for slot, (name, _, _) in enumerate(plain)}
    fields = []
    for slot, (_, index, convert) in enumerate(plain):
        code = _code(convert)
        if code is None:
            return None
        fields.append((index, slot, code))
    key = []
    for name, index, key_convert, _ in mapping.key_fields:
        key_slot = slots.get(name)
        if key_convert is None or key_slot is None:
            return None
        code = _code(key_convert)
        if code is None or code != fields[key_slot][2] or index != fields[key_slot][0]:
            return None
        key.append((index, code, key_slot))
    if not key:
        return None
    n_source = max([c.index for c in source.columns] + [i for i, _, _ in fields]) + 1
    fixed = frozenset(c.index for c in source.columns if c.kind in _FIXED_KINDS)
    return (spec_id, n_source, fixed, len(plain), tuple(fields), tuple(key))


def copy_columns(rows: CopyRows, width: int) -> tuple[bytes, ...]:
    """The ``width`` columns of ``rows`` (which only C makes) each as a ``text[]`` in
    PostgreSQL's binary form, for a set statement to ``unnest``."""
    if _module is None:
        raise RuntimeError("COPY rows without the C set planner")
    out: tuple[bytes, ...] = _module.copy_columns(rows.data, width, rows.rows)
    return out


@dataclass(slots=True)
class SpanResult:
    """A span's set plans (one per mapped table, first-change order) and what the caller
    needs besides: the offset of the last kept change record (-1: none), how many records
    the router kept and how many were mapped, and the last complete transaction's commit
    (Julian µs, CSN, XID)."""

    plans: list[SetPlan]
    last_kept: int
    kept: int
    mapped: int
    last_commit: tuple[int, int, str] | None


def plan_span(data: bytes, start: int, end: int,
              resolve: Callable[[str], tuple[TableMapping, tuple[Any, ...]] | bool | None],
              on_metadata: Callable[[bytes], bool]) -> SpanResult | None:
    """The set plans of the trail records in ``data[start:end]`` (whole transactions).

    ``resolve(table)`` says what to do with a table's changes: None leave them (the router
    does not keep the table), True keep them unmapped (no MAP), False give the span to the
    Python path, or ``(mapping, table_spec(...))``.  ``on_metadata(blob)`` sees each
    metadata record's D area; False gives the span to the Python path.  Returns None when
    the Python path must do the span.
    """
    if _module is None:
        return None
    mappings: list[TableMapping] = []

    def spec_of(table: str) -> tuple[Any, ...] | bool | None:
        found = resolve(table)
        if found is None or isinstance(found, bool):
            return found
        mapping, spec = found
        mappings.append(mapping)
        return (len(mappings) - 1, *spec[1:])

    out = _module.plan_span(data, start, end, spec_of, on_metadata)
    if out is None:
        return None
    tables, last_kept, kept, mapped, last_commit = out
    plans = [_set_plan(mappings[item[0]], item) for item in tables]
    return SpanResult(plans, last_kept, kept, mapped, last_commit)


def _set_plan(mapping: TableMapping, item: tuple[Any, ...]) -> SetPlan:
    _, inserts, updates, deletes, delete_first, insert_groups, update_groups, delete_last = item
    names = [name for name, _, _ in mapping.plain or ()]

    def groups(items: list[tuple[Any, bytes, int]]) -> dict[tuple[str, ...], CopyRows]:
        return {tuple(n for n, on in zip(names, mask, strict=True) if on): CopyRows(data, rows)
                for mask, data, rows in items}

    plan = SetPlan(mapping, tuple(a.target.name for a in mapping.key),
                   () if delete_first is None else CopyRows(*delete_first),
                   groups(insert_groups), groups(update_groups),
                   () if delete_last is None else CopyRows(*delete_last))
    plan.counts.inserts, plan.counts.updates, plan.counts.deletes = inserts, updates, deletes
    return plan
