"""The Extract's C row path writes the very trail bytes its Python path writes.

The same slot range (peeked, so both reads see the same changes) is read twice by the
``pgcapture`` source's partition reader — once letting the C row path encode what it can,
once all in Python — and written by the trail sink into two trails.  The workload is the
Extract test's (every mapped type, key changes, TOAST, a table without a key, TRUNCATE,
COLSEXCEPT, TOKENS, interleaved and rolled-back transactions), plus a transaction big enough
to be spilled to disk.  Everything after the file header must be identical, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from extract_support import make_home
from test_extract_pg import PARAMS, _schema, _workload_one, _workload_two

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres.trandata import add_trandata
from trailgate.changes.change_rows import ChangeColumns
from trailgate.db.connect import connect
from trailgate.extract.postgres.source import SourceOptions, read_partition
from trailgate.spark.trail_sink import SinkOptions, write_change_batches
from trailgate.trail.reader import record_bytes
from trailgate.trail.records import split_records

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not fastpath.available, reason="the C row path is not built")]


def _flush_lsn(conninfo: str) -> int:
    with connect(conninfo) as conn:
        return int(conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                                ).fetchone()[0])


def _write(home: Path, end: int, trail: Path, *, fast: bool) -> tuple[bytes, int]:
    """The trail's bytes after its header, and how many changes came encoded."""
    opts = SourceOptions.parse({"home": str(home), "group": "FAST1",
                                "memoryLimitBytes": str(256 * 1024), "batchRows": "500"})
    encoded = 0

    def counted():
        nonlocal encoded
        for batch in read_partition(opts, 0, end, fast=fast):
            encoded += sum(len(split_records(r)) for r in ChangeColumns(batch).records
                           if r is not None)
            yield batch

    trail.parent.mkdir(parents=True, exist_ok=True)
    sink = SinkOptions.parse({"path": str(trail)}, "run")
    msg = write_change_batches(sink, counted())
    assert msg.transactions > 20
    return record_bytes(trail), encoded


def test_c_row_path_writes_the_python_paths_bytes(pg_db, tmp_path):
    with connect(pg_db) as conn:
        _schema(conn)
    home = make_home(tmp_path / "home", pg_db, "FAST1", PARAMS)
    _workload_one(pg_db)
    _workload_two(pg_db)
    with connect(pg_db) as conn:  # ~1 MB in one transaction: spilled (limit 256 kB)
        conn.execute("INSERT INTO types (id, f, h, l) SELECT g, repeat('é', g % 50), "
                     "'x', '2024-01-01 00:00:00+00' FROM generate_series(10, 6000) g")
        conn.execute("UPDATE types SET id = id + 100000, g = 'moved' WHERE id % 7 = 0")
    end = _flush_lsn(pg_db)

    fast_bytes, encoded = _write(home.path, end, tmp_path / "fast" / "aa", fast=True)
    slow_bytes, none = _write(home.path, end, tmp_path / "slow" / "aa", fast=False)
    assert none == 0
    assert encoded > 6000  # the bulk went through the C path
    assert len(fast_bytes) == len(slow_bytes)
    assert fast_bytes == slow_bytes


def test_next_batch_reuses_connections_and_survives_losing_them(pg_db, tmp_path):
    """A micro-batch hands its connections to the next one in the same worker; if they
    were lost meanwhile (a server restart, an administrator), the next batch opens new ones
    instead of failing."""
    from trailgate.extract.postgres import source as pg_source

    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE r (id int PRIMARY KEY)")
        add_trandata(conn, "public.r")
    home = make_home(tmp_path / "home", pg_db, "REUSE1", "TABLE public.r;")
    opts = SourceOptions.parse({"home": str(home.path), "group": "REUSE1"})
    start = 0
    pids = []
    for batch in range(3):
        with connect(pg_db) as conn:
            conn.execute("INSERT INTO r VALUES (%s)", (batch,))
        end = _flush_lsn(pg_db)
        rows = [r for b in read_partition(opts, start, end) for r in ChangeColumns(b).ops]
        assert rows.count(-2) == 1  # the one insert, as a packed row
        start = end
        with connect(pg_db) as conn:
            pids.append(sorted(r[0] for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE "
                "'trailgate trailgate_reuse1%'")))
            if batch == 1:  # lose them: the next batch must still work
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "application_name LIKE 'trailgate trailgate_reuse1%'")
    assert len(pids[0]) == 2 and pids[1] == pids[0]  # reused, not reopened
    assert set(pids[2]).isdisjoint(pids[1])  # new ones after the loss
    pg_source._idle_connections.clear()
