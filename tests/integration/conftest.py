"""One embedded PostgreSQL for the whole session; each test gets its own database."""

from __future__ import annotations

import contextlib
import itertools
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from trailgate.db.cluster import Cluster

# helpers the unit tests share with these (gg_areas): after this directory's own
sys.path.append(str(Path(__file__).resolve().parents[1] / "unit"))

_db_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A running cluster in a short temporary directory, destroyed at the end."""
    directory = Path(tempfile.mkdtemp(prefix="tg-pg-"))
    cluster = Cluster(directory, fast=True)
    try:
        cluster.create()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def pg_db(pg_cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database for one test; returns its superuser connection string.

    Afterwards the test's replication slots are dropped: slots are per server (the
    session's cluster has a fixed number) and a test's Extract groups leave theirs."""
    name = f"t{next(_db_numbers)}_{request.node.name[:40].lower()}"
    name = "".join(ch if ch.isalnum() else "_" for ch in name)
    conninfo = pg_cluster.create_database(name)
    yield conninfo
    _drop_slots(conninfo, name)


def _drop_slots(conninfo: str, database: str) -> None:
    """Drop the database's logical slots; a slot still held (a process finishing) gets a few
    seconds to be let go, then is left."""
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for _ in range(50):
                rows = conn.execute("SELECT slot_name, active FROM pg_replication_slots "
                                    "WHERE database = %s", (database,)).fetchall()
                for slot, active in rows:
                    if not active:
                        with contextlib.suppress(psycopg.Error):
                            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                if not any(active for _, active in rows):
                    return
                time.sleep(0.1)
    except psycopg.Error:
        pass  # the server is gone (a test stopped it): nothing to clean
