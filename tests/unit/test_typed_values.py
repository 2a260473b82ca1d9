"""Typed trail values where the vectorized cast gives up: one odd value (a NaN, a number
out of its column's range) makes that value null, never the others, never an Arrow error
out of a Spark task."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from trailgate.spark.typed_values import to_arrow

WIDE = b"1234567890123456789012345678901.5"  # 32 digits: past Decimal's default 28


def test_a_nan_keeps_the_wide_decimals_beside_it():
    got = to_arrow([b"NaN", WIDE, None], pa.decimal128(38, 1)).to_pylist()
    assert got == [None, Decimal(WIDE.decode()), None]


def test_values_out_of_range_are_null():
    assert to_arrow([b"12", b"99999", b"x"], pa.int16()).to_pylist() == [12, None, None]
    got = to_arrow([b"12345678901.00", b"1.50"], pa.decimal128(10, 2)).to_pylist()
    assert got == [None, Decimal("1.50")]
