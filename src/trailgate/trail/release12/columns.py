"""A 12c+ D area to and from the 11.2 form the rest of trailgate reads.

The column framing is the 11.2 one (index, length, null flag, value) with its lengths in the
record's byte order; binary numbers (GoldenGate types 132/134) become the ASCII digits an
11.2 trail carries, and a CHAR sent with a length prefix loses it.  Every record a reader
returns thus has an 11.2 D area, whatever its file's format.
"""

from __future__ import annotations

from decimal import Decimal

from trailgate.trail.release12.definitions import ColumnSpec, TableSpec

__all__ = ["UNIFIED", "from_seed", "split_unified", "to_seed", "unified_images",
           "unified_to_seed"]

_ROW_OPS = frozenset({3, 5, 10, 15, 115})
#: The unified update IOTypes (134, 135): read as the compressed or PK update they amount to.
UNIFIED = frozenset({134, 135})
_PK_UPDATE, _LOB, _FIELD_COMP = 115, 116, 15
_NULL_VAR = b"\xff\xff\x00\x00"


def _u16(b: bytes, pos: int, order: str) -> int:
    return int.from_bytes(b[pos : pos + 2], order)  # type: ignore[arg-type]


def _number_text(raw: bytes, scale: int) -> bytes:
    value = int.from_bytes(raw, "big", signed=True)
    if not scale:
        return str(value).encode("ascii")
    return format(Decimal(value).scaleb(-scale), "f").encode("ascii")


def _value_to_seed(index: int, value: bytes, spec: ColumnSpec | None, order: str) -> bytes:
    n = len(value)
    if n < 2:
        raise ValueError(f"column {index}: a value of {n} bytes is shorter than its null flag")
    null = value[:2] == b"\xff\xff"
    if not null and value[:2] != b"\x00\x00":
        raise ValueError(f"column {index}: bad null indicator {value[:2].hex(' ')}")
    mode = spec.mode if spec is not None else None
    if mode is None:  # no definition: judge the frame by its shape, as the 11.2 reader does
        mode = "var" if n >= 4 and _u16(value, 2, order) == n - 4 else "fixed"
    if mode == "fixed":
        return value
    if mode == "int":
        assert spec is not None
        if null:
            return _NULL_VAR
        if n != 2 + spec.size:
            raise ValueError(f"column {index}: a {spec.size}-byte binary number framed in "
                             f"{n} bytes")
        text = _number_text(value[2:], spec.scale)
        return b"\x00\x00" + len(text).to_bytes(2, "big") + text
    if n < 4:
        if null:
            return _NULL_VAR
        raise ValueError(f"column {index}: a variable-length value is missing its length")
    inner = _u16(value, 2, order)
    if not null and inner != n - 4:
        raise ValueError(f"column {index}: value length {inner} does not match its column "
                         f"length {n}")
    if mode == "char":
        assert spec is not None
        return b"\xff\xff" + b"\x00" * spec.size if null else b"\x00\x00" + value[4:]
    return value[:2] + inner.to_bytes(2, "big") + value[4:]


def _columns_to_seed(d: bytes, start: int, end: int, order: str,
                     table: TableSpec | None) -> bytes:
    specs = table.columns if table is not None else {}
    out = bytearray()
    pos = start
    while pos < end:
        if end - pos < 4:
            raise ValueError(f"column header cut short at offset {pos}")
        index, length = _u16(d, pos, order), _u16(d, pos + 2, order)
        vstart = pos + 4
        pos = vstart + length
        if pos > end:
            raise ValueError(f"column {index} of {length} bytes runs past the record")
        value = _value_to_seed(index, d[vstart:pos], specs.get(index), order)
        out += index.to_bytes(2, "big") + len(value).to_bytes(2, "big") + value
    return bytes(out)


def split_unified(d: bytes, order: str) -> int:
    """Where a unified update's after image starts: its D area is two zero bytes, the before
    image's length (2 bytes), the before image, the after image (docs/trail-format.md).  The
    four bytes may be one 4-byte length; in a little-endian file that reads ``len 00 00``."""
    if len(d) < 4:
        raise ValueError("unified update: its before-image length is cut short")
    if d[:2] == b"\x00\x00":
        before = _u16(d, 2, order)
    elif d[2:4] == b"\x00\x00":
        before = _u16(d, 0, order)
    else:
        raise ValueError(f"unified update: {d[:4].hex(' ')} is not a before-image length")
    if 4 + before > len(d):
        raise ValueError(f"unified update: a before image of {before} bytes runs past its "
                         f"{len(d)}-byte data area")
    return 4 + before


def unified_images(d: bytes, order: str, table: TableSpec | None) -> tuple[bytes, bytes]:
    """A unified update's before and after images, each in the 11.2 column form."""
    split = split_unified(d, order)
    return (_columns_to_seed(d, 4, split, order, table),
            _columns_to_seed(d, split, len(d), order, table))


def _values(seed: bytes) -> dict[int, bytes]:
    out, pos = {}, 0
    while pos < len(seed):
        index, length = _u16(seed, pos, "big"), _u16(seed, pos + 2, "big")
        out[index] = seed[pos + 4 : pos + 4 + length]
        pos += 4 + length
    return out


def unified_to_seed(io_type: int, d: bytes, order: str,
                    table: TableSpec | None) -> tuple[int, bytes]:
    """A unified update (134, 135) as the 11.2 record readers take: the after image (key
    and changed columns) as a compressed update (15), or, when the key changed (always for
    135), a PK update (115) with the before image's key columns."""
    before, after = unified_images(d, order, table)
    definition = table.definition if table is not None else None
    keys = [c.index for c in definition.columns if c.name in definition.key] \
        if definition is not None else []
    old, new = _values(before), _values(after)
    moved = io_type == 135 or any(new.get(k, old.get(k)) != old.get(k) for k in keys)
    if not moved:
        return _FIELD_COMP, after
    missing = [k for k in keys if k not in old]
    if not keys or missing:  # a PK update whose old key is not whole would miss its row
        raise ValueError(f"unified update (IOType {io_type}) changes the key, but "
                         + ("the table's key is not known (no TDR)" if not keys else
                            f"its before image lacks key column(s) {missing}"))
    old_key = b"".join(k.to_bytes(2, "big") + len(old[k]).to_bytes(2, "big") + old[k]
                       for k in keys)
    return _PK_UPDATE, len(old_key).to_bytes(2, "big") + old_key + after


def to_seed(io_type: int, d: bytes, order: str, table: TableSpec | None) -> bytes:
    """The 11.2 form of a 12c+ record's D area (``order``: its byte order; ``table``: the
    record's TDR, ``None`` when unknown).  ``ValueError`` on a frame that does not fit, and
    for a unified update, which goes through :func:`unified_to_seed` (its IOType changes
    too)."""
    if io_type in UNIFIED:
        raise ValueError(f"IOType {io_type} (a unified update) converts with its IOType: "
                         "unified_to_seed")
    if io_type == _LOB:
        if len(d) < 20:
            raise ValueError("LOB piece header cut short")
        words = [int.from_bytes(d[i : i + 4], order) for i in range(0, 20, 4)]  # type: ignore[arg-type]
        return b"".join(w.to_bytes(4, "big") for w in words) + d[20:]
    if io_type not in _ROW_OPS:
        return d
    if order == "big" and (table is None or table.plain):
        return d  # 11.2 framing already
    if io_type == _PK_UPDATE:
        if len(d) < 2:
            raise ValueError("PK update without its before-key length")
        klen = _u16(d, 0, order)
        if 2 + klen > len(d):
            raise ValueError(f"before key of {klen} bytes runs past the data")
        key = _columns_to_seed(d, 2, 2 + klen, order, table)
        return len(key).to_bytes(2, "big") + key + _columns_to_seed(d, 2 + klen, len(d), order,
                                                                    table)
    return _columns_to_seed(d, 0, len(d), order, table)


def _columns_from_seed(d: bytes, start: int, end: int, order: str,
                       fixed: frozenset[int] | None) -> bytes:
    out = bytearray()
    pos = start
    while pos < end:
        index, length = _u16(d, pos, "big"), _u16(d, pos + 2, "big")
        value = d[pos + 4 : pos + 4 + length]
        pos += 4 + length
        variable = (index not in fixed) if fixed is not None else (
            length >= 4 and _u16(value, 2, "big") == length - 4)
        if variable and length >= 4:
            value = value[:2] + _u16(value, 2, "big").to_bytes(2, order) + value[4:]  # type: ignore[arg-type]
        out += index.to_bytes(2, order) + length.to_bytes(2, order) + value  # type: ignore[arg-type]
    return bytes(out)


def from_seed(io_type: int, d: bytes, order: str, fixed: frozenset[int] | None) -> bytes:
    """The 12c+ D area, in ``order``, of an 11.2 one trailgate encoded (``fixed``: the table's
    fixed-width column indexes, ``None`` when unknown)."""
    if order == "big":
        return d
    if io_type == _LOB:
        words = [int.from_bytes(d[i : i + 4], "big") for i in range(0, 20, 4)]
        return b"".join(w.to_bytes(4, "little") for w in words) + d[20:]
    if io_type not in _ROW_OPS:
        return d
    if io_type == _PK_UPDATE:
        klen = _u16(d, 0, "big")
        key = _columns_from_seed(d, 2, 2 + klen, order, fixed)
        return len(key).to_bytes(2, "little") + key + _columns_from_seed(
            d, 2 + klen, len(d), order, fixed)
    return _columns_from_seed(d, 0, len(d), order, fixed)
