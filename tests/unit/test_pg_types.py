"""PostgreSQL text <-> trail form: the doc's table, special values, and round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trailgate.capture.postgres.types import classify, pg_text_from_trail, trail_from_pg_text
from trailgate.model import ColumnKind


@pytest.mark.parametrize(("source_type", "kind", "length", "precision", "scale"), [
    ("smallint", ColumnKind.NUMBER, None, None, None),
    ("numeric(10,2)", ColumnKind.NUMBER, None, 10, 2),
    ("numeric(5)", ColumnKind.NUMBER, None, 5, 0),
    ("double precision", ColumnKind.NUMBER, None, None, None),
    ("boolean", ColumnKind.NUMBER, None, 1, 0),
    ("character(5)", ColumnKind.CHAR, 5, None, None),
    ("character varying(30)", ColumnKind.VARCHAR2, 30, None, None),
    ("text", ColumnKind.VARCHAR2, None, None, None),
    ("jsonb", ColumnKind.VARCHAR2, None, None, None),
    ("integer[]", ColumnKind.VARCHAR2, None, None, None),
    ("date", ColumnKind.DATE, None, None, None),
    ("timestamp without time zone", ColumnKind.TIMESTAMP, None, None, 6),
    ("timestamp(3) with time zone", ColumnKind.TIMESTAMP, None, None, 3),
    ("bytea", ColumnKind.RAW, None, None, None),
])
def test_classify(source_type: str, kind: ColumnKind, length: int | None,
                  precision: int | None, scale: int | None) -> None:
    t = classify(source_type)
    assert (t.kind, t.length, t.precision, t.scale) == (kind, length, precision, scale)


@pytest.mark.parametrize(("source_type", "text", "trail"), [
    ("integer", "-42", b"-42"),
    ("numeric(10,2)", "1011.50", b"1011.50"),
    ("real", "-Infinity", b"-Infinity"),
    ("double precision", "NaN", b"NaN"),
    ("boolean", "t", b"1"),
    ("boolean", "f", b"0"),
    ("character(5)", "ab", b"ab   "),
    ("text", "Zürich", "Zürich".encode()),
    ("date", "2024-02-29", b"2024-02-29:00:00:00"),
    ("date", "infinity", b"infinity"),
    ("date", "0044-03-15 BC", b"0044-03-15 BC"),
    ("timestamp without time zone", "2024-02-29 13:14:15.5", b"2024-02-29:13:14:15.500000000"),
    ("timestamp without time zone", "2024-02-29 13:14:15", b"2024-02-29:13:14:15.000000000"),
    ("timestamp with time zone", "2024-02-29 13:14:15.123456+00",
     b"2024-02-29:13:14:15.123456000"),
    ("timestamp with time zone", "2024-03-01 01:30:00+05:30", b"2024-02-29:20:00:00.000000000"),
    ("timestamp with time zone", "-infinity", b"-infinity"),
    ("bytea", "\\x00ff10", b"\x00\xff\x10"),
])
def test_to_trail(source_type: str, text: str, trail: bytes) -> None:
    assert trail_from_pg_text(text, classify(source_type)) == trail


def test_to_trail_fixed_forms_have_fixed_lengths() -> None:
    assert len(trail_from_pg_text("2024-01-01", classify("date"))) == 19
    ts = trail_from_pg_text("2024-01-01 00:00:00", classify("timestamp without time zone"))
    assert len(ts) == 29
    assert len(trail_from_pg_text("10000-01-01", classify("date"))) != 19


@pytest.mark.parametrize(("source_type", "trail", "text"), [
    ("boolean", b"1", "true"),
    ("boolean", b"0", "false"),
    ("date", b"2024-02-29:00:00:00", "2024-02-29"),
    ("timestamp with time zone", b"2024-02-29:20:00:00.123456000",
     "2024-02-29 20:00:00.123456+00"),
    ("bytea", b"\x00\xff", "\\x00ff"),
    ("date", b"infinity", "infinity"),
])
def test_to_pg_text(source_type: str, trail: bytes, text: str) -> None:
    assert pg_text_from_trail(trail, source_type) == text


def _pg_timestamp(dt: datetime) -> str:
    """PostgreSQL's ISO output: fraction without trailing zeros, none when zero."""
    text = dt.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0")
    if dt.microsecond:
        text += f".{dt.microsecond:06d}".rstrip("0")
    return text


@given(st.integers(-(2**63), 2**63 - 1))
def test_round_trip_bigint(n: int) -> None:
    text = str(n)
    assert pg_text_from_trail(trail_from_pg_text(text, classify("bigint")), "bigint") == text


@given(st.decimals(allow_nan=False, allow_infinity=False, places=4))
def test_round_trip_numeric(d: Decimal) -> None:
    text = f"{d:f}"
    t = "numeric(30,4)"
    assert pg_text_from_trail(trail_from_pg_text(text, classify(t)), t) == text


@given(st.text())
def test_round_trip_text(s: str) -> None:
    assert pg_text_from_trail(trail_from_pg_text(s, classify("text")), "text") == s


@given(st.binary())
def test_round_trip_bytea(b: bytes) -> None:
    text = "\\x" + b.hex()
    trail = trail_from_pg_text(text, classify("bytea"))
    assert trail == b
    assert pg_text_from_trail(trail, "bytea") == text


@given(st.booleans())
def test_round_trip_bool(b: bool) -> None:
    trail = trail_from_pg_text("t" if b else "f", classify("boolean"))
    assert pg_text_from_trail(trail, "boolean") == ("true" if b else "false")


@given(st.dates())
def test_round_trip_date(d) -> None:  # type: ignore[no-untyped-def]
    text = f"{d.year:04d}-{d.month:02d}-{d.day:02d}"
    assert pg_text_from_trail(trail_from_pg_text(text, classify("date")), "date") == text


@given(st.datetimes())
def test_round_trip_timestamp(dt: datetime) -> None:
    t = "timestamp without time zone"
    back = pg_text_from_trail(trail_from_pg_text(_pg_timestamp(dt), classify(t)), t)
    assert datetime.fromisoformat(back) == dt


@given(st.datetimes(timezones=st.just(UTC)))
def test_round_trip_timestamptz(dt: datetime) -> None:
    t = "timestamp with time zone"
    back = pg_text_from_trail(trail_from_pg_text(_pg_timestamp(dt) + "+00", classify(t)), t)
    assert datetime.fromisoformat(back) == dt


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" "),
               max_size=8))
def test_round_trip_char_pads(s: str) -> None:
    t = "character(8)"
    trail = trail_from_pg_text(s, classify(t))
    assert len(trail.decode()) == max(8, len(s))
    assert pg_text_from_trail(trail, t).rstrip(" ") == s
