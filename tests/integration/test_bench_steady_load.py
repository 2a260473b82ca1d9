"""The apply benchmark's steady load (``benchmarks/apply_pg.py``): pgbench writes the asked
rate in transactions of the asked size, numbered from 0, and the commit times returned are
the source server's own, one per transaction."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trailgate.db.cluster import Cluster
from trailgate.db.connect import connect
from trailgate.errors import TrailgateError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from apply_pg import SOURCE_DDL, steady_workload

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def bench_db() -> Iterator[str]:
    """A server of its own: the load's commit times need ``track_commit_timestamp``."""
    directory = Path(tempfile.mkdtemp(prefix="tg-pg-steady-"))  # one the server can reach
    cluster = Cluster(directory, fast=True, settings={"track_commit_timestamp": "on"})
    try:
        cluster.create()
        cluster.start()
        yield cluster.create_database("steady")
    finally:
        cluster.destroy()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def ticks_db(bench_db: str) -> str:
    with connect(bench_db) as conn:
        conn.execute("DROP SCHEMA IF EXISTS bench CASCADE")
        conn.execute(SOURCE_DDL)
    return bench_db


def test_the_steady_load_writes_whole_numbered_transactions_at_the_rate(ticks_db: str) -> None:
    ticks: list[int] = []
    before = datetime.now(UTC)
    commits = steady_workload(ticks_db, 400.0, 1.0, 5_000, ticks.append, per_txn=4)
    after = datetime.now(UTC)
    with connect(ticks_db) as conn:
        rows = conn.execute("SELECT id, txn FROM bench.ticks ORDER BY id").fetchall()
    txns = sorted({txn for _, txn in rows})
    # 100 transactions a second for a second (pgbench's schedule is random, so a margin)
    assert 60 <= len(txns) <= 140
    assert txns == list(range(len(txns)))  # numbered from 0 without a gap
    assert [row[0] for row in rows] == [5_000 + 4 * t + g for t in txns for g in range(4)]
    assert ticks and ticks[-1] <= len(rows)
    assert sorted(commits) == txns  # the server's commit time of each
    assert all(before <= at <= after for at in commits.values())


def test_a_failing_load_says_what_pgbench_said(ticks_db: str) -> None:
    with connect(ticks_db) as conn:
        conn.execute("DROP TABLE bench.ticks")
    with pytest.raises(TrailgateError, match=r"(?s)pgbench failed.*ticks"):
        steady_workload(ticks_db, 100.0, 1.0, 0, lambda n: None, per_txn=1)
