"""Oracle internal formats -> trail form (seed 003's values and Oracle's documented rules)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trailgate.capture.oracle.datatypes import (
    decode_date,
    decode_number,
    decode_text,
    decode_timestamp,
    encode_date,
    encode_number,
    to_trail,
)
from trailgate.model import ColumnKind


@pytest.mark.parametrize(("hexed", "text"), [
    ("c2 0b 0c", "1011"),  # seed 003 STUDENT_KEY
    ("c2 15 0e", "2013"),  # ENTRY_YEAR
    ("c2 5b", "9000"),  # TUITION_FEE
    ("c2 3d", "6000"),
    ("c2 4c", "7500"),
    ("c3 0b", "100000"),  # seed 003's first example: c3 0b
    ("80", "0"),
    ("c1 02", "1"),
    ("c1 64", "99"),
    ("c0 33", "0.5"),
    ("c0 02", "0.01"),
    ("bf 0b", "0.001"),
    ("bf 02", "0.0001"),
    ("c1 02 1a", "1.25"),
    ("3e 64 66", "-1"),  # negative: complemented exponent, 101 - digit, 0x66 terminator
    ("3d 5b 5a 66", "-1011"),
    ("3f 33 66", "-0.5"),
    ("3e 63 4c 66", "-2.25"),
])
def test_number_decodes(hexed, text):
    assert decode_number(bytes.fromhex(hexed)) == text.encode()


@pytest.mark.parametrize("hexed", ["", "c2 00", "c2 0b 01", "3e 64", "ff 65", "00", "c2 66"])
def test_number_rejects_bytes_oracle_never_writes(hexed):
    with pytest.raises(ValueError):
        decode_number(bytes.fromhex(hexed))


def test_number_negative_of_twenty_digits_has_no_terminator():
    value = -int("12" * 20)
    raw = encode_number(value)
    assert raw[-1] != 0x66 and len(raw) == 21
    assert decode_number(raw) == str(value).encode()


@given(st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1))
def test_number_round_trips_integers(value):
    assert decode_number(encode_number(value)) == str(value).encode()


@given(st.decimals(allow_nan=False, allow_infinity=False, places=6,
                   min_value=Decimal("-1e20"), max_value=Decimal("1e20")))
def test_number_round_trips_decimals(value):
    text = decode_number(encode_number(value)).decode()
    assert Decimal(text) == value
    # canonical form: no exponent, no trailing fraction zeros, a digit before the point
    assert "E" not in text and not (("." in text) and text.endswith("0"))
    assert not text.lstrip("-").startswith(".")


def test_date_and_timestamp():
    assert decode_date(bytes([120, 113, 3, 31, 24, 60, 59])) == b"2013-03-31:23:59:58"
    assert encode_date(datetime(2013, 3, 31, 23, 59, 58)) == bytes([120, 113, 3, 31, 24, 60, 59])
    ts = bytes([120, 113, 4, 1, 1, 56, 1]) + (123456789).to_bytes(4, "big")
    assert decode_timestamp(ts) == b"2013-04-01:00:55:00.123456789"
    assert decode_timestamp(ts[:7]) == b"2013-04-01:00:55:00.000000000"
    with pytest.raises(ValueError):
        decode_date(bytes([120, 113, 2, 30, 1, 1, 1]))  # 30 February
    with pytest.raises(ValueError):
        decode_date(bytes([120, 113, 3, 31, 24, 60]))  # 6 bytes


def test_text_in_database_charset():
    assert decode_text(b"Jordan", "AL32UTF8") == b"Jordan"
    assert decode_text("Zoë".encode(), "AL32UTF8") == "Zoë".encode()
    assert decode_text(b"Zo\xeb", "WE8ISO8859P1") == "Zoë".encode()
    with pytest.raises(ValueError):
        decode_text(b"Zo\xeb", "AL32UTF8")


def test_to_trail_by_kind():
    assert to_trail(None, ColumnKind.NUMBER, "AL32UTF8") is None
    assert to_trail(bytes.fromhex("c2 0b 0c"), ColumnKind.NUMBER, "AL32UTF8") == b"1011"
    assert to_trail(b"\x01\xff", ColumnKind.RAW, "AL32UTF8") == b"\x01\xff"
    assert to_trail(b"M", ColumnKind.CHAR, "AL32UTF8") == b"M"
