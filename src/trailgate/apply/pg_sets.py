"""Running a :class:`~trailgate.apply.setplan.SetPlan` on PostgreSQL: COPY and joins.

Inserts are copied straight into the target; updates and deletes copy their keys into a
temporary stage table (one per shape and connection, ``ON COMMIT DELETE ROWS``) and run one
``UPDATE … FROM`` or ``DELETE … USING`` joined on the key.  Every statement checks that each
staged row met exactly one target row, else it raises :class:`Deviation` and the caller
applies row by row.  The joins run with a low ``random_page_cost`` so they probe the key's
index: docs/replicat.md, "PostgreSQL target".
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from trailgate.apply.setplan import CopyRows, SetPlan

__all__ = ["JOIN_RANDOM_PAGE_COST", "Deviation", "Stages", "run_plan", "stage_shapes"]

#: The planner's ``random_page_cost`` for the stage joins (see above).
JOIN_RANDOM_PAGE_COST = 1.1

Conn = psycopg.Connection[Any]
Cursor = psycopg.Cursor[Any]
Shape = tuple[str, str, str, tuple[str, ...]]  # (schema, table, purpose, columns)


class Deviation(Exception):
    """The target is not as the set plan expects (a collision, or an error): roll back and
    apply the partition one change at a time."""


def stage_shapes(plan: SetPlan) -> list[Shape]:
    """The stage tables a plan needs."""
    t = plan.mapping.target
    out: list[Shape] = []
    if plan.delete_first:
        out.append((t.schema, t.name, "delete_first", plan.key_columns))
    for sets in plan.updates:
        out.append((t.schema, t.name, "update", plan.key_columns + sets))
    if plan.delete_last:
        out.append((t.schema, t.name, "delete_last", plan.key_columns))
    return out


class Stages:
    """This connection's stage tables, by shape; named after the shape (a hash), so a
    table made earlier on the same connection is the right one."""

    def __init__(self, conn: Conn):
        self.conn = conn
        self.names: dict[Shape, sql.Identifier] = {}
        self.used: set[Shape] = set()
        self.join_setting: sql.Composed | None = None  # SET LOCAL for the joins, if any
        self._checked = False
        self._joins_set = False
        self._generation = 0  # bumped by DDL: stage tables made before keep old types

    def invalidate(self) -> None:
        """After DDL on the target: the next stage tables are new ones (a column's type
        may have changed, which a shape does not show)."""
        self._generation += 1
        self.names.clear()

    def ensure(self, shapes: Iterable[Shape]) -> None:
        """Create missing stage tables (autocommit; before the partition's transaction);
        raises Deviation if PostgreSQL refuses."""
        if not self._checked:
            self._checked = True
            row = self.conn.execute("SELECT current_setting('random_page_cost')::float8"
                                    ).fetchone()
            if row is not None and float(row[0]) > JOIN_RANDOM_PAGE_COST:
                self.join_setting = sql.SQL("SET LOCAL random_page_cost = {}").format(
                    sql.Literal(str(JOIN_RANDOM_PAGE_COST)))
        for shape in shapes:
            if shape in self.names:
                continue
            schema, table, _, columns = shape
            digest = zlib.crc32(repr((shape, self._generation) if self._generation else shape
                                     ).encode("utf-8", "surrogatepass"))
            name = sql.Identifier(f"trailgate_stage_{digest:08x}")
            try:
                self.conn.execute(sql.SQL(
                    "CREATE TEMPORARY TABLE IF NOT EXISTS {} ON COMMIT DELETE ROWS AS "
                    "SELECT {} FROM {} WITH NO DATA").format(
                        name, sql.SQL(", ").join(map(sql.Identifier, columns)),
                        sql.Identifier(schema, table)))
            except psycopg.OperationalError:
                raise
            except psycopg.Error as exc:  # e.g. no TEMPORARY privilege: go row by row
                raise Deviation(f"cannot create a stage table: {exc}") from None
            self.names[shape] = name

    def begin(self) -> None:
        """A new attempt: every stage is empty (a transaction's first use, or rolled back)."""
        self.used.clear()
        self._joins_set = False

    def joins(self, cur: Cursor) -> None:
        """Before a stage join: this transaction's planner setting (once)."""
        if self.join_setting is not None and not self._joins_set:
            cur.execute(self.join_setting)
            self._joins_set = True

    def take(self, cur: Cursor, shape: Shape) -> sql.Identifier:
        """The stage for ``shape``, emptied if this transaction used it already (two MAPs
        into one target table)."""
        name = self.names[shape]
        if shape in self.used:
            cur.execute(sql.SQL("DELETE FROM {}").format(name))
        self.used.add(shape)
        return name


def run_plan(cur: Cursor, stages: Stages, plan: SetPlan) -> None:
    """Apply the plan's four phases (not ``plan.ordered``); raises Deviation."""
    t = plan.mapping.target
    table = sql.Identifier(t.schema, t.name)
    keys = plan.key_columns
    if plan.delete_first or plan.updates or plan.delete_last:
        stages.joins(cur)
    if plan.delete_first:
        shape = (t.schema, t.name, "delete_first", keys)
        _delete(cur, table, stages.take(cur, shape), keys, plan.delete_first)
    for cols, rows in plan.inserts.items():
        _copy(cur, table, cols, rows)
    for sets, rows in plan.updates.items():
        shape = (t.schema, t.name, "update", keys + sets)
        _update(cur, table, stages.take(cur, shape), keys, sets, rows)
    if plan.delete_last:
        shape = (t.schema, t.name, "delete_last", keys)
        _delete(cur, table, stages.take(cur, shape), keys, plan.delete_last)


Rows = Sequence[tuple[Any, ...]] | CopyRows


def _copy(cur: Cursor, table: sql.Composable, columns: Sequence[str], rows: Rows) -> None:
    query = sql.SQL("COPY {} ({}) FROM STDIN").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns)))
    try:
        with cur.copy(query) as copy:
            if isinstance(rows, CopyRows):
                copy.write(rows.data)
                return
            write = copy.write_row
            for row in rows:
                write(row)
    except psycopg.OperationalError:
        raise
    except psycopg.Error as exc:
        raise Deviation(str(exc)) from None


def _join(table: sql.Composable, keys: Sequence[str]) -> sql.Composable:
    return sql.SQL(" AND ").join(
        sql.SQL("{}.{} = s.{}").format(table, sql.Identifier(k), sql.Identifier(k))
        for k in keys)


def _check(cur: Cursor, statement: sql.Composable, expected: int) -> None:
    """Run ``statement`` (returning the stage rows' ctids) and check each staged row met
    exactly one target row."""
    query = sql.SQL("WITH done AS ({}) SELECT count(*), count(DISTINCT ctid) FROM done"
                    ).format(statement)
    try:
        row = cur.execute(query).fetchone()
    except psycopg.OperationalError:
        raise
    except psycopg.Error as exc:
        raise Deviation(str(exc)) from None
    if row is None or row[0] != expected or row[1] != expected:
        raise Deviation(f"{expected} rows staged, {row[1] if row else 0} found")


def _delete(cur: Cursor, table: sql.Composable, stage: sql.Identifier,
            keys: Sequence[str], rows: Rows) -> None:
    _copy(cur, stage, keys, rows)
    _check(cur, sql.SQL("DELETE FROM {} USING {} s WHERE {} RETURNING s.ctid").format(
        table, stage, _join(table, keys)), len(rows))


def _update(cur: Cursor, table: sql.Composable, stage: sql.Identifier,
            keys: Sequence[str], sets: Sequence[str], rows: Rows) -> None:
    _copy(cur, stage, (*keys, *sets), rows)
    if sets:
        assign = sql.SQL(", ").join(sql.SQL("{} = s.{}").format(
            sql.Identifier(c), sql.Identifier(c)) for c in sets)
    else:  # only the key: still find the row (a missing row is a collision)
        assign = sql.SQL("{} = s.{}").format(sql.Identifier(keys[0]), sql.Identifier(keys[0]))
    _check(cur, sql.SQL("UPDATE {} SET {} FROM {} s WHERE {} RETURNING s.ctid").format(
        table, assign, stage, _join(table, keys)), len(rows))
