"""Apply rows (Arrow) back into what the apply layer takes: TrailChanges and definitions.

Used on both sides: in Spark's Python workers (a partition's rows) and on the driver (a
batch's table definitions and end position, a Delta or Parquet batch).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trailgate.apply.records import TrailChange
from trailgate.changes.apply_rows import trail_change_of
from trailgate.changes.change_rows import OP_METADATA, OP_POSITION
from trailgate.changes.ranges import TrailRange
from trailgate.changes.routing import Router
from trailgate.model import OpType, TableDef, TrailPosition

__all__ = ["BatchSummary", "Definitions", "TaskRows", "position_commit", "read_task_rows",
           "trail_changes"]


@dataclass(slots=True)
class Definitions:
    """Table definitions with the trail position each takes effect at."""

    by_table: dict[str, tuple[list[TrailPosition], list[TableDef]]] = field(
        default_factory=dict)

    def add(self, name: str, position: TrailPosition, table: TableDef) -> None:
        positions, defs = self.by_table.setdefault(name, ([], []))
        i = bisect.bisect_right(positions, position)
        positions.insert(i, position)
        defs.insert(i, table)

    def at(self, name: str, position: TrailPosition) -> TableDef | None:
        """The definition of ``name`` in effect at ``position`` (None: none before it)."""
        found = self.by_table.get(name)
        if not found:
            return None
        i = bisect.bisect_right(found[0], position)
        return found[1][i - 1] if i else found[1][0]

    def segments(self, changes: Sequence[TrailChange]
                 ) -> list[tuple[list[TrailChange], dict[str, TableDef]]] | None:
        """``changes`` cut at each DDL record (a part of its own) and wherever a table's
        definition changes, each part with its tables' definitions; None when there is no
        DDL and one definition per table (the usual case: one apply call does it all).  The
        same definition written again (each new trail file repeats the definitions it
        uses, e.g. after an Extract's restart) is no change."""
        ddl = any(tc.change.op is OpType.DDL for tc in changes)
        if not ddl and all(len(positions) < 2 for positions, _ in self.by_table.values()):
            return None
        out: list[tuple[list[TrailChange], dict[str, TableDef]]] = []
        part: list[TrailChange] = []
        defs: dict[str, TableDef] = {}
        for tc in changes:
            if tc.change.op is OpType.DDL:
                if part:
                    out.append((part, defs))
                    part, defs = [], {}
                after = self.at(tc.change.table, tc.position)
                out.append(([tc], {} if after is None else {tc.change.table: after}))
                continue
            name = tc.change.table
            table = self.at(name, tc.position)
            if name in defs and defs[name] is not table and defs[name] != table and part:
                out.append((part, defs))
                part, defs = [], {}
            if table is not None:
                defs.setdefault(name, table)
            part.append(tc)
        if part:
            out.append((part, defs))
        return out

    def for_changes(self, changes: Iterable[TrailChange]) -> dict[str, TableDef]:
        """One definition per table for an apply call: the one in effect at the table's
        first change (a definition only changes with DDL, which keeps a batch whole)."""
        out: dict[str, TableDef] = {}
        for tc in changes:
            name = tc.change.table
            if name not in out:
                table = self.at(name, tc.position)
                if table is not None:
                    out[name] = table
        return out


def position_commit(info: dict[str, Any]) -> tuple[str | None, int, str | None] | None:
    """A position row's last source commit — (read time, CSN, XID) — or None when the
    range it ends held none."""
    if info.get("csn") is None:
        return None
    return info.get("read_time"), int(info["csn"]), info.get("xid")


@dataclass(slots=True)
class BatchSummary:
    """What the driver learns about a batch before applying it."""

    definitions: Definitions = field(default_factory=Definitions)
    end: dict[str, Any] | None = None  # the batch's end offset {"seqno", "rba"}
    read_time: str | None = None  # source commit time of the batch's last transaction
    last_csn: int | None = None
    last_xid: str | None = None
    single: bool = False

    @classmethod
    def from_rows(cls, rows: Iterable[Any]) -> BatchSummary:
        """From ``(op, table_name, seqno, rba, text, single)`` rows of the batch."""
        out = cls()
        best: tuple[int, int] | None = None
        last_commit: tuple[int, int] | None = None
        for op, table, seqno, rba, text, single in rows:
            if op == OP_METADATA:
                from trailgate.changes.change_rows import tabledef_from_json

                out.definitions.add(table, TrailPosition(seqno, rba), tabledef_from_json(text))
            elif op == OP_POSITION:
                info = json.loads(text)
                pos = (int(info["seqno"]), int(info["rba"]))
                if best is None or pos > best:
                    best = pos
                    out.end = {"seqno": pos[0], "rba": pos[1]}
                commit = position_commit(info)
                if commit is not None and (last_commit is None or pos > last_commit):
                    last_commit = pos
                    out.read_time, out.last_csn, out.last_xid = commit
            elif single:
                out.single = True
        return out


@dataclass(slots=True)
class TaskRows:
    """What a task's apply rows hold: changes by key partition (trail order as read), the
    table definitions, and the position rows' JSON."""

    changes: dict[int, list[TrailChange]] = field(default_factory=dict)
    definitions: Definitions = field(default_factory=Definitions)
    positions: list[str] = field(default_factory=list)

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Take in one Arrow batch of apply rows."""
        names = batch.schema.names

        def col(name: str) -> list[Any]:
            return batch.column(names.index(name)).to_pylist()

        ops, tables, seqnos, rbas = col("op"), col("table_name"), col("seqno"), col("rba")
        csns, xids, inds, commits = col("csn"), col("xid"), col("trans_ind"), col("commit_time")
        texts, payloads, parts = col("text"), col("payload"), col("p")
        changes = self.changes
        for i, op in enumerate(ops):
            if op == OP_POSITION:
                self.positions.append(texts[i])
            elif op == OP_METADATA:
                from trailgate.changes.change_rows import tabledef_from_json

                self.definitions.add(tables[i], TrailPosition(seqnos[i], rbas[i]),
                                     tabledef_from_json(texts[i]))
            else:
                p = parts[i] or 0
                bucket = changes.get(p)
                if bucket is None:
                    bucket = changes[p] = []
                bucket.append(trail_change_of(op, tables[i], seqnos[i], rbas[i], csns[i],
                                              xids[i], inds[i], commits[i], texts[i],
                                              payloads[i]))


def read_task_rows(trail: str, lower: TrailPosition, upper: TrailPosition,
                   router: Router) -> TaskRows:
    """What the apply rows of ``[lower, upper)`` would hold, read straight from the trail
    (the driver applying a small batch: no Arrow, no Spark); all in key partition 0."""
    span = TrailRange(trail, lower, upper, router)
    rows = TaskRows()
    changes: list[TrailChange] = []
    defined: dict[str, TableDef] = {}
    add = changes.append
    for txn in span.transactions():
        items, csn, xid, commit, start = (txn.items, txn.csn, txn.xid, txn.commit_time,
                                          txn.start)
        last = len(items) - 1
        for i, (change, pos, tdef) in enumerate(items):
            name = change.table
            if tdef is not None and defined.get(name) is not tdef:
                rows.definitions.add(name, pos, tdef)
                defined[name] = tdef
            ind = 3 if last == 0 else 0 if i == 0 else 2 if i == last else 1  # trans_ind
            add(TrailChange(change, csn, xid, pos, commit, ind, None, start))
    if changes:
        rows.changes[0] = changes
    info, _ = span.position(True)
    rows.positions.append(json.dumps(info))
    return rows


def trail_changes(batch: pa.RecordBatch | pa.Table) -> list[TrailChange]:
    """The changes of a batch of apply rows, in row order."""
    rows = TaskRows()
    rows.add(batch)
    out = [tc for part in rows.changes.values() for tc in part]
    if len(rows.changes) > 1:
        out.sort(key=lambda tc: tc.position)
    return out
