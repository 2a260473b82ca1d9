"""``spark.read.format("tgcompare")``: a compare's ranges as the partitions of a Spark data
source; each task reads its range on both sides (:mod:`~trailgate.compare.task`).

The option ``tasks`` names a pickled list of :class:`~trailgate.compare.task.CompareTask`
(mode 0600: the tasks hold connection strings), all of one mode (``hash`` or ``rows``);
``schema`` is that mode's row schema.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from trailgate.compare.task import DIFF_SCHEMA, HASH_SCHEMA, CompareTask, hash_range, rows_range
from trailgate.errors import ConfigError, TrailgateError, marked

__all__ = ["CompareDataSource"]


@dataclass
class _Partition(InputPartition):
    task: CompareTask


class _Reader(DataSourceReader):
    def __init__(self, tasks: list[CompareTask]):
        self.tasks = tasks

    def partitions(self) -> Sequence[InputPartition]:
        return [_Partition(t) for t in self.tasks]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _Partition)
        task = partition.task
        try:
            if task.mode == "hash":
                yield hash_range(task)
            else:
                yield from rows_range(task)
        except TrailgateError as exc:
            raise RuntimeError(marked(str(exc))) from None


class CompareDataSource(DataSource):
    """The ``tgcompare`` format (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "tgcompare"

    def schema(self) -> str:
        return HASH_SCHEMA if self.options.get("mode", "hash") == "hash" else DIFF_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        path = self.options.get("tasks")
        if not path:
            raise ConfigError("the tgcompare source needs the option tasks")
        with open(path, "rb") as fh:
            tasks = pickle.load(fh)
        return _Reader(tasks)
