"""SCD type 2: each key's versions, with validity, folded from a batch of mapped changes.

A :class:`History` folds a batch's changes, in (CSN, position) order, into the stored
versions of the keys it touches.  A version is one source transaction's end state, valid
from its CSN to the next changing transaction's (``None`` while current); with tracked
columns, a change leaving them as they were updates the version in place.  A change whose
CSN a version already starts or ends at is a replay and is skipped; an older one is put in
its place, so replays and late changes leave the same table.  Pure Python (the Delta
target and the tests share it).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trailgate.apply.mapping import MappedChange
from trailgate.apply.records import TableCounts
from trailgate.model import OpType, datetime_from_julian

__all__ = ["END_CSN", "END_TIME", "HISTORY_COLUMNS", "IS_CURRENT", "START_CSN", "START_TIME",
           "History", "Version", "commit_datetime"]

START_CSN = "__start_csn"
END_CSN = "__end_csn"
START_TIME = "__start_time"
END_TIME = "__end_time"
IS_CURRENT = "__is_current"
#: The validity columns an SCD type 2 table has after the mapped columns.
HISTORY_COLUMNS = (START_CSN, END_CSN, START_TIME, END_TIME, IS_CURRENT)

Key = tuple[tuple[str, Any], ...]


@dataclass(slots=True)
class Version:
    """One version of a key: its values, valid from ``start`` (CSN) until ``end``."""

    start: int
    end: int | None
    values: dict[str, Any]
    start_time: datetime | None = None
    end_time: datetime | None = None
    stored: bool = False  # read from the table (False: made by this batch)
    changed: bool = False  # to be written
    reopen: tuple[int | None, datetime | None] | None = None  # validity before a close

    def __lt__(self, other: Version) -> bool:
        return self.start < other.start

    def row(self) -> dict[str, Any]:
        return {**self.values, START_CSN: self.start, END_CSN: self.end,
                START_TIME: self.start_time, END_TIME: self.end_time,
                IS_CURRENT: self.end is None}


def commit_datetime(m: MappedChange) -> datetime | None:
    """The source commit time of the change's transaction (its operation time when the
    trail has no commit time), UTC."""
    julian = m.record.commit_time or m.record.change.io_time
    return datetime_from_julian(julian) if julian else None


@dataclass
class History:
    """The versions of some keys of one table (module docstring).

    ``columns``: the table's mapped columns (not the validity columns); ``key_columns``:
    those that locate a row; ``tracked``: the columns whose change opens a version (None:
    every column).
    """

    columns: Sequence[str]
    key_columns: Sequence[str]
    tracked: frozenset[str] | None = None
    versions: dict[Key, list[Version]] = field(default_factory=dict)
    known: dict[Key, set[int]] = field(default_factory=dict)
    #: CSNs where a key was deleted (a stored version's end that starts no other version),
    #: with their commit times: a late version ends at the first of these after it
    deletes: dict[Key, dict[int, datetime | None]] = field(default_factory=dict)
    counts: TableCounts = field(default_factory=TableCounts)

    def key_of(self, image: Mapping[str, Any]) -> Key:
        return tuple((c, image.get(c)) for c in self.key_columns)

    def load(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add stored rows (each a version, with its validity columns)."""
        for row in rows:
            key = self.key_of(row)
            v = Version(int(row[START_CSN]), _opt_int(row.get(END_CSN)),
                        {c: row.get(c) for c in self.columns},
                        row.get(START_TIME), row.get(END_TIME), stored=True)
            insort(self.versions.setdefault(key, []), v)
            seen = self.known.setdefault(key, set())
            seen.add(v.start)
            if v.end is not None:
                seen.add(v.end)
        for key, versions in self.versions.items():
            starts = {v.start for v in versions}
            for v in versions:
                if v.end is not None and v.end not in starts:
                    self.deletes.setdefault(key, {})[v.end] = v.end_time

    def apply(self, changes: Iterable[MappedChange]) -> None:
        """Fold changes (in CSN, trail position order) into the versions."""
        for m in changes:
            self._apply(m)

    def _apply(self, m: MappedChange) -> None:
        csn = m.record.csn
        when = commit_datetime(m)
        op = m.op
        counts = self.counts
        if op is OpType.TRUNCATE:
            counts.truncates += 1
            for key in list(self.versions):
                self._close(key, csn, when)
            return
        key = self.key_of(m.key)
        if op is OpType.DELETE:
            counts.deletes += 1
            self._close(key, csn, when)
        elif op is OpType.INSERT:
            counts.inserts += 1
            self._upsert(key, csn, when, m.values, replace=True)
        elif op is OpType.PK_UPDATE:
            counts.updates += 1
            new_key = self.key_of(m.new_key())
            old = self._at(key, csn, ended=True)
            base = dict(old.values) if old is not None else {}
            self._close(key, csn, when)
            self._upsert(new_key, csn, when, {**base, **m.values}, replace=True)
        else:
            counts.updates += 1
            self._upsert(key, csn, when, m.values, replace=False)

    def _at(self, key: Key, csn: int, *, ended: bool = False) -> Version | None:
        """The key's version valid at ``csn`` (``ended``: or the one ending there)."""
        for v in reversed(self.versions.get(key, ())):
            if v.start <= csn and (v.end is None or csn < v.end or (ended and csn == v.end)):
                return v
        return None

    def _close(self, key: Key, csn: int, when: datetime | None) -> None:
        if csn in self.known.get(key, ()):
            return  # applied before
        v = self._at(key, csn)
        if v is None:
            return  # nothing to close: the key had no row then
        self.deletes.setdefault(key, {})[csn] = when
        if v.start == csn and not v.stored:
            # made earlier in this transaction: it never existed outside it
            self.versions[key].remove(v)
            return
        v.reopen = (v.end, v.end_time)
        v.end, v.end_time, v.changed = csn, when, True

    def _upsert(self, key: Key, csn: int, when: datetime | None, values: Mapping[str, Any],
                *, replace: bool) -> None:
        if csn in self.known.get(key, ()):
            return  # applied before
        v = self._at(key, csn)
        reopened = False
        if v is None:
            # deleted earlier in this transaction and back now: the transaction's net
            # effect is a change of the version it closed
            v = self._closed_by(key, csn)
            reopened = v is not None
        base = {c: None for c in self.columns}
        if v is not None and not replace:
            base.update(v.values)
        new = {**base, **values, **dict(key)}
        reinsert = replace and not reopened
        if v is not None and v.start == csn and not v.stored:
            prev = self._closed_by(key, csn, reopen=False)
            if prev is not None and not self._opens_version(prev.values, new):
                # this transaction made a version and then undid what differed: no version
                self.versions[key].remove(v)
                self._closed_by(key, csn)
                prev.values, prev.changed = new, True
            else:
                v.values, v.changed = new, True
            return
        if v is not None and not (reinsert or self._opens_version(v.values, new)):
            v.values, v.changed = new, True  # in place
            return
        if v is not None:
            end, end_time = v.end, v.end_time
        else:
            # a late version: it lasts until the key's next version or deletion
            after = sorted([(x.start, x.start_time) for x in self.versions.get(key, ())
                            if x.start > csn]
                           + [(d, t) for d, t in self.deletes.get(key, {}).items() if d > csn],
                           key=lambda e: e[0])
            end, end_time = after[0] if after else (None, None)
        if v is not None:
            v.reopen = (v.end, v.end_time)
            v.end, v.end_time, v.changed = csn, when, True
        insort(self.versions.setdefault(key, []),
               Version(csn, end, new, when, end_time, changed=True))

    def _closed_by(self, key: Key, csn: int, *, reopen: bool = True) -> Version | None:
        """The version this transaction (``csn``) closed, reopened unless ``reopen`` is
        False."""
        for v in self.versions.get(key, ()):
            if v.end == csn and v.reopen is not None:
                if reopen:
                    v.end, v.end_time = v.reopen
                    v.reopen = None
                    self.deletes.get(key, {}).pop(csn, None)
                return v
        return None

    def _opens_version(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        columns = self.columns if self.tracked is None else self.tracked
        return any(old.get(c) != new.get(c) for c in columns)

    def changed_rows(self) -> list[dict[str, Any]]:
        """The versions to write (new or changed), as rows with their validity columns."""
        return [v.row() for vs in self.versions.values() for v in vs if v.changed]


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
