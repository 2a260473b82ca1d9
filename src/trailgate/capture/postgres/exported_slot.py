"""A logical replication slot created with an exported snapshot, held open for readers.

``CREATE_REPLICATION_SLOT … (SNAPSHOT 'export')`` (a replication-protocol command) gives the
slot's ``consistent_point`` and a snapshot other sessions import with ``SET TRANSACTION
SNAPSHOT``: rows read in it and changes streamed from the slot neither overlap nor leave a
gap.  The snapshot lives while the creating connection stays open and idle, so this object
keeps it and runs nothing else on it.
"""

from __future__ import annotations

import contextlib
import select
import time
from dataclasses import dataclass
from typing import Any

import psycopg.pq as pq

from trailgate.capture.postgres.pgoutput import parse_lsn, quote_ident
from trailgate.db.connect import connect, connect_failure, describe, session_conninfo
from trailgate.errors import ConfigError, SourceError

__all__ = ["CREATE_TIMEOUT", "ExportedSlot"]

#: Seconds slot creation may wait for transactions that were running when it began.
CREATE_TIMEOUT = 300.0


@dataclass(slots=True)
class ExportedSlot:
    """The slot, where its stream begins (``consistent_point``: the cut) and the snapshot
    readers import.  :meth:`close` ends the snapshot (and a temporary slot)."""

    slot: str
    consistent_point: int
    snapshot: str
    temporary: bool
    _pg: Any = None

    @classmethod
    def create(cls, conninfo: str, slot: str, *, temporary: bool,
               timeout: float = CREATE_TIMEOUT) -> ExportedSlot:
        """Create ``slot`` now; raises a ``SourceError`` saying what to do when it cannot."""
        full = session_conninfo(conninfo, application_name=f"trailgate {slot} snapshot",
                                replication="database")
        pg = pq.PGconn.connect(full.encode())
        if pg.status != pq.ConnStatus.OK:
            reason = _text(pg.error_message)
            pg.finish()
            raise connect_failure(conninfo, reason)
        command = (f"CREATE_REPLICATION_SLOT {quote_ident(slot)} "
                   f"{'TEMPORARY ' if temporary else ''}LOGICAL pgoutput "
                   f"(SNAPSHOT 'export')").encode()
        try:
            row = _run(pg, command, timeout, conninfo, slot)
        except BaseException:
            pg.finish()
            raise
        return cls(slot, parse_lsn(row[1]), row[2], temporary, pg)

    def close(self) -> None:
        """End the exported snapshot (a temporary slot goes with it)."""
        pg, self._pg = self._pg, None
        if pg is not None:
            with contextlib.suppress(Exception):
                pg.finish()

    @property
    def alive(self) -> bool:
        return self._pg is not None and self._pg.status == pq.ConnStatus.OK

    def __enter__(self) -> ExportedSlot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run(pg: Any, command: bytes, timeout: float, conninfo: str, slot: str) -> list[str]:
    pg.send_query(command)
    deadline = time.monotonic() + timeout
    while True:
        try:
            pg.consume_input()
        except Exception:
            raise SourceError(f"lost the connection to {describe(conninfo)} while creating "
                              f"replication slot {slot}: {_text(pg.error_message)}") from None
        if not pg.is_busy():
            break
        if time.monotonic() > deadline:
            blockers = _blockers(conninfo)
            with contextlib.suppress(Exception):
                pg.cancel_conn().cancel()
            raise SourceError(
                f"creating replication slot {slot} waited {timeout:.0f} s for transactions "
                f"that were running when it began{blockers}: a slot's snapshot needs them "
                f"finished. End them (COMMIT or ROLLBACK, or SELECT pg_terminate_backend(pid)) "
                f"and start again")
        select.select([pg.socket], [], [], 0.5)
    result = pg.get_result()
    while pg.get_result() is not None:
        pass
    if result is None or result.status != pq.ExecStatus.TUPLES_OK or result.ntuples != 1:
        message = _text(result.error_message if result is not None else pg.error_message)
        if "already exists" in message:
            raise ConfigError(f"replication slot {slot} already exists in "
                              f"{describe(conninfo)}: drop it, or choose another group name")
        if "permission" in message or "must be superuser" in message:
            raise SourceError(f"cannot create replication slot {slot}: the user needs the "
                              f"REPLICATION attribute (ALTER ROLE … REPLICATION): {message}")
        raise SourceError(f"cannot create replication slot {slot} in {describe(conninfo)}: "
                          f"{message or 'no answer'}")
    return [(result.get_value(0, i) or b"").decode() for i in range(result.nfields)]


def _blockers(conninfo: str) -> str:
    """`` (pid 123: idle in transaction since …, user u, application a)`` for messages."""
    try:
        with connect(conninfo, application_name="trailgate slot wait") as conn:
            rows = conn.execute(
                "SELECT pid, coalesce(state, ''), coalesce(usename::text, ''), "
                "coalesce(application_name, ''), to_char(xact_start, 'YYYY-MM-DD HH24:MI:SS') "
                "FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() "
                "ORDER BY xact_start LIMIT 5").fetchall()
            prepared = conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
    except (SourceError, Exception):
        return ""
    parts = [f"pid {pid}: {state or 'active'} since {since}, user {user}"
             + (f", application {app}" if app else "") for pid, state, user, app, since in rows]
    parts += [f"prepared transaction {gid!r} (COMMIT PREPARED or ROLLBACK PREPARED it)"
              for (gid,) in prepared]
    return f" ({'; '.join(parts)})" if parts else ""


def _text(message: bytes | None) -> str:
    return (message or b"").decode("utf-8", "replace").strip()
