"""The PostgreSQL apply task: one key partition of a batch, in a Python worker (or, for a
batch of one key partition, on the driver: :func:`apply_task_rows`).

A Spark partition holds the apply rows of one *key partition* ``p`` of the batch's ``n``
(read straight from the trail by the ``trailchanges`` source: the changes whose key hashes
to ``p``, in trail order, with the definitions of their tables and the batch's position
row).  The key partition is applied by :meth:`PgApplier.apply_partition` as one database
transaction with its checkpoint-table row ``(group, batch id, p)``, so exactly-once does not
depend on how Spark ran the tasks: a replayed batch splits into the same key partitions
(same rows, same hash, the count recorded with its range: :mod:`~trailgate.replicat.split`)
and skips those already committed.  The task returns its counts and the position row (the
batch's end and last commit, for the group checkpoint).

Errors reach the driver as text inside Spark's exception; :data:`MARK` brackets trailgate's
own message so the group can report it without a Java or Python stack.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from trailgate.apply.discard import DiscardWriter
from trailgate.apply.postgres import PgApplier
from trailgate.apply.records import ApplyResult
from trailgate.errors import TrailgateError
from trailgate.model import TrailPosition
from trailgate.replicat.batch_rows import TaskRows
from trailgate.replicat.rows import Router
from trailgate.replicat.span_apply import apply_span

__all__ = ["MARK", "RESULT_SCHEMA", "RESULT_SCHEMA_DDL", "apply_span_rows", "apply_task_rows",
           "marked", "open_applier", "paused_gc", "pg_apply_task", "shared_applier"]

MARK = "@@TRAILGATE@@"
RESULT_FIELDS = ("inserts", "updates", "deletes", "truncates", "discards", "ignores",
                 "collisions")
RESULT_SCHEMA = pa.schema([("p", pa.int32()), ("skipped", pa.bool_()),
                           ("target", pa.string()),
                           *[(f, pa.int64()) for f in RESULT_FIELDS],
                           ("position", pa.string())])
RESULT_SCHEMA_DDL = ("p int, skipped boolean, target string, "
                     + ", ".join(f"{f} long" for f in RESULT_FIELDS) + ", position string")

_lock = threading.Lock()
_appliers: dict[tuple[Any, ...], PgApplier] = {}


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a batch is read and applied.

    A batch makes hundreds of thousands of small objects that reference counting frees
    (changes, their mapped forms, rows); the cyclic collector would traverse them again
    and again as they pile up — about a third of the apply's CPU time, measured.  It runs
    again afterwards, for whatever cycles the batch left.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def marked(message: str) -> str:
    """A message the driver finds inside any Spark error text."""
    return f"{MARK}{message}{MARK}"


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
            results.append((p, applier.apply_partition(batch_id, p, changes,
                                                        task.definitions.for_changes(changes))))
    return _result_rows(results, task.positions)


def apply_span_rows(cfg: Any, batch_id: int, lower: TrailPosition, upper: TrailPosition,
                    router: Router) -> dict[str, list[Any]] | None:
    """:func:`apply_task_rows` for a batch of one key partition applied on the driver,
    from the trail's bytes (:mod:`~trailgate.replicat.span_apply`); None — nothing done —
    when the range needs the usual reading."""
    done = apply_span(shared_applier(cfg), batch_id, cfg.trail, lower, upper, router)
    if done is None:
        return None
    result, position = done
    return _result_rows([] if result is None else [(0, result)], [position])


def _result_rows(results: list[tuple[int, ApplyResult]], positions: list[str]
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
