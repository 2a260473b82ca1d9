"""Where a PostgreSQL transaction's DDL goes among its changes.

A transaction that wrote marker rows (``CapturedTransaction.flagged``) is read twice: this
first pass gathers the DDL trigger's rows into DDLs and says before which change each one
goes — where its marker rows were, except that a CREATE TABLE AS whose rows were published
goes before the first of those rows (the trigger runs after they were inserted; the
Replicat must create the table before it fills it).  The second pass, the Extract's usual
one, writes the DDLs there and skips the marker rows.
"""

from __future__ import annotations

from collections.abc import Iterable

from trailgate.capture.postgres.rows import EncodedRun, decode_row
from trailgate.extract.ddl import DdlOut, ExtractDdl
from trailgate.model import Change

__all__ = ["plan_ddl"]


def item_table(item: object) -> str:
    """The ``schema.table`` of a captured item (a Change, a raw row or an encoded run)."""
    if type(item) is EncodedRun:
        return item.table.qualified_name
    if type(item) is tuple:
        return item[0].table.qualified_name
    return item.table  # type: ignore[attr-defined]


def plan_ddl(items: Iterable[object], ddl: ExtractDdl, io_time: int, csn: int
             ) -> tuple[dict[int, list[DdlOut]], set[int]]:
    """(item index -> the DDLs to write before that item, the indexes of the marker and
    history rows, which are not written as changes)."""
    plan: dict[int, list[DdlOut]] = {}
    markers: set[int] = set()
    first_of: dict[str, int] = {}  # each table's first item
    start: int | None = None  # the first row of the DDL being gathered
    index = -1
    for index, item in enumerate(items):
        name = item_table(item)
        if ddl.is_ddl_table(name):
            markers.add(index)
            if start is None:
                start = index
            change = decode_row(item, io_time) if type(item) is tuple else item
            assert isinstance(change, Change)
            ddl.add(change, item[0].table if type(item) is tuple else None)
            continue
        if start is not None:
            plan.setdefault(start, []).extend(ddl.take(csn))
            start = None
        first_of.setdefault(name, index)
    if start is not None:
        plan.setdefault(start, []).extend(ddl.take(csn))
    for at, outs in list(plan.items()):
        for out in list(outs):
            created = out.created
            if created is not None and first_of.get(created, at) < at:
                outs.remove(out)
                plan.setdefault(first_of[created], []).insert(0, out)
    return {at: outs for at, outs in plan.items() if outs}, markers
