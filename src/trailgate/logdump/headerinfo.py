"""What each file-header token means, for FILEHEADER and the annotated dump.

Both tools explain the same tokens; one table keeps their explanations identical.
"""

from __future__ import annotations

from datetime import UTC, tzinfo

from trailgate.logdump.formats import julian_text, printable
from trailgate.trail.header import GROUP_NAMES, TOKEN_NAMES, UNSET

__all__ = ["VENDORS", "group_name", "token_name", "token_value_text"]

#: Database types (seed 001's table) as DatabaseInfo's VendorType holds them.
VENDORS = {
    1: "DB2 UDB", 2: "DB2 ZOS", 3: "CTREE", 4: "INGRES", 5: "MSSQL", 6: "MYSQL", 7: "ORACLE",
    8: "SQLMX", 9: "SYBASE", 10: "TERADATA", 11: "TIMESTEN", 12: "INFORMIX", 13: "NONSTOP",
    14: "ENSCRIBE", 15: "MSACCESS", 16: "ODBC", 17: "VSAM", 18: "DB2400", 19: "GENERIC",
    20: "DB2400 REMOTE", 21: "POSTGRESQL",
}

_STRINGS = {
    0x30: {0x34, 0x36},
    0x31: {0x30, 0x31, 0x32, 0x33, 0x34},
    0x32: {0x31, 0x32, 0x36, 0x38, 0x3D},
    0x33: {0x30, 0x37},
}
_TIMES = {(0x30, 0x33), (0x30, 0x3C), (0x30, 0x3D)}
_CSNS = {(0x30, 0x3A), (0x30, 0x3B)}


def group_name(group: int) -> str:
    return GROUP_NAMES.get(group, f"Group{group:02X}")


def token_name(group: int, token: int) -> str:
    return TOKEN_NAMES.get(group, {}).get(token, f"Token{token:02X}")


def is_string_token(group: int, token: int) -> bool:
    """True for tokens holding a 2-byte-length string (shown as text)."""
    return token in _STRINGS.get(group, set())


def token_value_text(group: int, token: int, flag: int, value: bytes,
                     tz: tzinfo = UTC) -> str:
    """The value of a header token as text (``*not set*`` for a field the writer has not
    filled in yet, flag 0xFF)."""
    if flag == UNSET:
        return "*not set* (the file was open when read, or its writer stopped)"
    key = (group, token)
    if group == 0x30 and token == 0x30:
        return repr(value.decode("latin-1"))[1:-1]
    if key == (0x30, 0x35):
        return "(URI history group)"
    if is_string_token(group, token) and len(value) >= 2 and \
            int.from_bytes(value[:2], "big") == len(value) - 2:
        return value[2:].decode("utf-8", "replace")
    if key in _TIMES and len(value) == 8:
        return julian_text(int.from_bytes(value, "big"), tz)
    if key in _CSNS and value:
        n = value[0]
        return value[1 : 1 + n].decode("ascii", "replace") if n else "(none)"
    if key == (0x32, 0x30) and len(value) == 2:
        vendor = int.from_bytes(value, "big")
        return f"{vendor} ({VENDORS.get(vendor, 'unknown')})"
    if key == (0x32, 0x3C):
        return value.hex(" ")
    if key == (0x30, 0x32) or key == (0x32, 0x37):
        return f"0x{int.from_bytes(value, 'big'):08X}"
    if len(value) in (1, 2, 4, 8):
        return str(int.from_bytes(value, "big"))
    return printable(value)
