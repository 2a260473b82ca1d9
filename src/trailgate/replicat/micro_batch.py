"""One Replicat micro-batch (the query's ``foreachBatch`` function): apply, then checkpoint.

Batch *b* (Spark's id, stable across a replay) is recorded in ``dirchk/NAME/replicat.plan``,
applied by one of the two paths (waiting for :mod:`~trailgate.replicat.stream_apply`, or
:mod:`~trailgate.replicat.batch_apply` or :mod:`~trailgate.replicat.lake_apply` applying
its range), and the group checkpoint then takes its end, last commit and counts (through
the stream apply, which also writes it on its own about once a second, one writer at a
time).  Spark commits *b* only after, so a crash replays it, and every path applies it at
most once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.apply.records import TableCounts
from trailgate.changes.routing import Router
from trailgate.checkpoint import Checkpoint, TableStats, atomic_write_text
from trailgate.errors import TrailgateError, marked
from trailgate.home import Home
from trailgate.model import TrailPosition
from trailgate.replicat.batch_apply import PgBatchApply
from trailgate.replicat.config import ReplicatConfig
from trailgate.replicat.csn_filter import BatchFilter
from trailgate.replicat.lake_apply import LakeBatchApply
from trailgate.replicat.stream_apply import ApplyStreamer, Progress
from trailgate.replicat.task_apply import open_applier
from trailgate.replicat.task_rows import BatchSummary
from trailgate.spark.offset_log import batch_range
from trailgate.spark.trail_offsets import position_of

__all__ = ["CONTINUOUS_CONF", "BatchApplier", "batch_base"]

log = logging.getLogger("trailgate.replicat")
#: ``SPARK CONF trailgate.replicat.continuous=false``: no stream apply (module docstring).
CONTINUOUS_CONF = "trailgate.replicat.continuous"


def batch_base(cfg: ReplicatConfig, spark_dir: Path) -> int:
    """0 normally; after Spark's checkpoint was removed (its batch ids restart at 0), one
    more than the last batch id applied, kept in ``dirchk/NAME/replicat.base``: the ids the
    targets record must keep growing."""
    base_file = cfg.plan_file.with_name("replicat.base")
    fresh = not (spark_dir / "offsets").is_dir() or not any((spark_dir / "offsets").iterdir())
    if not fresh:
        try:
            return int(json.loads(base_file.read_text("utf-8"))["base"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0
    try:
        last = int(json.loads(cfg.plan_file.read_text("utf-8"))["batch_id"])
    except (OSError, ValueError, KeyError, TypeError):
        last = -1
    base = last + 1
    base_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(base_file, json.dumps({"base": base}) + "\n")
    return base


class BatchApplier:
    """Callable for ``foreachBatch``; keeps the paths' state and the stream apply.

    ``spark_dir`` (the query's checkpoint location) and ``start`` (its
    ``startingPosition``) give each batch's range from Spark's offset log, so the driver can
    read it from the trail itself; without them every batch goes through Spark.
    ``continuous``: stream the apply where the target allows it (PostgreSQL with a
    checkpoint table, no ATCSN/AFTERCSN); ``stop_file``: the group's, which holds the
    stream apply while it exists.  :meth:`close` once the query has ended.
    """

    def __init__(self, cfg: ReplicatConfig, partitions: int, *, base: int = 0,
                 csn_filter: BatchFilter | None = None,
                 on_batch: Callable[[int, dict[str, TableCounts]], None] | None = None,
                 spark_dir: Path | None = None, start: TrailPosition | None = None,
                 continuous: bool = False, stop_file: Path | None = None):
        self.cfg = cfg
        self.base = base  # batch id = base + Spark's batch id
        self.on_batch = on_batch
        #: called at close with the counts the stream apply applied after the last batch
        self.on_rest: Callable[[dict[str, TableCounts]], None] | None = None
        self.spark_dir = spark_dir
        self.start = start
        self.home = Home(cfg.home)
        router = Router.of(cfg.source_patterns, list(cfg.params.map_excludes))
        self.router = router
        self.pg = PgBatchApply(cfg, partitions, router, csn_filter)
        self.lake = LakeBatchApply(cfg, router, csn_filter)
        self.continuous = (continuous and cfg.target_kind == "POSTGRES"
                           and cfg.checkpoint_table is not None and csn_filter is None
                           and spark_dir is not None)
        self.stop_file = stop_file
        self.streamer: ApplyStreamer | None = None
        self.streamed_batches = 0  # batches the stream apply had applied (tests)

    @property
    def partitions(self) -> int:
        return self.pg.partitions

    @property
    def driver_batches(self) -> int:
        """PostgreSQL batches applied by the driver itself (tests)."""
        return self.pg.driver_batches

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
        done = None
        if self.cfg.target_kind == "POSTGRES":
            if rng is not None and self.continuous:
                streamed = self._streamed(rng, batch_id)
                if streamed is not None:  # checkpointed by the stream apply
                    if self.on_batch is not None:
                        self.on_batch(batch_id, streamed)
                    return
            done = self.pg.apply(df, rng, batch_id)
        else:
            done = self.lake.apply(df, rng, batch_id)
        summary, counts = done
        self._checkpoint(summary, counts)
        if self.on_batch is not None:
            self.on_batch(batch_id, counts)

    def _record(self, batch_id: int) -> None:
        """Keep the batch id on record (``batch_base`` relies on it)."""
        path = self.cfg.plan_file
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"batch_id": batch_id}) + "\n")

    def _streamed(self, rng: tuple[TrailPosition, TrailPosition], batch_id: int
                  ) -> dict[str, TableCounts] | None:
        """The batch as the stream apply applied it (started by the first batch), the
        group checkpoint written, and its counts; None for a batch that a run without it
        began: that one is finished as it began."""
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
                                          stop_file=self.stop_file,
                                          checkpoint=self._stream_checkpoint,
                                          nowait=self.cfg.params.commit_nowait,
                                          step_gap=self.cfg.params.eof_delay)
        progress = self.streamer.sync(rng[1])
        self.streamer.checkpoint()
        self.streamed_batches += 1
        return progress.counts

    def failure(self) -> TrailgateError | None:
        """The stream apply's failure, if it stopped with one (the group stops at once
        rather than at the next batch)."""
        return self.streamer.failure() if self.streamer is not None else None

    def _stream_checkpoint(self, progress: Progress) -> None:
        self._checkpoint(progress.summary(), progress.counts)

    def close(self) -> None:
        """Stop the stream apply, if one runs, and checkpoint what it applied after the
        last batch (a stopping group's stream may be ahead of it)."""
        streamer, self.streamer = self.streamer, None
        if streamer is None:
            return
        rest = streamer.close()
        streamer.checkpoint()
        if self.on_rest is not None and rest.counts:
            self.on_rest(rest.counts)

    # -- checkpoint ------------------------------------------------------------------------
    def _checkpoint(self, summary: BatchSummary, counts: dict[str, TableCounts]) -> None:
        if summary.end is None:
            return
        store = self.home.checkpoints
        ck = store.load(self.cfg.group, "REPLICAT") or Checkpoint(self.cfg.group, "REPLICAT")
        again = ck.read_position == summary.end
        if not _behind(summary.end, ck.read_position):  # a replay never moves it back
            ck.read_position = dict(summary.end)
            if summary.read_time:
                ck.read_time = summary.read_time
            if summary.last_csn is not None:
                ck.last_csn, ck.last_xid = summary.last_csn, summary.last_xid
        if not again:
            for target, c in counts.items():
                ck.stats.setdefault(target, TableStats()).add(TableStats(
                    inserts=c.inserts, updates=c.updates, deletes=c.deletes,
                    discards=c.discards, truncates=c.truncates, ddl=c.ddl))
        store.save(ck)


def _behind(end: dict[str, Any], recorded: dict[str, Any] | None) -> bool:
    """Whether trail position ``end`` is before the checkpoint's read position (a replay's
    stream apply starts at its checkpoint-table row, which a tail with nothing mapped may
    leave behind what the group checkpoint already says)."""
    if not recorded:
        return False
    try:
        return position_of(end) < position_of(recorded)
    except ValueError:
        return False
