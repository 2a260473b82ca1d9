"""DBLOGIN: log in to a PostgreSQL source and say exactly what capture still needs.

Capture needs PostgreSQL >= 14, ``wal_level=logical``, a free replication slot, a user with
the REPLICATION attribute (or superuser) who may create the trailgate catalog and
publication, and, for every captured table, a key the log can carry.  Each missing piece is
reported with the statement that fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from trailgate.db.connect import connect, describe

__all__ = ["LoginReport", "check_prerequisites", "dblogin"]

_MAX_LISTED_TABLES = 20


@dataclass(slots=True)
class LoginReport:
    """The outcome of DBLOGIN: ``problems`` block capture, ``warnings`` do not."""

    server: str
    user: str
    version: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """What GGSCI prints."""
        out = ["Successfully logged into database."]
        out += [f"ERROR: {p}" for p in self.problems]
        out += [f"WARNING: {w}" for w in self.warnings]
        return out


def dblogin(conninfo: str) -> tuple[psycopg.Connection[Any], LoginReport]:
    """Connect (a ``SourceError`` if that fails) and check the prerequisites."""
    conn = connect(conninfo)
    return conn, check_prerequisites(conn, server=describe(conninfo))


def check_prerequisites(conn: psycopg.Connection[Any], *, server: str = "") -> LoginReport:
    """Check everything logical capture needs on this connection's database."""
    def one(query: str, params: tuple[Any, ...] = ()) -> Any:
        row = conn.execute(query, params).fetchone()
        return row[0] if row else None

    user = one("SELECT current_user")
    db = conn.info.dbname
    report = LoginReport(server=server or db, user=user, version=one("SHOW server_version"))
    if conn.info.server_version < 140000:
        report.problems.append(
            f"PostgreSQL {report.version} is too old: trailgate needs PostgreSQL 14 or later")

    wal_level = one("SHOW wal_level")
    if wal_level != "logical":
        report.problems.append(
            f"wal_level is '{wal_level}'; logical decoding needs 'logical': run ALTER SYSTEM "
            "SET wal_level = logical (as a superuser) and restart the server")

    slots = int(one("SHOW max_replication_slots"))
    used = int(one("SELECT count(*) FROM pg_replication_slots"))
    if slots == 0:
        report.problems.append(
            "max_replication_slots is 0; each Extract needs one slot: set max_replication_slots "
            "(e.g. ALTER SYSTEM SET max_replication_slots = 10) and restart the server")
    elif used >= slots:
        report.problems.append(
            f"all {slots} replication slots are in use (max_replication_slots): drop unused "
            "slots (pg_drop_replication_slot) or raise max_replication_slots and restart")

    superuser, replication = conn.execute(
        "SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user"
    ).fetchone() or (False, False)
    if not (superuser or replication):
        report.problems.append(
            f"user {user} lacks the REPLICATION privilege needed to create and read replication "
            f"slots: run ALTER ROLE {user} REPLICATION (as a superuser)")
    has_catalog = one("SELECT to_regnamespace('trailgate') IS NOT NULL")
    if not has_catalog and not one("SELECT has_database_privilege(current_database(), "
                                   "'CREATE')"):
        report.problems.append(
            f"user {user} cannot create the trailgate catalog schema and publication in "
            f"database {db}: run GRANT CREATE ON DATABASE {db} TO {user}")
    if not superuser:
        report.warnings.append(
            f"user {user} is not a superuser: ADD TRANDATA works only on tables it owns, and "
            "ADD SCHEMATRANDATA (an event trigger) needs a superuser")

    keyless = conn.execute(
        "SELECT n.nspname || '.' || c.relname FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p') AND c.relreplident IN ('d', 'n') "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'trailgate') "
        "AND n.nspname NOT LIKE 'pg\\_%%' "
        "AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND (i.indisprimary "
        "  OR (i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indimmediate "
        "      AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid "
        "        AND a.attnum = ANY(i.indkey::int2[]) AND NOT a.attnotnull)))) "
        "ORDER BY 1").fetchall()
    for (name,) in keyless[:_MAX_LISTED_TABLES]:
        report.warnings.append(
            f"table {name} has no usable key (no primary key, no unique key of NOT NULL "
            f"columns): ADD TRANDATA {name} will log all its columns (REPLICA IDENTITY FULL)")
    if len(keyless) > _MAX_LISTED_TABLES:
        report.warnings.append(f"… and {len(keyless) - _MAX_LISTED_TABLES} more tables "
                               "without a usable key")
    return report
