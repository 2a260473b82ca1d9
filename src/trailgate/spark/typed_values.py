"""Trail-form column values to typed Arrow arrays, a whole column at a time.

The type of a column comes from its table definition, by the same mapping the Delta and
Parquet targets use (``apply.arrow_types.column_arrow_type``).  Values arrive as the trail's
bytes; each column becomes one binary array and Arrow's compute kernels parse it (text to
numbers, decimals, booleans, dates, timestamps), so no Python object is made per converted
value.  A value a kernel refuses (PostgreSQL's ``NaN`` numeric, an ``infinity`` date) is
converted alone and becomes null when the Spark type cannot hold it.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trailgate.apply.arrow_types import column_arrow_type as arrow_type

__all__ = ["arrow_type", "spark_ddl", "to_arrow"]

_SPARK_NAMES = {
    pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint", pa.float32(): "float",
    pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date",
    pa.binary(): "binary", pa.string(): "string", pa.timestamp("us"): "timestamp_ntz",
    pa.timestamp("us", tz="UTC"): "timestamp",
}


def spark_ddl(dtype: pa.DataType) -> str:
    """Spark's DDL name of an Arrow type this module produces."""
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    if pa.types.is_struct(dtype):
        return "struct<" + ", ".join(f"{quote(f.name)}: {spark_ddl(f.type)}"
                                     for f in dtype) + ">"
    return _SPARK_NAMES[dtype]


def quote(name: str) -> str:
    """A column name quoted for Spark DDL."""
    return "`" + name.replace("`", "``") + "`"


def to_arrow(values: list[bytes | None] | pa.Array, dtype: pa.DataType) -> pa.Array:
    """The trail-form ``values`` of one column (bytes, or a binary array) as an array of
    ``dtype``; a value the type cannot hold (not a number, out of its range) is null."""
    data = values if isinstance(values, pa.Array) else pa.array(values, pa.binary())
    if pa.types.is_binary(dtype):
        return data
    try:
        return _convert(data, dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if isinstance(values, pa.Array):
        values = values.to_pylist()
    converted = [_one(v, dtype) for v in values]
    try:
        return pa.array(converted, dtype)
    except (pa.ArrowInvalid, OverflowError):  # a value out of the type's range
        return pa.array([_fits(v, dtype) for v in converted], dtype)


def _fits(value: Any, dtype: pa.DataType) -> Any:
    try:
        pa.array([value], dtype)
    except (pa.ArrowInvalid, OverflowError):
        return None
    return value


def _convert(data: pa.Array, dtype: pa.DataType) -> pa.Array:
    text = data.cast(pa.string())
    if pa.types.is_string(dtype):
        return text
    if pa.types.is_timestamp(dtype):
        seconds = pc.strptime(pc.utf8_slice_codeunits(text, 0, 19), format="%Y-%m-%d:%H:%M:%S",
                              unit="us")
        micros = pc.utf8_rpad(pc.utf8_slice_codeunits(text, 20, 26), 6, "0").cast(pa.int64())
        out = pc.add(seconds, micros.cast(pa.duration("us")))
        return out.cast(dtype)
    if pa.types.is_date(dtype):
        return pc.utf8_slice_codeunits(text, 0, 10).cast(dtype)
    return text.cast(dtype)


def _one(value: bytes | None, dtype: pa.DataType) -> Any:
    """One value the vectorized path refused, or None where the type cannot hold it."""
    if value is None:
        return None
    text = value.decode("utf-8", "backslashreplace")
    try:
        if pa.types.is_string(dtype):
            return text
        if pa.types.is_integer(dtype):
            return int(text)
        if pa.types.is_floating(dtype):
            return float(text)
        if pa.types.is_boolean(dtype):
            return text == "1"
        if pa.types.is_decimal(dtype):
            with localcontext(prec=80):  # decimal(38, s) and beyond, not 28 digits
                number = Decimal(text)
                if not number.is_finite():
                    return None
                return number.quantize(Decimal(1).scaleb(-dtype.scale))
        if pa.types.is_date(dtype):
            return date.fromisoformat(text[:10])
        if pa.types.is_timestamp(dtype):
            stamp = datetime.strptime(text[:19], "%Y-%m-%d:%H:%M:%S")
            return stamp.replace(microsecond=int(text[20:26].ljust(6, "0") or 0))
    except (ValueError, InvalidOperation, OverflowError):
        return None
    return None
