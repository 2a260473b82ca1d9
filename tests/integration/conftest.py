"""One embedded PostgreSQL for the whole session; each test gets its own database."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trailgate.db.cluster import Cluster

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
def pg_db(pg_cluster: Cluster, request: pytest.FixtureRequest) -> str:
    """A fresh database for one test; returns its superuser connection string."""
    name = f"t{next(_db_numbers)}_{request.node.name[:40].lower()}"
    name = "".join(ch if ch.isalnum() else "_" for ch in name)
    return pg_cluster.create_database(name)
