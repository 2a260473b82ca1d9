"""The Extract's half of an incremental snapshot: chunks into the trail, in the log's order.

Each chunk arrives inside the WAL (a transactional logical message of the transaction that
read it) and becomes INSERT records there.  DBLog's window, made exact by transaction ids:
a chunk row whose key a transaction invisible to the chunk's snapshot touched is dropped
and read again, since the log's version is newer.  Records of the table meanwhile carry
``TG_SNAPSHOT`` and are applied with collision handling.  docs/instantiation.md.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from trailgate.apply.mapping import SNAPSHOT_TOKEN
from trailgate.capture.postgres.types import classify, pg_text_from_trail, trail_from_pg_text
from trailgate.changes.change_rows import tabledef_from_json, tabledef_to_json
from trailgate.model import Change, OpType, TableDef

__all__ = ["PREFIX", "TOKEN", "SnapshotTracker", "TableSnapshot", "active", "register",
           "visible"]

#: Prefix of the logical messages that carry snapshot chunks.
PREFIX = "trailgate.snapshot"
#: The user token on every record of a table while its snapshot runs.
TOKEN = SNAPSHOT_TOKEN
_MASK32 = 0xFFFFFFFF
#: The tracker of each Extract running in this process, by (home, group).
_ACTIVE: dict[tuple[str, str], SnapshotTracker] = {}


def register(home: str, group: str, tracker: SnapshotTracker | None) -> None:
    """Make ``tracker`` the one the driver's stream of ``group`` uses (None: forget it)."""
    if tracker is None:
        _ACTIVE.pop((home, group), None)
    else:
        _ACTIVE[(home, group)] = tracker


def active(home: str, group: str) -> SnapshotTracker | None:
    return _ACTIVE.get((home, group))


def _xid8(xid32: int, near: int) -> int:
    """A 32-bit xid as the 64-bit xid nearest ``near`` (pgoutput sends 32 bits)."""
    base = (near & ~_MASK32) | xid32
    if base > near + (1 << 31):
        base -= 1 << 32
    elif base < near - (1 << 31):
        base += 1 << 32
    return base


def visible(xid32: int, snapshot: str) -> bool:
    """Whether a committed transaction is visible to ``snapshot`` (``xmin:xmax:xip,…``)."""
    xmin_s, xmax_s, xip_s = snapshot.split(":")
    xmax = int(xmax_s)
    x = _xid8(xid32, xmax)
    if x < int(xmin_s):
        return True
    if x >= xmax:
        return False
    return str(x) not in set(xip_s.split(",")) if xip_s else True


@dataclass(slots=True)
class TableSnapshot:
    """One table's snapshot, as the checkpoint keeps it (``last``/``max``: key texts)."""

    table: str
    definition: TableDef
    key: list[str]
    resync: bool = False
    last: list[str] | None = None
    max: list[str] | None = None
    requeue: list[list[str]] = field(default_factory=list)
    chunks: int = 0
    rows: int = 0
    reread: int = 0
    exhausted: bool = False  # every key range was read; only re-reads may be left
    phase: str = "tracking"  # tracking | done

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "def": tabledef_to_json(self.definition),
                "key": self.key, "resync": self.resync, "last": self.last, "max": self.max,
                "requeue": self.requeue, "chunks": self.chunks, "rows": self.rows,
                "reread": self.reread, "exhausted": self.exhausted, "phase": self.phase}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableSnapshot:
        return cls(data["table"], tabledef_from_json(data["def"]), list(data["key"]),
                   bool(data.get("resync")), data.get("last"), data.get("max"),
                   [list(k) for k in data.get("requeue") or []], int(data.get("chunks", 0)),
                   int(data.get("rows", 0)), int(data.get("reread", 0)),
                   bool(data.get("exhausted")), str(data.get("phase", "tracking")))


class SnapshotTracker:
    """The snapshots of one Extract run (module docstring).  ``run`` identifies this run's
    chunk messages: those of a run before a restart are left out (the runner reads them
    again from the checkpoint's state).  Thread-safe: the runner reads its state."""

    def __init__(self, run: str, state: list[dict[str, Any]] | None = None, *,
                 live: bool = True):
        self.run = run
        self.live = live  # False in a Spark task: mark records, leave chunks out
        self.tables: dict[str, TableSnapshot] = {}
        for data in state or []:
            snap = TableSnapshot.from_json(data)
            if snap.phase != "done":
                self.tables[snap.table] = snap
        self._touched: dict[str, dict[tuple[bytes | None, ...], set[int]]] = {}
        self._indexes: dict[str, list[int]] = {}
        self._cond = threading.Condition()
        self.attached = False
        self.on_change: Any = None  # called when the set of tracked tables changes

    # -- what the Extract asks ---------------------------------------------------------
    def tracks(self, table: str) -> bool:
        return table in self.tables

    def state(self) -> list[dict[str, Any]]:
        with self._cond:
            return [s.to_json() for s in self.tables.values()]

    def snapshot(self, table: str) -> TableSnapshot | None:
        with self._cond:
            found = self.tables.get(table)
            return None if found is None else TableSnapshot.from_json(found.to_json())

    def wait(self, predicate: Any, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    # -- the log's changes -------------------------------------------------------------
    def observe(self, change: Change, xid: str, table: TableDef | None) -> Change:
        """A change of a tracked table: remember its keys, mark it for the Replicat."""
        snap = self.tables.get(change.table)
        if snap is None:
            return change
        if self.live and change.op.is_row_change and change.op is not OpType.TRUNCATE:
            touched = self._touched.setdefault(change.table, {})
            idx = self._key_indexes(snap)
            x = int(xid)
            for image in (change.before, change.after):
                if image and all(i in image for i in idx):
                    touched.setdefault(tuple(image[i] for i in idx), set()).add(x)
            if change.op is OpType.PK_UPDATE and change.after and change.before:
                old = tuple(change.before.get(i) for i in idx)
                if not self._loaded(snap, old):  # the row may be missing on the target,
                    with self._cond:              # so the update was not applied there
                        self._queue(snap, tuple(change.after.get(i) for i in idx))
        change.tokens = {**(change.tokens or {}), TOKEN: "log"}
        return change

    def _key_indexes(self, snap: TableSnapshot) -> list[int]:
        found = self._indexes.get(snap.table)
        if found is None:
            found = [snap.definition.column(k).index for k in snap.key]
            self._indexes[snap.table] = found
        return found

    def _loaded(self, snap: TableSnapshot, key: tuple[bytes | None, ...]) -> bool:
        """Whether the row of ``key`` is on the target already: its range was read and it
        waits for no re-read.  Known for integer keys only (else: not known, False)."""
        if snap.last is None or any(v is None for v in key):
            return False
        cols = snap.definition.columns
        idx = self._key_indexes(snap)
        if any(cols[i].source_type not in ("smallint", "integer", "bigint") for i in idx):
            return False
        text = [v.decode() for v in key]  # type: ignore[union-attr]
        if text in snap.requeue:
            return False
        return tuple(int(v) for v in text) <= tuple(int(v) for v in snap.last)

    def _queue(self, snap: TableSnapshot, key: tuple[bytes | None, ...]) -> None:
        if any(v is None for v in key):
            return
        cols = snap.definition.columns
        idx = self._key_indexes(snap)
        text = [pg_text_from_trail(v, cols[i].source_type)  # type: ignore[arg-type]
                for v, i in zip(key, idx, strict=True)]
        if text not in snap.requeue:
            snap.requeue.append(text)
            snap.reread += 1

    # -- the runner's messages ---------------------------------------------------------
    def message(self, content: bytes, xid: str, csn: int) -> list[Change]:
        """A ``trailgate.snapshot`` message of a transaction: the records it becomes."""
        data = json.loads(content)
        if not self.live or data.get("run") != self.run:
            return []  # an earlier run's: its work is redone from the checkpoint's state
        op, table = data.get("op"), data.get("table")
        with self._cond:
            try:
                if op == "start":
                    return self._start(data)
                snap = self.tables.get(table)
                if snap is None:
                    return []
                if op == "chunk":
                    return self._chunk(snap, data)
                if op == "done":
                    if snap.requeue:  # keys were queued after the runner looked: go on
                        return []
                    snap.phase = "done"
                    del self.tables[table]
                    self._touched.pop(table, None)
                    if self.on_change is not None:
                        self.on_change()
                return []
            finally:
                self._cond.notify_all()

    def _start(self, data: dict[str, Any]) -> list[Change]:
        snap = TableSnapshot(data["table"], tabledef_from_json(data["def"]), list(data["key"]),
                             bool(data.get("resync")))
        self.tables[snap.table] = snap
        self._touched[snap.table] = {}
        if self.on_change is not None:
            self.on_change()
        if snap.resync:  # the target is emptied first; the chunks fill it again
            return [Change(OpType.TRUNCATE, snap.table, tokens={TOKEN: "resync"})]
        return []

    def _chunk(self, snap: TableSnapshot, data: dict[str, Any]) -> list[Change]:
        n = int(data["n"])
        if n <= snap.chunks:
            return []  # seen already (a stream opened again)
        snapshot = str(data["snapshot"])
        cols = snap.definition.columns
        types = [classify(c.source_type) for c in cols]
        idx = self._key_indexes(snap)
        touched = self._touched.get(snap.table, {})
        out = []
        requeued = data.get("kind") == "requeue"
        if requeued:
            wanted = {tuple(k) for k in data.get("keys") or []}
            snap.requeue = [k for k in snap.requeue if tuple(k) not in wanted]
        for row in data.get("rows") or []:
            after = {i: None if v is None else trail_from_pg_text(v, types[i])
                     for i, v in enumerate(row)}
            key = tuple(after[i] for i in idx)
            xids = touched.get(key)
            if xids and not all(visible(x & _MASK32, snapshot) for x in xids):
                self._queue(snap, key)  # the log is ahead of this row: read it again
                continue
            out.append(Change(OpType.INSERT, snap.table, after=after,
                              tokens={TOKEN: "chunk"}))
        if not requeued:
            snap.last = data.get("last") or snap.last
            if data.get("max") is not None:
                snap.max = data["max"]
            snap.exhausted = bool(data.get("exhausted"))
        snap.chunks = n
        snap.rows += len(out)
        self._touched[snap.table] = {}  # the next chunk's window begins after this one
        return out
