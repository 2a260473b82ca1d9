"""``TABLE …, TOKENS (name = expression)``: user tokens computed for each captured change.

GoldenGate evaluates the expressions in the Extract and stores the results in each record's
user-token area, where a Replicat reads them back with ``@TOKEN('name')``.  Everything an
expression can name is known in the capture task: the change, its transaction and the group.
``@GETENV('RECORD', …)`` (the trail position) is not known until the sink writes the
record, so it is refused when the parameter file is read, as an unknown field would be.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from trailgate.errors import ConfigError
from trailgate.model import Change, ColumnKind, OpType, TableDef, datetime_from_julian
from trailgate.params.model import ColumnRef, Expr, FunctionCall, Literal, TableSpec

__all__ = ["GroupEnv", "TokenContext", "check_tokens", "evaluate"]

#: @GETENV('GGHEADER', 'OPTYPE') values, as GoldenGate names the operations.
OPTYPE_NAMES = {
    OpType.INSERT: "INSERT", OpType.UPDATE: "UPDATE", OpType.FIELD_COMP: "SQL COMPUPDATE",
    OpType.PK_UPDATE: "PK FIELD COMP", OpType.DELETE: "DELETE", OpType.TRUNCATE: "TRUNCATE",
    OpType.DDL: "DDL",
}


@dataclass(frozen=True, slots=True)
class GroupEnv:
    """@GETENV('GGENVIRONMENT', …): fixed for the life of the process."""

    group: str
    description: str
    hostname: str
    os_user: str
    process_id: int


@dataclass(slots=True)
class TokenContext:
    """One change in its transaction: what @GETENV's header and transaction fields read."""

    change: Change
    table: TableDef | None
    csn: int
    xid: str
    commit_time: int  # Julian microseconds
    index: int  # 0-based position of the change in its transaction
    count: int  # changes in the transaction


def check_tokens(spec: TableSpec) -> None:
    """Refuse, at start, what an Extract cannot evaluate (file and line in the message)."""
    for token in spec.tokens:
        _check(token.expr, spec)


def _check(expr: Expr, spec: TableSpec) -> None:
    if isinstance(expr, FunctionCall):
        if expr.name == "TOKEN":
            raise ConfigError(f"TABLE {spec.name}: @TOKEN reads a token in a Replicat; an "
                              "Extract sets tokens with TOKENS (name = expression)",
                              path=spec.path, line=spec.line)
        if expr.name == "GETENV" and _literal(expr.args[0]) == "RECORD":
            raise ConfigError(f"TABLE {spec.name}: @GETENV('RECORD', …) is the record's trail "
                              "position, not known when an Extract computes tokens; use "
                              "@GETENV('GGHEADER', 'LOGPOSITION') for the source position",
                              path=spec.path, line=spec.line)


def _literal(expr: Expr) -> str:
    return expr.value if isinstance(expr, Literal) else ""


def _timestamp(julian: int) -> str:
    """GoldenGate's timestamp text: ``YYYY-MM-DD HH:MI:SS.FFFFFF`` (UTC)."""
    return datetime_from_julian(julian).strftime("%Y-%m-%d %H:%M:%S.%f")


def _column(ctx: TokenContext, ref: ColumnRef) -> str | None:
    table = ctx.table
    if table is None:
        return None
    try:
        col = table.column(ref.name) if not ref.quoted else next(
            c for c in table.columns if c.name == ref.name)
    except (KeyError, StopIteration):
        return None
    change = ctx.change
    for image in (change.after, change.before):
        if image and col.index in image:
            value = image[col.index]
            if value is None:
                return None
            return value.hex() if col.kind is ColumnKind.RAW else value.decode(
                "utf-8", "backslashreplace")
    return None


def _indicator(ctx: TokenContext) -> str:
    if ctx.count == 1:
        return "WHOLE"
    if ctx.index == 0:
        return "BEGIN"
    return "END" if ctx.index == ctx.count - 1 else "MIDDLE"


def _getenv(cls: str, name: str, ctx: TokenContext, env: GroupEnv) -> str | None:
    change = ctx.change
    if cls == "GGHEADER":
        if name in ("COMMITTIMESTAMP", "TIMESTAMP"):
            return _timestamp(ctx.commit_time if name == "COMMITTIMESTAMP"
                              else change.io_time or ctx.commit_time)
        if name == "OPTYPE":
            return OPTYPE_NAMES.get(change.op, change.op.label.upper())
        if name == "TABLENAME":
            return change.table
        if name == "OBJECTNAME":
            return change.table.rpartition(".")[2]
        if name == "LOGPOSITION":
            return str(change.audit_pos)
        if name == "LOGRBA":
            return str(change.audit_seq)
        if name == "TRANSACTIONINDICATOR":
            return _indicator(ctx)
        if name == "BEFOREAFTERINDICATOR":
            return "BEFORE" if change.op is OpType.DELETE else "AFTER"
        if name == "RECORDLENGTH":
            size = sum(len(v) for image in (change.before, change.after) if image
                       for v in image.values() if v)
            return str(size)
    elif cls == "TRANSACTION":
        if name == "CSN":
            return str(ctx.csn)
        if name in ("XID", "TRANSACTIONID"):
            return ctx.xid
        return ""  # NAME, USERNAME: PostgreSQL's log does not carry them
    elif cls == "GGENVIRONMENT":
        return {"GROUPNAME": env.group, "GROUPTYPE": "EXTRACT",
                "GROUPDESCRIPTION": env.description, "HOSTNAME": env.hostname,
                "OSUSERNAME": env.os_user, "PROCESSID": str(env.process_id)}.get(name)
    return None


def evaluate(expr: Expr, ctx: TokenContext, env: GroupEnv) -> str | None:
    """The token's text for this change (``None`` is a NULL token value)."""
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, ColumnRef):
        return _column(ctx, expr)
    if expr.name == "GETENV":
        return _getenv(_literal(expr.args[0]), _literal(expr.args[1]), ctx, env)
    if expr.name == "DATENOW":
        return datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return None
