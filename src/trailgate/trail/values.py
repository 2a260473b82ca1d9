"""Column value framing inside D records, exactly as seed 001 shows each type.

A framed value starts with a two-byte null indicator (``00 00`` or ``FF FF``).  Variable
kinds then carry a two-byte length; CHAR, DATE and TIMESTAMP are fixed width, so their
length comes from the column header around them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from trailgate.model import ColumnKind
from trailgate.trail._accel import speedups as _speedups

__all__ = [
    "MAX_VALUE_BYTES",
    "decode_columns",
    "encode_columns",
    "fixed_indexes",
    "frame_value",
    "unframe_value",
]

#: The longest value one D column can carry: the column header's length is two bytes and the
#: framing takes four. Longer values travel as LOB pieces.
MAX_VALUE_BYTES = 0xFFFF - 4

_NOT_NULL = b"\x00\x00"
_NULL_VAR = b"\xff\xff\x00\x00"
_NULL_DATE = b"\xff\xff1900-01-01:00:00:00"
_NULL_TIMESTAMP = b"\xff\xff1900-01-01:00:00:00.000000000"
_VARIABLE = frozenset(
    {ColumnKind.NUMBER, ColumnKind.VARCHAR2, ColumnKind.RAW, ColumnKind.LONG, ColumnKind.ROWID}
)
if _speedups is not None:
    # The C encoder recognises kinds by identity; any other kind object comes back to Python.
    _speedups.set_column_kinds(_VARIABLE, ColumnKind.CHAR, ColumnKind.DATE, ColumnKind.TIMESTAMP)


def frame_value(kind: ColumnKind, value: bytes | None, width: int | None = None) -> bytes:
    """Frame one value as a D record stores it (without the column index/length header)."""
    if kind in _VARIABLE:
        if value is None:
            return _NULL_VAR
        return _NOT_NULL + len(value).to_bytes(2, "big") + value
    if kind is ColumnKind.CHAR:
        if value is None:
            return b"\xff\xff" + b"\x00" * (width or 0)
        if width and len(value) < width:
            value = value.ljust(width, b" ")
        return _NOT_NULL + value
    if kind is ColumnKind.DATE:
        return _NULL_DATE if value is None else _NOT_NULL + value
    if kind is ColumnKind.TIMESTAMP:
        return _NULL_TIMESTAMP if value is None else _NOT_NULL + value
    raise ValueError(f"unknown column kind {kind!r}")


def unframe_value(framed: bytes | memoryview, kind: ColumnKind | None) -> bytes | None:
    """Undo :func:`frame_value`. Raises ``ValueError`` on an inconsistent frame.

    With ``kind`` unknown (a trail read without its metadata) a frame whose inner length
    matches is read as a variable kind, anything else as fixed width.
    """
    framed = bytes(framed)
    if len(framed) < 2:
        raise ValueError(f"a column value of {len(framed)} bytes is shorter than its null flag")
    indicator = framed[:2]
    if indicator == b"\xff\xff":
        return None
    if indicator != _NOT_NULL:
        raise ValueError(f"bad null indicator {indicator.hex(' ')}")
    if kind is None:
        variable = len(framed) >= 4 and int.from_bytes(framed[2:4], "big") == len(framed) - 4
    else:
        variable = kind in _VARIABLE
    if not variable:
        return framed[2:]
    if len(framed) < 4:
        raise ValueError("a variable-length value is missing its length")
    length = int.from_bytes(framed[2:4], "big")
    if length != len(framed) - 4:
        raise ValueError(f"value length {length} does not match its column length {len(framed)}")
    return framed[4:]


def encode_columns(
    values: dict[int, bytes | None],
    kinds: Sequence[ColumnKind] | None,
    widths: Sequence[int | None] | None = None,
) -> bytes:
    """Encode column index -> value as a D record's column list, in index order."""
    if _speedups is not None:  # the C version, byte for byte the same; None: not handled
        encoded = _speedups.encode_columns(values, kinds, widths)
        if encoded is not None:
            return encoded
    out = bytearray()
    for index in sorted(values):
        kind = kinds[index] if kinds is not None and index < len(kinds) else ColumnKind.VARCHAR2
        width = widths[index] if widths is not None and index < len(widths) else None
        framed = frame_value(kind, values[index], width)
        if len(framed) > 0xFFFF:
            raise ValueError(f"column {index} value of {len(framed)} bytes needs LOB pieces")
        out += index.to_bytes(2, "big") + len(framed).to_bytes(2, "big") + framed
    return bytes(out)


def fixed_indexes(kinds: Sequence[ColumnKind | None]) -> frozenset[int]:
    """The column indexes whose kind is fixed width (CHAR, DATE, TIMESTAMP)."""
    return frozenset(i for i, k in enumerate(kinds) if k is not None and k not in _VARIABLE)


_COLUMN_HEAD = struct.Struct(">HHHH").unpack_from


def decode_columns(
    data: bytes,
    fixed: frozenset[int] | None,
    start: int = 0,
    end: int | None = None,
) -> dict[int, bytes | None]:
    """Decode a D record's column list into column index -> value.

    ``fixed`` names the fixed-width columns of the table (``None``: the table is unknown, and
    each frame is judged by its shape).  Raises ``ValueError`` naming the column and offset
    when the list is inconsistent.
    """
    end = len(data) if end is None else end
    if _speedups is not None:  # the C version; None: inconsistent, let the code below say why
        decoded = _speedups.decode_columns(data, fixed, start, end)
        if decoded is not None:
            return decoded
    if fixed is None or end - start < 8:
        return _decode_columns_slow(data, fixed, start, end)
    values: dict[int, bytes | None] = {}
    pos = start
    unpack = _COLUMN_HEAD
    try:
        while pos < end:
            index, length, indicator, inner = unpack(data, pos)
            nxt = pos + 4 + length
            if indicator == 0xFFFF and length >= 2:  # (shorter: the flag is not its own)
                values[index] = None
            elif indicator or nxt > end or length < 2:
                break
            elif index in fixed:
                values[index] = data[pos + 6 : nxt]
            elif inner == length - 4:
                values[index] = data[pos + 8 : nxt]
            else:
                break
            pos = nxt
        else:
            if pos == end:
                return values
    except struct.error:
        pass
    # Something is off (or a short last column): let the careful decoder say what.
    return _decode_columns_slow(data, fixed, start, end)


def _decode_columns_slow(
    buf: bytes, fixed: frozenset[int] | None, start: int, end: int
) -> dict[int, bytes | None]:
    values: dict[int, bytes | None] = {}
    pos = start
    while pos < end:
        if pos + 4 > end:
            raise ValueError(f"column header cut short at offset {pos}")
        index = (buf[pos] << 8) | buf[pos + 1]
        length = (buf[pos + 2] << 8) | buf[pos + 3]
        vstart = pos + 4
        pos = vstart + length
        if pos > end:
            raise ValueError(f"column {index} of {length} bytes runs past the record")
        kind = None if fixed is None else ColumnKind.CHAR if index in fixed else ColumnKind.VARCHAR2
        try:
            values[index] = unframe_value(buf[vstart:pos], kind)
        except ValueError as exc:
            raise ValueError(f"column {index}: {exc}") from None
    return values
