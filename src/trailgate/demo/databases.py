"""The source and target PostgreSQL servers of a demo (or an end-to-end test): two embedded
clusters, as a GoldenGate source and target are two servers, each with one database.

Two clusters rather than two databases in one: a slot, WAL and a native subscription then
behave as between real servers (a subscription to a database of the same cluster needs its
slot made by hand, or CREATE SUBSCRIPTION waits for itself).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from trailgate.db.cluster import Cluster
from trailgate.db.connect import connect
from trailgate.errors import SourceError

__all__ = ["Databases", "run_sql"]


@dataclass(slots=True)
class Databases:
    """``directory/source`` and ``directory/target`` clusters, with databases ``source_db`` and
    ``target_db``.  ``fast`` turns off fsync: a demo or test loses nothing it needs."""

    directory: Path
    source_db: str = "north"
    target_db: str = "south"
    fast: bool = True
    source: Cluster = field(init=False)
    target: Cluster = field(init=False)

    def __post_init__(self) -> None:
        settings = {"max_connections": "100", "max_wal_senders": "20",
                    "max_logical_replication_workers": "8"}
        self.source = Cluster(self.directory / "source", fast=self.fast, settings=settings)
        self.target = Cluster(self.directory / "target", fast=self.fast, settings=settings)

    def start(self) -> None:
        """Create (first time) and start both clusters, then their databases."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o755)  # the server's OS user must traverse it
        for cluster in (self.source, self.target):
            cluster.create()
            cluster.start()
        self.source.create_database(self.source_db)
        self.target.create_database(self.target_db)

    def stop(self) -> None:
        """Stop both servers (never raises: this runs on every way out)."""
        for cluster in (self.source, self.target):
            with contextlib.suppress(Exception):
                cluster.stop()

    @property
    def source_conninfo(self) -> str:
        return self.source.conninfo(self.source_db)

    @property
    def target_conninfo(self) -> str:
        return self.target.conninfo(self.target_db)

    @property
    def source_socket_conninfo(self) -> str:
        """The source database over its server's Unix socket (a client on its host)."""
        return self.source.conninfo(self.source_db, via_socket=True)

    @property
    def target_socket_conninfo(self) -> str:
        """The target database over its server's Unix socket."""
        return self.target.conninfo(self.target_db, via_socket=True)

    @staticmethod
    def login(conninfo: str) -> tuple[str, str]:
        """(``user@host:port/db``, password) for a credential-store alias."""
        d = conninfo_to_dict(conninfo)
        return f"{d['user']}@{d['host']}:{d['port']}/{d['dbname']}", str(d.get("password", ""))


def run_sql(conninfo: str, script: str) -> None:
    """Run a multi-statement script in one transaction."""
    try:
        with connect(conninfo) as conn, conn.transaction():
            conn.execute(script)
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError(f"{exc}".strip()) from None
