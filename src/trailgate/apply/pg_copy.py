"""Statements and ``COPY … FROM STDIN`` sent to PostgreSQL as one simple query, on libpq.

A stream-apply step whose inserts go by COPY cannot be one synced pipeline (libpq allows
no COPY in pipeline mode); sent as one simple query its BEGIN, checkpoint-row statement,
COPY and COMMIT cost one round trip: the server runs them in order, reads each COPY's rows
when it reaches it, and at the first error skips the rest, so the BEGIN … COMMIT inside
commits all or nothing (the caller then rolls back).  Statements here take no parameters:
their values are literals.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq

from trailgate.apply.pg_pipeline import (
    Failed,
    error_field,
    lost,
    next_result,
    send_queued,
    wait_socket,
)

__all__ = ["CHUNK_BYTES", "CopyIn", "run_query"]

#: COPY data goes to libpq in pieces of at most this many bytes (its buffer grows to hold
#: what it is given).
CHUNK_BYTES = 1 << 20
_COPY_IN = pq.ExecStatus.COPY_IN
_FATAL = pq.ExecStatus.FATAL_ERROR


@dataclass(frozen=True, slots=True)
class CopyIn:
    """A ``COPY … FROM STDIN`` statement (text format) and the rows it reads, as COPY
    text."""

    query: bytes
    data: bytes


def run_query(conn: psycopg.Connection[Any], parts: Sequence[bytes | CopyIn]) -> None:
    """Send ``parts`` (statements without parameters, and COPYs with their rows) as one
    simple query and read every result.  Raises :class:`Failed` with the index in
    ``parts`` of the first statement that failed (the server skipped the rest), or
    ``psycopg.OperationalError`` when the connection is lost; a transaction the parts
    began and did not end is the caller's to end."""
    if not parts:
        return
    text = b"; ".join(p.query if isinstance(p, CopyIn) else p for p in parts)
    copies = [p for p in parts if isinstance(p, CopyIn)]
    pg = conn.pgconn
    failure: Failed | None = None
    at = 0  # the part the next result belongs to
    with conn.lock:
        done = False
        try:
            pg.send_query(text)  # raises psycopg.OperationalError when it cannot
            send_queued(pg)
            while True:
                result = next_result(pg)
                if result is None:  # the query's end
                    break
                status = result.status
                if status == _COPY_IN:
                    _send_copy(pg, copies.pop(0).data if copies else b"")
                    continue  # the COPY's own result follows
                if status == _FATAL and failure is None:
                    failure = Failed(min(at, len(parts) - 1),
                                     error_field(result, pq.DiagnosticField.SQLSTATE),
                                     error_field(result, pq.DiagnosticField.MESSAGE_PRIMARY)
                                     or "unknown error")
                at += 1
            done = True
        finally:
            if not done:  # a query half sent or half read: never reuse the connection
                conn.close()
    if failure is not None:
        raise failure


def _send_copy(pg: Any, data: bytes) -> None:
    """A COPY's rows and its end."""
    view = memoryview(data)
    for start in range(0, len(view), CHUNK_BYTES):
        chunk = view[start:start + CHUNK_BYTES]
        while True:
            sent = pg.put_copy_data(chunk)
            if sent == 1:
                break
            if sent < 0:
                lost(pg)
            wait_socket(pg, select.POLLOUT)  # nonblocking: libpq's buffer is full
            pg.flush()
    while pg.put_copy_end(None) == 0:
        wait_socket(pg, select.POLLOUT)
        pg.flush()
    send_queued(pg)
