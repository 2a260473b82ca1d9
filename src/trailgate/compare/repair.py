"""Repair SQL: statements that bring a PostgreSQL target in line with the source.

Written only for persistently out-of-sync rows, from the values the confirmation read:
``INSERT`` a missing row, ``DELETE`` an extra one (one copy of a duplicated whole row in a
table without a key), ``UPDATE … SET`` only the differing columns of a different one, each
keyed by the target's key columns.  Values are the source's text with a cast to the target
column's type.  The file is one transaction; applying it (``--apply-repair``) sends it
whole, so PostgreSQL's parser, not a line split, separates the statements.
"""

from __future__ import annotations

from pathlib import Path

from trailgate.capture.postgres.pgoutput import quote_ident
from trailgate.compare.spec import CompareJob, CompareTable
from trailgate.compare.task import Difference
from trailgate.db.connect import connect
from trailgate.errors import TargetError

__all__ = ["apply_repair", "repair_sql"]


def _literal(value: str | None, type_name: str) -> str:
    if value is None:
        return "NULL"
    return "'" + value.replace("'", "''") + f"'::{type_name}"


def _where(table: CompareTable, values: tuple[str | None, ...]) -> str:
    cols = table.key_columns()
    index = {c.source: i for i, c in enumerate(table.columns)}
    parts = []
    for c in cols:
        v = values[index[c.source]]
        parts.append(f"{quote_ident(c.target)} IS NULL" if v is None
                     else f"{quote_ident(c.target)} = {_literal(v, c.target_type)}")
    return " AND ".join(parts)


def _statement(table: CompareTable, d: Difference) -> str | None:
    t = table.target_sql
    if d.kind == "missing" and d.src is not None:
        cols = ", ".join(quote_ident(c.target) for c in table.columns)
        vals = ", ".join(_literal(v, c.target_type) for c, v in zip(table.columns, d.src,
                                                                     strict=True))
        return "\n".join([f"INSERT INTO {t} ({cols}) VALUES ({vals});"] * d.n)
    if d.kind == "extra" and d.tgt is not None:
        if table.key:
            return f"DELETE FROM {t} WHERE {_where(table, d.tgt)};"
        one = (f"DELETE FROM {t} WHERE ctid = (SELECT ctid FROM {t} WHERE "
               f"{_where(table, d.tgt)} LIMIT 1);")
        return "\n".join([one] * d.n)
    if d.kind == "different" and d.src is not None and d.tgt is not None:
        index = {c.source: i for i, c in enumerate(table.columns)}
        sets = ", ".join(
            f"{quote_ident(c.target)} = {_literal(d.src[index[c.source]], c.target_type)}"
            for c in table.columns if c.source in d.columns)
        return f"UPDATE {t} SET {sets} WHERE {_where(table, d.tgt)};"
    return None


def repair_sql(job: CompareJob, diffs: list[Difference]) -> tuple[str, int, int]:
    """The repair script; (text, statements, rows left out for want of values)."""
    lines = [f"-- trailgate compare: repair of REPLICAT {job.replicat}'s target "
             f"{job.describe_target()}", "BEGIN;",
             "SET LOCAL standard_conforming_strings = on;  -- the literals' backslashes"]
    count = skipped = 0
    for d in diffs:
        stmt = _statement(job.tables[d.table], d)
        if stmt is None:
            skipped += 1
            continue
        lines.append(stmt)
        count += 1
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n", count, skipped


def apply_repair(job: CompareJob, path: Path) -> None:
    """Run the repair file against the target, as one transaction.

    The file goes to the server whole, as one simple-protocol script: PostgreSQL's own
    parser splits it, so a value holding a newline, ``--`` or ``BEGIN;`` stays in its
    literal.  An error stops the script and the open transaction is rolled back.
    """
    if job.target_kind != "POSTGRES":
        raise TargetError("repair SQL is for PostgreSQL targets")
    script = path.read_bytes()
    import psycopg
    from psycopg.pq import TransactionStatus

    with connect(job.target, autocommit=True, application_name="trailgate repair") as conn:
        try:
            conn.execute(script)
        except psycopg.Error as exc:
            conn.execute("ROLLBACK")
            raise TargetError(f"the repair failed and was rolled back: "
                              f"{exc.diag.message_primary or exc}") from None
        if conn.info.transaction_status != TransactionStatus.IDLE:
            conn.execute("ROLLBACK")
            raise TargetError(f"the repair file {path} leaves its transaction open (no "
                              "COMMIT at its end): rolled back; write the compare's repair "
                              "file again")
