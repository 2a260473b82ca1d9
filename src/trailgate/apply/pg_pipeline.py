"""A few statements sent to PostgreSQL as one pipeline with one Sync, on libpq directly.

The stream apply sends each step of set statements as such a pipeline
(``SetRunner.run_synced``): the Sync ends the server's transaction, so the statements
commit together or not at all, in one round trip.  A statement is one libpq call, its text
prepared on the server the first time it is sent (by a name of its own), and the socket is
waited on only to flush the pipeline and for its results: psycopg's cursors cost more per
statement than a small step's other work (docs/performance.md).
"""

from __future__ import annotations

import re
import select
import struct
from collections.abc import Sequence
from typing import Any, NoReturn

import psycopg
from psycopg import pq

__all__ = ["DIVISION_BY_ZERO", "PREPARED_MAX", "TEXT_ARRAY_OID", "Failed", "Pipeliner",
           "TextArray", "error_field", "lost", "next_result", "placeholders", "send_queued",
           "wait_socket"]

#: Statement texts a connection keeps prepared (a step's tables and column sets; beyond
#: this, a schema churning, further texts are sent unprepared).
PREPARED_MAX = 256
#: PostgreSQL's ``text`` and ``text[]``.
_TEXT_OID = 25
TEXT_ARRAY_OID = 1009
#: The SQLSTATE of a failed server-side check (``1 / 0``).
DIVISION_BY_ZERO = "22012"
_PLACEHOLDER = re.compile(rb"%[s%]")
_BINARY = pq.Format.BINARY
_TEXT = pq.Format.TEXT
_FATAL = pq.ExecStatus.FATAL_ERROR
_ABORTED = pq.ExecStatus.PIPELINE_ABORTED
_SYNCED = pq.ExecStatus.PIPELINE_SYNC
#: The server knows no prepared statement of that name (someone ran DEALLOCATE or DISCARD).
_UNKNOWN_STATEMENT = "26000"


class TextArray:
    """A ``text[]`` parameter already in PostgreSQL's binary form."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    @classmethod
    def of(cls, values: Sequence[str | None]) -> TextArray:
        """From Python strings (None: NULL), as the C planner's ``copy_columns`` makes it."""
        parts = [struct.pack("!iiiii", 1, int(any(v is None for v in values)), _TEXT_OID,
                             len(values), 1)]
        for value in values:
            if value is None:
                parts.append(b"\xff\xff\xff\xff")
            else:
                data = value.encode()
                parts.append(struct.pack("!i", len(data)))
                parts.append(data)
        return cls(b"".join(parts))


class Failed(Exception):
    """Statement ``index`` of the pipeline failed (None: the commit at the Sync did), with
    the server's SQLSTATE and message; nothing of the pipeline was committed."""

    def __init__(self, index: int | None, sqlstate: str, message: str):
        super().__init__(index, sqlstate, message)
        self.index, self.sqlstate, self.message = index, sqlstate, message

    def __str__(self) -> str:
        where = "the commit" if self.index is None else f"statement {self.index + 1}"
        return f"{where} of the pipeline failed: {self.message} ({self.sqlstate})"


def _encode(params: Sequence[Any]) -> tuple[list[bytes], list[int], list[int]]:
    """A statement's parameters as libpq takes them: values, formats, type OIDs."""
    values: list[bytes] = []
    formats: list[int] = []
    types: list[int] = []
    for p in params:
        if isinstance(p, TextArray):
            values.append(p.data)
            formats.append(_BINARY)
            types.append(TEXT_ARRAY_OID)
        elif isinstance(p, (str, int)):
            data = str(p).encode()
            if b"\x00" in data:  # libpq would cut a text parameter there
                raise ValueError("a pipelined statement's text parameter holds a NUL byte")
            values.append(data)
            formats.append(_TEXT)
            types.append(0)  # the server infers it, as psycopg lets it for str
        else:
            raise TypeError(f"a pipelined statement's parameter is {type(p).__name__}")
    return values, formats, types


def placeholders(query: bytes) -> bytes:
    """A statement text in psycopg's style (``%s`` each parameter, ``%%`` a percent sign) in
    the server's (``$1``, ``$2``…)."""
    n = 0

    def number(match: re.Match[bytes]) -> bytes:
        nonlocal n
        if match[0] == b"%%":
            return b"%"
        n += 1
        return b"$%d" % n
    return _PLACEHOLDER.sub(number, query)


class Pipeliner:
    """Runs synced pipelines on one psycopg connection (module docstring).  The connection
    must be idle, outside a transaction, and used by no other thread meanwhile."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn
        self._names: dict[bytes, bytes] = {}  # statement text (psycopg style) → name
        self._texts: dict[bytes, bytes] = {}  # the same text in the server's style
        self._made = 0  # names given (never one twice: a forgotten one may still exist)

    def run(self, statements: Sequence[tuple[bytes, Sequence[Any]]], *,
            within: bool = False) -> None:
        """Send ``(text, parameters)`` statements (parameters: str, int or
        :class:`TextArray`) and a Sync; wait for the server.  Raises :class:`Failed` when
        one failed or the commit did (nothing committed then), ``psycopg.OperationalError``
        when the connection is lost.  ``within``: the statements belong to a transaction
        the caller began (with a BEGIN before them or among them) and ends, so the Sync
        commits nothing."""
        pg = self.conn.pgconn
        fresh: list[bytes] = []  # names first prepared in this pipeline
        owners: list[int] = []  # the statement each result (up to its NULL) belongs to
        encoded = [(text, _encode(params)) for text, params in statements]  # before sending
        with self.conn.lock:
            if not within and pg.transaction_status != pq.TransactionStatus.IDLE:  # the Sync
                raise psycopg.ProgrammingError(  # would not commit: progress would be claimed
                    "a synced pipeline needs an idle connection (outside a transaction)")
            pg.enter_pipeline_mode()
            done = False
            try:
                for index, (text, (values, formats, types)) in enumerate(encoded):
                    if self._send(pg, text, values, formats, types, fresh):
                        owners.append(index)  # the Parse's own result
                    owners.append(index)
                pg.pipeline_sync()
                send_queued(pg)
                failure = self._collect(pg, owners)
                done = True
            except BaseException:
                self._forget(fresh)
                raise
            finally:
                if done and pg.status == pq.ConnStatus.OK:
                    pg.exit_pipeline_mode()
                elif not done:  # half a step may be queued with no Sync read: never reuse
                    self.conn.close()
        if failure is not None:
            self._forget(fresh)
            if failure.sqlstate == _UNKNOWN_STATEMENT:  # every text is prepared again
                self._names.clear()
            raise failure

    def _send(self, pg: Any, text: bytes, values: list[bytes], formats: list[int],
              types: list[int], fresh: list[bytes]) -> bool:
        """Queue one statement, preparing its text first if new (its name then added to
        ``fresh``): whether it was."""
        name = self._names.get(text)
        prepared = name is None and len(self._names) < PREPARED_MAX
        if prepared:
            name = self._names[text] = b"trailgate_%d" % self._made
            self._made += 1
            fresh.append(name)
            pg.send_prepare(name, self._server_text(text), types)
        if name is None:
            pg.send_query_params(self._server_text(text), values, types, formats)
        else:
            pg.send_query_prepared(name, values, formats)
        return prepared

    def _server_text(self, text: bytes) -> bytes:
        out = self._texts.get(text)
        if out is None:
            if len(self._texts) >= 2 * PREPARED_MAX:
                self._texts.clear()
            out = self._texts[text] = placeholders(text)
        return out

    def _forget(self, fresh: Sequence[bytes]) -> None:
        """Names first prepared in a pipeline that failed: the server skipped every message
        after the failure, so some may not exist; their texts are prepared again under new
        names (one that does exist stays unused)."""
        if fresh:
            gone = set(fresh)
            self._names = {t: n for t, n in self._names.items() if n not in gone}

    def _collect(self, pg: Any, owners: Sequence[int]) -> Failed | None:
        """Read each message's results and the Sync's: the first failure, if any."""
        failure: Failed | None = None
        at = 0  # which of the messages sent the results are for
        while True:
            result = next_result(pg)
            if result is None:  # the end of one message's results
                at += 1
                continue
            status = result.status
            if status == _SYNCED:
                return failure
            if status == _FATAL and failure is None:
                failure = Failed(owners[at] if at < len(owners) else None,
                                 error_field(result, pq.DiagnosticField.SQLSTATE),
                                 error_field(result, pq.DiagnosticField.MESSAGE_PRIMARY)
                                 or "unknown error")


# -- libpq's nonblocking exchange, shared with pg_copy ---------------------------------------

def send_queued(pg: Any) -> None:
    """Send everything queued, reading what the server sends meanwhile."""
    while True:
        left = pg.flush()
        if left == 0:
            return
        if left < 0:
            lost(pg)
        wait_socket(pg, select.POLLOUT | select.POLLIN)
        pg.consume_input()


def next_result(pg: Any) -> Any:
    """The next result (None at the end of one query's), waiting for it."""
    while pg.is_busy():
        wait_socket(pg, select.POLLIN)
        pg.consume_input()
    if pg.status != pq.ConnStatus.OK:
        lost(pg)
    return pg.get_result()


def lost(pg: Any) -> NoReturn:
    raise psycopg.OperationalError(pg.error_message.decode(errors="replace").strip()
                                   or "the connection was lost")


def wait_socket(pg: Any, events: int) -> None:
    poller = select.poll()
    poller.register(pg.socket, events)
    poller.poll()


def error_field(result: Any, field: pq.DiagnosticField) -> str:
    value = result.error_field(field)
    return value.decode(errors="replace") if value else ""
