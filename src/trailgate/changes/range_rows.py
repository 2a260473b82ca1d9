"""A trail range as *change rows* with trail positions: what the Data Pump streams.

These are the ``change_rows`` the ``trail`` sink consumes (:mod:`trailgate.changes.change_rows`,
exact trail-form values, table definitions, a position row ending the range) plus each
record's trail position, its TransInd and commit time, a ``key_hash`` of the row it touches
(so Spark can partition by key without decoding) and ``single`` (a PK update, truncate or DDL:
the batch must stay whole).  Pure pyarrow: runs in Spark's Python workers and in tests.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator

import pyarrow as pa

from trailgate.apply.planner import partition_key
from trailgate.changes.change_rows import CHANGE_ARROW_SCHEMA, CHANGE_SCHEMA_DDL, ChangeRowBuilder
from trailgate.changes.heartbeat import is_heartbeat, stamp_hop
from trailgate.changes.ranges import TrailRange, trans_ind
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TableDef, TrailPosition

__all__ = ["ROW_SCHEMA_DDL", "key_hash", "read_change_rows"]

_SINGLE = frozenset({OpType.PK_UPDATE, OpType.TRUNCATE, OpType.DDL})
EXTRA_FIELDS = [
    pa.field("seqno", pa.int64()), pa.field("rba", pa.int64()),
    pa.field("trans_ind", pa.int32()), pa.field("commit_time", pa.int64()),
    pa.field("key_hash", pa.int64()), pa.field("single", pa.bool_()),
]
ROW_ARROW_SCHEMA = pa.schema(list(CHANGE_ARROW_SCHEMA) + EXTRA_FIELDS)
ROW_SCHEMA_DDL = (CHANGE_SCHEMA_DDL + ", seqno long, rba long, trans_ind int, "
                  "commit_time long, key_hash long, single boolean")


def key_hash(change: Change, table: TableDef | None) -> int:
    """The stable hash of the row a change touches (same key: same hash, in any process)."""
    return zlib.crc32(repr(partition_key(change, table)).encode("utf-8", "surrogatepass"))



class _Builder:
    """Change rows plus the extra columns, as Arrow batches."""

    def __init__(self) -> None:
        self.rows = ChangeRowBuilder()
        self.extra: dict[str, list[object]] = {f.name: [] for f in EXTRA_FIELDS}

    def __len__(self) -> int:
        return len(self.rows)

    def _extra(self, seqno: int, rba: int, ind: int, commit: int | None, khash: int | None,
               single: bool) -> None:
        e = self.extra
        e["seqno"].append(seqno)
        e["rba"].append(rba)
        e["trans_ind"].append(ind)
        e["commit_time"].append(commit)
        e["key_hash"].append(khash)
        e["single"].append(single)

    def table(self, table: TableDef, position: TrailPosition) -> None:
        self.rows.add_table(table)
        self._extra(position.seqno, position.rba, 3, None, None, False)

    def define(self, table: TableDef, csn: int, xid: str, position: TrailPosition) -> None:
        self.rows.add_define(table, csn, xid)
        self._extra(position.seqno, position.rba, 3, None, None, False)

    def change(self, change: Change, csn: int, xid: str, last: bool, position: TrailPosition,
               ind: int, commit: int, khash: int | None) -> None:
        self.rows.add_change(change, csn, xid, last)
        self._extra(position.seqno, position.rba, ind, commit, khash, change.op in _SINGLE)

    def position(self, data: dict[str, object], position: TrailPosition) -> None:
        self.rows.add_position(data)
        self._extra(position.seqno, position.rba, 3, None, None, False)

    def take(self) -> pa.RecordBatch:
        batch = self.rows.take()
        arrays = list(batch.columns) + [pa.array(self.extra[f.name], f.type)
                                        for f in EXTRA_FIELDS]
        self.extra = {f.name: [] for f in EXTRA_FIELDS}
        return pa.RecordBatch.from_arrays(arrays, schema=ROW_ARROW_SCHEMA)


def read_change_rows(trail: str, lower: TrailPosition, upper: TrailPosition | None, *,
                     router: Router | None = None, hashes: bool = False,
                     batch_rows: int = 10_000, ddl: Callable[[Change], bool] | None = None
                     ) -> Iterator[pa.RecordBatch]:
    """Change rows of the transactions starting in ``[lower, upper)``; see the module
    docstring.  ``hashes`` fills ``key_hash`` (Replicat); ``ddl`` keeps DDL records (a
    pump's DDL rules).  A DDL record's new definition goes right after it."""
    span = TrailRange(trail, lower, upper, router, ddl)
    out = _Builder()
    emitted: dict[str, TableDef] = {}  # output name -> definition already sent
    hop = router.hop if router is not None else None
    for txn in span.transactions():
        n = len(txn.items)
        for i, (change, pos, tdef) in enumerate(txn.items):
            name = change.table
            if hop is not None and is_heartbeat(name):
                stamp_hop(change, tdef, "PUMP", hop)
            if change.op is OpType.DDL and tdef is not None:
                out.define(tdef, txn.csn, txn.xid, pos)
                emitted[name] = tdef
            elif tdef is not None and emitted.get(name) != tdef:
                out.table(tdef, pos)
                emitted[name] = tdef
            khash = key_hash(change, tdef) if hashes else None
            out.change(change, txn.csn, txn.xid, i == n - 1, pos, trans_ind(i, n),
                       txn.commit_time, khash)
        if len(out) >= batch_rows:
            yield out.take()
    info, end = span.position(hashes)
    out.position(info, end)
    yield out.take()
