"""The Oracle redo dump Extract on Spark: the parallel parse job, the ``oracledump`` source,
the run.

Parsing is the slow part and dump files are independent, so :func:`parse_in_parallel` runs
a Spark task per file; assembly is sequential, so each micro-batch is one partition that
resumes it from the group checkpoint and emits the transactions committed, then a position
row.  A replayed batch's transactions are skipped by the sink (CSN, XID).  Offsets and
options: docs/oracle-dumps.md, "The Extract group".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from trailgate.changes.change_rows import CHANGE_SCHEMA_DDL
from trailgate.checkpoint import CheckpointStore
from trailgate.errors import SourceError
from trailgate.extract.oracle.dumps import (
    AssemblyResult,
    FileSummary,
    OracleDumpConfig,
    assemble_rows,
    load_oracle_config,
    parse_file,
    ready_dumps,
)
from trailgate.home import Home
from trailgate.process.query import query_failure
from trailgate.spark.batch_window import stop_requested

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = ["OracleDumpDataSource", "parse_in_parallel", "resume_position"]

#: Unparsed dumps at start from which a streaming run first parses them in a parallel job
#: (fewer are parsed in the first micro-batch: a job costs more than it saves).
PARALLEL_BACKLOG = 4


def resume_position(cfg: OracleDumpConfig) -> dict[str, Any] | None:
    ck = CheckpointStore(Path(cfg.home) / "dirchk").load(cfg.group, "EXTRACT")
    if ck is None or not ck.read_position.get("assembly"):
        return None
    return ck.read_position


# -- the parallel parse --------------------------------------------------------------------
def parse_in_parallel(spark: Any, cfg: OracleDumpConfig, paths: list[str]
                      ) -> list[FileSummary]:
    """Parse ``paths`` into cached events, one Spark task per file (files already cached
    cost nothing).  A SourceError in any task stops the job; its message is re-raised."""
    if not paths:
        return []
    rdd = spark.sparkContext.parallelize(paths, len(paths))
    try:
        return list(rdd.map(lambda p: parse_file(cfg, p)).collect())
    except Exception as exc:  # py4j: the task's Python error is inside the Java message
        raise query_failure(exc, SourceError) from None


# -- the streaming source ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class OracleDumpPartition(InputPartition):
    """The dumps up to the batch's end and the checkpoint to resume from."""

    files: tuple[str, ...]
    resume: dict[str, Any] | None


class OracleDumpStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side: an offset is the name of the last ready dump (and how many there are,
    for people); a batch takes the ready dumps named up to its end."""

    def __init__(self, cfg: OracleDumpConfig, stop_file: str | None, batch_rows: int):
        self.cfg, self.stop_file, self.batch_rows = cfg, stop_file, batch_rows
        self._target: dict[str, Any] | None = None

    def _ready(self) -> dict[str, Any]:
        files = ready_dumps(self.cfg.dumpdir)
        return {"last": Path(files[-1]).name if files else "", "files": len(files)}

    def initialOffset(self) -> dict[str, Any]:
        return {"last": "", "files": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._ready()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict[str, Any]:
        begin = start or self.initialOffset()
        if stop_requested(self.stop_file):
            return begin
        end = self._target or self._ready()
        return end if end["last"] > begin["last"] else begin

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if end["last"] <= start["last"]:
            return []
        files = [p for p in ready_dumps(self.cfg.dumpdir) if Path(p).name <= end["last"]]
        return [OracleDumpPartition(tuple(files), resume_position(self.cfg))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OracleDumpPartition)
        summaries = [parse_file(self.cfg, p) for p in partition.files]
        result = AssemblyResult()
        yield from assemble_rows(self.cfg, summaries, partition.resume,
                                 batch_rows=self.batch_rows, result=result)
        _report_warnings(self.cfg, result.warnings)

    def commit(self, end: dict) -> None:
        """Nothing to release: dump files are the user's (they may be removed once the
        group checkpoint's recovery position has passed them)."""


def _report_warnings(cfg: OracleDumpConfig, warnings: list[str]) -> None:
    """Warnings of a micro-batch (it runs in a Spark task, not in the group's process): to
    the event log and the group's report, as the process's own warnings go."""
    if not warnings:
        return
    home = Home(cfg.home)
    with open(home.report_file(cfg.group), "a", encoding="utf-8") as report:
        for warning in warnings:
            text = f"EXTRACT {cfg.group}: {warning}"
            home.log_event("WARNING", "OGG-01738", text)
            report.write(f"{datetime.now():%Y-%m-%d %H:%M:%S}  WARNING OGG-01738  {text}\n")


class OracleDumpDataSource(DataSource):
    """The ``oracledump`` format: an Oracle dump Extract group's capture."""

    @classmethod
    def name(cls) -> str:
        return "oracledump"

    def schema(self) -> str:
        return CHANGE_SCHEMA_DDL

    def streamReader(self, schema: Any) -> OracleDumpStreamReader:
        home, group = self.options.get("home"), self.options.get("group")
        if not home or not group:
            raise ValueError('the oracledump source needs .option("home", …) and '
                             '.option("group", …)')
        cfg = load_oracle_config(Home(home), group,
                                 process_id=int(self.options.get("processId") or 0) or None)
        return OracleDumpStreamReader(cfg, self.options.get("stopFile") or None,
                                      int(self.options.get("batchRows") or 10_000))
