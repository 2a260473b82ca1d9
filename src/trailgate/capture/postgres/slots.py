"""``ADD EXTRACT name, TRANLOG, BEGIN NOW`` on PostgreSQL: a logical replication slot.

The slot (``trailgate_<group>``, plugin ``pgoutput``) marks where capture begins: WAL from
its creation on is kept until the Extract acknowledges it.  The publication it reads is the
one TRANDATA fills (``trailgate`` by default), created here when missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pgerrors

from trailgate.capture.postgres.pgoutput import parse_lsn
from trailgate.capture.postgres.trandata import DEFAULT_PUBLICATION, ensure_catalog
from trailgate.errors import ConfigError, SourceError

__all__ = ["ExtractSource", "add_extract", "delete_extract", "slot_name"]


@dataclass(frozen=True, slots=True)
class ExtractSource:
    """Where an Extract group reads: its slot, publication and the LSN capture begins at."""

    group: str
    slot: str
    publication: str
    begin_lsn: int


def slot_name(group: str) -> str:
    """The slot of Extract ``group``: slot names allow only lower case, digits and ``_``."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", group):
        raise ConfigError(f"invalid Extract group name {group!r}: use letters, digits and _ "
                          "(up to 40), starting with a letter")
    return f"trailgate_{group.lower()}"


def add_extract(conn: psycopg.Connection[Any], group: str, *,
                publication: str = DEFAULT_PUBLICATION) -> ExtractSource:
    """Create the slot of ``group`` now (BEGIN NOW) and the publication if it is missing."""
    slot = slot_name(group)
    ensure_catalog(conn, publication)
    try:
        row = conn.execute(
            "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, 'pgoutput')",
            (slot,)).fetchone()
    except pgerrors.DuplicateObject:
        row = conn.execute("SELECT database FROM pg_replication_slots WHERE slot_name = %s",
                           (slot,)).fetchone()
        where = f"database {row[0]}" if row else "this server"
        raise ConfigError(f"Extract {group} already exists: replication slot {slot} is in "
                          f"{where} (slots are per server; DELETE EXTRACT {group} first, or "
                          "choose another group name)") from None
    except pgerrors.InsufficientPrivilege:
        raise SourceError(f"cannot create replication slot {slot}: the DBLOGIN user needs the "
                          "REPLICATION attribute (ALTER ROLE … REPLICATION)") from None
    except psycopg.Error as exc:
        raise SourceError(f"cannot create replication slot {slot}: "
                          f"{exc.diag.message_primary or exc}") from None
    assert row is not None
    return ExtractSource(group, slot, publication, parse_lsn(row[0]))


def delete_extract(conn: psycopg.Connection[Any], group: str) -> bool:
    """Drop the slot of ``group``; False when it did not exist."""
    slot = slot_name(group)
    try:
        row = conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                           "pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    except pgerrors.ObjectInUse:
        raise SourceError(f"cannot delete Extract {group}: its slot {slot} is in use; stop the "
                          "Extract first") from None
    return row is not None
