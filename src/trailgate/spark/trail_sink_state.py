"""The trail sink's memory between micro-batches, and recovery from the trail itself.

Each batch is written by a new task, often in another process, so a small state file
(written atomically after the trail's fsync) says which file the run writes, its durable
length, the definitions in it and the last transaction; the run's next batch resumes that
file, anything else starts a new one (seed 002).  The state is never trusted for what the
trail holds after a crash: a run's first batch scans the trail for its last complete
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.changes.change_rows import tabledef_from_json, tabledef_to_json
from trailgate.checkpoint import atomic_write_text, exclusive_lock
from trailgate.model import OpType, TableDef, TrailPosition, TransInd
from trailgate.trail.reader import TrailReader

__all__ = [
    "LastWritten",
    "SinkState",
    "find_last_transaction",
    "load_state",
    "locked",
    "save_state",
]

_STARTS = (TransInd.FIRST, TransInd.ONLY)
_ENDS = (TransInd.LAST, TransInd.ONLY)


@dataclass(slots=True)
class LastWritten:
    """The last complete transaction in the trail: its CSN and every XID committed at that
    CSN (a CSN may be shared), which is what replayed input is compared with."""

    csn: int | None = None
    xids: set[str] = field(default_factory=set)

    def covers(self, csn: int, xid: str) -> bool:
        """True if transaction (``csn``, ``xid``) is already in the trail."""
        if self.csn is None:
            return False
        return csn < self.csn or (csn == self.csn and xid in self.xids)

    def add(self, csn: int, xid: str) -> None:
        if self.csn is None or csn > self.csn:
            self.csn, self.xids = csn, {xid}
        elif csn == self.csn:
            self.xids.add(xid)


@dataclass(slots=True)
class SinkState:
    """What the previous micro-batch left: see the module docstring."""

    run_id: str
    trail: str
    seqno: int
    length: int
    tables: dict[str, TableDef]
    last: LastWritten
    last_io_time: int | None = None
    batch_id: int | None = None

    @property
    def position(self) -> TrailPosition:
        return TrailPosition(self.seqno, self.length)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1, "run_id": self.run_id, "trail": self.trail, "seqno": self.seqno,
            "length": self.length, "last_csn": self.last.csn,
            "last_xids": sorted(self.last.xids), "last_io_time": self.last_io_time,
            "batch_id": self.batch_id,
            "tables": {name: json.loads(tabledef_to_json(t)) for name, t in
                       self.tables.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SinkState:
        return cls(
            run_id=str(data["run_id"]), trail=str(data["trail"]), seqno=int(data["seqno"]),
            length=int(data["length"]),
            tables={n: tabledef_from_json(t) for n, t in data["tables"].items()},
            last=LastWritten(data.get("last_csn"), set(data.get("last_xids") or ())),
            last_io_time=data.get("last_io_time"), batch_id=data.get("batch_id"))


def load_state(path: Path) -> SinkState | None:
    """The state, or ``None`` when there is none or it cannot be read (then the trail is
    scanned instead: the state is an optimisation, never the only record)."""
    try:
        return SinkState.from_json(json.loads(path.read_text("utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_state(path: Path, state: SinkState) -> None:
    """Replace the state atomically (the trail data it describes is already fsynced)."""
    atomic_write_text(path, json.dumps(state.to_json(), separators=(",", ":")) + "\n")


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed): one writer per trail at a
    time, even when a killed run's last task is still finishing."""
    with exclusive_lock(path):
        yield


def find_last_transaction(trail: str | Path, start: TrailPosition | None,
                          known: LastWritten | None = None) -> tuple[LastWritten,
                                                                      TrailPosition | None]:
    """The last complete transaction from ``start`` (a transaction boundary, ``None``: the
    trail's first file) to the end of the trail, and where it ends.

    ``known`` is what was last written before ``start``; it is the answer when no complete
    transaction follows.  A transaction cut off by a crash has no last record and does not
    count: its writer writes it again, whole.
    """
    last = LastWritten(known.csn, set(known.xids)) if known else LastWritten()
    end: TrailPosition | None = None
    reader = TrailReader(trail, start=start)
    current: tuple[int | None, str | None] | None = None
    in_metadata = False
    for _pos, raw in reader.raw_records():
        io_type = raw.io_type
        if io_type == OpType.METADATA or (in_metadata and io_type == OpType.RECORD_FRAGMENT):
            in_metadata = bool(raw.continued)
            continue
        in_metadata = False
        if raw.trans_ind in _STARTS:
            current = (raw.csn, raw.xid)
        if current is None:
            continue  # the tail of a transaction that began before ``start``
        if raw.trans_ind in _ENDS:
            csn, xid = current
            if csn is not None:
                last.add(int(csn), xid or "")
            end = reader.position
            current = None
    return last, end
