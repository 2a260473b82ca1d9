"""Committed transactions from a PostgreSQL logical replication slot (``pgoutput``).

The slot is read with SQL (``pg_logical_slot_peek_binary_changes``, in chunks) or from a
``WalStream``; either way it moves only when the caller acknowledges what is durable, so a
restart reads the same transactions again and ``start_after_lsn`` drops those already in the
trail.  pgoutput sends each transaction whole, at its commit; one larger than
``memory_limit_bytes`` spills to disk.  docs/postgres.md, "Capture".
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import psycopg
from psycopg import errors as pgerrors

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres import pgoutput as pgo
from trailgate.capture.postgres.changes import ChangeBuffer, SpilledChanges
from trailgate.capture.postgres.fastpath import Span
from trailgate.capture.postgres.rows import (
    CapturedRelation,
    EncodedRun,
    build_relation,
    julian_from_pg_micros,
)
from trailgate.capture.postgres.types import SESSION_SETTINGS, PgType, classify
from trailgate.capture.postgres.walstream import WalStream
from trailgate.db.connect import connect, describe
from trailgate.errors import SourceError
from trailgate.model import (
    Change,
    OpType,
    TableDef,
    Transaction,
)

__all__ = ["HEARTBEAT_PREFIX", "CapturedBatch", "CapturedTransaction", "EncodePlan", "PgCapture"]

#: Prefix of the non-transactional logical messages ``heartbeat()`` writes.
HEARTBEAT_PREFIX = "trailgate.heartbeat"
#: Transactional logical messages whose prefix starts with this are kept on the transaction.
MESSAGE_PREFIX = "trailgate."
_CHANGE_OVERHEAD = 240  # rough bytes of a Change with its dicts, besides the values
_VALUE_OVERHEAD = 80
_RAW_OVERHEAD = 120  # rough bytes of a RawRow besides its message
_RECORD_OVERHEAD = 40  # rough bytes of an encoded record in a run, besides its bytes
#: Records per EncodedRun (one Spark row each downstream).
RUN_RECORDS = 200
#: Rows of a SQL read per span (``_row_spans``).
SPAN_ROWS = 500
#: A batch of whole transactions (``read_batched``): at most this many, of at most
#: ``BATCH_TXN_ROWS`` rows each, with records of at most about ``BATCH_BYTES`` in all (one
#: transaction's own records at most that).  100-row transactions go through a batch too:
#: what a transaction then costs the driver besides its rows' C encoding is one copy.
BATCH_TXNS = 10_000
BATCH_TXN_ROWS = 1000
BATCH_BYTES = 1 << 20
_ROW_MESSAGES = frozenset(b"IUD")  # Insert, Update, Delete: kept raw, decoded on demand


#: Per table, what the capture loop does with its row changes: ``False`` drop them (not
#: captured), ``None`` keep them raw (``RawRow``, decoded later), bytes encode them now
#: (``EncodedRun``) keeping the columns the mask marks (``b""``: every column).
EncodePlan = Callable[[TableDef], "bytes | bool | None"]

@dataclass(slots=True)
class CapturedTransaction:
    """One committed transaction and where it sits in the source log.

    ``transaction.changes`` is a ``CapturedChanges``, or a ``SpilledChanges`` for a
    transaction that went to disk: iterate it.  ``table_defs`` holds the definitions that are
    new or changed since the previous transaction (write them before its changes); ``csn`` is
    the commit LSN and ``end_lsn`` the position to ``acknowledge`` once the transaction is durable.
    """

    transaction: Transaction
    csn: int
    end_lsn: int
    table_defs: list[TableDef] = field(default_factory=list)
    origin: str | None = None
    messages: list[pgo.LogicalMessage] = field(default_factory=list)
    flagged: bool = False  # it changed a table of ``PgCapture(watch=…)`` (DDL markers)

    @property
    def xid(self) -> str:
        return self.transaction.xid

    @property
    def spilled(self) -> bool:
        return isinstance(self.transaction.changes, SpilledChanges)


@dataclass(slots=True)
class CapturedBatch:
    """Whole small transactions the C capture loop took in one call (``read_batched``):
    ``blob`` their trail records and index (``trail.txn_batch``), ``None`` when none of
    them wrote a record; ``csn``, ``end_lsn`` and ``commit_time`` (Julian) are the last
    one's, ``count`` how many there are."""

    blob: bytes | None
    csn: int
    end_lsn: int
    commit_time: int
    count: int


class PgCapture:
    """Reads committed transactions from logical replication slot ``slot``.

    ``encode_plan`` (see ``EncodePlan``) lets the read loop encode row changes into trail
    records itself with the C row path, the Extract's fast path: no Python object per row.
    ``watch``: tables (``schema.table``, lower case) whose row changes flag their
    transaction (``CapturedTransaction.flagged``; the DDL marker tables), looked at only
    when the row changes move to another table.
    """

    def __init__(self, conninfo: str, slot: str, publication: str, *,
                 spill_dir: str | os.PathLike[str] | None = None,
                 memory_limit_bytes: int = 64 * 1024 * 1024, chunk_rows: int = 1000,
                 encode_plan: EncodePlan | None = None,
                 connections: tuple[Any, Any] | None = None,
                 stream: WalStream | None = None, watch: frozenset[str] = frozenset()):
        self.conninfo = conninfo
        self.slot = slot
        self.publication = publication
        self.spill_dir = Path(spill_dir) if spill_dir else Path(tempfile.gettempdir()) / \
            f"trailgate-spill-{slot}"
        self.memory_limit_bytes = memory_limit_bytes
        self.chunk_rows = chunk_rows
        # (reader, control): connections a previous capture handed over, else opened on use
        self._reader: psycopg.Connection[Any] | None = connections[0] if connections else None
        self._control: psycopg.Connection[Any] | None = connections[1] if connections else None
        self._relations: dict[int, CapturedRelation] = {}
        self._published: dict[str, TableDef] = {}  # last definition handed out per table
        self._type_cache: dict[tuple[int, int], PgType] = {}
        self._delivered_lsn = 0  # commit LSN of the last transaction handed out (or skipped)
        self._unacked: dict[int, int] = {}  # csn -> end_lsn of transactions handed out
        self._last_end_lsn = 0
        self._acked_lsn = 0
        self._marks: list[tuple[int, int]] = []  # (heartbeat LSN, end LSN that must be acked)
        self._reading = False
        self._pending_ack = 0
        self._previous: CapturedTransaction | None = None
        self._encode_plan = encode_plan if fastpath.available else None
        self._plans: dict[int, tuple[CapturedRelation, bytes | bool | None]] = {}
        self._plans_epoch = 0  # counts reset_plans: a capture loop asks its plan again
        self._stream = stream
        self._watch = watch
        # relation oid -> (layout, keep mask, table name), or None (rows dropped): the
        # relations whose rows a batch (``read_batched``) may take, each asked of the
        # encode plan and its definition handed out; cleared when either may change
        self._batch_rels: dict[int, tuple[bytes, bytes | None, str] | None] = {}

    # --- connections ------------------------------------------------------------------------

    def _control_conn(self) -> psycopg.Connection[Any]:
        if self._control is None or self._control.closed:
            self._control = connect(self.conninfo, application_name=f"trailgate {self.slot}")
        return self._control

    def _reader_conn(self) -> psycopg.Connection[Any]:
        if self._reader is None or self._reader.closed:
            self._reader = connect(self.conninfo, settings=SESSION_SETTINGS,
                                   application_name=f"trailgate {self.slot} reader")
        return self._reader

    def control_connection(self) -> psycopg.Connection[Any]:
        """The connection for queries about the slot (not the one that reads it)."""
        return self._control_conn()

    def hand_over(self) -> tuple[Any, Any] | None:
        """Give up this capture's (reader, control) connections for a later capture of the
        same slot (``connections=``): a micro-batch need not open new ones.  ``None`` when
        they are not both healthy; either way, ``close`` no longer touches them."""
        pair = (self._reader, self._control)
        self._reader = self._control = None
        if any(c is None or c.closed or c.broken for c in pair):
            for conn in pair:
                if conn is not None:
                    with contextlib.suppress(psycopg.Error):
                        conn.close()
            return None
        return pair

    def close(self) -> None:
        """Close connections and remove spilled data."""
        self._drop_previous()
        for conn in (self._reader, self._control):
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    conn.close()
        self._reader = self._control = None

    def __enter__(self) -> PgCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- slot position ------------------------------------------------------------------------

    def slot_position(self) -> tuple[int, int]:
        """The slot's (restart_lsn, confirmed_flush_lsn)."""
        row = self._control_conn().execute(
            "SELECT restart_lsn - '0/0'::pg_lsn, confirmed_flush_lsn - '0/0'::pg_lsn "
            "FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()",
            (self.slot,)).fetchone()
        if row is None:
            raise self._no_slot()
        return int(row[0] or 0), int(row[1] or 0)

    def _no_slot(self) -> SourceError:
        return SourceError(
            f"replication slot {self.slot!r} does not exist in {describe(self.conninfo)}: "
            "create it with ADD EXTRACT <group>, TRANLOG, BEGIN NOW")

    def acknowledge(self, lsn: int) -> None:
        """The caller made everything up to ``lsn`` durable: let the slot move past it.

        ``lsn`` may be a transaction's ``end_lsn`` or its ``csn``; the slot then moves to
        that transaction's end, and past any heartbeat seen after it.
        """
        lsn = self._unacked.get(lsn, lsn)
        self._acked_lsn = max(self._acked_lsn, lsn)
        for csn in [c for c, end in self._unacked.items() if end <= lsn]:
            del self._unacked[csn]
        if self._reading:
            self._pending_ack = max(self._pending_ack, lsn)
            return
        self._advance()

    def _advance(self) -> None:
        target = self._acked_lsn
        keep = []
        for mark, needed in self._marks:
            if needed <= self._acked_lsn:
                target = max(target, mark)
            else:
                keep.append((mark, needed))
        self._marks = keep
        if target <= 0:
            return
        if self._stream is not None:
            self._stream.confirm(target)
            return
        _, confirmed = self.slot_position()
        if target <= confirmed:
            return
        try:
            self._control_conn().execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                                         (self.slot, pgo.format_lsn(target)))
        except pgerrors.ObjectInUse:
            raise SourceError(f"replication slot {self.slot!r} is in use by another process: "
                              "is another Extract running on it?") from None
        except psycopg.Error as exc:
            raise SourceError(f"cannot advance replication slot {self.slot!r} to "
                              f"{pgo.format_lsn(target)}: {exc}") from None

    @property
    def acknowledged_lsn(self) -> int:
        """The highest LSN acknowledged so far in this session."""
        return self._acked_lsn

    def heartbeat(self) -> int:
        """Write a heartbeat into the log so an idle slot can advance; return its LSN.

        The next ``read`` sees the heartbeat after every transaction that committed before
        it; once those are acknowledged (immediately, when there are none) the slot moves to
        the heartbeat, so WAL is not kept for tables nobody changes.
        """
        conn = self._control_conn()
        flush = ", true" if conn.info.server_version >= 170000 else ""
        try:
            row = conn.execute(f"SELECT pg_logical_emit_message(false, %s, %s{flush}) "
                               "- '0/0'::pg_lsn", (HEARTBEAT_PREFIX, self.slot)).fetchone()
        except psycopg.Error as exc:
            raise SourceError(f"cannot write a heartbeat message in {describe(self.conninfo)}: "
                              f"{exc}") from None
        assert row is not None
        return int(row[0])

    # --- reading ------------------------------------------------------------------------------

    def read(self, start_after_lsn: int | None = None,
             max_transactions: int | None = None,
             upto_lsn: int | None = None) -> Iterator[CapturedTransaction]:
        """Yield committed transactions not yet handed out, in commit order.

        ``start_after_lsn``: drop transactions whose commit LSN is at or before it (they
        are already in the trail).  ``upto_lsn``: the server stops decoding there (every
        transaction committed before it is included; a few after it may be too), so a
        bounded read does not decode the whole backlog.  Each yielded transaction's changes
        stay valid until the next one is requested.
        """
        if start_after_lsn is not None:
            self._delivered_lsn = max(self._delivered_lsn, start_after_lsn)
        self._drop_previous()
        if self._stream is not None:
            yield from self._read_stream(self._stream, max_transactions, upto_lsn)
            return
        conn = self._reader_conn()
        self._reading = True
        stream: Generator[tuple[int, bytes], None, None] | None = None
        transactions: Generator[CapturedTransaction, None, None] | None = None
        try:
            with conn.cursor(binary=True) as cur:
                # psycopg types stream() an Iterator; it is a generator, closed to cancel
                stream = cast("Generator[tuple[int, bytes], None, None]", cur.stream(
                    "SELECT (lsn - '0/0'::pg_lsn)::int8, data FROM "
                    "pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, "
                    "'proto_version', '1', 'publication_names', %s, 'messages', 'true')",
                    (self.slot, None if upto_lsn is None else pgo.format_lsn(upto_lsn),
                     pgo.quote_ident(self.publication)), size=self.chunk_rows))
                transactions = self._transactions(_row_spans(stream))
                yield from self._deliver(transactions, max_transactions)
                transactions.close()
                stream.close()  # cancels the rest of the query when we stopped early
        except pgerrors.UndefinedObject as exc:
            if "slot" in str(exc):
                raise self._no_slot() from None
            raise SourceError(f"{exc} in {describe(self.conninfo)}: ADD EXTRACT creates the "
                              f"publication {self.publication!r}") from None
        except pgerrors.ObjectInUse:
            raise SourceError(f"replication slot {self.slot!r} is in use by another process: "
                              "is another Extract running on it?") from None
        except psycopg.OperationalError as exc:
            raise SourceError(f"lost the connection to {describe(self.conninfo)} while reading "
                              f"slot {self.slot!r}: {exc}") from None
        except psycopg.Error as exc:
            raise SourceError(f"cannot read replication slot {self.slot!r} in "
                              f"{describe(self.conninfo)}: {exc}") from None
        finally:
            for gen in (transactions, stream):
                if gen is not None:
                    with contextlib.suppress(psycopg.Error):
                        gen.close()
            self._read_done(not conn.closed)

    def read_batched(self, start_after_lsn: int | None, upto_lsn: int
                     ) -> Iterator[CapturedTransaction | CapturedBatch]:
        """``read`` from a stream, where a run of small transactions that need nothing
        but their rows encoded comes as one ``CapturedBatch`` (the C path, when it is built
        and the capture has an ``encode_plan``); anything else, from the first message a
        batch does not take, as ``CapturedTransaction``s.  Each item is taken whole."""
        if self._stream is None:
            raise ValueError("PgCapture.read_batched reads a stream")
        if start_after_lsn is not None:
            self._delivered_lsn = max(self._delivered_lsn, start_after_lsn)
        self._drop_previous()
        yield from self._read_stream(self._stream, None, upto_lsn, batched=True)

    def _read_stream(self, stream: WalStream, max_transactions: int | None,
                     upto_lsn: int | None, batched: bool = False
                     ) -> Iterator[CapturedTransaction]:
        if upto_lsn is None:
            raise ValueError("PgCapture.read from a stream needs upto_lsn")
        if max_transactions is not None:  # a span holds many: a stop inside one loses some
            raise ValueError("PgCapture.read from a stream takes every transaction up to "
                             "upto_lsn: max_transactions is for a read with SQL")
        self._reading = True
        transactions = self._transactions(stream.spans(upto_lsn),
                                          upto_lsn if batched else None)
        whole = False
        try:
            yield from self._deliver(transactions, max_transactions)
            whole = True
        finally:
            transactions.close()
            if not whole:  # a span's other transactions may not have been taken
                stream.abandon()
            self._read_done(True)

    def _deliver(self, transactions: Iterator[Any],
                 max_transactions: int | None) -> Iterator[Any]:
        """Hand out transactions; each one's spilled file goes when the next is asked for."""
        for count, captured in enumerate(transactions, 1):
            if type(captured) is CapturedTransaction:
                self._previous = captured
            yield captured
            if max_transactions is not None and count >= max_transactions:
                return
            self._drop_previous()

    def _read_done(self, can_advance: bool) -> None:
        """A read ended: acknowledgements made meanwhile take effect now."""
        self._reading = False
        if (self._pending_ack or self._marks) and can_advance:
            self._pending_ack = 0
            self._advance()

    def reset_plans(self) -> None:
        """Ask the encode plan again for every table (what it answers has changed)."""
        self._plans.clear()
        self._plans_epoch += 1
        self._batch_rels.clear()

    def republish_tables(self) -> None:
        """Hand out each table's definition again with its next transaction, as a new
        read of the slot would (a consumer that starts over, e.g. a new trail file, needs
        them)."""
        self._published.clear()
        self._batch_rels.clear()

    def _drop_previous(self) -> None:
        prev, self._previous = self._previous, None
        if prev is not None and isinstance(prev.transaction.changes, SpilledChanges):
            prev.transaction.changes.path.unlink(missing_ok=True)

    def _transactions(self, spans: Iterator[Span], upto: int | None = None
                      ) -> Generator[Any, None, None]:
        """The transactions of a stream of spans (``fastpath.Span``), each taken whole.

        Runs of one table's row changes go to the C encoder (``rows_encoder``) in one call;
        every other message, and a row change C leaves to Python, is handled here.  With
        ``upto`` (``read_batched``), a run of whole small transactions committing before it
        goes to ``txns_encoder`` in one call, from each Begin met between transactions."""
        begin: pgo.Begin | None = None
        buffer: ChangeBuffer | None = None
        skip = False
        new_defs: list[TableDef] = []
        origin: str | None = None
        messages: list[pgo.LogicalMessage] = []
        rel_key: bytes | None = None  # the relation of the previous row change
        rel: CapturedRelation | None = None
        plan: bytes | bool | None = None
        name, layout, mask = "", b"", None  # of rel, for the C encoder
        run: EncodedRun | None = None  # the run the next encoded row may join
        io_time = 0
        encode = fastpath.rows_encoder if self._encode_plan is not None else None
        next_mark = fastpath.next_mark
        watch, flagged = self._watch, False
        epoch = self._plans_epoch
        batch = fastpath.txns_encoder if upto is not None and encode is not None else None
        batch_rels = self._batch_rels
        try:
            for chunk, j, hi in spans:
                while j < hi:
                    lsn, data = chunk[j]
                    if data is None:  # a keepalive
                        j += 1
                        continue
                    if begin is None and batch is not None and data and data[0] == 0x42:
                        j2, count, blob, csn, end_lsn, commit_time = batch(
                            chunk, j, hi, batch_rels, self._delivered_lsn, upto, BATCH_TXNS,
                            BATCH_BYTES, BATCH_TXN_ROWS)
                        if count:
                            self._delivered_lsn = csn
                            self._last_end_lsn = end_lsn
                            self._unacked[csn] = end_lsn
                            yield CapturedBatch(blob, csn, end_lsn, commit_time, count)
                            j = j2
                            continue
                    if data[0] in _ROW_MESSAGES and begin is not None and len(data) > 5:
                        if buffer is None:  # a transaction already in the trail
                            j = max(j + 1, next_mark(chunk, j, hi))
                            continue
                        key = data[1:5]
                        if key != rel_key or rel is None:
                            rel = self._rel(int.from_bytes(key, "big"), lsn)
                            self._use(rel, new_defs)
                            rel_key, plan, run = key, self._plan(rel), None
                            name, layout, mask = rel.table.qualified_name, rel.layout, plan or None
                            if watch and name.lower() in watch:
                                flagged = True
                            elif batch is not None and plan is not None:  # defined: handed out
                                batch_rels[int.from_bytes(key, "big")] = (
                                    (layout, plan or None, name) if isinstance(plan, bytes)
                                    else None)
                        if plan is False:
                            j += 1
                            continue
                        if plan is not None and encode is not None:
                            if run is None or len(run.records) >= RUN_RECORDS:
                                run = EncodedRun(rel.table, [])
                            records = run.records
                            had = len(records)
                            j2, nbytes = encode(chunk, j, hi, key, layout, mask, name, io_time,
                                                records, RUN_RECORDS - had,
                                                max(1, buffer.limit - buffer.size))
                            if j2 > j:
                                if not had:
                                    buffer.changes.append(run)
                                taken = len(records) - had
                                buffer.count += taken
                                buffer.size += nbytes + taken * _RECORD_OVERHEAD
                                if buffer.size > buffer.limit:
                                    buffer.spill()
                                    run = None  # pickled: a new run starts
                                j = j2
                                continue
                        # C left this change to Python: kept raw, decoded later
                        run = None
                        buffer.changes.append((rel, lsn, data))
                        buffer.count += 1
                        buffer.size += len(data) + _RAW_OVERHEAD
                        if buffer.size > buffer.limit:
                            buffer.spill()
                        j += 1
                        continue
                    j += 1
                    run = None
                    msg = pgo.decode(data, lsn=lsn)
                    if type(msg) is not pgo.Commit and type(msg) is not pgo.Begin:
                        rel_key = None  # a Relation message, say: the next row looks again
                    elif rel is not None and (watch or epoch != self._plans_epoch
                                              or self._published.get(name) is not rel.table):
                        rel_key = None  # flag, plan or definition: the next row looks again
                    epoch = self._plans_epoch
                    if type(msg) is pgo.Commit:  # first: every transaction has one
                        if begin is None:
                            raise SourceError(f"pgoutput Commit without Begin at LSN "
                                              f"{pgo.format_lsn(lsn)} in slot {self.slot!r}")
                        if not skip and buffer is not None:
                            captured = self._finish(begin, msg, buffer, new_defs, origin,
                                                    messages, io_time)
                            captured.flagged = flagged
                            yield captured
                        buffer, begin = None, None
                    elif type(msg) is pgo.Begin:
                        begin, origin, messages, new_defs = msg, None, [], []
                        flagged = False
                        io_time = julian_from_pg_micros(msg.commit_time)
                        skip = msg.final_lsn <= self._delivered_lsn
                        buffer = None if skip else ChangeBuffer(self.spill_dir,
                                                                 self.memory_limit_bytes)
                    elif isinstance(msg, pgo.Relation):
                        self._relations[msg.oid] = self._relation(msg)
                        batch_rels.clear()
                    elif isinstance(msg, pgo.TypeMessage | pgo.Origin):
                        if isinstance(msg, pgo.Origin):
                            origin = msg.name
                    elif isinstance(msg, pgo.LogicalMessage):
                        if not msg.transactional:
                            if msg.prefix == HEARTBEAT_PREFIX:
                                self._marks.append((msg.lsn, self._last_end_lsn))
                        elif msg.prefix.startswith(MESSAGE_PREFIX) and not skip:
                            messages.append(msg)
                    elif begin is None:
                        raise SourceError(f"pgoutput change outside a transaction at LSN "
                                          f"{pgo.format_lsn(lsn)} in slot {self.slot!r}")
                    elif not skip and buffer is not None:
                        for change in self._changes(msg, begin, lsn, new_defs):
                            buffer.append(change, _estimate(change))
        finally:
            if buffer is not None:
                buffer.discard()

    def _finish(self, begin: pgo.Begin, commit: pgo.Commit, buffer: ChangeBuffer,
                new_defs: list[TableDef], origin: str | None,
                messages: list[pgo.LogicalMessage], io_time: int) -> CapturedTransaction:
        """``io_time``: the Begin's commit time, as a Julian timestamp."""
        commit_time = (io_time if commit.commit_time == begin.commit_time
                       else julian_from_pg_micros(commit.commit_time))
        txn = Transaction(xid=str(begin.xid), csn=commit.commit_lsn, changes=[],
                          commit_time=commit_time)
        txn.changes = buffer.finish(io_time)
        self._delivered_lsn = commit.commit_lsn
        self._last_end_lsn = commit.end_lsn
        self._unacked[commit.commit_lsn] = commit.end_lsn
        return CapturedTransaction(txn, commit.commit_lsn, commit.end_lsn, new_defs, origin,
                                   messages)

    # --- changes ------------------------------------------------------------------------------

    def _rel(self, oid: int, lsn: int) -> CapturedRelation:
        try:
            return self._relations[oid]
        except KeyError:
            raise SourceError(f"pgoutput change for relation {oid} without its Relation message "
                              f"at LSN {pgo.format_lsn(lsn)} in slot {self.slot!r}") from None

    def _plan(self, rel: CapturedRelation) -> bytes | bool | None:
        """The encode plan of ``rel`` (asked once per Relation message)."""
        if self._encode_plan is None:
            return None
        cached = self._plans.get(id(rel))
        if cached is not None and cached[0] is rel:
            return cached[1]
        if len(self._plans) > 4096:
            self._plans.clear()
        plan = self._encode_plan(rel.table)
        self._plans[id(rel)] = (rel, plan)
        return plan

    def _use(self, rel: CapturedRelation, new_defs: list[TableDef]) -> None:
        name = rel.table.qualified_name
        published = self._published.get(name)
        if published is not rel.table:
            if published != rel.table:
                new_defs.append(rel.table)
            self._published[name] = rel.table  # equal or new: next time by identity

    def _changes(self, msg: pgo.Message, begin: pgo.Begin, lsn: int,
                 new_defs: list[TableDef]) -> Iterator[Change]:
        """The changes of a message other than a row change (those are kept raw)."""
        io_time = julian_from_pg_micros(begin.commit_time)
        if isinstance(msg, pgo.Truncate):
            for oid in msg.relation_oids:
                rel = self._rel(oid, lsn)
                self._use(rel, new_defs)
                yield Change(OpType.TRUNCATE, rel.table.qualified_name, io_time=io_time,
                             audit_seq=lsn >> 24, audit_pos=lsn)

    # --- relations and types ------------------------------------------------------------------

    def _relation(self, msg: pgo.Relation) -> CapturedRelation:
        types = [self._pgtype(col.type_oid, col.typmod) for col in msg.columns]
        return build_relation(msg, types, self._not_null(msg.oid))

    def _not_null(self, oid: int) -> set[str]:
        rows = self._control_conn().execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
            "AND NOT attisdropped AND attnotnull", (oid,)).fetchall()
        return {r[0] for r in rows}

    def _pgtype(self, oid: int, typmod: int) -> PgType:
        key = (oid, typmod)
        cached = self._type_cache.get(key)
        if cached is None:
            # A domain converts as its base type, so name it by its base type.
            row = self._control_conn().execute(
                "SELECT CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, "
                "CASE WHEN %s >= 0 THEN %s ELSE t.typtypmod END) "
                "ELSE format_type(t.oid, %s) END FROM pg_type t WHERE t.oid = %s",
                (typmod, typmod, typmod if typmod >= 0 else None, oid)).fetchone()
            cached = classify(row[0] if row else "text")
            self._type_cache[key] = cached
        return cached


def _row_spans(rows: Iterator[tuple[int, Any]]) -> Iterator[Span]:
    """Rows of a SQL read as spans that end at each commit (a consumer may stop between
    transactions) or after ``SPAN_ROWS`` rows."""
    chunk: list[tuple[int, Any]] = []
    for row in rows:
        data = row[1]
        if type(data) is not bytes:
            data = bytes(data)
            row = (row[0], data)
        chunk.append(row)
        if data[:1] == b"C" or len(chunk) >= SPAN_ROWS:
            yield chunk, 0, len(chunk)
            chunk = []
    if chunk:
        yield chunk, 0, len(chunk)


def _estimate(change: Change) -> int:
    size = _CHANGE_OVERHEAD
    for image in (change.after, change.before):
        if image:
            size += sum(_VALUE_OVERHEAD + (len(v) if v else 0) for v in image.values())
    return size
