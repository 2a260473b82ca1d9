"""``spark.read.format("trail")`` and ``spark.readStream.format("trail")``.

Batch reads plan one input partition per trail file so files are decoded in parallel;
streaming reads cut micro-batches at transaction boundaries (offsets ``{"seqno", "rba"}``)
and plan one partition per file inside the batch.  Rows are built as Arrow batches by
:mod:`trailgate.spark.trail_rows`; the row rule there keeps every transaction whole and in
exactly one partition.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from trailgate.model import TrailPosition
from trailgate.spark.batch_window import BatchWindow
from trailgate.spark.trail_offsets import (
    ScanState,
    end_of_data,
    offset_of,
    position_of,
    scan_boundary,
)
from trailgate.spark.trail_options import TrailOptions, parse_options
from trailgate.spark.trail_rows import SCHEMA_DDL, read_batches
from trailgate.trail.naming import TrailName

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TrailDataSource", "TrailPartition"]


@dataclass(frozen=True, slots=True)
class TrailPartition(InputPartition):
    """Transactions starting in ``[lower, upper)`` of one trail file (``upper=None``: to
    the end of the trail)."""

    trail: str
    seqno: int
    lower: TrailPosition
    upper: TrailPosition | None


def _read(options: TrailOptions, partition: TrailPartition) -> Iterator[pa.RecordBatch]:
    return read_batches(
        partition.trail, partition.lower, partition.upper, tables=options.table_filter(),
        include_metadata=options.include_metadata, batch_rows=options.batch_rows)


class TrailDataSource(DataSource):
    """The ``trail`` format: one row per change; see docs/spark.md for options and schema."""

    @classmethod
    def name(cls) -> str:
        return "trail"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: Any) -> TrailBatchReader:
        return TrailBatchReader(parse_options(self.options))

    def streamReader(self, schema: Any) -> TrailStreamReader:
        return TrailStreamReader(parse_options(self.options, streaming=True))


class TrailBatchReader(DataSourceReader):
    """A batch read: every complete transaction starting in the selected files."""

    def __init__(self, options: TrailOptions):
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        seqs = list(opts.seqnos) if opts.seqnos is not None else TrailName(
            opts.trail).sequence_numbers()
        if opts.start is not None:
            seqs = [s for s in seqs if s >= opts.start.seqno]
        parts = []
        for seq in seqs:
            lower = TrailPosition(seq, 0)
            if opts.start is not None and seq == opts.start.seqno:
                lower = opts.start
            parts.append(TrailPartition(opts.trail, seq, lower, TrailPosition(seq + 1, 0)))
        # Spark needs at least one partition; an empty range reads nothing.
        return parts or [TrailPartition(opts.trail, -1, TrailPosition(0, 0),
                                        TrailPosition(0, 0))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TrailPartition)
        if partition.upper is not None and partition.lower >= partition.upper:
            return iter(())
        return _read(self.options, partition)


class TrailStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of whole transactions; Spark's checkpoint holds the offsets.

    Lives in one driver-side Python process for the life of the query, so it remembers where
    its last boundary scan stopped and reads only what was appended since.
    """

    def __init__(self, options: TrailOptions):
        self.options = options
        self._target: TrailPosition | None = None
        self._target_set = False
        self._state: ScanState | None = None  # where the last boundary scan stopped
        self._scan_start: TrailPosition | None = None  # ... and where it started
        self._mark: Callable[[int, str], bool] | None = None  # records scans look out for
        self._window: BatchWindow[TrailPosition] | None = BatchWindow.of_ms(
            options.batch_window_ms, patient=options.patient_window)

    def initialOffset(self) -> dict[str, int]:
        if self.options.start is not None:
            return offset_of(self.options.start)
        seqs = TrailName(self.options.trail).sequence_numbers()
        return offset_of(TrailPosition(seqs[0] if seqs else 0, 0))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_records_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the target at the data present now; later appends wait for the next run."""
        self._target = end_of_data(self.options.trail)
        self._target_set = True

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        begin = position_of(start) if start is not None else position_of(self.initialOffset())
        if self._target_set and self._target is None:
            return offset_of(begin)  # availableNow over a trail that had no files
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self._window is None or self._target_set:  # availableNow: all there is, at once
            return offset_of(self._reach(begin, max_rows)[0])
        return offset_of(self._window.settle(begin, lambda: self._reach(begin, max_rows),
                                             self.stopped))

    def _reach(self, begin: TrailPosition, max_rows: int | None) -> tuple[TrailPosition, bool]:
        """(the last transaction boundary a batch from ``begin`` may reach now, whether
        that is the ``maxRecordsPerTrigger`` bound)."""
        state = self._state
        if (state is not None and self._scan_start == begin and state.boundary == begin
                and end_of_data(self.options.trail) == state.resume):
            return begin, False  # nothing appended since the last scan found nothing
        boundary, covered, self._state = scan_boundary(
            self.options.trail, begin, limit=self._target, max_records=max_rows,
            state=self._state, mark=self._mark)
        self._scan_start = begin
        return max(boundary, begin), max_rows is not None and covered >= max_rows

    def stopped(self) -> bool:
        """Whether a stop was asked for (no new batch then); the plain source has no way."""
        return False

    def reportLatestOffset(self) -> dict | None:
        return offset_of(self._state.boundary) if self._state is not None else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lower, upper = position_of(start), position_of(end)
        if lower >= upper:
            return []
        trail = TrailName(self.options.trail)
        parts: list[InputPartition] = []
        for seq in trail.sequence_numbers():
            if not lower.seqno <= seq <= upper.seqno:
                continue
            lo = lower if seq == lower.seqno else TrailPosition(seq, 0)
            hi = upper if seq == upper.seqno else TrailPosition(seq + 1, 0)
            if lo >= hi or (seq == lower.seqno and _at_or_past_end(trail, seq, lo.rba)):
                continue
            parts.append(TrailPartition(self.options.trail, seq, lo, hi))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TrailPartition)
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint stores the offsets (trailgate's own read
        checkpoint is written by the Replicat query after it applies a batch)."""


def _at_or_past_end(trail: TrailName, seq: int, rba: int) -> bool:
    try:
        return rba >= os.path.getsize(trail.file(seq))
    except OSError:
        return True
