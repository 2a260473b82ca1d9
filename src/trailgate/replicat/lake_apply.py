"""A Delta or Parquet micro-batch, applied on the driver.

The batch's range is read straight from the trail when it is known (Spark's offset log),
else collected from the query's frame; then the Delta applier commits one merge per table
with the application transaction (group, batch id), or the Parquet target writes one
change-log file per table and batch.  Both make a replayed batch a no-op or the same
write, so the group checkpoint after them is all a restart needs.
"""

from __future__ import annotations

from typing import Any

from trailgate.apply.paused_gc import paused_gc
from trailgate.apply.records import ApplyResult, TableCounts, TrailChange
from trailgate.changes.change_rows import OP_POSITION
from trailgate.changes.routing import Router
from trailgate.model import OpType, TableDef, TrailPosition
from trailgate.replicat.config import ReplicatConfig
from trailgate.replicat.csn_filter import SPECIAL_OPS, BatchFilter, filtered
from trailgate.replicat.task_rows import BatchSummary, read_task_rows, trail_changes

__all__ = ["LakeBatchApply"]


class LakeBatchApply:
    """Applies the micro-batches of a Delta or Parquet Replicat (module docstring)."""

    def __init__(self, cfg: ReplicatConfig, router: Router, csn_filter: BatchFilter | None):
        self.cfg = cfg
        self.router = router
        self.csn_filter = csn_filter
        self._delta: Any = None
        self._ddl: Any = None

    def apply(self, df: Any, rng: tuple[TrailPosition, TrailPosition] | None, batch_id: int
              ) -> tuple[BatchSummary, dict[str, TableCounts]]:
        """Apply batch ``batch_id``: its summary and counts per target table."""
        if rng is not None:
            with paused_gc():
                task = read_task_rows(self.cfg.trail, rng[0], rng[1], self.router)
                if self.csn_filter is not None:
                    self.csn_filter.task(task)
                summary = BatchSummary.from_rows(
                    (OP_POSITION, None, 0, 0, text, False) for text in task.positions)
                summary.definitions = task.definitions
                tcs = [tc for p in sorted(task.changes) for tc in task.changes[p]]
                return summary, self._apply(tcs, batch_id, summary)
        from pyspark.sql import functions as F

        df = filtered(df, self.csn_filter).persist()
        try:
            rows = (df.where(F.col("op").isin(*SPECIAL_OPS))
                    .select("op", "table_name", "seqno", "rba", "text", "single").collect())
            summary = BatchSummary.from_rows(tuple(r) for r in rows)
            changes = df.where(~F.col("op").isin(*SPECIAL_OPS))
            tcs = trail_changes(changes.sort("seqno", "rba").toArrow())
            return summary, self._apply(tcs, batch_id, summary)
        finally:
            df.unpersist()

    def _apply(self, tcs: list[TrailChange], batch_id: int, summary: BatchSummary
               ) -> dict[str, TableCounts]:
        if not tcs:
            return {}
        segments = summary.definitions.segments(tcs)
        if segments is None:
            return self._apply_part(tcs, batch_id, summary.definitions.for_changes(tcs), 0)
        counts: dict[str, TableCounts] = {}
        # each part of the batch commits under its own number (a Delta application id, a
        # Parquet file name): the part after the n-th DDL record is n, and a part cut off by
        # a definition change without DDL takes the next number, so no two parts share one
        # (a shared one made the second look applied already, and it was skipped)
        part, used = 0, False
        for changes, defs in segments:
            if len(changes) == 1 and changes[0].change.op is OpType.DDL:
                result = ApplyResult()
                tc = changes[0]
                changed = self.ddl().apply(tc, defs.get(tc.change.table), result)
                if changed and self._delta is not None:
                    self._delta.mapper.forget_all()
                part, used = part + 1, False
                got = result.counts
            else:
                if used:
                    part += 1
                got = self._apply_part(list(changes), batch_id, dict(defs), part)
                used = True
            for target, c in got.items():
                counts.setdefault(target, TableCounts()).add(c)
        return counts

    def _apply_part(self, tcs: list[TrailChange], batch_id: int, defs: dict[str, TableDef],
                    part: int) -> dict[str, TableCounts]:
        if self.cfg.target_kind == "DELTA":
            result = self.delta().apply_batch(batch_id, tcs, defs, part=part)
            return {} if result.skipped else result.counts
        from trailgate.apply.parquet import write_change_logs

        return write_change_logs(self.cfg, batch_id, tcs, defs, part=part)

    def ddl(self) -> Any:
        """The DDL side of the target, made on first use."""
        if self._ddl is None:
            from trailgate.apply.lake_ddl import LakeDdl

            self._ddl = LakeDdl(self.cfg.params, self.cfg.target_kind, self.cfg.target,
                                self.cfg.group, discard=self._discard_writer())
        return self._ddl

    def _discard_writer(self) -> Any:
        from trailgate.apply.discard import DiscardWriter

        spec = self.cfg.params.discardfile
        return DiscardWriter(self.cfg.discard_file, spec.megabytes if spec else None)

    def delta(self) -> Any:
        """The Delta applier, opened on first use and kept for the run."""
        if self._delta is None:
            from trailgate.apply.delta import DeltaApplier

            self._delta = DeltaApplier(self.cfg.target, self.cfg.params, group=self.cfg.group,
                                       discard=self._discard_writer())
        return self._delta
