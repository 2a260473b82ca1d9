"""Cutting one big trail file into several Spark partitions at transaction boundaries.

A file is one partition unless it is bigger than the split size: then the driver's boundary
scan (record headers only, in C) finds the last transaction boundary before each multiple
of the split size, so every piece still holds whole transactions and several cores share
one big file.  A piece that starts inside a file gets the table definitions written before
it in that file (each file carries the definitions of the tables it uses), so its columns
have their names as if it were read from the file's start.
"""

from __future__ import annotations

import os

from trailgate.model import TableDef, TrailPosition
from trailgate.spark.trail_catalog import trail_tables
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail.naming import TrailName

__all__ = ["definitions_at", "split_file"]


def split_file(trail: str, seqno: int, lower: TrailPosition, piece_bytes: int
               ) -> list[TrailPosition]:
    """The cut positions inside file ``seqno`` after ``lower``: transaction boundaries,
    about ``piece_bytes`` apart (none for a file smaller than that)."""
    try:
        size = os.path.getsize(TrailName(trail).file(seqno))
    except OSError:
        return []
    cuts: list[TrailPosition] = []
    start = lower
    state = None  # each scan goes on where the last stopped (a big transaction is read once)
    target = lower.rba + piece_bytes
    while target < size - piece_bytes // 4:  # no sliver of a piece at the end
        boundary, _covered, state = scan_boundary(trail, start, state=state,
                                                  limit=TrailPosition(seqno, target))
        if boundary > start and boundary.seqno == seqno:
            cuts.append(boundary)
            start = boundary
        target += piece_bytes
    return cuts


def definitions_at(trail: str, position: TrailPosition) -> tuple[TableDef, ...]:
    """The table definitions in force at ``position`` from its own file's metadata."""
    found: dict[str, TableDef] = {}
    for table in trail_tables(trail, (position.seqno,)):
        for at, definition in table.history:
            if at < position:
                found[table.name] = definition
    return tuple(found.values())
