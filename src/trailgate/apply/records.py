"""What the apply layer consumes and returns: trail changes with their place, and counts.

A :class:`Change` alone does not say where it sits in the trail or which transaction it
belongs to; the apply layer needs both (ordering, checkpoints, messages that name the trail
position), so the Replicat hands it :class:`TrailChange` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trailgate.model import Change, TrailPosition

if TYPE_CHECKING:
    from trailgate.trail.reader import ReadTransaction

__all__ = ["ApplyResult", "TableCounts", "TrailChange", "from_read_transactions"]


@dataclass(slots=True)
class TrailChange:
    """One trail record to apply: the change, its transaction and its trail position.

    ``commit_time`` is Julian microseconds of the source commit (0: use ``change.io_time``);
    ``trans_ind`` is the record's TransInd (0 first, 1 middle, 2 last, 3 only).
    """

    change: Change
    csn: int
    xid: str
    position: TrailPosition
    commit_time: int = 0
    trans_ind: int = 3
    record_length: int | None = None
    txn_start: TrailPosition | None = None  # its transaction's first record, when known

    @property
    def table(self) -> str:
        return self.change.table

    @property
    def order(self) -> tuple[int, TrailPosition]:
        """Sort key: CSN, then trail position (the order Delta's last-change-wins uses)."""
        return (self.csn, self.position)


def from_read_transactions(transactions: Iterable[ReadTransaction]) -> Iterator[TrailChange]:
    """TrailChanges from :meth:`TrailReader.transactions` results, in trail order."""
    for rt in transactions:
        txn = rt.transaction
        records = rt.records
        last = len(records) - 1
        for i, rec in enumerate(records):
            if rec.change is None:
                continue
            ind = 3 if last == 0 else 0 if i == 0 else 2 if i == last else 1
            yield TrailChange(rec.change, txn.csn, txn.xid, rec.position,
                              txn.commit_time, ind, len(rec.raw.data))


@dataclass(slots=True)
class TableCounts:
    """Per-target-table statistics for STATS: operations by their trail type.

    An insert that HANDLECOLLISIONS turned into an update still counts as an insert (as
    GoldenGate counts by the record); ``collisions`` says how many were resolved that way.
    """

    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    truncates: int = 0
    discards: int = 0
    ignores: int = 0
    collisions: int = 0
    ddl: int = 0

    @property
    def operations(self) -> int:
        return self.inserts + self.updates + self.deletes + self.truncates + self.ddl

    def add(self, other: TableCounts) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(slots=True)
class ApplyResult:
    """What one apply call did: counts per target table (``schema.table``), or skipped.

    ``skipped`` is True when the checkpoint table (PostgreSQL) or the Delta log's application
    transaction shows this batch/partition was already applied: nothing was done again.
    """

    counts: dict[str, TableCounts] = field(default_factory=dict)
    skipped: bool = False
    skipped_tables: list[str] = field(default_factory=list)

    def table(self, name: str) -> TableCounts:
        counts = self.counts.get(name)
        if counts is None:
            counts = self.counts[name] = TableCounts()
        return counts

    def merge(self, other: ApplyResult) -> None:
        for name, counts in other.counts.items():
            self.table(name).add(counts)
        self.skipped_tables.extend(other.skipped_tables)
