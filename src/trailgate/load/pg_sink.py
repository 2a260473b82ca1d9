"""A range loaded into a PostgreSQL target: binary COPY passed through, exactly once.

The source's ``COPY (SELECT …) TO STDOUT (FORMAT binary)`` blocks go straight into the
target's ``COPY … FROM STDIN (FORMAT binary)``: no row is parsed in Python and neither
server formats text.  Binary COPY applies no casts, so a column whose target type differs
is cast by the source's SELECT.  Each range is one target transaction that first inserts
its row in ``trailgate.load_ranges`` (``ON CONFLICT DO NOTHING``): a range already loaded,
or being loaded by a speculative copy of the task, is skipped, and a range killed half way
leaves nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from trailgate.capture.postgres.copy_read import (
    copy_in,
    copy_out,
    copy_through,
    open_snapshot,
    range_select,
)
from trailgate.capture.postgres.pgoutput import quote_ident
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.db.connect import connect, describe
from trailgate.errors import TargetError
from trailgate.load.job import LoadJob, LoadTable

__all__ = ["PROGRESS_TABLE", "clear_table", "done_ranges", "ensure_progress_table",
           "load_range"]

PROGRESS_TABLE = "trailgate.load_ranges"
_DDL = """
CREATE SCHEMA IF NOT EXISTS trailgate;
CREATE TABLE IF NOT EXISTS trailgate.load_ranges (
    load_group text NOT NULL,
    table_no integer NOT NULL,
    range_no integer NOT NULL,
    generation integer NOT NULL,
    cut bigint NOT NULL,
    target text NOT NULL,
    rows bigint,
    loaded timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (load_group, table_no, range_no)
);
COMMENT ON TABLE trailgate.load_ranges IS
    'trailgate initial loads: one row per range loaded, committed with its rows';
"""


def ensure_progress_table(conn: psycopg.Connection[Any]) -> None:
    """Create ``trailgate.load_ranges`` in the target if it is missing."""
    exists = conn.execute("SELECT to_regclass('trailgate.load_ranges') IS NOT NULL").fetchone()
    if exists and exists[0]:
        return
    try:
        conn.execute(_DDL)
    except psycopg.Error as exc:
        raise TargetError(f"cannot create {PROGRESS_TABLE} in {describe(conn.info.dsn)}: "
                          f"{exc.diag.message_primary or exc}; the load records each range "
                          f"there with its rows (grant CREATE on the database)") from None


def done_ranges(conn: psycopg.Connection[Any], group: str, table_no: int, generation: int
                ) -> dict[int, tuple[int, int]]:
    """Ranges of table ``table_no`` loaded in ``generation``: index → (rows, cut)."""
    rows = conn.execute(
        "SELECT range_no, coalesce(rows, 0), cut FROM trailgate.load_ranges WHERE "
        "load_group = %s AND table_no = %s AND generation = %s",
        (group, table_no, generation)).fetchall()
    return {int(r): (int(n), int(c)) for r, n, c in rows}


def clear_table(conn: psycopg.Connection[Any], group: str, table_no: int,
                target_sql: str) -> None:
    """Forget every range of the table and empty its target, in one transaction."""
    with conn.transaction():
        conn.execute("DELETE FROM trailgate.load_ranges WHERE load_group = %s AND "
                     "table_no = %s", (group, table_no))
        conn.execute(f"TRUNCATE {target_sql}")


def _select_exprs(table: LoadTable) -> list[str]:
    out = []
    for col in table.columns:
        name = quote_ident(col.source)
        out.append(name if col.source_type == col.target_type
                   else f"{name}::{col.target_type}")
    return out


def load_range(job: LoadJob, table: LoadTable, rng: KeyRange,
               progress: Callable[[int], None]) -> int | None:
    """Load one range; its rows, or None when it was loaded before (skipped)."""
    src = open_snapshot(job.conninfo, job.snapshot, table.source)
    try:
        tgt = connect(job.sink.location, autocommit=False,
                      application_name=f"trailgate load {job.group}")
    except BaseException:
        src.close()
        raise
    try:
        with tgt.cursor() as cur:
            cur.execute(
                "INSERT INTO trailgate.load_ranges (load_group, table_no, range_no, "
                "generation, cut, target) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                (job.group, table.number, rng.index, table.generation, job.cut, table.target))
            if cur.fetchone() is None:
                tgt.rollback()
                return None
            select = range_select(table.source_sql, table.key_column, rng,
                                  _select_exprs(table))
            cols = ", ".join(quote_ident(c.target) for c in table.columns)
            out_sql = f"COPY ({select}) TO STDOUT (FORMAT binary)"
            in_sql = f"COPY {table.target_sql} ({cols}) FROM STDIN (FORMAT binary)"
            rows = copy_through(src, out_sql, tgt, in_sql, progress)
            if rows is None:  # no C pump: the same through Python, a megabyte at a time
                done = [0]

                def blocks() -> Iterator[bytes]:
                    for data in copy_out(src, out_sql):
                        done[0] += len(data)
                        progress(done[0])
                        yield data

                rows = copy_in(tgt, in_sql, blocks())
            cur.execute("UPDATE trailgate.load_ranges SET rows = %s WHERE load_group = %s "
                        "AND table_no = %s AND range_no = %s",
                        (rows, job.group, table.number, rng.index))
        tgt.commit()
        return int(rows)
    except psycopg.Error as exc:
        with contextlib.suppress(Exception):
            tgt.rollback()
        raise TargetError(f"loading {table.source} into {table.target} (range {rng.index}, "
                          f"{rng.predicate(table.key_column) or 'whole table'}) failed: "
                          f"{exc.diag.message_primary or exc}"
                          + (f" ({exc.diag.message_detail})" if exc.diag.message_detail
                             else "") + "; nothing of this range was committed") from None
    finally:
        src.close()
        tgt.close()
