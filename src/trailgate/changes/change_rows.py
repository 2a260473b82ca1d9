"""Change rows: what flows from a capture source (or a trail) into the ``trail`` sink.

Unlike the ``trail`` source's text values, these rows keep everything a trail record
needs, exactly: values in trail form, the transaction on every row, a definition row before
each table's first change and a position row at the end, so each batch is self-contained;
*define* and *note* rows carry a DDL's new definition and its report lines.  *Packed* and
*transactions* rows carry records a source encoded itself (``trail.txn_batch``), since
Spark's cost is per row.  Schema: docs/processes.md, "Change rows".  Pure pyarrow: it runs
in Spark's workers too.
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
    "OP_DEFINE",
    "OP_METADATA",
    "OP_NOTE",
    "OP_PACKED",
    "OP_POSITION",
    "OP_TXNS",
    "ChangeColumns",
    "ChangeRow",
    "ChangeRowBuilder",
    "ColumnRowBuilder",
    "iter_change_rows",
    "tabledef_from_json",
    "tabledef_to_json",
]

OP_METADATA = int(OpType.METADATA)
OP_POSITION = -1
OP_PACKED = -2
OP_DEFINE = -3
OP_NOTE = -4
OP_TXNS = -5

CHANGE_SCHEMA_DDL = (
    "op int, table_name string, csn long, xid string, txn_last boolean, "
    "before map<int,binary>, after map<int,binary>, io_time long, audit_seq long, "
    "audit_pos long, rowid string, tokens map<string,string>, text string, record binary"
)

_VALUES = pa.map_(pa.int32(), pa.binary())
_TOKENS = pa.map_(pa.string(), pa.string())
CHANGE_ARROW_SCHEMA = pa.schema([
    ("op", pa.int32()), ("table_name", pa.string()), ("csn", pa.int64()),
    ("xid", pa.string()), ("txn_last", pa.bool_()), ("before", _VALUES), ("after", _VALUES),
    ("io_time", pa.int64()), ("audit_seq", pa.int64()), ("audit_pos", pa.int64()),
    ("rowid", pa.string()), ("tokens", _TOKENS), ("text", pa.string()),
    ("record", pa.binary()),
])
_OPS = {int(op): op for op in OpType}


def tabledef_to_json(table: TableDef) -> str:
    """A definition as compact JSON (the ``text`` of a metadata row, the sink's state)."""
    data = dataclasses.asdict(table)
    if data["source_tdr"] is None:
        del data["source_tdr"]  # read as its default
    return json.dumps(data, separators=(",", ":"))


def tabledef_from_json(text: str | dict[str, Any]) -> TableDef:
    """Undo :func:`tabledef_to_json`: equal to the original, field for field."""
    data = json.loads(text) if isinstance(text, str) else text
    columns = [Column(**{**c, "kind": ColumnKind(c["kind"])}) for c in data["columns"]]
    return TableDef(**{**data, "columns": columns})


def _map_array(values: list[dict[Any, Any] | None], type_: pa.MapType) -> pa.Array:
    """A map column from per-row dicts (``None``: a null map)."""
    if not any(v is not None for v in values):
        return pa.nulls(len(values), type_)
    offsets: list[int] = [0]
    keys: list[Any] = []
    items: list[Any] = []
    nulls: list[bool] = []
    for entries in values:
        if entries is None:
            nulls.append(True)
        else:
            nulls.append(False)
            keys.extend(entries)
            items.extend(entries.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, type_.key_type),
        pa.array(items, type_.item_type), type=type_, mask=pa.array(nulls, pa.bool_()))


#: A row as the builder keeps it, in CHANGE_ARROW_SCHEMA's order.
_ORDER = [f.name for f in CHANGE_ARROW_SCHEMA]


class ChangeRowBuilder:
    """Accumulates change rows (one tuple each); :meth:`take` returns an Arrow batch."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.value_bytes = 0

    def __len__(self) -> int:
        return len(self.rows)

    def full(self, max_rows: int, max_bytes: int = 16 << 20) -> bool:
        """Time to :meth:`take` a batch: enough rows, or enough value bytes (big values
        must not make one Arrow batch huge)."""
        return len(self.rows) >= max_rows or self.value_bytes >= max_bytes

    def add_change(self, change: Change, csn: int, xid: str, last: bool) -> None:
        """One change of transaction (``csn``, ``xid``); ``last`` ends the transaction."""
        self.rows.append((int(change.op), change.table, csn, xid, last, change.before,
                          change.after, change.io_time, change.audit_seq, change.audit_pos,
                          change.rowid, change.tokens, change.text, None))
        for image in (change.before, change.after):
            if image:
                self.value_bytes += sum(len(v) for v in image.values() if v)

    def add_packed(self, table: str, csn: int, xid: str, last: bool, io_time: int,
                   records: bytes) -> None:
        """Several changes of ``table``, already encoded, their records end to end."""
        self.rows.append((OP_PACKED, table, csn, xid, last, None, None, io_time, None, None,
                          None, None, None, records))
        self.value_bytes += len(records)

    def add_transactions(self, batch: bytes) -> None:
        """Many whole transactions, already encoded (a ``trail.txn_batch`` blob)."""
        self.rows.append((OP_TXNS, None, None, None, True, None, None, None, None, None,
                          None, None, None, batch))
        self.value_bytes += len(batch)

    def add_table(self, table: TableDef, csn: int | None = None, xid: str | None = None) -> None:
        """A table definition, valid for the changes after it."""
        self.rows.append((OP_METADATA, table.qualified_name, csn, xid, False, None, None, None,
                          None, None, None, None, tabledef_to_json(table), None))

    def add_define(self, table: TableDef, csn: int, xid: str) -> None:
        """A table's new definition, for the DDL change added next: written right after
        that change's record."""
        self.rows.append((OP_DEFINE, table.qualified_name, csn, xid, False, None, None, None,
                          None, None, None, None, tabledef_to_json(table), None))

    def add_note(self, text: str, csn: int, xid: str) -> None:
        """A report line about the transaction being added (kept only if it is written)."""
        self.rows.append((OP_NOTE, None, csn, xid, False, None, None, None, None, None, None,
                          None, text, None))

    def add_position(self, position: dict[str, Any]) -> None:
        """The source position every row before this one was read up to."""
        self.rows.append((OP_POSITION, None, None, None, False, None, None, None, None, None,
                          None, None, json.dumps(position), None))

    def take(self) -> pa.RecordBatch:
        """The rows so far as one batch; the builder starts empty again."""
        columns = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(_ORDER)
        arrays = []
        for field, values in zip(CHANGE_ARROW_SCHEMA, columns, strict=True):
            if isinstance(field.type, pa.MapType):
                arrays.append(_map_array(list(values), field.type))
            else:
                arrays.append(pa.array(values, field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=CHANGE_ARROW_SCHEMA)
        self._reset()
        return batch


class ColumnRowBuilder(ChangeRowBuilder):
    """A builder for a reader in the same process (the Extract's trail streamer): its
    :meth:`take` gives the rows as :class:`ChangeColumns` straight from the tuples, without
    Arrow: its copy of each packed row's records in and out again was a large share of the
    streaming Extract's CPU (docs/performance.md)."""

    def take(self) -> ChangeColumns:
        """The rows so far as columns; the builder starts empty again."""
        cols = ChangeColumns.of_rows(self.rows)
        self._reset()
        return cols


@dataclass(slots=True)
class ChangeRow:
    """One decoded row: a change, a table definition or a source position.  A packed row
    has its records in ``record`` and a ``change`` without values."""

    op: int
    table: str | None
    csn: int | None
    xid: str | None
    last: bool
    change: Change | None = None
    table_def: TableDef | None = None
    position: dict[str, Any] | None = None
    record: bytes | None = None
    note: str | None = None


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


class ChangeColumns:
    """A batch of change rows as Python lists, column by column (found by name, so extra
    columns do no harm); the value maps are only converted when a row needs them.
    :meth:`of_rows` gives the same lists from a builder's rows, without Arrow."""

    def __init__(self, batch: pa.RecordBatch | pa.Table):
        self.batch: pa.RecordBatch | pa.Table | None = batch
        names = batch.schema.names
        self._names = names

        def col(name: str) -> list[Any]:
            return batch.column(names.index(name)).to_pylist()

        self.ops: list[int] = col("op")
        self.tables: list[str | None] = col("table_name")
        self.csns: list[int | None] = col("csn")
        self.xids: list[str | None] = col("xid")
        self.lasts: list[bool | None] = col("txn_last")
        self.io_times: list[int | None] = col("io_time")
        self.texts: list[str | None] = col("text")
        self.records: list[bytes | None] = (col("record") if "record" in names
                                            else [None] * len(self.ops))
        self._rest: tuple[list[Any], ...] | None = None

    @classmethod
    def of_rows(cls, rows: list[tuple[Any, ...]]) -> ChangeColumns:
        """Rows as :class:`ChangeRowBuilder` keeps them (CHANGE_ARROW_SCHEMA's order), as
        the columns of the batch ``take`` would make of them."""
        self = cls.__new__(cls)
        self.batch = None
        self._names = _ORDER
        columns = [list(c) for c in zip(*rows, strict=True)] if rows else [
            [] for _ in _ORDER]
        col = dict(zip(_ORDER, columns, strict=True))
        self.ops, self.tables, self.csns = col["op"], col["table_name"], col["csn"]
        self.xids, self.lasts, self.io_times = col["xid"], col["txn_last"], col["io_time"]
        self.texts, self.records = col["text"], col["record"]
        self._rest = (col["audit_seq"], col["audit_pos"], col["rowid"], col["before"],
                      col["after"], col["tokens"])
        return self

    def __len__(self) -> int:
        return len(self.ops)

    # text, table_name: None only in rows of other kinds (a position or definition row always
    # carries its text, a change row its table)
    def position(self, i: int) -> dict[str, Any]:
        return json.loads(self.texts[i])  # type: ignore[arg-type]

    def table_def(self, i: int) -> TableDef:
        return tabledef_from_json(self.texts[i])  # type: ignore[arg-type]

    def change(self, i: int) -> Change:
        """Row ``i`` as a ``Change`` (values absent for an encoded row)."""
        if self._rest is None:
            names, batch = self._names, self.batch
            assert batch is not None  # of_rows sets _rest

            def col(name: str) -> list[Any]:
                return batch.column(names.index(name)).to_pylist()

            self._rest = (col("audit_seq"), col("audit_pos"), col("rowid"),
                          _maps(batch.column(names.index("before"))),
                          _maps(batch.column(names.index("after"))),
                          _maps(batch.column(names.index("tokens"))))
        seqs, poss, rowids, befores, afters, tokens = self._rest
        op = self.ops[i]
        return Change(_OPS.get(op) or OpType(op), self.tables[i],  # type: ignore[arg-type]
                      after=afters[i], before=befores[i], io_time=self.io_times[i] or 0,
                      audit_seq=seqs[i] or 0, audit_pos=poss[i] or 0, rowid=rowids[i],
                      tokens=tokens[i], text=self.texts[i])


def iter_change_rows(batch: pa.RecordBatch | pa.Table) -> Iterator[ChangeRow]:
    """The rows of ``batch`` (columns found by name, so extra columns do no harm)."""
    cols = ChangeColumns(batch)
    for i, op in enumerate(cols.ops):
        if op == OP_POSITION:
            yield ChangeRow(op, None, None, None, False, position=cols.position(i))
        elif op in (OP_METADATA, OP_DEFINE):
            yield ChangeRow(op, cols.tables[i], cols.csns[i], cols.xids[i], False,
                            table_def=cols.table_def(i))
        elif op == OP_NOTE:
            yield ChangeRow(op, None, cols.csns[i], cols.xids[i], False, note=cols.texts[i])
        else:
            yield ChangeRow(op, cols.tables[i], cols.csns[i], cols.xids[i],
                            bool(cols.lasts[i]), change=cols.change(i),
                            record=cols.records[i])
