"""Trail-form values to the text PostgreSQL accepts as input: the apply layer's neutral form.

Every mapped value becomes PostgreSQL input text, sent with a cast to the target column's
type; Delta converts the same text to Arrow values, so both targets read a value one way.
PostgreSQL source columns convert with ``pg_text_from_trail`` (capture's exact inverse);
others (an Oracle trail) by their trail kind, a DATE's ``YYYY-MM-DD:HH24:MI:SS`` becoming
``YYYY-MM-DD HH24:MI:SS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from trailgate.capture.postgres.types import classify, pg_text_from_trail
from trailgate.model import Column, ColumnKind, datetime_from_julian

__all__ = ["converter_name", "julian_to_text", "text_converter", "text_from_trail"]

_TRAIL_TS = re.compile(rb"^(\d{4}-\d{2}-\d{2}):(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def text_from_trail(value: bytes | None, column: Column) -> str | None:
    """PostgreSQL input text for a trail-form value of ``column`` (``None`` stays NULL)."""
    if value is None:
        return None
    if classify(column.source_type).kind is column.kind:
        return pg_text_from_trail(value, column.source_type)
    return _by_kind(value, column.kind)


def _ascii(value: bytes) -> str:
    return value.decode("ascii")


_utf8: Callable[[bytes], str] = bytes.decode  # UTF-8, and no Python frame around it


def _bool(value: bytes) -> str:
    return "true" if value.decode("ascii") == "1" else "false"


def _raw(value: bytes) -> str:
    return "\\x" + value.hex()


def _pg_datetime(value: bytes, date: bool, tz: bool) -> str:
    """``pg_text_from_trail`` for a PostgreSQL date or timestamp[tz], without the type
    lookup: ``YYYY-MM-DD:HH:MI:SS[.f…]`` → ``YYYY-MM-DD[ HH:MI:SS.ffffff[+00]]``."""
    m = _TRAIL_TS.match(value)
    if m is None:
        return value.decode("utf-8")  # infinity, BC, year > 9999: stored as text
    if date:
        return value[:10].decode("ascii")
    if len(value) == 29:  # capture's form, nine fraction digits: slices, no groups
        text = value[:10] + b" " + value[11:26]
    else:
        day, hh, mi, ss, frac = m.groups()
        text = b"%s %s:%s:%s.%s" % (day, hh, mi, ss, (frac or b"").ljust(9, b"0")[:6])
    return (text + b"+00" if tz else text).decode("ascii")


_NAMES: dict[Callable[[bytes], str], str] = {_utf8: "utf8", _ascii: "ascii", _bool: "bool",
                                             _raw: "raw"}


def text_converter(column: Column) -> Callable[[bytes], str]:
    """``text_from_trail`` for one column, decided once: a function of a non-NULL value.

    Applying a batch converts every value of every change; choosing the conversion per
    column instead of per value (two type parses each) makes that several times cheaper.
    """
    pgtype = classify(column.source_type)
    kind = column.kind
    if pgtype.kind is kind:  # a PostgreSQL source type: the inverse of capture
        if kind is ColumnKind.NUMBER:
            return _bool if pgtype.is_bool else _ascii
        if kind is ColumnKind.RAW:
            return _raw
        if kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP):
            return partial(_pg_datetime, date=kind is ColumnKind.DATE,
                           tz=pgtype.with_time_zone)
        return _utf8
    if kind is ColumnKind.RAW:
        return _raw
    if kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP):
        return partial(_by_kind, kind=kind)
    return _utf8


def converter_name(convert: Callable[[bytes], str]) -> str | None:
    """Which of :func:`text_converter`'s conversions ``convert`` is: ``utf8``, ``ascii``,
    ``bool``, ``raw``, ``date``, ``timestamp`` or ``timestamptz`` (PostgreSQL-sourced
    columns), None for any other (Oracle kinds) — so another implementation (the C set
    planner) can do the same conversion."""
    name = _NAMES.get(convert)
    if name is None and isinstance(convert, partial) and convert.func is _pg_datetime \
            and not convert.args:
        if convert.keywords.get("date"):
            return "date"
        return "timestamptz" if convert.keywords.get("tz") else "timestamp"
    return name


def _by_kind(value: bytes, kind: ColumnKind) -> str:
    """Convert a value whose source type PostgreSQL does not know, by its trail kind."""
    if kind is ColumnKind.RAW:
        return "\\x" + value.hex()
    if kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP):
        m = _TRAIL_TS.match(value)
        if m is None:
            return value.decode("utf-8")
        day, hh, mi, ss, frac = (g.decode("ascii") if g else "" for g in m.groups())
        text = f"{day} {hh}:{mi}:{ss}"
        return f"{text}.{frac.ljust(9, '0')[:6]}" if frac else text
    return value.decode("utf-8")


def julian_to_text(julian_micros: int) -> str | None:
    """GoldenGate Julian microseconds as UTC timestamp text (``2013-03-14 22:39:56.000000``);
    None when the record has no time (0) or it is out of range."""
    if julian_micros <= 0:
        return None
    try:
        when = datetime_from_julian(julian_micros)
    except OverflowError:
        return None
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")


_ORACLE_TYPE = re.compile(
    r"^(?:N?VARCHAR2|N?CHAR|NUMBER|FLOAT|BINARY_(?:FLOAT|DOUBLE)|DATE|TIMESTAMP|RAW|LONG|"
    r"U?ROWID|N?CLOB|BLOB|INTEGER|INT|SMALLINT|DECIMAL|NUMERIC)\b")
_ORACLE_NUMBER = re.compile(r"^(?:NUMBER|DECIMAL|NUMERIC|INTEGER|INT|SMALLINT)"
                            r"(?:\((\d+)(?:,\s*(-?\d+))?\))?$", re.IGNORECASE)


def pg_type_for_source(column: Column) -> str:
    """The PostgreSQL type a target column of ``column`` should have.

    A PostgreSQL source type is kept; other (Oracle) types map by kind: NUMBER(p) with p ≤ 18
    to bigint, NUMBER(p,s) to numeric(p,s), NUMBER to numeric, DATE to timestamp (Oracle DATEs
    have a time), TIMESTAMP(n) to timestamp(n), RAW to bytea, character kinds to text.
    """
    if not _ORACLE_TYPE.match(column.source_type) and classify(
            column.source_type).kind is column.kind:
        return column.source_type
    kind = column.kind
    if kind is ColumnKind.NUMBER:
        m = _ORACLE_NUMBER.match(column.source_type.strip())
        if column.source_type.upper().startswith(("FLOAT", "BINARY_DOUBLE", "BINARY_FLOAT")):
            return "double precision"
        if m and m.group(1):
            p, s = int(m.group(1)), int(m.group(2) or 0)
            if s == 0 and p <= 18:
                return "bigint"
            return f"numeric({p},{s})" if s >= 0 else "numeric"
        if column.source_type.upper().startswith(("INTEGER", "INT", "SMALLINT")):
            return "numeric(38,0)"
        return "numeric"
    if kind is ColumnKind.DATE:
        return "timestamp without time zone"
    if kind is ColumnKind.TIMESTAMP:
        scale = column.scale if column.scale is not None and column.scale <= 6 else 6
        return f"timestamp({scale}) without time zone"
    if kind is ColumnKind.RAW:
        return "bytea"
    return "text"
