"""PostgreSQL-spelled types <-> Arrow types, and PostgreSQL input text -> Arrow values.

Delta tables, Parquet change logs and typed Spark reads of a trail store typed values; the
apply layer's values are PostgreSQL input text (see ``values``).  These functions are the one
place that types a column and converts, so a table read typed from its trail and the same
table replicated into Delta have the same schema.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from trailgate.apply.values import pg_type_for_source
from trailgate.model import Column

__all__ = ["arrow_type", "column_arrow_type", "converter", "pg_type_of_arrow"]

_SIMPLE: dict[str, pa.DataType] = {
    "smallint": pa.int16(), "integer": pa.int32(), "bigint": pa.int64(), "oid": pa.int64(),
    "real": pa.float32(), "double precision": pa.float64(), "boolean": pa.bool_(),
    "date": pa.date32(), "bytea": pa.binary(), "text": pa.string(),
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),
}


def arrow_type(type_name: str) -> pa.DataType:
    """The Delta column type for a PostgreSQL-spelled type.

    numeric(p,s) with p ≤ 38 is a decimal; unconstrained numeric stays exact as a string;
    timestamps are microseconds (with time zone: UTC); anything unknown is a string.
    """
    t = type_name.strip().lower()
    if t in _SIMPLE:
        return _SIMPLE[t]
    if t.startswith("numeric(") or t.startswith("decimal("):
        p, _, s = t[t.index("(") + 1:-1].partition(",")
        precision, scale = int(p), int(s or 0)
        if precision <= 38:
            return pa.decimal128(precision, scale)
        return pa.string()
    if t.startswith("timestamp") and "with time zone" in t and "without" not in t:
        return pa.timestamp("us", tz="UTC")
    if t.startswith("timestamp"):
        return pa.timestamp("us")
    return pa.string()


def column_arrow_type(column: Column) -> pa.DataType:
    """The Arrow type of a trail column's values: its PostgreSQL target type's
    (:func:`~trailgate.apply.values.pg_type_for_source`, which maps Oracle types by kind)."""
    return arrow_type(pg_type_for_source(column))


def pg_type_of_arrow(dtype: pa.DataType) -> str:
    """An existing Delta column's type in PostgreSQL's spelling (for the mapping)."""
    if pa.types.is_int8(dtype) or pa.types.is_int16(dtype):
        return "smallint"
    if pa.types.is_int32(dtype):
        return "integer"
    if pa.types.is_int64(dtype):
        return "bigint"
    if pa.types.is_decimal(dtype):
        return f"numeric({dtype.precision},{dtype.scale})"
    if pa.types.is_float32(dtype):
        return "real"
    if pa.types.is_float64(dtype):
        return "double precision"
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_date(dtype):
        return "date"
    if pa.types.is_timestamp(dtype):
        return ("timestamp with time zone" if dtype.tz else "timestamp without time zone")
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "bytea"
    return "text"


def converter(dtype: pa.DataType) -> Callable[[str], Any]:
    """PostgreSQL input text -> the Python value Arrow stores for ``dtype``."""
    if pa.types.is_integer(dtype):
        def to_int(text: str) -> int:
            number = Decimal(text)
            if number != number.to_integral_value():
                raise ValueError(f"{text!r} is not an integer")
            return int(number)
        return to_int
    if pa.types.is_decimal(dtype):
        exp = Decimal(1).scaleb(-dtype.scale)
        return lambda text: Decimal(text).quantize(exp)
    if pa.types.is_floating(dtype):
        return float
    if pa.types.is_boolean(dtype):
        return lambda text: text.strip().lower() in ("t", "true", "1", "y", "yes", "on")
    if pa.types.is_date(dtype):
        return lambda text: date.fromisoformat(text[:10])
    if pa.types.is_timestamp(dtype):
        aware = dtype.tz is not None

        def to_ts(text: str) -> datetime:
            value = datetime.fromisoformat(text)
            if aware:
                return value.replace(tzinfo=UTC) if value.tzinfo is None else value
            if value.tzinfo is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            return value
        return to_ts
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return lambda text: (bytes.fromhex(text[2:]) if text.startswith("\\x")
                             else text.encode("utf-8"))
    return lambda text: text
