"""Oracle's on-disk column formats -> trail form (and NUMBER/DATE back, for generators/tests).

Redo row pieces carry columns in the database's internal formats.  The trail stores each
value in its *trail form* (see ``trailgate.model``): ASCII digits for NUMBER, the
``YYYY-MM-DD:HH24:MI:SS`` text for DATE, characters in UTF-8, raw bytes for RAW.

Every decoder raises ``ValueError`` with a short reason on bytes that no Oracle database
writes; the caller adds file, line and RBA.  Nothing here guesses.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import Decimal, localcontext

from trailgate.model import ColumnKind

__all__ = [
    "CHARSETS",
    "decode_date",
    "decode_number",
    "decode_text",
    "decode_timestamp",
    "decoder",
    "encode_date",
    "encode_number",
    "to_trail",
]

#: Oracle character set name -> Python codec.  AL32UTF8/UTF8 values pass through unchanged
#: (after validation); the others are transcoded to UTF-8, the trail's character set.
CHARSETS = {
    "AL32UTF8": "utf-8",
    "UTF8": "utf-8",
    "US7ASCII": "ascii",
    "WE8ISO8859P1": "latin-1",
    "WE8ISO8859P15": "iso8859-15",
    "WE8MSWIN1252": "cp1252",
    "EE8MSWIN1250": "cp1250",
    "CL8MSWIN1251": "cp1251",
    "AL16UTF16": "utf-16-be",
}

_NEG_TERMINATOR = 102  # 0x66, after the mantissa of a negative NUMBER shorter than 20 bytes


_NUMBERS: dict[bytes, bytes] = {}  # values repeat (keys aside): decode each once
_PAIRS = [f"{d:02d}" for d in range(100)]  # a base-100 digit as two decimal digits


def decode_number(raw: bytes) -> bytes:
    """Oracle NUMBER bytes -> plain decimal ASCII (``c2 0b 0c`` -> ``b"1011"``).

    Form: no exponent, no trailing fraction zeros, ``0`` before a leading point
    (``0.5``, ``-0.001``), ``-`` for negatives.
    """
    out = _NUMBERS.get(raw)
    if out is None:
        out = _decode_number(raw)
        if len(_NUMBERS) >= 1 << 16:
            _NUMBERS.clear()
        _NUMBERS[raw] = out
    return out


def _decode_number(raw: bytes) -> bytes:
    if not raw:
        raise ValueError("NUMBER of length 0")
    if raw == b"\x80":
        return b"0"
    head = raw[0]
    if head & 0x80:
        exp = (head & 0x7F) - 65
        body = raw[1:]
        if head == 0xFF and body == b"\x65":
            raise ValueError("NUMBER is +infinity, which the trail cannot carry")
        if not body or len(body) > 20:
            raise ValueError(f"NUMBER mantissa of {len(body)} bytes (1 to 20 expected)")
        if min(body) < 1 or max(body) > 100:
            raise ValueError(f"NUMBER digit byte out of range in {raw.hex(' ')}")
        digits = [b - 1 for b in body]
        negative = False
    else:
        if raw == b"\x00":
            raise ValueError("NUMBER is -infinity, which the trail cannot carry")
        exp = (~head & 0x7F) - 65
        body = raw[1:]
        if body and body[-1] == _NEG_TERMINATOR:
            body = body[:-1]
        elif len(body) != 20:
            raise ValueError(f"negative NUMBER {raw.hex(' ')} lacks its 0x66 terminator")
        if not body or len(body) > 20:
            raise ValueError(f"NUMBER mantissa of {len(body)} bytes (1 to 20 expected)")
        if min(body) < 2 or max(body) > 101:
            raise ValueError(f"NUMBER digit byte out of range in {raw.hex(' ')}")
        digits = [101 - b for b in body]
        negative = True
    if digits[0] == 0 or digits[-1] == 0:
        raise ValueError(f"NUMBER {raw.hex(' ')} is not normalised")
    text = "".join(map(_PAIRS.__getitem__, digits))
    int_len = 2 * (exp + 1)  # decimal digits before the point
    if int_len <= 0:
        out = "0." + "0" * (-int_len) + text.rstrip("0")
    elif int_len >= len(text):
        out = (text + "0" * (int_len - len(text))).lstrip("0")
    else:
        whole, frac = text[:int_len].lstrip("0") or "0", text[int_len:].rstrip("0")
        out = f"{whole}.{frac}" if frac else whole
    return ("-" + out if negative else out).encode("ascii")


def encode_number(value: int | Decimal | str) -> bytes:
    """A number -> Oracle NUMBER bytes (at most 40 significant digits)."""
    d = Decimal(value)
    if not d.is_finite():
        raise ValueError("NUMBER cannot hold NaN or infinity")
    if d == 0:
        return b"\x80"
    with localcontext() as ctx:
        ctx.prec = 80  # exact: the default 28 digits would round a 38-digit NUMBER
        sign, digit_tuple, exponent = d.normalize().as_tuple()
    text = "".join(map(str, digit_tuple))
    int_len = len(text) + int(exponent)  # decimal digits before the point
    if int_len % 2:
        text, int_len = "0" + text, int_len + 1
    if len(text) % 2:
        text += "0"
    pairs = [int(text[i : i + 2]) for i in range(0, len(text), 2)]
    while pairs and pairs[-1] == 0:
        pairs.pop()
    exp100 = int_len // 2 - 1
    if len(pairs) > 20:
        raise ValueError(f"{value} has more digits than a NUMBER holds")
    if not -65 <= exp100 <= 62:
        raise ValueError(f"{value} is out of the NUMBER range")
    if not sign:
        return bytes([exp100 + 193, *(p + 1 for p in pairs)])
    tail = [_NEG_TERMINATOR] if len(pairs) < 20 else []
    return bytes([62 - exp100, *(101 - p for p in pairs), *tail])


def _datetime_fields(raw: bytes) -> tuple[int, int, int, int, int, int]:
    century, year = raw[0] - 100, raw[1] - 100
    if century < 0 or year < 0:
        raise ValueError(f"DATE {raw.hex(' ')} is before year 1 (BC dates are not supported)")
    fields = (century * 100 + year, raw[2], raw[3], raw[4] - 1, raw[5] - 1, raw[6] - 1)
    y, mo, d, h, mi, s = fields
    if not (1 <= y <= 9999 and 1 <= mo <= 12 and 1 <= d <= 31 and 0 <= h < 24
            and 0 <= mi < 60 and 0 <= s < 60):
        raise ValueError(f"DATE bytes {raw.hex(' ')} are not a valid date")
    try:
        _dt.date(y, mo, d)
    except ValueError:
        raise ValueError(f"DATE bytes {raw.hex(' ')} are not a valid date") from None
    return fields


def decode_date(raw: bytes) -> bytes:
    """7-byte DATE -> ``YYYY-MM-DD:HH24:MI:SS``."""
    if len(raw) != 7:
        raise ValueError(f"DATE of {len(raw)} bytes (7 expected)")
    y, mo, d, h, mi, s = _datetime_fields(raw)
    return f"{y:04d}-{mo:02d}-{d:02d}:{h:02d}:{mi:02d}:{s:02d}".encode("ascii")


def encode_date(value: _dt.datetime) -> bytes:
    """A datetime -> 7-byte DATE (the fraction is dropped, as Oracle does)."""
    return bytes([value.year // 100 + 100, value.year % 100 + 100, value.month, value.day,
                  value.hour + 1, value.minute + 1, value.second + 1])


def decode_timestamp(raw: bytes) -> bytes:
    """7- or 11-byte TIMESTAMP -> ``YYYY-MM-DD:HH24:MI:SS.NNNNNNNNN``."""
    if len(raw) not in (7, 11):
        raise ValueError(f"TIMESTAMP of {len(raw)} bytes (7 or 11 expected)")
    y, mo, d, h, mi, s = _datetime_fields(raw[:7])
    nanos = int.from_bytes(raw[7:], "big") if len(raw) == 11 else 0
    if nanos >= 1_000_000_000:
        raise ValueError(f"TIMESTAMP fraction {nanos} is not below one second")
    return f"{y:04d}-{mo:02d}-{d:02d}:{h:02d}:{mi:02d}:{s:02d}.{nanos:09d}".encode("ascii")


def decode_text(raw: bytes, charset: str) -> bytes:
    """Characters in the database character set -> UTF-8 bytes."""
    codec = CHARSETS.get(charset.upper())
    if codec is None:
        raise ValueError(f"character set {charset} is not supported")
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError:
        raise ValueError(f"bytes {raw[:16].hex(' ')} are not valid {charset}") from None
    return raw if codec == "utf-8" else text.encode("utf-8")


def to_trail(raw: bytes | None, kind: ColumnKind, charset: str) -> bytes | None:
    """One column's redo bytes -> its trail form (``None`` stays NULL)."""
    if raw is None:
        return None
    return decoder(kind, charset)(raw)


_DECODERS: dict[tuple[ColumnKind, str], Callable[[bytes], bytes]] = {}


def decoder(kind: ColumnKind, charset: str) -> Callable[[bytes], bytes]:
    """The function turning a column's (non-NULL) redo bytes into trail form, chosen once
    per column kind and character set (capture calls it for every value)."""
    fn = _DECODERS.get((kind, charset))
    if fn is None:
        fn = _DECODERS[(kind, charset)] = _decoder(kind, charset)
    return fn


def _decoder(kind: ColumnKind, charset: str) -> Callable[[bytes], bytes]:
    if kind is ColumnKind.NUMBER:
        return decode_number
    if kind in (ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.LONG):
        codec = CHARSETS.get(charset.upper())
        if codec == "utf-8":
            def utf8(raw: bytes) -> bytes:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError(f"bytes {raw[:16].hex(' ')} are not valid "
                                     f"{charset}") from None
                return raw
            return utf8
        return lambda raw: decode_text(raw, charset)
    if kind is ColumnKind.DATE:
        return decode_date
    if kind is ColumnKind.TIMESTAMP:
        return decode_timestamp
    if kind is ColumnKind.RAW:
        return lambda raw: raw

    def none(raw: bytes) -> bytes:
        raise ValueError(f"column kind {kind} has no Oracle decoding")
    return none
