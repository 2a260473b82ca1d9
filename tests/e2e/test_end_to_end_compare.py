"""The end-to-end checks are only as good as their comparison: the same value in PostgreSQL's
and Delta's forms must compare equal, and any real difference must show."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from trailgate.demo.compare import (
    Column,
    Side,
    TableComparison,
    _diff,
    canonical,
    content_hash,
    render_comparison,
)


def c(type_: str) -> Column:
    return Column("x", type_)


def test_the_same_value_in_postgresql_and_delta_forms_is_equal() -> None:
    pairs = [
        ("numeric", Decimal("9000"), "9000"),  # Delta: unconstrained numeric as text
        ("numeric(12,2)", Decimal("7500.50"), Decimal("7500.5")),
        ("real", 1.2300000190734863, 1.23),                # a float32 either way
        ("double precision", float("nan"), float("nan")),
        ("character(8)", "ab      ", "ab"),                # char(n) padding
        ("json", '{"b": 1, "a": [1.0, "x"]}', '{"a":[1,"x"],"b":1}'),
        ("jsonb", "null", "null"),
        ("timestamp with time zone",
         dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
         dt.datetime(2026, 11, 21, 8, 0, tzinfo=dt.UTC)),
        ("timestamp without time zone", dt.datetime(2026, 1, 2, 3, 4, 5, 6),
         "2026-01-02T03:04:05.000006"),
        ("bytea", b"\x00\xff", "\\x00FF"),
        ("uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
         "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("date", dt.date(1900, 1, 1), "1900-01-01"),
        ("boolean", True, True),
    ]
    for type_, pg, delta in pairs:
        assert canonical(c(type_), pg) == canonical(c(type_), delta), type_


def test_differences_are_not_hidden() -> None:
    different = [
        ("numeric", Decimal("9000"), "9000.01"),
        ("real", 1.23, 1.24),
        ("text", "ab  ", "ab"),                           # text keeps its spaces
        ("json", "null", None),                            # JSON null is not SQL NULL
        ("jsonb", '{"a": 1}', '{"a": "1"}'),
        ("text", "", None),                                # empty is not NULL
        ("timestamp with time zone", dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
         dt.datetime(2026, 1, 1, 0, 0, 1, tzinfo=dt.UTC)),
        ("bytea", b"\x00", b""),
    ]
    for type_, a, b in different:
        assert canonical(c(type_), a) != canonical(c(type_), b), (type_, a, b)


def test_missing_extra_and_duplicate_rows_are_reported() -> None:
    cols = [Column("id", "integer"), Column("v", "text")]
    source = [(1, "a"), (2, "b"), (3, "c")]
    assert _diff(cols, source, list(source)) == []
    diff = _diff(cols, source, [(1, "a"), (2, "B"), (3, "c"), (3, "c")])
    assert diff[0] == "1 row(s) missing or different, 2 unexpected"
    assert any("'v': 'b'" in line for line in diff)
    assert _diff(cols, source, None) == ["the table does not exist"]
    assert content_hash(source) != content_hash(source[:2])

    cmp = TableComparison("s.t", cols, Side("source", source),
                          [Side("Delta", source[:2])], {"Delta": _diff(cols, source,
                                                                       source[:2])})
    text = "\n".join(render_comparison([cmp]))
    assert "✗" in text and "s.t vs Delta: 1 row(s) missing" in text
    assert not cmp.equal
