"""Data records (``G`` … ``Z``): encoding a change into records and decoding them back.

Byte layouts are documented in docs/trail-format.md; the seed examples in the tests pin them.
The decoder is the hot path of every reader, so it works on offsets into one buffer and
raises only ``ValueError`` (callers attach file and RBA).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import TypedDict

from trailgate.model import Change, ColumnKind, OpType, TableDef, TransInd
from trailgate.trail._accel import speedups as _speedups
from trailgate.trail.metadata import encode_kv, encode_tabledef
from trailgate.trail.values import (
    MAX_VALUE_BYTES,
    decode_columns,
    encode_columns,
    fixed_indexes,
)

__all__ = [
    "IO_TYPE_OFFSET",
    "MAX_RECORD",
    "TRANS_IND_OFFSET",
    "RawRecord",
    "decode_change",
    "decode_lob_piece",
    "decode_record",
    "encode_change_record",
    "encode_change_records",
    "encode_ddl_text",
    "encode_metadata_record",
    "encode_record",
    "encode_row_record",
    "record_length_at",
    "split_for_room",
    "split_records",
    "split_run",
    "table_fixed_indexes",
    "with_t_area",
]

MAX_RECORD = 0xFFFF
H_FIXED = 34
#: Offset of the TransInd byte from the start of a G record (G header, H header, byte 24).
TRANS_IND_OFFSET = 4 + 4 + 24
#: Offset of the IOType byte from the start of a G record (H byte 6).
IO_TYPE_OFFSET = 4 + 4 + 6
_LOB_PIECE = 32_000  # bytes of a LONG/LOB value per piece record

_HFIXED = struct.Struct(">BBBBHBBQQBIBBBBB")
assert _HFIXED.size == H_FIXED
_SUB = struct.Struct(">BBH")

TYPE_G, TYPE_Z, TYPE_H, TYPE_D, TYPE_T, TYPE_U = b"GZHDTU"
TYPE_E = ord("E")  # an encrypted record's sealed area (trail.sealing)
TYPE_ROWID, TYPE_CSN, TYPE_XID = ord("R"), ord("L"), ord("6")
_OP_TYPES = {int(op): op for op in OpType}  # IOType -> OpType, for the C decode_change


@dataclass(slots=True)
class RawRecord:
    """One physical G record, decoded into its header fields and raw areas.

    Field names follow Logdump.  ``data`` is the D content (for a PK update it starts with
    the two-byte before-key length).  ``length`` is the whole record including G and Z.
    """

    rba: int
    length: int
    flag: int
    hdr_ind: int
    partition: int
    undo_flag: int
    before_after: int
    rec_length: int
    io_type: int
    orig_node: int
    io_time: int
    audit_pos: int
    trans_ind: int
    audit_rba: int
    format_type: int
    syskey_len: int
    incomplete: int
    continued: int
    rec_count: int
    table: str
    data: bytes
    rowid: str | None = None
    csn: int | None = None
    xid: str | None = None
    tokens: dict[str, str] | None = None

    @property
    def op(self) -> OpType | None:
        """The operation, or ``None`` for an IOType trailgate does not know."""
        try:
            return OpType(self.io_type)
        except ValueError:
            return None


if _speedups is not None:
    # The C decoders build these plain slots dataclasses by filling their slots directly
    # (register_dataclass checks that this is all their __init__ would do).
    _speedups.register_dataclass(RawRecord)
    _speedups.register_dataclass(Change)


def _sub(type_byte: int, content: bytes, flag: int = 0) -> bytes:
    return _SUB.pack(type_byte, flag, len(content)) + content


def _tokens_area(tokens: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in tokens.items():
        n, v = name.encode("utf-8"), value.encode("utf-8")
        out += len(n).to_bytes(2, "big") + n + len(v).to_bytes(2, "big") + v
    return bytes(out)


def _t_area(rowid: str | None, csn: int | None, xid: str | None) -> bytes:
    parts = b""
    if rowid is not None:
        parts += _sub(TYPE_ROWID, rowid.encode("ascii") + b"\x00\x01")
    if csn is not None:
        parts += _sub(TYPE_CSN, str(csn).encode("ascii"))
    if xid is not None:
        parts += _sub(TYPE_XID, xid.encode("ascii"))
    return parts


def encode_record(
    *,
    io_type: int,
    table: str,
    data: bytes,
    io_time: int = 0,
    audit_pos: int = 0,
    audit_rba: int = 0,
    trans_ind: int = TransInd.ONLY,
    before_after: int = 0x41,
    continued: int = 0,
    rowid: str | None = None,
    csn: int | None = None,
    xid: str | None = None,
    tokens: dict[str, str] | None = None,
) -> bytes:
    """Encode one G record. Raises ``ValueError`` if it would exceed 65,535 bytes."""
    if _speedups is not None:  # the C version, byte for byte the same; None: not handled
        record = _speedups.encode_record(io_type, table, data, io_time, audit_pos, audit_rba,
                                         trans_ind, before_after, continued, rowid, csn, xid,
                                         tokens)
        if record is not None:
            return record
    if len(data) > MAX_RECORD:  # struct.error otherwise, which the fragmenting caller misses
        raise ValueError(f"data area of {len(data)} bytes exceeds {MAX_RECORD}")
    name = table.encode("utf-8") + b"\x00"
    hfixed = _HFIXED.pack(
        0x45, 0x04, 0x00, before_after, len(data), io_type, 0xFF, io_time, audit_pos,
        trans_ind, audit_rba, 0x52, 0, 0, continued, 1,
    )
    body = _sub(TYPE_H, hfixed + name) + _sub(TYPE_D, data)
    t_area = _t_area(rowid, csn, xid)
    if t_area:
        body += _sub(TYPE_T, t_area)
    if tokens:
        body += _sub(TYPE_U, _tokens_area(tokens))
    total = len(body) + 8
    if total > MAX_RECORD:
        raise ValueError(f"record of {total} bytes exceeds {MAX_RECORD}")
    head = total.to_bytes(2, "big")
    return bytes((TYPE_G, 0x01)) + head + body + bytes((TYPE_Z, 0x01)) + head


_LAYOUTS: dict[int, tuple[TableDef, list[ColumnKind], list[int | None]]] = {}


def _kinds(table: TableDef | None) -> tuple[list[ColumnKind] | None, list[int | None] | None]:
    """Column kinds and widths by index, cached per TableDef object (writers encode many
    changes of the same table; rebuilding this per change was a fifth of the write time)."""
    if table is None:
        return None, None
    cached = _LAYOUTS.get(id(table))
    if cached is not None and cached[0] is table:
        return cached[1], cached[2]
    size = max((c.index for c in table.columns), default=-1) + 1
    kinds: list[ColumnKind] = [ColumnKind.VARCHAR2] * size
    widths: list[int | None] = [None] * size
    for col in table.columns:
        kinds[col.index] = col.kind
        widths[col.index] = col.length
    if len(_LAYOUTS) > 1024:
        _LAYOUTS.clear()
    _LAYOUTS[id(table)] = (table, kinds, widths)
    return kinds, widths


def _data_area(change: Change, table: TableDef | None) -> tuple[bytes, list[tuple[int, bytes]]]:
    """The D content for ``change`` and the LOB values too long to stay in it."""
    kinds, widths = _kinds(table)
    lobs: list[tuple[int, bytes]] = []

    def columns(values: dict[int, bytes | None] | None) -> bytes:
        if not values:
            return b""
        inline = dict(values)
        for index, value in values.items():
            if value is not None and len(value) > MAX_VALUE_BYTES:
                lobs.append((index, value))
                inline[index] = None
        return encode_columns(inline, kinds, widths)

    op = change.op
    if op in (OpType.DDL, OpType.COMMENT):
        return (change.text or "").encode("utf-8"), lobs
    if op is OpType.PK_UPDATE:
        before = columns(change.before)
        if len(before) > 0xFFFF:
            raise ValueError(
                f"the before image of a key change in {change.table} is {len(before):,} bytes, "
                "more than the 65,535 a trail record's key image holds: give the table a "
                "smaller key (a primary key, or ADD TRANDATA … COLS) than all its columns")
        return len(before).to_bytes(2, "big") + before + columns(change.after), lobs
    if op is OpType.DELETE:
        return columns(change.before), lobs
    return columns(change.after), lobs


class _Common(TypedDict):
    """encode_record's arguments every record of one change shares."""

    table: str
    io_time: int
    audit_pos: int
    audit_rba: int
    trans_ind: int


class _FirstArgs(TypedDict):
    """encode_record's arguments only a change's first record carries."""

    rowid: str | None
    csn: int | None
    xid: str | None
    tokens: dict[str, str] | None


def encode_change_records(
    change: Change,
    table: TableDef | None,
    trans_ind: int = TransInd.ONLY,
    csn: int | None = None,
    xid: str | None = None,
) -> list[bytes]:
    """Encode one change as its physical records: the row record, then any record fragments
    (rows longer than one record) and LOB pieces (values longer than one column allows).

    Every record gets ``trans_ind``; the writer patches it (``TRANS_IND_OFFSET``) once it
    knows where the records fall in their transaction.  ``csn``/``xid`` go in the T area of
    the first record only.
    """
    data, lobs = _data_area(change, table)
    common: _Common = {
        "table": change.table,
        "io_time": change.io_time,
        "audit_pos": change.audit_pos,
        "audit_rba": change.audit_seq,
        "trans_ind": trans_ind,
    }
    before_after = 0x42 if change.op is OpType.DELETE else 0x41
    first_args: _FirstArgs = {
        "rowid": change.rowid, "csn": csn, "xid": xid, "tokens": change.tokens,
    }
    try:
        records = [
            encode_record(io_type=change.op, data=data, before_after=before_after,
                          **common, **first_args)
        ]
    except ValueError:
        records = _fragments(change, data, before_after, common, first_args)
    for index, value in lobs:
        pieces = [value[i : i + _LOB_PIECE] for i in range(0, len(value), _LOB_PIECE)]
        offset = 0
        for number, piece in enumerate(pieces, start=1):
            head = struct.pack(">IIIII", index, len(pieces), number, offset, len(piece))
            records.append(encode_record(io_type=OpType.LOB, data=head + piece, **common))
            offset += len(piece)
    return records


def encode_row_record(op: OpType, table: str, data: bytes, io_time: int, audit_pos: int,
                      audit_rba: int, csn: int | None, xid: str | None) -> bytes | None:
    """A row change whose D area is already encoded (the PostgreSQL Extract's fast path) as
    its one record, as ``encode_change_records`` would make it (TransInd MIDDLE, CSN/XID
    given only for a transaction's first change); ``None`` when it needs record fragments
    (then encode the ``Change``).  Positional arguments: it runs once per captured row."""
    before_after = 0x42 if op == OpType.DELETE else 0x41
    if _speedups is not None:
        record = _speedups.encode_record(op, table, data, io_time, audit_pos, audit_rba,
                                         _MIDDLE, before_after, 0, None, csn, xid, None)
        if record is not None:
            return record
    try:
        return encode_record(io_type=op, table=table, data=data, io_time=io_time,
                             audit_pos=audit_pos, audit_rba=audit_rba, trans_ind=_MIDDLE,
                             before_after=before_after, csn=csn, xid=xid)
    except ValueError:
        return None


_MIDDLE = int(TransInd.MIDDLE)


def _fragments(
    change: Change, data: bytes, before_after: int, common: _Common, first_args: _FirstArgs
) -> list[bytes]:
    """Split a record whose D area does not fit into one G record (IOType 161 follow-ons)."""
    name_len = len(change.table.encode("utf-8")) + 1
    fixed = 8 + 4 + H_FIXED + name_len + 4  # G/Z, H header+fixed+name, D header
    extras = len(_t_area(first_args["rowid"], first_args["csn"], first_args["xid"]))
    if extras:
        extras += 4
    if first_args["tokens"]:
        extras += 4 + len(_tokens_area(first_args["tokens"]))
    first_room = MAX_RECORD - fixed - extras
    room = MAX_RECORD - fixed
    if first_room <= 0:
        raise ValueError("the T and token areas of this change leave no room for its data")
    chunks = [data[:first_room]]
    chunks += [data[i : i + room] for i in range(first_room, len(data), room)]
    records = [
        encode_record(io_type=change.op, data=chunks[0], before_after=before_after, continued=1,
                      **common, **first_args)
    ]
    for i, chunk in enumerate(chunks[1:], start=1):
        records.append(
            encode_record(io_type=OpType.RECORD_FRAGMENT, data=chunk, before_after=before_after,
                          continued=1 if i < len(chunks) - 1 else 0, **common)
        )
    return records


def encode_change_record(
    change: Change,
    table: TableDef | None,
    trans_ind: int = TransInd.ONLY,
    csn: int | None = None,
    xid: str | None = None,
) -> bytes:
    """Encode a change that fits one record (the seed examples); see encode_change_records."""
    records = encode_change_records(change, table, trans_ind, csn, xid)
    if len(records) != 1:
        raise ValueError(f"change needs {len(records)} records, not one")
    return records[0]


def encode_metadata_record(table: TableDef, io_time: int = 0) -> list[bytes]:
    """The metadata record(s) carrying ``table``'s definition."""
    change = Change(op=OpType.METADATA, table=table.qualified_name, io_time=io_time)
    data = encode_tabledef(table)
    try:
        return [encode_record(io_type=OpType.METADATA, table=change.table, data=data,
                              io_time=io_time)]
    except ValueError:
        common: _Common = {"table": change.table, "io_time": io_time, "audit_pos": 0,
                           "audit_rba": 0, "trans_ind": TransInd.ONLY}
        first: _FirstArgs = {"rowid": None, "csn": None, "xid": None, "tokens": None}
        return _fragments(change, data, 0x41, common, first)


def encode_ddl_text(statement: str, owner: str, name: str, obj_type: str, ddl_type: str) -> str:
    """The marker text of a DDL record (seed 004's GGS_MARKER keys)."""
    return encode_kv([("C1", None, statement), ("B3", None, owner), ("B4", None, name),
                      ("B5", None, obj_type), ("B6", None, ddl_type)])


def record_length_at(buf: bytes | memoryview, pos: int) -> int:
    """The length field of the record header at ``pos`` (no validation)."""
    return (buf[pos + 2] << 8) | buf[pos + 3]


def table_fixed_indexes(table: TableDef | None) -> frozenset[int] | None:
    """The fixed-width column indexes of ``table`` (what ``decode_change`` needs)."""
    kinds, _ = _kinds(table)
    return None if kinds is None else fixed_indexes(kinds)


def with_t_area(record: bytes, csn: int, xid: str) -> bytes | None:
    """``record`` (one encoded without a T area, e.g. by ``encode_row_record``) with the T
    area a transaction's first record carries, as ``encode_record`` would place it (after
    the D area); ``None`` if it would no longer fit in one record."""
    pos = 8 + ((record[6] << 8) | record[7])  # after the H area
    pos += 4 + ((record[pos + 2] << 8) | record[pos + 3])  # and the D area
    c, x = str(csn).encode("ascii"), xid.encode("ascii")
    t_len = 8 + len(c) + len(x)  # _sub(TYPE_T, _t_area(None, csn, xid)), inline: once a
    total = len(record) + 4 + t_len  # transaction, and most transactions are one record
    if total > MAX_RECORD:
        return None
    head = total.to_bytes(2, "big")
    return (record[:2] + head + record[4:pos] + _SUB.pack(TYPE_T, 0, t_len)
            + _SUB.pack(TYPE_CSN, 0, len(c)) + c + _SUB.pack(TYPE_XID, 0, len(x)) + x
            + record[pos:-2] + head)


def split_for_room(record: bytes, room: int) -> list[bytes]:
    """``record`` as records each at least ``room`` bytes short of the 65,535 limit (an
    encrypted record is longer than its plain one): its D area split into fragments, as a
    writer with that much less room would have split it, TransInd kept at the ends."""
    raw = decode_record(record, 0, len(record))
    if raw.io_type in (OpType.LOB,):
        raise ValueError("a LOB piece record is never this long")
    limit = MAX_RECORD - room
    head = len(record) - len(raw.data)  # everything but the D content, on the first piece
    name_len = len(raw.table.encode("utf-8")) + 1
    rest_head = 8 + 4 + H_FIXED + name_len + 4
    data = raw.data
    chunks = [data[:limit - head]]
    step = limit - rest_head
    chunks += [data[i:i + step] for i in range(limit - head, len(data), step)]
    ind = raw.trans_ind
    first_ind = TransInd.FIRST if ind == TransInd.ONLY else (
        TransInd.MIDDLE if ind == TransInd.LAST else ind)
    last_ind = TransInd.LAST if ind in (TransInd.ONLY, TransInd.LAST) else TransInd.MIDDLE
    out = [encode_record(
        io_type=raw.io_type, table=raw.table, data=chunks[0], io_time=raw.io_time,
        audit_pos=raw.audit_pos, audit_rba=raw.audit_rba, trans_ind=first_ind,
        before_after=raw.before_after, continued=1, rowid=raw.rowid, csn=raw.csn,
        xid=raw.xid, tokens=raw.tokens)]
    for i, chunk in enumerate(chunks[1:], start=1):
        final = i == len(chunks) - 1
        out.append(encode_record(
            io_type=OpType.RECORD_FRAGMENT, table=raw.table, data=chunk, io_time=raw.io_time,
            audit_pos=raw.audit_pos, audit_rba=raw.audit_rba,
            trans_ind=last_ind if final else TransInd.MIDDLE, before_after=raw.before_after,
            continued=raw.continued if final else 1))
    return out


def split_records(blob: bytes) -> list[bytes]:
    """Whole G records laid end to end (as a capture source packs them) as a list; a
    ``ValueError`` if the lengths do not add up."""
    out = []
    pos, end = 0, len(blob)
    while pos < end:
        if end - pos < 8 or blob[pos] != TYPE_G:
            raise ValueError(f"packed records: no G record at byte {pos}")
        length = (blob[pos + 2] << 8) | blob[pos + 3]
        if length < 8 or pos + length > end:
            raise ValueError(f"packed records: a record of {length} bytes at byte {pos} "
                             f"does not fit in {end}")
        out.append(blob[pos:pos + length])
        pos += length
    return out


def split_run(blob: bytes) -> tuple[list[bytes], bytes]:
    """:func:`split_records` and each record's IO type, one byte per record in order (what
    a writer tallies per operation)."""
    if _speedups is not None:  # the C version; None: let the code below say what is wrong
        split = _speedups.split_records(blob)
        if split is not None:
            return split
    records = split_records(blob)
    return records, bytes(r[IO_TYPE_OFFSET] if len(r) > IO_TYPE_OFFSET else 0
                          for r in records)


def decode_record(buf: bytes | mmap.mmap, pos: int, end: int, *, sealed: bool = False
                  ) -> RawRecord:
    """Decode the G record starting at ``pos``; the caller has checked it ends before ``end``.

    Raises ``ValueError`` describing the first inconsistency found, and for an encrypted
    record (an ``E`` area, :mod:`trail.sealing`) unless ``sealed``: then its header fields
    are decoded and ``data`` is empty (Logdump, SCANFORHEADER).  Nothing reads an encrypted
    record's values as if they were plain.
    """
    if _speedups is not None:  # the C version; None: inconsistent, let the code below say why
        record = _speedups.decode_record(buf, pos, end, RawRecord)
        if record is not None:
            return record
    if buf[pos] != TYPE_G:
        raise ValueError(f"record type 0x{buf[pos]:02X} where a G record (0x47) should start")
    flag = buf[pos + 1]
    length = (buf[pos + 2] << 8) | buf[pos + 3]
    if length < 8 + 4 + H_FIXED + 1:
        raise ValueError(f"impossible record length {length}")
    rend = pos + length
    if rend > end:
        raise ValueError(f"record length {length} runs past the end of the file")
    if buf[rend - 4] != TYPE_Z or buf[rend - 3] != flag or buf[rend - 4 : rend] != (
        bytes((TYPE_Z, flag)) + length.to_bytes(2, "big")
    ):
        trailer = bytes(buf[rend - 4 : rend]).hex(" ")
        raise ValueError(f"G length {length} does not match its Z trailer ({trailer})")
    body_end = rend - 4
    p = pos + 4
    if buf[p] != TYPE_H:
        raise ValueError(f"sub-record 0x{buf[p]:02X} where the H header should be")
    hlen = (buf[p + 2] << 8) | buf[p + 3]
    hstart = p + 4
    hend = hstart + hlen
    if hlen < H_FIXED + 1 or hend > body_end:
        raise ValueError(f"H header of {hlen} bytes does not fit its record")
    (hdr_ind, partition, undo_flag, before_after, rec_length, io_type, orig_node, io_time,
     audit_pos, trans_ind, audit_rba, format_type, syskey_len, incomplete, continued,
     rec_count) = _HFIXED.unpack_from(buf, hstart)
    name_end = buf.find(b"\x00", hstart + H_FIXED, hend)
    if name_end < 0:
        raise ValueError("table name in the H header is not NUL-terminated")
    table = buf[hstart + H_FIXED : name_end].decode("utf-8")
    p = hend
    data = b""
    rowid = csn = xid = tokens = None
    while p < body_end:
        if p + 4 > body_end:
            raise ValueError(f"sub-record header cut short at offset {p - pos}")
        stype = buf[p]
        slen = (buf[p + 2] << 8) | buf[p + 3]
        sstart = p + 4
        p = sstart + slen
        if p > body_end:
            raise ValueError(f"sub-record 0x{stype:02X} of {slen} bytes runs past its record")
        if stype == TYPE_D:
            data = buf[sstart:p]
            if slen != rec_length:
                raise ValueError(f"D length {slen} disagrees with RecLength {rec_length}")
        elif stype == TYPE_T:
            rowid, csn, xid = _decode_t(buf, sstart, p)
        elif stype == TYPE_U:
            tokens = _decode_tokens(buf, sstart, p)
        elif stype == TYPE_E and not sealed:
            raise ValueError("the record is encrypted (ENCRYPTTRAIL); it is read with its key "
                             "from the ENCKEYS file")
        # Unknown sub-record types are skipped: newer writers may add areas (seed 002).
    return RawRecord(
        pos, length, flag, hdr_ind, partition, undo_flag, before_after, rec_length, io_type,
        orig_node, io_time, audit_pos, trans_ind, audit_rba, format_type, syskey_len, incomplete,
        continued, rec_count, table, data, rowid, csn, xid, tokens,
    )


def _decode_t(buf: bytes | mmap.mmap, p: int, end: int
              ) -> tuple[str | None, int | None, str | None]:
    rowid = csn = xid = None
    while p < end:
        if p + 4 > end:
            raise ValueError("T sub-record header cut short")
        stype = buf[p]
        slen = (buf[p + 2] << 8) | buf[p + 3]
        value = buf[p + 4 : p + 4 + slen]
        p += 4 + slen
        if p > end:
            raise ValueError(f"T sub-record 0x{stype:02X} runs past its area")
        if stype == TYPE_ROWID:
            rowid = value[:-2].decode("ascii") if value.endswith(b"\x00\x01") else (
                value.decode("ascii"))
        elif stype == TYPE_CSN:
            if not value.isdigit():
                raise ValueError(f"commit CSN {value!r} is not a number")
            csn = int(value)
        elif stype == TYPE_XID:
            xid = value.decode("ascii")
    return rowid, csn, xid


def _decode_tokens(buf: bytes | mmap.mmap, p: int, end: int, little: bool = False
                   ) -> dict[str, str]:
    """A U area's user tokens (``little``: a 12c+ little-endian record's lengths)."""
    hi, lo = (1, 0) if little else (0, 1)
    tokens: dict[str, str] = {}
    while p < end:
        if p + 2 > end:
            raise ValueError("token name length cut short")
        n = (buf[p + hi] << 8) | buf[p + lo]
        name = buf[p + 2 : p + 2 + n]
        p += 2 + n
        if p + 2 > end:
            raise ValueError("token value length cut short")
        v = (buf[p + hi] << 8) | buf[p + lo]
        value = buf[p + 2 : p + 2 + v]
        p += 2 + v
        if p > end:
            raise ValueError("token runs past the token area")
        tokens[name.decode("utf-8")] = value.decode("utf-8")
    return tokens


def decode_change(
    record: RawRecord, fixed: frozenset[int] | None, data: bytes | None = None
) -> Change:
    """The Change a (reassembled) row record carries; ``fixed`` is the table's fixed-width
    column indexes (values.fixed_indexes), ``None`` when the table is unknown. ``data``
    overrides ``record.data``."""
    if _speedups is not None:  # the C version; None: inconsistent, let the code below say why
        change = _speedups.decode_change(record, fixed, data, Change, _OP_TYPES)
        if change is not None:
            return change
    data = record.data if data is None else data
    op = OpType(record.io_type)
    change = Change(
        op=op, table=record.table, io_time=record.io_time, audit_seq=record.audit_rba,
        audit_pos=record.audit_pos, rowid=record.rowid, tokens=record.tokens,
    )
    if op in (OpType.DDL, OpType.COMMENT):
        change.text = data.decode("utf-8")
    elif op is OpType.PK_UPDATE:
        if len(data) < 2:
            raise ValueError("PK update without its before-key length")
        blen = (data[0] << 8) | data[1]
        if 2 + blen > len(data):
            raise ValueError(f"before key of {blen} bytes runs past the data")
        change.before = decode_columns(data, fixed, 2, 2 + blen)
        change.after = decode_columns(data, fixed, 2 + blen)
    elif op is OpType.DELETE:
        change.before = decode_columns(data, fixed)
    elif op is not OpType.TRUNCATE:
        change.after = decode_columns(data, fixed)
    return change


def decode_lob_piece(data: bytes) -> tuple[int, int, int, int, bytes]:
    """(column index, piece count, piece number, start offset, bytes) of a LOB record."""
    if len(data) < 20:
        raise ValueError("LOB piece header cut short")
    index, count, number, offset, length = struct.unpack_from(">IIIII", data)
    if 20 + length != len(data):
        raise ValueError(f"LOB piece length {length} disagrees with its record")
    return index, count, number, offset, data[20:]
