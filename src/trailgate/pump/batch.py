"""One Data Pump micro-batch (the query's ``foreachBatch`` function): the input range appended
to the output trail.

As for the Extract, a Spark job per batch cost more than moving a few hundred records, so
the driver reads the batch's range (from Spark's offset log) with the source's own function
and hands the rows to the trail sink's writer; only the query's first batch runs in a Spark
task.  The writer skips what the output holds, so a replay appends nothing twice; the
checkpoint is written before Spark commits, and for a remote trail only once the collector
has acknowledged the batch durable (``before_checkpoint``).  docs/pump.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.changes.range_rows import read_change_rows
from trailgate.changes.routing import Router
from trailgate.model import Change
from trailgate.spark.offset_log import batch_range
from trailgate.spark.trail_sink import (
    SinkOptions,
    commit_checkpoint,
    write_change_batches,
    write_in_task,
)

__all__ = ["PumpBatch"]


class PumpBatch:
    """Callable for ``foreachBatch``; counts where its batches ran (tests)."""

    def __init__(self, source: str, router: Router, sink: SinkOptions, spark_dir: Path,
                 ddl: Callable[[Change], bool] | None = None,
                 before_checkpoint: Callable[[], None] | None = None):
        self.source = source
        self.router = router
        self.ddl = ddl  # the pump's DDL rules (None: every DDL passes through)
        self.sink = sink
        self.spark_dir = spark_dir
        self.before_checkpoint = before_checkpoint  # a remote Pump's mirror to the collector
        self.driver_batches = 0
        self.task_batches = 0

    def __call__(self, df: Any, batch_id: int) -> None:
        batch_id = int(batch_id)
        rng = batch_range(self.spark_dir, batch_id, None) if batch_id > 0 else None
        if rng is not None:
            lower, upper = rng
            messages = []
            if upper > lower:
                messages.append(write_change_batches(
                    self.sink, read_change_rows(self.source, lower, upper, router=self.router,
                                                ddl=self.ddl)))
            self.driver_batches += 1
        else:
            messages = write_in_task(df, self.sink)
            self.task_batches += 1
        if self.before_checkpoint is not None:
            self.before_checkpoint()
        commit_checkpoint(self.sink, messages)
