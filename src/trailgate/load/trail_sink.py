"""A range written as one file of the load's trail (``EXTFILE``/``RMTFILE``), exactly once.

Each range has its own sequence number, fixed when the load is planned, so ranges are
written in parallel: into a hidden staging directory, fsynced, then renamed into place.  A
file in place is a range done; a staging file a crash left is written again.  Records are
inserts whose CSN is the range's cut; a Replicat applies the trail once the load finished.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from trailgate.capture.postgres.copy_read import open_snapshot, range_select
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.capture.postgres.types import classify, trail_from_pg_text
from trailgate.checkpoint import fsync_dir
from trailgate.errors import TargetError
from trailgate.load.job import LoadJob, LoadTable
from trailgate.model import Change, OpType
from trailgate.trail.header import decode_file_header
from trailgate.trail.naming import TrailName
from trailgate.trail.writer import TrailWriter

__all__ = ["TRANSACTION_ROWS", "load_trail_range", "staging", "trail_done"]

TRANSACTION_ROWS = 10_000


def staging(trail: str) -> TrailName:
    """The hidden staging trail beside ``trail`` (same prefix)."""
    name = TrailName(trail)
    return TrailName(name.directory / f".{name.prefix}-load" / name.prefix)


def trail_done(trail: str, seqnos: dict[int, int]) -> dict[int, int]:
    """Of ``seqnos`` (range index → seqno), the ranges whose file is in place: → cut."""
    name = TrailName(trail)
    out = {}
    for index, seqno in seqnos.items():
        path = name.file(seqno)
        try:
            with open(path, "rb") as f:
                header = decode_file_header(f.read(0xFFFF))
        except (OSError, ValueError):
            continue
        out[index] = int(header.first_csn or 0)
    return out


def load_trail_range(job: LoadJob, table: LoadTable, rng: KeyRange,
                     progress: Callable[[int], None]) -> int | None:
    """Write one range's file; rows, or None when it is in place already."""
    seqno = job.sink.seqnos[(table.number, rng.index)]
    final = TrailName(job.sink.location).file(seqno)
    if final.exists():
        return None
    stage = staging(job.sink.location)
    stage.directory.mkdir(parents=True, exist_ok=True)
    types = [classify(c.source_type) for c in table.columns]
    tdef = table.table_def
    name = tdef.qualified_name
    src = open_snapshot(job.conninfo, job.snapshot, table.source)
    exprs = ['"' + c.source.replace('"', '""') + '"' for c in table.columns]
    writer = TrailWriter(stage.directory / stage.prefix, megabytes=1 << 20,
                         start_seqno=seqno, named_as=job.sink.location, fsync=True)
    rows = 0
    try:
        writer.ensure_file(job.cut, job.commit_time)  # an empty range has its file too
        select = range_select(table.source_sql, table.key_column, rng, exprs)
        with src.cursor() as cur, cur.copy(f"COPY ({select}) TO STDOUT") as copy:
            for row in copy.rows():
                if rows % TRANSACTION_ROWS == 0:
                    if rows:
                        writer.commit_transaction()
                        progress(rows)
                    writer.begin_transaction(f"load.{table.number}.{rng.index}."
                                             f"{rows // TRANSACTION_ROWS}", job.cut)
                after = {i: None if v is None else trail_from_pg_text(v, types[i])
                         for i, v in enumerate(row)}
                writer.add_change(Change(OpType.INSERT, name, after=after,
                                         io_time=job.commit_time), tdef)
                rows += 1
        if rows:
            writer.commit_transaction()
        writer.close()
        staged = stage.file(seqno)
        if staged.exists():
            os.replace(staged, final)
            fsync_dir(final.parent)
    except Exception as exc:
        writer.abandon()
        if isinstance(exc, TargetError):
            raise
        raise TargetError(f"writing {table.source} (range {rng.index}) to trail file "
                          f"{final} failed: {exc}; the range is written again at the next "
                          f"start") from None
    finally:
        src.close()
    return rows
