"""When a streaming source lets Spark start its next micro-batch: a batch window that closes
early when the source goes quiet.

Why: with a fixed ``processingTime`` trigger of *w*, a change that arrives just after a tick
waits up to *w* before its batch even starts, in each group it passes through; at the end
of a burst the Extract's last batch and then the Replicat's each waited half a trigger on
average, most of trailgate's lag behind native replication.  A shorter trigger cuts the wait
but pays Spark's per-batch bookkeeping more often under load.

So the groups run their queries with a zero trigger and their sources decide in
``latestOffset``, with a :class:`BatchWindow` of *w* (``SPARK TRIGGER``):

* nothing new: wait for something, for at most ``idle`` seconds (then no batch: Spark asks
  again at once), looking after ``poll`` seconds, then twice as long each time up to
  ``poll_max`` (an idle group costs little: each look is a query or a read of the trail's
  end), and again every ``poll`` once something arrived;
* something new: start a batch as soon as the source has been quiet for ``quiet`` seconds
  (nothing more arrived: the burst is over), or once *w* has passed since the last batch
  started (under steady load, at most one batch per window, as the trigger gave), or at
  once when the source reached a batch bound (``full``).

A *patient* window (the Extract when it writes the trail as transactions arrive, so its
batch only makes them durable; the Replicat when it applies the trail as it grows, so its
batch only records how far it got) does not start on quiet: something new starts a batch
once *w* has passed since the last one started (at once after a pause), and never more than
one per window.  Why: the WAL position it probes also moves for WAL that holds no captured
change (autovacuum after a large workload), in small steps with quiet between them; on
quiet each step started a batch, about ten a second, each costing Spark's bookkeeping.

The probe is the source's own: the server's flushed WAL position for the Extract, the last
transaction boundary in the trail for the Replicat.  A stop request (the group's stop file)
ends the wait with no batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsDunderGT

__all__ = ["IDLE_SECONDS", "PATIENT_OPTION", "POLL_MAX_SECONDS", "POLL_SECONDS",
           "QUIET_SECONDS", "WINDOW_OPTION", "ZERO_TRIGGER", "BatchWindow", "stop_requested",
           "window_ms"]

#: The source option that gives the window (milliseconds).
WINDOW_OPTION = "batchWindowMs"
#: The source option that makes it patient (``true``).
PATIENT_OPTION = "batchWindowPatient"
#: The query's trigger when its source keeps the window.
ZERO_TRIGGER = "0 seconds"

#: Seconds between looks while nothing is new: at first, and at the most.
POLL_SECONDS = 0.02
POLL_MAX_SECONDS = 0.2
#: Seconds without anything new after which the source is quiet (a burst is over).
QUIET_SECONDS = 0.03
#: The longest one ``latestOffset`` call waits for something new.
IDLE_SECONDS = 0.5


def window_ms(seconds: float) -> str:
    """``SPARK TRIGGER``'s seconds as the ``batchWindowMs`` option's value."""
    return str(max(0, round(seconds * 1000)))


def stop_requested(stop_file: str | None) -> bool:
    """Whether a group's stop file (a source's ``stopFile`` option) exists: then its
    source lets no new batch start."""
    return stop_file is not None and os.path.exists(stop_file)


# an offset: anything ordered (an LSN, a TrailPosition)
Offset = TypeVar("Offset", bound="SupportsDunderGT[Any]")


class BatchWindow(Generic[Offset]):
    """Decides, per ``latestOffset`` call, how far the next batch reaches (see the module
    docstring); ``clock`` and ``sleep`` are injectable for tests."""

    def __init__(self, window: float, *, poll: float = POLL_SECONDS,
                 poll_max: float = POLL_MAX_SECONDS,
                 quiet: float = QUIET_SECONDS, idle: float = IDLE_SECONDS,
                 patient: bool = False,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.window = max(0.0, window)
        self.patient = patient
        self.poll, self.poll_max, self.quiet, self.idle = poll, max(poll, poll_max), quiet, idle
        self._wait = poll  # the next pause while idle
        self.clock, self.sleep = clock, sleep
        self._last_start = float("-inf")  # when the last batch was let start

    @classmethod
    def of_ms(cls, window_ms: int | None, *, patient: bool = False
              ) -> BatchWindow[Offset] | None:
        """The window a source's ``batchWindowMs`` option asks for (None: no option, the
        query's trigger decides)."""
        return None if window_ms is None else cls(window_ms / 1000, patient=patient)

    def settle(self, begin: Offset, probe: Callable[[], tuple[Offset, bool]],
               stopped: Callable[[], bool]) -> Offset:
        """The end of the next batch, or ``begin`` for no batch now.  ``probe()`` gives
        (how far the source could go now, whether that is a batch bound)."""
        deadline = self.clock() + self.idle
        end, full = probe()
        while not end > begin:  # nothing new: wait a little for something
            if stopped() or self.clock() >= deadline:
                return begin
            self.sleep(self._wait)
            self._wait = min(self._wait * 2, self.poll_max)
            end, full = probe()
        self._wait = self.poll
        if self.patient:
            while not full and (left := self.window - (self.clock() - self._last_start)) > 0:
                self.sleep(min(left, self.poll_max))
                if stopped():
                    return begin
                end, full = probe()
            self._last_start = self.clock()
            return end
        while not full and self.clock() - self._last_start < self.window:
            self.sleep(self.quiet)
            if stopped():
                return begin
            later, full = probe()
            if not later > end:  # quiet: the burst is over
                break
            end = later
        self._last_start = self.clock()
        return end
