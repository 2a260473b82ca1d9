"""A logical replication slot streamed over the replication protocol, read ahead on a thread.

The server decodes each transaction as it commits and sends it, as native replication
does.  psycopg refuses COPY BOTH, so one thread drives libpq (``psycopg.pq``)
itself: it reads into a bounded buffer, answers keepalives and confirms only positions the
caller says are durable.  It reads a busy stream in gulps, so the server packs its messages
into fewer TCP segments, each of which costs it CPU.  ``spans(end)`` hands out every
transaction committing before ``end``, whole.  docs/postgres.md, "Capture"; docs/extract.md,
"The walsender's CPU".
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Generator, Iterator
from typing import Any

import psycopg
import psycopg.pq as pq

from trailgate.capture.postgres.fastpath import Span, scan_span
from trailgate.capture.postgres.pgoutput import PG_EPOCH_UNIX_MICROS, format_lsn, quote_ident
from trailgate.capture.postgres.stream_drain import drainer
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.db.connect import connect_failure, describe, session_conninfo
from trailgate.errors import SourceError
from trailgate.params.model import DEFAULT_EOF_DELAY_SECONDS
from trailgate.thread_name import name_native_thread

__all__ = ["BUFFER_BYTES", "WalStream"]

log = logging.getLogger("trailgate.extract")

#: Message bytes read ahead before the thread stops reading and lets the server wait.
BUFFER_BYTES = 32 << 20
#: Seconds between standby status updates while nothing else sends one (the server drops a
#: client silent for ``wal_sender_timeout``, 60 s by default).
STATUS_INTERVAL = 10.0
#: Seconds to wait for another process to let go of the slot.
SLOT_WAIT_SECONDS = 60.0
#: Seconds to wait for the server's answer to START_REPLICATION.
ANSWER_SECONDS = 60.0
_MESSAGE_OVERHEAD = 100  # rough bytes of a buffered (lsn, bytes) pair besides the message
# (_pgfast.c's DRAIN_OVERHEAD is the same figure for its drain)
_DRAIN_MESSAGES = 5000  # messages read before handing them to the consumer
_RECENT_ITEMS = 4  # a keepalive among a read's last this many items: the server waits
#: The reader's pause once data is there, before it reads: at least this ...
MIN_GATHER_SECONDS = 0.002
#: ... at most this (the default of ``EOFDELAYCSECS``, which sets it per group) ...
MAX_GATHER_SECONDS = DEFAULT_EOF_DELAY_SECONDS
#: ... and in between this many seconds per message a second the stream brings above
#: ``GATHER_FROM_RATE``: a busy stream is read in fewer, bigger gulps — each read and each
#: write of the trail has a fixed cost on the driver (two threads woken, a generator chain,
#: a write), and the server sends many messages per TCP segment (docs/extract.md, "The
#: walsender's CPU") — while a trickle is read as it comes (docs/performance.md, "Live
#: one-row transactions").
GATHER_PER_RATE = 2e-6
GATHER_FROM_RATE = 1_500
#: A chunk of at least this many messages on a Unix socket: the server has likely filled
#: the socket (its send buffer holds a few hundred small messages, not the megabytes of
#: loopback TCP) and waits for room, so the reader reads on without pausing.
UNIX_FULL_MESSAGES = 128
#: A backlog of transactions of this many messages or more on average (in a chunk's last
#: ``_LARGE_TXN_TAIL``) is paced by its rate as a live stream is, not read at the shortest
#: pause: the server then writes many messages per TCP segment instead of one, which cut
#: its CPU by a third on 100-row transactions.  One-row backlogs keep the shortest pause,
#: which served them better (docs/extract.md, "100-row transactions: a walsender behind the
#: workload").
LARGE_TXN_MESSAGES = 20
_LARGE_TXN_TAIL = 200
#: How long the C drain waits on a Unix socket for the server's next message before it
#: hands over what it has: the server between two messages has not sent everything, and
#: while the reader waits for the GIL a Unix socket fills and the server stops.
UNIX_READ_ON_SECONDS = 0.0002
_ASK_SECONDS = 0.02  # how often a waiting consumer asks the server how far it has read
_unpack_lsn = struct.Struct(">Q").unpack_from
_unpack_keepalive = struct.Struct(">QQB").unpack_from
_status = struct.Struct(">cQQQqB")


class WalStream:
    """Slot ``slot``'s ``pgoutput`` messages from ``start_lsn`` on (see the module docstring).

    ``position``: every transaction committing before it has been handed out.
    ``fast_drain``: the reader takes libpq's messages with ``_pgfast.drain`` when it can be
    bound (``stream_drain``); false keeps the Python loop, the reference.  ``max_gather``:
    the longest pause before a read of a busy stream (``EOFDELAYCSECS``; see ``_gather``).
    """

    def __init__(self, conninfo: str, slot: str, publication: str, start_lsn: int, *,
                 buffer_bytes: int = BUFFER_BYTES, status_interval: float = STATUS_INTERVAL,
                 slot_wait: float = SLOT_WAIT_SECONDS, fast_drain: bool = True,
                 max_gather: float = MAX_GATHER_SECONDS):
        self.conninfo = conninfo
        self.slot = slot
        self.publication = publication
        self.position = start_lsn
        self._limit = buffer_bytes
        self._status_interval = status_interval
        self._max_gather = max_gather
        self._queue: deque[tuple[list[tuple[int, bytes | None]], int]] = deque()
        self._buffered = 0
        self._chunk: list[tuple[int, bytes | None]] = []
        self._chunk_bytes = 0
        self._index = 0
        self._bound = 0  # every commit before it has been received
        self._received = start_lsn
        self._available = start_lsn  # every commit before it is in the queue
        self._drained_commit = start_lsn  # the same, for what the reader has drained
        self._confirm = 0  # latest position the caller confirmed
        self._sent_confirm = 0
        self.status_updates = 0  # standby status updates sent (tests, benchmarks)
        self.chunks = 0  # chunks handed to the consumer's queue (tests, benchmarks)
        self._ask = False
        self._unanswered = 0  # status updates asking for a reply whose answer is not read
        self._hungry = False  # the consumer waits for the next chunk: the shortest pause
        self._asked = 0.0  # when the consumer last asked how far the server has read
        self._reply_due = False
        self._torn = False
        self._closing = False
        self._error: SourceError | None = None
        self._done = False
        self._interrupted = False  # an interrupt() no wait_available has returned for yet
        self._cond = threading.Condition()
        self._fast_drain = drainer() if fast_drain else None  # before the slot is taken
        self._pg = self._start(start_lsn, slot_wait)
        self._pgconn_ptr = self._pg.pgconn_ptr
        self._sock = self._pg.socket  # the C drain reads on from it ...
        # ... and on a Unix socket waits a little for more (UNIX_READ_ON_SECONDS)
        self._unix = _is_unix_socket(self._sock)
        self._read_on_ns = int(UNIX_READ_ON_SECONDS * 1e9) if self._unix else 0
        self._wake_r, self._wake_w = os.pipe()  # the consumer wakes the reader's select
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._run, name=f"walstream {slot}",
                                        daemon=True)
        self._thread.start()

    # --- opening ------------------------------------------------------------------------------

    def _start(self, start_lsn: int, slot_wait: float) -> Any:
        conninfo = session_conninfo(self.conninfo, settings=SESSION_SETTINGS,
                                    application_name=f"trailgate {self.slot} stream",
                                    replication="database")
        command = (f"START_REPLICATION SLOT {quote_ident(self.slot)} LOGICAL "
                   f"{format_lsn(start_lsn)} (proto_version '1', publication_names "
                   f"{_literal(quote_ident(self.publication))}, messages 'true')").encode()
        deadline = time.monotonic() + slot_wait
        while True:
            pg = pq.PGconn.connect(conninfo.encode())
            if pg.status != pq.ConnStatus.OK:
                reason = _text(pg.error_message)
                pg.finish()
                raise connect_failure(self.conninfo, reason)
            error = _begin_copy_both(pg, command, ANSWER_SECONDS)
            if error is None:
                return pg
            pg.finish()
            if "is active for PID" in error and time.monotonic() < deadline:
                time.sleep(0.1)  # a killed run's walsender, or a slot advance, letting go
                continue
            raise self._failure(error)

    def _failure(self, error: str) -> SourceError:
        where = describe(self.conninfo)
        if "does not exist" in error and "slot" in error:
            return SourceError(f"replication slot {self.slot!r} does not exist in {where}: "
                               "create it with ADD EXTRACT <group>, TRANLOG, BEGIN NOW")
        if "publication" in error and "does not exist" in error:
            return SourceError(f"{error} in {where}: ADD EXTRACT creates the publication "
                               f"{self.publication!r}")
        if "is active for PID" in error:
            return SourceError(f"replication slot {self.slot!r} is in use by another process "
                               f"({error}): is another Extract running on it?")
        return SourceError(f"cannot stream replication slot {self.slot!r} from {where}: "
                           f"{error}")

    # --- the consumer's side ----------------------------------------------------------------

    def messages(self, end: int) -> Iterator[tuple[int, bytes]]:
        """``(lsn, message)`` of every transaction committing in ``[position, end)``, then
        ``position`` is ``end`` (:meth:`spans`, one message at a time).  A consumer that
        stops early between transactions gets the rest from the next call."""
        spans = self.spans(end)
        in_txn = False
        try:
            for chunk, lo, hi in spans:
                for k in range(lo, hi):
                    item = chunk[k]
                    data = item[1]
                    if data is not None:
                        kind = data[0]
                        in_txn = kind != 0x43 and (in_txn or kind == 0x42)
                        self._index = k + 1  # a stop here resumes after this message
                        yield item
        finally:
            spans.close()
            if in_txn:  # this knows where the consumer stopped; spans does not
                self._torn = True

    def spans(self, end: int) -> Generator[Span, None, None]:
        """Every transaction committing in ``[position, end)`` as spans of the read-ahead
        buffer, ``(chunk, lo, hi)``: ``chunk[lo:hi]`` are ``(lsn, message)`` pairs, in
        order, with keepalives (message ``None``) among them; then ``position`` is ``end``.

        A span ends where the read ends or at the end of its chunk (so it may hold many
        transactions, and end inside one), and the consumer takes each span whole: one
        that stops after a span that ended between transactions gets the rest from the
        next call; one that stops inside a transaction leaves the stream unusable (open a
        new one).  The boundaries are found in C (``fastpath.scan_span``), which looks
        only at Begin, Commit and keepalives inside a transaction.
        """
        if self._torn:
            raise RuntimeError("WalStream.spans: the last consumer stopped inside a "
                               "transaction; open a new stream")
        if end <= self.position:
            return
        in_txn = False
        bound = self._bound
        scan = scan_span
        try:
            while True:
                chunk, lo = self._chunk, self._index
                try:
                    i, bound, in_txn, action = scan(chunk, lo, len(chunk), end, bound, in_txn)
                except ValueError as exc:
                    raise SourceError(f"slot {self.slot!r}: {exc}") from None
                if lo < i:
                    self._index = i
                    yield chunk, lo, i
                if action:  # 1: after the keepalive at i; 2: before item i; 3: after a commit
                    self._index = i + 1 if action == 1 else i
                    self._finish(bound, end)
                    return
                self._index = i
                if not in_txn and bound >= end:
                    self._finish(bound, end)
                    return
                self._next_chunk(ask=not in_txn)
        finally:
            if in_txn:
                self._torn = True

    def _finish(self, bound: int, end: int) -> None:
        self._bound = bound
        self.position = end

    def _next_chunk(self, ask: bool) -> None:
        """Wait for the reader's next chunk; while waiting between transactions, ask the
        server how far it has read (the keepalive lands in the buffer in order)."""
        since = time.monotonic()
        warned = False
        with self._cond:
            was_full = self._buffered >= self._limit
            self._buffered -= self._chunk_bytes
            self._chunk, self._chunk_bytes, self._index = [], 0, 0
            self._cond.notify_all()
            try:
                while not self._queue:
                    self._hungry = True
                    if self._error is not None:
                        raise self._error
                    if self._done:
                        raise SourceError(f"the replication stream of slot {self.slot!r} "
                                          "is closed")
                    now = time.monotonic()
                    if ask and now - self._asked >= _ASK_SECONDS:
                        # once per interval: each answer wakes this loop, and the server
                        # answers at once, so asking again then would be a busy exchange
                        self._ask, self._asked = True, now
                        self._wake()
                    self._cond.wait(_ASK_SECONDS if ask else 1.0)
                    if not warned and time.monotonic() - since > 60:
                        warned = True
                        log.warning("slot %s: waited 60 s for the server to send the "
                                    "transactions after %s", self.slot,
                                    format_lsn(self.position))
            finally:
                self._hungry = False
            self._chunk, self._chunk_bytes = self._queue.popleft()
            self._index = 0
        if was_full:
            self._wake()  # the reader is waiting for room

    def available(self) -> int:
        """How far a read can go now without waiting: every transaction committing before
        it has arrived (the end of the last commit received)."""
        return self._available

    def drained(self) -> bool:
        """A hint: whether nothing is queued for the consumer (keepalives aside), so a read
        going on now will wait for the server (a consumer writes out what it holds first).
        The reader's chunk being built and libpq's buffer are not seen."""
        chunk = self._chunk
        if any(chunk[k][1] is not None for k in range(self._index, len(chunk))):
            return False
        with self._cond:
            return all(m is None for queued, _ in self._queue for _, m in queued)

    def wait_available(self, after: int, timeout: float) -> int:
        """Wait (at most ``timeout`` seconds, or until :meth:`interrupt`) for
        :meth:`available` to pass ``after``; returns it.  An interrupt that came since the
        last wait returned ends this one at once (so none is lost between a caller's look
        and its wait)."""
        with self._cond:
            if (self._available <= after and self._error is None and not self._done
                    and not self._interrupted):
                self._cond.wait(timeout)
            self._interrupted = False
            return self._available

    def interrupt(self) -> None:
        """Wake a :meth:`wait_available` now (or the next one, if none is waiting)."""
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def confirm(self, lsn: int) -> None:
        """Everything before ``lsn`` is durable: the slot may move there."""
        if lsn > self._confirm:
            self._confirm = lsn
            self._wake()

    def close(self) -> None:
        """Send the last confirmation, end the stream, free the connection."""
        if self._closing:
            return
        self._closing = True
        self._wake()
        self._thread.join(timeout=30)
        with contextlib.suppress(OSError):
            os.close(self._wake_r)
        with contextlib.suppress(OSError):
            os.close(self._wake_w)

    @property
    def closed(self) -> bool:
        return self._closing or self._done

    @property
    def torn(self) -> bool:
        """Whether a consumer left a read where this stream cannot go on from: a new
        stream must be opened."""
        return self._torn

    def abandon(self) -> None:
        """A consumer stopped before the end of what it asked for: the spans it was given
        may hold transactions it did not take, so the stream is not read again."""
        self._torn = True

    def __enter__(self) -> WalStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    # --- the reader thread ----------------------------------------------------------------

    def _run(self) -> None:
        name_native_thread("walstream")
        pg = self._pg
        sock = self._sock
        read_on = self._fast_drain is None  # the Python loop reads on from the socket
        unix = self._unix
        full = False  # the last chunk filled a Unix socket: read on at once
        last_status = 0.0
        gather = MIN_GATHER_SECONDS
        last_chunk = time.monotonic()
        # the server sends a keepalive when it has sent everything and waits for WAL (and
        # one as the stream starts, before any data): until then it works through a
        # backlog, and the reader takes it at the shortest pause
        caught_up = False
        seen_data = startup_seen = False
        # after a chunk of a busy stream (a pause above the shortest): more is surely on its
        # way, so the reader pauses at once rather than first waiting for the socket — one
        # wakeup a chunk instead of two; what arrives waits no longer than the pause either
        # way, and if nothing came meanwhile the stream is not that busy: what comes next
        # is read after the shortest pause
        pause_first = False
        try:
            while not self._closing:
                now = time.monotonic()
                if (self._reply_due or self._ask or self._confirm > self._sent_confirm
                        or now - last_status >= self._status_interval):
                    ask, self._ask, self._reply_due = self._ask, False, False
                    self._send_status(pg, ask)
                    last_status = now
                if self._buffered >= self._limit:
                    self._wait([], 1.0)
                    continue
                chunk: list[tuple[int, bytes | None]] = []
                size = self._drain(pg, chunk)
                # (the C drain has read on from the socket itself)
                while (read_on and chunk and len(chunk) < _DRAIN_MESSAGES
                       and _readable(sock)):
                    # more has arrived: one bigger chunk costs the consumer less than many
                    if not _consume(pg):
                        raise self._lost(pg)
                    more = self._drain(pg, chunk)
                    if not more:
                        break
                    size += more
                if chunk:
                    with self._cond:
                        self._queue.append((chunk, size))
                        self.chunks += 1
                        self._buffered += size
                        self._available = self._drained_commit
                        self._cond.notify_all()
                    now = time.monotonic()
                    if not caught_up:  # once caught up, it stays so: nothing more to learn
                        counted = chunk
                        if not seen_data and not startup_seen:
                            # the keepalive the stream starts with: neither an answer nor
                            # a sign of keeping up
                            counted, startup_seen = _without_first_keepalive(chunk)
                        keeps_up, self._unanswered = _keeps_up(counted, self._unanswered)
                        if keeps_up:
                            caught_up = seen_data or _data_before_keepalive(chunk)
                        if not seen_data:
                            seen_data = any(item[1] is not None for item in chunk)
                    # a backlog of large transactions is paced as a live stream is: the
                    # server then fills its TCP segments (a Unix socket could not hold it)
                    paced = caught_up or (not unix and _large_transactions(chunk))
                    gather = _gather(len(chunk), now - last_chunk, paced,
                                     self._max_gather)
                    last_chunk = now
                    full = unix and len(chunk) >= UNIX_FULL_MESSAGES
                    pause_first = gather > MIN_GATHER_SECONDS and not full
                    continue
                if pause_first:
                    pause_first = False
                    self._wait([], MIN_GATHER_SECONDS if self._hungry else gather)
                    if not _consume(pg):
                        raise self._lost(pg)
                    continue
                if sock in self._wait([sock], 1.0):
                    # let more arrive: fewer, bigger reads (a waiting consumer too: reading
                    # each segment at once doubled the reader's CPU on a backlog) — the
                    # shortest pause, as a busy stream's longer one comes right after its
                    # chunks (above): data the reader had to wait for is a trickle's, or
                    # comes after a burst, and is read as such
                    if not full:
                        time.sleep(MIN_GATHER_SECONDS)
                    if not _consume(pg):
                        raise self._lost(pg)
            self._send_status(pg, False)
        except SourceError as exc:
            self._error = exc
        except Exception as exc:  # handed to the consumer, never lost
            self._error = SourceError(f"the replication stream of slot {self.slot!r} "
                                      f"failed: {type(exc).__name__}: {exc}")
        finally:
            with contextlib.suppress(Exception):
                pg.finish()
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def _wait(self, socks: list[int], timeout: float) -> list[int]:
        ready, _, _ = select.select([*socks, self._wake_r], [], [], timeout)
        if self._wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        return ready

    def _drain(self, pg: Any, out: list[tuple[int, bytes | None]]) -> int:
        """The messages libpq has buffered (at most ``_DRAIN_MESSAGES``) appended to
        ``out``; returns their size."""
        fast = self._fast_drain
        if fast is not None:
            status, size, self._received, self._drained_commit, reply = fast(
                self._pgconn_ptr, out, _DRAIN_MESSAGES, self._received, self._drained_commit,
                self._sock, self._read_on_ns)
            if reply:
                self._reply_due = True
            if status == -3:
                raise SourceError(f"the server sent a malformed replication message on the "
                                  f"stream of slot {self.slot!r} (after LSN "
                                  f"{format_lsn(self._received)}): is it PostgreSQL?")
            if status < 0:
                raise self._ended(pg, status)
            return size
        size = 0
        received = self._received
        committed = self._drained_commit
        for _ in range(_DRAIN_MESSAGES):
            n, view = pg.get_copy_data(1)
            if n == 0:
                break
            if n < 0:
                raise self._ended(pg, n)
            kind = view[0]
            if kind == 0x77:  # XLogData: start LSN, end LSN, send time, message
                lsn = _unpack_lsn(view, 1)[0]
                data = view[25:].tobytes()
                out.append((lsn, data))
                size += n + _MESSAGE_OVERHEAD
                if lsn > received:
                    received = lsn
                if data[0] == 0x43:  # Commit: its end LSN at offset 10
                    end = _unpack_lsn(data, 10)[0]
                    if end > committed:
                        committed = end
            elif kind == 0x6B:  # keepalive: server WAL end, send time, reply requested
                wal_end, _, reply = _unpack_keepalive(view, 1)
                out.append((wal_end, None))
                size += _MESSAGE_OVERHEAD
                if reply:
                    self._reply_due = True
        self._received = received
        self._drained_commit = committed
        return size

    def _send_status(self, pg: Any, reply: bool) -> None:
        """A standby status update: received, flushed (= confirmed) and applied positions."""
        confirm = self._confirm
        now = int(time.time() * 1_000_000) - PG_EPOCH_UNIX_MICROS
        message = _status.pack(b"r", max(self._received, confirm), confirm, confirm, now,
                               1 if reply else 0)
        if pg.put_copy_data(message) != 1 or pg.flush() != 0:
            raise self._lost(pg)
        self._sent_confirm = confirm
        self.status_updates += 1
        if reply:
            self._unanswered += 1

    def _ended(self, pg: Any, n: int) -> SourceError:
        if n == -1:  # the server ended the COPY: its result says why
            result = pg.get_result()
            reason = _text(result.error_message) if result is not None else ""
            return self._failure(reason or "the server ended the stream")
        return self._lost(pg)

    def _lost(self, pg: Any) -> SourceError:
        reason = _text(pg.error_message) or "connection closed"
        if "does not exist" in reason or "is active" in reason:
            return self._failure(reason)
        return SourceError(f"lost the replication connection to {describe(self.conninfo)} "
                           f"while streaming slot {self.slot!r}: {reason}")


def _gather(messages: int, seconds: float, caught_up: bool,
            longest: float = MAX_GATHER_SECONDS) -> float:
    """The reader's next pause, given that its last chunk held ``messages`` and came
    ``seconds`` after the one before, and whether the server has caught up with the WAL
    since the stream opened (a keepalive it sent on its own): the shortest after a full
    chunk or before the server caught up (the backlog the stream opened on: reading it
    less often slowed the pipeline), else more the busier the stream (see
    ``GATHER_PER_RATE``), up to ``longest``, also when a live stream's server falls behind
    again (read every 2 ms, it then sent nearly every message alone, and stayed behind)."""
    if messages >= _DRAIN_MESSAGES or not caught_up:
        return MIN_GATHER_SECONDS
    rate = messages / max(seconds, 1e-6)
    pause = (rate - GATHER_FROM_RATE) * GATHER_PER_RATE
    return max(MIN_GATHER_SECONDS, min(longest, pause))


def _keeps_up(chunk: list[tuple[int, bytes | None]], unanswered: int) -> tuple[bool, int]:
    """Whether ``chunk`` (a read, in order) shows the server keeping up with the WAL — a
    keepalive among its last items that the server sent because it waits for WAL — and how
    many of the reader's requests for a reply are still unanswered after it.  The server
    answers such a request with a keepalive before its next own one, so as many of the
    chunk's keepalives as there are requests outstanding are answers and prove nothing;
    they are taken to be its last ones (a false "keeps up" is costly, a false "behind"
    is not)."""
    if not unanswered:
        return any(item[1] is None for item in chunk[-_RECENT_ITEMS:]), 0
    keepalives = [k for k, item in enumerate(chunk) if item[1] is None]
    answered = min(len(keepalives), unanswered)
    own = keepalives[: len(keepalives) - answered]
    return any(k >= len(chunk) - _RECENT_ITEMS for k in own), unanswered - answered


def _without_first_keepalive(chunk: list[tuple[int, bytes | None]]
                             ) -> tuple[list[tuple[int, bytes | None]], bool]:
    """``chunk`` (the stream's first) without its first item if that is a keepalive (the
    one the stream opens with), and whether it was."""
    if chunk and chunk[0][1] is None:
        return chunk[1:], True
    return chunk, False


def _data_before_keepalive(chunk: list[tuple[int, bytes | None]]) -> bool:
    """Whether a message comes before the last keepalive of ``chunk``."""
    last = max((k for k, item in enumerate(chunk) if item[1] is None), default=0)
    return any(item[1] is not None for item in chunk[:last])


def _large_transactions(chunk: list[tuple[int, bytes | None]]) -> bool:
    """Whether ``chunk``'s last messages (``_LARGE_TXN_TAIL``) hold at least
    ``LARGE_TXN_MESSAGES`` messages per Commit among them: a stream of large transactions."""
    tail = chunk[-_LARGE_TXN_TAIL:]
    commits = sum(1 for _, m in tail if m is not None and m[:1] == b"C")
    return len(tail) >= LARGE_TXN_MESSAGES * max(commits, 1)


def _is_unix_socket(fd: int) -> bool:
    """Whether the connection's socket is a Unix-domain one (a server on this host)."""
    try:
        probe = socket.socket(fileno=fd)
    except OSError:
        return False
    try:
        return probe.family == socket.AF_UNIX
    finally:
        probe.detach()  # the descriptor stays libpq's


def _readable(sock: int) -> bool:
    """Whether the socket has data now (no waiting)."""
    return bool(select.select([sock], [], [], 0)[0])


def _begin_copy_both(pg: Any, command: bytes, timeout: float) -> str | None:
    """Send ``START_REPLICATION``; None once the server is streaming, else its error."""
    pg.send_query(command)
    deadline = time.monotonic() + timeout
    while True:
        if not _consume(pg):
            return _text(pg.error_message) or "connection closed"
        if not pg.is_busy():
            result = pg.get_result()
            break
        if time.monotonic() > deadline:
            return f"no answer to START_REPLICATION in {timeout:.0f} s"
        select.select([pg.socket], [], [], 1.0)
    if result is not None and result.status == pq.ExecStatus.COPY_BOTH:
        return None
    if result is None:
        return _text(pg.error_message) or "no answer to START_REPLICATION"
    return _text(result.error_message) or f"unexpected answer {result.status!r}"


def _consume(pg: Any) -> bool:
    """Read what the socket has into libpq's buffer; False if the connection failed."""
    try:
        pg.consume_input()
    except psycopg.Error:
        return False
    return True


def _text(message: bytes | None) -> str:
    return (message or b"").decode("utf-8", "replace").strip()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
