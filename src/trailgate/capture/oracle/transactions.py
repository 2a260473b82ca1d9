"""Open transactions: buffered until their commit, spilled to disk when large.

Changes arrive in redo order, interleaved across transactions; a transaction is handed on
only when its 5.4 commit arrives (a rollback drops it).  A long transaction may hold more
changes than memory should: past ``spill_threshold`` bytes its changes go to a private temp
file, and when all open transactions together pass ``memory_budget`` the largest is spilled,
so memory stays bounded whatever the transaction sizes.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trailgate.capture.oracle.records import RBA
from trailgate.model import Change, Transaction

__all__ = ["OpenTransaction", "Position", "TransactionBuffer"]


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A place in the redo: thread, record RBA and change number, plus where it was read."""

    thread: int
    rba: RBA
    change: int = 0
    scn: int = field(default=0, compare=False)
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"thread": self.thread, "rba": str(self.rba), "change": self.change,
                "scn": self.scn, "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Position:
        return cls(thread=int(doc["thread"]), rba=RBA.parse(doc["rba"]),
                   change=int(doc.get("change", 0)), scn=int(doc.get("scn", 0)),
                   file=str(doc.get("file", "")), line=int(doc.get("line", 0)))


def _size(change: Change) -> int:
    total = 96
    image = change.after
    if image:
        total += 16 * len(image) + sum(map(len, filter(None, image.values())))
    image = change.before
    if image:
        total += 16 * len(image) + sum(map(len, filter(None, image.values())))
    return total


@dataclass(slots=True)
class OpenTransaction:
    xid: str
    start: Position
    begun: bool
    changes: list[Change] = field(default_factory=list)
    mem_bytes: int = 0
    spill_path: str | None = None
    spilled: int = 0
    compensated: bool = False


class TransactionBuffer:
    """Open transactions by XID; ``end`` returns the committed Transaction."""

    def __init__(self, *, spill_threshold: int = 16 << 20, memory_budget: int = 128 << 20,
                 spill_dir: str | None = None):
        self.spill_threshold = spill_threshold
        self.memory_budget = memory_budget
        self._spill_parent = spill_dir
        self._spill_dir: str | None = None
        self.open: dict[str, OpenTransaction] = {}
        self.mem_bytes = 0
        self.spills = 0  # how many times changes went to disk (observable for tests)

    def begin(self, xid: str, pos: Position) -> OpenTransaction:
        """Note that a transaction starts here (5.2 slot, or the first ``ktubl`` undo)."""
        txn = self.open.get(xid)
        if txn is None:
            txn = self.open[xid] = OpenTransaction(xid, pos, begun=True)
        return txn

    def add(self, xid: str, changes: list[Change],
            pos: Position | Callable[[], Position] | None) -> OpenTransaction:
        """Add a transaction's changes; ``pos`` (or ``pos()``, asked for only then) is where
        it starts when this is the first of it that was read (``None``: it is open)."""
        txn = self.open.get(xid)
        if txn is None:  # its start lies before the first record read
            if pos is None:
                raise ValueError(f"transaction {xid} is not open and no start was given")
            start = pos if isinstance(pos, Position) else pos()
            txn = self.open[xid] = OpenTransaction(xid, start, begun=False)
        if changes:
            txn.changes.extend(changes)
            added = sum(map(_size, changes))
            txn.mem_bytes += added
            self.mem_bytes += added
            if txn.mem_bytes > self.spill_threshold:
                self._spill(txn)
            while self.mem_bytes > self.memory_budget:
                self._spill(max(self.open.values(), key=lambda t: t.mem_bytes))
        return txn

    def drop(self, xid: str) -> OpenTransaction | None:
        txn = self.open.pop(xid, None)
        if txn is not None:
            self.mem_bytes -= txn.mem_bytes
            if txn.spill_path:
                os.unlink(txn.spill_path)
        return txn

    def end(self, xid: str, csn: int, commit_time: int) -> tuple[OpenTransaction | None,
                                                                  Transaction | None]:
        """Close a committed transaction: ``(its state, the Transaction)``."""
        txn = self.open.get(xid)
        if txn is None:
            return None, None
        changes = self._load(txn) + txn.changes
        self.drop(xid)
        return txn, Transaction(xid=xid, csn=csn, changes=changes, commit_time=commit_time)

    def oldest_start(self, thread: int) -> Position | None:
        starts = [t.start for t in self.open.values() if t.start.thread == thread]
        return min(starts) if starts else None

    def close(self) -> None:
        """Forget every open transaction and remove the spill files."""
        for xid in list(self.open):
            self.drop(xid)
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None

    # -- spilling --------------------------------------------------------------------------
    def _spill(self, txn: OpenTransaction) -> None:
        if not txn.changes:
            return
        if self._spill_dir is None:
            self._spill_dir = tempfile.mkdtemp(prefix="trailgate-oracle-", dir=self._spill_parent)
        if txn.spill_path is None:
            safe = txn.xid.replace(".", "_")
            txn.spill_path = os.path.join(self._spill_dir, f"txn_{safe}_{id(txn):x}.pickle")
        with open(txn.spill_path, "ab") as f:
            pickle.dump(txn.changes, f, protocol=pickle.HIGHEST_PROTOCOL)
        txn.spilled += len(txn.changes)
        self.mem_bytes -= txn.mem_bytes
        txn.changes, txn.mem_bytes = [], 0
        self.spills += 1

    def _load(self, txn: OpenTransaction) -> list[Change]:
        if txn.spill_path is None:
            return []
        out: list[Change] = []
        with open(txn.spill_path, "rb") as f:
            while True:
                try:
                    out.extend(pickle.load(f))
                except EOFError:
                    break
        return out
