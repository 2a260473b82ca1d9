"""Synced pipelines on libpq directly (``apply.pg_pipeline``) against real PostgreSQL: the
statements commit together at the Sync or not at all, the failing one is named (whether its
text was prepared in that pipeline or before), a failed commit too, and the connection goes
on as psycopg's."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from trailgate.apply import pg_pipeline
from trailgate.apply.pg_pipeline import Failed, Pipeliner, TextArray, placeholders

pytestmark = [pytest.mark.postgres]

INSERT = b"INSERT INTO p.t (id, v) VALUES (%s::int, %s)"
UPDATE = b"UPDATE p.t SET v = %s WHERE id = %s::int"


def _conn(pg_db: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(pg_db, autocommit=True)
    conn.execute("CREATE SCHEMA p; CREATE TABLE p.t (id int PRIMARY KEY, v text);"
                 "CREATE TABLE p.d (id int PRIMARY KEY, ref int REFERENCES p.t "
                 "DEFERRABLE INITIALLY DEFERRED)")
    return conn


def _rows(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT id, v FROM p.t ORDER BY id").fetchall()


def test_placeholders_are_the_servers() -> None:
    assert placeholders(b"SELECT %s, '%%', %s::text[]") == b"SELECT $1, '%', $2::text[]"
    assert placeholders(b"SELECT 1") == b"SELECT 1"


def test_statements_commit_at_the_sync_or_not_at_all(pg_db: str) -> None:
    conn = _conn(pg_db)
    other = psycopg.connect(pg_db, autocommit=True)
    p = Pipeliner(conn)
    p.run([(INSERT, (1, "a")), (INSERT, (2, "b"))])
    assert _rows(other) == [(1, "a"), (2, "b")]
    # the texts are prepared now; a new one (prepared in the failing pipeline) after the error
    for statements, index in [
            ([(UPDATE, ("x", 1)), (INSERT, (2, "dup")), (INSERT, (3, "c"))], 1),
            ([(INSERT, (3, "c")), (b"SELECT 1 / (%s::int - 3)", (3,)), (UPDATE, ("y", 2))], 1),
            ([(INSERT, (4, "d")), (b"SELEC nonsense", ())], 1),
            ([(UPDATE, ("z", 1)), (b"SELECT 1 FROM p.missing", ())], 1)]:
        with pytest.raises(Failed) as failed:
            p.run(statements)
        assert failed.value.index == index, failed.value
        assert _rows(other) == [(1, "a"), (2, "b")]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert failed.value.sqlstate == "42P01" and "p.missing" in failed.value.message
    # every text again, each prepared or prepared anew, and psycopg's own use goes on
    p.run([(UPDATE, ("x", 1)), (INSERT, (3, "c")), (b"SELECT 1 / (%s::int - 3)", (4,)),
           (INSERT, (4, "d"))])
    assert _rows(other) == [(1, "x"), (2, "b"), (3, "c"), (4, "d")]
    assert conn.execute("SELECT count(*) FROM p.t").fetchone() == (4,)


def test_statements_deallocated_behind_its_back_are_prepared_again(pg_db: str) -> None:
    """A step meeting a name the server no longer knows (DEALLOCATE, DISCARD) fails, and the
    next prepares every text again instead of failing for good."""
    conn = _conn(pg_db)
    p = Pipeliner(conn)
    p.run([(INSERT, (1, "a")), (UPDATE, ("b", 1))])
    conn.execute("DEALLOCATE ALL")
    with pytest.raises(Failed) as failed:
        p.run([(UPDATE, ("c", 1))])
    assert failed.value.sqlstate == "26000"
    p.run([(UPDATE, ("c", 1)), (INSERT, (2, "d"))])
    assert _rows(conn) == [(1, "c"), (2, "d")]


def test_a_failed_commit_is_the_syncs(pg_db: str) -> None:
    conn = _conn(pg_db)
    p = Pipeliner(conn)
    with pytest.raises(Failed) as failed:
        p.run([(INSERT, (1, "a")), (b"INSERT INTO p.d VALUES (1, %s::int)", (9,))])
    assert failed.value.index is None and failed.value.sqlstate == "23503"
    assert "the commit" in str(failed.value)
    assert _rows(conn) == []


def test_text_arrays_and_texts_beyond_the_prepared_ones(pg_db: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays go in binary (NULLs, empty strings, non-ASCII); once the connection holds
    ``PREPARED_MAX`` texts, further ones are sent unprepared."""
    monkeypatch.setattr(pg_pipeline, "PREPARED_MAX", 2)
    conn = _conn(pg_db)
    p = Pipeliner(conn)
    values = ["a", None, "", "ünï ☃", "tab\there"]
    p.run([(b"INSERT INTO p.t SELECT n::int, v FROM unnest(%s::text[], %s::text[]) "
            b"AS s(n, v)", (TextArray.of([str(n) for n in range(5)]), TextArray.of(values)))])
    assert _rows(conn) == list(enumerate(values))
    p.run([(UPDATE, ("b", 1)), (b"DELETE FROM p.t WHERE id = %s::int", (4,))])
    p.run([(b"DELETE FROM p.t WHERE id = %s::int", (3,)), (UPDATE, ("c", 2))])
    assert _rows(conn) == [(0, "a"), (1, "b"), (2, "c")]
    prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements "
                            "WHERE name LIKE 'trailgate_%'").fetchone()
    assert prepared == (2,)


def test_a_lost_connection_is_an_operational_error(pg_db: str) -> None:
    conn = _conn(pg_db)
    p = Pipeliner(conn)
    with psycopg.connect(pg_db, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError):
            p.run([(INSERT, (1, "a")), (UPDATE, ("b", 1))])
        assert other.execute("SELECT count(*) FROM p.t").fetchone() == (0,)


def test_a_connection_inside_a_transaction_or_a_bad_parameter_sends_nothing(pg_db: str
                                                                          ) -> None:
    """Inside a transaction the Sync would not commit (and the step would be claimed
    applied): refused.  A parameter that cannot be sent (a NUL byte, which libpq would cut
    a text value at; an unknown type) is refused before anything is queued, so the
    connection goes on; and ``Failed`` is an exception like any other (re-raised through a
    context manager, as contextlib does)."""
    import contextlib

    conn = _conn(pg_db)
    p = Pipeliner(conn)
    conn.execute("BEGIN")
    with pytest.raises(psycopg.ProgrammingError, match="idle connection"):
        p.run([(INSERT, (1, "a"))])
    conn.execute("ROLLBACK")
    with pytest.raises(ValueError, match="NUL"):
        p.run([(INSERT, (1, "a")), (INSERT, (2, "b\x00c"))])
    with pytest.raises(TypeError):
        p.run([(INSERT, (1, 2.5))])
    p.run([(INSERT, (1, "a"))])
    assert _rows(conn) == [(1, "a")]

    @contextlib.contextmanager
    def passing():
        yield

    with pytest.raises(Failed) as failed, passing():
        p.run([(INSERT, (1, "dup"))])
    assert failed.value.index == 0 and failed.value.sqlstate == "23505"
