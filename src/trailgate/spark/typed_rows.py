"""One table's changes as typed rows: ``spark.read.format("trail").option("table", …)``.

The schema is the union of the table's definitions in the trail (a column added by a DDL
joins it, null before), typed by :mod:`typed_values`: the after image as the table's own
columns, the before image as the struct ``before``, then ``op``, ``csn``, ``xid``,
``io_time``, ``seqno`` and ``rba``.  Rows gather as tuples straight from the decoded images
and become columns once per batch; only the columns asked for are built, and none is
decoded when only the change's own columns are.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trailgate.model import Column, ColumnKind, OpType, TableDef, TrailPosition, Values
from trailgate.model import unix_micros_from_julian as _micros
from trailgate.spark.change_chunks import (
    SPEC_KEEP,
    SPEC_KNOWN,
    SPEC_STOP,
    Stopped,
    change_batches,
    spec_bytes,
)
from trailgate.spark.trail_catalog import TrailTable
from trailgate.spark.trail_rows import (
    FIXED_KINDS,
    drive,
    header_arrays,
    header_batches,
    keep_types,
    op_label,
    scalar_array,
    string_array,
)
from trailgate.spark.typed_values import arrow_type, quote, spark_ddl, to_arrow
from trailgate.trail._accel import speedups
from trailgate.trail.reader import TrailRecord

__all__ = ["CHANGE_FIELDS", "TypedTable", "read_typed_batches"]

#: The change's own columns, after the table's, in this order.
CHANGE_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("op", pa.string()), ("csn", pa.int64()), ("xid", pa.string()),
    ("io_time", pa.timestamp("us", tz="UTC")), ("seqno", pa.int64()), ("rba", pa.int64()),
)
_CHANGE_NAMES = frozenset(name for name, _ in CHANGE_FIELDS)
_ROW_OPS = frozenset(op.label for op in OpType if op.is_row_change)
#: The change columns a record's header holds, the same in the generic form.
_HEADER_ONLY = frozenset({"op", "io_time", "seqno", "rba"})


@dataclass(frozen=True, slots=True)
class TypedTable:
    """A table's typed schema: its columns (the union of its definitions) and where each
    definition came into force, so a range starting mid-file knows the one in force."""

    name: str
    columns: tuple[tuple[str, pa.DataType], ...]
    history: tuple[tuple[TrailPosition, TableDef], ...]

    @classmethod
    def of(cls, table: TrailTable) -> TypedTable:
        """The union of ``table``'s definitions; a column whose type changed is a string.
        Raises ``ValueError`` when a column name is one of the change's own."""
        types: dict[str, pa.DataType] = {}
        for definition in table.definitions:
            for column in definition.columns:
                dtype = arrow_type(column)
                known = types.get(column.name)
                types[column.name] = dtype if known is None or known == dtype else pa.string()
        clash = sorted(set(types) & (_CHANGE_NAMES | {"before"}))
        if clash:
            raise ValueError(f"table {table.name} has columns named {', '.join(clash)}, as the "
                             "typed form's own columns are; read it without the table option")
        return cls(table.name, tuple(types.items()), tuple(table.history))

    @property
    def before_type(self) -> pa.StructType:
        return pa.struct([pa.field(n, t) for n, t in self.columns])

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([*self.columns, ("before", self.before_type), *CHANGE_FIELDS])

    def ddl(self) -> str:
        """The schema in Spark DDL."""
        return ", ".join(f"{quote(f.name)} {spark_ddl(f.type)}" for f in self.arrow_schema())

    def definition_at(self, position: TrailPosition) -> TableDef | None:
        found = None
        for at, table in self.history:
            if at >= position:
                break
            found = table
        return found


_CHANGE_OF: dict[str, Callable[[TrailRecord, int | None, str | None], object]] = {
    "op": lambda rec, csn, xid: op_label(rec.raw.io_type),
    "csn": lambda rec, csn, xid: csn,
    "xid": lambda rec, csn, xid: xid,
    "io_time": lambda rec, csn, xid: _micros(rec.raw.io_time) if rec.raw.io_time else None,
    "seqno": lambda rec, csn, xid: rec.position.seqno,
    "rba": lambda rec, csn, xid: rec.position.rba,
}


class _Plan:
    """How one definition's images land in the requested value columns."""

    __slots__ = ("empty", "get", "hexify", "indexes", "position", "slots")

    def __init__(self, table: TableDef | None, slot_of: dict[str, int],
                 types: list[pa.DataType]):
        cols: list[Column] = [c for c in (table.columns if table else ())
                              if c.name in slot_of]
        self.slots = tuple(slot_of[c.name] for c in cols)
        self.indexes = tuple(c.index for c in cols)
        self.position = {slot: k for k, slot in enumerate(self.slots)}
        # a RAW column merged into a string one (its type changed): hex text, as generic
        self.hexify = tuple(k for k, c in enumerate(cols) if c.kind is ColumnKind.RAW
                            and pa.types.is_string(types[self.slots[k]]))
        self.empty: tuple[None, ...] = (None,) * len(cols)
        n = len(self.indexes)
        if n == 0:
            self.get: Callable[[Values], tuple[Any, ...]] = lambda values: ()
        elif n == 1:
            only = self.indexes[0]
            self.get = lambda values: (values[only],)
        else:
            self.get = itemgetter(*self.indexes)

    def row(self, values: Values | None) -> tuple[bytes | None, ...]:
        if values is None:
            return self.empty
        try:
            got = self.get(values)
        except KeyError:  # a compressed update or a key: the columns it does not carry
            got = tuple(values.get(i) for i in self.indexes)
        if self.hexify:
            listed = list(got)
            for k in self.hexify:
                v = listed[k]
                listed[k] = None if v is None else v.hex().encode("ascii")
            got = tuple(listed)
        return got


class _Segment:
    __slots__ = ("after", "before", "has_before", "plan")

    def __init__(self, plan: _Plan):
        self.plan = plan
        self.after: list[tuple[bytes | None, ...]] = []
        self.before: list[tuple[bytes | None, ...]] = []
        self.has_before: list[bool] = []


class _TypedColumns:
    """Typed rows in the making: change columns as lists, images as tuples per definition
    segment; a mark lets a dropped transaction be taken back."""

    def __init__(self, table: TypedTable, fields: tuple[str, ...]):
        full = table.arrow_schema()
        self.schema = pa.schema([full.field(name) for name in fields])
        self.table_name = table.name
        self.value_names = [n for n, _ in table.columns if n in fields]
        self.value_types = [t for n, t in table.columns if n in fields]
        self.before = "before" in fields
        names = (n for n, _ in table.columns)
        self.slot_of = {n: k for k, n in enumerate(names)}  # every column: before has all
        self.all_types = [t for _, t in table.columns]
        self.after_slots = [self.slot_of[n] for n in self.value_names]
        self.change: dict[str, list[Any]] = {
            name: [] for name, _ in CHANGE_FIELDS if name in fields}
        self.values = bool(self.value_names) or self.before
        self.all_change = len(self.change) == len(CHANGE_FIELDS)
        self.rows = 0
        self.segments: list[_Segment] = []
        self._plans: dict[int, tuple[TableDef | None, _Plan]] = {}

    def __len__(self) -> int:
        return self.rows

    def mark(self) -> tuple[int, int, int]:
        last = len(self.segments[-1].after) if self.segments else 0
        return self.rows, len(self.segments), last

    def truncate(self, mark: tuple[int, int, int]) -> None:
        rows, segments, last = mark
        self.rows = rows
        for column in self.change.values():
            del column[rows:]
        del self.segments[segments:]
        if self.segments:
            seg = self.segments[-1]
            del seg.after[last:], seg.before[last:], seg.has_before[last:]

    def _plan(self, table: TableDef | None) -> _Plan:
        hit = self._plans.get(id(table))
        if hit is None or hit[0] is not table:
            hit = self._plans[id(table)] = (table, _Plan(table, self.slot_of, self.all_types))
        return hit[1]

    def add(self, record: TrailRecord, csn: int | None, xid: str | None,
            first: bool, last: bool) -> None:
        raw = record.raw
        self.rows += 1
        if self.all_change:  # inline: the common case
            c = self.change
            c["op"].append(op_label(raw.io_type))
            c["csn"].append(csn)
            c["xid"].append(xid)
            c["io_time"].append(_micros(raw.io_time) if raw.io_time else None)
            c["seqno"].append(record.position.seqno)
            c["rba"].append(record.position.rba)
        else:
            for name, column in self.change.items():
                column.append(_CHANGE_OF[name](record, csn, xid))
        if not self.values:
            return
        plan = self._plan(record.table_def)
        segs = self.segments
        if not segs or segs[-1].plan is not plan:
            segs.append(_Segment(plan))
        seg = segs[-1]
        change = record.change
        after = change.after if change is not None else None
        before = change.before if change is not None else None
        seg.after.append(plan.row(after))
        if self.before:
            seg.before.append(plan.row(before))
            seg.has_before.append(before is not None)

    def _gather(self, slot: int, columns: list[tuple[_Segment, list[tuple[Any, ...]]]]
                ) -> list[bytes | None]:
        """Column ``slot`` across the segments (each transposed once: ``columns``)."""
        out: list[bytes | None] = []
        for seg, transposed in columns:
            k = seg.plan.position.get(slot)
            if k is None:
                out.extend([None] * len(seg.after))
            else:
                out.extend(transposed[k])
        return out

    def take(self) -> pa.RecordBatch:
        arrays: dict[str, pa.Array] = {}
        after = [(seg, list(zip(*seg.after, strict=True))) for seg in self.segments]
        for name, dtype, slot in zip(self.value_names, self.value_types, self.after_slots,
                                     strict=True):
            arrays[name] = to_arrow(self._gather(slot, after), dtype)
        if self.before:
            before = [(seg, list(zip(*seg.before, strict=True))) for seg in self.segments]
            children = [to_arrow(self._gather(k, before), t)
                        for k, t in enumerate(self.all_types)]
            valid = [v for seg in self.segments for v in seg.has_before]
            struct = self.schema.field("before").type
            arrays["before"] = pa.StructArray.from_arrays(
                children, fields=list(struct), mask=pa.array([not v for v in valid],
                                                             pa.bool_()))
        for (name, dtype) in CHANGE_FIELDS:
            if name in self.change:
                arrays[name] = scalar_array(self.change[name], dtype)
        batch = pa.RecordBatch.from_arrays([arrays[f.name] for f in self.schema],
                                           schema=self.schema)
        self.truncate((0, 0, 0))
        return batch


def read_typed_batches(
    trail: str,
    lower: TrailPosition,
    upper: TrailPosition | None,
    table: TypedTable,
    *,
    fields: tuple[str, ...] | None = None,
    ops: frozenset[str] | None = None,
    batch_rows: int = 10_000,
) -> Iterator[pa.RecordBatch]:
    """Typed record batches of ``table``'s row changes in the transactions that start in
    ``[lower, upper)`` (the generic reader's rule); ``fields``: the columns to build (all
    by default), ``ops``: the ``op`` values to keep."""
    wanted = fields if fields is not None else tuple(table.arrow_schema().names)
    keep_ops = _ROW_OPS if ops is None else _ROW_OPS & ops
    name = table.name
    if speedups is not None and _HEADER_ONLY.issuperset(wanted):
        return _header_only(trail, lower, upper, name, wanted, keep_ops)
    cols = _TypedColumns(table, wanted)

    def keep(record: TrailRecord) -> bool:
        raw = record.raw
        return raw.table == name and op_label(raw.io_type) in keep_ops

    start = table.definition_at(lower)
    tables = {name: start} if start is not None else None
    if speedups is not None:
        return _c_typed(trail, lower, upper, cols, keep, keep_ops, batch_rows, tables)
    return drive(trail, lower, upper, cols, keep=keep, batch_rows=batch_rows,
                 values=cols.values, tables=tables)


def _c_typed(trail: str, lower: TrailPosition, upper: TrailPosition | None,
             cols: _TypedColumns, keep: Callable[[TrailRecord], bool], ops: frozenset[str],
             batch_rows: int, tables: dict[str, TableDef] | None
             ) -> Iterator[pa.RecordBatch]:
    """:func:`read_typed_batches` with the value columns built by the C codec
    (``change_rows``: one binary column per slot, converted by Arrow as the Python rows
    are), drive taking the spans it leaves (see :mod:`change_chunks`)."""
    schema = cols.schema
    slot_of = cols.slot_of
    nslots = len(cols.all_types)
    wanted = set(cols.after_slots)
    build = (1 if "csn" in schema.names else 0) | (2 if "xid" in schema.names else 0) | (
        16 if cols.before else 0) | (32 if cols.value_names else 0)
    after_slots = bytes(1 if k in wanted else 0 for k in range(nslots))

    def spec_of(name: str, table: TableDef | None) -> bytes:
        flags = SPEC_KEEP if name == cols.table_name else 0
        if table is None:
            return spec_bytes(flags, {})
        entries: dict[int, tuple[int, int, bytes | int]] = {}
        fixed = {c.index for c in table.columns if c.kind in FIXED_KINDS}
        filled: set[int] = set()
        for c in table.columns:
            slot = slot_of.get(c.name, -1)
            if (c.index in entries and (slot >= 0 or entries[c.index][2] != -1)) or (
                    slot >= 0 and slot in filled):
                flags |= SPEC_STOP  # an index or a name given twice: the Python rows say
            if slot >= 0:
                filled.add(slot)
            hexed = slot >= 0 and c.kind is ColumnKind.RAW and pa.types.is_string(
                cols.all_types[slot])
            entries[c.index] = (2 if c.index in fixed else 1, int(hexed), slot)
        return spec_bytes(flags | SPEC_KNOWN, entries)

    def assemble(seq: int, base: int, rows: int, columns: list[Any],
                 table_names: list[str]) -> pa.RecordBatch:
        return _typed_batch(cols, seq, base, rows, columns, table_names)

    def fallback(at: TrailPosition, end: TrailPosition, in_force: dict[str, TableDef]
                 ) -> Generator[pa.RecordBatch, None, Stopped | None]:
        return drive(trail, at, end, cols, keep=keep, batch_rows=batch_rows,
                     values=cols.values, tables=in_force)

    return change_batches(trail, lower, upper, keep=keep_types(ops),
                          shape=(True, build, nslots, after_slots), batch_rows=batch_rows,
                          tables=tables, spec_of=spec_of, assemble=assemble,
                          fallback=fallback)


def _typed_batch(cols: _TypedColumns, seq: int, base: int, rows: int, columns: list[Any],
                 table_names: list[str]) -> pa.RecordBatch:
    """The typed columns of ``rows`` rows from ``change_rows``'s buffers."""
    schema = cols.schema
    nslots = len(cols.all_types)
    out = header_arrays(schema.names, seq, base, rows, columns, table_names)
    if "csn" in schema.names:
        out["csn"] = pa.Array.from_buffers(pa.int64(), rows, [
            pa.py_buffer(columns[9]), pa.py_buffer(columns[8])])
    if "xid" in schema.names:
        out["xid"] = string_array(rows, *columns[10:13])

    def slot(k: int) -> pa.Array:
        return string_array(rows, columns[k], columns[k + 1], columns[k + 2], pa.binary())

    for name, dtype, k in zip(cols.value_names, cols.value_types, cols.after_slots,
                              strict=True):
        out[name] = to_arrow(slot(16 + 3 * k), dtype)
    if cols.before:
        first = 16 + 3 * nslots
        children = [to_arrow(slot(first + 3 * k), t) for k, t in enumerate(cols.all_types)]
        out["before"] = pa.StructArray.from_buffers(
            schema.field("before").type, rows,
            [pa.py_buffer(columns[first + 3 * nslots])], children=children)
    return pa.RecordBatch.from_arrays([out[f.name] for f in schema], schema=schema)


def _header_only(trail: str, lower: TrailPosition, upper: TrailPosition | None, name: str,
                 wanted: tuple[str, ...], ops: frozenset[str]) -> Iterator[pa.RecordBatch]:
    """A typed read of header columns only: the generic header rows (read in C, no record
    decoded) of ``name``'s changes."""
    for batch in header_batches(trail, lower, upper, (*wanted, "table_name"), ops):
        mine = batch.filter(pc.equal(batch.column("table_name"), name))
        if mine.num_rows:
            yield pa.RecordBatch.from_arrays([mine.column(n) for n in wanted], names=wanted)
