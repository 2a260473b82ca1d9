"""Writing 12c+ records: changes, LOB pieces and fragments, and the DDR/TDR metadata a
self-describing file carries, in the file's byte order.

A change is first framed as in 11.2 (:mod:`trailgate.trail.records`, so both formats carry
identical values) and then laid out the 12c+ way (:mod:`.layout`, :mod:`.columns`).  Row
records leave the table's TDR index 0 in the header's tail: it is known only once the writer
places the record in a file, and :meth:`FileEncoder.patch` fills it in then.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trailgate.model import Change, OpType, TableDef
from trailgate.trail._accel import load_optional
from trailgate.trail.header import decode_file_header
from trailgate.trail.metadata import encode_tabledef
from trailgate.trail.records import _data_area, encode_change_records, table_fixed_indexes
from trailgate.trail.release import TrailFormat
from trailgate.trail.release12.columns import from_seed
from trailgate.trail.release12.decoder import fixed_map
from trailgate.trail.release12.definitions import (
    VENDOR_NAMES,
    DatabaseDef,
    encode_ddr_binary,
    encode_tdr_binary,
    spec_of,
)
from trailgate.trail.release12.layout import (
    H_FIXED,
    ORIG_DDL,
    ORIG_DDR,
    ORIG_DML,
    ORIG_TDR,
    ORIG_TDR_REF,
    PARTITION_DML,
    PARTITION_META,
    index_pair,
    pack_header,
    sub,
    u16,
)
from trailgate.trail.release12.tokens import encode_t

__all__ = ["FileEncoder", "encode_change12"]

#: The C path (``_codec12.c``): None when not compiled or TRAILGATE_PURE_PYTHON is set.
_c = load_optional("trailgate.trail.release12._codec12")
_VENDOR_POSTGRESQL = 21
_FIXED: dict[int, tuple[TableDef, bytes | None]] = {}

MAX_RECORD = 0xFFFF
_LOB_PIECE = 32_000
_TAIL_OFFSET = 4 + 4 + H_FIXED  # a row record's TDR index, from the start of its G record
_IO_TYPE_OFFSET = 4 + 4 + 6
_NO_TABLE = frozenset({int(OpType.DDL), int(OpType.COMMENT), int(OpType.METADATA)})


def _user_tokens(tokens: dict[str, str], order: str) -> bytes:
    out = bytearray()
    for name, value in tokens.items():
        n, v = name.encode("utf-8"), value.encode("utf-8")
        out += u16(len(n), order) + n + u16(len(v), order) + v
    return bytes(out)


def _record(order: str, head: bytes, d: bytes | None, t: bytes = b"", u: bytes = b"") -> bytes:
    body = sub(0x48, head, order)
    if d is not None:
        body += sub(0x44, d, order)
    if t:
        body += sub(0x54, t, order)
    if u:
        body += sub(0x55, u, order)
    total = len(body) + 8
    if total > MAX_RECORD:
        raise ValueError(f"record of {total} bytes exceeds {MAX_RECORD}")
    n = u16(total, order)
    return b"G\x01" + n + body + b"Z\x01" + n


def _tail(fmt: TrailFormat, op: int, table: str) -> bytes:
    if not fmt.self_describing:
        return table.encode("utf-8") + b"\x00"
    return b"\x00" if op in _NO_TABLE else u16(0, fmt.byte_order)


def _fixed_of(table: TableDef | None) -> bytes | None:
    """The C path's fixed-width map of ``table``, cached per TableDef object."""
    if table is None:
        return None
    cached = _FIXED.get(id(table))
    if cached is not None and cached[0] is table:
        return cached[1]
    if len(_FIXED) > 1024:
        _FIXED.clear()
    fixed = fixed_map(spec_of(table))
    _FIXED[id(table)] = (table, fixed)
    return fixed


def encode_change12(change: Change, table: TableDef | None, fmt: TrailFormat, vendor: int,
                    trans_ind: int, csn: int | None = None, xid: str | None = None,
                    *, use_c: bool = True) -> list[bytes]:
    """A change as 12c+ records (row record, fragments, LOB pieces), TDR index left 0.
    The C path lays out the 11.2 records anew; anything it does not take on (fragments,
    metadata) is encoded here, the reference."""
    if use_c and _c is not None:
        tail = _tail(fmt, int(change.op), change.table)
        little, fixed_map_ = fmt.byte_order == "little", _fixed_of(table)
        lsn = vendor == _VENDOR_POSTGRESQL
        out = []
        for record in encode_change_records(change, table, trans_ind, csn, xid):
            laid = _c.from_seed(record, little, tail, fixed_map_, lsn)
            if laid is None:
                break
            out.append(laid)
        else:
            return out
    order = fmt.byte_order
    op = int(change.op)
    data, lobs = _data_area(change, table)
    fixed = table_fixed_indexes(table)
    d = from_seed(op, data, order, fixed)
    row = op not in _NO_TABLE
    tail = _tail(fmt, op, change.table)
    before_after = 0x42 if op == OpType.DELETE else 0x41
    common = {"partition": PARTITION_DML if row else PARTITION_META,
              "orig_node": ORIG_DML if row else ORIG_DDL, "io_time": change.io_time,
              "audit_pos": change.audit_pos, "audit_rba": change.audit_seq,
              "trans_ind": trans_ind}
    t = encode_t(change.rowid, csn, xid, order, vendor)
    u = _user_tokens(change.tokens, order) if change.tokens else b""
    fixed_len = 8 + 4 + H_FIXED + len(tail) + 4
    extras = (4 + len(t) if t else 0) + (4 + len(u) if u else 0)
    if fixed_len + extras + len(d) <= MAX_RECORD:
        head = pack_header(order, before_after=before_after, rec_length=len(d), io_type=op,
                           continued=0, tail=tail, **common)
        records = [_record(order, head, d, t, u)]
    else:
        first_room = MAX_RECORD - fixed_len - extras
        room = MAX_RECORD - fixed_len
        if first_room <= 0:
            raise ValueError("the T and token areas of this change leave no room for its data")
        chunks = [d[:first_room]] + [d[i : i + room] for i in range(first_room, len(d), room)]
        records = []
        for i, chunk in enumerate(chunks):
            head = pack_header(order, before_after=before_after, rec_length=len(chunk),
                               io_type=op if i == 0 else int(OpType.RECORD_FRAGMENT),
                               continued=1 if i < len(chunks) - 1 else 0, tail=tail, **common)
            records.append(_record(order, head, chunk, t if i == 0 else b"",
                                   u if i == 0 else b""))
    pieces = struct.Struct(">IIIII" if order == "big" else "<IIIII")
    for index, value in lobs:
        parts = [value[i : i + _LOB_PIECE] for i in range(0, len(value), _LOB_PIECE)]
        offset = 0
        for number, piece in enumerate(parts, start=1):
            piece_d = pieces.pack(index, len(parts), number, offset, len(piece)) + piece
            head = pack_header(order, before_after=0x41, rec_length=len(piece_d),
                               io_type=int(OpType.LOB), continued=0, tail=tail, **common)
            records.append(_record(order, head, piece_d))
            offset += len(piece)
    return records


@dataclass(slots=True)
class _FileState:
    """What one file already holds: its DDR, and the TDR index of each table in it."""

    ddr: bool = False
    index: dict[str, int] = field(default_factory=dict)
    defs: dict[int, TableDef | None] = field(default_factory=dict)


_remembered: dict[str, tuple[int, _FileState]] = {}
_remembered_lock = threading.Lock()


class FileEncoder:
    """A 12c+ writer's per-file state: the metadata records each table needs before its
    first change in a file, and the TDR index its records carry."""

    def __init__(self, fmt: TrailFormat, vendor: int, database_name: str = ""):
        self.fmt = fmt
        self.vendor = vendor
        self.database_name = database_name
        self.state = _FileState()

    def start_file(self) -> None:
        self.state = _FileState()

    def needs_metadata(self, name: str, table: TableDef | None, known: TableDef | None) -> bool:
        """True when ``name`` must be (re)defined before its next change in this file."""
        if not self.fmt.self_describing:
            return table is not None and known != table
        if name not in self.state.index:
            return True
        return table is not None and self.state.defs.get(self.state.index[name]) != table

    def metadata(self, name: str, table: TableDef | None, io_time: int) -> list[bytes]:
        """The records defining ``name`` in this file (a DDR first in a file), its index
        assigned."""
        order = self.fmt.byte_order
        if not self.fmt.self_describing:
            assert table is not None
            return self._inline_metadata(table, io_time)
        out = []
        st = self.state
        common = {"before_after": 0x41, "io_type": int(OpType.METADATA), "io_time": io_time,
                  "audit_pos": 0, "trans_ind": 3, "continued": 0}
        if not st.ddr:
            ddr = encode_ddr_binary(DatabaseDef(name=self.database_name,
                                         db_type=VENDOR_NAMES.get(self.vendor, "ORACLE")))
            head = pack_header(order, partition=PARTITION_META, rec_length=len(ddr),
                               orig_node=ORIG_DDR, audit_rba=index_pair(1, 0, order),
                               tail=b"\x00", **common)
            out.append(_record(order, head, ddr))
            st.ddr = True
        new = max(st.defs, default=0) + 1
        tail = name.encode("utf-8") + b"\x00"
        ref = self._same_as(name, table)
        if ref is not None:
            head = pack_header(order, partition=PARTITION_META, rec_length=0,
                               orig_node=ORIG_TDR_REF, audit_rba=index_pair(1, ref, order),
                               tail=tail, **common)
            out.append(_record(order, head, None))
        else:
            schema, _, tname = name.rpartition(".")
            d = encode_tdr_binary(table if table is not None else TableDef(schema, tname, []),
                                  exact=table is not None,
                                  db_type=VENDOR_NAMES.get(self.vendor, "ORACLE"))
            out += self._split_metadata(d, ORIG_TDR, index_pair(1, new, order), tail, common)
        st.index[name] = new
        st.defs[new] = table
        return out

    def _same_as(self, name: str, table: TableDef | None) -> int | None:
        if table is None:
            return None
        for index, known in self.state.defs.items():
            if known is not None and known.qualified_name != name and replace(
                    known, schema=table.schema, name=table.name) == table:
                return index
        return None

    def _split_metadata(self, d: bytes, orig: int, audit_rba: int, tail: bytes,
                        common: dict[str, Any]) -> list[bytes]:
        order = self.fmt.byte_order
        room = MAX_RECORD - (8 + 4 + H_FIXED + len(tail) + 4)
        chunks = [d[i : i + room] for i in range(0, len(d), room)] or [b""]
        out = []
        for i, chunk in enumerate(chunks):
            head = pack_header(order, partition=PARTITION_META, rec_length=len(chunk),
                               orig_node=orig, audit_rba=audit_rba, tail=tail,
                               **{**common, "io_type": int(OpType.METADATA) if i == 0 else
                                  int(OpType.RECORD_FRAGMENT),
                                  "continued": 1 if i < len(chunks) - 1 else 0})
            out.append(_record(order, head, chunk))
        return out

    def _inline_metadata(self, table: TableDef, io_time: int) -> list[bytes]:
        """The 12.1 layout: trailgate's 11.2 metadata text, the table named in the header."""
        common = {"before_after": 0x41, "io_type": int(OpType.METADATA), "io_time": io_time,
                  "audit_pos": 0, "trans_ind": 3, "continued": 0}
        return self._split_metadata(encode_tabledef(table), ORIG_DML, 0,
                                    table.qualified_name.encode("utf-8") + b"\x00", common)

    def patch(self, records: list[bytes], name: str) -> list[bytes]:
        """``records`` with ``name``'s TDR index in each row record's header."""
        if not self.fmt.self_describing or all(r[_IO_TYPE_OFFSET] in _NO_TABLE
                                                for r in records):
            return records  # a DDL record or comment names no TDR (it may open a file)
        index = u16(self.state.index[name], self.fmt.byte_order)
        return [r if r[_IO_TYPE_OFFSET] in _NO_TABLE else
                r[:_TAIL_OFFSET] + index + r[_TAIL_OFFSET + 2 :] for r in records]

    # -- a file another process goes on writing --------------------------------------------

    def remember(self, path: Path, length: int) -> None:
        """Keep this file's state for a writer of this process that resumes it at
        ``length`` (:meth:`resume`)."""
        with _remembered_lock:
            _remembered[str(path)] = (length, _copy(self.state))
            if len(_remembered) > 64:
                _remembered.pop(next(iter(_remembered)))

    def resume(self, path: Path, length: int) -> None:
        """The state of file ``path`` whose first ``length`` bytes are written: remembered,
        else read back from the file's metadata records."""
        with _remembered_lock:
            known = _remembered.get(str(path))
        if known is not None and known[0] == length:
            self.state = _copy(known[1])
            return
        self.state = _learn(path, length)


def _copy(state: _FileState) -> _FileState:
    return _FileState(state.ddr, dict(state.index), dict(state.defs))


def _learn(path: Path, length: int) -> _FileState:
    from trailgate.trail.release12.decoder import FileDecoder

    with open(path, "rb") as f:
        buf = f.read(length)
    header = decode_file_header(buf[:0xFFFF], max_compatibility=255)
    decoder = FileDecoder(header)
    state = _FileState()
    pos = header.length
    while pos < len(buf):
        size = decoder.length_at(buf, pos, len(buf))
        if size is None:
            break
        if buf[pos + _IO_TYPE_OFFSET] in (int(OpType.METADATA), int(OpType.RECORD_FRAGMENT)):
            decoder.decode(buf, pos, len(buf))
        pos += size
    for index, spec in decoder.tdrs.items():
        state.index[spec.name] = index
        state.defs[index] = spec.definition
    state.ddr = decoder.ddr is not None or bool(decoder.tdrs)
    return state
