"""One trail range applied to PostgreSQL on the driver, as one target transaction.

Both driver paths use it: each step of the stream apply and a micro-batch of one key
partition.  Under BATCHSQL the range is first planned from its trail bytes by the C set
planner (:mod:`trailgate.apply.spanplan`); whenever that would differ from the Python path
(a change it does not take, a collision, a small batch) it commits nothing and the range is
read into changes and applied the usual way, so behaviour and messages stay the Python
path's.
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass, replace
from typing import Any

from trailgate.apply.mapping import Mapper, TableMapping
from trailgate.apply.postgres import PgApplier
from trailgate.apply.records import ApplyResult
from trailgate.apply.spanplan import SpanResult, available, plan_span, table_spec
from trailgate.changes.ranges import definitions_before, julian_to_iso, remember_definitions
from trailgate.changes.routing import Router
from trailgate.errors import TrailgateError
from trailgate.model import TableDef, TrailPosition
from trailgate.replicat.csn_filter import BatchFilter
from trailgate.replicat.task_rows import read_task_rows
from trailgate.trail._accel import speedups
from trailgate.trail.header import read_file_header
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.naming import trail_name
from trailgate.trail.reader import opener_for

__all__ = ["SPAN_MIN_CHANGES", "Segment", "apply_range", "apply_span", "plan_range",
           "position_row", "read_span"]

#: A range planned from its bytes is applied set-based from this many mapped changes: its
#: transaction is two round trips however small (one pipeline, then the COMMIT), where the
#: reading path's is three and Python per change; a collision still hands it back.
SPAN_MIN_CHANGES = 1


@dataclass(frozen=True, slots=True)
class Segment:
    """One file's part of a range: where its bytes start in the span, and in the file."""

    offset: int
    seqno: int
    rba: int


#: A scan's state at a file's first record (a transaction may go on in the next file).
CLEAN_SCAN = (False, 0, False, False, 0, False)


def read_span(trail: str, lower: TrailPosition, upper: TrailPosition
          ) -> tuple[bytes, list[Segment]] | None:
    """The range's records end to end (file headers left out) and where each file's part
    starts; None when a file is not as expected (the Python reader then says why): a file
    the range leaves must end with a whole record (a transaction may go on in the next
    file; one a crashed writer left open is met by a new start, which the planner gives
    back)."""
    if upper <= lower or speedups is None:
        return None
    name = trail_name(trail)
    parts: list[bytes] = []
    segments: list[Segment] = []
    offset = 0
    try:
        for seq in range(lower.seqno, upper.seqno + 1):
            with open(name.file(seq), "rb") as f:
                start = lower.rba if seq == lower.seqno else 0
                header = read_file_header(f)
                if header.compatibility > 3:
                    return None  # a 12c+ file: the Python path reads its format
                start = start or header.length
                # an encrypted file's records are opened (same length, same offsets); a
                # missing key or a refused record: the Python reader says which, and where
                opener = opener_for(header, name.file(seq))
                stop = upper.rba if seq == upper.seqno else os.fstat(f.fileno()).st_size
                if stop < start:
                    return None
                f.seek(start)
                data = f.read(stop - start)
            if len(data) != stop - start:
                return None
            if opener is not None:
                data = opener.open_all(data)
            if seq != upper.seqno:
                scanned = speedups.scan_records(data, 0, len(data), CLEAN_SCAN, -1, None, None)
                if scanned is None:
                    return None
                end, _, _, _, _, in_metadata, _, _, broken = scanned
                if end != len(data) or in_metadata or broken:
                    return None  # a record cut by a crash: the reader's business
            segments.append(Segment(offset, seq, start))
            parts.append(data)
            offset += len(data)
    except (OSError, ValueError, TrailgateError):
        return None
    return b"".join(parts), segments


def _position(segments: list[Segment], offset: int) -> TrailPosition:
    """The trail position of byte ``offset`` of a span."""
    seg = segments[bisect.bisect_right([s.offset for s in segments], offset) - 1]
    return TrailPosition(seg.seqno, seg.rba + offset - seg.offset)


def plan_range(mapper: Mapper, trail: str, lower: TrailPosition, upper: TrailPosition,
               router: Router, read: tuple[bytes, list[Segment]] | None = None
               ) -> tuple[SpanResult, list[Segment]] | None:
    """The set plans of ``[lower, upper)`` (whole transactions) and the span's segments
    (its offsets to trail positions); None when the Python path must read the range.
    ``read``: the range's bytes as :func:`read_span` gives them, when the caller has them."""
    if not available:
        return None
    read = read or read_span(trail, lower, upper)
    if read is None:
        return None
    data, segments = read
    defs = dict(definitions_before(trail, lower))
    used: dict[str, TableDef] = {}

    def on_metadata(blob: bytes) -> bool:
        try:
            table = decode_tabledef(blob)
        except ValueError:
            return False
        name = table.qualified_name
        if name in used and used[name] != table:
            return False  # redefined inside the batch: the Python path keeps both
        defs[name] = table
        return True

    def resolve(name: str) -> Any:
        routed = router.route(name)
        if routed is None:
            return None
        table = defs.get(name)
        if table is None:
            return False
        used[name] = table
        if routed != name:
            schema, _, tname = routed.rpartition(".")
            table = replace(table, schema=schema, name=tname)
        try:
            mapping = mapper.mapping(routed, table)
        except TrailgateError:
            return False  # the Python path raises it where it belongs
        if mapping is None:
            return True
        spec = _table_spec(mapping, used[name])
        return False if spec is None else (mapping, spec)

    span = plan_span(data, 0, len(data), resolve, on_metadata)
    if span is None:
        return None
    if len(segments) == 1:  # the next batch starts there (definitions are per file)
        remember_definitions(trail, upper, defs)
    return span, segments


#: ``table_spec``'s answers by mapping and source definition: a live apply plans the same
#: tables step after step with the same objects (a DDL makes new ones).
_SPECS: dict[tuple[int, int], tuple[TableMapping, TableDef, tuple[Any, ...] | None]] = {}
_SPECS_MAX = 256


def _table_spec(mapping: TableMapping, table: TableDef) -> tuple[Any, ...] | None:
    """``table_spec(0, mapping, table)``, made once for the same two objects."""
    key = (id(mapping), id(table))
    known = _SPECS.get(key)  # it holds both objects: their ids are not reused meanwhile
    if known is not None:
        return known[2]
    spec = table_spec(0, mapping, table)
    if len(_SPECS) >= _SPECS_MAX:
        _SPECS.clear()
    _SPECS[key] = (mapping, table, spec)
    return spec


def position_row(upper: TrailPosition, span: SpanResult) -> str:
    """The batch's position row (JSON), as ``TrailRange.position(True)`` gives it."""
    info: dict[str, object] = {"seqno": upper.seqno, "rba": upper.rba}
    if span.last_commit is not None:
        commit, csn, xid = span.last_commit
        info["read_time"] = julian_to_iso(commit)
        info["csn"], info["xid"] = csn, xid
    return json.dumps(info)


def apply_span(applier: PgApplier, batch_id: int, trail: str, lower: TrailPosition,
               upper: TrailPosition, router: Router, *,
               advance: tuple[str, str] | None = None,
               read: tuple[bytes, list[Segment]] | None = None
               ) -> tuple[ApplyResult | None, str] | None:
    """Apply ``[lower, upper)`` (whole transactions) as key partition 0 of ``batch_id``
    (or as the streamed apply's next step: ``advance``, see ``PgApplier.apply_plans``):
    (the result, None if nothing was kept; the position row's JSON), or None — nothing
    done — when the Python path must apply the range."""
    if not applier.batchsql or applier.conn.info.encoding != "utf-8":
        return None
    planned = plan_range(applier.mapper, trail, lower, upper, router, read)
    if planned is None:
        return None
    span, segments = planned
    if span.kept and span.mapped < SPAN_MIN_CHANGES:
        return None
    position = position_row(upper, span)
    if not span.kept:
        return None, position
    last = str(_position(segments, span.last_kept))
    result = applier.apply_plans(batch_id, 0, span.plans, last, advance=advance)
    return None if result is None else (result, position)


def apply_range(applier: PgApplier, batch_id: int, trail: str, lower: TrailPosition,
                upper: TrailPosition, router: Router, *, advance: tuple[str, str] | None = None,
                csn_filter: BatchFilter | None = None, records: int | None = None,
                read: tuple[bytes, list[Segment]] | None = None
                ) -> tuple[ApplyResult | None, str]:
    """Apply ``[lower, upper)`` (whole transactions) as key partition 0 of ``batch_id``, or as
    the stream apply's next step (``advance``): (the result, None when nothing in the range
    is mapped; the range's position row JSON).  Set-based from the bytes when it can be,
    else read and applied change by change; ``csn_filter`` (ATCSN/AFTERCSN) always reads.
    ``records``, when the caller counted the range's change records: fewer than set-based
    apply takes go straight to the reading path, without planning first.  ``read``: the
    range's bytes, when the caller read them already (:func:`read_span`'s result)."""
    if csn_filter is None and (records is None or records >= SPAN_MIN_CHANGES):
        done = apply_span(applier, batch_id, trail, lower, upper, router, advance=advance,
                          read=read)
        if done is not None:
            return done
    task = read_task_rows(trail, lower, upper, router)
    if csn_filter is not None:
        csn_filter.task(task)
    changes = task.changes.get(0, [])
    result = (applier.apply_partition(batch_id, 0, changes,
                                      task.definitions.for_changes(changes), advance=advance,
                                      segments=task.definitions.segments(changes))
              if changes else None)
    return result, task.positions[-1]
