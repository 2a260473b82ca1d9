"""Redo dump files -> committed transactions, in commit-SCN order, restartable.

Dump files are grouped by redo thread and ordered by log sequence (so an archived log and
the online log that follows it can be given in any order); threads are merged by SCN (RAC).
Each redo record's row operations are paired with the 5.1 undo before them, attributed to a
transaction (``op: F xid:``, else the record's 5.1 ``xid``, else a direct-load block's ITL)
and buffered until the transaction's 5.4 commit.

``DumpCapture.checkpoint()`` is plain JSON-able data: per thread the current read position
and the start of the oldest open transaction.  Given back as ``resume=``, capture re-reads from
the oldest open transaction and skips every commit at or before the read position, so a
restart neither loses nor repeats a transaction.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from trailgate.capture.oracle.changes import (
    Commit,
    DirectLoad,
    RowChange,
    UndoApplied,
    UndoHeader,
    UndoRecord,
)
from trailgate.capture.oracle.dictionary import Dictionary
from trailgate.capture.oracle.dumpparser import parse_dump
from trailgate.capture.oracle.records import RBA, RedoRecord, located
from trailgate.capture.oracle.rowchanges import OnUnknown, RowBuilder
from trailgate.capture.oracle.transactions import Position, TransactionBuffer
from trailgate.errors import SourceError
from trailgate.model import TableDef, Transaction

__all__ = ["CHECKPOINT_FORMAT", "DumpCapture", "capture_oracle_dumps"]

log = logging.getLogger("trailgate.capture.oracle")

CHECKPOINT_FORMAT = "trailgate-oracle-dump-checkpoint"
_PEEK = RBA(0xFFFFFF, 0, 0)  # parse no change bodies when only the first header is wanted


def capture_oracle_dumps(dictionary_path: str | Path, dump_paths: Iterable[str | Path], *,
                         on_unknown: OnUnknown = "stop", resume: dict[str, Any] | None = None,
                         **buffer_options: Any) -> DumpCapture:
    """Committed transactions of some ``ALTER SYSTEM DUMP LOGFILE`` traces.

    The result is an iterator of ``model.Transaction``; its ``tables`` attribute holds the
    TableDefs (``SCHEMA.TABLE`` -> TableDef) the trail writer needs.  ``on_unknown`` decides
    what redo for an object or column missing from the dictionary does: ``"stop"`` raises
    SourceError, ``"skip"`` warns and writes no record for that change.
    """
    return DumpCapture(Dictionary.load(dictionary_path), dump_paths, on_unknown=on_unknown,
                       resume=resume, **buffer_options)


class DumpCapture:
    """Iterator of committed transactions over a set of dump files."""

    def __init__(self, dictionary: Dictionary, dump_paths: Iterable[str | Path], *,
                 on_unknown: OnUnknown = "stop", resume: dict[str, Any] | None = None,
                 spill_threshold: int = 16 << 20, memory_budget: int = 128 << 20,
                 spill_dir: str | None = None):
        self.dictionary = dictionary
        self.tables: dict[str, TableDef] = dictionary.tabledefs()
        self.paths = [str(p) for p in dump_paths]
        if not self.paths:
            raise SourceError("no redo dump files given")
        self.warnings: list[str] = []
        self.builder = RowBuilder(dictionary, on_unknown, warn=self._warn)
        self.buffer = TransactionBuffer(spill_threshold=spill_threshold,
                                        memory_budget=memory_budget, spill_dir=spill_dir)
        self.rolled_back: list[str] = []
        self.open_at_end: list[str] = []
        self.last_commit_scn: int | None = None
        self.records = 0  # redo records read (with their changes), for summaries
        self._read: dict[int, Position] = {}
        self._skip_through: dict[int, Position] = {}
        self._start: dict[int, RBA] = {}
        self._open_at_close: list[tuple[str, Position]] | None = None
        if resume is not None:
            self._load_checkpoint(resume)
        self._gen = self._run()

    def __iter__(self) -> DumpCapture:
        return self

    def __next__(self) -> Transaction:
        return next(self._gen)

    def close(self) -> None:
        """Stop early: remove spill files (``checkpoint()`` still answers)."""
        self._gen.close()
        self._release()

    def _release(self) -> None:
        if self._open_at_close is None:
            self._open_at_close = [(t.xid, t.start) for t in self.buffer.open.values()]
        self.buffer.close()

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """Restart state as of the last transaction handed out (JSON-serialisable)."""
        opens = self._open_at_close if self._open_at_close is not None else [
            (t.xid, t.start) for t in self.buffer.open.values()]
        threads: dict[str, Any] = {}
        for thread in sorted(set(self._read) | {start.thread for _, start in opens}):
            read = self._read.get(thread)
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
                    self._start[thread] = min(starts)
            self.last_commit_scn = doc.get("last_commit_scn")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SourceError(f"damaged Oracle dump capture checkpoint: {exc}") from None

    # -- reading ---------------------------------------------------------------------------
    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)

    def _threads(self) -> dict[int, list[str]]:
        """Dump files per redo thread, in log sequence order."""
        seen: dict[tuple[int, int], str] = {}
        for path in self.paths:
            gen = parse_dump(path, start=_PEEK)
            try:
                first = next(gen, None)
            finally:
                gen.close()
            if first is None:
                raise SourceError(f"{path}: no REDO RECORD found; is this an "
                                  f"ALTER SYSTEM DUMP LOGFILE trace?")
            key = (first.thread, first.rba.seq)
            if key in seen:
                raise SourceError(f"{path} and {seen[key]} both start in log sequence "
                                  f"{first.rba.seq} of thread {first.thread}: give each log's "
                                  f"dump once")
            seen[key] = path
        threads: dict[int, list[str]] = {}
        for (thread, _seq), path in sorted(seen.items()):
            threads.setdefault(thread, []).append(path)
        return threads

    def _stream(self, thread: int, paths: list[str]) -> Iterator[RedoRecord]:
        start = self._start.get(thread)
        prev: RedoRecord | None = None
        for path in paths:
            for rec in parse_dump(path, start=start):
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
                if start is not None and rec.rba < start:
                    continue
                yield rec

    def _run(self) -> Iterator[Transaction]:
        try:
            streams = [self._stream(t, p) for t, p in self._threads().items()]
            for rec in heapq.merge(*streams, key=lambda r: (r.scn, r.thread)):
                yield from self._record(rec)
            for txn in self.buffer.open.values():
                self.open_at_end.append(txn.xid)
            if self.open_at_end:
                log.info("%d transaction(s) still open at the end of the dumps were not "
                         "emitted: %s", len(self.open_at_end), ", ".join(self.open_at_end))
        finally:
            self._release()

    # -- one redo record -------------------------------------------------------------------
    def _record(self, rec: RedoRecord) -> Iterator[Transaction]:
        def pos(k: int, line: int) -> Position:
            return Position(rec.thread, rec.rba, k, rec.scn, rec.path, line)

        self.records += 1
        undo_xids = {c.xid for c in rec.changes if isinstance(c, UndoRecord)}
        applied = [c for c in rec.changes if isinstance(c, UndoApplied)]
        for k, c in enumerate(rec.changes, 1):
            if (isinstance(c, UndoHeader) and c.sqn) or (isinstance(c, UndoRecord) and c.begin):
                self.buffer.begin(c.xid, pos(k, c.line))
        pending: deque[UndoRecord] = deque()
        for k, c in enumerate(rec.changes, 1):
            if isinstance(c, UndoRecord):
                if c.kdo is not None:
                    pending.append(c)
            elif isinstance(c, (RowChange, DirectLoad)):
                here = pos(k, c.line)
                if applied:  # undo being applied by a rollback: a compensation, not new work
                    xid = c.xid or next((a.xid for a in applied if a.xid), "")
                    if not xid:
                        raise located(rec.path, c.line, rec.rba, "rollback compensation "
                                      "without a transaction id")
                    self.buffer.add(xid, [], here).compensated = True
                    continue
                undo = pending.popleft() if isinstance(c, RowChange) and pending else None
                xid = self._xid(rec, c, undo, undo_xids)
                self.buffer.add(xid, self.builder.build(rec, c, undo), here)
            elif isinstance(c, Commit):
                txn = self._commit(rec, c, pos(k, c.line))
                if txn is not None:
                    yield txn
        self._read[rec.thread] = pos(len(rec.changes), rec.line)

    def _xid(self, rec: RedoRecord, c: RowChange | DirectLoad, undo: UndoRecord | None,
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

    def _commit(self, rec: RedoRecord, c: Commit, here: Position) -> Transaction | None:
        done = self._skip_through.get(rec.thread)
        if done is not None and here <= done:  # emitted before the restart
            self.buffer.drop(c.xid)
            return None
        if c.rolled_back:
            if self.buffer.drop(c.xid) is not None:
                self.rolled_back.append(c.xid)
            return None
        state, txn = self.buffer.end(c.xid, rec.scn, rec.julian_time)
        if state is None or txn is None:
            self._warn(f"{rec.path}, line {c.line}, redo record RBA {rec.rba}: transaction "
                       f"{c.xid} commits but none of its redo was read (it began before the "
                       f"first dump given): not captured")
            return None
        if not state.begun:
            self._warn(f"{rec.path}, line {c.line}, redo record RBA {rec.rba}: transaction "
                       f"{c.xid} began before the first dump given ({len(txn.changes)} "
                       f"change(s) seen): not captured; give the earlier log dumps too")
            return None
        if state.compensated:
            raise located(rec.path, c.line, rec.rba, f"transaction {c.xid} commits after a "
                          f"partial rollback (ROLLBACK TO SAVEPOINT or a failed statement); "
                          f"trailgate cannot yet tell which changes were undone, so it stops "
                          f"rather than write wrong records")
        self._read[rec.thread] = here
        self.last_commit_scn = rec.scn
        if not txn.changes:
            return None
        return txn
