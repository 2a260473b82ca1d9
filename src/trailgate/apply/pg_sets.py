"""Running :class:`~trailgate.apply.setplan.SetPlan` s on PostgreSQL: COPY and joins.

Many inserts are copied; updates, deletes and a few inserts send each column's values as
one ``text[]`` parameter to one ``UPDATE … FROM unnest(…)``, ``DELETE … USING`` or
``INSERT … SELECT``.  A row that does not meet
exactly one target row raises :class:`Deviation` (the caller applies row by row).  Without
COPY (:meth:`SetRunner.run_synced`) the step goes out as one pipeline whose Sync is the
transaction, each statement checking its own rows in the server; with COPY the client
checks, in the caller's BEGIN … COMMIT.  docs/replicat.md, "PostgreSQL target".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import psycopg
from psycopg import pq, sql
from psycopg.adapt import Dumper

from trailgate.apply.pg_copy import CopyIn, run_query
from trailgate.apply.pg_pipeline import (
    DIVISION_BY_ZERO,
    TEXT_ARRAY_OID,
    Failed,
    Pipeliner,
    TextArray,
)
from trailgate.apply.setplan import CopyRows, SetPlan
from trailgate.apply.spanplan import copy_columns

__all__ = ["INSERT_ARRAY_ROWS", "JOIN_RANDOM_PAGE_COST", "Deviation", "First", "Guarded",
           "SetRunner", "has_copies", "set_rows"]

#: The planner's ``random_page_cost`` for the joins (see above).
JOIN_RANDOM_PAGE_COST = 1.1
#: Inserts of a table up to this many rows go by ``INSERT … SELECT unnest(…)`` in the
#: step's pipeline; more by COPY (about 1.3 µs less target CPU a row, more than two round
#: trips' worth above this).
INSERT_ARRAY_ROWS = 256
#: Statement texts a runner keeps (a step's tables and column sets; more is a schema churning).
_QUERIES = 512

Conn = psycopg.Connection[Any]
_Key = tuple[Any, ...]
_Queries = Callable[[_Key, Callable[[], sql.Composed]], bytes]
Cursor = psycopg.Cursor[Any]
Rows = Sequence[tuple[Any, ...]] | CopyRows


class Deviation(Exception):
    """The target is not as the set plan expects (a collision, or an error): roll back and
    apply the partition one change at a time."""


def _step_failure(failed: Failed, first: Sequence[Guarded], at: int | None) -> BaseException:
    """What a failed synced step raises: the refusal of one of ``first`` (whose statements
    are the failed exchange's from index ``at``; None: not in it), else a Deviation (naming
    the statement when the whole step was one exchange, ``at`` 0)."""
    if at is not None and failed.index is not None and 0 <= failed.index - at < len(first):
        refusal = first[failed.index - at].refused(failed.sqlstate)
        if refusal is not None:
            return refusal
    if failed.sqlstate == DIVISION_BY_ZERO:
        where = (f" (statement {failed.index + 1} of the step)"
                 if at == 0 and failed.index is not None else "")
        return Deviation(f"a set statement's rows did not each meet one target row{where}")
    return Deviation(str(failed))


class _TextArrayDumper(Dumper):
    format = pq.Format.BINARY
    oid = TEXT_ARRAY_OID

    def dump(self, obj: TextArray) -> bytes:
        return obj.data


@dataclass(slots=True)
class First:
    """A statement the caller sends ahead of the plans, in the same pipeline; ``check``
    sees its cursor once the results are in (before the plans' own checks)."""

    query: sql.SQL | sql.Composed
    params: Sequence[Any] | Mapping[str, Any]
    check: Callable[[Cursor], None]


@dataclass(slots=True)
class Guarded:
    """A statement the caller sends ahead of the plans in :meth:`SetRunner.run_synced`: it
    fails in the server when what it finds is wrong; ``refused`` turns its error into the
    exception to raise (None: a :class:`Deviation`).  Parameters: str, int or
    :class:`~trailgate.apply.pg_pipeline.TextArray`."""

    query: bytes
    params: Sequence[Any]
    refused: Callable[[str], BaseException | None]  # given the error's SQLSTATE


@dataclass(slots=True)
class _Statement:
    query: bytes
    params: Sequence[Any] = ()
    expected: int | None = None  # rows each must meet; None: no check (or the server's)
    counted: bool = False  # the query returns (count, distinct count) instead of a rowcount


@dataclass(slots=True)
class _Copy:
    query: bytes
    rows: Rows


@dataclass(slots=True)
class _Steps:
    items: list[_Statement | _Copy] = field(default_factory=list)


def has_copies(plans: Sequence[SetPlan]) -> bool:
    """Whether running ``plans`` needs a COPY (many inserts), which a pipeline cannot
    hold."""
    return any(_copied(rows) for plan in plans for rows in plan.inserts.values())


def set_rows(plans: Sequence[SetPlan]) -> int:
    """How many rows running ``plans`` sends (their four phases)."""
    return sum(len(plan.delete_first) + len(plan.delete_last)
               + sum(map(len, plan.inserts.values())) + sum(map(len, plan.updates.values()))
               for plan in plans)


def _copied(rows: Rows) -> bool:
    return len(rows) > INSERT_ARRAY_ROWS


class SetRunner:
    """Runs set plans on one connection (module docstring)."""

    def __init__(self, conn: Conn):
        self.conn = conn
        conn.adapters.register_dumper(TextArray, _TextArrayDumper)
        self.join_setting: bytes | None = None  # SET LOCAL for the joins, if any
        self._pipeliner = Pipeliner(conn)
        self._checked = False
        self._queries: dict[_Key, bytes] = {}  # each statement's text, composed once
        self._client_cursor: psycopg.ClientCursor[Any] | None = None  # inlines values

    def _query(self, key: _Key, build: Callable[[], sql.Composed]) -> bytes:
        """A statement's text by what it depends on (table, columns, their types, how
        checked): composing it costs more than a small step's other Python."""
        query = self._queries.get(key)
        if query is None:
            if len(self._queries) >= _QUERIES:
                self._queries.clear()
            query = self._queries[key] = build().as_bytes(self.conn)
        return query

    def prepare(self) -> None:
        """Once per connection, outside any pipeline: whether the joins need the setting."""
        if self._checked:
            return
        row = self.conn.execute("SELECT current_setting('random_page_cost')::float8").fetchone()
        self._checked = True
        if row is not None and float(row[0]) > JOIN_RANDOM_PAGE_COST:
            # SET LOCAL as a function: in a pipeline's own transaction (no BEGIN) a server
            # before 17 would warn at SET LOCAL
            self.join_setting = sql.SQL("SELECT set_config('random_page_cost', {}, true)"
                                        ).format(sql.Literal(str(JOIN_RANDOM_PAGE_COST))
                                                 ).as_bytes(self.conn)

    def run_synced(self, plans: Sequence[SetPlan], first: Sequence[Guarded] = ()) -> None:
        """``first``, then the plans' four phases (not their ``ordered`` changes; no COPY),
        as one pipeline and one Sync, outside any transaction: the server runs them as one
        transaction and commits it at the Sync, unless one fails — each set statement
        fails when its rows do not each meet one target row — which rolls it all back.
        Raises ``first``'s refusal or Deviation."""
        steps = _Steps()
        for plan in plans:
            _plan_steps(steps, plan, self.join_setting, self._query, guarded=True)
        statements: list[tuple[bytes, Sequence[Any]]] = [(g.query, g.params) for g in first]
        for step in steps.items:
            if not isinstance(step, _Statement):
                raise ValueError("a COPY cannot be sent in a pipeline")
            statements.append((step.query, [TextArray.of(p) if isinstance(p, list) else p
                                            for p in step.params]))
        try:
            self._pipeliner.run(statements)
        except Failed as failed:
            raise _step_failure(failed, first, 0) from None

    def run_copying(self, plans: Sequence[SetPlan], first: Sequence[Guarded] = ()) -> None:
        """As :meth:`run_synced`, for plans whose inserts go by COPY (rows made by the C
        planner): one transaction, begun and committed here, each set statement checking
        its own rows in the server.  The BEGIN, ``first`` (its values inlined) and
        statements without parameters go out in one simple query with the first COPY
        (:mod:`~trailgate.apply.pg_copy`), and with the COMMIT when nothing follows it;
        statements with parameters go in a pipeline, with the COMMIT when they are last.
        A step of COPYs alone is one round trip.  Rolls back and raises ``first``'s
        refusal or Deviation when something failed."""
        steps = _Steps()
        for plan in plans:
            _plan_steps(steps, plan, self.join_setting, self._query, guarded=True)
        inline = self._client_cursor
        if inline is None:
            inline = self._client_cursor = psycopg.ClientCursor(self.conn)

        def inlined(parts: list[bytes | CopyIn | tuple[bytes, Sequence[Any]]]
                    ) -> list[bytes | CopyIn]:  # ``first``'s values as literals
            return [inline.mogrify(*p).encode() if isinstance(p, tuple) else p for p in parts]

        # ``first`` keeps its parameters until it is known to go in the simple query: in
        # the pipeline its text is the same each step (one prepared statement)
        simple: list[bytes | CopyIn | tuple[bytes, Sequence[Any]]] = [
            b"BEGIN", *((g.query, g.params) for g in first)]
        piped: list[tuple[bytes, Sequence[Any]]] = []
        exchange = 0  # which exchange with the server goes out next (first's is the 0th)
        try:
            for item in steps.items:
                if isinstance(item, _Copy):
                    if not isinstance(item.rows, CopyRows):
                        raise ValueError("COPY rows not made by the C planner")
                    if piped:
                        self._pipeliner.run(piped, within=True)
                        piped, exchange = [], exchange + 1
                    simple.append(CopyIn(item.query, item.rows.data))
                elif not piped and not item.params:
                    simple.append(item.query)
                else:
                    if any(isinstance(part, CopyIn) for part in simple):
                        run_query(self.conn, inlined(simple))
                        simple, exchange = [], exchange + 1
                    piped.extend(part if isinstance(part, tuple) else (part, ())
                                 for part in simple if not isinstance(part, CopyIn))
                    simple = []
                    piped.append((item.query, [TextArray.of(p) if isinstance(p, list) else p
                                               for p in item.params]))
            if piped:
                self._pipeliner.run([*piped, (b"COMMIT", ())], within=True)
            else:
                run_query(self.conn, [*inlined(simple), b"COMMIT"])
        except Failed as failed:
            self._roll_back()
            # first's statements follow the BEGIN, in the first exchange only
            raise _step_failure(failed, first, 1 if exchange == 0 else None) from None
        except psycopg.OperationalError:
            raise
        except BaseException:
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        """End the transaction :meth:`run_copying` began, if the server still has it open
        (a lost connection: the server rolls it back itself)."""
        status = self.conn.pgconn.transaction_status
        if status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
            self.conn.execute("ROLLBACK")

    def run(self, plans: Sequence[SetPlan], *, first: Sequence[First] = ()) -> None:
        """Apply the plans' four phases (not their ``ordered`` changes), inside the
        caller's transaction, after ``first``: the statements between COPYs go out in a
        pipeline each.  Raises Deviation (any error of a statement, too); checks ``first``
        before the plans' rows."""
        steps = _Steps()
        for plan in plans:
            _plan_steps(steps, plan, self.join_setting, self._query)
        try:
            items = steps.items
            start = 0
            pending_first = first
            while start < len(items) or pending_first:
                stop = start
                while stop < len(items) and not isinstance(items[stop], _Copy):
                    stop += 1
                if stop > start or pending_first:
                    statements = [s for s in items[start:stop] if isinstance(s, _Statement)]
                    sent: list[tuple[Cursor, _Statement | First]] = []
                    with self._first_checked(sent, pending_first), self.conn.pipeline():
                        self._send(pending_first, statements, sent)
                    self._check(sent, pending_first)
                    pending_first = ()
                if stop < len(items):
                    item = items[stop]
                    assert isinstance(item, _Copy)
                    _copy(self.conn, item)
                    stop += 1
                start = stop
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            raise Deviation(str(exc)) from None

    @contextmanager
    def _first_checked(self, sent: list[tuple[Cursor, _Statement | First]],
                       first: Sequence[First]) -> Iterator[None]:
        """A statement's error in the pipeline ends it; the caller's own statements, sent
        first, then say what they found before the error does (a step applied before
        meets its own inserts' keys)."""
        try:
            yield
        except psycopg.OperationalError:
            raise
        except psycopg.Error:
            for cur, item in sent[:len(first)]:
                assert isinstance(item, First)
                if cur.pgresult is not None and cur.pgresult.status == pq.ExecStatus.TUPLES_OK:
                    item.check(cur)
            raise

    def _send(self, first: Sequence[First], statements: Sequence[_Statement],
              sent: list[tuple[Cursor, _Statement | First]]) -> None:
        """Each statement's cursor appended to ``sent`` as it goes out: in a pipeline an
        earlier statement's error can surface while a later one is sent."""
        items: list[_Statement | First] = [*first, *statements]
        for item in items:
            cur = self.conn.cursor()
            sent.append((cur, item))
            cur.execute(item.query, item.params)

    @staticmethod
    def _check(sent: list[tuple[Cursor, _Statement | First]], first: Sequence[First]) -> None:
        for cur, item in sent[:len(first)]:
            assert isinstance(item, First)
            item.check(cur)
        for cur, item in sent[len(first):]:
            assert isinstance(item, _Statement)
            if item.expected is None:
                continue
            if item.counted:
                row = cur.fetchone()
                found = row[1] if row is not None and row[0] == row[1] else -1
            else:
                found = cur.rowcount
            if found != item.expected:
                raise Deviation(f"{item.expected} rows sent, {max(found, 0)} found")


def _plan_steps(steps: _Steps, plan: SetPlan, join_setting: bytes | None,
                query: _Queries, *, guarded: bool = False) -> None:
    """The plan's statements in order.  ``guarded``: each checks its own rows in the
    server (:func:`_checked`), its expected count sent after its arrays."""
    t = plan.mapping.target
    table = sql.Identifier(t.schema, t.name)
    keys = plan.key_columns
    types = {c.name: c.type_name for c in t.columns}
    unique = bool(t.key) and set(keys) == set(t.key)
    items = steps.items
    at = (t.schema, t.name, keys, tuple(types.items()), unique, t.overriding, guarded)

    def add(key: _Key, build: Callable[[], sql.Composed], rows: Rows, width: int,
            each: bool) -> None:
        """One statement of ``rows``; ``each``: checked row by row (no unique key)."""
        params = _arrays(rows, width)
        if guarded:
            params.extend([len(rows)] * (2 if each else 1))
            items.append(_Statement(query(key, build), params))
        else:
            items.append(_Statement(query(key, build), params, len(rows), each))

    if join_setting is not None and (plan.delete_first or plan.updates or plan.delete_last):
        items.append(_Statement(join_setting))
    delete = partial(_delete, table, keys, types, unique, guarded)
    if plan.delete_first:
        add(("D", *at), delete, plan.delete_first, len(keys), not unique)
    for cols, rows in plan.inserts.items():
        if _copied(rows):
            items.append(_Copy(query(("C", *at, cols), partial(_copy_query, table, cols)),
                               rows))
        elif rows:
            add(("I", *at, cols), partial(_insert, table, cols, types, t.overriding, guarded),
                rows, len(cols), False)
    for sets, rows in plan.updates.items():
        if rows:
            add(("U", *at, sets), partial(_update, table, keys, sets, types, unique, guarded),
                rows, len(keys) + len(sets), not unique)
    if plan.delete_last:
        add(("D", *at), delete, plan.delete_last, len(keys), not unique)


def _copy_query(table: sql.Identifier, columns: Sequence[str]) -> sql.Composed:
    return sql.SQL("COPY {} ({}) FROM STDIN").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns)))


def _copy(conn: Conn, item: _Copy) -> None:
    with conn.cursor() as cur, cur.copy(item.query) as copy:
        rows = item.rows
        if isinstance(rows, CopyRows):
            copy.write(rows.data)
            return
        write = copy.write_row
        for row in rows:
            write(row)


def _arrays(rows: Rows, width: int) -> list[Any]:
    """One ``text[]`` parameter per column of ``rows``."""
    if isinstance(rows, CopyRows):
        return [TextArray(data) for data in copy_columns(rows, width)]
    columns: list[list[str | None]] = [[] for _ in range(width)]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(None if value is None else str(value))
    return columns


def _source(columns: Sequence[str], ordinal: str | None) -> sql.Composable:
    """The rows sent, as ``s``: ``(SELECT unnest(%s::text[]) AS column, …) AS s`` (set
    functions in a select list run in step and stream their rows, where ``unnest(…)`` in
    FROM stores them first: a tenth less CPU on a large step), or with each row's number
    ``unnest(%s::text[], …) WITH ORDINALITY AS s(columns…, ordinal)``."""
    if ordinal is None:
        return sql.SQL("(SELECT {}) AS s").format(sql.SQL(", ").join(
            sql.SQL("unnest(%s::text[]) AS {}").format(sql.Identifier(c)) for c in columns))
    return sql.SQL("unnest({}) WITH ORDINALITY AS s({})").format(
        sql.SQL(", ").join(sql.SQL("%s::text[]") for _ in columns),
        sql.SQL(", ").join(map(sql.Identifier, [*columns, ordinal])))


def _value(column: str, types: dict[str, str]) -> sql.Composable:
    return sql.SQL("s.{}::{}").format(sql.Identifier(column), sql.SQL(types[column]))


def _join(keys: Sequence[str], types: dict[str, str]) -> sql.Composable:
    return sql.SQL(" AND ").join(
        sql.SQL("t.{} = {}").format(sql.Identifier(k), _value(k, types)) for k in keys)


def _ordinal(columns: Sequence[str]) -> str:
    name = "trailgate_n"
    while name in columns:
        name += "_"
    return name


def _checked(statement: sql.Composed, ordinal: str, unique: bool, guarded: bool
             ) -> sql.Composed:
    """``statement`` as sent: with a unique key its row count tells (the client reads it),
    else each sent row's number is counted.  ``guarded``: the server checks instead, the
    expected count its last parameter(s), and a row count other than it divides by zero
    (an error, which rolls the pipeline's transaction back)."""
    if guarded:
        if unique:
            return sql.SQL("WITH done AS ({} RETURNING 1) "
                           "SELECT 1 / (count(*) = %s::bigint)::int FROM done").format(statement)
        return sql.SQL("WITH done AS ({} RETURNING s.{}) SELECT 1 / (count(*) = %s::bigint "
                       "AND count(DISTINCT {}) = %s::bigint)::int FROM done").format(
            statement, sql.Identifier(ordinal), sql.Identifier(ordinal))
    if unique:
        return statement
    return sql.SQL("WITH done AS ({} RETURNING s.{}) SELECT count(*), count(DISTINCT {}) "
                   "FROM done").format(statement, sql.Identifier(ordinal),
                                       sql.Identifier(ordinal))


def _delete(table: sql.Identifier, keys: Sequence[str], types: dict[str, str], unique: bool,
            guarded: bool = False) -> sql.Composed:
    """With a unique key (the target's primary key) and keys sent once each, the row count
    says whether each met one row; otherwise each sent row's number is counted."""
    ordinal = None if unique else _ordinal(keys)
    statement = sql.SQL("DELETE FROM {} AS t USING {} WHERE {}").format(
        table, _source(keys, ordinal), _join(keys, types))
    return _checked(statement, ordinal or "", unique, guarded)


def _insert(table: sql.Identifier, columns: Sequence[str], types: dict[str, str],
            overriding: bool, guarded: bool = False) -> sql.Composed:
    """As COPY would, with the row-by-row inserts' ``OVERRIDING SYSTEM VALUE`` for a table
    with ``GENERATED ALWAYS`` identity columns."""
    statement = sql.SQL("INSERT INTO {} ({}){} SELECT {} FROM {}").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL(" OVERRIDING SYSTEM VALUE" if overriding else ""),
        sql.SQL(", ").join(_value(c, types) for c in columns), _source(columns, None))
    return _checked(statement, "", True, True) if guarded else statement


def _update(table: sql.Identifier, keys: Sequence[str], sets: Sequence[str],
            types: dict[str, str], unique: bool, guarded: bool = False) -> sql.Composed:
    columns = (*keys, *sets)
    ordinal = None if unique else _ordinal(columns)
    if sets:
        assign = sql.SQL(", ").join(sql.SQL("{} = {}").format(
            sql.Identifier(c), _value(c, types)) for c in sets)
    else:  # only the key: still find the row (a missing row is a collision)
        assign = sql.SQL("{} = t.{}").format(sql.Identifier(keys[0]), sql.Identifier(keys[0]))
    statement = sql.SQL("UPDATE {} AS t SET {} FROM {} WHERE {}").format(
        table, assign, _source(columns, ordinal), _join(keys, types))
    return _checked(statement, ordinal or "", unique, guarded)
