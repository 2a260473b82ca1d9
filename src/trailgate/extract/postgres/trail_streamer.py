"""The Extract's trail written as transactions arrive, between micro-batches too.

A :class:`TrailStreamer` is a driver thread that owns the streamed slot and the trail's
writer: it writes whole transactions as the server sends them, and every ``flush_seconds``
(FLUSHSECS) or for a micro-batch's :meth:`~TrailStreamer.sync` makes them durable (on a
thread of its own, one flush at a time, while reading goes on), writes the group
checkpoint and only then confirms the slot: the slot never passes what is durable and
checkpointed.  After a crash the next run skips what the trail holds.  docs/processes.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from trailgate.checkpoint import CheckpointStore
from trailgate.errors import SourceError, TrailgateError
from trailgate.spark.batch_window import stop_requested
from trailgate.spark.trail_sink import (
    SinkOptions,
    TrailAppender,
    TrailCommitMessage,
    commit_checkpoint,
)
from trailgate.thread_name import name_native_thread

if TYPE_CHECKING:
    from trailgate.extract.postgres.source import StreamedSlot

__all__ = ["GATHER_SECONDS", "HOLD_WAIT_SECONDS", "IDLE_WAIT_SECONDS", "TrailStreamer"]

log = logging.getLogger("trailgate.extract")

#: The longest the thread waits for the server before it looks at its requests again: the
#: server's data and every request (a sync, close) wake it at once, so this
#: only bounds how late a new stop file is seen (and how often an idle Extract wakes).
IDLE_WAIT_SECONDS = 0.5
#: How often, at most, the thread looks for the stop file (a ``stat``): a hold and a
#: release are seen within this (the stream let go of, or opened again, at once), and a
#: busy stream's reads do not each pay for a look.
HOLD_WAIT_SECONDS = 0.01
#: The longest time between the starts of two reads while no micro-batch waits: each read
#: has a fixed cost (a generator chain, an Arrow batch, a write), so under load a read takes
#: what arrived in this time rather than each chunk of the stream as it lands.
GATHER_SECONDS = 0.02
#: The shortest such time: a trickle of small transactions is read almost as it lands.
MIN_GATHER_SECONDS = 0.002
#: Between those, the gap is this many times the CPU the last read took, so reads use at
#: most a tenth of a core whatever their fixed cost on this machine.  (By CPU, not by the
#: clock: on a busy machine a read's clock time is mostly waiting for a core, and gathering
#: by it would only add that wait again to every transaction's lag.)
GATHER_PER_READ = 10.0
#: Snapshots a hold logs at most to bring the slot's restart point to the trail's end ...
SETTLE_TRIES = 2
#: ... when it lags that by more than this (a snapshot's record and a little WAL besides),
SETTLE_SLACK_BYTES = 64 << 10
#: ... and only a stream caught up: with the server's WAL ending further than this past
#: what the trail holds none is logged, and one whose record ends further is not read to
#: (a hold behind the server lets go at once).
SETTLE_MAX_BYTES = 1 << 20
#: Before it looks at the restart point, a hold waits at most this long for the server to
#: take the stream's last confirmation (which moves it): not looking too soon saves a
#: second snapshot, and a confirmation the server does not take in this time (a lost
#: stream, a very busy machine) only costs one.
SETTLE_CONFIRM_SECONDS = 0.5


class TrailStreamer:
    """Streams slot ``slot`` from ``start`` into the trail of ``sink`` (module docstring).
    ``sync`` and ``close`` are for the micro-batches' thread; everything else
    runs in the streamer's own.  ``flush_seconds``: how often, at most, what was written is
    made durable and checkpointed without a sync asking (None: only for a sync, for a hold
    and at close)."""

    def __init__(self, slot: StreamedSlot, sink: SinkOptions, start: int, *,
                 stop_file: str | None = None, flush_seconds: float | None = None):
        self.slot = slot
        self.sink = sink
        self.start = start
        self.stop_file = stop_file
        self.flush_seconds = flush_seconds
        self.flushes = 0  # times made durable and checkpointed (tests)
        self.reads = 0  # reads of the stream written to the trail (tests, benchmarks)
        self._written = start  # every transaction committing before it is in the trail
        # the group checkpoint covers every transaction committing before it: at start
        # what an earlier run (or a streamer of this one) recorded, so a replay of an
        # older range never moves the checkpoint back
        self._checkpointed = max(start, _checkpoint_lsn(sink))
        self._flushed_at = 0.0  # monotonic time of the last flush
        self._flusher: threading.Thread | None = None  # a flush's slow half under way
        self._flush_error: BaseException | None = None
        self._want = start  # read at least this far (a waiting sync's end)
        self._sync_end: int | None = None
        self._synced: TrailCommitMessage | None = None
        self._confirm = 0
        self._error: BaseException | None = None
        self._closing = False
        self._cond = threading.Condition()
        self._reported = False  # the error reached a sync
        self._thread = threading.Thread(target=self._run, name="trail streamer", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        """Every transaction committing before this LSN is in the trail (maybe not yet
        durable)."""
        return self._written

    # -- the micro-batches' side --------------------------------------------------------

    def sync(self, end: int) -> TrailCommitMessage:
        """Wait until everything committed before ``end`` is written, durable and in the
        group checkpoint; the commit message of the writes since the last flush."""
        with self._cond:
            self._check()
            self._want = max(self._want, end)
            self._sync_end, self._synced = end, None
            self._cond.notify_all()
        self.slot.interrupt()
        with self._cond:
            while self._synced is None:
                self._check()
                self._cond.wait(1.0)
            msg, self._synced = self._synced, None
            return msg

    def close(self) -> SourceError | None:
        """Stop after the read in progress; what was written is made durable (the sink
        state then covers the whole file, so the run's last batch can complete it).  A
        failure no sync reported is logged and returned: the trail keeps what reached it,
        and the next run recovers from the trail itself."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self.slot.interrupt()
        self._thread.join(timeout=60)
        if self._error is not None and not self._reported:
            log.warning("the Extract's trail streamer stopped: %s", self._error)
            return self.failure()
        return None

    def failure(self) -> SourceError | None:
        """The thread's failure, if it stopped with one (as the next sync would raise
        it)."""
        error = self._error
        if error is None:
            return None
        self._reported = True
        if isinstance(error, SourceError):
            return error
        return SourceError(f"the Extract's trail streamer stopped: {error}")

    def _check(self) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error
        if not self._thread.is_alive():
            raise SourceError("the Extract's trail streamer has stopped")

    # -- the streamer's thread ----------------------------------------------------------

    def _run(self) -> None:
        name_native_thread("trail streamer")
        appender: TrailAppender | None = None
        try:
            appender = TrailAppender(self.sink)
            self._loop(appender)
            if self.flush_seconds is not None and self._unflushed() and self.slot.is_open:
                self._flush(appender)  # a clean stop: the checkpoint covers the trail
            with self._cond:  # a confirmation not yet sent goes out as the stream closes
                confirm, self._confirm = self._confirm, 0
            if confirm and self.slot.is_open:
                self.slot.confirm(confirm)
            appender.close()
        except BaseException as exc:  # handed to the next sync (or logged by close)
            with self._cond:
                self._error = exc
                self._cond.notify_all()
            if appender is not None:  # nothing more reaches the file; a new run recovers
                appender.abandon()

    def _loop(self, appender: TrailAppender) -> None:
        try:
            self._stream(appender)
        except BaseException as exc:  # a flush under way ends first; its failure is logged
            flusher = self._flusher
            if flusher is not None:
                flusher.join()
            if self._flush_error is not None and self._flush_error is not exc:
                log.warning("the Extract's trail flush failed too: %s", self._flush_error)
            raise
        self._flushed()

    def _stream(self, appender: TrailAppender) -> None:
        slot = self.slot
        slot.open_at(self.start)
        last_read = 0.0
        gather = GATHER_SECONDS
        released = False  # the stream was closed for a hold
        settles = 0  # snapshots this hold logged to move the restart point (_settle_point)
        held, look_at = False, 0.0  # the stop file's last look, and when the next is due
        while True:
            if self._flush_error is not None:
                raise self._flush_error
            with self._cond:
                if self._closing:
                    return
                want, sync_end, confirm = self._want, self._sync_end, self._confirm
                self._confirm = 0
            if confirm and slot.is_open:
                slot.confirm(confirm)
            elif confirm:  # held: sent once the stream is open again
                with self._cond:
                    self._confirm = max(self._confirm, confirm)
            if self.stop_file is not None and time.monotonic() >= look_at:
                held = stop_requested(self.stop_file)
                look_at = time.monotonic() + HOLD_WAIT_SECONDS
                if not held:  # a hold given up while settling: the next one settles anew
                    settles = 0
            if held and sync_end is None and want <= self._written:
                if slot.is_open:
                    self._flushed()  # the flush under way counts
                    if self.flush_seconds is not None and self._unflushed():
                        self._flush(appender)  # durable and checkpointed before the hold
                    with self._cond:  # a confirmation that came meanwhile goes out first
                        confirm, self._confirm = self._confirm, 0
                    if confirm:
                        slot.confirm(confirm)
                    if settles < SETTLE_TRIES:
                        settles += 1
                        point = self._settle_point()
                        if point > self._written:
                            with self._cond:  # read to it first (held: no further)
                                self._want = max(self._want, point)
                            continue
                    slot.close()  # the server decodes nothing for a held group
                    released = True
                with self._cond:
                    if self._sync_end is None and not self._closing:
                        self._cond.wait(HOLD_WAIT_SECONDS)
                continue
            if released:  # open again where it stopped (a lost stream waits for a read)
                slot.open_at(self._written)
                released, settles = False, 0
            if sync_end is not None and self._written >= sync_end:
                # the flush under way ends first (one at a time): a sync waits for it anyway
                with self._cond:
                    self._sync_end = None
                self._flush_behind(appender, answer=True)
                continue
            if self._flush_in() <= 0:
                self._flush_behind(appender)
                continue
            target = want if held else max(slot.available(), want)
            if target > self._written:
                pause = last_read + gather - time.monotonic()
                if sync_end is None and pause > 0:  # gather more (a sync ends the pause)
                    with self._cond:
                        if self._sync_end is None and not self._closing:
                            self._cond.wait(pause)
                    continue
                last_read, cpu = time.monotonic(), time.thread_time()
                appender.append(slot.read(self._written, target, position=False))
                self.reads += 1
                gather = min(GATHER_SECONDS, max(
                    MIN_GATHER_SECONDS, GATHER_PER_READ * (time.thread_time() - cpu)))
                with self._cond:
                    self._written = target
                continue
            slot.wait_available(self._written,
                                max(0.0, min(IDLE_WAIT_SECONDS, self._flush_in())))

    def _settle_point(self) -> int:
        """Before a hold lets go of the slot, when the slot's restart point lags what the
        trail holds: a running-transactions snapshot logged now, and the end of its record
        (0 when the restart point is near, none can be logged, nothing would confirm it,
        or the stream is behind the server by more than ``SETTLE_MAX_BYTES``).  The
        streamer reads to it (the server has decoded it once its stream passes it), makes
        that durable and checkpointed and confirms it, and the server moves the
        restart point to it: the stream opened at the release decodes from there, not
        again from wherever the last snapshot the stream confirmed past happened to be (up
        to 15 s of WAL the trail holds).  The server takes a snapshot as the next restart
        point only when none it decoded earlier waits for a confirmation (one logged
        while a transaction ran may point back before that transaction): what that one
        gives is looked at after its confirmation, and a second snapshot logged if it
        still lags (``SETTLE_TRIES``).  Each look first waits (``SETTLE_CONFIRM_SECONDS``
        at most) for the server to take the last confirmation, so in the usual case the
        first snapshot is the only one."""
        if self.flush_seconds is None:  # the hold confirms only what a sync made durable
            return 0
        try:
            point = self.slot.snapshot_if_behind(
                self._written, SETTLE_SLACK_BYTES, ahead=SETTLE_MAX_BYTES,
                wait=SETTLE_CONFIRM_SECONDS) or 0
        except (psycopg.Error, TrailgateError) as exc:  # the hold lets go all the same
            log.info("the slot's restart point is left where it is at this hold: %s", exc)
            return 0
        if point - self._written > SETTLE_MAX_BYTES:  # behind the server: no settling
            return 0
        return point

    def _unflushed(self) -> bool:
        """Whether the trail holds transactions the group checkpoint does not cover."""
        return self._written > self._checkpointed

    def _flush_in(self) -> float:
        """Seconds until a flush is due (infinite with nothing to flush, no period, or
        the last periodic flush still under way: its end wakes the thread)."""
        if self.flush_seconds is None or not self._unflushed() or self._flushing():
            return float("inf")
        return self._flushed_at + self.flush_seconds - time.monotonic()

    def _flush(self, appender: TrailAppender) -> None:
        """Make every write durable, record it in the group checkpoint (the content a
        micro-batch's commit writes for the same range), then let the slot move there:
        the slot never passes what is durable and checkpointed."""
        self._checkpoint(*self._begin_flush(appender))

    def _begin_flush(self, appender: TrailAppender
                     ) -> tuple[Callable[[], TrailCommitMessage], int]:
        """A flush's quick half, after the flush under way ends: everything written so
        far taken; what makes it durable, and the LSN the slot may then move to."""
        self._flushed()
        lsn = max(self._written, self._checkpointed)
        finish = appender.sync_later(self.slot.position_row(lsn))
        self._flushed_at = time.monotonic()
        return finish, lsn

    def _flush_behind(self, appender: TrailAppender, *, answer: bool = False) -> None:
        """The periodic flush, or a sync's (``answer``: its message goes to the waiting
        :meth:`sync`): everything written so far taken here, made durable and checkpointed
        (then confirmed) by a thread of its own while this one reads on."""
        finish, lsn = self._begin_flush(appender)

        def run() -> None:
            name_native_thread("trail flush")
            try:
                msg = self._checkpoint(finish, lsn)
                if answer:
                    with self._cond:
                        self._synced = msg
                        self._cond.notify_all()
            except BaseException as exc:  # the streamer's thread raises it (to the sync)
                self._flush_error = exc
            self.slot.interrupt()  # the confirmation goes out (or the error is seen)

        self._flusher = threading.Thread(target=run, name="trail flush", daemon=True)
        self._flusher.start()

    def _flushing(self) -> bool:
        """Whether a flush's slow half is under way."""
        return self._flusher is not None and self._flusher.is_alive()

    def _flushed(self) -> None:
        """Wait for the flush under way, if any; raise its failure."""
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.join()
        if self._flush_error is not None:
            raise self._flush_error

    def _checkpoint(self, finish: Callable[[], TrailCommitMessage],
                    lsn: int) -> TrailCommitMessage:
        """A flush's slow half: durable, then the group checkpoint, then the slot may move
        to ``lsn``."""
        msg = finish()
        commit_checkpoint(self.sink, [msg])
        with self._cond:
            self._checkpointed = max(self._checkpointed, lsn)
            self.flushes += 1
            self._confirm = max(self._confirm, lsn)
        return msg


def _checkpoint_lsn(sink: SinkOptions) -> int:
    """The read position of the group checkpoint (0 without one)."""
    if not (sink.home and sink.group):
        return 0
    ck = CheckpointStore(Path(sink.home) / "dirchk").load(sink.group, "EXTRACT")
    try:
        return ck.read_lsn if ck is not None else 0
    except (TypeError, ValueError):
        return 0
