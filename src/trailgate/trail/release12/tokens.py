"""The GGS token area (``T``) of 12c+ records: ROWID, LOGCSN, TRANID, ORATAG, DDL, in the
record's byte order, and the CSN text forms GoldenGate writes per database.

A LOGCSN is text: an Oracle SCN in digits, a PostgreSQL LSN as ``XXXXXXXX/XXXXXXXX``, a MySQL
binlog position as ``<21-digit file index>:<15-digit offset>`` (public Logdump dumps).
trailgate's changes carry an integer CSN; each form maps to one that keeps commit order.
"""

from __future__ import annotations

import re

from trailgate.trail.release12.layout import sub

__all__ = ["TOKEN_NAMES", "csn_from_text", "csn_text", "decode_t", "encode_t", "walk"]

#: GGS token ids (Logdump's GGSTOKEN names; L, 6, t, D, R seen in public 12c+ dumps).
TOKEN_NAMES = {ord("R"): "ORAROWID", ord("L"): "LOGCSN", ord("6"): "TRANID",
               ord("t"): "ORATAG", ord("D"): "DDL"}
_LSN = re.compile(rb"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})\Z")
_BINLOG = re.compile(rb"(\d{1,21}):(\d{15})\Z")
_VENDOR_POSTGRESQL = 21


def csn_from_text(text: bytes) -> int | None:
    """The integer CSN of a LOGCSN's text: digits as they are, an LSN as its 64-bit value,
    ``index:offset`` as index × 10^15 + offset (order kept); ``None`` for another form."""
    if text.isdigit():
        return int(text)
    m = _LSN.match(text)
    if m:
        return (int(m.group(1), 16) << 32) | int(m.group(2), 16)
    m = _BINLOG.match(text)
    if m:
        return int(m.group(1)) * 10**15 + int(m.group(2))
    return None


def csn_text(csn: int, vendor: int) -> bytes:
    """The LOGCSN text trailgate writes for ``csn``: an LSN for PostgreSQL, else digits."""
    if vendor == _VENDOR_POSTGRESQL and 0 <= csn < 1 << 64:
        return f"{csn >> 32:08X}/{csn & 0xFFFFFFFF:08X}".encode("ascii")
    return str(csn).encode("ascii")


def walk(t: bytes, order: str) -> tuple[list[tuple[int, int, bytes]], str | None]:
    """(token id, info, value) for each token, and a message if the area stops making sense."""
    out: list[tuple[int, int, bytes]] = []
    p = 0
    while p < len(t):
        if len(t) - p < 4:
            return out, f"token header cut short at offset {p}"
        n = int.from_bytes(t[p + 2 : p + 4], order)  # type: ignore[arg-type]
        if n > len(t) - p - 4:
            return out, f"token 0x{t[p]:02X} at offset {p} runs past the token area"
        out.append((t[p], t[p + 1], t[p + 4 : p + 4 + n]))
        p += 4 + n
    return out, None


def decode_t(t: bytes, order: str) -> tuple[str | None, int | None, str | None]:
    """(ROWID, CSN, XID) of a token area; ``ValueError`` when it does not add up."""
    tokens, problem = walk(t, order)
    if problem:
        raise ValueError(f"GGS token area: {problem}")
    rowid = csn = xid = None
    for tid, _info, value in tokens:
        if tid == 0x52:
            rowid = (value[:-2] if value.endswith(b"\x00\x01") else value).decode(
                "ascii", "replace")
        elif tid == 0x4C:
            csn = csn_from_text(value)
            if csn is None:
                raise ValueError(f"LOGCSN {value!r} is in no form trailgate reads (digits, "
                                 "an LSN XXXXXXXX/XXXXXXXX, or file:offset)")
        elif tid == 0x36:
            xid = value.decode("utf-8", "replace")
    return rowid, csn, xid


def encode_t(rowid: str | None, csn: int | None, xid: str | None, order: str,
             vendor: int) -> bytes:
    """A token area's content (ROWID, LOGCSN, TRANID), empty when there is none."""
    out = b""
    if rowid is not None:
        out += sub(0x52, rowid.encode("ascii") + b"\x00\x01", order)
    if csn is not None:
        out += sub(0x4C, csn_text(csn, vendor), order)
    if xid is not None:
        out += sub(0x36, xid.encode("ascii"), order)
    return out
