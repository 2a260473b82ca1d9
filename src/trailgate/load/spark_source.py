"""``spark.read.format("pgtable")``: a load's ranges as the partitions of a Spark data source.

Each partition is one range of one table; its task reads the range with ``COPY … TO
STDOUT`` inside the load's snapshot and writes it to the load's target
(:func:`~trailgate.load.task.run_task`), returning one summary row.  The option ``job``
names the pickled :class:`~trailgate.load.job.LoadJob` the driver wrote (mode 0600: it
holds the connection strings); the driver reads it when Spark plans the query, and the
tasks get it with the reader.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from trailgate.errors import ConfigError
from trailgate.load.job import LoadJob, Task
from trailgate.load.task import SUMMARY_SCHEMA, run_task

__all__ = ["PgTableDataSource", "RangePartition"]


@dataclass
class RangePartition(InputPartition):
    """One range of one table."""

    task: Task


class _Reader(DataSourceReader):
    def __init__(self, job: LoadJob):
        self.job = job

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(t) for t in self.job.tasks]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePartition)
        yield run_task(self.job, partition.task)


class PgTableDataSource(DataSource):
    """The ``pgtable`` format (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "pgtable"

    def schema(self) -> str:
        return SUMMARY_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        path = self.options.get("job")
        if not path:
            raise ConfigError("the pgtable source needs the option job (a load's job file)")
        try:
            with open(path, "rb") as fh:
                job = pickle.load(fh)
        except (OSError, pickle.UnpicklingError) as exc:
            raise ConfigError(f"cannot read the load's job file {path}: {exc}") from None
        if not isinstance(job, LoadJob):
            raise ConfigError(f"{path} is not a load's job file")
        return _Reader(job)
