"""The load's range runner when a driver thread fails around the Spark job's submission.

The Spark side is a recording stand-in for ``SparkContext.cancelAllJobs``: what is under
test is the runner's ordering, which a real job cannot be made to hit on cue.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from trailgate.capture.postgres.ranges import KeyRange
from trailgate.errors import SourceError
from trailgate.load.job import LoadJob, SinkSpec, Task
from trailgate.load.range_runner import RangeRunner
from trailgate.load.route import Route


class _Context:
    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.submitted = threading.Event()

    def cancelAllJobs(self) -> None:
        if self.submitted.is_set():
            self.cancelled.set()


class _Session:
    def __init__(self) -> None:
        self.sparkContext = _Context()


def test_a_job_submitted_after_a_thread_failed_is_cancelled_by_the_tick(tmp_path: Any
                                                                        ) -> None:
    session = _Session()

    class _Tables(dict[int, Any]):
        """Table 7 is not in the job: its range fails in the thread (a KeyError) just
        after the runner decided to submit the Spark job, before the job is submitted."""

        def __missing__(self, key: int) -> Any:
            runner._spark_running.wait(10)
            raise KeyError(key)

    runner: RangeRunner
    tasks = (Task(7, KeyRange(0, "all")), Task(7, KeyRange(1, "all")))
    job = LoadJob(group="ld", conninfo="", snapshot=None, cut=0,
                  sink=SinkSpec("POSTGRES", ""), tables=_Tables(), tasks=tasks,
                  progress_dir=str(tmp_path))

    def run_job(spark: Any, _job: LoadJob) -> list[Any]:
        threads = runner._threads
        assert threads is not None
        deadline = time.monotonic() + 10
        while threads.alive() and time.monotonic() < deadline:
            time.sleep(0.01)  # the failing thread's own cancel has come and gone
        spark.sparkContext.submitted.set()
        if not spark.sparkContext.cancelled.wait(10):
            raise AssertionError("the job ran to its end: nothing cancelled it")
        raise RuntimeError("Job cancelled")

    runner = RangeRunner(job, Route(1, True, "test"), None, lambda: session, lambda: False,
                         run_job)
    ticking = threading.Event()

    def tick() -> None:
        while not ticking.wait(0.05):
            runner.tick()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        with pytest.raises(SourceError, match="failed in the driver") as err:
            runner.run()
    finally:
        ticking.set()
        ticker.join()
    assert session.sparkContext.cancelled.is_set()
    assert isinstance(err.value.__cause__, KeyError)  # the cause is kept for the log
