"""PostgreSQL values <-> trail form, both directions in one place.

Capture turns the text pgoutput sends into trail-form bytes; Replicat turns trail-form bytes
back into text PostgreSQL accepts as a parameter.  Keeping both in one module keeps them
exact inverses (see ``tests/unit/test_pg_types.py``).  The mapping is the "PostgreSQL types"
table of ``docs/trail-format.md``.

Text input assumes the session settings ``DateStyle=ISO``, ``TimeZone=UTC``,
``bytea_output=hex`` (``SESSION_SETTINGS``), which the capture connection sets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from trailgate.model import ColumnKind

__all__ = [
    "SESSION_SETTINGS",
    "PgType",
    "classify",
    "pg_text_from_trail",
    "trail_from_pg_text",
]

#: Settings under which PostgreSQL's text output has the shape this module parses.
SESSION_SETTINGS = {
    "DateStyle": "ISO, YMD",
    "TimeZone": "UTC",
    "bytea_output": "hex",
    "IntervalStyle": "postgres",
    "extra_float_digits": "1",
}

_NUMERIC_TYPES = frozenset(
    {"smallint", "integer", "bigint", "numeric", "real", "double precision", "oid"}
)


@dataclass(frozen=True, slots=True)
class PgType:
    """A column type as ``format_type`` names it, with what the trail needs to know."""

    source_type: str  # e.g. "numeric(10,2)", "character varying(30)"
    base: str  # the name without modifiers: "numeric", "character varying"
    kind: ColumnKind
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    with_time_zone: bool = False

    @property
    def is_bool(self) -> bool:
        return self.base == "boolean"


_MOD_RE = re.compile(r"^(?P<head>[^(]*?)\s*(?:\((?P<mods>[^)]*)\))?\s*(?P<tail>[^()]*)$")


@lru_cache(maxsize=4096)
def classify(source_type: str) -> PgType:
    """Describe a ``format_type`` name: its trail kind, length, precision and scale.

    Works from the name alone so that Replicat, which only has ``Column.source_type`` from
    the trail, converts exactly as capture did.
    """
    text = source_type.strip()
    if text.endswith("]"):  # arrays travel as their text
        return PgType(text, text, ColumnKind.VARCHAR2)
    m = _MOD_RE.match(text)
    head = m.group("head").strip() if m else text
    mods = m.group("mods") if m else None
    tail = m.group("tail").strip() if m else ""
    base = f"{head} {tail}".strip() if tail else head
    numbers = [int(p) for p in mods.split(",")] if mods else []
    if base in _NUMERIC_TYPES:
        precision = numbers[0] if numbers else None
        scale = numbers[1] if len(numbers) > 1 else (0 if numbers else None)
        return PgType(text, base, ColumnKind.NUMBER, precision=precision, scale=scale)
    if base == "boolean":
        return PgType(text, base, ColumnKind.NUMBER, precision=1, scale=0)
    if base in ("character", "bpchar"):
        return PgType(text, "character", ColumnKind.CHAR, length=numbers[0] if numbers else 1)
    if base == "date":
        return PgType(text, base, ColumnKind.DATE)
    if base in ("timestamp without time zone", "timestamp"):
        return PgType(text, "timestamp without time zone", ColumnKind.TIMESTAMP,
                      scale=numbers[0] if numbers else 6)
    if base in ("timestamp with time zone", "timestamptz"):
        return PgType(text, "timestamp with time zone", ColumnKind.TIMESTAMP,
                      scale=numbers[0] if numbers else 6, with_time_zone=True)
    if base == "bytea":
        return PgType(text, base, ColumnKind.RAW)
    length = numbers[0] if numbers and base in ("character varying", "varchar") else None
    return PgType(text, base, ColumnKind.VARCHAR2, length=length)


# --- PostgreSQL text -> trail form -------------------------------------------------------

_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
    r"(?:([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)?$"
)


def trail_from_pg_text(text: str, pgtype: PgType) -> bytes:
    """Convert PostgreSQL's text output of a value of ``pgtype`` to its trail form."""
    kind = pgtype.kind
    if kind is ColumnKind.NUMBER:
        if pgtype.is_bool:
            return b"1" if text in ("t", "true") else b"0"
        return text.encode("ascii")
    if kind is ColumnKind.CHAR:
        n = pgtype.length or 0
        return text.ljust(n).encode("utf-8")
    if kind is ColumnKind.DATE:
        if _DATE_RE.match(text):
            return f"{text}:00:00:00".encode("ascii")
        return text.encode("utf-8")  # infinity, BC, year > 9999: the text itself
    if kind is ColumnKind.TIMESTAMP:
        return _trail_timestamp(text, pgtype.with_time_zone)
    if kind is ColumnKind.RAW:
        if text.startswith("\\x"):
            return bytes.fromhex(text[2:])
        return _unescape_bytea(text)
    return text.encode("utf-8")


def _trail_timestamp(text: str, with_time_zone: bool) -> bytes:
    m = _TS_RE.match(text)
    if m is None:
        return text.encode("utf-8")  # infinity, BC, year > 9999
    year, mon, day, hh, mi, ss, frac, sign, oh, om, os_ = m.groups()
    frac = (frac or "").ljust(6, "0")
    offset = timedelta(hours=int(oh or 0), minutes=int(om or 0), seconds=int(os_ or 0))
    if offset:  # the capture session runs in UTC, so this is only a safety net
        local = datetime(int(year), int(mon), int(day), int(hh), int(mi), int(ss), int(frac))
        try:
            utc = local - offset if sign == "+" else local + offset
        except OverflowError:
            return text.encode("utf-8")
        return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}:{utc.hour:02d}:"
                f"{utc.minute:02d}:{utc.second:02d}.{utc.microsecond:06d}000").encode("ascii")
    return f"{year}-{mon}-{day}:{hh}:{mi}:{ss}.{frac}000".encode("ascii")


def _unescape_bytea(text: str) -> bytes:
    """Decode bytea's legacy ``escape`` output (only used if a server ignores hex)."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if text[i + 1] == "\\":
                out.append(0x5C)
                i += 2
                continue
            out.append(int(text[i + 1:i + 4], 8))
            i += 4
            continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return bytes(out)


# --- trail form -> PostgreSQL text --------------------------------------------------------

_TRAIL_DATE_RE = re.compile(rb"^(\d{4}-\d{2}-\d{2}):(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def pg_text_from_trail(value: bytes, source_type: str) -> str:
    """Convert a trail-form value back into text PostgreSQL accepts for ``source_type``.

    The result is meant to be sent as a query parameter (or quoted as a literal); bytea comes
    back in hex form (``\\x…``).
    """
    pgtype = classify(source_type)
    kind = pgtype.kind
    if kind is ColumnKind.NUMBER:
        text = value.decode("ascii")
        if pgtype.is_bool:
            return "true" if text == "1" else "false"
        return text
    if kind is ColumnKind.RAW:
        return "\\x" + value.hex()
    if kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP):
        m = _TRAIL_DATE_RE.match(value)
        if m is None:
            return value.decode("utf-8")  # infinity, BC, year > 9999: stored as text
        day, hh, mi, ss = (g.decode("ascii") for g in m.group(1, 2, 3, 4))
        if kind is ColumnKind.DATE:
            return day
        micros = (m[5] or b"").decode("ascii").ljust(9, "0")[:6]
        text = f"{day} {hh}:{mi}:{ss}.{micros}"
        return text + "+00" if pgtype.with_time_zone else text
    return value.decode("utf-8")
