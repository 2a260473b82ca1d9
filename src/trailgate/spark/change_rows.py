"""Change rows: what flows from a capture source (or a trail) into the ``trail`` sink.

The trail source's rows (``trail_rows``) are for people and SQL: values as text.  These rows
are for writing trails again, so they keep everything a trail record needs, exactly:

* one row per change, in transaction order, with the transaction's ``csn``/``xid`` on every
  row and ``txn_last`` on its last one (the sink commits the transaction there);
* values in *trail form* (``map<int, binary>``: column index to bytes, NULL is a null
  value, an absent column is absent), so no conversion can change them;
* a table definition row (``op`` = 170, the definition as JSON in ``text``) before the first
  change of each table in a micro-batch, so every batch is self-contained;
* a source position row (``op`` = -1, JSON in ``text``) at the end of a partition: the
  read checkpoint the sink stores once the batch is durable.

Pure pyarrow, no pyspark import: the same code runs in Spark's Python workers and in tests.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef

__all__ = [
    "CHANGE_ARROW_SCHEMA",
    "CHANGE_SCHEMA_DDL",
    "OP_METADATA",
    "OP_POSITION",
    "ChangeRow",
    "ChangeRowBuilder",
    "iter_change_rows",
    "tabledef_from_json",
    "tabledef_to_json",
]

OP_METADATA = int(OpType.METADATA)
OP_POSITION = -1

CHANGE_SCHEMA_DDL = (
    "op int, table_name string, csn long, xid string, txn_last boolean, "
    "before map<int,binary>, after map<int,binary>, io_time long, audit_seq long, "
    "audit_pos long, rowid string, tokens map<string,string>, text string"
)

_VALUES = pa.map_(pa.int32(), pa.binary())
_TOKENS = pa.map_(pa.string(), pa.string())
CHANGE_ARROW_SCHEMA = pa.schema([
    ("op", pa.int32()), ("table_name", pa.string()), ("csn", pa.int64()),
    ("xid", pa.string()), ("txn_last", pa.bool_()), ("before", _VALUES), ("after", _VALUES),
    ("io_time", pa.int64()), ("audit_seq", pa.int64()), ("audit_pos", pa.int64()),
    ("rowid", pa.string()), ("tokens", _TOKENS), ("text", pa.string()),
])
_OPS = {int(op): op for op in OpType}
_SCALARS = ("op", "table_name", "csn", "xid", "txn_last", "io_time", "audit_seq", "audit_pos",
            "rowid", "text")


def tabledef_to_json(table: TableDef) -> str:
    """A definition as compact JSON (the ``text`` of a metadata row, the sink's state)."""
    return json.dumps(dataclasses.asdict(table), separators=(",", ":"))


def tabledef_from_json(text: str | dict[str, Any]) -> TableDef:
    """Undo :func:`tabledef_to_json`: equal to the original, field for field."""
    data = json.loads(text) if isinstance(text, str) else text
    columns = [Column(**{**c, "kind": ColumnKind(c["kind"])}) for c in data["columns"]]
    return TableDef(**{**data, "columns": columns})


class _Map:
    """A map column as Arrow's offsets/keys/items/validity lists."""

    __slots__ = ("items", "keys", "nulls", "offsets")

    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.keys: list[Any] = []
        self.items: list[Any] = []
        self.nulls: list[bool] = []

    def add(self, entries: dict[Any, Any] | None) -> None:
        if entries is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            self.keys.extend(entries)
            self.items.extend(entries.values())
        self.offsets.append(len(self.keys))

    def array(self, type_: pa.MapType) -> pa.MapArray:
        return pa.MapArray.from_arrays(
            pa.array(self.offsets, pa.int32()), pa.array(self.keys, type_.key_type),
            pa.array(self.items, type_.item_type), type=type_,
            mask=pa.array(self.nulls, pa.bool_()))


class ChangeRowBuilder:
    """Accumulates change rows column by column; :meth:`take` returns an Arrow batch."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in _SCALARS}
        self.before, self.after, self.tokens = _Map(), _Map(), _Map()
        self.value_bytes = 0

    def __len__(self) -> int:
        return len(self.cols["op"])

    def full(self, max_rows: int, max_bytes: int = 16 << 20) -> bool:
        """Time to :meth:`take` a batch: enough rows, or enough value bytes (big values
        must not make one Arrow batch huge)."""
        return len(self.cols["op"]) >= max_rows or self.value_bytes >= max_bytes

    def _row(self, op: int, table: str | None, csn: int | None, xid: str | None, last: bool,
             io_time: int | None = None, audit_seq: int | None = None,
             audit_pos: int | None = None, rowid: str | None = None,
             text: str | None = None) -> None:
        c = self.cols
        c["op"].append(op)
        c["table_name"].append(table)
        c["csn"].append(csn)
        c["xid"].append(xid)
        c["txn_last"].append(last)
        c["io_time"].append(io_time)
        c["audit_seq"].append(audit_seq)
        c["audit_pos"].append(audit_pos)
        c["rowid"].append(rowid)
        c["text"].append(text)

    def add_change(self, change: Change, csn: int, xid: str, last: bool) -> None:
        """One change of transaction (``csn``, ``xid``); ``last`` ends the transaction."""
        self._row(int(change.op), change.table, csn, xid, last, change.io_time,
                  change.audit_seq, change.audit_pos, change.rowid, change.text)
        self.before.add(change.before)
        self.after.add(change.after)
        self.tokens.add(change.tokens)
        for image in (change.before, change.after):
            if image:
                self.value_bytes += sum(len(v) for v in image.values() if v)

    def add_table(self, table: TableDef, csn: int | None = None, xid: str | None = None) -> None:
        """A table definition, valid for the changes after it."""
        self._row(OP_METADATA, table.qualified_name, csn, xid, False,
                  text=tabledef_to_json(table))
        self.before.add(None)
        self.after.add(None)
        self.tokens.add(None)

    def add_position(self, position: dict[str, Any]) -> None:
        """The source position every row before this one was read up to."""
        self._row(OP_POSITION, None, None, None, False, text=json.dumps(position))
        self.before.add(None)
        self.after.add(None)
        self.tokens.add(None)

    def take(self) -> pa.RecordBatch:
        """The rows so far as one batch; the builder starts empty again."""
        arrays = []
        for field in CHANGE_ARROW_SCHEMA:
            name = field.name
            if name == "before":
                arrays.append(self.before.array(_VALUES))
            elif name == "after":
                arrays.append(self.after.array(_VALUES))
            elif name == "tokens":
                arrays.append(self.tokens.array(_TOKENS))
            else:
                arrays.append(pa.array(self.cols[name], field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=CHANGE_ARROW_SCHEMA)
        self._reset()
        return batch


@dataclass(slots=True)
class ChangeRow:
    """One decoded row: a change, a table definition or a source position."""

    op: int
    table: str | None
    csn: int | None
    xid: str | None
    last: bool
    change: Change | None = None
    table_def: TableDef | None = None
    position: dict[str, Any] | None = None


def _maps(array: pa.Array) -> list[dict[Any, Any] | None]:
    """A map column as Python dicts, fast: flat key/item lists sliced by the offsets."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count == len(array):
        return [None] * len(array)
    offsets = array.offsets.to_pylist()
    keys = array.keys.to_pylist()
    items = array.items.to_pylist()
    valid = array.is_valid().to_pylist()
    out: list[dict[Any, Any] | None] = []
    append = out.append
    for i, ok in enumerate(valid):
        if ok:
            lo, hi = offsets[i], offsets[i + 1]
            append(dict(zip(keys[lo:hi], items[lo:hi], strict=True)))
        else:
            append(None)
    return out


def iter_change_rows(batch: pa.RecordBatch | pa.Table) -> Iterator[ChangeRow]:
    """The rows of ``batch`` (columns found by name, so extra columns do no harm)."""
    names = batch.schema.names

    def col(name: str) -> list[Any]:
        return batch.column(names.index(name)).to_pylist()

    ops, tables, csns, xids, lasts = (col("op"), col("table_name"), col("csn"), col("xid"),
                                      col("txn_last"))
    io_times, seqs, poss, rowids, texts = (col("io_time"), col("audit_seq"), col("audit_pos"),
                                          col("rowid"), col("text"))
    befores = _maps(batch.column(names.index("before")))
    afters = _maps(batch.column(names.index("after")))
    tokens = _maps(batch.column(names.index("tokens")))
    for i, op in enumerate(ops):
        if op == OP_POSITION:
            yield ChangeRow(op, None, None, None, False, position=json.loads(texts[i]))
        elif op == OP_METADATA:
            yield ChangeRow(op, tables[i], csns[i], xids[i], False,
                            table_def=tabledef_from_json(texts[i]))
        else:
            change = Change(_OPS.get(op) or OpType(op), tables[i], after=afters[i],
                            before=befores[i],
                            io_time=io_times[i] or 0, audit_seq=seqs[i] or 0,
                            audit_pos=poss[i] or 0, rowid=rowids[i], tokens=tokens[i],
                            text=texts[i])
            yield ChangeRow(op, tables[i], csns[i], xids[i], bool(lasts[i]), change=change)
