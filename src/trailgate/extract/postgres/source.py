"""``spark.readStream.format("pgcapture")``: an Extract group's PostgreSQL slot as a stream.

Offsets are ``{"lsn": n}``.  A micro-batch ``[start, end)`` holds every transaction whose
commit LSN lies in it, whole, as change rows after the group's TABLE rules, then a source
position row.  ``latestOffset`` is the server's flushed WAL position; ``commit`` moves the
slot, only once the trail is durable and on every batch (the heartbeat).  The driver's
streamed slot (:class:`StreamedSlot`) lives here too.  Options: docs/processes.md,
"Extract (PostgreSQL)".
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors as pgerrors
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres.capture import CapturedBatch, CapturedTransaction, PgCapture
from trailgate.capture.postgres.changes import CapturedChanges, TransactionChanges
from trailgate.capture.postgres.pgoutput import format_lsn
from trailgate.capture.postgres.rows import EncodedRun, decode_row
from trailgate.capture.postgres.walstream import WalStream
from trailgate.changes.change_rows import (
    CHANGE_SCHEMA_DDL,
    ChangeColumns,
    ChangeRowBuilder,
    ColumnRowBuilder,
)
from trailgate.checkpoint import CheckpointStore
from trailgate.db.connect import connect, describe
from trailgate.errors import SourceError
from trailgate.extract.ddl import DdlOut
from trailgate.extract.postgres.config import (
    DEFAULT_MEMORY_LIMIT,
    ExtractConfig,
    extract_ddl,
    load_extract_config,
)
from trailgate.extract.postgres.ddl_items import plan_ddl
from trailgate.extract.postgres.snapshot_tracker import PREFIX as SNAPSHOT_PREFIX
from trailgate.extract.postgres.snapshot_tracker import SnapshotTracker, active
from trailgate.home import Home
from trailgate.model import Change, OpType, TableDef, datetime_from_julian
from trailgate.spark.batch_window import BatchWindow, stop_requested

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["PgCaptureDataSource", "PgCapturePartition", "PgCaptureStreamReader",
           "StreamedSlot"]

log = logging.getLogger("trailgate.extract")
SLOT_WAIT_SECONDS = 60.0
#: ``TRAILGATE_TXN_BATCHES=0`` makes the driver's streamed slot take every transaction on
#: the general path (one object per transaction), not in batches (benchmarks, tests).
TXN_BATCHES_ENV = "TRAILGATE_TXN_BATCHES"


@dataclass(frozen=True, slots=True)
class PgCapturePartition(InputPartition):
    """Transactions committed in ``[start, end)`` (LSNs)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The source's options and the group's resolved configuration (pickled to tasks)."""

    config: ExtractConfig
    batch_rows: int
    max_wal_bytes: int | None
    stop_file: str | None
    batch_window_ms: int | None = None  # ``batchWindowMs``: see spark.batch_window
    patient_window: bool = False  # ``batchWindowPatient``: no batch on quiet

    @classmethod
    def parse(cls, options: Any) -> SourceOptions:
        home, group = options.get("home"), options.get("group")
        if not home or not group:
            raise ValueError('the pgcapture source needs .option("home", …) and '
                             '.option("group", …)')
        memory = int(options.get("memoryLimitBytes") or DEFAULT_MEMORY_LIMIT)
        pid = int(options.get("processId") or 0) or None
        config = load_extract_config(Home(home), group, memory_limit_bytes=memory,
                                     process_id=pid)
        max_wal = options.get("maxWalBytesPerTrigger")
        window = options.get("batchWindowMs")
        return cls(config=config, batch_rows=int(options.get("batchRows") or 10_000),
                   max_wal_bytes=int(max_wal) if max_wal else None,
                   stop_file=options.get("stopFile") or None,
                   batch_window_ms=int(window) if window else None,
                   patient_window=str(options.get("batchWindowPatient") or "").lower()
                   == "true")


def _iso(julian: int) -> str:
    return datetime_from_julian(julian).isoformat(timespec="microseconds")


def _slot_row(conn: psycopg.Connection[Any], slot: str, third: str) -> tuple[int, int, Any]:
    """(restart_lsn, confirmed_flush_lsn, the SQL expression ``third``) of ``slot``;
    SourceError if missing."""
    row = conn.execute(
        "SELECT (restart_lsn - '0/0'::pg_lsn)::int8, "
        f"(confirmed_flush_lsn - '0/0'::pg_lsn)::int8, {third} "
        "FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()",
        (slot,)).fetchone()
    if row is None:
        raise SourceError(f"replication slot {slot!r} does not exist in "
                          f"{describe(conn.info.dsn)}: create it with ADD EXTRACT <group>, "
                          "TRANLOG, BEGIN NOW")
    return int(row[0] or 0), int(row[1] or 0), row[2]


def slot_state(conn: psycopg.Connection[Any], slot: str) -> tuple[int, int, int | None]:
    """(restart_lsn, confirmed_flush_lsn, active_pid) of ``slot``; SourceError if missing."""
    return _slot_row(conn, slot, "active_pid")


def wait_for_slot(conn: psycopg.Connection[Any], slot: str,
                  timeout: float = SLOT_WAIT_SECONDS) -> None:
    """Wait while another session holds the slot (a killed run's reader may still be
    finishing); a SourceError names the holder if it does not let go."""
    deadline = time.monotonic() + timeout
    while True:
        _, _, pid = slot_state(conn, slot)
        if pid is None:
            return
        if time.monotonic() > deadline:
            raise SourceError(f"replication slot {slot!r} is in use by server process {pid} "
                              f"for more than {timeout:.0f} s: is another Extract running on "
                              f"it? (SELECT pg_terminate_backend({pid}) ends it)")
        time.sleep(0.2)


def advance_slot(conn: psycopg.Connection[Any], slot: str, lsn: int, *,
                 patience: float = 0.0) -> bool:
    """Move the slot's confirmed position to ``lsn`` (never back); False if it is busy (for
    ``patience`` seconds, trying again every 0.1 s)."""
    deadline = time.monotonic() + patience
    while True:
        _, confirmed, _ = slot_state(conn, slot)
        if lsn <= confirmed:
            return True
        try:
            conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                         (slot, format_lsn(lsn)))
        except pgerrors.ObjectInUse:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
            continue
        except psycopg.Error as exc:
            raise SourceError(f"cannot advance replication slot {slot!r} to "
                              f"{format_lsn(lsn)}: {exc}") from None
        return True


#: A slot whose restart point lags its confirmed point by more gets a snapshot logged
#: (``PgCaptureStreamReader._snapshot_if_behind``): every stream opened on the slot (a
#: restart, a released hold, a lost connection) decodes from its restart point, and the
#: server's own snapshot comes only every 15 s.
RESTART_LAG_BYTES = 1 << 20
#: Value bytes per Arrow batch: small enough that the sink writes while the source reads.
BATCH_BYTES = 1 << 20
#: A long read of the stream hands on what it holds when the stream has nothing more
#: received (the read would wait for the server) and this long has passed since its last
#: batch: a backlog's first transactions reach the trail while the server still decodes
#: the rest, in pieces big enough that each piece's fixed cost stays small.  (What came
#: sooner after the last piece waits for the server's next message or the read's end.)
DRAINED_SECONDS = 0.01


class _Emitter:
    """Captured transactions to change rows, with the group's TABLE rules applied.

    With ``fast`` (and the C row path built) the capture loop itself encodes the row changes
    of tables whose rule has no TOKENS (``encode_plan``): they arrive as ``EncodedRun``s and
    go out as packed rows, no Python object per change.  Everything else takes the Python
    path, which gives the same bytes (``tests/integration/test_pg_fastpath.py``).
    """

    def __init__(self, config: ExtractConfig, fast: bool = True,
                 tracker: SnapshotTracker | None = None):
        self.rules = config.rules
        self.defs: dict[str, Any] = {}
        self.fast = fast and fastpath.available
        self.tracker = tracker
        self.ddl = extract_ddl(config)

    @property
    def watch(self) -> frozenset[str]:
        """The tables whose rows flag a transaction: the DDL trigger's (PgCapture's
        ``watch``)."""
        return self.ddl.table_names if self.ddl is not None else frozenset()

    def encode_plan(self, table: TableDef) -> bytes | bool | None:
        """PgCapture's ``EncodePlan``: drop, keep raw, or encode with this column mask."""
        if self.ddl is not None and self.ddl.is_ddl_table(table.qualified_name):
            return None  # marker rows: kept raw, read by the DDL pass
        rule = self.rules.rule(table.qualified_name)
        if rule is None:
            return False
        if (rule.spec.tokens or self.rules.is_heartbeat(table.qualified_name)
                or (self.tracker is not None and self.tracker.tracks(table.qualified_name))):
            return None  # the Python path: tokens, the heartbeat's hop stamp, a snapshot's table
        keep = rule.keep_columns(table)
        return b"" if keep is None else fastpath.keep_mask(len(table.columns), keep)

    def emit(self, t: CapturedTransaction, rows: ChangeRowBuilder, batch_rows: int
             ) -> Iterator[pa.RecordBatch]:
        """Change rows of ``t``.  Each new definition goes right before the first change
        that has it (a DDL in the middle of the transaction: the changes before it keep
        the old one), or after the transaction when none does."""
        txn = t.transaction
        changes = txn.changes
        if (not t.table_defs and not t.flagged and self.tracker is None
                and type(changes) is CapturedChanges):
            runs = changes.runs()
            if runs is not None:  # only C-encoded rows: each run is a packed row
                yield from _emit_runs(runs, rows, t.csn, txn.xid, changes.io_time,
                                      batch_rows)
                return
        pending: dict[str, list[TableDef]] = {}
        for d in t.table_defs:
            self.defs[d.qualified_name] = d
            if self.rules.rule(d.qualified_name) is not None:
                pending.setdefault(d.qualified_name, []).append(d)
        io_time = getattr(changes, "io_time", 0)
        csn, xid = t.csn, txn.xid
        ddl_plan: dict[int, list[DdlOut]] | None = None
        markers: set[int] = set()  # the DDL trigger's rows: read into DDL records, not written
        if t.flagged and self.ddl is not None:
            ddl_plan, markers = plan_ddl(_items(changes), self.ddl, io_time, csn)
        count = len(changes) - len(markers)
        tracker = self.tracker
        held: Change | EncodedRun | DdlOut | None = None  # the last output, until we know
        due: list[TableDef] = []  # definitions to write before the next output
        index = 0  # of the change, for @GETENV's position in the transaction
        for position, item in enumerate(_items(changes)):
            outs: list[Any] = ddl_plan.pop(position, []) if ddl_plan is not None else []
            if position in markers:
                pass
            elif type(item) is EncodedRun:
                outs.append(item)
                index += len(item.records)
                if pending:
                    due.extend(_defined_at(pending, item.table))
            else:
                if type(item) is tuple:
                    if pending:
                        due.extend(_defined_at(pending, item[0].table))
                    item = decode_row(item, io_time)
                out = self.rules.apply(item, self.defs.get(item.table), csn, xid,
                                       txn.commit_time, index, count)
                index += 1
                if out is not None:
                    if tracker is not None and tracker.tracks(out.table):
                        out = tracker.observe(out, xid, self.defs.get(out.table))
                    outs.append(out)
            for out in outs:
                if type(out) is DdlOut:
                    for note in out.notes:
                        rows.add_note(note, csn, xid)
                    if out.change is None:
                        continue
                    if out.define is not None:
                        self.defs[out.define.qualified_name] = out.define
                if held is not None:  # written before a definition that it predates
                    _add(rows, held, csn, xid, io_time, False)
                    if rows.full(batch_rows, BATCH_BYTES):
                        yield rows.take()
                for d in due:
                    rows.add_table(d, csn, xid)
                due.clear()
                held = out
        if tracker is not None:
            defined: set[str] = set()
            for table, change in self._snapshot_outputs(t, io_time, count, index):
                if held is not None:
                    _add(rows, held, csn, xid, io_time, False)
                    if rows.full(batch_rows, BATCH_BYTES):
                        yield rows.take()
                        defined.clear()  # a new batch: define the chunk's table again
                if table is not None and table.qualified_name not in defined:
                    rows.add_table(table, csn, xid)  # the chunk's table, before its rows
                    defined.add(table.qualified_name)
                held = change
        if held is not None:
            _add(rows, held, csn, xid, io_time, True)
        for d in due:  # definitions whose change the TABLE rules filtered out
            rows.add_table(d, csn, xid)
        for defs in pending.values():  # for the changes of later transactions
            for d in defs:
                rows.add_table(d, csn, xid)
        if rows.full(batch_rows, BATCH_BYTES):
            yield rows.take()

    def _snapshot_outputs(self, t: CapturedTransaction, io_time: int, count: int, index: int
                          ) -> Iterator[tuple[TableDef | None, Change]]:
        """What the transaction's snapshot messages become (after its own changes), each
        with its table's definition."""
        txn = t.transaction
        csn, xid = t.csn, txn.xid
        tracker = self.tracker
        assert tracker is not None
        for msg in t.messages:
            if msg.prefix != SNAPSHOT_PREFIX:
                continue
            for change in tracker.message(msg.content, xid, csn):
                snap = tracker.snapshot(change.table)
                table = self.defs.get(change.table) or (snap.definition if snap else None)
                change.io_time = io_time
                if change.op is not OpType.TRUNCATE:
                    out = self.rules.apply(change, table, csn, xid, txn.commit_time, index,
                                           count)
                    if out is None:
                        continue
                    change = out
                index += 1
                yield table, change


def _emit_runs(runs: list[EncodedRun], rows: ChangeRowBuilder, csn: int, xid: str,
               io_time: int, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """``_Emitter.emit`` of a transaction that is only C-encoded runs and brings no
    definition: the rows the general loop gives, without its bookkeeping."""
    last = len(runs) - 1
    for k, run in enumerate(runs):
        rows.add_packed(run.table.qualified_name, csn, xid, k == last, io_time,
                        b"".join(run.records))
        if k != last and rows.full(batch_rows, BATCH_BYTES):
            yield rows.take()
    if rows.full(batch_rows, BATCH_BYTES):
        yield rows.take()


def _items(changes: Any) -> Iterator[Any]:
    return changes.items() if isinstance(changes, TransactionChanges) else iter(changes)


def _defined_at(pending: dict[str, list[TableDef]], table: TableDef) -> list[TableDef]:
    """Before a change of ``table``: the pending definitions of its table up to ``table``
    itself, taken from ``pending`` (none when the change has an older one)."""
    defs = pending.get(table.qualified_name)
    if not defs:
        return []
    for i, d in enumerate(defs):
        if d is table:
            taken = defs[:i + 1]
            del defs[:i + 1]
            if not defs:
                del pending[table.qualified_name]
            return taken
    return []


def _add(rows: ChangeRowBuilder, out: Change | EncodedRun | DdlOut, csn: int, xid: str,
         io_time: int, last: bool) -> None:
    if isinstance(out, EncodedRun):
        rows.add_packed(out.table.qualified_name, csn, xid, last, io_time,
                        b"".join(out.records))
    elif isinstance(out, DdlOut):
        if out.define is not None:
            rows.add_define(out.define, csn, xid)
        if out.change is not None:
            rows.add_change(out.change, csn, xid, last)
    else:
        rows.add_change(out, csn, xid, last)


def read_partition(opts: SourceOptions, start: int, end: int, *, fast: bool = True
                   ) -> Iterator[pa.RecordBatch]:
    """The rows of transactions committed in ``[start, end)``, then the position row
    (``fast``: let the C row path encode what it can)."""
    cfg = opts.config
    emitter = _Emitter(cfg, fast, _tracker(cfg))
    key = (cfg.conninfo, cfg.slot)
    cap = PgCapture(cfg.conninfo, cfg.slot, cfg.publication, spill_dir=cfg.spill_dir,
                    memory_limit_bytes=cfg.memory_limit_bytes,
                    encode_plan=emitter.encode_plan if emitter.fast else None,
                    connections=_adopt(key), watch=emitter.watch)
    done = False
    try:
        wait_for_slot(cap.control_connection(), cfg.slot)
        yield from _batches(opts, cap, emitter, start, end)
        done = True
    finally:
        if done:
            pair = cap.hand_over()
            if pair is not None:
                _idle_connections[key] = pair
        cap.close()


def _rows(opts: SourceOptions, cap: PgCapture, emitter: _Emitter, start: int, end: int,
          rows: ChangeRowBuilder, batched: bool = False,
          drained: Callable[[], bool] | None = None
          ) -> Generator[pa.RecordBatch, None, int | None]:
    """``cap``'s transactions committed in ``[start, end)`` as full Arrow batches of change
    rows (the rest stays in ``rows``); returns the last one's commit time.  ``batched``
    (a stream's read): runs of small transactions the C capture loop took whole come as
    one transactions row each (``CapturedBatch``).  ``drained()`` true after a transaction
    (the stream has nothing more received): what ``rows`` holds goes out then, before the
    read waits for the server, if :data:`DRAINED_SECONDS` have passed since the last
    batch went out."""
    last_commit: int | None = None
    items: Iterator[CapturedTransaction | CapturedBatch] = (
        cap.read_batched(start - 1, end) if batched
        else cap.read(start_after_lsn=start - 1, upto_lsn=end))
    out = float("-inf")  # when the last batch went out (the first goes at once)
    for t in items:
        if type(t) is CapturedBatch:
            if t.blob is not None:
                rows.add_transactions(t.blob)
                if rows.full(opts.batch_rows, BATCH_BYTES):
                    yield rows.take()
                    out = time.monotonic()
            last_commit = t.commit_time
        else:
            assert type(t) is CapturedTransaction
            if t.csn >= end:
                break
            yield from emitter.emit(t, rows, opts.batch_rows)
            last_commit = t.transaction.commit_time
        if (drained is not None and len(rows) and time.monotonic() - out >= DRAINED_SECONDS
                and drained()):
            yield rows.take()
            out = time.monotonic()
    return last_commit


def _batches(opts: SourceOptions, cap: PgCapture, emitter: _Emitter, start: int, end: int,
             batched: bool = False) -> Iterator[pa.RecordBatch]:
    """``cap``'s transactions committed in ``[start, end)`` as Arrow batches of change
    rows, the last one ending with the position row."""
    rows = ChangeRowBuilder()
    last_commit = yield from _rows(opts, cap, emitter, start, end, rows, batched)
    rows.add_position(_position(opts, cap, end, last_commit, emitter.tracker))
    yield rows.take()


def _tracker(cfg: ExtractConfig) -> SnapshotTracker | None:
    """This run's snapshot tracker (the driver of a running group), else one that only
    marks the records of the tables the checkpoint says are being snapshotted."""
    found = active(cfg.home, cfg.group)
    if found is not None:
        return found
    ck = CheckpointStore(Path(cfg.home) / "dirchk").load(cfg.group, "EXTRACT")
    state = (ck.read_position.get("snapshots") if ck is not None else None) or []
    return SnapshotTracker("", state, live=False) if state else None


def _position(opts: SourceOptions, cap: PgCapture, end: int, last_commit: int | None,
              tracker: SnapshotTracker | None = None) -> dict[str, Any]:
    """The position row's value: where the read ended, the slot's restart point (the
    recovery position), the last commit's time, the snapshots under way."""
    restart, _, _ = slot_state(cap.control_connection(), opts.config.slot)
    position: dict[str, Any] = {"lsn": end, "recovery": {"lsn": restart}}
    if last_commit is not None:
        position["read_time"] = _iso(last_commit)
    if tracker is not None:
        state = tracker.state()
        if state:
            position["snapshots"] = state
    return position


def _settle_state(conn: psycopg.Connection[Any], slot: str) -> tuple[int, int, int]:
    """(restart_lsn, confirmed_flush_lsn, the server's WAL end) of ``slot`` in one query
    (the WAL end: flushed, or replayed on a standby); SourceError if the slot is
    missing."""
    restart, confirmed, wal_end = _slot_row(
        conn, slot, "(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
        "ELSE pg_current_wal_flush_lsn() END - '0/0'::pg_lsn)::int8")
    return restart, confirmed, int(wal_end or 0)


def _log_snapshot(conn: psycopg.Connection[Any], slot: str) -> int | None:
    """Log a running-transactions snapshot (``pg_log_standby_snapshot()``, PostgreSQL 16+),
    so slot ``slot``'s restart point can move past it; the end of its WAL record, or None
    when the server refuses (no privilege or function, a standby source: the caller stops
    trying).  A lost connection is raised."""
    try:
        row = conn.execute("SELECT (pg_log_standby_snapshot() - '0/0'::pg_lsn)::int8"
                           ).fetchone()
    except psycopg.Error as exc:
        if conn.closed or exc.sqlstate is None or exc.sqlstate.startswith("08"):
            raise
        log.info("slot %s: cannot log a standby snapshot (%s); its restart point moves with "
                 "the server's own every 15 s", slot, exc)
        return None
    return int(row[0]) if row is not None else 0


class StreamedSlot:
    """The driver's read of a group's slot over the replication protocol, one stream for
    many micro-batches (:mod:`trailgate.capture.postgres.walstream`).

    ``read(start, end)`` gives what ``read_partition`` gives for the same range; the
    stream is opened at the first read, and again whenever a read does not start where the
    last one ended (a replay) or the last one failed.  ``confirm(end)`` once the batch is
    durable moves the slot.  ``close`` before anything else reads the slot (a Spark task's
    ``read_partition``): a streamed slot is busy.  ``batched``: runs of small transactions
    go through in one C call and one change row each (``PgCapture.read_batched``; a
    snapshot's table and messages stay on the general path, as the encode plan and the
    batch's rules say); default: on unless ``TRAILGATE_TXN_BATCHES=0``.  ``snapshots``:
    whether confirmations log the restart point's snapshot (:meth:`confirm`).
    """

    def __init__(self, opts: SourceOptions, *, batched: bool | None = None,
                 snapshots: bool = True):
        self.opts = opts
        self.batched = (os.environ.get(TXN_BATCHES_ENV, "").strip() != "0"
                        if batched is None else batched)
        self._stream: WalStream | None = None
        self._capture: PgCapture | None = None
        self._emitter: _Emitter | None = None
        self._last_commit: int | None = None  # the last commit time read (position rows)
        self._snapshot_at = 0  # the confirmed LSN when a snapshot was last logged
        self._no_snapshot = not snapshots  # (or the server refused one: not tried again)
        self.opened = 0  # streams opened (tests, reports)

    def _open(self, start: int) -> tuple[PgCapture, _Emitter]:
        self.close()
        cfg = self.opts.config
        tracker = _tracker(cfg)
        emitter = _Emitter(cfg, tracker=tracker)
        # the stream first (it waits for another process to let go of the slot): the
        # server decodes while the control connection is opened
        stream = WalStream(cfg.conninfo, cfg.slot, cfg.publication, start,
                           max_gather=cfg.params.eof_delay)
        try:
            control = connect(cfg.conninfo,
                              application_name=f"trailgate {cfg.slot} stream control")
        except BaseException:
            stream.close()
            raise
        cap = PgCapture(cfg.conninfo, cfg.slot, cfg.publication, spill_dir=cfg.spill_dir,
                        memory_limit_bytes=cfg.memory_limit_bytes,
                        encode_plan=emitter.encode_plan if emitter.fast else None,
                        connections=(None, control), stream=stream, watch=emitter.watch)
        self._stream, self._capture, self._emitter = stream, cap, emitter
        if tracker is not None and tracker.live:
            tracker.on_change = cap.reset_plans
            tracker.attached = True
        self.opened += 1
        return cap, emitter

    def read(self, start: int, end: int, *, position: bool = True
             ) -> Iterator[pa.RecordBatch | ChangeColumns]:
        """The rows of transactions committed in ``[start, end)``, then (``position``) the
        position row; without it (the streamer's read) as ``ChangeColumns``, which the
        trail sink's appender takes as it takes a batch.  A read that does not go on from
        the last one opens the stream again, and a new stream hands out each table's
        definition again."""
        cap, emitter = self.open_at(start)
        if position:  # a micro-batch's read: the trail sink starts each from its state
            cap.republish_tables()
        batched = self.batched and emitter.fast
        done = False
        try:
            if position:
                yield from _batches(self.opts, cap, emitter, start, end, batched)
            else:  # the streamer's read: what arrived goes out before a wait, as columns
                rows = ColumnRowBuilder()  # (the appender is in this process: no Arrow)
                stream = self._stream
                last = yield from _rows(self.opts, cap, emitter, start, end, rows, batched,
                                        None if stream is None else stream.drained)
                if last is not None:
                    self._last_commit = last
                if len(rows):
                    yield rows.take()
            done = True
        finally:
            if not done:
                self.close()

    def open_at(self, start: int) -> tuple[PgCapture, _Emitter]:
        """The stream, opened (again) unless it is open and has handed out everything
        before ``start`` and nothing after."""
        stream, cap, emitter = self._stream, self._capture, self._emitter
        if (stream is None or cap is None or emitter is None or stream.closed
                or stream.torn or stream.position != start):
            return self._open(start)
        return cap, emitter

    @property
    def is_open(self) -> bool:
        """Whether a stream is open (and usable)."""
        return self._stream is not None and not self._stream.closed

    def position_row(self, end: int) -> dict[str, Any]:
        """The position row's value for a stream read through ``end``."""
        assert self._capture is not None
        tracker = self._emitter.tracker if self._emitter is not None else None
        return _position(self.opts, self._capture, end, self._last_commit, tracker)

    def available(self) -> int:
        """How far a read from the stream's position can go without waiting."""
        stream = self._stream
        return stream.available() if stream is not None and not stream.closed else 0

    def wait_available(self, after: int, timeout: float) -> int:
        """Wait a little for :meth:`available` to pass ``after``."""
        stream = self._stream
        if stream is None or stream.closed:
            time.sleep(min(timeout, 0.05))  # nothing to wake it: a short nap
            return 0
        return stream.wait_available(after, timeout)

    def interrupt(self) -> None:
        """Wake a :meth:`wait_available`."""
        stream = self._stream
        if stream is not None:
            stream.interrupt()

    def confirm(self, end: int) -> None:
        """Everything before ``end`` is durable in the trail.  Every RESTART_LAG_BYTES of
        confirmed WAL a running-transactions snapshot is logged too (as a batch's commit
        does, ``PgCaptureStreamReader._snapshot_if_behind``), so the slot's restart point
        follows the stream's confirmations, not the far apart micro-batches: a stream
        opened again (a released hold, a restart) decodes little it already wrote."""
        cap = self._capture
        if cap is None:
            return
        cap.acknowledge(end)
        if self._no_snapshot or end - self._snapshot_at < RESTART_LAG_BYTES:
            return
        self._snapshot_at = end
        self._no_snapshot = _log_snapshot(cap.control_connection(), self.opts.config.slot
                                          ) is None

    def snapshot_if_behind(self, end: int, slack: int, *, ahead: int | None = None,
                           wait: float = 0.0) -> int | None:
        """When the slot's restart point lags ``end`` by more than ``slack`` bytes, log a
        running-transactions snapshot now; the end of its record (a confirmation at or
        past it, once the server has decoded it, moves the restart point there), else
        None (also with no open stream or a lost one, when the server refuses one, or
        when its WAL ends more than ``ahead`` bytes past ``end``).  The restart point
        looked at is the one this stream's last confirmation gives: for up to ``wait``
        seconds the server is asked again until it has taken that confirmation (the
        stream's thread sends it, and the server moves the restart point as it takes
        it)."""
        cap = self._capture
        if cap is None or self._no_snapshot:
            return None
        conn = cap.control_connection()
        slot = self.opts.config.slot
        deadline = time.monotonic() + wait
        pause = 0.001
        while True:
            restart, confirmed, wal_end = _settle_state(conn, slot)
            if end - restart <= slack:
                return None
            if ahead is not None and wal_end - end > ahead:  # behind the server
                return None
            if not self.is_open:  # a lost stream: nothing would read to a snapshot
                return None
            if confirmed >= cap.acknowledged_lsn or time.monotonic() + pause > deadline:
                break
            time.sleep(pause)
            pause = min(2 * pause, 0.02)
        lsn = _log_snapshot(conn, slot)
        self._no_snapshot = lsn is None
        return lsn

    def close(self) -> None:
        cap, stream = self._capture, self._stream
        self._capture = self._stream = self._emitter = None
        if cap is not None:
            cap.close()
        if stream is not None:
            stream.close()


#: Per Python worker process: the connections of the last finished read of each slot, for
#: the next micro-batch (Spark reuses its Python workers): no new connections per batch.
_idle_connections: dict[tuple[str, str], tuple[Any, Any]] = {}


def _adopt(key: tuple[str, str]) -> tuple[Any, Any] | None:
    """The idle connections for ``key`` if they still work (the server may have restarted
    since), else ``None``: the capture opens new ones."""
    pair = _idle_connections.pop(key, None)
    if pair is None:
        return None
    try:
        for conn in pair:
            conn.execute("SELECT 1")
    except psycopg.Error:
        for conn in pair:
            with contextlib.suppress(psycopg.Error):
                conn.close()
        return None
    return pair


class PgCaptureStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side: offsets from the server's flushed WAL end; ``commit`` moves the slot."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._conn: psycopg.Connection[Any] | None = None
        self._target: int | None = None
        self._no_snapshot = False
        self._window: BatchWindow[int] | None = BatchWindow.of_ms(
            opts.batch_window_ms, patient=opts.patient_window)

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_conn": None, "_target": self._target,
                "_no_snapshot": self._no_snapshot, "_window": self._window}

    def _control(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.opts.config.conninfo,
                                 application_name=f"trailgate {self.opts.config.slot} driver")
        return self._conn

    def _query(self, sql: str) -> int:
        for attempt in (1, 2):  # one reconnect: a server restart should not stop the group
            try:
                row = self._control().execute(sql).fetchone()
                return int(row[0]) if row else 0
            except psycopg.OperationalError:
                if attempt == 2:
                    raise SourceError(f"lost the connection to "
                                      f"{describe(self.opts.config.conninfo)}") from None
                with contextlib.suppress(psycopg.Error):
                    self._control().close()
        return 0

    def _flush_lsn(self) -> int:
        return self._query("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8")

    def initialOffset(self) -> dict[str, int]:
        """A new query starts where the group's checkpoint says, or where the slot is."""
        cfg = self.opts.config
        _, confirmed, _ = slot_state(self._control(), cfg.slot)
        ck = CheckpointStore(Path(cfg.home) / "dirchk").load(cfg.group, "EXTRACT")
        done = ck.read_lsn if ck is not None else 0
        return {"lsn": max(done, confirmed)}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._flush_lsn()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict[str, int]:
        begin = int((start or self.initialOffset())["lsn"])
        if self._stopped():
            return {"lsn": begin}
        if self._window is None or self._target is not None:  # availableNow: at once
            return {"lsn": self._reach(begin)[0]}
        return {"lsn": self._window.settle(begin, lambda: self._reach(begin), self._stopped)}

    def _stopped(self) -> bool:
        return stop_requested(self.opts.stop_file)

    def _reach(self, begin: int) -> tuple[int, bool]:
        """(how far a batch from ``begin`` may reach now, whether that is the
        ``maxWalBytesPerTrigger`` bound)."""
        end = self._flush_lsn()
        if self._target is not None:
            end = min(end, self._target)
        full = False
        if self.opts.max_wal_bytes and end >= begin + self.opts.max_wal_bytes:
            end, full = begin + self.opts.max_wal_bytes, True
        return max(end, begin), full

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(start["lsn"]), int(end["lsn"])
        return [PgCapturePartition(lo, hi)] if hi > lo else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PgCapturePartition)
        return read_partition(self.opts, partition.start, partition.end)

    def commit(self, end: dict) -> None:
        """Everything before ``end`` is in the trail and the batch is committed."""
        cfg = self.opts.config
        conn = self._control()
        if not advance_slot(conn, cfg.slot, int(end["lsn"])):
            # a driver streaming the slot confirms through its stream; a peek still running
            # finishes and the next batch's commit moves the slot
            log.debug("slot %s busy; not advanced here", cfg.slot)
        self._snapshot_if_behind(conn, int(end["lsn"]))

    def _snapshot_if_behind(self, conn: psycopg.Connection[Any], end: int) -> None:
        """Log a running-transactions snapshot when the slot's restart point lags far
        behind its confirmed point, so the next advance can move it.

        Why: every read that opens a stream decodes from the restart point; PostgreSQL
        moves it only past such a snapshot, which the background writer logs every 15 s.
        Under a heavy load each peeking batch would re-decode up to 15 s of WAL (hundreds
        of MB) before its own, and a streamed slot does so whenever its stream opens
        again.  A streaming driver confirms through its stream, so the slot may be busy
        and its confirmed point not yet at ``end``: the lag is measured to ``end``.
        ``pg_log_standby_snapshot()`` (PostgreSQL 16+) logs one now; without the privilege
        or the function this is skipped for the rest of the run."""
        if self._no_snapshot:
            return
        cfg = self.opts.config
        restart, confirmed, _ = slot_state(conn, cfg.slot)
        if max(confirmed, end) - restart < RESTART_LAG_BYTES:
            return
        self._no_snapshot = _log_snapshot(conn, cfg.slot) is None

    def stop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()


class PgCaptureDataSource(DataSource):
    """The ``pgcapture`` format: an Extract group's capture (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "pgcapture"

    def schema(self) -> str:
        return CHANGE_SCHEMA_DDL

    def streamReader(self, schema: Any) -> PgCaptureStreamReader:
        return PgCaptureStreamReader(SourceOptions.parse(self.options))
