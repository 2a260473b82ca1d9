"""A PostgreSQL batch applied on the driver from its trail bytes, without a ``Change`` per
row: the fast path of :func:`~trailgate.replicat.worker.apply_task_rows` under BATCHSQL.

The batch's range (one trail file) is read as bytes and handed to
:func:`trailgate.apply.spanplan.plan_span` with the table definitions in effect, the router
and the MAPs; its set plans are applied as one transaction with the batch's checkpoint-table
row, exactly as the Python path would apply them.  Whenever that path would do anything
else — a change C does not take on, a collision the set plan meets in the target, a small
batch — this returns None having committed nothing, and the caller reads and applies the
range the usual way, so its behaviour and messages stay the reference.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from trailgate.apply.mapping import Mapper
from trailgate.apply.postgres import SET_MIN_CHANGES, PgApplier
from trailgate.apply.records import ApplyResult
from trailgate.apply.spanplan import SpanResult, available, plan_span, table_spec
from trailgate.errors import TrailgateError
from trailgate.model import TableDef, TrailPosition
from trailgate.replicat.rows import (
    Router,
    definitions_before,
    julian_to_iso,
    remember_definitions,
)
from trailgate.trail.header import decode_file_header
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.naming import TrailName

__all__ = ["apply_span", "plan_range", "position_row"]


def _read(trail: str, lower: TrailPosition, upper: TrailPosition) -> tuple[bytes, int] | None:
    """The range's bytes and the RBA they start at (after the file header); None when the
    range spans files or the file is not as expected (the reader then says why)."""
    if lower.seqno != upper.seqno or upper.rba <= lower.rba:
        return None
    try:
        with open(TrailName(trail).file(lower.seqno), "rb") as f:
            start = lower.rba
            if start == 0:
                start = decode_file_header(f.read(0xFFFF)).length
                if start >= upper.rba:
                    return None
            f.seek(start)
            data = f.read(upper.rba - start)
    except (OSError, ValueError):
        return None
    return (data, start) if len(data) == upper.rba - start else None


def plan_range(mapper: Mapper, trail: str, lower: TrailPosition, upper: TrailPosition,
               router: Router) -> tuple[SpanResult, int] | None:
    """The set plans of ``[lower, upper)`` (whole transactions, one file) and the RBA the
    span's offsets count from; None when the Python path must read the range."""
    if not available:
        return None
    read = _read(trail, lower, upper)
    if read is None:
        return None
    data, base = read
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
        spec = table_spec(0, mapping, used[name])
        return False if spec is None else (mapping, spec)

    span = plan_span(data, 0, len(data), resolve, on_metadata)
    if span is None:
        return None
    remember_definitions(trail, upper, defs)  # the next batch starts there
    return span, base


def position_row(upper: TrailPosition, span: SpanResult) -> str:
    """The batch's position row (JSON), as ``TrailRange.position(True)`` gives it."""
    info: dict[str, object] = {"seqno": upper.seqno, "rba": upper.rba}
    if span.last_commit is not None:
        commit, csn, xid = span.last_commit
        info["read_time"] = julian_to_iso(commit)
        info["csn"], info["xid"] = csn, xid
    return json.dumps(info)


def apply_span(applier: PgApplier, batch_id: int, trail: str, lower: TrailPosition,
               upper: TrailPosition, router: Router) -> tuple[ApplyResult | None, str] | None:
    """Apply ``[lower, upper)`` (whole transactions) as key partition 0 of ``batch_id``:
    (the result, None if nothing was kept; the position row's JSON), or None — nothing
    done — when the Python path must apply the range."""
    if not applier.batchsql or applier.conn.info.encoding != "utf-8":
        return None
    planned = plan_range(applier.mapper, trail, lower, upper, router)
    if planned is None:
        return None
    span, base = planned
    if span.kept and span.mapped < SET_MIN_CHANGES:
        return None
    position = position_row(upper, span)
    if not span.kept:
        return None, position
    last = str(TrailPosition(lower.seqno, base + span.last_kept))
    result = applier.apply_plans(batch_id, 0, span.plans, last)
    return None if result is None else (result, position)
