"""Ordering rules for applying a batch: partitions by key, and last-change-wins folding.

Parallel apply is safe only if every change to one row lands in one partition, in trail
order: :func:`partition_key` names the row a change touches, and
:func:`requires_single_partition` says when a batch must stay whole (a PK update moves a row
between keys; a truncate or DDL touches every row).  :func:`fold` gives each key's end
state for Delta's one merge: the last change wins, PK updates move rows, collisions are
found as sequential apply would find them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trailgate.apply.discard import Discard
from trailgate.apply.mapping import MappedChange, TableMapping
from trailgate.apply.records import TableCounts, TrailChange
from trailgate.errors import TargetError
from trailgate.model import Change, OpType, TableDef

__all__ = [
    "DUPLICATE_CODES",
    "MISSING_CODES",
    "CollisionError",
    "Folded",
    "fold",
    "partition_key",
    "partition_of",
    "requires_single_partition",
    "split_partitions",
]

#: Error codes REPERROR rules may name for a duplicate row (PostgreSQL SQLSTATE, Oracle).
DUPLICATE_CODES = ("23505", "-1", "1")
#: ... and for a missing row (GoldenGate reports ORA-01403 "no data found").
MISSING_CODES = ("-1403", "1403")

_SINGLE = frozenset({OpType.PK_UPDATE, OpType.TRUNCATE, OpType.DDL})


def partition_key(change: Change | TrailChange, table: TableDef | None) -> Hashable:
    """What decides a change's partition: the table and the row's source key.

    Inserts and updates carry the key in the after image, deletes and PK updates in the
    before image.  A table without a usable key (or a change without its key) gives the table
    name alone, so all its changes stay in one partition.
    """
    if isinstance(change, TrailChange):
        change = change.change
    name = change.table
    if table is None or not table.key or table.key_kind == "NONE":
        return (name,)
    image = change.before if change.op in (OpType.DELETE, OpType.PK_UPDATE) else change.after
    if not image:
        return (name,)
    try:
        values = tuple(image[i] for i in table.key_indexes)
    except KeyError:
        return (name,)
    return (name, values)


def partition_of(key: Hashable, partitions: int) -> int:
    """A stable partition number for ``key`` (Python's ``hash`` of str changes per process)."""
    return zlib.crc32(repr(key).encode("utf-8", "surrogatepass")) % partitions


def requires_single_partition(changes: Iterable[Change | TrailChange]) -> bool:
    """True if the batch holds a PK update, truncate or DDL: apply it as one partition."""
    for c in changes:
        op = c.change.op if isinstance(c, TrailChange) else c.op
        if op in _SINGLE:
            return True
    return False


def split_partitions(changes: Sequence[TrailChange], table_defs: Mapping[str, TableDef],
                     partitions: int) -> list[list[TrailChange]]:
    """The batch split as the Replicat does it: by key hash, or whole when it must be.

    Each list keeps trail order.  Deterministic for the same batch and partition count, so a
    replayed batch produces the same partitions (the checkpoint table relies on it).
    """
    if partitions <= 1 or requires_single_partition(changes):
        return [list(changes)]
    out: list[list[TrailChange]] = [[] for _ in range(partitions)]
    for tc in changes:
        key = partition_key(tc.change, table_defs.get(tc.change.table))
        out[partition_of(key, partitions)].append(tc)
    return out


# -- last change wins ------------------------------------------------------------------------

class CollisionError(TargetError):
    """A collision REPERROR says to ABEND on: names table, key and trail position."""

    def __init__(self, message: str, change: MappedChange, codes: Sequence[str]):
        super().__init__(message)
        self.change = change
        self.codes = tuple(codes)


Row = dict[str, Any]
KeyT = tuple[tuple[str, Any], ...]


@dataclass(slots=True)
class Folded:
    """The end state of one table after a batch: ``rows[key]`` is the row, or None if the key
    ends deleted; ``truncated`` says the table was emptied first."""

    mapping: TableMapping
    rows: dict[KeyT, Row | None] = field(default_factory=dict)
    truncated: bool = False
    counts: TableCounts = field(default_factory=TableCounts)
    discards: list[Discard] = field(default_factory=list)


def _collision(folded: Folded, m: MappedChange, codes: Sequence[str], what: str) -> None:
    """Resolve a collision without HANDLECOLLISIONS: as REPERROR says."""
    action = m.mapping.reperror_action(*codes)
    message = f"{what}: {m.where()}"
    if action == "DISCARD":
        folded.discards.append(Discard(m, message, tuple(codes)))
        folded.counts.discards += 1
    elif action == "IGNORE":
        folded.counts.ignores += 1
    else:
        raise CollisionError(f"{message}. The Replicat stops (REPERROR ABEND); fix the target "
                             f"row, or use HANDLECOLLISIONS or REPERROR (DEFAULT, DISCARD)",
                             m, codes)


def fold(mapping: TableMapping, changes: Sequence[MappedChange],
         existing: Callable[[KeyT], Row | None], columns: Sequence[str],
         convert: Callable[[str, str | None], Any] = lambda c, v: v) -> Folded:
    """Apply ``changes`` (one table, trail order) to a model of the target.

    ``existing(key)`` returns the target row for a key (None if absent); ``convert(column,
    text)`` turns a value into the form ``existing`` rows use, so keys compare equal.
    """
    out = Folded(mapping)
    state = out.rows
    counts = out.counts
    hc = mapping.handle_collisions
    key_cols = [a.target.name for a in mapping.key]

    def lookup(key: KeyT) -> Row | None:
        if key in state:
            return state[key]
        return None if out.truncated else existing(key)

    def keyof(values: Mapping[str, Any]) -> KeyT:
        return tuple((c, values[c]) for c in key_cols if c in values)

    for m in changes:
        op = m.op
        if op is OpType.TRUNCATE:
            out.truncated = True
            state.clear()
            counts.truncates += 1
            continue
        key = tuple((c, convert(c, v)) for c, v in m.key.items())
        values = {c: convert(c, v) for c, v in m.values.items()}
        current = lookup(key)
        if op is OpType.INSERT:
            counts.inserts += 1
            if current is not None:
                if not hc:
                    counts.inserts -= 1
                    _collision(out, m, DUPLICATE_CODES, "insert of a row that already exists")
                    continue
                counts.collisions += 1
                state[key] = {**current, **values}
            else:
                row = dict.fromkeys(columns)
                row.update(values)
                state[key] = row
            continue
        if current is None:
            if hc:
                counts.collisions += 1
            else:
                _collision(out, m, MISSING_CODES, f"{op.label.lower()} of a row that does "
                                                  f"not exist")
            continue
        if op is OpType.DELETE:
            counts.deletes += 1
            state[key] = None
            continue
        counts.updates += 1
        row = {**current, **values}
        new_key = keyof(row)
        if new_key != key:
            if lookup(new_key) is not None and not hc:
                counts.updates -= 1
                _collision(out, m, DUPLICATE_CODES, "key update onto a row that already "
                                                    "exists")
                continue
            state[key] = None
        state[new_key] = row
    return out
