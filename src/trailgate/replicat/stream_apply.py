"""The Replicat's PostgreSQL apply as the trail grows, between micro-batches too.

An :class:`ApplyStreamer` is a driver thread with its own target connection: it applies
whole transactions as soon as the trail holds them, each step one target transaction that
also moves the group's checkpoint-table row (nothing lost or doubled), and writes the group
checkpoint (on a thread of its own) at most once a second, so INFO and LAG follow it
whatever the batch window; a micro-batch's :meth:`~ApplyStreamer.sync` waits for it.  An
idle trail is not polled: the thread sleeps until the trail's directory changes, a sync
asks, or a second passes.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trailgate.apply.checkpoint_table import STREAM_BATCH
from trailgate.apply.ddl_errors import DdlError
from trailgate.apply.paused_gc import paused_gc
from trailgate.apply.postgres import PgApplier
from trailgate.apply.records import TableCounts
from trailgate.changes.routing import Router
from trailgate.errors import TargetError, TrailgateError
from trailgate.model import TrailPosition
from trailgate.params.model import DEFAULT_REPLICAT_EOF_DELAY_SECONDS
from trailgate.replicat.ddl_steps import ddl_mark, ddl_steps
from trailgate.replicat.range_apply import apply_range
from trailgate.replicat.task_rows import BatchSummary, position_commit
from trailgate.replicat.trail_tail import TrailTail
from trailgate.spark.batch_window import stop_requested
from trailgate.spark.trail_offsets import ScanState, scan_boundary
from trailgate.thread_name import name_native_thread
from trailgate.trail.naming import TrailName
from trailgate.trail.watch import TrailWatch

__all__ = ["CHECKPOINT_SECONDS", "CHUNK_RECORDS", "HOLD_SECONDS", "POLL_SECONDS",
           "SPLIT_DDL_RECORDS", "WATCH_SECONDS", "ApplyStreamer", "Progress"]

log = logging.getLogger("trailgate.replicat")

#: The most change records one target transaction takes (the default batch bound's size):
#: a backlog is applied in steps of this, each committed with its row.
CHUNK_RECORDS = 100_000
#: A step holding DDL and at least this many change records is cut at its DDL
#: transactions (:mod:`~trailgate.replicat.ddl_steps`); a smaller one is applied whole.
SPLIT_DDL_RECORDS = 200
#: Seconds between looks at the trail where the kernel cannot report its changes (no
#: inotify).  A look at an idle trail is a ``stat`` of its last file and of the next two; only
#: a trail that grew is scanned.
POLL_SECONDS = 0.01
#: The longest sleep on an idle trail whose changes the kernel reports: a change wakes the
#: thread at once; this only bounds how late one it cannot report is seen.
WATCH_SECONDS = 1.0
#: Seconds between looks at the stop file while it holds the streamer (a ``stat``: a
#: release is seen within this).
HOLD_SECONDS = 0.01
#: A step's start is at least this many times what the last step took after that step's
#: start, and at most ``step_gap`` (the Replicat's ``EOFDELAYCSECS``, by default
#: :data:`STEP_GAP_SECONDS`) after it: a step costs round trips and Python whatever it
#: holds, so when transactions come faster than steps are cheap they gather into fewer
#: steps, while a trickle is applied as each transaction lands.
STEP_SPACING = 20.0
STEP_GAP_SECONDS = DEFAULT_REPLICAT_EOF_DELAY_SECONDS
#: How often, at most, the thread writes the group checkpoint after steps on its own.
CHECKPOINT_SECONDS = 1.0


@dataclass(slots=True)
class Progress:
    """What the streamer applied: everything before ``position``; the last source commit
    it applied; counts per target table since the last :meth:`ApplyStreamer.sync`."""

    position: TrailPosition
    read_time: str | None = None
    last_csn: int | None = None
    last_xid: str | None = None
    counts: dict[str, TableCounts] = field(default_factory=dict)

    def summary(self) -> BatchSummary:
        """As a micro-batch's summary, for the group checkpoint."""
        return BatchSummary(end={"seqno": self.position.seqno, "rba": self.position.rba},
                            read_time=self.read_time, last_csn=self.last_csn,
                            last_xid=self.last_xid)


class ApplyStreamer:
    """Applies trail ``trail`` through ``applier`` (which it then owns) as it grows, from
    ``start`` or where the group's stream row says if that is later (module docstring).
    ``sync``, ``checkpoint`` and ``close`` are for the micro-batches' thread.
    ``checkpoint``: writes the group checkpoint from a :class:`Progress` whose counts are
    those not yet recorded; called at most every ``checkpoint_seconds`` after steps, and
    by :meth:`checkpoint`.  ``nowait``: steps commit without waiting for the target's disk
    (COMMIT NOWAIT); a commit that waits makes them durable before a sync is answered, a
    checkpoint written or the streamer closed, and only that is reported as applied.
    ``step_gap``: the longest, in seconds, a step waits after the last one began while
    transactions reach the trail (``STEP_SPACING``; the Replicat's ``EOFDELAYCSECS``)."""

    def __init__(self, applier: PgApplier, trail: str, router: Router, start: TrailPosition,
                 *, stop_file: Path | None = None,
                 checkpoint: Callable[[Progress], None] | None = None,
                 checkpoint_seconds: float = CHECKPOINT_SECONDS, nowait: bool = False,
                 step_gap: float = STEP_GAP_SECONDS):
        self.applier = applier
        self.step_gap = step_gap
        self.trail = trail
        self.router = router
        self.stop_file = str(stop_file) if stop_file is not None else None
        self._name = TrailName(trail)
        self._base = str(self._name)  # the files' names are this and a sequence number
        nowait = nowait and applier.checkpoint is not None  # no row: every commit waits
        try:
            recorded = applier.stream_position()
            if recorded is not None:
                start = max(start, TrailPosition.parse(recorded))
            if nowait:
                applier.commit_nowait()
        except BaseException:
            applier.close()
            raise
        self._recorded = recorded or ""  # what the row says (what a move must find there)
        self._progress = Progress(start)
        # steps commit without waiting for the target's disk; what a flush made durable
        # is all a sync, a checkpoint or the close reports (a lost commit is applied again)
        self._nowait = nowait
        self._durable = Progress(start)
        self._want = start  # apply at least this far (a waiting sync's end)
        self._on_checkpoint = checkpoint
        self.checkpoint_seconds = checkpoint_seconds
        self._ck_lock = threading.Lock()  # one checkpoint write at a time
        self._unsaved: dict[str, TableCounts] = {}  # counts the checkpoint has not taken
        self._pending: dict[str, TableCounts] = {}  # counts of steps not yet durable
        self._dirty = False  # what the last checkpoint write did not cover
        self._saved: TrailPosition | None = None  # the position the last write recorded
        self._saved_at = 0.0  # monotonic time of the last checkpoint write
        self.checkpoints = 0  # group checkpoint writes (tests)
        self._writer: threading.Thread | None = None  # the thread's own write under way
        self._error: BaseException | None = None
        self._closing = False
        self._cond = threading.Condition()
        self.transactions = 0  # target transactions committed (tests, reports)
        self._watch = TrailWatch(self._name.directory)
        self._tail = TrailTail(trail)  # the thread's: the file it reads, kept open
        self._seen: os.stat_result | None = None  # the last look's: the file's stat
        self._nine = False  # the last file found had a nine-digit name
        self._thread = threading.Thread(target=self._run, name="apply streamer", daemon=True)
        self._thread.start()

    @property
    def position(self) -> TrailPosition:
        """Everything before it is applied and durable on the target."""
        return self._durable.position

    # -- the micro-batches' side --------------------------------------------------------

    def sync(self, end: TrailPosition) -> Progress:
        """Wait until everything before ``end`` is applied; what was applied since the
        last sync (its position may be past ``end``).  Raises the thread's failure."""
        with self._cond:
            if end > self._want:
                self._want = end
                self._cond.notify_all()
                self._watch.interrupt()
            while self._durable.position < end and self._error is None:
                if not self._thread.is_alive():
                    raise TargetError("the Replicat's apply streamer has stopped")
                self._cond.wait(0.5)
            self._raise()
            return self._take()

    def checkpoint(self) -> None:
        """Write the group checkpoint for everything applied so far, unless this streamer
        wrote it already and took no step since; its counts are those no write took yet."""
        if self._on_checkpoint is None:
            return
        with self._ck_lock:
            with self._cond:
                d = self._durable
                if not self._dirty and self._saved == d.position:
                    return
                taken = Progress(d.position, d.read_time, d.last_csn, d.last_xid,
                                 self._unsaved)
                # a position not yet durable is written by a later checkpoint
                self._unsaved, self._dirty = {}, d.position != self._progress.position
            try:
                self._on_checkpoint(taken)
            except BaseException:
                with self._cond:  # not recorded: the next write takes them again
                    for target, counts in taken.counts.items():
                        self._unsaved.setdefault(target, TableCounts()).add(counts)
                    self._dirty = True
                raise
            self._saved, self._saved_at = taken.position, time.monotonic()
            self.checkpoints += 1

    def _checkpoint_in(self) -> float:
        """Seconds until the thread's own checkpoint write is due (infinite when the last
        one covered every step)."""
        if (self._on_checkpoint is None or not self._dirty
                or (self._writer is not None and self._writer.is_alive())):
            return float("inf")
        return self._saved_at + self.checkpoint_seconds - time.monotonic()

    def _checkpoint_behind(self) -> None:
        """The thread's own checkpoint write, on a thread of its own: its fsyncs would
        hold every step behind them.  A failure stops the streamer as a step's would."""
        def run() -> None:
            name_native_thread("apply ckpt")
            try:
                self.checkpoint()
            except BaseException as exc:
                self._fail(exc)
                self._watch.interrupt()

        self._writer = threading.Thread(target=run, name="apply checkpoint", daemon=True)
        self._writer.start()

    def close(self) -> Progress:
        """Finish the transaction under way, stop the thread and close its connection;
        what was applied since the last sync."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._watch.interrupt()
        self._thread.join()
        if self._writer is not None:
            self._writer.join()
        self._watch.close()
        try:
            self._make_durable()
        except Exception as exc:  # what the flush did not confirm is applied again
            log.warning("the Replicat's last steps were not confirmed durable on the "
                        "target (%s); its checkpoint stays at %s", exc,
                        self._durable.position)
        self.applier.close()
        with self._cond:
            return self._take()

    def _take(self) -> Progress:
        d, p = self._durable, self._progress
        taken = Progress(d.position, d.read_time, d.last_csn, d.last_xid, p.counts)
        p.counts = {}
        return taken

    def failure(self) -> TrailgateError | None:
        """The thread's failure, if it stopped with one (what a sync raises)."""
        error = self._error
        if error is None or isinstance(error, TrailgateError):
            return error
        return TargetError(f"the Replicat's apply streamer stopped: {error}")

    def _raise(self) -> None:
        error = self.failure()
        if error is not None:
            raise error

    # -- the streamer's thread ----------------------------------------------------------

    def _run(self) -> None:
        name_native_thread("apply streamer")
        state: ScanState | None = None
        idle: tuple[int, int, int, bool] | None = None  # the look before a scan found nothing
        next_step = 0.0  # the monotonic time before which no step starts unless asked
        try:
            while True:
                with self._cond:
                    if self._closing or self._error is not None:
                        return
                    at, want = self._progress.position, self._want
                    durable = self._durable.position
                if self._checkpoint_in() <= 0:
                    self._make_durable()
                    self._checkpoint_behind()
                elif durable < want <= at:  # a sync waits for what is applied
                    self._make_durable()
                held = stop_requested(self.stop_file)
                if held and at >= want:
                    self._pause(min(HOLD_SECONDS, self._checkpoint_in()))
                    continue
                gap = next_step - time.monotonic()
                if gap > 0 and want <= at:
                    self._pause(min(gap, self._checkpoint_in()))  # more for the same cost
                    continue
                # the look comes before the scan: growth during the scan must tell
                look = self._look(state, at)
                if idle is not None and want <= at and look == idle:
                    self._idle()
                    continue
                found = None if held else self._tail.scan(
                    at, state, self._seen, look[2] >= 0, max_records=CHUNK_RECORDS,
                    mark=ddl_mark)
                if found is None:
                    found = scan_boundary(
                        self.trail, at, limit=want if held else None,
                        max_records=CHUNK_RECORDS, state=state, mark=ddl_mark)
                end, records, state = found
                if end > at:
                    idle = None
                    began = time.monotonic()
                    if state.marked and state.covered >= SPLIT_DDL_RECORDS:
                        for lower, upper in ddl_steps(self.trail, at, end):
                            self._apply(lower, upper)
                    else:
                        self._apply(at, end, records)
                    now = time.monotonic()
                    next_step = began + min(self.step_gap, STEP_SPACING * (now - began))
                    # all the look saw was read and applied: until the trail changes, a
                    # scan would find nothing (a trickle's steps skip that empty scan)
                    read_all = (not held and look[2] < 0  # (a next file: scan on into it)
                                and state.resume == TrailPosition(look[0], look[1]))
                    idle = look if read_all else None
                    continue
                idle = look
                self._idle()
        except BaseException as exc:
            self._fail(exc)
        finally:
            self._tail.close()

    def _fail(self, exc: BaseException) -> None:
        """Stop with ``exc``: the micro-batches' next sync raises it."""
        log.warning("the Replicat's apply streamer stopped: %s", exc)
        with self._cond:
            self._error = exc
            self._cond.notify_all()

    def _look(self, state: ScanState | None, at: TrailPosition) -> tuple[int, int, int, bool]:
        """What tells whether the trail grew past where the last scan stopped: which file
        that is, its size, the size of the next one (a scan that found the next file still
        being written stops before it, so its growth must count) and, when there is a next
        one, whether a third exists.  Taken before a scan, so what is written during the
        scan differs from it; :class:`TrailTail`'s scan reads up to the size it saw."""
        seqno = (state.resume if state is not None else at).seqno
        seen = self._seen = self._stat(seqno)
        after = self._size(seqno + 1)
        return (seqno, -1 if seen is None else seen.st_size, after,
                after >= 0 and self._size(seqno + 2) >= 0)

    def _stat(self, seqno: int, *, six: bool = True) -> os.stat_result | None:
        """File ``seqno``'s ``stat``, None if there is none: of its nine-digit name, then
        (``six``) of its six-digit one, by name alone (a look precedes every scan: no
        ``exists`` first, no path objects).  A file found by its nine-digit name is
        trailgate's writer's, whose next files have nine digits too: :meth:`_size` then
        tries only those."""
        try:
            seen = os.stat(f"{self._base}{seqno:09d}")
            self._nine = True
            return seen
        except OSError:
            if not six or seqno >= 1_000_000:
                return None
        try:
            seen = os.stat(f"{self._base}{seqno:06d}")
            self._nine = False
            return seen
        except OSError:
            return None

    def _size(self, seqno: int) -> int:
        """File ``seqno``'s size, -1 if there is none (its six-digit name tried only after a
        file that had one)."""
        seen = self._stat(seqno, six=not self._nine)
        return -1 if seen is None else seen.st_size

    def _idle(self) -> None:
        """Wait for the trail to change (module docstring), a sync asking for more, or the
        streamer closing."""
        if not self._watch.active:
            self._pause(min(POLL_SECONDS, self._checkpoint_in()))
            return
        with self._cond:
            if self._closing or self._want > self._progress.position:
                return
        wait = min(WATCH_SECONDS, self._checkpoint_in())
        if wait > 0:
            self._watch.wait(wait)

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less if a sync asks for more or the streamer is closing."""
        deadline = time.monotonic() + seconds
        with self._cond:
            want = self._want
            while not self._closing and self._want == want:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def _apply(self, lower: TrailPosition, upper: TrailPosition,
               records: int | None = None) -> None:
        """``[lower, upper)`` (whole transactions) in one target transaction with the row
        moved to ``upper`` (none when nothing in it is mapped: the row then stays).  A DDL
        that stops the Replicat (DDLERROR ABEND) first lets the transactions before its own
        be committed, so a restart begins at that DDL's transaction."""
        try:
            self._step(lower, upper, records)
        except DdlError as exc:
            start = exc.txn_start
            if start is not None and lower < start < upper:
                self._step(lower, start)
            raise

    def _step(self, lower: TrailPosition, upper: TrailPosition,
              records: int | None = None) -> None:
        with paused_gc():
            result, position = apply_range(self.applier, STREAM_BATCH, self.trail, lower,
                                           upper, self.router,
                                           advance=(self._recorded, str(upper)),
                                           records=records,
                                           read=self._tail.span(lower, upper))
        self._tail.applied(upper)
        commit = position_commit(json.loads(position))  # the range's position row
        with self._cond:
            if result is not None:
                self._recorded = str(upper)
                self.transactions += 1
                for target, counts in result.counts.items():
                    self._pending.setdefault(target, TableCounts()).add(counts)
            self._dirty = True
            p = self._progress
            p.position = upper
            if commit is not None:
                p.read_time, p.last_csn, p.last_xid = commit
            if not self._nowait:  # committed waiting for the disk: durable now
                pending, self._pending = self._pending, {}
                self._settle(Progress(p.position, p.read_time, p.last_csn, p.last_xid),
                             pending)
            self._cond.notify_all()

    def _settle(self, done: Progress, counts: dict[str, TableCounts]) -> None:
        """Everything before ``done`` is durable, with ``counts`` the steps' there since
        the last: what syncs, checkpoints and the close report (called under the lock)."""
        self._durable = done
        for target, c in counts.items():
            self._progress.counts.setdefault(target, TableCounts()).add(c)
            self._unsaved.setdefault(target, TableCounts()).add(c)

    def _make_durable(self) -> None:
        """Wait until every step committed so far is on the target's disk (a no-op where
        steps wait for it themselves), then report them as applied."""
        with self._cond:
            p = self._progress
            if p.position <= self._durable.position:
                return
            done = Progress(p.position, p.read_time, p.last_csn, p.last_xid)
            pending, self._pending = self._pending, {}
        self.applier.flush_commits()
        with self._cond:
            self._settle(done, pending)
            self._cond.notify_all()
