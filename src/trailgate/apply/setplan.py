"""BATCHSQL's set-based plan: one table's changes in a partition as a few set operations.

Row by row every change costs a statement and a round trip; a COPY, or one ``UPDATE …
FROM`` a staged set, costs a fraction of that.  Each key's chain of changes collapses to at
most two operations, applied in four phases; changes that cannot be collapsed stay in trail
order, and a table with triggers gets no plan.  The plan is an attempt: a collision rolls it
back and the partition is applied change by change.  Pure Python.  The rules:
docs/replicat.md, "PostgreSQL target".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trailgate.apply.mapping import MappedChange, TableMapping
from trailgate.apply.records import TableCounts
from trailgate.model import OpType

__all__ = ["CopyRows", "SetPlan", "plan_table"]

Key = tuple[Any, ...]
Row = tuple[Any, ...]


@dataclass(slots=True, frozen=True)
class CopyRows:
    """Rows already written as PostgreSQL COPY text (``spanplan``: made in C, no tuple per
    row); stands wherever a plan holds a list of rows."""

    data: bytes
    rows: int

    def __len__(self) -> int:
        return self.rows

    def __bool__(self) -> bool:
        return self.rows > 0


@dataclass(slots=True)
class SetPlan:
    """One target table's changes as set operations (see the module docstring).

    Rows are tuples of PostgreSQL input text in the order of their column tuple; ``updates``
    rows are the key values followed by the set columns' values.  A :class:`CopyRows` may
    stand for any list of rows.
    """

    mapping: TableMapping
    key_columns: tuple[str, ...]
    delete_first: Sequence[Key] | CopyRows = ()
    inserts: Mapping[tuple[str, ...], Sequence[Row] | CopyRows] = field(default_factory=dict)
    updates: Mapping[tuple[str, ...], Sequence[Row] | CopyRows] = field(default_factory=dict)
    delete_last: Sequence[Key] | CopyRows = ()
    ordered: list[MappedChange] = field(default_factory=list)
    counts: TableCounts = field(default_factory=TableCounts)


@dataclass(slots=True)
class _Rows:
    """The rows of a plan as plan_table collects them (spanplan's come as CopyRows)."""

    delete_first: list[Key] = field(default_factory=list)
    inserts: dict[tuple[str, ...], list[Row]] = field(default_factory=dict)
    updates: dict[tuple[str, ...], list[Row]] = field(default_factory=dict)
    delete_last: list[Key] = field(default_factory=list)


def _moves_key(m: MappedChange, columns: tuple[str, ...], key: Key) -> Key | None:
    """The key a change moves its row to (a PK update, or an update setting a key column
    to another value); None if the row stays where it is."""
    values = m.values
    new = tuple(values.get(c, k) for c, k in zip(columns, key, strict=True))
    if m.op is OpType.PK_UPDATE or new != key:
        return new
    return None


_MOVES = (OpType.UPDATE, OpType.PK_UPDATE)


def plan_table(mapping: TableMapping, changes: Sequence[MappedChange]) -> SetPlan | None:
    """The set plan of one table's changes (trail order); None when the partition must be
    applied one change at a time because the table has triggers or rules (they must see
    each change, in order).  A table matched on all its columns, or with a truncate or a
    collision inside the batch, gets a plan whose changes are all ``ordered``."""
    if mapping.target.triggers:
        return None
    columns = tuple(a.target.name for a in mapping.key)
    out = _Rows()
    plan = SetPlan(mapping, columns, out.delete_first, out.inserts, out.updates,
                   out.delete_last)
    if mapping.all_columns_key:
        plan.ordered = list(changes)
        return plan
    linked: set[Key] = set()
    chains: dict[Key, list[MappedChange]] = {}
    keys: list[Key] = []
    for m in changes:
        op = m.op
        if op is OpType.TRUNCATE:
            return _one_by_one(plan, changes)
        key = tuple(m.key.values())  # every key column, in key order (not an ALL key)
        keys.append(key)
        if None in key:
            linked.add(key)
        if op in _MOVES:
            moved = _moves_key(m, columns, key)
            if moved is not None:
                linked.add(key)
                linked.add(moved)
        chain = chains.get(key)
        if chain is None:
            chains[key] = [m]
        else:
            chain.append(m)
    if linked:  # their changes leave the chains, in trail order
        plan.ordered = [m for m, key in zip(changes, keys, strict=True) if key in linked]
        for key in linked:
            chains.pop(key, None)
    key_set = frozenset(columns)
    counts = plan.counts
    inserts = out.inserts
    for key, chain in chains.items():
        if len(chain) == 1:  # the usual case, inline
            m = chain[0]
            op = m.op
            values = m.values
            if op is OpType.INSERT:
                cols = tuple(values)
                rows = inserts.get(cols)
                if rows is None:
                    rows = inserts[cols] = []
                rows.append(tuple(values.values()))
                counts.inserts += 1
            elif op is OpType.UPDATE:
                _update(out, key, values, key_set)
                counts.updates += 1
            else:
                out.delete_first.append(key)
                counts.deletes += 1
        elif not _fold_chain(out, counts, key, chain, key_set):
            return _one_by_one(plan, changes)
    return plan


def _one_by_one(plan: SetPlan, changes: Sequence[MappedChange]) -> SetPlan:
    """The table's changes all in trail order (a truncate, a collision in a chain)."""
    return SetPlan(plan.mapping, plan.key_columns, ordered=list(changes))


def _update(out: _Rows, key: Key, values: dict[str, Any], key_set: frozenset[str]) -> None:
    sets = tuple(c for c in values if c not in key_set)
    rows = out.updates.get(sets)
    if rows is None:
        rows = out.updates[sets] = []
    rows.append(key + tuple(values[c] for c in sets))


def _insert(out: _Rows, row: dict[str, Any]) -> None:
    out.inserts.setdefault(tuple(row), []).append(tuple(row.values()))


def _fold_chain(out: _Rows, counts: TableCounts, key: Key, chain: list[MappedChange],
                key_set: frozenset[str]) -> bool:
    """Add one key's chain to the plan; False if the chain itself holds a collision."""
    existed = chain[0].op is not OpType.INSERT  # what the chain's first change needs
    present = existed
    deleted_existing = False
    first_insert: dict[str, Any] | None = None
    row: dict[str, Any] | None = None  # the row since the chain's last insert
    updated: dict[str, Any] = {}  # updates of the row that existed, while it still does
    for m in chain:
        op = m.op
        if op is OpType.INSERT:
            if present:
                return False
            present = True
            row = dict(m.values)
            if first_insert is None:
                first_insert = row
            counts.inserts += 1
        elif op is OpType.UPDATE:
            if not present:
                return False
            (row if row is not None else updated).update(m.values)
            counts.updates += 1
        else:  # DELETE
            if not present:
                return False
            present = False
            if row is None:
                deleted_existing = True
            row = None
            counts.deletes += 1
    if existed and not deleted_existing:
        _update(out, key, updated, key_set)
        return True
    if deleted_existing:
        out.delete_first.append(key)
    if row is not None:
        _insert(out, row)
    elif not existed:  # inserted and deleted again: the insert still proves the key free
        assert first_insert is not None
        _insert(out, first_insert)
        out.delete_last.append(key)
    return True
