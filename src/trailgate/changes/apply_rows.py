"""The Replicat's rows: a trail range as compact change rows, optionally one key partition.

Spark moves map columns between the JVM and Python workers about ten times slower than flat
ones, so here each change's images, tokens and header fields travel in one ``payload``
column (``marshal``: producer and consumer are the same Python) and only what Spark looks at
has a column.  With ``part=(p, n)`` only changes whose key hashes to *p* are kept, so each
Spark partition reads its key partition from the trail: no shuffle.  docs/replicat.md.
"""

from __future__ import annotations

import json
import marshal
import zlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from trailgate.apply.records import TrailChange
from trailgate.changes.change_rows import OP_METADATA, OP_POSITION, tabledef_to_json
from trailgate.changes.ranges import TrailRange, trans_ind
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TableDef, TrailPosition

__all__ = ["APPLY_ARROW_SCHEMA", "APPLY_SCHEMA_DDL", "change_of", "read_apply_rows",
           "trail_change_of"]

APPLY_ARROW_SCHEMA = pa.schema([
    ("op", pa.int32()), ("table_name", pa.string()), ("seqno", pa.int64()),
    ("rba", pa.int64()), ("csn", pa.int64()), ("xid", pa.string()),
    ("trans_ind", pa.int32()), ("commit_time", pa.int64()), ("single", pa.bool_()),
    ("p", pa.int32()), ("text", pa.string()), ("payload", pa.binary()),
])
APPLY_SCHEMA_DDL = ("op int, table_name string, seqno long, rba long, csn long, xid string, "
                    "trans_ind int, commit_time long, single boolean, p int, text string, "
                    "payload binary")
_SINGLE = frozenset({OpType.PK_UPDATE, OpType.TRUNCATE, OpType.DDL})
_OPS = {int(op): op for op in OpType}
_BEFORE_KEY = (OpType.DELETE, OpType.PK_UPDATE)


class _KeyHasher:
    """``key_hash`` (``rows.key_hash``) with each definition's key indexes looked up once."""

    def __init__(self) -> None:
        self._indexes: dict[int, tuple[TableDef, tuple[int, ...] | None]] = {}

    def __call__(self, change: Change, table: TableDef | None) -> int:
        name = change.table
        key: tuple[Any, ...] = (name,)
        if table is not None:
            cached = self._indexes.get(id(table))
            if cached is None or cached[0] is not table:
                usable = table.key and table.key_kind != "NONE"
                cached = self._indexes[id(table)] = (
                    table, tuple(table.key_indexes) if usable else None)
            indexes = cached[1]
            if indexes is not None:
                image = change.before if change.op in _BEFORE_KEY else change.after
                if image and all(i in image for i in indexes):
                    key = (name, tuple(image[i] for i in indexes))
        return zlib.crc32(repr(key).encode("utf-8", "surrogatepass"))


class _Columns:
    """Apply rows accumulated column by column."""

    def __init__(self, p: int | None) -> None:
        self.p = p
        self.cols: dict[str, list[Any]] = {f.name: [] for f in APPLY_ARROW_SCHEMA}

    def __len__(self) -> int:
        return len(self.cols["op"])

    def row(self, op: int, table: str | None, pos: TrailPosition, csn: int | None,
            xid: str | None, ind: int | None, commit: int | None, single: bool,
            text: str | None, payload: bytes | None) -> None:
        c = self.cols
        c["op"].append(op)
        c["table_name"].append(table)
        c["seqno"].append(pos.seqno)
        c["rba"].append(pos.rba)
        c["csn"].append(csn)
        c["xid"].append(xid)
        c["trans_ind"].append(ind)
        c["commit_time"].append(commit)
        c["single"].append(single)
        c["p"].append(self.p)
        c["text"].append(text)
        c["payload"].append(payload)

    def take(self) -> pa.RecordBatch:
        arrays = [pa.array(self.cols[f.name], f.type) for f in APPLY_ARROW_SCHEMA]
        self.cols = {f.name: [] for f in APPLY_ARROW_SCHEMA}
        return pa.RecordBatch.from_arrays(arrays, schema=APPLY_ARROW_SCHEMA)


def read_apply_rows(trail: str, lower: TrailPosition, upper: TrailPosition | None, *,
                    router: Router | None = None, part: tuple[int, int] | None = None,
                    batch_rows: int = 10_000) -> Iterator[pa.RecordBatch]:
    """Apply rows of the transactions starting in ``[lower, upper)`` (``part=(p, n)``:
    only key partition ``p`` of ``n``); see the module docstring."""
    span = TrailRange(trail, lower, upper, router)
    p, n = part if part is not None else (None, 1)
    out = _Columns(p)
    hasher = _KeyHasher() if n > 1 else None
    emitted: dict[str, TableDef] = {}
    dumps = marshal.dumps
    for txn in span.transactions():
        items = txn.items
        count = len(items)
        csn, xid, commit = txn.csn, txn.xid, txn.commit_time
        for i, (change, pos, tdef) in enumerate(items):
            if hasher is not None and hasher(change, tdef) % n != p:
                continue
            name = change.table
            if tdef is not None and emitted.get(name) != tdef:
                out.row(OP_METADATA, name, pos, None, None, None, None, False,
                        tabledef_to_json(tdef), None)
                emitted[name] = tdef
            op = change.op
            out.row(int(op), name, pos, csn, xid, trans_ind(i, count), commit, op in _SINGLE,
                    change.text,
                    dumps((change.before, change.after, change.tokens, change.io_time,
                           change.audit_seq, change.audit_pos, change.rowid)))
        if len(out) >= batch_rows:
            yield out.take()
    info, end = span.position(True)
    out.row(OP_POSITION, None, end, None, None, None, None, False, json.dumps(info), None)
    yield out.take()


def change_of(op: int, table: str, text: str | None, payload: bytes) -> Change:
    """The :class:`Change` an apply row carries."""
    before, after, tokens, io_time, audit_seq, audit_pos, rowid = marshal.loads(payload)
    return Change(_OPS.get(op) or OpType(op), table, after, before, io_time, audit_seq,
                  audit_pos, rowid, tokens, text)


def trail_change_of(op: int, table: str, seqno: int, rba: int, csn: int | None,
                    xid: str | None, ind: int | None, commit: int | None, text: str | None,
                    payload: bytes) -> TrailChange:
    """The :class:`TrailChange` an apply row carries."""
    return TrailChange(change_of(op, table, text, payload), int(csn or 0), xid or "",
                       TrailPosition(seqno, rba), commit or 0, 3 if ind is None else ind)
