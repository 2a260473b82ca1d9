"""One Replicat micro-batch: plan, apply, checkpoint (the ``foreachBatch`` function).

Order of work for batch *b* (Spark's batch id, stable across a replay of the same offsets):

1. **Summary** (one small job): table definitions, the batch's end offset, its last commit
   (time, CSN, XID), and whether it holds a PK update, truncate or DDL.
2. **Plan**: the key-partition count *n* (``SPARK CONF trailgate.replicat.partitions``; 1 for
   a batch that must stay whole) is written to ``dirchk/NAME/replicat.plan`` before anything
   is applied, and a replay of *b* reuses it, so its rows split exactly as before.
3. **Apply**: PostgreSQL — rows ``repartition``-ed by ``p = key_hash mod n``, sorted by trail
   position within each partition, applied by tasks (one transaction plus checkpoint-table
   row per key partition; replays skip committed ones). Delta — the batch on the driver, one
   commit per table with application transaction (group, *b*). Parquet — one change-log file
   per table and batch, ``<dir>/<schema>/<table>/batch_id=<b>/part-00000.parquet``, written
   to a temporary name and renamed: a replay rewrites the same file with the same rows.
4. **Checkpoint** ``dirchk/NAME.cpr`` (atomic): read position = the batch's end offset, last
   CSN/XID, source commit time (LAG), and the batch's counts per target table (not added
   again if the checkpoint already holds this batch's end).

Spark commits *b* only after this function returns, so a crash anywhere replays *b*.
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
from trailgate.model import OpType
from trailgate.replicat.batch_rows import BatchSummary, trail_changes
from trailgate.replicat.config import ReplicatConfig
from trailgate.replicat.worker import RESULT_FIELDS, RESULT_SCHEMA_DDL, marked, pg_apply_task

__all__ = ["BatchApplier", "batch_base", "plan_file"]

log = logging.getLogger("trailgate.replicat")
_SPECIAL = (int(OpType.METADATA), -1)


def plan_file(cfg: ReplicatConfig) -> Path:
    """``dirchk/NAME/replicat.plan``: the last batch's id and key-partition count."""
    return Home(cfg.home).spark_checkpoint_dir(cfg.group) / "replicat.plan"


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
    """Callable for ``foreachBatch``; keeps the driver-side appliers (Delta) and counts."""

    def __init__(self, cfg: ReplicatConfig, partitions: int, *, base: int = 0,
                 csn_filter: tuple[str, int] | None = None,
                 on_batch: Callable[[int, dict[str, TableCounts]], None] | None = None):
        self.cfg = cfg
        self.partitions = max(1, partitions)
        self.base = base  # batch id = base + Spark's batch id (0 unless Spark's checkpoint
        #                   was recreated: ids must keep growing for the targets' records)
        self.csn_filter = csn_filter
        self.on_batch = on_batch
        self.home = Home(cfg.home)
        self._delta: Any = None

    # -- the foreachBatch function ---------------------------------------------------------
    def __call__(self, df: Any, batch_id: int) -> None:
        try:
            self._batch(df, self.base + int(batch_id))
        except TrailgateError as exc:
            raise RuntimeError(marked(str(exc))) from None

    def _batch(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if self.csn_filter is not None:
            kind, csn = self.csn_filter
            keep = F.col("csn") >= csn if kind == "atcsn" else F.col("csn") > csn
            df = df.where(F.col("op").isin(*_SPECIAL) | keep)
        df = df.persist()
        try:
            rows = (df.where(F.col("op").isin(*_SPECIAL) | F.col("single"))
                    .select("op", "table_name", "seqno", "rba", "text", "single").collect())
            summary = BatchSummary.from_rows(tuple(r) for r in rows)
            changes = df.where(~F.col("op").isin(*_SPECIAL))
            kind = self.cfg.target_kind
            if kind == "POSTGRES":
                counts = self._postgres(changes, batch_id, summary)
            else:
                counts = self._on_driver(changes, batch_id, summary)
            self._checkpoint(summary, counts)
            if self.on_batch is not None:
                self.on_batch(batch_id, counts)
        finally:
            df.unpersist()

    # -- plan ------------------------------------------------------------------------------
    def _plan(self, batch_id: int, single: bool) -> int:
        """The key-partition count of this batch: the recorded one for a replay."""
        path = plan_file(self.cfg)
        try:
            plan = json.loads(path.read_text("utf-8"))
            if int(plan["batch_id"]) == batch_id:
                return int(plan["partitions"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        n = 1 if single else self.partitions
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"batch_id": batch_id, "partitions": n}) + "\n")
        return n

    # -- targets ---------------------------------------------------------------------------
    def _postgres(self, changes: Any, batch_id: int, summary: BatchSummary
                  ) -> dict[str, TableCounts]:
        from pyspark.sql import functions as F

        n = self._plan(batch_id, summary.single)
        part = F.pmod(F.col("key_hash"), F.lit(n)).cast("int") if n > 1 else F.lit(0)
        planned = (changes.withColumn("p", part).repartition(n, "p")
                   .sortWithinPartitions("seqno", "rba"))
        task = pg_apply_task(self.cfg, batch_id, summary.definitions)
        results = planned.mapInArrow(task, RESULT_SCHEMA_DDL).collect()
        counts: dict[str, TableCounts] = {}
        for r in results:
            if r["skipped"] or not r["target"]:
                continue
            c = counts.setdefault(r["target"], TableCounts())
            c.add(TableCounts(**{f: int(r[f]) for f in RESULT_FIELDS}))
        return counts

    def _on_driver(self, changes: Any, batch_id: int, summary: BatchSummary
                   ) -> dict[str, TableCounts]:
        self._plan(batch_id, True)  # the batch id on record (replicat.base relies on it)
        table = changes.sort("seqno", "rba").toArrow()
        tcs = [tc for tc, _ in trail_changes(table)]
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

