"""A transaction's captured changes, in memory or spilled to disk.

PgCapture keeps what it reads as compactly as it can — a ``Change`` (TRUNCATE), a
``RawRow`` (a row change still as pgoutput sent it) or an ``EncodedRun`` (row changes the
fast path already encoded) — and hands out ``Change`` objects only to whoever iterates.
Past the memory limit they go to a spill file, so memory stays bounded whatever the
transaction's size.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast, overload

from trailgate.capture.postgres.rows import EncodedRun, RawRow, decode_encoded, decode_row
from trailgate.errors import SourceError
from trailgate.model import Change

__all__ = ["CapturedChanges", "ChangeBuffer", "SpilledChanges", "TransactionChanges"]


def _decoded(item: Change | RawRow | EncodedRun, io_time: int) -> Iterator[Change]:
    if isinstance(item, tuple):
        yield decode_row(item, io_time)
    elif isinstance(item, EncodedRun):
        for record in item.records:
            yield decode_encoded(item.table, record)
    else:
        yield item


class TransactionChanges(Sequence[Change]):
    """A transaction's changes: ``Change`` objects when iterated, or as captured
    (``items``: a ``Change``, a ``RawRow`` or an ``EncodedRun`` each) for the fast path.
    ``len`` counts changes."""

    io_time: int

    def items(self) -> Iterator[Change | RawRow | EncodedRun]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Change]:
        io_time = self.io_time
        for item in self.items():
            yield from _decoded(item, io_time)

    @overload
    def __getitem__(self, index: int) -> Change: ...
    @overload
    def __getitem__(self, index: slice) -> list[Change]: ...
    def __getitem__(self, index: int | slice) -> Change | list[Change]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        for i, change in enumerate(self):
            if i == index:
                return change
        raise IndexError(index)


class CapturedChanges(TransactionChanges):
    """The changes of a transaction that fit in memory."""

    def __init__(self, items: list[Change | RawRow | EncodedRun], count: int, io_time: int):
        self._items = items
        self._count = count
        self.io_time = io_time

    def __len__(self) -> int:
        return self._count

    def items(self) -> Iterator[Change | RawRow | EncodedRun]:
        return iter(self._items)

    def runs(self) -> list[EncodedRun] | None:
        """The items when there are some and every one is a run the C encoder made (most
        transactions), else ``None``."""
        items = self._items
        for item in items:
            if type(item) is not EncodedRun:
                return None
        return cast("list[EncodedRun]", items) if items else None


class SpilledChanges(TransactionChanges):
    """The changes of a transaction that did not fit in memory, read back from disk.

    Iterate it (one pass reads the file in chunks); indexing works but reads from the start.
    Valid until the next transaction is read or the capture is closed.
    """

    def __init__(self, path: Path, count: int, io_time: int = 0):
        self.path = path
        self._count = count
        self.io_time = io_time

    def __len__(self) -> int:
        return self._count

    def items(self) -> Iterator[Change | RawRow | EncodedRun]:
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise SourceError(f"spilled transaction {self.path} is gone: a transaction's "
                              "changes are valid only until the next one is read") from None
        with fh:
            while True:
                try:
                    chunk = pickle.load(fh)
                except EOFError:
                    return
                yield from chunk


class ChangeBuffer:
    """Collects a transaction's changes, moving them to a file past the memory limit."""

    def __init__(self, spill_dir: Path, limit: int):
        self.spill_dir = spill_dir
        self.limit = limit
        self.changes: list[Change | RawRow | EncodedRun] = []
        self.size = 0
        self.count = 0
        self.file: Any = None
        self.path: Path | None = None

    def append(self, change: Change | RawRow | EncodedRun, size: int) -> None:
        self.changes.append(change)
        self.count += 1
        self.size += size
        if self.size > self.limit:
            self.spill()

    def spill(self) -> None:
        """Move the changes held in memory to the spill file."""
        if self.file is None:
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="txn-", suffix=".spill", dir=self.spill_dir)
            self.file = os.fdopen(fd, "wb")
            self.path = Path(name)
        pickle.dump(self.changes, self.file, protocol=pickle.HIGHEST_PROTOCOL)
        self.changes.clear()  # in place: the read loop holds its append method
        self.size = 0

    def finish(self, io_time: int) -> CapturedChanges | SpilledChanges:
        if self.file is None:
            return CapturedChanges(self.changes, self.count, io_time)
        if self.changes:
            self.spill()
        self.file.close()
        assert self.path is not None
        return SpilledChanges(self.path, self.count, io_time)

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
