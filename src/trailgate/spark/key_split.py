"""How many key partitions a PostgreSQL batch is applied as, decided once per batch.

*n* (``SPARK CONF trailgate.replicat.partitions``), or 1 for a batch with a PK update,
truncate or DDL (applied whole, in order) or with fewer than ``splitMinRecords`` change
records.  The count is recorded with the batch's range in ``dirchk/NAME/replicat.split``
before anything is applied, so a replay splits into the same key partitions and finds their
checkpoint-table rows.  Why the threshold is high: docs/replicat.md, "Driver or tasks".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from trailgate.changes.routing import Router
from trailgate.checkpoint import atomic_write_text
from trailgate.model import OpType, TrailPosition
from trailgate.spark.trail_offsets import ScanState, scan_boundary

__all__ = ["SPLIT_MIN_RECORDS", "key_partitions", "scan_hint_file", "single_marker",
           "write_scan_hint"]

#: ``splitMinRecords`` default: a batch with fewer change records is one key partition.
SPLIT_MIN_RECORDS = 500_000
#: The smallest trail record (header and trailer): a range of fewer bytes than
#: ``split_min`` of these cannot hold ``split_min`` records.
MIN_RECORD_BYTES = 46
_SINGLE_OPS = frozenset({int(OpType.PK_UPDATE), int(OpType.TRUNCATE), int(OpType.DDL)})
_DDL = int(OpType.DDL)


@dataclass(frozen=True, slots=True)
class _SingleMarker:
    router: Router
    io_types: ClassVar[frozenset[int]] = _SINGLE_OPS  # the C scan asks only these

    def __call__(self, io_type: int, table: str) -> bool:
        return io_type == _DDL or (io_type in _SINGLE_OPS
                                   and self.router.route(table) is not None)


def single_marker(router: Router) -> Callable[[int, str], bool]:
    """The ``scan_boundary`` mark for records that keep a batch whole: any DDL (the DDL
    rules decide on it, whatever it names), a PK update or truncate of a table the router
    keeps."""
    return _SingleMarker(router)


def scan_hint_file(split: str | Path) -> Path:
    """Where the source leaves what its last boundary scan found (beside ``split``)."""
    return Path(split).with_name("replicat.scan")


def write_scan_hint(split: str | Path, lower: TrailPosition, state: ScanState) -> None:
    """The source's boundary scan of ``[lower, state.boundary)``, for the driver: it then
    need not scan the batch again.  A plain write: a hint, checked against the range."""
    with contextlib.suppress(OSError):
        scan_hint_file(split).write_text(json.dumps({
            "start": [lower.seqno, lower.rba],
            "end": [state.boundary.seqno, state.boundary.rba],
            "covered": state.covered, "marked": state.marked}), "utf-8")


def _hint(split: str | Path, key: list[list[int]]) -> tuple[int, bool] | None:
    try:
        hint = json.loads(scan_hint_file(split).read_text("utf-8"))
        if [hint["start"], hint["end"]] == key:
            return int(hint["covered"]), bool(hint["marked"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def key_partitions(trail: str, lower: TrailPosition, upper: TrailPosition, *,
                   partitions: int, split_min: int, router: Router, path: str | Path | None,
                   scanned: ScanState | None = None) -> int:
    """The key-partition count of the batch ``[lower, upper)``: the recorded one, else
    decided and recorded.  ``scanned``: a boundary scan that covered exactly this range
    (else the source's hint beside ``path``, else a scan now)."""
    key = [[lower.seqno, lower.rba], [upper.seqno, upper.rba]]
    if path is not None:
        try:
            plan = json.loads(Path(path).read_text("utf-8"))
            if [plan["start"], plan["end"]] == key:
                return int(plan["partitions"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if partitions <= 1 or (lower.seqno == upper.seqno
                           and upper.rba - lower.rba < split_min * MIN_RECORD_BYTES):
        n = 1  # too few bytes to hold split_min records: no need to scan
    else:
        found = None
        if scanned is not None and scanned.boundary == upper:
            found = scanned.covered, scanned.marked
        elif path is not None:
            found = _hint(path, key)
        if found is None:
            _, _, state = scan_boundary(trail, lower, limit=upper, mark=single_marker(router))
            found = state.covered, state.marked
        covered, marked = found
        n = 1 if marked or covered < split_min else partitions
    if path is not None:
        atomic_write_text(path, json.dumps({"start": key[0], "end": key[1],
                                            "partitions": n}) + "\n")
    return n
