"""Change rows (Arrow) back into what the apply layer takes: TrailChanges and definitions.

Used on both sides: in Spark's Python workers (a partition's rows) and on the driver (a
batch's table definitions and end position, a Delta or Parquet batch).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trailgate.apply.records import TrailChange
from trailgate.model import TableDef, TrailPosition
from trailgate.spark.change_rows import OP_METADATA, OP_POSITION, iter_change_rows

__all__ = ["BatchSummary", "Definitions", "trail_changes"]


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
                from trailgate.spark.change_rows import tabledef_from_json

                out.definitions.add(table, TrailPosition(seqno, rba), tabledef_from_json(text))
            elif op == OP_POSITION:
                info = json.loads(text)
                pos = (int(info["seqno"]), int(info["rba"]))
                if best is None or pos > best:
                    best = pos
                    out.end = {"seqno": pos[0], "rba": pos[1]}
                if info.get("csn") is not None and (last_commit is None or pos > last_commit):
                    last_commit = pos
                    out.read_time = info.get("read_time")
                    out.last_csn, out.last_xid = int(info["csn"]), info.get("xid")
            elif single:
                out.single = True
        return out


def trail_changes(batch: pa.RecordBatch | pa.Table) -> list[tuple[TrailChange, int | None]]:
    """The change rows of ``batch`` as (TrailChange, key partition) pairs, in row order."""
    names = batch.schema.names
    seqnos = batch.column(names.index("seqno")).to_pylist()
    rbas = batch.column(names.index("rba")).to_pylist()
    inds = batch.column(names.index("trans_ind")).to_pylist()
    commits = batch.column(names.index("commit_time")).to_pylist()
    parts = (batch.column(names.index("p")).to_pylist() if "p" in names
             else [None] * len(seqnos))
    out: list[tuple[TrailChange, int | None]] = []
    for i, row in enumerate(iter_change_rows(batch)):
        if row.change is None:
            continue
        out.append((TrailChange(row.change, int(row.csn or 0), row.xid or "",
                                TrailPosition(seqnos[i], rbas[i]), commits[i] or 0,
                                inds[i] if inds[i] is not None else 3), parts[i]))
    return out
