"""The 12c+ record as it lies in a file: G/Z frame, the 34-byte H header, its tail, and the
sub-records, in either byte order.

Public Logdump output fixes the header's fields (docs/trail-format.md, "The 12c+ record
header"), not the byte order a file uses on disk, so every length here is read in the order
the record proves: the G length whose Z trailer matches, the RecLength that equals the D
area.  Nothing here knows tables or values; :mod:`.decoder` builds on it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from mmap import mmap

__all__ = [
    "H_FIXED",
    "ORIG_DDL",
    "ORIG_DDR",
    "ORIG_DML",
    "ORIG_PNR",
    "ORIG_TDR",
    "ORIG_TDR_REF",
    "PARTITION_DML",
    "PARTITION_META",
    "PARTITION_PNR",
    "Record12",
    "frame_length",
    "other",
    "pack_header",
    "parse_record",
    "sub",
    "u16",
]

H_FIXED = 34
PARTITION_DML = 0x0C  # every 12c+ row record in public dumps
PARTITION_META = 0x00  # metadata (170) and DDL (160) records
PARTITION_PNR = 0x80  # the record carries a partition-name (PNR) index too
ORIG_DML, ORIG_DDL = 0xFF, 0x00
ORIG_DDR, ORIG_TDR, ORIG_TDR_REF, ORIG_PNR = 1, 2, 3, 4

_PREFIX = {"big": ">", "little": "<"}
_HEAD = {o: struct.Struct(p + "BBBBHBBQQIBBBBBB") for o, p in _PREFIX.items()}
_U16 = {o: struct.Struct(p + "H") for o, p in _PREFIX.items()}
assert _HEAD["big"].size == H_FIXED


def other(order: str) -> str:
    """The other byte order."""
    return "little" if order == "big" else "big"


def u16(value: int, order: str) -> bytes:
    return _U16[order].pack(value)


def sub(type_byte: int, content: bytes, order: str, flag: int = 0) -> bytes:
    """A type/flag/length sub-record."""
    return bytes((type_byte, flag)) + _U16[order].pack(len(content)) + content


@dataclass(slots=True)
class Record12:
    """One 12c+ record read from a file, fields as Logdump names them, areas as file bytes.

    ``order`` is the byte order of the frame and sub-record lengths, ``data_order`` that of
    the header fields and column framing (the same in every file trailgate has seen; a
    reader accepts them apart).  ``ddr_index``/``tdr_index`` come from bytes 24-27 of a
    metadata record, ``tdr_index``/``pnr_index`` of a row record from the header's tail;
    ``name`` is a name carried in the tail (TDR records, the 12.1 layout).
    """

    rba: int
    length: int
    flag: int
    order: str
    data_order: str
    hdr_ind: int
    partition: int
    undo_flag: int
    before_after: int
    rec_length: int
    io_type: int
    orig_node: int
    io_time: int
    audit_pos: int
    audit_rba: int
    trans_ind: int
    format_type: int
    syskey_len: int
    incomplete: int
    continued: int
    rec_count: int
    h: bytes  # the whole H area
    tail: bytes  # the H area after the 34 fixed bytes
    d: bytes | None = None
    t: bytes | None = None
    u: bytes | None = None
    subs: list[tuple[int, int, int, int]] = field(default_factory=list)  # type, flag, start, end
    ddr_index: int = 0
    tdr_index: int = 0
    pnr_index: int = 0
    name: str | None = None

    @property
    def is_metadata(self) -> bool:
        return self.io_type == 170


def frame_length(buf: bytes | mmap, pos: int, end: int, prefer: str) -> tuple[int, str] | None:
    """(length, byte order) of the G record at ``pos``: the order whose length ends in a
    matching Z trailer, ``prefer`` first.  ``None`` while the record may still be arriving
    (a length runs past ``end`` and no order matches); ``ValueError`` when the bytes are
    whole but match in neither order."""
    if end - pos < 4:
        return None
    if buf[pos] != 0x47:
        raise ValueError(f"record type 0x{buf[pos]:02X} where a G record (0x47) should start")
    flag = buf[pos + 1]
    short = False
    for order in (prefer, other(prefer)):
        length = int.from_bytes(buf[pos + 2 : pos + 4], order)  # type: ignore[arg-type]
        if length < 8 + 4 + H_FIXED:
            continue
        if length > end - pos:
            short = True
            continue
        z = pos + length - 4
        if buf[z] == 0x5A and buf[z + 1] == flag and \
                int.from_bytes(buf[z + 2 : z + 4], order) == length:  # type: ignore[arg-type]
            return length, order
    if short:
        return None
    lengths = " or ".join(str(int.from_bytes(buf[pos + 2 : pos + 4], o))  # type: ignore[arg-type]
                          for o in (prefer, other(prefer)))
    raise ValueError(f"G record length ({lengths}) ends in no matching Z trailer in either "
                     "byte order")


def _subs(buf: bytes | mmap, start: int, end: int, order: str
          ) -> list[tuple[int, int, int, int]] | None:
    out = []
    p = start
    while p < end:
        if end - p < 4:
            return None
        n = int.from_bytes(buf[p + 2 : p + 4], order)  # type: ignore[arg-type]
        if n > end - p - 4:
            return None
        out.append((buf[p], buf[p + 1], p + 4, p + 4 + n))
        p += 4 + n
    return out


def parse_record(buf: bytes | mmap, pos: int, end: int, prefer: str = "big") -> Record12:
    """The 12c+ record at ``pos``; ``ValueError`` naming the first thing that does not fit
    (a record cut short included: the caller decides whether that is an error)."""
    found = frame_length(buf, pos, end, prefer)
    if found is None:
        raise ValueError(f"record cut short: {end - pos} bytes left")
    length, order = found
    body, body_end = pos + 4, pos + length - 4
    subs = _subs(buf, body, body_end, order)
    if subs is None:
        subs = _subs(buf, body, body_end, other(order))
        if subs is None:
            raise ValueError("the sub-records (H, D, T) do not add up to the G length in "
                             "either byte order")
        order = other(order)
    if not subs or subs[0][0] != 0x48:
        raise ValueError("the record does not start with its H header")
    _t, _f, hstart, hend = subs[0]
    if hend - hstart < H_FIXED:
        raise ValueError(f"H header of {hend - hstart} bytes is shorter than its 34 fixed bytes")
    areas: dict[int, tuple[int, int]] = {}
    for stype, _flag, s, e in subs[1:]:
        areas.setdefault(stype, (s, e))
    d_len = areas[0x44][1] - areas[0x44][0] if 0x44 in areas else 0
    data_order = order
    fields = _HEAD[order].unpack_from(buf, hstart)
    if fields[4] != d_len:
        swapped = _HEAD[other(order)].unpack_from(buf, hstart)
        if swapped[4] != d_len:
            raise ValueError(f"RecLength {fields[4]} disagrees with the D area's {d_len} bytes "
                             "in either byte order")
        fields, data_order = swapped, other(order)
    rec = Record12(*(pos, length, buf[pos + 1], order, data_order, *fields,
                     bytes(buf[hstart:hend]), bytes(buf[hstart + H_FIXED : hend])))
    rec.subs = subs[1:]
    for stype, attr in ((0x44, "d"), (0x54, "t"), (0x55, "u")):
        if stype in areas:
            s, e = areas[stype]
            setattr(rec, attr, bytes(buf[s:e]))
    if rec.io_type == 170:
        raw = buf[hstart + 24 : hstart + 28]
        rec.ddr_index = int.from_bytes(raw[:2], data_order)  # type: ignore[arg-type]
        rec.tdr_index = int.from_bytes(raw[2:], data_order)  # type: ignore[arg-type]
    _read_tail(rec)
    return rec


def _read_tail(rec: Record12) -> None:
    """What the header's tail holds: a NUL-terminated name (TDR records, the 12.1 layout) or
    a row record's TDR index (and PNR index when Partition has 0x80)."""
    tail = rec.tail
    row = rec.io_type not in (170, 160, 205)
    if row and (len(tail) == 2 or (len(tail) == 4 and rec.partition & PARTITION_PNR)):
        rec.tdr_index = int.from_bytes(tail[:2], rec.data_order)  # type: ignore[arg-type]
        if len(tail) == 4:
            rec.pnr_index = int.from_bytes(tail[2:], rec.data_order)  # type: ignore[arg-type]
        return
    if len(tail) > 1 and tail[-1] == 0 and 0 not in tail[:-1]:
        rec.name = tail[:-1].decode("utf-8", "replace")


def pack_header(order: str, *, partition: int, before_after: int, rec_length: int, io_type: int,
                orig_node: int, io_time: int, audit_pos: int, audit_rba: int, trans_ind: int,
                continued: int, tail: bytes) -> bytes:
    """The H area's content: the 34 fixed bytes in ``order`` and the tail."""
    return _HEAD[order].pack(0x45, partition, 0, before_after, rec_length, io_type, orig_node,
                             io_time, audit_pos, audit_rba, trans_ind, 0x52, 0, 0, continued,
                             1) + tail


def index_pair(ddr: int, tdr: int, order: str) -> int:
    """Bytes 24-27 of a metadata record (DDR index, TDR index) as the u32 ``pack_header``
    writes there."""
    raw = u16(ddr, order) + u16(tdr, order)
    return int.from_bytes(raw, order)  # type: ignore[arg-type]
