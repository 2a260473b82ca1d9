"""GoldenGate's binary DDR and TDR data areas, as a GoldenGate 12.2 Extract writes them.

Both are token trees in the file header's style: an id byte, an info byte (0x40: a 4-byte
length follows, otherwise 2), the length, the value; big-endian in every area seen, read
little-endian too when big-endian does not fit.  What each token means was worked out from a
real trail (docs/trail-format.md); an unknown token is kept, never guessed at, and a parsed
area keeps its tree as read, so building it again gives back its bytes with only changed
fields rewritten.  A tree that does not add up is a ``ValueError`` saying where.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

__all__ = [
    "TRAILGATE_TOKEN",
    "BinColumn",
    "BinDdr",
    "BinTdr",
    "Token",
    "build_ddr",
    "build_tdr",
    "is_binary",
    "parse_ddr",
    "parse_tdr",
]

_LONG = 0x40
#: The token trailgate adds to the TDRs it writes: its exact table definition (seed 004's
#: text), so its own trails read back to the same TableDef.  GoldenGate's TDRs have no token
#: 0x54; whether GoldenGate skips a token it does not know is not known.
TRAILGATE_TOKEN = 0x54
#: A column entry's fixed fields after its name: data type, four lengths, an unknown u32,
#: fetch offset, character set, then seven u16 (native type, sub type, ?, least significant
#: datetime part, scale, ?, flags).
_FIXED = {o: struct.Struct(p + "HIIIIIIiHHHHHHH") for o, p in (("big", ">"),
                                                             ("little", "<"))}
Order = Literal["big", "little"]
T = TypeVar("T")
KEY_FLAG = 0x01


def _either(parse: Callable[[bytes, Order], T], data: bytes) -> T:
    """``parse`` in big-endian (every area seen), else little-endian (a little-endian
    file's, if GoldenGate writes them so; not known); the big-endian error if neither."""
    try:
        return parse(data, "big")
    except ValueError as big:
        try:
            return parse(data, "little")
        except ValueError:
            raise big from None


def is_binary(data: bytes) -> bool:
    """True when a metadata area is a binary token tree (not the text trailgate once wrote,
    which starts with a letter)."""
    return len(data) >= 4 and data[0] == 0x30 and data[1] in (0x00, _LONG)


def _tokens(buf: bytes, start: int, end: int, what: str,
            order: Order) -> list[tuple[int, int, int]]:
    """(id, value start, value end) of each token in ``buf[start:end]``."""
    return [(tid, s, e) for tid, _info, s, e in _tokens_info(buf, start, end, what, order)]


def _tokens_info(buf: bytes, start: int, end: int, what: str,
                 order: Order) -> list[tuple[int, int, int, int]]:
    """(id, info byte, value start, value end) of each token in ``buf[start:end]``."""
    out = []
    pos = start
    while pos < end:
        if end - pos < 4:
            raise ValueError(f"{what}: token header cut short at offset {pos}")
        tid, info = buf[pos], buf[pos + 1]
        if info & _LONG:
            if end - pos < 6:
                raise ValueError(f"{what}: token 0x{tid:02x} length cut short at offset {pos}")
            length, vstart = int.from_bytes(buf[pos + 2 : pos + 6], order), pos + 6
        else:
            length, vstart = int.from_bytes(buf[pos + 2 : pos + 4], order), pos + 4
        if vstart + length > end:
            raise ValueError(f"{what}: token 0x{tid:02x} of {length} bytes at offset {pos} "
                             f"runs past its end ({end})")
        out.append((tid, info, vstart, vstart + length))
        pos = vstart + length
    return out


@dataclass(frozen=True, slots=True)
class Token:
    """A token as read: its id, its info byte, and its value (a group's tokens, or bytes)."""

    tid: int
    info: int
    value: bytes | tuple[Token, ...]


@dataclass(frozen=True, slots=True)
class Tree:
    """An area's token tree as read (the outer token's info byte, the tokens inside it) and
    the byte order it was read in."""

    outer_info: int
    tokens: tuple[Token, ...]
    order: Order


#: The tokens that are groups of tokens, by path (a path: the ids from the top, dotted).
_TDR_GROUPS = frozenset({"2", "2.1"})
_DDR_GROUPS = frozenset({"2"})


def _tree(data: bytes, what: str, order: Order, groups: frozenset[str]) -> Tree:
    """The token tree of an area whose tokens :func:`_outer` has checked."""

    def level(start: int, end: int, path: str) -> tuple[Token, ...]:
        out = []
        for tid, info, s, e in _tokens_info(data, start, end, what, order):
            p = f"{path}{tid}"
            out.append(Token(tid, info, level(s, e, p + ".") if p in groups else data[s:e]))
        return tuple(out)

    (_tid, info, start, end), = _tokens_info(data, 0, len(data), what, order)
    return Tree(info, level(start, end, ""), order)


def _info_token(tid: int, info: int, value: bytes, order: Order) -> bytes:
    """A token with the info byte it was read with (a 4-byte length when that says so or
    the value needs it)."""
    if info & _LONG or len(value) > 0xFFFF:
        return bytes((tid, info | _LONG)) + len(value).to_bytes(4, order) + value
    return bytes((tid, info)) + len(value).to_bytes(2, order) + value


def _rebuild(tree: Tree, known: dict[str, bytes | None], order: Order) -> bytes:
    """``tree`` again, each token whose path ``known`` names holding that value instead
    (``None``: left out) and the rest as read; a known token the tree lacks goes at the
    end of its group, when the tree has that group.  An unknown value of 2, 4 or 8 bytes
    written in the other byte order than it was read in is turned round, taken as the
    integer :func:`_value` shows (what such a value is, is not known)."""
    turn = order != tree.order
    done: set[str] = set()

    def level(tokens: tuple[Token, ...], path: str) -> bytes:
        out = bytearray()
        for t in tokens:
            p = f"{path}{t.tid}"
            if isinstance(t.value, tuple):
                value: bytes | None = level(t.value, p + ".")
            elif p in known and p not in done:
                value = known[p]
                done.add(p)
            else:
                value = t.value[::-1] if turn and len(t.value) in (2, 4, 8) else t.value
            if value is not None:
                out += _info_token(t.tid, t.info, value, order)
        for p, v in known.items():
            parent, _, tid = p.rpartition(".")
            if p not in done and v is not None and (parent + "." if parent else "") == path:
                out += _token(int(tid), v, order)
                done.add(p)
        return bytes(out)

    return _info_token(0x30, tree.outer_info, level(tree.tokens, ""), order)


def _outer(data: bytes, what: str, order: Order) -> list[tuple[int, int, int]]:
    if not is_binary(data):
        raise ValueError(f"{what}: not a binary token tree")
    tops = _tokens(data, 0, len(data), what, order)
    if len(tops) != 1:
        raise ValueError(f"{what}: {len(tops)} top-level tokens where one group belongs")
    _tid, start, end = tops[0]
    return _tokens(data, start, end, what, order)


def _int(data: bytes, start: int, end: int, what: str, size: int, order: Order) -> int:
    if end - start != size:
        raise ValueError(f"{what}: a {end - start}-byte value where {size} bytes belong")
    return int.from_bytes(data[start:end], order)


def _string(data: bytes, start: int, end: int, what: str, order: Order) -> str:
    if end - start < 2 or 2 + int.from_bytes(data[start : start + 2], order) != end - start:
        raise ValueError(f"{what}: a string whose length does not fit its token")
    return data[start + 2 : end].decode("utf-8", "replace")


@dataclass(slots=True)
class BinDdr:
    """A binary DDR: what its tokens are known to mean, and the rest by token path."""

    version: int = 0
    name: str = ""
    timezone: str = ""
    case_sensitivity: bytes = b""
    unknown: dict[str, int | str] = field(default_factory=dict)
    tree: Tree | None = field(default=None, compare=False, repr=False)  # as read


def parse_ddr(data: bytes) -> BinDdr:
    """A DDR's data area; ``ValueError`` when its tokens do not add up."""
    return _either(_parse_ddr, data)


def _parse_ddr(data: bytes, order: Order) -> BinDdr:
    what = "DDR"
    ddr = BinDdr()
    outer = _outer(data, what, order)  # its checks name the problem before the tree
    ddr.tree = _tree(data, what, order, _DDR_GROUPS)
    for tid, s, e in outer:
        if tid == 0x01:
            ddr.version = _int(data, s, e, "DDR version", 2, order)
        elif tid == 0x03:
            ddr.name = _string(data, s, e, "DDR database name", order)
        elif tid == 0x02:
            for sid, ss, se in _tokens(data, s, e, "DDR group 2", order):
                if sid == 0x04:
                    ddr.timezone = _string(data, ss, se, "DDR time zone", order)
                elif sid == 0x05:
                    n = _int(data, ss, ss + 4, "DDR case sensitivity length", 4, order) \
                        if se - ss >= 4 else -1
                    if n != se - ss - 4:
                        raise ValueError("DDR case sensitivity: its length does not fit")
                    ddr.case_sensitivity = data[ss + 4 : se]
                else:
                    ddr.unknown[f"2.{sid}"] = _value(data, ss, se, order)
        else:
            ddr.unknown[str(tid)] = _value(data, s, e, order)
    return ddr


def _value(data: bytes, start: int, end: int, order: Order) -> int | str:
    """An unknown token's value: a number when it has an integer's size, else its hex."""
    if end - start in (1, 2, 4, 8):
        return int.from_bytes(data[start:end], order)
    return data[start:end].hex(" ")


@dataclass(frozen=True, slots=True)
class BinColumn:
    """One column entry of a binary TDR (docs/trail-format.md names each field's evidence).

    ``length_a`` and ``length_c`` are the internal and binary lengths, equal in every column
    seen, so which is which is unknown; ``unknown_u32``, ``unknown_u16_2``,
    ``unknown_u16_5``, the flags other than the key bit, ``extra`` (part B's bytes),
    ``tail_a`` (bytes after the fields in part A: none seen) and whether the entry has a
    part B at all are kept as read."""

    name: str
    data_type: int
    length_a: int
    external_length: int
    length_c: int
    table_length: int
    unknown_u32: int
    offset: int
    charset: int
    native_type: int
    sub_type: int
    unknown_u16_2: int
    least_dt: int
    scale: int
    unknown_u16_5: int
    flags: int
    extra: bytes
    tail_a: bytes = b""
    part_b: bool = True

    @property
    def key(self) -> bool:
        return bool(self.flags & KEY_FLAG)


@dataclass(slots=True)
class BinTdr:
    """A binary TDR: its version, key column count, columns, and unknown tokens."""

    version: int = 0
    key_count: int | None = None
    columns: list[BinColumn] = field(default_factory=list)
    unknown: dict[str, int | str] = field(default_factory=dict)
    trailgate: bytes | None = None  # trailgate's own definition text (TRAILGATE_TOKEN)
    tree: Tree | None = field(default=None, compare=False, repr=False)  # as read


def _column(data: bytes, start: int, end: int, number: int, order: Order) -> BinColumn:
    what = f"TDR column {number}"
    if end - start < 4:
        raise ValueError(f"{what}: entry cut short")
    part_a = int.from_bytes(data[start : start + 2], order)
    a_end = start + 2 + part_a
    name_len = int.from_bytes(data[start + 2 : start + 4], order)
    name_end = start + 4 + name_len
    if a_end > end or name_end + _FIXED[order].size > a_end:
        raise ValueError(f"{what}: its name ({name_len} bytes) and fields do not fit its "
                         f"entry of {end - start} bytes at offset {start}")
    name = data[start + 4 : name_end].decode("utf-8", "replace")
    (dt, length_a, ext, length_c, table, u32, offset, charset, native, sub, u16_2, least_dt,
     scale, u16_5, flags) = _FIXED[order].unpack_from(data, name_end)
    tail_a = data[name_end + _FIXED[order].size : a_end]  # none in the entries seen
    extra, part_b = b"", a_end != end
    if part_b:
        if end - a_end < 2 or 2 + int.from_bytes(data[a_end : a_end + 2], order) != end - a_end:
            raise ValueError(f"{what} ({name}): its second part does not fit its entry")
        extra = data[a_end + 2 : end]
    return BinColumn(name, dt, length_a, ext, length_c, table, u32, offset, charset, native,
                     sub, u16_2, least_dt, scale, u16_5, flags, bytes(extra), bytes(tail_a),
                     part_b)


def parse_tdr(data: bytes) -> BinTdr:
    """A TDR's data area; ``ValueError`` when its tokens or column entries do not add up."""
    return _either(_parse_tdr, data)


def _parse_tdr(data: bytes, order: Order) -> BinTdr:
    tdr = BinTdr()
    listed = False
    outer = _outer(data, "TDR", order)  # its checks name the problem before the tree
    tdr.tree = _tree(data, "TDR", order, _TDR_GROUPS)
    for tid, s, e in outer:
        if tid == 0x01:
            tdr.version = _int(data, s, e, "TDR version", 2, order)
        elif tid == 0x02:
            for sid, ss, se in _tokens(data, s, e, "TDR group 2", order):
                if sid == 0x01:
                    inner = _tokens(data, ss, se, "TDR key group", order)
                    for kid, ks, ke in inner:
                        if kid == 0x01:
                            tdr.key_count = _int(data, ks, ke, "TDR key column count", 2, order)
                        else:
                            tdr.unknown[f"2.1.{kid}"] = _value(data, ks, ke, order)
                else:
                    tdr.unknown[f"2.{sid}"] = _value(data, ss, se, order)
        elif tid == 0x03:
            tdr.columns = _columns(data, s, e, order)
            listed = True
        elif tid == TRAILGATE_TOKEN:
            tdr.trailgate = data[s:e]
        else:
            tdr.unknown[str(tid)] = _value(data, s, e, order)
    if not listed:
        raise ValueError("TDR: no column list (token 3)")
    return tdr


def _columns(data: bytes, start: int, end: int, order: Order) -> list[BinColumn]:
    if end - start < 2:
        raise ValueError("TDR column list: its count is cut short")
    count = int.from_bytes(data[start : start + 2], order)
    pos, out = start + 2, []
    for number in range(count):
        if end - pos < 2:
            raise ValueError(f"TDR column list: column {number} of {count} is missing")
        size = int.from_bytes(data[pos : pos + 2], order)
        if pos + 2 + size > end:
            raise ValueError(f"TDR column {number}: an entry of {size} bytes at offset {pos} "
                             f"runs past the column list ({end})")
        out.append(_column(data, pos + 2, pos + 2 + size, number, order))
        pos += 2 + size
    if pos != end:
        raise ValueError(f"TDR column list: {end - pos} bytes left after its {count} columns")
    return out


def _token(tid: int, value: bytes, order: Order) -> bytes:
    return _info_token(tid, 0, value, order)


def _text(text: str, order: Order) -> bytes:
    raw = text.encode("utf-8")
    return len(raw).to_bytes(2, order) + raw


def build_ddr(ddr: BinDdr, order: Order = "big") -> bytes:
    """A DDR's data area in GoldenGate's layout (:func:`parse_ddr` reads it back); tokens 2.1
    to 2.3, whose meaning is unknown, carry ``ddr.unknown``'s values or those of the real
    Oracle DDR (0, 1, 0).  A DDR read from a file is built on its tree as read, so only the
    fields that changed differ from its bytes."""
    if ddr.tree is not None:
        return _rebuild(ddr.tree, {
            "1": ddr.version.to_bytes(2, order), "2.4": _text(ddr.timezone, order),
            "2.5": len(ddr.case_sensitivity).to_bytes(4, order) + ddr.case_sensitivity,
            "3": _text(ddr.name, order)}, order)
    u = ddr.unknown

    def tok(tid: int, value: bytes) -> bytes:
        return _token(tid, value, order)

    group = b"".join((
        tok(1, int(u.get("2.1", 0)).to_bytes(4, order)),
        tok(2, int(u.get("2.2", 1)).to_bytes(4, order)),
        tok(3, int(u.get("2.3", 0)).to_bytes(2, order)),
        tok(4, _text(ddr.timezone, order)),
        tok(5, len(ddr.case_sensitivity).to_bytes(4, order) + ddr.case_sensitivity)))
    body = tok(1, ddr.version.to_bytes(2, order)) + tok(2, group) + tok(
        3, _text(ddr.name, order))
    return tok(0x30, body)


def _column_entry(c: BinColumn, order: Order) -> bytes:
    name = c.name.encode("utf-8")
    fixed = _FIXED[order].pack(c.data_type, c.length_a, c.external_length, c.length_c,
                               c.table_length, c.unknown_u32, c.offset, c.charset,
                               c.native_type, c.sub_type, c.unknown_u16_2, c.least_dt,
                               c.scale, c.unknown_u16_5, c.flags)
    part_a = len(name).to_bytes(2, order) + name + fixed + c.tail_a
    part_b = len(c.extra).to_bytes(2, order) + c.extra if c.part_b else b""
    entry = len(part_a).to_bytes(2, order) + part_a + part_b
    return len(entry).to_bytes(2, order) + entry


def build_tdr(tdr: BinTdr, order: Order = "big") -> bytes:
    """A TDR's data area in GoldenGate's layout (:func:`parse_tdr` reads it back).  A TDR
    read from a file is built on its tree as read: its unknown tokens, their order and
    length forms stay, only the fields that changed are written anew."""

    def tok(tid: int, value: bytes) -> bytes:
        return _token(tid, value, order)

    keys = tdr.key_count if tdr.key_count is not None else sum(c.key for c in tdr.columns)
    if tdr.tree is not None:
        return _rebuild(tdr.tree, {
            "1": tdr.version.to_bytes(2, order), "2.1.1": keys.to_bytes(2, order),
            "3": len(tdr.columns).to_bytes(2, order) + b"".join(
                _column_entry(c, order) for c in tdr.columns),
            str(TRAILGATE_TOKEN): tdr.trailgate}, order)
    group = b"".join((tok(1, tok(1, keys.to_bytes(2, order))), tok(2, bytes(4)),
                      tok(3, bytes(2)), tok(4, bytes(2))))
    columns = len(tdr.columns).to_bytes(2, order) + b"".join(
        _column_entry(c, order) for c in tdr.columns)
    body = (tok(1, tdr.version.to_bytes(2, order)) + tok(2, group)
            + bytes((3, _LONG)) + len(columns).to_bytes(4, order) + columns)
    if tdr.trailgate is not None:
        body += tok(TRAILGATE_TOKEN, tdr.trailgate)
    return bytes((0x30, _LONG)) + len(body).to_bytes(4, order) + body
