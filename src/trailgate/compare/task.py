"""One Spark task of a compare: a range's hashes on both sides, or its differing rows.

The hash pass reads each range once per side; only a range whose count or hash differ gets
the row pass, which classifies each difference as *missing*, *extra* or *different* (with
the columns that differ).  Without a key whole rows compare with their multiplicity.  At
most ``max_rows`` differences of a range carry their values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trailgate.compare.sides import open_side
from trailgate.compare.spec import CompareJob, CompareTable

__all__ = ["DIFF_SCHEMA", "HASH_SCHEMA", "CompareTask", "Difference", "hash_range",
           "rows_range"]

HASH_SCHEMA = "table int, range int, src_rows long, src_hash string, tgt_rows long, " \
              "tgt_hash string"
DIFF_SCHEMA = "table int, range int, kind string, key string, n int, columns string, " \
              "src string, tgt string"


@dataclass(frozen=True, slots=True)
class CompareTask:
    """What a Spark task does: the hash or the row pass of one range of one table."""

    job: CompareJob
    mode: str  # "hash" | "rows"
    table: int
    range: int
    schema: Any = None  # the Delta target's Arrow schema (PostgreSQL-to-Delta)
    max_rows: int = 1000


@dataclass(slots=True)
class Difference:
    """One out-of-sync row (``n`` rows of a table without a key)."""

    table: int
    range: int
    kind: str  # missing | extra | different
    key: str
    n: int = 1
    columns: tuple[str, ...] = ()
    src: tuple[str | None, ...] | None = None
    tgt: tuple[str | None, ...] | None = None

    def row(self) -> tuple[Any, ...]:
        return (self.table, self.range, self.kind, self.key, self.n,
                json.dumps(list(self.columns)),
                None if self.src is None else json.dumps(list(self.src)),
                None if self.tgt is None else json.dumps(list(self.tgt)))

    @classmethod
    def of(cls, row: Any) -> Difference:
        t, r, kind, key, n, cols, src, tgt = row
        return cls(int(t), int(r), kind, key, int(n), tuple(json.loads(cols)),
                   None if src is None else tuple(json.loads(src)),
                   None if tgt is None else tuple(json.loads(tgt)))


def _sides(task: CompareTask) -> tuple[Any, Any]:
    job = task.job
    schemas = {task.table: task.schema} if task.schema is not None else None
    source = open_side("POSTGRES", job.source, "source", schemas)
    try:
        target = open_side(job.target_kind, job.target, "target")
    except BaseException:
        source.close()
        raise
    return source, target


def hash_range(task: CompareTask) -> tuple[Any, ...]:
    """``HASH_SCHEMA``'s row for the task's range."""
    table = task.job.tables[task.table]
    rng = table.ranges[task.range]
    source, target = _sides(task)
    try:
        sc, sh = source.range_hash(table, rng)
        tc, th = target.range_hash(table, rng)
    finally:
        source.close()
        target.close()
    return task.table, task.range, sc, str(sh), tc, str(th)


def differing_columns(table: CompareTable, src: tuple[str | None, ...],
                      tgt: tuple[str | None, ...]) -> tuple[str, ...]:
    """The source names of the columns whose values differ."""
    return tuple(c.source for c, a, b in zip(table.columns, src, tgt, strict=True) if a != b)


def classify(table: CompareTable, rng_index: int, src_rows: dict[str, tuple[int, int]],
             tgt_rows: dict[str, tuple[int, int]]) -> list[Difference]:
    """The differences between two sides' row hashes of one range."""
    out = []
    for key, (h, n) in src_rows.items():
        other = tgt_rows.get(key)
        if other is None:
            out.append(Difference(table.number, rng_index, "missing", key, n))
        elif other[1] != n:  # a table without a key: the same row a different number of times
            kind = "missing" if other[1] < n else "extra"
            out.append(Difference(table.number, rng_index, kind, key, abs(other[1] - n)))
        elif other[0] != h:
            out.append(Difference(table.number, rng_index, "different", key, n))
    for key, (_, n) in tgt_rows.items():
        if key not in src_rows:
            out.append(Difference(table.number, rng_index, "extra", key, n))
    return out


def with_values(table: CompareTable, rng_index: int, diffs: list[Difference], source: Any,
                target: Any, limit: int) -> list[Difference]:
    """Fill in the values (and differing columns) of up to ``limit`` differences."""
    rng = table.ranges[rng_index]
    chosen = diffs[:limit]
    src = source.values(table, rng, [d.key for d in chosen if d.kind != "extra"])
    tgt = target.values(table, rng, [d.key for d in chosen if d.kind != "missing"])
    for d in chosen:
        d.src, d.tgt = src.get(d.key), tgt.get(d.key)
        if d.kind == "different" and d.src is not None and d.tgt is not None:
            d.columns = differing_columns(table, d.src, d.tgt)
    return diffs


def rows_range(task: CompareTask) -> list[tuple[Any, ...]]:
    """``DIFF_SCHEMA`` rows for the task's range."""
    table = task.job.tables[task.table]
    rng = table.ranges[task.range]
    source, target = _sides(task)
    try:
        diffs = classify(table, task.range, source.range_rows(table, rng),
                         target.range_rows(table, rng))
        with_values(table, task.range, diffs, source, target, task.max_rows)
    finally:
        source.close()
        target.close()
    return [d.row() for d in diffs]
