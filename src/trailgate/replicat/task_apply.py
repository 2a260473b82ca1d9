"""The PostgreSQL apply as Spark tasks: each task applies one key partition of a micro-batch.

A task reads its key partition straight from the trail (the ``trailchanges`` source keeps
the changes whose key hashes to *p*) and applies it as one target transaction with its
checkpoint-table row ``(group, batch id, p)``: a replay splits the same way and skips what
committed, however Spark ran the tasks.  Appliers (a connection each) are kept per worker
process and group.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from trailgate.apply.discard import DiscardWriter
from trailgate.apply.paused_gc import paused_gc
from trailgate.apply.postgres import PgApplier
from trailgate.apply.records import ApplyResult
from trailgate.errors import TrailgateError, marked
from trailgate.replicat.task_rows import TaskRows

__all__ = ["RESULT_FIELDS", "RESULT_SCHEMA", "RESULT_SCHEMA_DDL", "apply_task_rows",
           "open_applier", "pg_apply_task", "result_rows", "shared_applier"]

RESULT_FIELDS = ("inserts", "updates", "deletes", "truncates", "discards", "ignores",
                 "collisions", "ddl")
RESULT_SCHEMA = pa.schema([("p", pa.int32()), ("skipped", pa.bool_()),
                           ("target", pa.string()),
                           *[(f, pa.int64()) for f in RESULT_FIELDS],
                           ("position", pa.string())])
RESULT_SCHEMA_DDL = ("p int, skipped boolean, target string, "
                     + ", ".join(f"{f} long" for f in RESULT_FIELDS) + ", position string")

_lock = threading.Lock()
_appliers: dict[tuple[Any, ...], PgApplier] = {}


def shared_applier(cfg: Any) -> PgApplier:
    """One applier (one connection) per worker process and group, reused across batches."""
    key = (cfg.group, cfg.target, cfg.checkpoint_table, cfg.discard_file)
    with _lock:
        applier = _appliers.get(key)
        if applier is not None and (applier.conn.closed or applier.conn.broken):
            _appliers.pop(key, None)
            applier = None
        if applier is None:
            applier = _appliers[key] = open_applier(cfg)
        return applier


def open_applier(cfg: Any) -> PgApplier:
    """A new applier for the group's target, with its discard file."""
    spec = cfg.params.discardfile
    return PgApplier(cfg.target, cfg.params, checkpoint_table=cfg.checkpoint_table,
                     group=cfg.group,
                     discard=DiscardWriter(cfg.discard_file, spec.megabytes if spec else None))


def apply_task_rows(cfg: Any, batch_id: int, task: TaskRows) -> dict[str, list[Any]]:
    """Apply the key partitions a task's rows hold; the result rows (``RESULT_SCHEMA``
    columns): counts per key partition and target, a skipped partition, the position rows.
    Used by the Spark task and, for a batch of one key partition, by the driver."""
    results: list[tuple[int, ApplyResult]] = []
    if task.changes:
        applier = shared_applier(cfg)
        for p in sorted(task.changes):
            changes = task.changes[p]
            results.append((p, applier.apply_partition(
                batch_id, p, changes, task.definitions.for_changes(changes),
                segments=task.definitions.segments(changes))))
    return result_rows(results, task.positions)


def result_rows(results: list[tuple[int, ApplyResult]], positions: list[str]
                 ) -> dict[str, list[Any]]:
    """The result rows (``RESULT_SCHEMA`` columns) of applied key partitions: a skipped
    partition, counts per partition and target, then the position rows."""
    rows: dict[str, list[Any]] = {name: [] for name in RESULT_SCHEMA.names}
    for p, result in results:
        if result.skipped:
            _row(rows, p, True, "", None)
        for target, counts in result.counts.items():
            _row(rows, p, False, target, counts.as_dict())
    for text in positions:
        _row(rows, -1, False, "", None, text)
    return rows


def pg_apply_task(cfg: Any, batch_id: int):
    """The ``mapInArrow`` function applying a batch's key partitions to PostgreSQL."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with paused_gc():
            task = TaskRows()
            for batch in batches:
                task.add(batch)
            try:
                rows = apply_task_rows(cfg, batch_id, task)
            except TrailgateError as exc:
                raise RuntimeError(marked(str(exc))) from None
        yield pa.RecordBatch.from_pydict(rows, schema=RESULT_SCHEMA)

    return apply


def _row(rows: dict[str, list[Any]], p: int, skipped: bool, target: str,
         counts: dict[str, int] | None, position: str | None = None) -> None:
    rows["p"].append(p)
    rows["skipped"].append(skipped)
    rows["target"].append(target)
    for f in RESULT_FIELDS:
        rows[f].append((counts or {}).get(f, 0))
    rows["position"].append(position)
