"""When a streaming source lets Spark start its next micro-batch: a batch window that closes
early when the source goes quiet.

A fixed trigger made a change wait for the next tick in every group it passed, so the groups
run a zero trigger and their sources decide in ``latestOffset`` with a :class:`BatchWindow`
of ``SPARK TRIGGER``: with nothing new, wait, looking less and less often; with something
new, start once the source is quiet, the window has passed or a bound is reached (a
*patient* window: only the window, counted from the first change seen).  docs/processes.md,
"When a batch starts".
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsDunderGT

__all__ = ["EAGER_BATCHES", "IDLE_SECONDS", "PATIENT_OPTION", "POLL_MAX_SECONDS", "POLL_SECONDS",
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
#: The longest one ``latestOffset`` call waits for something new.  Each return with nothing
#: new costs Spark a turn of its micro-batch loop (a few ms of the JVM's CPU) and starts
#: another call at once, so an idle group pays that once per IDLE_SECONDS; the looks inside
#: the call (every POLL_MAX_SECONDS at most) decide how soon new data starts a batch, and a
#: stop file ends the call at the next look.
IDLE_SECONDS = 5.0
#: A patient window lets this many first batches start as soon as something is new: the
#: Extract's trail streamer begins with its second batch (the first runs in a Spark task),
#: and should not wait a long window to start writing the trail as transactions arrive.
EAGER_BATCHES = 2


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
                 patient: bool = False, eager: int = EAGER_BATCHES,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.window = max(0.0, window)
        self.patient = patient
        self.eager = eager  # a patient window's first batches that start at once
        self.poll, self.poll_max, self.quiet, self.idle = poll, max(poll, poll_max), quiet, idle
        self._wait = poll  # the next pause while idle
        self.clock, self.sleep = clock, sleep
        self._last_start = float("-inf")  # when the last batch was let start
        self._started = 0  # batches let start

    @property
    def eager_now(self) -> bool:
        """Whether the next batch is one of a patient window's first, which start at once."""
        return self.patient and self._started < self.eager

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
            # a window from when its first change was seen, which is after the last start:
            # a burst after a pause is one batch, not one at its start and one a window on
            since = self.clock()
            while (not full and self._started >= self.eager
                   and (left := self.window - (self.clock() - since)) > 0):
                self.sleep(min(left, self.poll_max))
                if stopped():
                    return begin
                end, full = probe()
            self._last_start = self.clock()
            self._started += 1
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
        self._started += 1
        return end
