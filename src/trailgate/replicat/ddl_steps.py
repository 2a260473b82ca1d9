"""A stream-apply step cut at its DDL transactions, so the DML around them stays set-based.

The C set planner gives up on a range that holds a DDL record, and the range is then read
and applied change by change: one DDL would slow a whole step of up to ``CHUNK_RECORDS``
changes (a backlog is applied in such steps).  Cut at the transactions that hold DDL, the
step becomes several: the runs of DML between them planned from the bytes as usual, each
DDL transaction alone on the change-by-change path.  Each part is a step of its own (its
own target transaction moving the stream row), so exactly-once is kept part by part.
"""

from __future__ import annotations

import bisect

from trailgate.model import OpType, TrailPosition, TransInd
from trailgate.replicat.range_apply import CLEAN_SCAN, read_span
from trailgate.trail._accel import speedups
from trailgate.trail.reader import TrailReader

__all__ = ["DDL_IO_TYPES", "ddl_mark", "ddl_steps"]

#: The record types ``ddl_mark`` asks the C boundary scan about.
DDL_IO_TYPES = frozenset({int(OpType.DDL)})
_STARTS = (TransInd.FIRST, TransInd.ONLY)
_ENDS = (TransInd.LAST, TransInd.ONLY)


class _DdlMark:
    """The ``scan_boundary`` mark of a DDL record (whatever table it names)."""

    io_types = DDL_IO_TYPES

    def __call__(self, io_type: int, table: str) -> bool:
        return io_type == OpType.DDL


ddl_mark = _DdlMark()


def ddl_steps(trail: str, lower: TrailPosition, upper: TrailPosition
              ) -> list[tuple[TrailPosition, TrailPosition]]:
    """``[lower, upper)`` (whole transactions) as consecutive steps: each transaction that
    holds a DDL record a step of its own, from the end of the transaction before it (the
    definitions written between transactions go with it), the transactions between them
    steps as they come."""
    spans = _ddl_spans_fast(trail, lower, upper)
    if spans is None:
        return _ddl_steps_python(trail, lower, upper)
    steps: list[tuple[TrailPosition, TrailPosition]] = []
    cut = lower
    for start, end in spans:
        if start > cut:
            steps.append((cut, start))
        steps.append((start, end))
        cut = end
    if upper > cut:
        steps.append((cut, upper))
    return steps


def _ddl_spans_fast(trail: str, lower: TrailPosition, upper: TrailPosition
                    ) -> list[tuple[TrailPosition, TrailPosition]] | None:
    """The DDL transactions of ``[lower, upper)`` (from the end of the transaction before
    each), found by the C boundary scan one transaction at a time over the range's bytes;
    None when the C scan is not there or the range is not plain 11.2 records (the Python
    loop, the reference, then finds them)."""
    if speedups is None:
        return None
    read = read_span(trail, lower, upper)
    if read is None:
        return None
    data, segments = read
    offsets = [s.offset for s in segments]

    def position(offset: int) -> TrailPosition:  # the end of a file, not the next's start
        if offset == 0:
            return lower  # before the first record: the range's own start
        seg = segments[max(0, bisect.bisect_left(offsets, offset) - 1)]
        return TrailPosition(seg.seqno, seg.rba + offset - seg.offset)

    spans: list[tuple[TrailPosition, TrailPosition]] = []
    state = CLEAN_SCAN
    pos = previous = 0
    while pos < len(data):
        out = speedups.scan_records(data, pos, len(data), state, 1, ddl_mark, DDL_IO_TYPES)
        if out is None:
            return None
        n, found, _covered, pending, in_txn, in_metadata, pending_marked, marked, stop = out
        if stop:
            return None
        if found < 0:
            break
        if marked:
            spans.append((position(previous), position(found)))
        previous, pos = found, n
        state = (bool(in_txn), pending, bool(in_metadata), bool(pending_marked), 0, False)
    return spans


def _ddl_steps_python(trail: str, lower: TrailPosition, upper: TrailPosition
                      ) -> list[tuple[TrailPosition, TrailPosition]]:
    steps: list[tuple[TrailPosition, TrailPosition]] = []
    cut = previous = lower  # the last step's end; the last complete transaction's end
    in_txn = in_metadata = has_ddl = False
    reader = TrailReader(trail, start=lower)
    for _pos, raw in reader.raw_records():
        end = reader.position
        if end > upper:
            break
        io_type = raw.io_type
        if io_type == OpType.METADATA or (in_metadata and io_type == OpType.RECORD_FRAGMENT):
            in_metadata = bool(raw.continued)  # definitions sit between transactions
            continue
        in_metadata = False
        if raw.trans_ind in _STARTS:
            in_txn, has_ddl = True, False
        if not in_txn:
            continue
        has_ddl = has_ddl or io_type == OpType.DDL
        if raw.trans_ind in _ENDS:
            in_txn = False
            if has_ddl:
                if previous > cut:
                    steps.append((cut, previous))
                steps.append((previous, end))
                cut = end
            previous = end
    if upper > cut:
        steps.append((cut, upper))
    return steps
