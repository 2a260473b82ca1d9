"""One run's unfinished ranges loaded along its route: driver threads, a Spark job, or both.

The threads start at once; a Spark job, when the route has one, gets the ranges the threads
have not begun once its session is up, and is cancelled if the threads load every range
first (its tasks could only skip them).  A stop request or a failing range stops the
threads taking more and cancels the job, again at each tick in case the job was submitted
just after; the first range failure is the error raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from trailgate.errors import SourceError, TrailgateError
from trailgate.load.driver_threads import DriverThreads, RangeQueue
from trailgate.load.job import LoadJob
from trailgate.load.route import Route
from trailgate.load.task import Summary
from trailgate.process.query import query_failure

__all__ = ["RangeRunner"]


class RangeRunner:
    """Runs ``job``'s ranges along ``route``; ``spark`` is a session already up (or None),
    ``start_spark()`` starts one, ``run_job(spark, job)`` runs ``job`` as a Spark job."""

    def __init__(self, job: LoadJob, route: Route, spark: Any,
                 start_spark: Callable[[], Any], stop_requested: Callable[[], bool],
                 run_job: Callable[[Any, LoadJob], list[Summary]]):
        self.job = job
        self.route = route
        self.spark = spark
        self.started_spark = False
        self.stopped = False  # a stop request ended the run early
        self._start_spark = start_spark
        self._stop_requested = stop_requested
        self._run_job = run_job
        self._queue = RangeQueue(job.tasks)
        self._threads: DriverThreads | None = None
        self._spark_running = threading.Event()
        self._spark_redundant = threading.Event()
        self._wanted = {(t.table, t.range.index) for t in job.tasks}
        self._by_driver = self._by_spark = 0

    def cancel(self) -> None:
        """No more ranges begun; a running Spark job cancelled."""
        if self._threads is not None:
            self._threads.stop()
        if self.spark is not None:
            self.spark.sparkContext.cancelAllJobs()

    def tick(self) -> None:
        """Called every half second (the progress thread)."""
        threads = self._threads
        if self._stop_requested():
            self.cancel()
        elif (threads is not None and threads.error is not None
              and self._spark_running.is_set()):
            # a job submitted just after the failing thread's cancel found nothing to cancel
            self.spark.sparkContext.cancelAllJobs()
        elif (threads is not None and self._spark_running.is_set() and not threads.alive()
              and threads.error is None
              and self._wanted <= {(r[0], r[1]) for r in threads.results if not r[3]}):
            # a range a Spark task holds is not among the threads' loaded ones
            self._spark_redundant.set()
            self.spark.sparkContext.cancelAllJobs()

    def counts(self) -> tuple[int, int]:
        """Ranges loaded (not skipped) by the driver's threads and by Spark tasks."""
        return self._by_driver, self._by_spark

    def run(self) -> list[Summary]:
        """Load the ranges; their summaries (a range loaded by one and skipped by the other
        appears twice).  Raises the first range failure, or the Spark job's."""
        results: list[Summary] = []
        job_error: Exception | None = None
        threads: DriverThreads | None = None
        try:
            if self.route.threads:
                threads = DriverThreads(self.job, self._queue, self.route.threads,
                                        on_error=self.cancel)
                self._threads = threads.start()
            if self.route.spark:
                results += self._spark_part(threads)
        except Exception as exc:
            if not self._spark_redundant.is_set():  # else: cancelled, every range loaded
                job_error = exc
            if threads is not None:
                threads.stop()
        ours = threads.join() if threads is not None else []
        if threads is not None and threads.error is not None:
            # the first failure: a Spark job cancelled because of it says less
            failure = threads.error
            if isinstance(failure, TrailgateError):
                raise failure
            raise SourceError(f"a range of the load failed in the driver: {failure}") \
                from failure
        if job_error is not None:
            if isinstance(job_error, TrailgateError):
                raise job_error
            if not self._stop_requested():
                raise query_failure(job_error, SourceError) from None
            self.stopped = True
        self._by_driver = sum(1 for r in ours if not r[3])
        self._by_spark = sum(1 for r in results if not r[3])
        return results + ours

    def _spark_part(self, threads: DriverThreads | None) -> list[Summary]:
        if self.spark is None and not self._stop_requested():
            self.spark = self._start_spark()  # the threads copy meanwhile
            self.started_spark = True
        rest = self._queue.rest()
        if not rest or self.spark is None or self._stop_requested() or (
                threads is not None and threads.error is not None):
            return []
        self._spark_running.set()
        try:
            return self._run_job(self.spark, replace(self.job, tasks=tuple(rest)))
        finally:
            self._spark_running.clear()  # no later tick cancels another's job
