"""What a load's Spark tasks are given: plain data that pickles (no connections, no Spark).

The driver resolves everything once — the snapshot to import, each table's columns and
their target names and types, where the rows go — and each task gets the job and one
range.  Nothing here opens a connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.model import TableDef

__all__ = ["LoadJob", "LoadTable", "SinkSpec", "Task"]


@dataclass(frozen=True, slots=True)
class LoadTable:
    """A table of the load as tasks see it."""

    number: int
    source_schema: str
    source_name: str
    target_schema: str
    target_name: str
    columns: tuple[ReadColumn, ...]
    key_column: str | None
    table_def: TableDef
    generation: int = 0

    @property
    def source_sql(self) -> str:
        return _quoted(self.source_schema, self.source_name)

    @property
    def target_sql(self) -> str:
        return _quoted(self.target_schema, self.target_name)

    @property
    def source(self) -> str:
        return f"{self.source_schema}.{self.source_name}"

    @property
    def target(self) -> str:
        return f"{self.target_schema}.{self.target_name}"


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """Where rows go: ``POSTGRES`` (conninfo), ``DELTA``/``PARQUET`` (a directory) or
    ``TRAIL`` (a trail path; ``seqnos`` gives each (table, range) its file)."""

    kind: str
    location: str
    seqnos: dict[tuple[int, int], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Task:
    """One range of one table: a Spark partition."""

    table: int
    range: KeyRange


@dataclass(frozen=True, slots=True)
class LoadJob:
    """Everything the tasks of one run share."""

    group: str
    conninfo: str
    snapshot: str | None
    cut: int
    sink: SinkSpec
    tables: dict[int, LoadTable]
    tasks: tuple[Task, ...]
    progress_dir: str
    commit_time: int = 0  # Julian microseconds (trail and change-log rows)


def _quoted(schema: str, name: str) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in (schema, name))
