"""Statements and COPYs as one simple query on libpq (``apply.pg_copy``) against real
PostgreSQL: a COPY's rows sent in pieces, the failing part named (a statement before the
COPY: no rows sent; the COPY itself; the COMMIT after it), nothing of a failed transaction
kept, and the connection going on as psycopg's."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from test_pg_pipeline import _conn  # the same two tables, schema p

from trailgate.apply import pg_copy
from trailgate.apply.pg_copy import CopyIn, run_query
from trailgate.apply.pg_pipeline import Failed

pytestmark = [pytest.mark.postgres]

COPY = b"COPY p.t (id, v) FROM STDIN"


def _count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM p.t").fetchone()
    assert row is not None
    return int(row[0])


def _rows(first: int, n: int) -> bytes:
    return "".join(f"{k}\tvalue {k} \\t ü\n" for k in range(first, first + n)).encode()


def test_statements_and_copies_in_one_query(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_copy, "CHUNK_BYTES", 1000)  # the rows go in many pieces
    conn = _conn(pg_db)
    run_query(conn, [b"BEGIN", b"SELECT 1", CopyIn(COPY, _rows(0, 2000)),
                     b"UPDATE p.t SET v = 'x' WHERE id = 7", CopyIn(COPY, _rows(5000, 10)),
                     b"COMMIT"])
    assert _count(conn) == 2010
    assert conn.execute("SELECT v FROM p.t WHERE id IN (7, 8) ORDER BY id").fetchall() == [
        ("x",), ("value 8 \t ü",)]
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


@pytest.mark.parametrize(("parts", "index", "state"), [
    ([b"BEGIN", b"SELECT 1 / 0", CopyIn(COPY, _rows(0, 5)), b"COMMIT"], 1, "22012"),
    ([b"BEGIN", CopyIn(COPY, _rows(0, 5) + _rows(3, 1)), b"COMMIT"], 1, "23505"),
    ([b"BEGIN", CopyIn(COPY, b"1\tone\nnot a number\tx\n"), b"COMMIT"], 1, "22P02"),
    ([b"BEGIN", CopyIn(COPY, _rows(0, 5)), b"INSERT INTO p.d VALUES (1, 99)", b"COMMIT"], 3,
     "23503"),
], ids=["statement", "copy-key", "copy-text", "commit"])
def test_the_failing_part_is_named_and_nothing_is_kept(pg_db: str, parts: list[Any],
                                                       index: int, state: str) -> None:
    conn = _conn(pg_db)
    with pytest.raises(Failed) as failed:
        run_query(conn, parts)
    assert (failed.value.index, failed.value.sqlstate) == (index, state)
    if conn.pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.execute("ROLLBACK")
    assert _count(conn) == 0
    run_query(conn, [CopyIn(COPY, _rows(0, 3))])  # the session goes on
    assert _count(conn) == 3
