"""A stream-apply step cut at its DDL transactions, so the DML around them stays set-based.

The C set planner gives up on a range that holds a DDL record, and the range is then read
and applied change by change: one DDL would slow a whole step of up to ``CHUNK_RECORDS``
changes (a backlog is applied in such steps).  Cut at the transactions that hold DDL, the
step becomes several: the runs of DML between them planned from the bytes as usual, each
DDL transaction alone on the change-by-change path.  Each part is a step of its own (its
own target transaction moving the stream row), so exactly-once is kept part by part.
"""

from __future__ import annotations

from trailgate.model import OpType, TrailPosition, TransInd
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
