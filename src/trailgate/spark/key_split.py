"""How many key partitions a PostgreSQL batch is applied as, decided once per batch.

*n* (``SPARK CONF trailgate.replicat.partitions``), or 1 when the batch holds a PK update,
truncate or DDL of a kept table (it must be applied whole, in trail order) or fewer change
records than ``splitMinRecords``.  One key partition is read and applied by the driver;
several by Spark tasks, each reading the whole range and keeping its keys.  Measured on two
cores (bench apply_pg), the driver is faster at every batch size: a task re-reads what the
others read, and its rows cross the JVM twice.  So the default threshold is above the
default batch bound (``maxRecordsPerTrigger``, 100,000): only a single larger transaction
is split, which also spreads its memory.  Lower it where the target rather than this
process is the limit (a remote database: parallel connections overlap their waits).

Deciding needs the batch's record count and whether it holds such a change: the source's
boundary scan found both and leaves them in ``replicat.scan`` (a hint for that range);
without it the range is scanned again.  The count is recorded with the batch's range in
``dirchk/NAME/replicat.split`` before anything is applied, and a batch planned again — a
replay after a crash, even with other settings — takes the recorded count, so it splits
into exactly the same key partitions as before (the checkpoint table's rows name them).
Without a record nothing of the batch was applied, so deciding anew is safe.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

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


def single_marker(router: Router) -> Callable[[int, str], bool]:
    """The ``scan_boundary`` mark for records that keep a batch whole: any DDL, a PK
    update or truncate of a table the router keeps."""

    def single(io_type: int, table: str) -> bool:
        # a DDL record keeps its batch whole whatever it names (the DDL rules decide on it)
        return io_type == _DDL or (io_type in _SINGLE_OPS and router.route(table) is not None)
    single.io_types = _SINGLE_OPS  # type: ignore[attr-defined]  # the C scan asks only these
    return single


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
