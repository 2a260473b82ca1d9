"""The changes an initial load already holds, left out (per-table instantiation CSNs).

Wherever a batch's changes are read (as ``ATCSN`` is applied, :mod:`.csn_filter`), each
change of a loaded table is kept only if its CSN is at or after the cut of the range its
key is in (:class:`~trailgate.apply.instantiation.TableCuts`).  A key update that crosses
from a range loaded before it to one loaded after it is half applied: the old row deleted,
or the new row inserted from the update's full image.  While such a filter is on, each
batch is applied by the driver (the rule needs each change's key).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trailgate.apply.instantiation import Instantiation, TableCuts
from trailgate.apply.records import TrailChange
from trailgate.errors import TargetError
from trailgate.model import Change, OpType, TableDef
from trailgate.replicat.csn_filter import SPECIAL_OPS, CsnFilter
from trailgate.replicat.task_rows import Definitions, TaskRows

__all__ = ["ChangeFilter"]


class ChangeFilter:
    """``ATCSN``/``AFTERCSN`` and the instantiation registry, as one filter."""

    def __init__(self, csn: CsnFilter | None, registry: Instantiation | None):
        self.csn = csn
        self.registry = registry

    @classmethod
    def of(cls, csn: CsnFilter | None, registry: Instantiation | None) -> Any:
        """The filter to use, or None when there is nothing to leave out."""
        if registry is None or not registry.tables:
            return csn
        return cls(csn, registry)

    def keeps(self, csn: int) -> bool:
        return self.csn is None or self.csn.keeps(csn)

    def frame(self, df: Any) -> Any:
        """A Spark frame without the left-out changes: only for whole-table cuts (batches
        with ranged cuts are applied by the driver)."""
        from pyspark.sql import functions as F

        if self.csn is not None:
            df = self.csn.frame(df)
        assert self.registry is not None
        for t in self.registry.tables.values():
            if t.key_column is not None and len(t.cuts) > 1:
                raise TargetError("the instantiation filter of ranged cuts needs the driver "
                                  "path (internal error)")
            df = df.where(F.col("op").isin(*SPECIAL_OPS) | (F.col("table_name") != t.table)
                          | (F.col("csn") >= t.high))
        return df

    def task(self, task: TaskRows) -> TaskRows:
        """``task`` without the left-out changes (in place)."""
        if self.csn is not None:
            self.csn.task(task)
        assert self.registry is not None
        tables = self.registry.tables
        out: dict[int, list[TrailChange]] = {}
        for p, tcs in task.changes.items():
            kept = []
            for tc in tcs:
                cuts = tables.get(tc.change.table)
                if cuts is None or tc.csn >= cuts.high:
                    kept.append(tc)
                    continue
                if tc.csn < cuts.low:
                    continue
                done = _ranged(tc, cuts, task.definitions)
                if done is not None:
                    kept.append(done)
            if kept:
                out[p] = kept
        task.changes = out
        return task


def _key(image: dict[int, bytes | None] | None, index: int, tc: TrailChange) -> int:
    value = (image or {}).get(index)
    if value is None:
        raise TargetError(f"the {tc.change.op.label} record for {tc.change.table} at trail "
                          f"position {tc.position} lacks the key column the initial load "
                          f"split the table on, so its cut cannot be told")
    return int(value)


def _ranged(tc: TrailChange, cuts: TableCuts, defs: Definitions) -> TrailChange | None:
    """The change as it applies to a table loaded at several cuts (None: left out)."""
    change = tc.change
    op = change.op
    if op is OpType.TRUNCATE:
        raise TargetError(
            f"a TRUNCATE of {change.table} (CSN {tc.csn}) falls between the cuts of its "
            f"initial load ({cuts.low} to {cuts.high}): part of the table was loaded before "
            f"it and part after; load {change.table} again")
    if not op.is_row_change or cuts.key_column is None:
        return tc
    table: TableDef | None = defs.at(change.table, tc.position)
    if table is None:
        return tc
    index = table.column(cuts.key_column).index
    if op is OpType.INSERT:
        return tc if tc.csn >= cuts.cut_for(_key(change.after, index, tc)) else None
    if op is OpType.DELETE:
        return tc if tc.csn >= cuts.cut_for(_key(change.before, index, tc)) else None
    if op is not OpType.PK_UPDATE:
        image = change.before if change.before and index in change.before else change.after
        return tc if tc.csn >= cuts.cut_for(_key(image, index, tc)) else None
    old = tc.csn >= cuts.cut_for(_key(change.before, index, tc))
    new = tc.csn >= cuts.cut_for(_key(change.after, index, tc))
    if old and new:
        return tc
    if not old and not new:
        return None
    if old:  # the new row was loaded with its range: only the old one goes
        return replace(tc, change=Change(OpType.DELETE, change.table, before=change.before,
                                         io_time=change.io_time, audit_seq=change.audit_seq,
                                         audit_pos=change.audit_pos, tokens=change.tokens))
    if len(change.after or {}) < len(table.columns):
        raise TargetError(
            f"the key update of {change.table} at trail position {tc.position} (CSN {tc.csn}) "
            f"moves a row into a range the initial load read before it, but the record "
            f"does not carry every column, so the row cannot be inserted; load "
            f"{change.table} again")
    return replace(tc, change=Change(OpType.INSERT, change.table, after=change.after,
                                     io_time=change.io_time, audit_seq=change.audit_seq,
                                     audit_pos=change.audit_pos, tokens=change.tokens))
