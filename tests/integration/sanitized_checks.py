"""Checks that run only inside the sanitizer run (``test_sanitizers.py`` hands this file to
a child pytest under ASan and UBSan; the default suite does not collect it): each extension
imported is its sanitized build, and the COPY pump (``_copypump``, which needs a server and
so has no unit test of its own) moves the same bytes as the Python copy loop it stands in
for, over rows of every size around its 64 kB block and its gather buffer."""

from __future__ import annotations

import importlib
import json
import os
import random
from pathlib import Path

import psycopg
import pytest

from trailgate.capture.postgres import copy_read

MANIFEST = os.environ.get("TRAILGATE_SANITIZED_MANIFEST")
#: the database the outer test made for the COPY checks
PG_ENV = "TRAILGATE_SANITIZE_PG"

pytestmark = pytest.mark.skipif(not MANIFEST, reason="only inside the sanitizer run")


def test_every_extension_is_its_sanitized_build() -> None:
    assert MANIFEST is not None
    manifest = json.loads(Path(MANIFEST).read_text())
    assert manifest
    for name, path in manifest.items():
        module = importlib.import_module(name)
        assert module.__file__ == path, (name, module.__file__)


def _seed(conninfo: str, seed: int) -> list[tuple[int, str, bytes]]:
    rng = random.Random(seed)
    sizes = [0, 1, 100, 65_535, 65_536, 65_537, 70_000, 140_000, 300_000]
    rows = []
    for i in range(400):
        size = rng.choice(sizes) if rng.random() < 0.1 else rng.randrange(0, 200)
        rows.append((i, "".join(rng.choice("ab\t\\\né") for _ in range(size)),
                     rng.randbytes(rng.randrange(0, 50))))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS src, dst_c, dst_py")
        conn.execute("CREATE TABLE src (id int PRIMARY KEY, body text, raw bytea)")
        conn.execute("CREATE TABLE dst_c (LIKE src)")
        conn.execute("CREATE TABLE dst_py (LIKE src)")
        with conn.cursor() as cur, cur.copy("COPY src FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    return rows


@pytest.fixture
def database() -> str:
    conninfo = os.environ.get(PG_ENV)
    if not conninfo:
        pytest.fail(f"{PG_ENV} names no database: the sanitizer run's outer test sets it")
    return conninfo


def _copy_out(conninfo: str, chunk: int) -> bytes:
    with psycopg.connect(conninfo) as conn:
        return b"".join(copy_read.copy_out(conn, "COPY src TO STDOUT", chunk))


def test_gather_gives_the_python_loops_bytes(database: str, monkeypatch) -> None:
    _seed(database, 1)
    assert copy_read.pump_available(), "the C pump is not in use (psycopg's libpq not found)"
    for chunk in (1, 1000, 65_536, 1 << 20):  # a row over the buffer makes gather grow it
        c_bytes = _copy_out(database, chunk)
        with monkeypatch.context() as m:
            m.setattr(copy_read, "_pump", None)
            assert copy_read.pump_available() is False
            assert _copy_out(database, chunk) == c_bytes


def test_pump_fills_the_target_as_the_python_loop_does(database: str, monkeypatch) -> None:
    rows = _seed(database, 2)
    with psycopg.connect(database) as src, psycopg.connect(database) as dst:
        moved = copy_read.copy_through(src, "COPY src TO STDOUT", dst, "COPY dst_c FROM STDIN")
        dst.commit()
    assert moved == len(rows)
    with psycopg.connect(database) as src, psycopg.connect(database) as dst:
        chunks = copy_read.copy_out(src, "COPY src TO STDOUT", 4096)
        with monkeypatch.context() as m:
            m.setattr(copy_read, "_pump", None)
            assert copy_read.copy_in(dst, "COPY dst_py FROM STDIN", chunks) == len(rows)
        dst.commit()
    with psycopg.connect(database) as conn:
        for table in ("dst_c", "dst_py"):
            got = conn.execute(f"SELECT id, body, raw FROM {table} ORDER BY id").fetchall()
            assert got == rows, table


def test_the_stream_drain_gives_the_python_loops_messages(database: str) -> None:
    """``_pgfast.drain`` (the replication stream's reader taking libpq's messages in C)
    against the Python loop it stands in for, over transactions of every size around
    libpq's buffer."""
    from trailgate.capture.postgres.slots import add_extract
    from trailgate.capture.postgres.trandata import add_trandata
    from trailgate.capture.postgres.walstream import WalStream

    rng = random.Random(7)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS streamed")
        conn.execute("CREATE TABLE streamed (id int PRIMARY KEY, body text)")
        add_trandata(conn, "public.streamed")
        source = add_extract(conn, "SANDRAIN")
        lsn = "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
        start = conn.execute(lsn).fetchone()[0]  # type: ignore[index]
        for n in range(60):
            with conn.transaction():
                for k in range(rng.choice([1, 1, 3, 40])):
                    size = rng.choice([0, 10, 16_000, 70_000]) if rng.random() < 0.2 else 20
                    conn.execute("INSERT INTO streamed VALUES (%s, %s)",
                                 (n * 100 + k, "é" * size))
        end = conn.execute(lsn).fetchone()[0]  # type: ignore[index]
    got = {}
    try:
        for fast in (True, False):
            with WalStream(database, source.slot, source.publication, start,
                           fast_drain=fast) as stream:
                assert (stream._fast_drain is not None) == fast
                got[fast] = list(stream.messages(end))
    finally:
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (source.slot,))
    assert got[True] == got[False]
    assert sum(1 for _, data in got[True] if data[:1] == b"C") == 60
