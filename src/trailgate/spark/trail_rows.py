"""Trail records to Arrow record batches: the rows of ``spark.read.format("trail")``.

Pure pyarrow, so it runs in Spark's workers, benchmarks and scripts alike; columns gather as
lists and become Arrow arrays once per batch, far cheaper than row tuples.  A range yields
the transactions whose first record it holds (followed into later files); one whose last
record never comes (a crashed writer) yields nothing, and records before the range's first
transaction start belong to an earlier range.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa

from trailgate.model import (
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    Values,
    unix_micros_from_julian,
)
from trailgate.trail.ddl import ddl_fields
from trailgate.trail.reader import TrailReader, TrailRecord

__all__ = ["ARROW_SCHEMA", "SCHEMA_DDL", "read_batches"]

#: The row schema, in Spark DDL (see docs/spark.md for each column's meaning).
SCHEMA_DDL = (
    "seqno long, rba long, end_rba long, op string, io_type int, table_name string, "
    "csn long, xid string, io_time timestamp, trans_ind int, txn_first boolean, "
    "txn_last boolean, before map<string,string>, after map<string,string>, "
    "tokens map<string,string>, rowid string, audit_rba long, audit_pos long"
)

_MAP = pa.map_(pa.string(), pa.string())
ARROW_SCHEMA = pa.schema([
    ("seqno", pa.int64()), ("rba", pa.int64()), ("end_rba", pa.int64()),
    ("op", pa.string()), ("io_type", pa.int32()), ("table_name", pa.string()),
    ("csn", pa.int64()), ("xid", pa.string()), ("io_time", pa.timestamp("us", tz="UTC")),
    ("trans_ind", pa.int32()), ("txn_first", pa.bool_()), ("txn_last", pa.bool_()),
    ("before", _MAP), ("after", _MAP), ("tokens", _MAP),
    ("rowid", pa.string()), ("audit_rba", pa.int64()), ("audit_pos", pa.int64()),
])

_SCALARS = ("seqno", "rba", "end_rba", "op", "io_type", "table_name", "csn", "xid", "io_time",
            "trans_ind", "txn_first", "txn_last", "rowid", "audit_rba", "audit_pos")
_MAPS = ("before", "after", "tokens")
_TEXT_OPS = frozenset({OpType.DDL, OpType.COMMENT})


class _MapColumn:
    """A map<string,string> column kept as Arrow's offsets/keys/items/validity lists."""

    __slots__ = ("items", "keys", "nulls", "offsets")

    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.keys: list[str] = []
        self.items: list[str | None] = []
        self.nulls: list[bool] = []

    def add(self, entries: Mapping[str, str | None] | None) -> None:
        if entries is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            self.keys.extend(entries)
            self.items.extend(entries.values())
        self.offsets.append(len(self.keys))

    def mark(self) -> int:
        return len(self.keys)

    def truncate(self, rows: int, keys: int) -> None:
        del self.offsets[rows + 1:], self.nulls[rows:], self.keys[keys:], self.items[keys:]

    def array(self) -> pa.MapArray:
        return pa.MapArray.from_arrays(
            pa.array(self.offsets, pa.int32()), pa.array(self.keys, pa.string()),
            pa.array(self.items, pa.string()), type=_MAP, mask=pa.array(self.nulls, pa.bool_()))


class _ValueNames:
    """How one table definition turns ``{index: bytes}`` into ``{name: text}``."""

    __slots__ = ("names", "raw", "table")

    def __init__(self, table: TableDef | None):
        self.table = table
        self.names = {c.index: c.name for c in table.columns} if table else {}
        self.raw = frozenset(c.index for c in table.columns
                             if c.kind is ColumnKind.RAW) if table else frozenset()

    def convert(self, values: Values | None) -> dict[str, str | None] | None:
        if values is None:
            return None
        names, raw = self.names, self.raw
        out: dict[str, str | None] = {}
        for index, value in values.items():
            name = names.get(index) or str(index)
            if value is None:
                out[name] = None
            elif index in raw:
                out[name] = value.hex()
            else:
                out[name] = value.decode("utf-8", "backslashreplace")
        return out


class _Columns:
    """Rows accumulated column by column; a mark lets a dropped transaction be taken back."""

    def __init__(self) -> None:
        self.scalars: dict[str, list[object]] = {name: [] for name in _SCALARS}
        self.maps = {name: _MapColumn() for name in _MAPS}
        self._names: dict[int, _ValueNames] = {}

    def __len__(self) -> int:
        return len(self.scalars["seqno"])

    def mark(self) -> tuple[int, ...]:
        return (len(self), *(m.mark() for m in self.maps.values()))

    def truncate(self, mark: tuple[int, ...]) -> None:
        rows = mark[0]
        for column in self.scalars.values():
            del column[rows:]
        for m, keys in zip(self.maps.values(), mark[1:], strict=True):
            m.truncate(rows, keys)

    def _value_names(self, table: TableDef | None) -> _ValueNames:
        cached = self._names.get(id(table))
        if cached is None or cached.table is not table:
            cached = self._names[id(table)] = _ValueNames(table)
        return cached

    def add(self, record: TrailRecord, csn: int | None, xid: str | None,
            first: bool, last: bool) -> None:
        raw = record.raw
        change = record.change
        s = self.scalars
        s["seqno"].append(record.position.seqno)
        s["rba"].append(record.position.rba)
        s["end_rba"].append(record.end.rba)
        s["op"].append(OpType(raw.io_type).label if raw.op is not None else str(raw.io_type))
        s["io_type"].append(raw.io_type)
        s["table_name"].append(raw.table)
        s["csn"].append(csn)
        s["xid"].append(xid)
        s["io_time"].append(unix_micros_from_julian(raw.io_time) if raw.io_time else None)
        s["trans_ind"].append(3 if first and last else 0 if first else 2 if last else 1)
        s["txn_first"].append(first)
        s["txn_last"].append(last)
        s["rowid"].append(raw.rowid)
        s["audit_rba"].append(raw.audit_rba)
        s["audit_pos"].append(raw.audit_pos)
        if change is None:  # a metadata record: its columns and their source types
            table = record.table_def
            self.maps["before"].add(None)
            self.maps["after"].add(
                {c.name: c.source_type for c in table.columns} if table else None)
        elif change.op in _TEXT_OPS:
            self.maps["before"].add(None)
            fields: dict[str, str | None] = {"text": change.text}
            if change.op is OpType.DDL:  # the statement, sequence, operation and object
                fields.update(ddl_fields(change.text or ""))
            self.maps["after"].add(fields)
        else:
            names = self._value_names(record.table_def)
            self.maps["before"].add(names.convert(change.before))
            self.maps["after"].add(names.convert(change.after))
        self.maps["tokens"].add(raw.tokens or None)

    def take(self) -> pa.RecordBatch:
        arrays = []
        for field in ARROW_SCHEMA:
            if field.name in self.maps:
                arrays.append(self.maps[field.name].array())
            else:
                arrays.append(pa.array(self.scalars[field.name], field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
        self.truncate((0,) * (1 + len(self.maps)))
        return batch


@dataclass(slots=True)
class _OpenTxn:
    csn: int | None
    xid: str | None
    mark: tuple[int, ...]


def read_batches(
    trail: str,
    lower: TrailPosition,
    upper: TrailPosition | None,
    *,
    tables: Callable[[str], bool] | None = None,
    include_metadata: bool = False,
    batch_rows: int = 10_000,
) -> Iterator[pa.RecordBatch]:
    """Record batches of the transactions that start in ``[lower, upper)`` (see the module
    docstring for the rule); ``upper=None`` reads to the end of the trail."""
    reader = TrailReader(trail, start=lower)
    cols = _Columns()
    txn: _OpenTxn | None = None

    def beyond(record: TrailRecord) -> bool:
        return upper is not None and record.position >= upper

    for record in reader.records():
        raw = record.raw
        if raw.io_type == OpType.METADATA:
            if beyond(record):
                if txn is None:
                    break
            elif include_metadata and (tables is None or tables(raw.table)):
                cols.add(record, txn.csn if txn else None, txn.xid if txn else None,
                         False, False)
            continue
        if record.starts_transaction:
            if txn is not None:  # the previous one never ended: its writer stopped
                cols.truncate(txn.mark)
                txn = None
            if beyond(record):
                break
            txn = _OpenTxn(raw.csn, raw.xid, cols.mark())
        elif txn is None:
            if beyond(record):
                break
            continue  # the rest of a transaction that started before this range
        change = record.change
        if change is not None and (raw.io_type != OpType.COMMENT or include_metadata) and (
                tables is None or tables(raw.table)):
            cols.add(record, txn.csn, txn.xid, record.starts_transaction,
                     record.ends_transaction)
        if record.ends_transaction:
            txn = None
            if len(cols) >= batch_rows:
                yield cols.take()
    if txn is not None:
        cols.truncate(txn.mark)
    if len(cols):
        yield cols.take()
