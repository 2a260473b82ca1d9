"""One Extract micro-batch (the query's ``foreachBatch`` function): the ``pgcapture`` range
made durable in the trail, then checkpointed.

Most batches run on the driver, since a Spark job per batch cost more than its work; the
query's first batch and one over ``driverMaxBytes`` of WAL run the same writer in a Spark
task.  With the trail streamer running a batch only has it make its range durable and
checkpointed (which it also does on its own, every FLUSHSECS).  The writer
skips what the trail holds, so a replay appends nothing twice, and the checkpoint is written
before Spark commits.  docs/processes.md, "Extract (PostgreSQL)".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trailgate.errors import SourceError
from trailgate.extract.postgres.source import SourceOptions, StreamedSlot, read_partition
from trailgate.extract.postgres.trail_streamer import TrailStreamer
from trailgate.spark.offset_log import logged_offset
from trailgate.spark.trail_sink import (
    SinkOptions,
    TrailCommitMessage,
    commit_checkpoint,
    write_change_batches,
    write_in_task,
)

__all__ = ["CONTINUOUS_CONF", "DRIVER_MAX_BYTES", "DRIVER_MAX_BYTES_CONF", "STREAMING_CONF",
           "ExtractBatch", "lsn_range"]

#: ``SPARK CONF trailgate.extract.driverMaxBytes=n``: the most WAL a batch read on the driver
#: spans; a larger one is read by a Spark task.
DRIVER_MAX_BYTES_CONF = "trailgate.extract.driverMaxBytes"
DRIVER_MAX_BYTES = 64 << 20
#: ``SPARK CONF trailgate.extract.streaming=false``: the driver reads the slot with SQL
#: (``pg_logical_slot_peek_binary_changes``) instead of streaming it.
STREAMING_CONF = "trailgate.extract.streaming"
#: ``SPARK CONF trailgate.extract.continuous=false``: a streamed slot is read and written
#: to the trail only inside each micro-batch, not as transactions arrive
#: (:mod:`~trailgate.extract.postgres.trail_streamer`).
CONTINUOUS_CONF = "trailgate.extract.continuous"


def _logged_lsn(spark_dir: Path, batch_id: int) -> int | None:
    offset = logged_offset(spark_dir, batch_id)
    try:
        return None if offset is None else int(offset["lsn"])
    except (KeyError, TypeError, ValueError):
        return None


def lsn_range(spark_dir: Path, batch_id: int) -> tuple[int, int] | None:
    """``[start, end)`` of Spark batch ``batch_id`` from the offset log, or None (the first
    batch, or a log this code does not know)."""
    if batch_id <= 0:
        return None
    start, end = _logged_lsn(spark_dir, batch_id - 1), _logged_lsn(spark_dir, batch_id)
    if start is None or end is None or end < start:
        return None
    return start, end


class ExtractBatch:
    """Callable for ``foreachBatch``; counts where its batches ran (tests, reports).
    ``close`` when the query has stopped: it ends the driver's stream of the slot."""

    def __init__(self, source_options: dict[str, str], sink: SinkOptions, spark_dir: Path,
                 driver_max_bytes: int = DRIVER_MAX_BYTES, *, streaming: bool = True,
                 continuous: bool = False, flush_seconds: float | None = None):
        self.source_options = source_options
        self.sink = sink
        self.spark_dir = spark_dir
        self.driver_max_bytes = driver_max_bytes
        self.streaming = streaming
        self.continuous = continuous and streaming
        self.flush_seconds = flush_seconds  # the streamer's FLUSHSECS
        self._source: SourceOptions | None = None
        self._slot: StreamedSlot | None = None
        self._streamer: TrailStreamer | None = None
        self.driver_batches = 0
        self.task_batches = 0

    def _commit(self, messages: list[TrailCommitMessage]) -> None:
        commit_checkpoint(self.sink, messages)

    def source(self) -> SourceOptions:
        if self._source is None:
            self._source = SourceOptions.parse(self.source_options)
        return self._source

    def _streamed(self) -> StreamedSlot:
        if self._slot is None:
            self._slot = StreamedSlot(self.source())
        return self._slot

    def __call__(self, df: Any, batch_id: int) -> None:
        rng = lsn_range(self.spark_dir, int(batch_id))
        if rng is not None and self.continuous:
            start, end = rng
            # any range once driverMaxBytes allows the driver at all: the streamer writes
            # as it reads, and a 10 s window under a heavy load may never bring a small one
            if self._streamer is None and self.driver_max_bytes > 0:
                self._streamer = TrailStreamer(self._streamed(), self.sink, start,
                                               stop_file=self.source().stop_file,
                                               flush_seconds=self.flush_seconds)
            if self._streamer is not None:
                # durable, checkpointed and confirmed by the streamer's thread, the group
                # checkpoint's one writer while it runs
                self._streamer.sync(end)
                self.driver_batches += 1
                return
        if rng is not None and rng[1] - rng[0] <= self.driver_max_bytes:
            start, end = rng
            messages = []
            if end > start:
                rows = (self._streamed().read(start, end) if self.streaming
                        else read_partition(self.source(), start, end))
                messages.append(write_change_batches(self.sink, rows))
            self.driver_batches += 1
            self._commit(messages)
            if self._slot is not None and end > start:
                self._slot.confirm(end)
            return
        self.close()  # the task reads the slot itself
        messages = write_in_task(df, self.sink)
        self.task_batches += 1
        self._commit(messages)

    def failure(self) -> SourceError | None:
        """The trail streamer's failure, if it stopped with one (the group stops at once
        rather than at the next batch)."""
        return self._streamer.failure() if self._streamer is not None else None

    @property
    def streams_opened(self) -> int:
        return self._slot.opened if self._slot is not None else 0

    def close(self) -> None:
        """End the streamer and the stream; raises a failure of the streamer that no
        batch reported (e.g. its last flush): the run did not stop cleanly."""
        streamer, self._streamer = self._streamer, None
        error = streamer.close() if streamer is not None else None
        if self._slot is not None:
            self._slot.close()
        if error is not None:
            raise error
