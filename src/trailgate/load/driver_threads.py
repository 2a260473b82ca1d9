"""Ranges copied by threads of the driver, from a queue a Spark job may share.

The threads take ranges from the front of the queue, one at a time each, until it is empty
or they are told to stop; a Spark job that joins later gets the ranges not taken yet, in
reverse order, so the two meet only at the end.  Whoever loads a range, the target decides
it once (its ``trailgate.load_ranges`` row, committed with the rows): a range both begin is
loaded by one and skipped by the other.  A failure stops the threads from taking more and
is kept in :attr:`DriverThreads.error` for the driver to raise.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from trailgate.load.job import LoadJob, Task
from trailgate.load.task import Summary, load_one

__all__ = ["DriverThreads", "RangeQueue"]


class RangeQueue:
    """The ranges of a run not taken yet."""

    def __init__(self, tasks: Iterable[Task]):
        self._tasks = deque(tasks)
        self._lock = threading.Lock()

    def take(self) -> Task | None:
        with self._lock:
            return self._tasks.popleft() if self._tasks else None

    def rest(self) -> list[Task]:
        """The ranges not taken yet, last first (they stay in the queue)."""
        with self._lock:
            return list(reversed(self._tasks))


class DriverThreads:
    """``count`` threads loading ranges of ``job`` from ``queue``; ``on_error`` is called
    (once, from the failing thread) when a range fails."""

    def __init__(self, job: LoadJob, queue: RangeQueue, count: int,
                 on_error: Callable[[], None] | None = None):
        self.job = job
        self.queue = queue
        self.results: list[Summary] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._on_error = on_error
        self._threads = [threading.Thread(target=self._work, name=f"trailgate-load-{i}",
                                          daemon=True) for i in range(count)]

    def start(self) -> DriverThreads:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        """Take no more ranges (those under way finish)."""
        self._stop.set()

    def alive(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def join(self) -> list[Summary]:
        """Wait for the threads; the summaries of the ranges they ran (see :attr:`error`)."""
        for t in self._threads:
            t.join()
        with self._lock:
            return list(self.results)

    def _work(self) -> None:
        while not self._stop.is_set():
            task = self.queue.take()
            if task is None:
                return
            try:
                summary = load_one(self.job, task)
            except BaseException as exc:  # the driver raises it
                with self._lock:
                    first = self.error is None
                    if first:
                        self.error = exc
                self._stop.set()
                if first and self._on_error is not None:
                    self._on_error()
                return
            with self._lock:
                self.results.append(summary)
