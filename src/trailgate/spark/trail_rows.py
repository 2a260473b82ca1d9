"""Trail records to Arrow record batches: the rows of ``spark.read.format("trail")``.

Pure pyarrow, so it runs in Spark's workers, benchmarks and scripts alike; columns gather as
lists and become Arrow arrays once per batch, far cheaper than row tuples.  A range yields
the transactions whose first record it holds (followed into later files); one whose last
record never comes (a crashed writer) yields nothing, and records before the range's first
transaction start belong to an earlier range.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from trailgate.model import (
    JULIAN_UNIX_EPOCH_MICROS,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    Values,
    unix_micros_from_julian,
)
from trailgate.spark.change_chunks import (
    SPEC_KEEP,
    SPEC_KNOWN,
    Stopped,
    change_batches,
    spec_bytes,
)
from trailgate.trail._accel import speedups
from trailgate.trail.chunks import file_chunks
from trailgate.trail.ddl import ddl_fields
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import FIXED_WIDTH_KINDS, TrailReader, TrailRecord
from trailgate.trail.records import RawRecord

__all__ = ["ARROW_SCHEMA", "FIXED_KINDS", "SCHEMA_DDL", "RowSink", "drive", "header_arrays",
           "keep_types", "op_label", "read_batches", "scalar_array",
           "string_array"]

#: The row schema, in Spark DDL (see docs/spark.md for each column's meaning).
SCHEMA_DDL = (
    "seqno long, rba long, end_rba long, op string, io_type int, table_name string, "
    "csn long, xid string, io_time timestamp, trans_ind int, txn_first boolean, "
    "txn_last boolean, before map<string,string>, after map<string,string>, "
    "tokens map<string,string>, rowid string, audit_rba long, audit_pos long"
)

_STRING = pa.string()
_MAP = pa.map_(_STRING, _STRING)
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
_METADATA = int(OpType.METADATA)
_COMMENT = int(OpType.COMMENT)
#: IOTypes that are rows of the source (changes, DDL, comments): not metadata, fragments,
#: LOB pieces (folded into their change) or types unknown to the reader
_ROW_TYPES = frozenset(int(op) for op in OpType) - {
    int(OpType.METADATA), int(OpType.RECORD_FRAGMENT), int(OpType.LOB)}


class _MapColumn:
    """A map<string,string> column kept as Arrow's offsets/keys/items/validity lists.

    Items are kept as the trail's bytes (or text) and become UTF-8 strings in one Arrow
    cast per batch, not one Python string per value."""

    __slots__ = ("items", "keys", "nulls", "offsets")

    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.keys: list[str] = []
        self.items: list[bytes | str | None] = []
        self.nulls: list[bool] = []

    def add(self, entries: Mapping[str, str | None] | None) -> None:
        if entries is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            self.keys.extend(entries)
            self.items.extend(entries.values())
        self.offsets.append(len(self.keys))

    def add_pairs(self, pairs: tuple[Sequence[str], Iterable[bytes | None]] | None) -> None:
        if pairs is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            self.keys.extend(pairs[0])
            self.items.extend(pairs[1])
        self.offsets.append(len(self.keys))

    def mark(self) -> int:
        return len(self.keys)

    def truncate(self, rows: int, keys: int) -> None:
        del self.offsets[rows + 1:], self.nulls[rows:], self.keys[keys:], self.items[keys:]

    def array(self) -> pa.MapArray:
        try:
            items = pa.array(self.items, pa.binary()).cast(pa.string())
        except pa.ArrowInvalid:  # not UTF-8: decoded one by one, as the text form says
            items = pa.array([v.decode("utf-8", "backslashreplace") if isinstance(v, bytes)
                              else v for v in self.items], pa.string())
        return pa.MapArray.from_arrays(
            pa.array(self.offsets, pa.int32()), pa.array(self.keys, pa.string()),
            items, type=_MAP, mask=pa.array(self.nulls, pa.bool_()))


class _ValueNames:
    """How one table definition turns ``{index: bytes}`` into map keys and items: the keys
    of a set of indexes are worked out once, the items stay the trail's bytes (RAW: hex)."""

    __slots__ = ("keys", "names", "raw", "table")

    def __init__(self, table: TableDef | None):
        self.table = table
        self.names = {c.index: c.name for c in table.columns} if table else {}
        self.raw = frozenset(c.index for c in table.columns
                             if c.kind is ColumnKind.RAW) if table else frozenset()
        self.keys: dict[tuple[int, ...], tuple[str, ...]] = {}

    def pairs(self, values: Values | None
              ) -> tuple[Sequence[str], Iterable[bytes | None]] | None:
        if values is None:
            return None
        order = tuple(values)
        names = self.keys.get(order)
        if names is None:
            if len(self.keys) > 4096:  # compressed updates: many column sets; stay bounded
                self.keys.clear()
            names = self.keys[order] = tuple(self.names.get(i) or str(i) for i in order)
        raw = self.raw
        if raw and not raw.isdisjoint(order):
            return names, [v.hex().encode("ascii") if v is not None and i in raw else v
                           for i, v in values.items()]
        return names, values.values()


class _Columns:
    """Rows accumulated column by column; a mark lets a dropped transaction be taken back.

    Only the ``fields`` asked for are built (the columns of a schema given to the reader).
    """

    def __init__(self, fields: tuple[str, ...] | None = None) -> None:
        self.schema = ARROW_SCHEMA if fields is None else pa.schema(
            [ARROW_SCHEMA.field(name) for name in fields])
        names = set(self.schema.names)
        self.rows = 0
        self.scalars: dict[str, list[object]] = {n: [] for n in _SCALARS if n in names}
        self.maps = {name: _MapColumn() for name in _MAPS if name in names}
        self._names: dict[int, _ValueNames] = {}

    def __len__(self) -> int:
        return self.rows

    def mark(self) -> tuple[int, ...]:
        return (self.rows, *(m.mark() for m in self.maps.values()))

    def truncate(self, mark: tuple[int, ...]) -> None:
        rows = self.rows = mark[0]
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
        self.rows += 1
        if self.schema is ARROW_SCHEMA:  # every column: appended inline, the common case
            s = self.scalars
            s["seqno"].append(record.position.seqno)
            s["rba"].append(record.position.rba)
            s["end_rba"].append(record.end.rba)
            s["op"].append(op_label(raw.io_type))
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
        else:
            for name, column in self.scalars.items():
                column.append(_SCALAR_OF[name](record, raw, csn, xid, first, last))
        if not self.maps:
            return
        change = record.change
        maps = self.maps
        before, after, tokens = maps.get("before"), maps.get("after"), maps.get("tokens")
        if tokens is not None:
            tokens.add(raw.tokens or None)
        if before is None and after is None:
            return
        if change is None:  # a metadata record: its columns and their source types
            table = record.table_def
            images: tuple[Mapping[str, str | None] | None, ...] = (None, (
                {c.name: c.source_type for c in table.columns} if table else None))
        elif change.op in _TEXT_OPS:
            fields: dict[str, str | None] = {"text": change.text}
            if change.op is OpType.DDL:  # the statement, sequence, operation and object
                fields.update(ddl_fields(change.text or ""))
            images = (None, fields)
        else:
            names = self._value_names(record.table_def)
            if before is not None:
                before.add_pairs(names.pairs(change.before))
            if after is not None:
                after.add_pairs(names.pairs(change.after))
            return
        if before is not None:
            before.add(images[0])
        if after is not None:
            after.add(images[1])

    def take(self) -> pa.RecordBatch:
        arrays = []
        for field in self.schema:
            if field.name in self.maps:
                arrays.append(self.maps[field.name].array())
            else:
                arrays.append(scalar_array(self.scalars[field.name], field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.truncate((0,) * (1 + len(self.maps)))
        return batch


_U64 = (1 << 64) - 1


def scalar_array(values: list[Any], dtype: pa.DataType) -> pa.Array:
    """A header column's values as an array of ``dtype``.  A value beyond a long (a 64-bit
    unsigned field: AuditPos, a damaged IO time, a 20-digit CSN) wraps to its two's
    complement, as the C codec's packed arrays give it, instead of failing the read."""
    try:
        return pa.array(values, dtype)
    except OverflowError:
        if not (pa.types.is_integer(dtype) or pa.types.is_timestamp(dtype)):
            raise
    wrapped = pa.array([None if v is None else v & _U64 for v in values], pa.uint64())
    return wrapped.cast(pa.int64(), safe=False).cast(dtype)


_Scalar = Callable[[TrailRecord, RawRecord, "int | None", "str | None", bool, bool], object]
_SCALAR_OF: dict[str, _Scalar] = {
    "seqno": lambda rec, raw, csn, xid, first, last: rec.position.seqno,
    "rba": lambda rec, raw, csn, xid, first, last: rec.position.rba,
    "end_rba": lambda rec, raw, csn, xid, first, last: rec.end.rba,
    "op": lambda rec, raw, csn, xid, first, last: op_label(raw.io_type),
    "io_type": lambda rec, raw, csn, xid, first, last: raw.io_type,
    "table_name": lambda rec, raw, csn, xid, first, last: raw.table,
    "csn": lambda rec, raw, csn, xid, first, last: csn,
    "xid": lambda rec, raw, csn, xid, first, last: xid,
    "io_time": lambda rec, raw, csn, xid, first, last: (
        unix_micros_from_julian(raw.io_time) if raw.io_time else None),
    "trans_ind": lambda rec, raw, csn, xid, first, last: (
        3 if first and last else 0 if first else 2 if last else 1),
    "txn_first": lambda rec, raw, csn, xid, first, last: first,
    "txn_last": lambda rec, raw, csn, xid, first, last: last,
    "rowid": lambda rec, raw, csn, xid, first, last: raw.rowid,
    "audit_rba": lambda rec, raw, csn, xid, first, last: raw.audit_rba,
    "audit_pos": lambda rec, raw, csn, xid, first, last: raw.audit_pos,
}
_LABELS = {int(op): op.label for op in OpType}


def op_label(io_type: int) -> str:
    """The ``op`` column's text for a record's IOType (the number for an unknown one)."""
    label = _LABELS.get(io_type)
    return label if label is not None else str(io_type)


class RowSink(Protocol):
    """Where :func:`drive` puts the rows it keeps: a batch builder with marks."""

    def __len__(self) -> int: ...
    def mark(self) -> Any: ...
    def truncate(self, mark: Any) -> None: ...
    def add(self, record: TrailRecord, csn: int | None, xid: str | None,
            first: bool, last: bool) -> None: ...
    def take(self) -> pa.RecordBatch: ...


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
    fields: tuple[str, ...] | None = None,
    ops: frozenset[str] | None = None,
    definitions: dict[str, TableDef] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of the transactions that start in ``[lower, upper)`` (see the module
    docstring for the rule); ``upper=None`` reads to the end of the trail.  ``fields``: the
    columns to build (all by default; without ``before``/``after`` no value is decoded);
    ``ops``: the ``op`` values to keep (all by default); ``definitions``: the table
    definitions in force at ``lower`` when it lies inside a file."""
    cols = _Columns(fields)

    def keep(record: TrailRecord) -> bool:
        raw = record.raw
        io_type = raw.io_type
        if io_type == _COMMENT and not include_metadata:
            return False
        return (tables is None or tables(raw.table)) and (
            ops is None or op_label(io_type) in ops)

    def metadata(record: TrailRecord) -> bool:
        return include_metadata and (tables is None or tables(record.raw.table)) and (
            ops is None or "Metadata" in ops)

    values = fields is None or "before" in fields or "after" in fields
    if speedups is not None and fields is not None and _HEADER_FIELDS.issuperset(fields) \
            and tables is None and not include_metadata:
        return header_batches(trail, lower, upper, fields, ops)
    if speedups is not None and not include_metadata:
        return _c_batches(trail, lower, upper, cols, keep, tables, ops, batch_rows, values,
                          definitions)
    return drive(trail, lower, upper, cols, keep=keep, metadata=metadata,
                 batch_rows=batch_rows, values=values, tables=definitions)


FIXED_KINDS = FIXED_WIDTH_KINDS  # the reader's: the C rows must size values as it does
#: change_rows' build bits of the generic columns beyond the header's
_BUILD = {"csn": 1, "xid": 2, "rowid": 4, "tokens": 8, "before": 16, "after": 32}


def _c_batches(trail: str, lower: TrailPosition, upper: TrailPosition | None,
               cols: _Columns, keep: Callable[[TrailRecord], bool],
               tables: Callable[[str], bool] | None, ops: frozenset[str] | None,
               batch_rows: int, values: bool, definitions: dict[str, TableDef] | None
               ) -> Iterator[pa.RecordBatch]:
    """:func:`read_batches` with the rows built by the C codec (``change_rows``), drive
    taking the spans it leaves (see :mod:`change_chunks`)."""
    schema = cols.schema
    build = sum(bit for name, bit in _BUILD.items() if name in schema.names)
    if not values:
        build &= ~(_BUILD["before"] | _BUILD["after"])

    def spec_of(name: str, table: TableDef | None) -> bytes:
        flags = SPEC_KEEP if tables is None or tables(name) else 0
        if table is None:
            return spec_bytes(flags, {})
        names = {c.index: c.name for c in table.columns}
        fixed = {c.index for c in table.columns if c.kind in FIXED_KINDS}
        raw = {c.index for c in table.columns if c.kind is ColumnKind.RAW}
        return spec_bytes(flags | SPEC_KNOWN, {
            i: (2 if i in fixed else 1, 1 if i in raw else 0, name.encode("utf-8"))
            for i, name in names.items()})

    def assemble(seq: int, base: int, rows: int, columns: list[Any],
                 table_names: list[str]) -> pa.RecordBatch:
        return _change_batch(schema, seq, base, rows, columns, table_names)

    def fallback(at: TrailPosition, end: TrailPosition, in_force: dict[str, TableDef]
                 ) -> Generator[pa.RecordBatch, None, Stopped | None]:
        return drive(trail, at, end, cols, keep=keep, batch_rows=batch_rows, values=values,
                     tables=in_force)

    return change_batches(trail, lower, upper, keep=keep_types(ops),
                          shape=(False, build, 0, b""), batch_rows=batch_rows,
                          tables=definitions, spec_of=spec_of, assemble=assemble,
                          fallback=fallback)


def keep_types(ops: frozenset[str] | None) -> bytes:
    """The IO types that are rows (a 256-byte flag table), ``ops`` those to keep."""
    return bytes(1 if n in _ROW_TYPES and n != _COMMENT and (
        ops is None or op_label(n) in ops) else 0 for n in range(256))


def string_array(rows: int, off: bytes, data: bytes, valid: bytes | None,
                 dtype: pa.DataType = _STRING) -> pa.Array:
    """A string (or binary) array of ``change_rows``'s offsets, data and validity."""
    return pa.Array.from_buffers(dtype, rows, [
        None if valid is None else pa.py_buffer(valid), pa.py_buffer(off), pa.py_buffer(data)])


def _map(rows: int, parts: list[bytes]) -> pa.Array:
    off, valid, key_off, key_data, item_off, item_data, item_valid = parts
    entries = len(key_off) // 4 - 1
    keys = string_array(entries, key_off, key_data, None)
    items = string_array(entries, item_off, item_data, item_valid)
    struct = pa.StructArray.from_arrays([keys, items], fields=[_MAP.key_field,
                                                              _MAP.item_field])
    return pa.Array.from_buffers(_MAP, rows, [pa.py_buffer(valid), pa.py_buffer(off)],
                                 children=[struct])


def _change_batch(schema: pa.Schema, seq: int, base: int, rows: int, columns: list[Any],
                  table_names: list[str]) -> pa.RecordBatch:
    """The generic columns of ``rows`` rows from ``change_rows``'s buffers."""
    out = header_arrays(schema.names, seq, base, rows, columns, table_names)
    for field in schema.names:
        if field == "csn":
            out[field] = pa.Array.from_buffers(pa.int64(), rows, [
                pa.py_buffer(columns[9]), pa.py_buffer(columns[8])])
        elif field == "xid":
            out[field] = string_array(rows, *columns[10:13])
        elif field == "rowid":
            out[field] = string_array(rows, *columns[13:16])
        elif field in ("tokens", "before", "after"):
            k = 16 + 7 * ("tokens", "before", "after").index(field)
            out[field] = _map(rows, columns[k:k + 7])
    return pa.RecordBatch.from_arrays([out[n] for n in schema.names], schema=schema)


#: The columns a record's header holds: a read of only these needs no record decoded.
_HEADER_FIELDS = frozenset({"seqno", "rba", "end_rba", "op", "io_type", "table_name",
                            "io_time", "trans_ind", "txn_first", "txn_last", "audit_rba",
                            "audit_pos"})
_OP_LABELS = pa.array([op_label(n) for n in range(256)], pa.string())
_TRANS_IND = pa.array([1, 0, 2, 3], pa.int32())  # by flags: first 1, last 2


def header_batches(trail: str, lower: TrailPosition, upper: TrailPosition | None,
                   fields: tuple[str, ...], ops: frozenset[str] | None
                   ) -> Iterator[pa.RecordBatch]:
    """:func:`read_batches` of header columns only, without a Python object per record: the
    C codec (``header_rows``) applies :func:`drive`'s transaction rule to whole 11.2 files
    a chunk at a time and hands back packed arrays that become Arrow columns as they are.
    Where it stops — fragments, LOB pieces, damage, a 12c+ file, a transaction that goes
    on past the file's end — :func:`drive` reads on from the last transaction boundary,
    so the rows are drive's in every case."""
    assert speedups is not None
    schema = pa.schema([ARROW_SCHEMA.field(name) for name in fields])
    keep = keep_types(ops)
    name = TrailName(trail)
    seq, pos = lower.seqno, lower.rba
    while True:
        if upper is not None and TrailPosition(seq, pos) >= upper:
            return
        path = name.file(seq)
        if not path.exists():
            return  # the end of the trail: drive would find nothing more either
        scan = _FileScan(pos)
        stop_at = upper.rba if upper is not None and upper.seqno == seq else -1
        try:
            yield from _header_file(path, seq, scan, stop_at, keep, schema)
        except OSError:
            scan.whole = False  # the reader says what is wrong with the file
        pos = scan.pos
        if scan.done:
            return
        if not scan.whole:
            break  # drive goes on from the last boundary
        seq, pos = seq + 1, 0
    cols = _Columns(fields)

    def keep_record(record: TrailRecord) -> bool:
        return record.raw.io_type != _COMMENT and (ops is None or
                                                   op_label(record.raw.io_type) in ops)
    yield from drive(trail, TrailPosition(seq, pos), upper, cols, keep=keep_record,
                     values=False)


@dataclass(slots=True)
class _FileScan:
    """Where :func:`_header_file` got to in one file: ``pos`` just after the last
    transaction it delivered; ``done`` when it met a transaction start at or past the
    range's end; ``whole`` when it read the file to its end at a transaction boundary."""

    pos: int
    done: bool = False
    whole: bool = False


def _header_file(path: Path, seq: int, scan: _FileScan, stop_at: int, keep: bytes,
                 schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    assert speedups is not None
    with file_chunks(path, scan.pos) as chunks:
        if chunks is None:
            return  # 12c+, or encrypted: drive's reader opens and authenticates each record
        scan.pos = chunks.pos
        names: dict[bytes, int] = {}
        while (buf := chunks.next()) is not None:
            pos = chunks.pos
            out = speedups.header_rows(buf, 0, len(buf), keep,
                                       max(stop_at - pos, 0) if stop_at >= 0 else -1, names)
            if out is None:
                return
            boundary, rows, done, stop, columns = out
            if rows:
                batch = _header_batch(schema, seq, pos, rows, columns, names)
                if batch is None:
                    return
                yield batch
            chunks.consumed(boundary)
            scan.pos = chunks.pos
            if done:
                scan.done = True
                return
            if stop or not boundary:
                return  # no transaction ended in a whole buffer: drive reads a big one on
        scan.whole = not chunks.carry


def _header_batch(schema: pa.Schema, seq: int, base: int, rows: int,
                  columns: tuple[bytearray, ...], names: dict[bytes, int]
                  ) -> pa.RecordBatch | None:
    """The header columns of ``rows`` rows from ``header_rows``'s packed arrays (None: a
    table name that is not UTF-8, for the reader to report)."""
    try:
        table_names = [b.decode("utf-8") for b in names]
    except UnicodeDecodeError:
        return None
    out = header_arrays(schema.names, seq, base, rows, columns, table_names)
    return pa.RecordBatch.from_arrays([out[n] for n in schema.names], schema=schema)


def header_arrays(fields: Sequence[str], seq: int, base: int, rows: int,
                   columns: Sequence[Any], table_names: list[str]) -> dict[str, pa.Array]:
    """The header columns among ``fields`` from the packed arrays of ``header_rows`` or
    ``change_rows`` (the others are left out)."""
    def packed(dtype: pa.DataType, k: int) -> pa.Array:
        return pa.Array.from_buffers(dtype, rows, [None, pa.py_buffer(columns[k])])

    offsets = pc.add(packed(pa.int64(), 0), base)
    io_types = packed(pa.uint8(), 2)
    flags = packed(pa.uint8(), 3)
    out: dict[str, pa.Array] = {}
    for field in fields:
        if field == "seqno":
            out[field] = pa.repeat(pa.scalar(seq, pa.int64()), rows)
        elif field == "rba":
            out[field] = offsets
        elif field == "end_rba":
            out[field] = pc.add(offsets, pc.cast(packed(pa.int32(), 1), pa.int64()))
        elif field == "op":
            out[field] = pc.take(_OP_LABELS, io_types)
        elif field == "io_type":
            out[field] = pc.cast(io_types, pa.int32())
        elif field == "table_name":
            out[field] = pc.take(pa.array(table_names, pa.string()), packed(pa.int32(), 4))
        elif field == "io_time":
            julian = pc.cast(packed(pa.uint64(), 5), pa.int64(), safe=False)
            micros = pc.if_else(pc.equal(julian, 0), None,
                                pc.subtract(julian, JULIAN_UNIX_EPOCH_MICROS))
            out[field] = pc.cast(micros, pa.timestamp("us", tz="UTC"))
        elif field == "trans_ind":
            out[field] = pc.take(_TRANS_IND, flags)
        elif field == "txn_first":
            out[field] = pc.not_equal(pc.bit_wise_and(flags, 1), 0)
        elif field == "txn_last":
            out[field] = pc.not_equal(pc.bit_wise_and(flags, 2), 0)
        elif field == "audit_pos":
            out[field] = pc.cast(packed(pa.uint64(), 6), pa.int64(), safe=False)
        elif field == "audit_rba":
            out[field] = pc.cast(packed(pa.uint32(), 7), pa.int64())
    return out


def drive(
    trail: str,
    lower: TrailPosition,
    upper: TrailPosition | None,
    sink: RowSink,
    *,
    keep: Callable[[TrailRecord], bool],
    metadata: Callable[[TrailRecord], bool] | None = None,
    batch_rows: int = 10_000,
    values: bool = True,
    tables: dict[str, TableDef] | None = None,
) -> Generator[pa.RecordBatch, None, Stopped | None]:
    """The transaction rule of the module docstring over ``[lower, upper)``: the row records
    ``keep`` chooses go to ``sink`` with their transaction's CSN and XID; metadata records
    ``metadata`` chooses too; a batch is taken after a transaction once ``batch_rows`` are
    there.  ``values=False`` leaves row records' columns undecoded (``change`` is None);
    ``tables``: the definitions in force at ``lower`` (the reader learns later ones).
    Returns where it stopped before the trail's end (the first record it did not take,
    with the definitions in force there), for a C pass to go on from."""
    reader = TrailReader(trail, start=lower, values=values, tables=tables)
    txn: _OpenTxn | None = None
    stopped: TrailPosition | None = None

    def beyond(record: TrailRecord) -> bool:
        return upper is not None and record.position >= upper

    for record in reader.records():
        raw = record.raw
        io_type = raw.io_type
        if io_type == _METADATA:
            if beyond(record):
                if txn is None:
                    stopped = record.position
                    break
            elif metadata is not None and metadata(record):
                sink.add(record, txn.csn if txn else None, txn.xid if txn else None,
                         False, False)
            continue
        if record.starts_transaction:
            if txn is not None:  # the previous one never ended: its writer stopped
                sink.truncate(txn.mark)
                txn = None
            if beyond(record):
                stopped = record.position
                break
            txn = _OpenTxn(raw.csn, raw.xid, sink.mark())
        elif txn is None:
            if beyond(record):
                stopped = record.position
                break
            continue  # the rest of a transaction that started before this range
        if io_type in _ROW_TYPES and keep(record):
            sink.add(record, txn.csn, txn.xid, record.starts_transaction,
                     record.ends_transaction)
        if record.ends_transaction:
            txn = None
            if len(sink) >= batch_rows:
                yield sink.take()
    if txn is not None:
        sink.truncate(txn.mark)
    if len(sink):
        yield sink.take()
    return None if stopped is None else Stopped(stopped, dict(reader.tables))
