"""A PostgreSQL micro-batch applied as a batch: on the driver, or as Spark tasks by key.

The path of runs that do not stream the apply (``--once``, ATCSN/AFTERCSN,
``continuous=false``, no checkpoint table).  The key-partition count is decided once and
recorded (:mod:`trailgate.spark.key_split`); one partition is applied on the driver
(:mod:`~trailgate.replicat.range_apply`), since a Spark job costs more than a small apply,
several by one Spark job (:mod:`~trailgate.replicat.task_apply`).  Each commits with its
checkpoint-table row, so a replay skips what was committed.
"""

from __future__ import annotations

from typing import Any

from trailgate.apply.paused_gc import paused_gc
from trailgate.apply.records import TableCounts
from trailgate.changes.change_rows import OP_POSITION
from trailgate.changes.routing import Router
from trailgate.model import TrailPosition
from trailgate.replicat.config import ReplicatConfig
from trailgate.replicat.csn_filter import BatchFilter, filtered
from trailgate.replicat.range_apply import apply_range
from trailgate.replicat.task_apply import (
    RESULT_FIELDS,
    RESULT_SCHEMA_DDL,
    pg_apply_task,
    result_rows,
    shared_applier,
)
from trailgate.replicat.task_rows import BatchSummary
from trailgate.spark.key_split import SPLIT_MIN_RECORDS, key_partitions

__all__ = ["PgBatchApply"]


class PgBatchApply:
    """Applies PostgreSQL micro-batches as batches (module docstring); counts the batches the
    driver applied itself (tests, reports)."""

    def __init__(self, cfg: ReplicatConfig, partitions: int, router: Router,
                 csn_filter: BatchFilter | None):
        self.cfg = cfg
        self.partitions = max(1, partitions)
        self.router = router
        self.csn_filter = csn_filter
        self.driver_batches = 0
        self._floor: TrailPosition | None = None  # the stream row's position, once read
        self._floor_read = False

    def apply(self, df: Any, rng: tuple[TrailPosition, TrailPosition] | None, batch_id: int
              ) -> tuple[BatchSummary, dict[str, TableCounts]]:
        """Apply batch ``batch_id`` (its range when known, else only its Spark frame):
        the batch's summary and counts per target table."""
        rows = None
        if rng is not None:
            cfg = self.cfg
            floor = self._stream_floor()
            if floor is not None and floor >= rng[1]:  # all applied by a streaming run
                return BatchSummary(end={"seqno": rng[1].seqno, "rba": rng[1].rba}), {}
            if floor is not None and floor > rng[0]:
                rng, n = (floor, rng[1]), 1  # what a streaming run applied is left out
            else:
                n = key_partitions(cfg.trail, rng[0], rng[1], partitions=self.partitions,
                                   split_min=cfg.split_min_records or SPLIT_MIN_RECORDS,
                                   router=self.router, path=cfg.split_file)
            if n == 1:
                with paused_gc():
                    result, position = apply_range(shared_applier(cfg), batch_id, cfg.trail,
                                                   rng[0], rng[1], self.router,
                                                   csn_filter=self.csn_filter)
                rows = result_rows([] if result is None else [(0, result)], [position])
                self.driver_batches += 1
        if rows is not None:
            results = [dict(zip(rows, values, strict=True))
                       for values in zip(*rows.values(), strict=True)]
        else:
            results = [r.asDict() for r in filtered(df, self.csn_filter).mapInArrow(
                pg_apply_task(self.cfg, batch_id), RESULT_SCHEMA_DDL).collect()]
        counts: dict[str, TableCounts] = {}
        positions = []
        for r in results:
            if r["position"] is not None:
                positions.append((OP_POSITION, None, 0, 0, r["position"], False))
            if r["skipped"] or not r["target"]:
                continue
            c = counts.setdefault(r["target"], TableCounts())
            c.add(TableCounts(**{f: int(r[f]) for f in RESULT_FIELDS}))
        return BatchSummary.from_rows(positions), counts

    def _stream_floor(self) -> TrailPosition | None:
        """Where a streaming run's row says its apply got (read once: nothing else moves
        it while batches are applied this way)."""
        if not self._floor_read:
            recorded = shared_applier(self.cfg).stream_position()
            self._floor = None if recorded is None else TrailPosition.parse(recorded)
            self._floor_read = True
        return self._floor
