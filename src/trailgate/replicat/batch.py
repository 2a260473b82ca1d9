"""One Replicat micro-batch: apply, checkpoint (the ``foreachBatch`` function).

Order of work for batch *b* (Spark's batch id, stable across a replay of the same offsets):

1. **Record** *b* in ``dirchk/NAME/replicat.plan`` (``replicat.base`` relies on it).
2. **Apply**: PostgreSQL — the batch's key-partition count is decided and recorded
   (:mod:`~trailgate.replicat.split`: 1 for a small batch or one with a PK update,
   truncate or DDL).  One key partition: the driver reads the batch's range (from Spark's
   offset log) straight from the trail and applies it, no Spark job.  Several: one Spark
   job, each task reading one key partition from the trail (the ``trailchanges`` source,
   no shuffle) and applying it.  Either way a key partition is one transaction plus its
   checkpoint-table row (replays skip committed ones), and the batch's position row comes
   back for the checkpoint.  Delta and Parquet — the batch read on the driver the same way
   (collected from Spark if its range is not known).  Delta: one commit per table with
   application transaction (group, *b*).  Parquet: one change-log file per table and
   batch, ``<dir>/<schema>/<table>/batch_id=<b>/part-00000.parquet``, written to a
   temporary name and renamed: a replay rewrites the same file with the same rows.
3. **Checkpoint** ``dirchk/NAME.cpr`` (atomic): read position = the batch's end offset, last
   CSN/XID, source commit time (LAG), and the batch's counts per target table (not added
   again if the checkpoint already holds this batch's end).

Spark commits *b* only after this function returns, so a crash anywhere replays *b*.

**Streaming apply** (PostgreSQL with a checkpoint table, the default for a running group;
``SPARK CONF trailgate.replicat.continuous=false`` goes back): the first batch starts an
:class:`~trailgate.replicat.streamer.ApplyStreamer` that applies the trail as it grows, and
each batch's step 2 only waits until it has applied the batch's range and takes its
position, last commit and counts.  A batch that a run without it began (its checkpoint-table
rows exist) is finished as above first.  The other way round, a batch applied as above
starts where the streamed apply's row says if that is later (a run after a streaming one).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.apply.records import TableCounts, TrailChange
from trailgate.checkpoint import Checkpoint, TableStats, atomic_write_text
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.model import OpType, TrailPosition
from trailgate.replicat.batch_rows import BatchSummary, TaskRows, read_task_rows, trail_changes
from trailgate.replicat.config import ReplicatConfig
from trailgate.replicat.rows import Router
from trailgate.replicat.split import SPLIT_MIN_RECORDS, key_partitions
from trailgate.replicat.streamer import ApplyStreamer
from trailgate.replicat.worker import (
    RESULT_FIELDS,
    RESULT_SCHEMA_DDL,
    apply_span_rows,
    apply_task_rows,
    marked,
    open_applier,
    paused_gc,
    pg_apply_task,
    shared_applier,
)
from trailgate.spark.change_rows import OP_POSITION
from trailgate.spark.offset_log import batch_range

__all__ = ["CONTINUOUS_CONF", "BatchApplier", "batch_base", "plan_file", "split_file"]

log = logging.getLogger("trailgate.replicat")
_SPECIAL = (int(OpType.METADATA), -1)
#: ``SPARK CONF trailgate.replicat.continuous=false``: no streaming apply (module docstring).
CONTINUOUS_CONF = "trailgate.replicat.continuous"


def plan_file(cfg: ReplicatConfig) -> Path:
    """``dirchk/NAME/replicat.plan``: the last batch's id."""
    return Home(cfg.home).spark_checkpoint_dir(cfg.group) / "replicat.plan"


def split_file(cfg: ReplicatConfig) -> Path:
    """``dirchk/NAME/replicat.split``: the last planned batch's range and key-partition
    count (:mod:`~trailgate.replicat.split`)."""
    return Home(cfg.home).spark_checkpoint_dir(cfg.group) / "replicat.split"


def batch_base(cfg: ReplicatConfig, spark_dir: Path) -> int:
    """0 normally; after Spark's checkpoint was removed (its batch ids restart at 0), one
    more than the last batch id applied, kept in ``dirchk/NAME/replicat.base``."""
    base_file = plan_file(cfg).with_name("replicat.base")
    fresh = not (spark_dir / "offsets").is_dir() or not any((spark_dir / "offsets").iterdir())
    if not fresh:
        try:
            return int(json.loads(base_file.read_text("utf-8"))["base"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0
    try:
        last = int(json.loads(plan_file(cfg).read_text("utf-8"))["batch_id"])
    except (OSError, ValueError, KeyError, TypeError):
        last = -1
    base = last + 1
    base_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(base_file, json.dumps({"base": base}) + "\n")
    return base


class BatchApplier:
    """Callable for ``foreachBatch``; keeps the driver-side appliers (Delta) and counts.

    ``spark_dir`` (the query's checkpoint location) and ``start`` (its
    ``startingPosition``) let a small PostgreSQL batch be read and applied on the driver
    (:mod:`~trailgate.spark.offset_log`); without them every batch goes through Spark.
    ``continuous``: apply the trail as it grows (module docstring) where the target allows
    (PostgreSQL with a checkpoint table, no ATCSN/AFTERCSN); ``stop_file``: the group's, which
    holds the streaming apply while it exists.  :meth:`close` when the query has ended.
    """

    def __init__(self, cfg: ReplicatConfig, partitions: int, *, base: int = 0,
                 csn_filter: tuple[str, int] | None = None,
                 on_batch: Callable[[int, dict[str, TableCounts]], None] | None = None,
                 spark_dir: Path | None = None, start: TrailPosition | None = None,
                 continuous: bool = False, stop_file: Path | None = None):
        self.cfg = cfg
        self.partitions = max(1, partitions)
        self.base = base  # batch id = base + Spark's batch id (0 unless Spark's checkpoint
        #                   was recreated: ids must keep growing for the targets' records)
        self.csn_filter = csn_filter
        self.on_batch = on_batch
        self.spark_dir = spark_dir
        self.start = start
        self.router = Router.of(cfg.source_patterns, list(cfg.params.map_excludes))
        self.home = Home(cfg.home)
        self._delta: Any = None
        self.driver_batches = 0  # PostgreSQL batches applied on the driver (tests)
        self.span_batches = 0  # of which straight from the trail's bytes (spanplan)
        self.continuous = (continuous and cfg.target_kind == "POSTGRES"
                           and cfg.checkpoint_table is not None and csn_filter is None
                           and spark_dir is not None)
        self.stop_file = stop_file
        self.streamer: ApplyStreamer | None = None
        self.streamed_batches = 0  # batches the streamer had applied (tests)
        self._floor: TrailPosition | None = None  # the stream row's position, once read
        self._floor_read = False

    # -- the foreachBatch function ---------------------------------------------------------
    def __call__(self, df: Any, batch_id: int) -> None:
        try:
            self._batch(df, int(batch_id))
        except TrailgateError as exc:
            raise RuntimeError(marked(str(exc))) from None

    def _batch(self, df: Any, spark_id: int) -> None:
        batch_id = self.base + spark_id
        self._record(batch_id)
        rng = (batch_range(self.spark_dir, spark_id, self.start)
               if self.spark_dir is not None else None)
        if self.cfg.target_kind == "POSTGRES":
            summary, counts = self._postgres(df, rng, batch_id)
        else:
            summary, counts = self._on_driver(df, rng, batch_id)
        self._checkpoint(summary, counts)
        if self.on_batch is not None:
            self.on_batch(batch_id, counts)

    def _filtered(self, df: Any) -> Any:
        """ATCSN/AFTERCSN: earlier transactions' changes left out."""
        if self.csn_filter is None:
            return df
        from pyspark.sql import functions as F

        kind, csn = self.csn_filter
        keep = F.col("csn") >= csn if kind == "atcsn" else F.col("csn") > csn
        return df.where(F.col("op").isin(*_SPECIAL) | keep)

    def _read(self, rng: tuple[TrailPosition, TrailPosition]) -> TaskRows:
        """The batch's range read straight from the trail (ATCSN/AFTERCSN applied)."""
        task = read_task_rows(self.cfg.trail, rng[0], rng[1], self.router)
        if self.csn_filter is not None:
            kind, at = self.csn_filter
            task.changes = {
                p: kept for p, tcs in task.changes.items()
                if (kept := [tc for tc in tcs if (tc.csn >= at if kind == "atcsn"
                                                  else tc.csn > at)])}
        return task

    def _record(self, batch_id: int) -> None:
        """Keep the batch id on record (``replicat.base`` relies on it)."""
        path = plan_file(self.cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"batch_id": batch_id}) + "\n")

    # -- targets ---------------------------------------------------------------------------
    def _postgres(self, df: Any, rng: tuple[TrailPosition, TrailPosition] | None,
                  batch_id: int) -> tuple[BatchSummary, dict[str, TableCounts]]:
        """A batch of one key partition (a small one, or one that must stay whole) is read
        and applied here, on the driver: a Spark job costs more than its apply.  Otherwise
        one Spark job, each task applying one key partition.  Both give counts and the
        batch's position row."""
        if rng is not None and self.continuous:
            streamed = self._streamed(rng, batch_id)
            if streamed is not None:
                return streamed
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
                                   router=self.router, path=split_file(cfg))
            if n == 1:
                with paused_gc():
                    if self.csn_filter is None:
                        rows = apply_span_rows(cfg, batch_id, rng[0], rng[1], self.router)
                        self.span_batches += rows is not None
                    if rows is None:
                        rows = apply_task_rows(cfg, batch_id, self._read(rng))
                self.driver_batches += 1
        if rows is not None:
            results = [dict(zip(rows, values, strict=True))
                       for values in zip(*rows.values(), strict=True)]
        else:
            results = [r.asDict() for r in self._filtered(df).mapInArrow(
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

    def _streamed(self, rng: tuple[TrailPosition, TrailPosition], batch_id: int
                  ) -> tuple[BatchSummary, dict[str, TableCounts]] | None:
        """The batch as the apply streamer applied it (started by the first batch); None
        for a batch that a run without the streamer began: it is finished as it began."""
        if self.streamer is None:
            applier = open_applier(self.cfg)
            try:
                begun = bool(applier.applied_partitions(batch_id))
            except BaseException:
                applier.close()
                raise
            if begun:
                applier.close()
                return None
            self.streamer = ApplyStreamer(applier, self.cfg.trail, self.router, rng[0],
                                          stop_file=self.stop_file)
        progress = self.streamer.sync(rng[1])
        self.streamed_batches += 1
        return progress.summary(), progress.counts

    def _stream_floor(self) -> TrailPosition | None:
        """Where a streaming run's row says its apply got (read once: nothing else moves
        it while batches are applied this way)."""
        if not self._floor_read:
            recorded = shared_applier(self.cfg).stream_position()
            self._floor = None if recorded is None else TrailPosition.parse(recorded)
            self._floor_read = True
        return self._floor

    def close(self) -> None:
        """Stop the apply streamer, if one runs, and checkpoint what it applied after the
        last batch (a stopping group's streamer may be ahead of it)."""
        streamer, self.streamer = self.streamer, None
        if streamer is None:
            return
        progress = streamer.close()
        ck = self.home.checkpoints.load(self.cfg.group, "REPLICAT")
        behind = (ck is None or not ck.read_position
                  or TrailPosition(int(ck.read_position.get("seqno", 0)),
                                   int(ck.read_position.get("rba", 0))) < progress.position)
        if behind or progress.counts:
            self._checkpoint(progress.summary(), progress.counts)

    def _on_driver(self, df: Any, rng: tuple[TrailPosition, TrailPosition] | None,
                   batch_id: int) -> tuple[BatchSummary, dict[str, TableCounts]]:
        """Delta and Parquet: the batch on the driver — read straight from the trail when
        the range is known, else collected from Spark."""
        if rng is not None:
            with paused_gc():
                task = self._read(rng)
                summary = BatchSummary.from_rows(
                    (OP_POSITION, None, 0, 0, text, False) for text in task.positions)
                summary.definitions = task.definitions
                tcs = [tc for p in sorted(task.changes) for tc in task.changes[p]]
                return summary, self._apply_on_driver(tcs, batch_id, summary)
        from pyspark.sql import functions as F

        df = self._filtered(df).persist()
        try:
            rows = (df.where(F.col("op").isin(*_SPECIAL))
                    .select("op", "table_name", "seqno", "rba", "text", "single").collect())
            summary = BatchSummary.from_rows(tuple(r) for r in rows)
            changes = df.where(~F.col("op").isin(*_SPECIAL))
            tcs = trail_changes(changes.sort("seqno", "rba").toArrow())
            return summary, self._apply_on_driver(tcs, batch_id, summary)
        finally:
            df.unpersist()

    def _apply_on_driver(self, tcs: list[TrailChange], batch_id: int, summary: BatchSummary
                         ) -> dict[str, TableCounts]:
        if not tcs:
            return {}
        defs = summary.definitions.for_changes(tcs)
        if self.cfg.target_kind == "DELTA":
            result = self.delta().apply_batch(batch_id, tcs, defs)
            return {} if result.skipped else result.counts
        return self._parquet(batch_id, tcs, defs)

    def delta(self) -> Any:
        if self._delta is None:
            from trailgate.apply.delta import DeltaApplier
            from trailgate.apply.discard import DiscardWriter

            spec = self.cfg.params.discardfile
            self._delta = DeltaApplier(self.cfg.target, self.cfg.params, group=self.cfg.group,
                                       discard=DiscardWriter(self.cfg.discard_file,
                                                             spec.megabytes if spec else None))
        return self._delta

    def _parquet(self, batch_id: int, tcs: list[TrailChange], defs: dict[str, Any]
                 ) -> dict[str, TableCounts]:
        from trailgate.replicat.changelog_files import write_change_logs

        return write_change_logs(self.cfg, batch_id, tcs, defs)

    # -- checkpoint ------------------------------------------------------------------------
    def _checkpoint(self, summary: BatchSummary, counts: dict[str, TableCounts]) -> None:
        if summary.end is None:
            return
        store = self.home.checkpoints
        ck = store.load(self.cfg.group, "REPLICAT") or Checkpoint(self.cfg.group, "REPLICAT")
        again = ck.read_position == summary.end
        ck.read_position = dict(summary.end)
        if summary.read_time:
            ck.read_time = summary.read_time
        if summary.last_csn is not None:
            ck.last_csn, ck.last_xid = summary.last_csn, summary.last_xid
        if not again:
            for target, c in counts.items():
                ck.stats.setdefault(target, TableStats()).add(TableStats(
                    inserts=c.inserts, updates=c.updates, deletes=c.deletes,
                    discards=c.discards, truncates=c.truncates))
        store.save(ck)

