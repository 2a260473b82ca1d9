"""Transactions from redo records, in two halves that can run in different processes.

:func:`record_events` turns one parsed redo record into assembly events (starts, row changes
in trail form, compensations, commits, rollbacks); it needs only the record and the
dictionary, so a Spark task can run it for a whole dump.  :class:`Assembler` feeds the
events, in redo order, to the open-transaction buffer and hands out committed transactions
with a JSON checkpoint.  :func:`merge_threads` checks each thread's order and merges by SCN.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from trailgate.capture.oracle.changes import (
    Commit,
    DirectLoad,
    RowChange,
    UndoApplied,
    UndoHeader,
    UndoRecord,
)
from trailgate.capture.oracle.records import RBA, RedoRecord, located
from trailgate.capture.oracle.rowchanges import RowBuilder
from trailgate.capture.oracle.transactions import Position, TransactionBuffer
from trailgate.errors import SourceError
from trailgate.model import Change, Transaction

__all__ = ["CHECKPOINT_FORMAT", "Assembler", "RecordEvents", "merge_threads",
           "record_events"]

log = logging.getLogger("trailgate.capture.oracle")

CHECKPOINT_FORMAT = "trailgate-oracle-dump-checkpoint"

BEGIN, ADD, COMPENSATE, COMMIT = 0, 1, 2, 3  # event kinds (small ints: they pickle small)


@dataclass(slots=True)
class RecordEvents:
    """One redo record as transaction assembly sees it (pickles small: no dump text).

    ``ops`` are tuples in the order assembly must apply them: ``(BEGIN, k, line, xid)``,
    ``(ADD, k, line, xid, changes)``, ``(COMPENSATE, k, line, xid)``, ``(COMMIT, k, line,
    xid, rolled_back, commit_time)``; ``k`` is the change number in the record."""

    thread: int
    rba: RBA
    scn: int
    path: str
    line: int
    changes: int
    ops: list[tuple[Any, ...]] = field(default_factory=list)


_UNDO, _HEADER, _APPLIED, _ROW, _COMMIT, _OTHER = range(1, 7)  # a change's part in assembly
_ROLES: dict[type, int] = {}


def _role(cls: type) -> int:
    """What assembly does with changes of class ``cls`` (worked out once per class)."""
    role = _ROLES.get(cls)
    if role is None:
        role = next((r for r, base in ((_UNDO, UndoRecord), (_HEADER, UndoHeader),
                                        (_APPLIED, UndoApplied), (_ROW, (RowChange, DirectLoad)),
                                        (_COMMIT, Commit)) if issubclass(cls, base)), _OTHER)
        _ROLES[cls] = role
    return role


def record_events(rec: RedoRecord, builder: RowBuilder) -> RecordEvents:
    """The assembly events of one parsed record (row values decoded by ``builder``)."""
    changes = rec.changes
    ops: list[tuple[Any, ...]] = []
    ev = RecordEvents(rec.thread, rec.rba, rec.scn, rec.path, rec.line, len(changes), ops)
    roles = _ROLES
    kinds = [roles.get(type(c)) or _role(type(c)) for c in changes]
    undo_xids: set[str] = set()
    applied: list[UndoApplied] = []
    for k, role in enumerate(kinds):  # starts first, then the rest in change order
        if role == _UNDO:
            c = changes[k]
            undo_xids.add(c.xid)
            if c.begin:
                ops.append((BEGIN, k + 1, c.line, c.xid))
        elif role == _HEADER:
            c = changes[k]
            if c.sqn:
                ops.append((BEGIN, k + 1, c.line, c.xid))
        elif role == _APPLIED:
            applied.append(changes[k])
    pending: deque[UndoRecord] = deque()
    for k, role in enumerate(kinds):
        if role == _UNDO:
            c = changes[k]
            if c.kdo is not None:
                pending.append(c)
        elif role == _ROW:
            c = changes[k]
            if applied:  # undo being applied by a rollback: a compensation, not new work
                xid = c.xid or next((a.xid for a in applied if a.xid), "")
                if not xid:
                    raise located(rec.path, c.line, rec.rba, "rollback compensation "
                                  "without a transaction id")
                ops.append((COMPENSATE, k + 1, c.line, xid))
                continue
            undo = pending.popleft() if pending and type(c) is not DirectLoad and \
                isinstance(c, RowChange) else None
            xid = _xid(rec, c, undo, undo_xids)
            ops.append((ADD, k + 1, c.line, xid, builder.build(rec, c, undo)))
        elif role == _COMMIT:
            c = changes[k]
            ops.append((COMMIT, k + 1, c.line, c.xid, c.rolled_back, rec.julian_time))
    return ev


def _xid(rec: RedoRecord, c: RowChange | DirectLoad, undo: UndoRecord | None,
         undo_xids: set[str]) -> str:
    if c.xid:
        if undo is not None and undo.xid != c.xid:
            raise located(rec.path, c.line, rec.rba, f"change names transaction {c.xid} "
                          f"but its undo (line {undo.line}) belongs to {undo.xid}")
        return c.xid
    if undo is not None:
        return undo.xid
    if len(undo_xids) == 1:
        return next(iter(undo_xids))
    raise located(rec.path, c.line, rec.rba, f"cannot tell which transaction {c.op} "
                  f"belongs to: no 'op: F xid:' and no single 5.1 xid in its redo record")


def merge_threads(streams: Mapping[int, Iterable[RecordEvents]]) -> Iterator[RecordEvents]:
    """Each thread's records checked for order, all threads merged by SCN (RAC)."""
    if len(streams) == 1:  # one thread: nothing to merge
        [(thread, records)] = streams.items()
        return _checked(thread, records)
    return heapq.merge(*(_checked(t, s) for t, s in streams.items()),
                       key=lambda r: (r.scn, r.thread))


def _checked(thread: int, records: Iterable[RecordEvents]) -> Iterator[RecordEvents]:
    prev: RecordEvents | None = None
    for rec in records:
        if rec.thread != thread:
            raise located(rec.path, rec.line, rec.rba, f"thread {rec.thread} record in "
                          f"a dump of thread {thread}: one dump file per log, please")
        if prev is not None:
            if rec.rba <= prev.rba:
                raise located(rec.path, rec.line, rec.rba, f"RBA does not follow "
                              f"{prev.rba} ({prev.path}, line {prev.line}): records "
                              f"out of order, or the same log dumped twice")
            if rec.scn < prev.scn:
                raise located(rec.path, rec.line, rec.rba, f"SCN 0x{rec.scn:x} is "
                              f"below the previous record's 0x{prev.scn:x}")
        prev = rec
        yield rec


class Assembler:
    """Open transactions by XID; committed ones come out in commit order.

    ``resume`` is a :meth:`checkpoint` of an earlier run: records before each thread's
    restart point (:attr:`start`) are passed over, and commits at or before the read
    position are dropped, so nothing is lost or repeated.
    """

    def __init__(self, *, resume: dict[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None, spill_threshold: int = 16 << 20,
                 memory_budget: int = 128 << 20, spill_dir: str | None = None):
        self.buffer = TransactionBuffer(spill_threshold=spill_threshold,
                                        memory_budget=memory_budget, spill_dir=spill_dir)
        self._warn = warn or log.warning
        self.rolled_back: list[str] = []
        self.open_at_end: list[str] = []
        self.last_commit_scn: int | None = None
        self.records = 0  # redo records taken (for summaries)
        self.last_commit_time: int | None = None
        #: per thread, the last commit handed out or record passed: a Position, or the
        #: record's events (its end, made a Position only when asked: one per record costs)
        self._read: dict[int, Position | RecordEvents] = {}
        self._skip_through: dict[int, Position] = {}
        self.start: dict[int, RBA] = {}
        self._open_at_close: list[tuple[str, Position]] | None = None
        if resume is not None:
            self._load_checkpoint(resume)

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """Restart state as of the last transaction handed out (JSON-serialisable)."""
        opens = self._open_at_close if self._open_at_close is not None else [
            (t.xid, t.start) for t in self.buffer.open.values()]
        threads: dict[str, Any] = {}
        for thread in sorted(set(self._read) | {start.thread for _, start in opens}):
            read = self.read_position(thread)
            starts = [start for _, start in opens if start.thread == thread]
            oldest = min(starts) if starts else None
            threads[str(thread)] = {"read": read.to_json() if read else None,
                                    "recovery": oldest.to_json() if oldest else None}
        return {"format": CHECKPOINT_FORMAT, "version": 1, "threads": threads,
                "last_commit_scn": self.last_commit_scn,
                "open_transactions": [{"xid": xid, **start.to_json()} for xid, start in opens]}

    def _load_checkpoint(self, doc: dict[str, Any]) -> None:
        if not isinstance(doc, dict) or doc.get("format") != CHECKPOINT_FORMAT:
            raise SourceError(f"not an Oracle dump capture checkpoint (expected format "
                              f"{CHECKPOINT_FORMAT!r})")
        try:
            for key, entry in doc["threads"].items():
                thread = int(key)
                read = Position.from_json(entry["read"]) if entry.get("read") else None
                rec = Position.from_json(entry["recovery"]) if entry.get("recovery") else None
                if read is not None:
                    self._skip_through[thread] = read
                    self._read[thread] = read
                starts = [p.rba for p in (read, rec) if p is not None]
                if starts:
                    self.start[thread] = min(starts)
            self.last_commit_scn = doc.get("last_commit_scn")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SourceError(f"damaged Oracle dump capture checkpoint: {exc}") from None

    def read_position(self, thread: int) -> Position | None:
        """The last commit handed out (or record passed) on ``thread``."""
        at = self._read.get(thread)
        if isinstance(at, RecordEvents):
            at = self._read[thread] = Position(at.thread, at.rba, at.changes, at.scn, at.path,
                                               at.line)
        return at

    # -- feeding ---------------------------------------------------------------------------
    def feed(self, ev: RecordEvents) -> Iterator[Transaction]:
        """Apply one record's events; yields the transactions it commits."""
        start = self.start.get(ev.thread)
        if start is not None and ev.rba < start:
            return
        self.records += 1
        thread, rba, scn, path = ev.thread, ev.rba, ev.scn, ev.path
        buffer = self.buffer
        opened = buffer.open
        for op in ev.ops:  # a start Position is made only for a transaction not yet open
            kind = op[0]
            if kind == ADD:
                xid = op[3]
                buffer.add(xid, op[4], None if xid in opened else
                           Position(thread, rba, op[1], scn, path, op[2]))
            elif kind == BEGIN:
                if op[3] not in opened:
                    buffer.begin(op[3], Position(thread, rba, op[1], scn, path, op[2]))
            elif kind == COMPENSATE:
                buffer.add(op[3], [], Position(thread, rba, op[1], scn, path,
                                               op[2])).compensated = True
            else:
                txn = self._commit(ev, op, Position(thread, rba, op[1], scn, path, op[2]))
                if txn is not None:
                    yield txn
        self._read[thread] = ev

    def finish(self) -> None:
        """The input ended: note the transactions still open (they are not emitted)."""
        for txn in self.buffer.open.values():
            self.open_at_end.append(txn.xid)
        if self.open_at_end:
            log.info("%d transaction(s) still open at the end of the dumps were not "
                     "emitted: %s", len(self.open_at_end), ", ".join(self.open_at_end))

    def close(self) -> None:
        """Forget open transactions and remove spill files (``checkpoint()`` still answers)."""
        if self._open_at_close is None:
            self._open_at_close = [(t.xid, t.start) for t in self.buffer.open.values()]
        self.buffer.close()

    def _commit(self, ev: RecordEvents, op: tuple[Any, ...],
                here: Position) -> Transaction | None:
        _, _, line, xid, rolled_back, commit_time = op
        done = self._skip_through.get(ev.thread)
        if done is not None and here <= done:  # emitted before the restart
            self.buffer.drop(xid)
            return None
        if rolled_back:
            if self.buffer.drop(xid) is not None:
                self.rolled_back.append(xid)
            return None
        state, txn = self.buffer.end(xid, ev.scn, commit_time)
        if state is None or txn is None:
            self._warn(f"{ev.path}, line {line}, redo record RBA {ev.rba}: transaction "
                       f"{xid} commits but none of its redo was read (it began before the "
                       f"first dump given): not captured")
            return None
        if not state.begun:
            self._warn(f"{ev.path}, line {line}, redo record RBA {ev.rba}: transaction "
                       f"{xid} began before the first dump given ({len(txn.changes)} "
                       f"change(s) seen): not captured; give the earlier log dumps too")
            return None
        if state.compensated:
            raise located(ev.path, line, ev.rba, f"transaction {xid} commits after a "
                          f"partial rollback (ROLLBACK TO SAVEPOINT or a failed statement); "
                          f"trailgate cannot yet tell which changes were undone, so it stops "
                          f"rather than write wrong records")
        self._read[ev.thread] = here
        self.last_commit_scn = ev.scn
        self.last_commit_time = commit_time
        if not txn.changes:
            return None
        return txn


def changes_of(ev: RecordEvents) -> list[Change]:
    """The row changes a record adds (for counting)."""
    return [c for op in ev.ops if op[0] == ADD for c in op[4]]
