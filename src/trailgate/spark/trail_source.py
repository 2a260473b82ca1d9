"""``spark.read.format("trail")`` and ``spark.readStream.format("trail")``.

Batch reads plan a partition per trail file (big files cut at transaction boundaries);
streams cut micro-batches at transaction boundaries (offsets ``{"seqno", "rba"}``).  Rows
are Arrow batches from :mod:`trail_rows` (generic) or :mod:`typed_rows` (the ``table``
option), which keep every transaction whole and in one partition.  Spark's Python sources
get no column pruning, so only the columns of the schema given are built; batch reads take
``op`` and ``table_name`` filters.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    In,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from trailgate.errors import TrailFormatError
from trailgate.model import TableDef, TrailPosition
from trailgate.spark.batch_window import BatchWindow
from trailgate.spark.trail_catalog import LIST_SCHEMA_DDL, find_table, list_batch, tables_between
from trailgate.spark.trail_offsets import (
    ScanState,
    end_of_data,
    offset_of,
    position_of,
    scan_boundary,
)
from trailgate.spark.trail_options import TrailOptions, parse_bool, parse_options
from trailgate.spark.trail_rows import ARROW_SCHEMA, SCHEMA_DDL, read_batches
from trailgate.spark.trail_splits import definitions_at, split_file
from trailgate.spark.typed_rows import TypedTable, read_typed_batches
from trailgate.trail.naming import TrailName

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["TrailDataSource", "TrailPartition"]


@dataclass(frozen=True, slots=True)
class TrailPartition(InputPartition):
    """Transactions starting in ``[lower, upper)`` of one trail file (``upper=None``: to
    the end of the trail)."""

    trail: str
    seqno: int
    lower: TrailPosition
    upper: TrailPosition | None
    tables: tuple[TableDef, ...] = ()  # the definitions in force at ``lower`` (mid-file)


@dataclass(frozen=True, slots=True)
class ReadShape:
    """What a read builds: the typed table (None: the generic form), the columns (None:
    all) and the ``op`` / ``table_name`` values Spark's filters keep (None: all)."""

    typed: TypedTable | None = None
    fields: tuple[str, ...] | None = None
    ops: frozenset[str] | None = None
    table_names: frozenset[str] | None = None

    def names_columns(self) -> bool:
        """Whether the read needs the definitions in force where a piece starts: a generic
        read that builds ``before`` or ``after`` (a typed one knows its table's, and the
        other columns are the records' own)."""
        return self.typed is None and (self.fields is None or "before" in self.fields
                                       or "after" in self.fields)


def typed_table(options: TrailOptions) -> TypedTable:
    """The ``table`` option's table, typed from the trail's definitions (``ValueError``
    naming the trail's tables when it is not there)."""
    assert options.table is not None
    return TypedTable.of(find_table(options.trail, options.table, options.seqnos))


def read_shape(options: TrailOptions, schema: StructType | None,
               typed: TypedTable | None = None) -> ReadShape:
    """The shape of a read whose Spark schema is ``schema``: the full one, or some of its
    columns (a schema given with ``.schema(…)``), checked here by name and type
    (``typed``: the table's typed schema when already known)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if typed is None and options.table is not None:
        typed = typed_table(options)
    full = typed.arrow_schema() if typed is not None else ARROW_SCHEMA
    if schema is None:
        return ReadShape(typed)
    asked = to_arrow_schema(schema, timezone="UTC")
    for field in asked:
        index = full.get_field_index(field.name)
        if index < 0 or not full.field(index).type.equals(field.type):
            what = "has no column" if index < 0 else "gives another type for"
            raise ValueError(
                f"the schema given to the trail source {what} {field.name!r}: give some of "
                f"its columns with their types ({_ddl(full)})")
    names = tuple(asked.names)
    return ReadShape(typed, None if names == tuple(full.names) else names)


def _ddl(schema: pa.Schema) -> str:
    from trailgate.spark.typed_values import quote, spark_ddl

    if schema is ARROW_SCHEMA:
        return SCHEMA_DDL
    return ", ".join(f"{quote(f.name)} {spark_ddl(f.type)}" for f in schema)


def _read(options: TrailOptions, shape: ReadShape, partition: TrailPartition
          ) -> Iterator[pa.RecordBatch]:
    if shape.typed is not None:
        return read_typed_batches(partition.trail, partition.lower, partition.upper,
                                  shape.typed, fields=shape.fields, ops=shape.ops,
                                  batch_rows=options.batch_rows)
    tables: Callable[[str], bool] | None = options.table_filter()
    if shape.table_names is not None:
        tables = _ExactTables(shape.table_names, tables)
    return read_batches(
        partition.trail, partition.lower, partition.upper, tables=tables,
        include_metadata=options.include_metadata, batch_rows=options.batch_rows,
        fields=shape.fields, ops=shape.ops,
        definitions={t.qualified_name: t for t in partition.tables} or None)


@dataclass(frozen=True, slots=True)
class _ExactTables:
    """A ``table_name`` filter from Spark, with the ``tables`` option's patterns."""

    names: frozenset[str]
    patterns: Callable[[str], bool] | None

    def __call__(self, table: str) -> bool:
        return table in self.names and (self.patterns is None or self.patterns(table))


def _bool_option(options: Mapping[str, str], name: str) -> bool:
    """The boolean option ``name`` as ``parse_options`` reads it (a bad value is its error)."""
    return parse_bool(name, options.get(name) or "false")


class TrailDataSource(DataSource):
    """The ``trail`` format: one row per change (generic), or one table's changes with
    typed columns (``table`` option); see docs/spark.md for options and schemas."""

    @classmethod
    def name(cls) -> str:
        return "trail"

    def schema(self) -> str:
        if _bool_option(self.options, "listTables"):
            return LIST_SCHEMA_DDL
        if (self.options.get("table") or "").strip():
            return self._typed_table().ddl()
        return SCHEMA_DDL

    def _typed_table(self) -> TypedTable:
        """The ``table`` option's typed schema, worked out once: Spark pickles this object
        after ``schema()``, so the reader gets the same schema without another pass."""
        typed: TypedTable | None = getattr(self, "_typed", None)
        if typed is None:
            try:  # the files a batch read selects (a glob), else all (a stream)
                options = parse_options(self.options)
            except (ValueError, TrailFormatError):
                options = parse_options(self.options, streaming=True)
            typed = self._typed = typed_table(options)
        return typed

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_options(self.options)
        if options.list_tables:
            return TrailListReader(options)
        typed = self._typed_table() if options.table is not None else None
        return TrailBatchReader(options, read_shape(options, schema, typed))

    def streamReader(self, schema: StructType) -> TrailStreamReader:
        options = parse_options(self.options, streaming=True)
        if options.list_tables:
            raise ValueError("option listTables lists a trail's tables in a batch read; "
                             "use spark.read, not spark.readStream")
        typed = self._typed_table() if options.table is not None else None
        return TrailStreamReader(options, read_shape(options, schema, typed))


class TrailListReader(DataSourceReader):
    """``listTables``: one row per table of the selected files (a single partition)."""

    def __init__(self, options: TrailOptions):
        self.options = options

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield list_batch(self.options.trail, self.options.seqnos)


class TrailBatchReader(DataSourceReader):
    """A batch read: every complete transaction starting in the selected files."""

    def __init__(self, options: TrailOptions, shape: ReadShape | None = None):
        self.options = options
        self.shape = shape or ReadShape()

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take ``op = …`` / ``op IN (…)`` (and, in the generic form, the same on
        ``table_name``): the reader then skips other records before decoding them."""
        shape = self.shape
        for f in filters:
            path: tuple[str, ...] = getattr(f, "attribute", ())
            column = path[0] if len(path) == 1 else None
            if isinstance(f, EqualTo) and isinstance(f.value, str):
                values = frozenset({f.value})
            elif isinstance(f, In) and all(isinstance(v, str) for v in f.value):
                values = frozenset(f.value)
            else:
                yield f
                continue
            if column == "op":
                ops = values if shape.ops is None else shape.ops & values
                shape = dataclasses.replace(shape, ops=ops)
            elif column == "table_name" and shape.typed is None:
                names = values if shape.table_names is None else shape.table_names & values
                shape = dataclasses.replace(shape, table_names=names)
            else:
                yield f
        self.shape = shape

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
            cuts = split_file(opts.trail, seq, lower, opts.split_bytes)
            bounds = [lower, *cuts, TrailPosition(seq + 1, 0)]
            for lo, hi in itertools.pairwise(bounds):
                defs = definitions_at(opts.trail, lo) if lo.rba > 0 and \
                    self.shape.names_columns() else ()
                parts.append(TrailPartition(opts.trail, seq, lo, hi, defs))
        # Spark needs at least one partition; an empty range reads nothing.
        return parts or [TrailPartition(opts.trail, -1, TrailPosition(0, 0),
                                        TrailPosition(0, 0))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TrailPartition)
        if partition.upper is not None and partition.lower >= partition.upper:
            return iter(())
        return _read(self.options, self.shape, partition)


class TrailStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of whole transactions; Spark's checkpoint holds the offsets.

    Lives in one driver-side Python process for the life of the query, so it remembers where
    its last boundary scan stopped and reads only what was appended since.
    """

    def __init__(self, options: TrailOptions, shape: ReadShape | None = None):
        self.options = options
        self.shape = shape or ReadShape()
        self._target: TrailPosition | None = None
        self._target_set = False
        self._state: ScanState | None = None  # where the last boundary scan stopped
        self._scan_start: TrailPosition | None = None  # ... and where it started
        self._mark: Callable[[int, str], bool] | None = None  # records scans look out for
        # the definitions read so far in one file: (seqno, up to rba, by table)
        self._defs: tuple[int, int, dict[str, TableDef]] = (-1, 0, {})
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
        if state is not None and self._scan_start == begin and state.boundary > begin:
            return self._reach_further(begin, state, max_rows)
        boundary, covered, self._state = scan_boundary(
            self.options.trail, begin, limit=self._target, max_records=max_rows,
            state=self._state, mark=self._mark)
        self._scan_start = begin
        return max(boundary, begin), max_rows is not None and covered >= max_rows

    def _reach_further(self, begin: TrailPosition, state: ScanState, max_rows: int | None
                       ) -> tuple[TrailPosition, bool]:
        """:meth:`_reach` when an earlier look from ``begin`` found a boundary past it: the
        scan goes on from where that one stopped, so the looks of a long batch window at a
        growing trail read each record once, not everything since ``begin`` each time.
        The state then covers ``[begin, boundary)`` as one scan from ``begin`` would."""
        if max_rows is not None and state.covered >= max_rows:
            return state.boundary, True
        if end_of_data(self.options.trail) == state.resume:
            return state.boundary, False  # nothing appended since
        rest = None if max_rows is None else max_rows - state.covered
        boundary, covered, later = scan_boundary(
            self.options.trail, state.boundary, limit=self._target, max_records=rest,
            state=state, mark=self._mark)
        total = state.covered + (covered if boundary > state.boundary else 0)
        self._state = dataclasses.replace(
            later, covered=total, marked=state.marked or (boundary > state.boundary
                                                          and later.marked))
        return max(boundary, begin), max_rows is not None and total >= max_rows

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
            parts.append(TrailPartition(self.options.trail, seq, lo, hi,
                                        self._definitions_at(lo)))
        return parts

    def _definitions_at(self, position: TrailPosition) -> tuple[TableDef, ...]:
        """The definitions in force at ``position`` inside its file, for a generic read
        (a typed one knows its table's).  Batches move forward, so each call reads on from
        where the last one stopped: a file's metadata is read once over the query's life."""
        if position.rba == 0 or not self.shape.names_columns():
            return ()
        seq, at, found = self._defs
        if seq != position.seqno or at > position.rba:
            seq, at, found = position.seqno, 0, {}
        for table in tables_between(self.options.trail, seq, at, position.rba):
            if table.history:
                found[table.name] = table.history[-1][1]
        self._defs = (seq, position.rba, found)
        return tuple(found.values())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TrailPartition)
        return _read(self.options, self.shape, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint stores the offsets (trailgate's own read
        checkpoint is written by the Replicat query after it applies a batch)."""


def _at_or_past_end(trail: TrailName, seq: int, rba: int) -> bool:
    try:
        return rba >= os.path.getsize(trail.file(seq))
    except OSError:
        return True
