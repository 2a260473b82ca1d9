"""COLMAP expressions and MAP ... WHERE conditions, compiled once per table mapping.

An expression compiles to a function of ``(record, image)`` returning PostgreSQL input text,
``None`` (NULL) or :data:`ABSENT` (a source column the record does not carry, as in a
compressed update: the target column is then left alone).  Column references are resolved
against the source definition when the mapping is built, so an unknown column is a
``ConfigError`` at start, naming the MAP's file and line.
"""

from __future__ import annotations

import enum
import getpass
import operator
import os
import socket
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from trailgate.apply.records import TrailChange
from trailgate.apply.values import julian_to_text, text_converter
from trailgate.errors import ConfigError
from trailgate.model import Column, OpType, TableDef, Values
from trailgate.params.model import (
    ColumnRef,
    Compare,
    Condition,
    Expr,
    FunctionCall,
    Literal,
    Logical,
    MapSpec,
)

__all__ = ["ABSENT", "Evaluator", "Value", "compile_condition", "compile_expr",
           "find_source_column", "optype_name"]


class _Absent(enum.Enum):
    """The type of ABSENT: a one-member enum, so that ``x is ABSENT`` narrows ``x``'s type."""

    ABSENT = 0

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent.ABSENT
Value = str | None | _Absent
Evaluator = Callable[[TrailChange, Values], Value]

_OPTYPE_NAMES = {
    OpType.INSERT: "INSERT",
    OpType.UPDATE: "UPDATE",
    OpType.FIELD_COMP: "SQL COMPUPDATE",
    OpType.PK_UPDATE: "PK UPDATE",
    OpType.DELETE: "DELETE",
    OpType.TRUNCATE: "TRUNCATE",
}


def optype_name(op: OpType) -> str:
    """What ``@GETENV('GGHEADER', 'OPTYPE')`` returns (GoldenGate's names)."""
    return _OPTYPE_NAMES.get(op, f"TYPE {int(op)}")


def find_source_column(table: TableDef, ref: ColumnRef) -> Column | None:
    """The source column a reference names: exact if quoted, else case-insensitively."""
    for col in table.columns:
        if col.name == ref.name:
            return col
    if not ref.quoted:
        lowered = ref.name.lower()
        for col in table.columns:
            if col.name.lower() == lowered:
                return col
    return None


def _commit_time(tc: TrailChange) -> int:
    return tc.commit_time or tc.change.io_time


def _getenv(info: str, field: str, group: str) -> Evaluator:
    """One ``@GETENV(info, field)``: a function of the record (or a constant)."""
    def const(value: str | None) -> Evaluator:
        return lambda tc, image: value

    table: dict[tuple[str, str], Evaluator] = {
        ("GGHEADER", "COMMITTIMESTAMP"): lambda tc, im: julian_to_text(_commit_time(tc)),
        ("GGHEADER", "TIMESTAMP"): lambda tc, im: julian_to_text(tc.change.io_time),
        ("GGHEADER", "OPTYPE"): lambda tc, im: optype_name(tc.change.op),
        ("GGHEADER", "TABLENAME"): lambda tc, im: tc.change.table,
        ("GGHEADER", "OBJECTNAME"): lambda tc, im: tc.change.table,
        ("GGHEADER", "LOGPOSITION"): lambda tc, im: str(tc.change.audit_pos),
        ("GGHEADER", "LOGRBA"): lambda tc, im: str(tc.change.audit_seq),
        ("GGHEADER", "TRANSACTIONINDICATOR"): lambda tc, im: str(tc.trans_ind),
        ("GGHEADER", "BEFOREAFTERINDICATOR"): lambda tc, im: (
            "BEFORE" if tc.change.op is OpType.DELETE else "AFTER"),
        ("GGHEADER", "RECORDLENGTH"): lambda tc, im: (
            None if tc.record_length is None else str(tc.record_length)),
        ("TRANSACTION", "CSN"): lambda tc, im: str(tc.csn),
        ("TRANSACTION", "XID"): lambda tc, im: tc.xid,
        ("TRANSACTION", "TRANSACTIONID"): lambda tc, im: tc.xid,
        ("TRANSACTION", "NAME"): const(None),
        ("TRANSACTION", "USERNAME"): const(None),
        ("GGENVIRONMENT", "GROUPNAME"): const(group),
        ("GGENVIRONMENT", "GROUPTYPE"): const("REPLICAT"),
        ("GGENVIRONMENT", "GROUPDESCRIPTION"): const(None),
        ("GGENVIRONMENT", "HOSTNAME"): const(socket.gethostname()),
        ("GGENVIRONMENT", "OSUSERNAME"): const(_os_user()),
        ("GGENVIRONMENT", "PROCESSID"): lambda tc, im: str(os.getpid()),
        ("RECORD", "FILESEQNO"): lambda tc, im: str(tc.position.seqno),
        ("RECORD", "FILERBA"): lambda tc, im: str(tc.position.rba),
        ("RECORD", "TIMESTAMP"): lambda tc, im: julian_to_text(tc.change.io_time),
    }
    try:
        return table[(info, field)]
    except KeyError:
        raise ValueError(f"@GETENV('{info}', '{field}') is not supported") from None


def _os_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def compile_expr(expr: Expr, source: TableDef, spec: MapSpec, group: str) -> Evaluator:
    """Compile one COLMAP/WHERE expression against ``source``'s columns."""
    if isinstance(expr, Literal):
        text = expr.value
        return lambda tc, image: text
    if isinstance(expr, ColumnRef):
        col = find_source_column(source, expr)
        if col is None:
            raise ConfigError(
                f"MAP {spec.source}: source table {source.qualified_name} has no column "
                f"{expr.name}; columns are {', '.join(c.name for c in source.columns)}",
                path=spec.path or None, line=spec.line or None)
        index = col.index
        convert = text_converter(col)

        def column(tc: TrailChange, image: Values) -> Value:
            value = image.get(index, ABSENT)
            if value is None or value is ABSENT:
                return value
            return convert(value)
        return column
    if isinstance(expr, FunctionCall):
        args = [a.value for a in expr.args if isinstance(a, Literal)]
        if expr.name == "GETENV":
            try:
                return _getenv(args[0].upper(), args[1].upper(), group)
            except (ValueError, IndexError) as exc:
                raise ConfigError(f"MAP {spec.source}: {exc}", path=spec.path or None,
                                  line=spec.line or None) from None
        if expr.name == "TOKEN":
            name = args[0]
            # a record without the token leaves the column alone (as an absent column does)
            return lambda tc, image: (tc.change.tokens or {}).get(name, ABSENT)
        if expr.name == "DATENOW":
            return lambda tc, image: datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        if expr.name == "NULL":
            return lambda tc, image: None
        raise ConfigError(f"MAP {spec.source}: @{expr.name} cannot be used here",
                          path=spec.path or None, line=spec.line or None)
    raise ConfigError(f"MAP {spec.source}: unsupported expression {expr!r}",
                      path=spec.path or None, line=spec.line or None)


Predicate = Callable[[TrailChange, Values], bool]


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except (InvalidOperation, ValueError):
        return None


# two str or two Decimal (compare() below decides which)
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, ">": operator.gt,
    "<=": operator.le, ">=": operator.ge,
}


def _presence(expr: Expr) -> str | None:
    if isinstance(expr, FunctionCall) and expr.name in ("NULL", "PRESENT", "ABSENT"):
        return expr.name
    return None


def compile_condition(cond: Condition, source: TableDef, spec: MapSpec,
                      group: str) -> Predicate:
    """Compile a WHERE condition. ``col = @NULL|@PRESENT|@ABSENT`` test presence; other
    comparisons compare numerically when both sides are numbers, else as text, and are false
    when either side is NULL or absent (SQL's rule)."""
    if isinstance(cond, Logical):
        parts = [compile_condition(c, source, spec, group) for c in cond.items]
        if cond.op == "AND":
            return lambda tc, image: all(p(tc, image) for p in parts)
        return lambda tc, image: any(p(tc, image) for p in parts)
    assert isinstance(cond, Compare)
    op = _COMPARE[cond.op]
    presence = _presence(cond.right) or _presence(cond.left)
    if presence is not None:
        other = cond.left if _presence(cond.right) else cond.right
        ev = compile_expr(other, source, spec, group)
        negate = cond.op == "<>"

        def test(tc: TrailChange, image: Values) -> bool:
            value = ev(tc, image)
            if presence == "NULL":
                hit = value is None
            elif presence == "PRESENT":
                hit = value is not ABSENT
            else:
                hit = value is ABSENT
            return hit != negate
        return test
    left = compile_expr(cond.left, source, spec, group)
    right = compile_expr(cond.right, source, spec, group)

    def compare(tc: TrailChange, image: Values) -> bool:
        a, b = left(tc, image), right(tc, image)
        if not isinstance(a, str) or not isinstance(b, str):
            return False
        na, nb = _number(a), _number(b)
        if na is not None and nb is not None:
            return op(na, nb)
        return op(a, b)
    return compare
