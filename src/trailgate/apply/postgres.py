"""Apply changes to PostgreSQL, exactly once, one database transaction per partition.

Each partition's transaction first inserts its checkpoint-table row, so a replay (or a
concurrent speculative attempt) finds it and does nothing, then applies the changes in
trail order: under BATCHSQL set-based, under a savepoint, falling back to one change at a
time on any collision; otherwise pipelined, with a savepoint per change only once one
fails, so REPERROR can discard just that change.  docs/replicat.md, "PostgreSQL target".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from trailgate.apply.checkpoint_table import STREAM_BATCH, table_identifier
from trailgate.apply.discard import DdlDiscard, Discard, DiscardWriter
from trailgate.apply.mapping import MappedChange, Mapper, TableMapping, TargetColumn, TargetTable
from trailgate.apply.pg_ddl import PgDdl
from trailgate.apply.pg_pipeline import DIVISION_BY_ZERO
from trailgate.apply.pg_sets import Deviation, First, Guarded, SetRunner, has_copies, set_rows
from trailgate.apply.planner import DUPLICATE_CODES, MISSING_CODES, CollisionError
from trailgate.apply.records import ApplyResult, TableCounts, TrailChange
from trailgate.apply.setplan import SetPlan, plan_table
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.db.connect import connect, describe
from trailgate.errors import ConfigError, TargetError, TrailgateError
from trailgate.model import OpType, TableDef
from trailgate.params.model import ReplicatParams
from trailgate.params.names import parse_name

__all__ = ["PgApplier", "PgCatalog", "Segment"]

log = logging.getLogger("trailgate.apply")
Conn = psycopg.Connection[Any]

#: BATCHSQL: partitions with fewer changes are applied one by one (fewer round trips).
SET_MIN_CHANGES = 8
#: A step of set plans sending at most this many rows (and no COPY) goes out as one synced
#: pipeline, its rows checked in the server: one round trip.  A larger one is sent between
#: BEGIN and COMMIT with the client checking row counts: the server then counts no rows
#: through a CTE, a few percent of its CPU where a round trip and a few statements no
#: longer count (docs/performance.md).
SYNCED_ROWS = 10_000
#: Part of a partition applied with one set of definitions: its changes (or one DDL record)
#: and the definition of each of their tables.
Segment = tuple[Sequence[TrailChange], Mapping[str, TableDef]]

_COLUMNS_SQL = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, a.attidentity
FROM pg_attribute a
WHERE a.attrelid = %(rel)s::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attgenerated = ''
ORDER BY a.attnum"""
_KEY_SQL = """
SELECT a.attname
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = %(rel)s::regclass AND i.indisprimary
ORDER BY k.n"""
# Triggers that fire in this session (origin role) and rules see every statement: such a
# table is applied one change at a time even with BATCHSQL.
_TRIGGERS_SQL = """
SELECT c.relhasrules OR EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid
                                AND NOT t.tgisinternal AND t.tgenabled IN ('O', 'A'))
FROM pg_class c WHERE c.oid = %(rel)s::regclass"""


class PgCatalog:
    """Target definitions from PostgreSQL's catalog (unquoted names fold to lower case)."""

    creates_tables = False

    def __init__(self, conn: Conn, conninfo: str = ""):
        self.conn = conn
        self.conninfo = conninfo

    def split(self, name: str) -> tuple[str, str]:
        parts = parse_name(name)
        schema, table = (p.text if p.quoted else p.text.lower() for p in parts[-2:])
        return schema, table

    def describe(self, schema: str, table: str) -> TargetTable | None:
        ident = sql.Identifier(schema, table).as_string(self.conn)
        with self.conn.cursor() as cur:
            row = cur.execute("SELECT to_regclass(%s)", (ident,)).fetchone()
            if row is None or row[0] is None:
                return None
            cols = cur.execute(_COLUMNS_SQL, {"rel": ident}).fetchall()
            key = [r[0] for r in cur.execute(_KEY_SQL, {"rel": ident}).fetchall()]
            triggers = cur.execute(_TRIGGERS_SQL, {"rel": ident}).fetchone()
        if not self.conn.autocommit and self.conn.info.transaction_status:
            self.conn.rollback()
        columns = [TargetColumn(name, type_name, nullable) for name, type_name, nullable, _ in cols]
        overriding = any(ident_kind == "a" for *_, ident_kind in cols)
        return TargetTable(schema, table, columns, key, True, overriding,
                           bool(triggers and triggers[0]))

    def where(self) -> str:
        return f"PostgreSQL {describe(self.conninfo)}" if self.conninfo else "PostgreSQL"


@dataclass(slots=True)
class _Stmt:
    """One change as SQL: statements with the same ``query`` can be batched."""

    query: sql.Composed
    params: list[str | None]
    change: MappedChange


class PgApplier:
    """Applies partitions of Replicat batches to one PostgreSQL database.

    Create one per worker (it holds a connection and caches table definitions); call
    :meth:`validate` once at Replicat start, :meth:`apply_partition` per partition.
    ``checkpoint_table`` None (``NODBCHECKPOINT``) gives no replay protection.
    """

    def __init__(self, conninfo: str, params: ReplicatParams, *,
                 checkpoint_table: str | None, group: str | None = None,
                 discard: DiscardWriter | None = None, batchsql: bool | None = None,
                 conn: Conn | None = None):
        self.conninfo = conninfo
        self.params = params
        self.group = (group or params.name).upper()
        self.batchsql = params.batchsql if batchsql is None else batchsql
        self.discard = discard
        self.checkpoint = None if checkpoint_table is None else table_identifier(
            checkpoint_table)
        self.conn = conn if conn is not None else self._connect()
        self.mapper = Mapper(params, PgCatalog(self.conn, conninfo), group=self.group)
        self._queries: dict[tuple[Any, ...], sql.Composed] = {}
        self._advance_text: bytes | None = None  # the synced pipeline's row statements
        self._claim_text: bytes | None = None
        self._sets = SetRunner(self.conn)
        self._strict = False  # in a set-based attempt: a collision is a Deviation
        self.set_attempts = 0  # set-based attempts, and how many fell back (tests, reports)
        self.set_fallbacks = 0
        self.pipelined_attempts = 0  # the same for pipelined one-at-a-time attempts
        self.pipelined_fallbacks = 0
        self.ddl = PgDdl(self.conn, params)

    def _connect(self) -> Conn:
        try:
            return connect(self.conninfo, autocommit=True, settings=SESSION_SETTINGS,
                           application_name=f"trailgate replicat {self.group}")
        except TrailgateError as exc:
            raise TargetError(str(exc).replace("DBLOGIN SOURCEDB", "TARGETDB")) from None

    def close(self) -> None:
        self.conn.close()

    def commit_nowait(self) -> None:
        """Let this session's commits return before the target's WAL reaches its disk
        (GoldenGate's COMMIT NOWAIT): safe only where each commit also moves the
        checkpoint-table row, and only until :meth:`flush_commits` is asked before a
        position is acknowledged anywhere else."""
        self.conn.execute("SET synchronous_commit TO off")

    def flush_commits(self) -> None:
        """Return once every step this session committed is on the target's disk: a
        transaction that writes (the stream row touched in place) commits waiting for its
        WAL flush, which covers all WAL before it.  Steps that wrote anything moved that
        row, so where it does not exist there is nothing to flush."""
        if self.checkpoint is None:
            return
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise TargetError("the Replicat's target session is inside a transaction where "
                              "its steps should have committed; stop and restart the group")
        self.conn.execute(sql.SQL(
            "BEGIN; SET LOCAL synchronous_commit TO on; UPDATE {} SET updated = updated "
            "WHERE group_name = {} AND batch_id = {} AND partition = 0; COMMIT").format(
                self.checkpoint[2], sql.Literal(self.group), sql.Literal(STREAM_BATCH)))

    def __enter__(self) -> PgApplier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- start-up ------------------------------------------------------------------------------
    def validate(self) -> None:
        """At Replicat start: the checkpoint table and every named MAP target exist."""
        if self.checkpoint is not None:
            schema, table, ident = self.checkpoint
            row = self.conn.execute("SELECT to_regclass(%s)",
                                    (ident.as_string(self.conn),)).fetchone()
            if row is None or row[0] is None:
                raise ConfigError(f"checkpoint table {schema}.{table} does not exist in "
                                  f"{describe(self.conninfo)}: create it with GGSCI "
                                  f"ADD CHECKPOINTTABLE {schema}.{table}")
        self.mapper.validate()

    def stream_position(self) -> str | None:
        """Where this group's streamed apply goes on (its :data:`STREAM_BATCH` row), or None
        (it never streamed, or ``NODBCHECKPOINT``)."""
        if self.checkpoint is None:
            return None
        row = self.conn.execute(
            sql.SQL("SELECT position FROM {} WHERE group_name = %s AND batch_id = %s "
                    "AND partition = 0").format(self.checkpoint[2]),
            (self.group, STREAM_BATCH)).fetchone()
        return None if row is None else str(row[0])

    def applied_partitions(self, batch_id: int) -> set[int]:
        """Partitions of ``batch_id`` the checkpoint table says are applied."""
        if self.checkpoint is None:
            return set()
        rows = self.conn.execute(
            sql.SQL("SELECT partition FROM {} WHERE group_name = %s AND batch_id = %s").format(
                self.checkpoint[2]), (self.group, batch_id)).fetchall()
        return {r[0] for r in rows}

    # -- apply ---------------------------------------------------------------------------------
    def apply_partition(self, batch_id: int, partition: int, changes: Sequence[TrailChange],
                        table_defs: Mapping[str, TableDef], *,
                        advance: tuple[str, str] | None = None,
                        segments: Sequence[Segment] | None = None) -> ApplyResult:
        """Apply one partition's changes (trail order) and its checkpoint row atomically.

        Returns counts per target table, or ``skipped=True`` if it was applied before.
        Raises TargetError (REPERROR ABEND, mapping problems): nothing of the partition is
        then committed.  ``advance`` ``(from, to)``: instead of a batch's row, the streamed
        apply's row moves from ``from`` to ``to`` (:meth:`_advance_query`).  ``segments``:
        the changes cut where a DDL record is or a definition changes, each with the
        definitions of its own changes (see :meth:`_apply_segments`).
        """
        if segments is not None:
            return self._apply_segments(batch_id, partition, changes, segments, advance)
        mapped = self.mapper.map_all(list(changes), table_defs)
        position = str(max(tc.position for tc in changes)) if changes else ""
        try:
            plans = self._set_plans(mapped)
        except psycopg.OperationalError as exc:
            raise self._lost(exc, batch_id, partition) from None
        if plans is None and mapped:
            # a few changes: first as they are, with no savepoint at all (each costs two
            # round trips); a collision or error rolls the whole transaction back, and it
            # is applied again change by change under savepoints, as REPERROR needs
            result = ApplyResult()
            self.pipelined_attempts += 1
            self._strict = True
            try:
                with self._partition(batch_id, partition, position, result, advance) as cur:
                    if cur is not None:
                        for run in self._runs(mapped, True):
                            self._apply_run(cur, run, result, [])
                return result
            except Deviation as exc:
                self.pipelined_fallbacks += 1
                log.debug("the partition falls back to a savepoint per change: %s", exc)
            finally:
                self._strict = False
        result = ApplyResult()
        discards: list[Discard] = []
        with self._partition(batch_id, partition, position, result, advance) as cur:
            if cur is not None:
                done = plans is not None and self._apply_sets(cur, plans, result)
                if not done:  # exactly: each change (BATCHSQL: run) under a savepoint
                    for run in self._runs(mapped, self.batchsql):
                        self._apply_run(cur, run, result, discards)
        if self.discard is not None:
            self.discard.write(discards)
        return result

    def _apply_segments(self, batch_id: int, partition: int, changes: Sequence[TrailChange],
                        segments: Sequence[Segment], advance: tuple[str, str] | None
                        ) -> ApplyResult:
        """A partition holding DDL (or a definition change) in one transaction, in trail
        order: each run of DML applied as a partition is (set-based under BATCHSQL, with
        its own definitions), each DDL record as DDLERROR says; after a DDL ran, target
        definitions and statements are made anew, so COLMAP USEDEFAULTS,
        KEYCOLS and BATCHSQL see what it changed."""
        position = str(max(tc.position for tc in changes)) if changes else ""
        result = ApplyResult()
        discards: list[Discard | DdlDiscard] = []
        try:
            with self._partition(batch_id, partition, position, result, advance) as cur:
                if cur is not None:
                    for part, defs in segments:
                        if len(part) == 1 and part[0].change.op is OpType.DDL:
                            ddl: list[DdlDiscard] = []
                            if self.ddl.apply(cur, part[0], result, ddl):
                                self._forget_definitions()
                            discards.extend(ddl)
                            continue
                        mapped = self.mapper.map_all(list(part), defs)
                        plans = self._set_plans(mapped)
                        done = (self._apply_sets(cur, plans, result) if plans is not None
                                else self._apply_pipelined(cur, mapped, result))
                        if not done:
                            applied: list[Discard] = []
                            for run in self._runs(mapped, self.batchsql):
                                self._apply_run(cur, run, result, applied)
                            discards.extend(applied)
        except BaseException:
            self._forget_definitions()  # what a rolled-back DDL did is undone too
            raise
        if self.discard is not None:
            self.discard.write(discards)
        return result

    def _forget_definitions(self) -> None:
        """After DDL: read target tables again and build statements anew."""
        self.mapper.forget_all()
        self._queries.clear()

    def apply_plans(self, batch_id: int, partition: int, plans: Sequence[SetPlan],
                    position: str, *, advance: tuple[str, str] | None = None
                    ) -> ApplyResult | None:
        """Set plans made straight from the trail (``spanplan``) applied with the
        partition's checkpoint row, as :meth:`apply_partition` applies its own; None —
        nothing committed — when the target is not as the plans expect (a collision, an
        error): the caller then applies the partition with :meth:`apply_partition`, whose
        one-change-at-a-time fallback gives HANDLECOLLISIONS and REPERROR their behaviour.
        Up to :data:`SYNCED_ROWS` rows and no COPY, the whole transaction — the checkpoint
        row, the set statements, each checking its rows in the server — goes out as one
        pipeline, whose Sync commits it: one round trip (``SetRunner.run_synced``).  With
        COPYs the same checks, the COPYs in simple queries with the row and the COMMIT
        (``SetRunner.run_copying``: one round trip when the step is only inserts).  Else:
        BEGIN, the row, the statements, their checks here, COMMIT.
        """
        result = ApplyResult()
        try:
            self._sets.prepare()
        except psycopg.OperationalError as exc:
            raise self._lost(exc, batch_id, partition) from None
        self.set_attempts += 1
        try:
            if has_copies(plans):
                self._sets.run_copying(
                    plans, self._guarded_row(batch_id, partition, position, advance))
            elif set_rows(plans) > SYNCED_ROWS:
                first = [First(sql.SQL("BEGIN"), (), _no_check),
                         *self._row_statement(batch_id, partition, position, advance)]
                try:
                    self._sets.run(plans, first=first)
                except BaseException:
                    self._rollback()
                    raise
                self.conn.execute("COMMIT")
            else:
                self._sets.run_synced(
                    plans, self._guarded_row(batch_id, partition, position, advance))
        except _Skipped:
            result.skipped = True  # applied before: this attempt was rolled back
            return result
        except Deviation as exc:
            self.set_fallbacks += 1
            log.debug("set-based apply from the trail fell back to the Python path: %s", exc)
            return None
        except psycopg.OperationalError as exc:
            raise self._lost(exc, batch_id, partition) from None
        for plan in plans:
            result.table(plan.mapping.target.qualified_name).add(plan.counts)
        return result

    def _rollback(self) -> None:
        """End a transaction begun with a BEGIN statement (in a pipeline: queued), unless
        the connection is lost (the server then rolls it back itself)."""
        if self.conn.info.transaction_status == psycopg.pq.TransactionStatus.UNKNOWN:
            return
        try:
            self.conn.execute("ROLLBACK")
        except psycopg.Error as exc:
            log.warning("rolling back an attempt begun with BEGIN failed: %s", exc)

    def _row_statement(self, batch_id: int, partition: int, position: str,
                       advance: tuple[str, str] | None) -> list[First]:
        """The checkpoint-table statement of a pipelined attempt: the streamed apply's row
        moved (an error if another process moved it), or the partition's row claimed
        (:class:`_Skipped` if it was applied before); none without a checkpoint table."""
        if self.checkpoint is None:
            return []
        if advance is not None:
            def moved(cur: psycopg.Cursor[Any]) -> None:
                row = cur.fetchone()
                if row is None or row[0] != 1:
                    raise self._moved_elsewhere(advance[0])
            return [First(self._advance_query(*advance), (), moved)]

        def claimed(cur: psycopg.Cursor[Any]) -> None:
            if cur.fetchone() is None:
                raise _Skipped
        return [First(self._claim_query(), (self.group, batch_id, partition, position),
                      claimed)]

    def _guarded_row(self, batch_id: int, partition: int, position: str,
                     advance: tuple[str, str] | None) -> list[Guarded]:
        """The checkpoint-table statement of a synced pipeline (``SetRunner.run_synced``),
        failing in the server when the row is not as expected: the streamed apply's row not
        moved (another process moved it), or the partition's row there already
        (:class:`_Skipped`); none without a checkpoint table."""
        if self.checkpoint is None:
            return []
        if advance is not None:
            start, end = advance
            return [Guarded(self._guarded_advance(), (end, start, end),
                            lambda state: self._moved_elsewhere(start)
                            if state == DIVISION_BY_ZERO else None)]
        return [Guarded(self._guarded_claim(), (self.group, batch_id, partition, position),
                        lambda state: _Skipped() if state == DIVISION_BY_ZERO else None)]

    def _guarded_advance(self) -> bytes:
        """:meth:`_advance_query` with the positions as parameters (end, start, end), its
        text made once (so the server prepares it): it divides by zero unless the row moved
        or was created."""
        if self._advance_text is None:
            assert self.checkpoint is not None
            self._advance_text = sql.SQL(
                "WITH moved AS (UPDATE {t} SET position = %s, updated = now() "
                "WHERE group_name = {group} AND batch_id = {batch} AND partition = 0 "
                "AND position = %s RETURNING 1), "
                "added AS (INSERT INTO {t} (group_name, batch_id, partition, position) "
                "SELECT {group}::text, {batch}::bigint, 0, %s::text "
                "WHERE NOT EXISTS (SELECT FROM moved) ON CONFLICT DO NOTHING RETURNING 1) "
                "SELECT 1 / ((SELECT count(*) FROM moved) + (SELECT count(*) FROM added))::int"
            ).format(t=self.checkpoint[2], group=sql.Literal(self.group),
                     batch=sql.Literal(STREAM_BATCH)).as_bytes(self.conn)
        return self._advance_text

    def _guarded_claim(self) -> bytes:
        """:meth:`_claim_query` dividing by zero when the row is there already."""
        if self._claim_text is None:
            assert self.checkpoint is not None
            self._claim_text = sql.SQL(
                "WITH claimed AS (INSERT INTO {} (group_name, batch_id, partition, position) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1) "
                "SELECT 1 / count(*)::int FROM claimed").format(
                self.checkpoint[2]).as_bytes(self.conn)
        return self._claim_text

    @contextmanager
    def _partition(self, batch_id: int, partition: int, position: str,
                   result: ApplyResult, advance: tuple[str, str] | None = None
                   ) -> Iterator[psycopg.Cursor[Any] | None]:
        """The partition's transaction with its checkpoint row claimed first (or the
        streamed apply's row moved: ``advance``): a cursor, or None (``result.skipped``)
        when the row shows the partition applied before.  An exception rolls it all back;
        a lost connection becomes a TargetError."""
        try:
            if advance is not None and self.checkpoint is not None:
                with self._stream_transaction(*advance), self.conn.cursor() as cur:
                    yield cur
                return
            with self.conn.transaction():
                # (a streamed step without a checkpoint table has no row to move)
                if advance is None and self.checkpoint is not None and not self._claim(
                        batch_id, partition, position):
                    result.skipped = True
                    yield None
                    return
                with self.conn.cursor() as cur:
                    yield cur
        except psycopg.OperationalError as exc:
            raise self._lost(exc, batch_id, partition) from None

    @contextmanager
    def _stream_transaction(self, start: str, end: str) -> Iterator[None]:
        """The streamed apply's transaction, begun in the same round trip as its row's
        move from ``start`` to ``end`` (:meth:`_advance_query`: an error if another process
        moved it), committed when the block ends, rolled back when it raises.  Savepoints
        inside are psycopg's as usual: it sees the server in a transaction."""
        try:
            cur = self.conn.execute(sql.SQL("BEGIN; ") + self._advance_query(start, end))
            cur.nextset()  # past BEGIN's result to the row's
            row = cur.fetchone()
            if row is None or row[0] != 1:
                raise self._moved_elsewhere(start)
            yield
        except BaseException:
            self._rollback()
            raise
        self.conn.execute("COMMIT")

    def _lost(self, exc: Exception, batch_id: int, partition: int) -> TargetError:
        what = ("the trail's next transactions" if batch_id == STREAM_BATCH
                else f"batch {batch_id} partition {partition}")
        reason = " ".join(str(exc).split())  # libpq's text may run over several lines
        return TargetError(f"lost the connection to {describe(self.conninfo)} while "
                           f"applying {what}: {reason}; what the target did not commit is "
                           f"applied again when the Replicat restarts (its checkpoint row "
                           f"says what it did)")

    def _advance_query(self, start: str, end: str) -> sql.Composed:
        """One statement, its values inlined (so it can follow a BEGIN in one simple query):
        the row moved from ``start`` to ``end``, or created if there is none; it returns 1
        if either happened."""
        assert self.checkpoint is not None
        return sql.SQL(
            "WITH moved AS (UPDATE {t} SET position = {end}, updated = now() "
            "WHERE group_name = {group} AND batch_id = {batch} AND partition = 0 "
            "AND position = {start} RETURNING 1), "
            "added AS (INSERT INTO {t} (group_name, batch_id, partition, position) "
            "SELECT {group}::text, {batch}::bigint, 0, {end}::text "
            "WHERE NOT EXISTS (SELECT FROM moved) ON CONFLICT DO NOTHING RETURNING 1) "
            "SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM added)"
        ).format(t=self.checkpoint[2], end=sql.Literal(end), group=sql.Literal(self.group),
                 batch=sql.Literal(STREAM_BATCH), start=sql.Literal(start))

    def _moved_elsewhere(self, start: str) -> TargetError:
        assert self.checkpoint is not None
        return TargetError(
            f"REPLICAT {self.group}: its row in checkpoint table "
            f"{self.checkpoint[0]}.{self.checkpoint[1]} no longer says trail position "
            f"{start}: another process applies for this group; stop it, then start "
            f"this one again (nothing of this transaction was committed)")

    def _claim_query(self) -> sql.Composed:
        assert self.checkpoint is not None
        return sql.SQL("INSERT INTO {} (group_name, batch_id, partition, position) "
                       "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1").format(
            self.checkpoint[2])

    def _claim(self, batch_id: int, partition: int, position: str) -> bool:
        row = self.conn.execute(self._claim_query(),
                                (self.group, batch_id, partition, position)).fetchone()
        return row is not None

    # -- set-based (BATCHSQL) ------------------------------------------------------------
    def _set_plans(self, mapped: list[MappedChange]) -> list[SetPlan] | None:
        """BATCHSQL: one set plan per table (first-change order), or None to apply one
        change at a time."""
        if not self.batchsql or len(mapped) < SET_MIN_CHANGES:
            return None
        by_table: dict[int, tuple[TableMapping, list[MappedChange]]] = {}
        for m in mapped:
            entry = by_table.get(id(m.mapping))
            if entry is None:
                entry = by_table[id(m.mapping)] = (m.mapping, [])
            entry[1].append(m)
        plans = []
        for mapping, changes in by_table.values():
            plan = plan_table(mapping, changes)
            if plan is None:
                return None
            plans.append(plan)
        if all(p.ordered == p_changes for p, (_, p_changes) in zip(
                plans, by_table.values(), strict=True)):
            return None  # nothing to apply as sets
        self._sets.prepare()
        return plans

    def _apply_sets(self, cur: psycopg.Cursor[Any], plans: list[SetPlan],
                    result: ApplyResult) -> bool:
        """Try the plans under a savepoint; False (rolled back) on any collision or error:
        the caller then applies the partition one change at a time."""
        self.set_attempts += 1
        attempt = ApplyResult()
        try:
            with self.conn.transaction():
                self._sets.run(plans)
                for plan in plans:
                    attempt.table(plan.mapping.target.qualified_name).add(plan.counts)
                self._strict = True
                try:
                    for plan in plans:  # keys a key change links: one by one, in order
                        for run in self._runs(plan.ordered, True):
                            self._apply_run(cur, run, attempt, [])
                finally:
                    self._strict = False
        except Deviation as exc:
            self.set_fallbacks += 1
            log.debug("set-based apply fell back to one change at a time: %s", exc)
            return False
        result.merge(attempt)
        return True

    # -- one change at a time ------------------------------------------------------------
    def _apply_pipelined(self, cur: psycopg.Cursor[Any], mapped: list[MappedChange],
                         result: ApplyResult) -> bool:
        """The same statements, in the same order, but consecutive ones with the same SQL
        sent together (``executemany``, pipelined) and no savepoint per change, under one
        savepoint: False (rolled back) at the first collision or error — the savepoint per
        change that REPERROR needs costs two round trips a change, so it is paid only then.
        """
        if len(mapped) < 2:
            return False
        self.pipelined_attempts += 1
        attempt = ApplyResult()
        self._strict = True
        try:
            with self.conn.transaction():
                for run in self._runs(mapped, True):
                    self._apply_run(cur, run, attempt, [])
        except Deviation as exc:
            self.pipelined_fallbacks += 1
            log.debug("pipelined apply fell back to a savepoint per change: %s", exc)
            return False
        finally:
            self._strict = False
        result.merge(attempt)
        return True

    def _runs(self, mapped: list[MappedChange], group: bool) -> list[list[_Stmt]]:
        """Statements in order; with ``group``, consecutive ones with the same SQL
        together."""
        runs: list[list[_Stmt]] = []
        for m in mapped:
            stmt = self._statement(m)
            if (group and runs and runs[-1][0].query is stmt.query
                    and m.op is not OpType.TRUNCATE):
                runs[-1].append(stmt)
            else:
                runs.append([stmt])
        return runs

    # -- statements ----------------------------------------------------------------------------
    def _statement(self, m: MappedChange) -> _Stmt:
        target = m.mapping.target
        types = {c.name: c.type_name for c in target.columns}
        table = sql.Identifier(target.schema, target.name)
        name = (target.schema, target.name)
        op = m.op
        if op is OpType.TRUNCATE:
            return _Stmt(self._query(("T", name), lambda: sql.SQL("TRUNCATE {}").format(
                table)), [], m)
        if op is OpType.INSERT:
            cols = tuple(m.values)
            hc = m.mapping.handle_collisions

            def insert() -> sql.Composed:
                return sql.SQL("INSERT INTO {} ({}){} VALUES ({}){} RETURNING 1").format(
                    table, sql.SQL(", ").join(map(sql.Identifier, cols)),
                    sql.SQL(" OVERRIDING SYSTEM VALUE" if target.overriding else ""),
                    sql.SQL(", ").join(_param(types[c]) for c in cols),
                    sql.SQL(" ON CONFLICT DO NOTHING" if hc else ""))
            return _Stmt(self._query(("I", name, cols, hc), insert), list(m.values.values()),
                         m)
        all_cols = m.mapping.all_columns_key
        key_nulls = tuple((c, v is None and not all_cols) for c, v in m.key.items())
        where_params = [v for c, v in m.key.items() if all_cols or v is not None]
        if op is OpType.DELETE:
            def delete() -> sql.Composed:
                return sql.SQL("DELETE FROM {} WHERE {} RETURNING 1").format(
                    table, _where(table, key_nulls, types, all_cols))
            return _Stmt(self._query(("D", name, key_nulls, all_cols), delete),
                         where_params, m)
        sets = tuple(c for c, v in m.values.items()
                     if op is OpType.PK_UPDATE or c not in m.key or m.key[c] != v)

        def update() -> sql.Composed:
            if sets:
                assign = sql.SQL(", ").join(
                    sql.SQL("{} = {}").format(sql.Identifier(c), _param(types[c])) for c in sets)
            else:  # nothing changed but the key: still find the row (missing-row check)
                first = sql.Identifier(next(iter(m.key)))
                assign = sql.SQL("{} = {}").format(first, first)
            return sql.SQL("UPDATE {} SET {} WHERE {} RETURNING 1").format(
                table, assign, _where(table, key_nulls, types, all_cols))
        return _Stmt(self._query(("U", name, sets, key_nulls, all_cols), update),
                     [m.values[c] for c in sets] + where_params, m)

    def _query(self, sig: tuple[Any, ...], build: Any) -> sql.Composed:
        query = self._queries.get(sig)
        if query is None:
            query = self._queries[sig] = build()
        return query

    # -- execution -----------------------------------------------------------------------------
    def _apply_run(self, cur: psycopg.Cursor[Any], run: list[_Stmt], result: ApplyResult,
                   discards: list[Discard]) -> None:
        if len(run) == 1:
            self._apply_one(cur, run[0], result, discards)
            return
        try:
            with self._savepoint():
                cur.executemany(run[0].query, [s.params for s in run], returning=True)
                found = []
                while True:
                    found.append(cur.fetchone() is not None)
                    if not cur.nextset():
                        break
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            if self._strict:
                raise Deviation(str(exc)) from None
            for stmt in run:  # find the failing change(s), one savepoint each
                self._apply_one(cur, stmt, result, discards)
            return
        for stmt, hit in zip(run, found, strict=True):
            self._outcome(cur, stmt, hit, result, discards)

    def _apply_one(self, cur: psycopg.Cursor[Any], stmt: _Stmt, result: ApplyResult,
                   discards: list[Discard]) -> None:
        try:
            with self._savepoint():
                cur.execute(stmt.query, stmt.params)
                hit = stmt.change.op is OpType.TRUNCATE or cur.fetchone() is not None
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            if self._strict:
                raise Deviation(str(exc)) from None
            state = exc.sqlstate or "?"
            codes = (state, *DUPLICATE_CODES[1:]) if state == "23505" else (state,)
            self._error(stmt.change, codes, exc.diag.message_primary or str(exc), result,
                        discards)
            return
        self._outcome(cur, stmt, hit, result, discards)

    def _savepoint(self) -> AbstractContextManager[Any]:
        """A savepoint around one statement (a run), so an error leaves the rest; none in a
        strict attempt, which any error ends."""
        return nullcontext() if self._strict else self.conn.transaction()

    def _outcome(self, cur: psycopg.Cursor[Any], stmt: _Stmt, hit: bool, result: ApplyResult,
                 discards: list[Discard]) -> None:
        m = stmt.change
        if not hit and self._strict:
            raise Deviation(f"{m.op.label.lower()}: collision at {m.where()}")
        counts = result.table(m.target)
        op = m.op
        if op is OpType.INSERT:
            if hit:
                counts.inserts += 1
            else:  # ON CONFLICT DO NOTHING: HANDLECOLLISIONS turns it into an update
                self._insert_as_update(cur, m, counts, result, discards)
            return
        if hit:
            if op is OpType.DELETE:
                counts.deletes += 1
            elif op is OpType.TRUNCATE:
                counts.truncates += 1
            else:
                counts.updates += 1
            return
        if m.mapping.handle_collisions:
            counts.collisions += 1
            return
        self._error(m, MISSING_CODES, f"{op.label.lower()} of a row that does not exist "
                                      f"(no row matches the key)", result, discards)

    def _insert_as_update(self, cur: psycopg.Cursor[Any], m: MappedChange,
                          counts: TableCounts, result: ApplyResult,
                          discards: list[Discard]) -> None:
        update = MappedChange(m.record, m.mapping, OpType.UPDATE, m.key, m.values)
        stmt = self._statement(update)
        try:
            with self.conn.transaction():
                cur.execute(stmt.query, stmt.params)
                hit = cur.fetchone() is not None
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            self._error(m, (exc.sqlstate or "?",), exc.diag.message_primary or str(exc),
                        result, discards)
            return
        if not hit:  # the conflict was on another unique constraint than the key
            self._error(m, DUPLICATE_CODES, "insert conflicts with a row whose key differs "
                                            "(another unique constraint)", result, discards)
            return
        counts.inserts += 1
        counts.collisions += 1

    def _error(self, m: MappedChange, codes: Sequence[str], message: str,
               result: ApplyResult, discards: list[Discard]) -> None:
        action = m.mapping.reperror_action(*codes)
        counts = result.table(m.target)
        text = f"error {codes[0]} ({message}) applying {m.record.change.op.label}: {m.where()}"
        if action == "DISCARD":
            discards.append(Discard(m, text, tuple(codes)))
            counts.discards += 1
        elif action == "IGNORE":
            counts.ignores += 1
        else:
            raise CollisionError(f"{text}. The Replicat stops (REPERROR ABEND); correct the "
                                 f"target, or use HANDLECOLLISIONS or a REPERROR rule for "
                                 f"error {codes[0]}", m, codes)


def _no_check(cur: psycopg.Cursor[Any]) -> None:
    """A first statement whose result needs no look (BEGIN)."""


class _Skipped(Exception):
    """Roll a pipelined attempt back: its checkpoint row says it was applied before."""


def _param(type_name: str) -> sql.Composable:
    return sql.SQL("%s::" + type_name)


def _where(table: sql.Identifier, key_nulls: tuple[tuple[str, bool], ...],
           types: dict[str, str], all_columns: bool) -> sql.Composable:
    """Locate the row: by key, or (no key) by every column, NULL-safely, one row only."""
    if all_columns:
        match = sql.SQL(" AND ").join(
            sql.SQL("{} IS NOT DISTINCT FROM {}").format(sql.Identifier(c), _param(types[c]))
            for c, _ in key_nulls)
        return sql.SQL("ctid = (SELECT ctid FROM {} WHERE {} LIMIT 1)").format(table, match)
    return sql.SQL(" AND ").join(
        sql.SQL("{} IS NULL").format(sql.Identifier(c)) if is_null
        else sql.SQL("{} = {}").format(sql.Identifier(c), _param(types[c]))
        for c, is_null in key_nulls)
