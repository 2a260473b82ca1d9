"""Streaming offsets over a trail: ``{"seqno": n, "rba": n}`` at transaction boundaries.

A micro-batch must never split a transaction (Replicat applies whole transactions), so the
latest offset is the end of the last *complete* transaction: the scan reads physical records
only (no column decoding) and moves the boundary when it sees a last record.  A transaction
cut off by a crash never gets one, so it never becomes part of a batch; its rewrite in the
writer's next file does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trailgate.model import OpType, TrailPosition, TransInd
from trailgate.trail._accel import speedups
from trailgate.trail.chunks import file_chunks
from trailgate.trail.naming import trail_name
from trailgate.trail.reader import TrailReader

__all__ = ["ScanState", "end_of_data", "offset_of", "position_of", "scan_boundary"]

_STARTS = (TransInd.FIRST, TransInd.ONLY)
_ENDS = (TransInd.LAST, TransInd.ONLY)
_NOT_ROWS = (OpType.RECORD_FRAGMENT, OpType.LOB)


def offset_of(position: TrailPosition) -> dict[str, int]:
    """The JSON-able offset Spark checkpoints for ``position``."""
    return {"seqno": position.seqno, "rba": position.rba}


def position_of(offset: dict[str, Any]) -> TrailPosition:
    """Undo :func:`offset_of`; a malformed offset (a checkpoint from another source) fails."""
    try:
        return TrailPosition(int(offset["seqno"]), int(offset["rba"]))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"not a trail offset: {offset!r} (expected "
                         '{"seqno": n, "rba": n})') from None


def end_of_data(trail: str) -> TrailPosition | None:
    """Where the trail's data ends right now (its last file's size), or ``None`` if it has
    no files: the fixed target of an ``availableNow`` run."""
    name = trail_name(trail)
    seqs = name.sequence_numbers()
    if not seqs:
        return None
    try:
        size = os.path.getsize(name.file(seqs[-1]))
    except OSError:
        size = 0
    return TrailPosition(seqs[-1], size)


@dataclass(frozen=True, slots=True)
class ScanState:
    """Where a boundary scan stopped, so the next scan goes on from there instead of reading
    an unfinished (possibly huge) transaction again on every trigger."""

    boundary: TrailPosition  # end of the last complete transaction found
    resume: TrailPosition  # just after the last record read
    in_txn: bool  # a transaction started after ``boundary`` is still open at ``resume``
    pending: int  # its change records so far
    in_metadata: bool  # ``resume`` is inside a fragmented table definition
    pending_marked: bool = False  # the open transaction has a record ``mark`` chose
    covered: int = 0  # change records from the scan's start to ``boundary``
    marked: bool = False  # ... and whether one of them was a record ``mark`` chose

    @staticmethod
    def carried(state: ScanState | None, start: TrailPosition
                ) -> tuple[TrailPosition, bool, int, bool, bool]:
        """Where a scan from boundary ``start`` reads on, and the open transaction it
        carries there (``in_txn``, ``pending``, ``in_metadata``, ``pending_marked``):
        ``state``'s when that scan stopped past ``start`` with ``start`` as its boundary,
        else ``start`` with nothing open."""
        if state is not None and state.boundary == start and state.resume >= start:
            return (state.resume, state.in_txn, state.pending, state.in_metadata,
                    state.pending_marked)
        return start, False, 0, False, False


def scan_boundary(
    trail: str,
    start: TrailPosition,
    *,
    limit: TrailPosition | None = None,
    max_records: int | None = None,
    state: ScanState | None = None,
    mark: Callable[[int, str], bool] | None = None,
) -> tuple[TrailPosition, int, ScanState]:
    """(end of the last complete transaction after ``start``, change records before it,
    where the scan stopped).

    ``start`` must be a transaction boundary.  Stops at ``limit`` (records ending after it
    are not considered) and once ``max_records`` change records are covered (always at least
    one transaction, so a big transaction still makes progress).  Returns ``start`` when no
    transaction is complete yet.  ``state`` from an earlier scan that found ``start`` as its
    boundary lets this one read only what came after.  ``mark(io_type, table)`` picks
    records the caller wants to know about: the returned state's ``marked`` says whether
    a complete transaction before the boundary holds one (the Replicat's PK updates,
    truncates and DDL).
    """
    boundary, covered, marked = start, 0, False
    resume, in_txn, pending, in_metadata, pending_marked = ScanState.carried(state, start)
    if speedups is not None:
        found = _scan_fast(trail, resume, limit, max_records, mark,
                           (in_txn, pending, in_metadata, pending_marked, covered, marked))
        if found is not None:
            resume, end_found, (in_txn, pending, in_metadata, pending_marked, covered,
                                marked), finished, at_end = found
            if end_found is not None:
                boundary = end_found
            if finished or (at_end and not trail_name(trail).has_file_after(resume.seqno)):
                # (at the end of the last file the reader would find nothing more)
                return boundary, covered, ScanState(boundary, resume, in_txn, pending,
                                                    in_metadata, pending_marked, covered,
                                                    marked)
    reader = TrailReader(trail, start=resume)
    for _pos, raw in reader.raw_records():
        end = reader.position
        if limit is not None and end > limit:
            break
        resume = end
        io_type = raw.io_type
        if io_type == OpType.METADATA or (in_metadata and io_type == OpType.RECORD_FRAGMENT):
            # table definitions sit between and inside transactions with TransInd ONLY
            in_metadata = bool(raw.continued)
            continue
        in_metadata = False
        if raw.trans_ind in _STARTS:
            # a transaction left open before this one was abandoned
            in_txn, pending, pending_marked = True, 0, False
        if not in_txn:
            continue  # the tail of a transaction that started before ``start``
        if io_type not in _NOT_ROWS:
            pending += 1
            if mark is not None and not pending_marked and mark(io_type, raw.table):
                pending_marked = True
        if raw.trans_ind in _ENDS:
            in_txn = False
            boundary = end
            covered += pending
            marked = marked or pending_marked
            pending, pending_marked = 0, False
            if max_records is not None and covered >= max_records:
                break
    return boundary, covered, ScanState(boundary, resume, in_txn, pending, in_metadata,
                                        pending_marked, covered, marked)


_State = tuple[bool, int, bool, bool, int, bool]


def _scan_fast(trail: str, resume: TrailPosition, limit: TrailPosition | None,
               max_records: int | None, mark: Callable[[int, str], bool] | None,
               state: _State
               ) -> tuple[TrailPosition, TrailPosition | None, _State, bool, bool] | None:
    """The scan's loop in C over the complete records of ``resume``'s file: (where it
    stopped, the last boundary found or None, the state, whether the scan is finished,
    whether it stopped at the end of what the file holds with every byte of it read as
    whole records and no limit in the file).  It stops before anything unusual — the
    file's end, a record cut short or inconsistent, the limit — and the Python loop, the
    reference, goes on from there (at the file's end: only to a later file).  None:
    nothing done."""
    assert speedups is not None
    if limit is not None and limit.seqno < resume.seqno:
        return None
    stop_at = limit.rba if limit is not None and limit.seqno == resume.seqno else None
    seq, boundary = resume.seqno, None
    types = getattr(mark, "io_types", None)
    try:
        with file_chunks(trail_name(trail).file(seq), resume.rba, stop_at,
                         encrypted=True) as chunks:  # the scan reads record headers only
            if chunks is None:
                return None  # being written, damaged or 12c+: the reader's
            resume = TrailPosition(seq, chunks.pos)
            while (buf := chunks.next()) is not None:
                out = speedups.scan_records(buf, 0, len(buf), state,
                                            -1 if max_records is None else max_records,
                                            mark, types)
                if out is None:
                    break
                n, found, covered, pending, in_txn, in_metadata, pending_marked, marked, \
                    stop = out
                state = (bool(in_txn), pending, bool(in_metadata), bool(pending_marked),
                         covered, bool(marked))
                if found >= 0:
                    boundary = TrailPosition(seq, chunks.pos + found)
                chunks.consumed(n)
                resume = TrailPosition(seq, chunks.pos)
                if stop:
                    break
                if max_records is not None and covered >= max_records:
                    return resume, boundary, state, True, False
            else:  # nothing more to read: whole records to the end, or a cut one
                if stop_at is None and not chunks.carry:
                    return resume, boundary, state, False, True
    except OSError:
        return None
    return resume, boundary, state, False, False
