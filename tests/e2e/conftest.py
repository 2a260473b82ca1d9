"""End-to-end tests run trailgate as separate processes against one embedded PostgreSQL.

The Extract test helpers live beside the integration tests; they are importable here too.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trailgate.db.cluster import Cluster
from trailgate.demo.databases import Databases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))


@pytest.fixture(scope="session")
def e2e_cluster() -> Iterator[Cluster]:
    """A running cluster in a temporary directory the server's OS user can reach."""
    directory = Path(tempfile.mkdtemp(prefix="tg-e2e-"))
    directory.chmod(0o755)
    cluster = Cluster(directory / "pg", fast=True)
    try:
        cluster.create()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def databases() -> Iterator[Databases]:
    """A source and a target server (databases src and tgt) for the tests of one module."""
    directory = Path(tempfile.mkdtemp(prefix="tg-e2e-"))
    directory.chmod(0o755)  # the server's OS user must traverse it
    dbs = Databases(directory / "pg", source_db="src", target_db="tgt")
    try:
        dbs.start()
        yield dbs
    finally:
        dbs.stop()
        shutil.rmtree(directory, ignore_errors=True)
