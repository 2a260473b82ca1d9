"""``df.writeStream.format("trail")``: change rows appended to a trail, exactly once.

A trail is written in order, so each batch has one writer task, under a lock on the trail:
it resumes the file the run's previous batch left or starts a new one (seed 002's append
mode), appends the transactions not already in the trail (a replay's are skipped by CSN and
XID), fsyncs and records its state.  The driver's commit then writes the group checkpoint,
before Spark lets the source forget the data.  Options (``formatRelease``/``trailByteOrder``
for 12c+ formats among them): docs/spark.md, "Writing a trail".
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from trailgate.changes.change_rows import (
    OP_DEFINE,
    OP_METADATA,
    OP_NOTE,
    OP_PACKED,
    OP_POSITION,
    OP_TXNS,
    ChangeColumns,
)
from trailgate.checkpoint import Checkpoint, CheckpointStore
from trailgate.model import OpType, TableDef, TrailPosition
from trailgate.spark.trail_sink_state import (
    LastWritten,
    SinkState,
    find_last_transaction,
    load_state,
    locked,
    save_state,
)
from trailgate.spark.trail_source import TrailDataSource as _TrailSource
from trailgate.trail.header import DatabaseInfo
from trailgate.trail.keys import use_home
from trailgate.trail.naming import TrailName
from trailgate.trail.records import IO_TYPE_OFFSET, split_run
from trailgate.trail.release import format_for_level, parse_release
from trailgate.trail.txn_batch import OPERATIONS, TxnBatch
from trailgate.trail.writer import TrailWriter

if TYPE_CHECKING:
    import pyarrow as pa

notes_log = logging.getLogger("trailgate.ddl")

__all__ = ["MESSAGE_SCHEMA", "SinkOptions", "TrailAppender", "TrailCommitMessage",
           "TrailDataSource", "TrailStreamWriter", "commit_checkpoint", "message_json",
           "message_of", "write_change_batches", "write_in_task", "write_task"]

_STAT_KIND: dict[int, str] = {  # by IO type
    OpType.INSERT: "insert", OpType.UPDATE: "update", OpType.FIELD_COMP: "update",
    OpType.PK_UPDATE: "update", OpType.DELETE: "delete", OpType.TRUNCATE: "truncate",
    OpType.DDL: "ddl",
}


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, checked on the driver (plain data: it pickles to tasks)."""

    trail: str
    label: str  # the trail as the group checkpoint names it (the registry's ./dirdat/aa)
    megabytes: int
    run_id: str
    state_file: str
    home: str | None
    group: str | None
    producer: str
    uri_history: tuple[str, ...] = ()
    compatibility: int | None = None
    release: str | None = None
    byte_order: str | None = None
    named_as: str | None = None  # the trail the headers name (a remote Pump's RMTTRAIL)
    encrypt: str | None = None  # ENCRYPTTRAIL's cipher (AES256…); None: in the clear
    key_name: str | None = None  # ENCRYPTTRAIL … KEYNAME; None: the master key
    database: str | None = None  # the header's DatabaseInfo as JSON; None: the default

    @classmethod
    def parse(cls, options: Mapping[str, str], default_run_id: str) -> SinkOptions:
        path = options.get("path")
        if not path:
            raise ValueError('the trail sink needs a trail: .option("path", "dirdat/aa")')
        trail = TrailName(Path(path).absolute())
        try:
            megabytes = int(options.get("megabytes", "500"))
        except ValueError:
            megabytes = 0
        if megabytes <= 0:
            raise ValueError(f"option megabytes={options.get('megabytes')!r}: expected a "
                             "positive whole number")
        home, group = options.get("home"), options.get("group")
        if bool(home) != bool(group):
            raise ValueError("the trail sink's home and group options go together")
        state = options.get("stateFile")
        if not state:
            state = (str(Path(home) / "dirchk" / f"{group.upper()}.trailstate") if home and group
                     else str(trail.directory / f".{trail.prefix}.trailstate"))
        return cls(trail=str(trail), label=options.get("trailLabel") or path,
                   megabytes=megabytes,
                   run_id=options.get("runId") or default_run_id, state_file=state,
                   home=home, group=group.upper() if group else None,
                   producer=options.get("producer", "TRAILGATE"),
                   uri_history=tuple(json.loads(options.get("uriHistory") or "[]")),
                   compatibility=int(options["compatibility"]) if options.get(
                       "compatibility") else None,
                   release=options.get("formatRelease") or None,
                   byte_order=_byte_order(options.get("trailByteOrder")),
                   named_as=options.get("namedAs") or None,
                   encrypt=options.get("encryptTrail") or None,
                   key_name=options.get("keyName") or None,
                   database=_database(options.get("database")))

    def writer(self) -> TrailWriter:
        """A writer for this trail with the header fields the options ask for."""
        if self.home:
            use_home(Path(self.home))  # its recovery scan reads the trail with these keys
        extra: dict[str, Any] = {}
        if self.release is not None:
            extra["format"] = parse_release(self.release, self.byte_order)
        elif self.compatibility is not None:
            extra["format"] = format_for_level(self.compatibility, self.byte_order)
        if self.database is not None:
            extra["database"] = DatabaseInfo(**json.loads(self.database))
        return TrailWriter(self.trail, megabytes=self.megabytes, producer=self.producer,
                           home=self.home, uri_history=list(self.uri_history),
                           named_as=self.named_as, encrypt=self.encrypt,
                           key_name=self.key_name, **extra)


def _database(text: str | None) -> str | None:
    """The ``database`` option checked now (a JSON object of DatabaseInfo's fields), so a
    bad value is named here rather than failing in a writer task."""
    if not text:
        return None
    kinds = {f.name: type(f.default) for f in dataclasses.fields(DatabaseInfo)}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or any(
            type(value.get(k)) is not kinds.get(k) for k in value):
        raise ValueError(f"option database={text!r}: expected a JSON object of "
                         + ", ".join(f"{k} ({t.__name__})" for k, t in kinds.items()))
    return text


def _byte_order(text: str | None) -> str | None:
    if not text:
        return None
    if text not in ("big", "little"):
        raise ValueError(f"option trailByteOrder={text!r}: expected big or little")
    return text


@dataclass(slots=True)
class TrailCommitMessage(WriterCommitMessage):
    """What a writer task made durable.  Plain values only: it is unpickled in another
    process, which need not share the task's classes."""

    trail: str
    position: tuple[int, int] | None  # (seqno, rba)
    last_csn: int | None
    last_xid: str | None
    last_io_time: int | None
    source_position: dict[str, Any] | None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    transactions: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)  # report lines of what was written


def _recovery_start(opts: SinkOptions, state: SinkState | None
                    ) -> tuple[TrailPosition | None, LastWritten | None]:
    """Where a scan for the last complete transaction can begin: the last durable boundary
    recorded by the state, else by the group checkpoint, else the trail's first file."""
    if state is not None and state.trail == opts.trail:
        return state.position, state.last
    if opts.home and opts.group:
        ck = CheckpointStore(Path(opts.home) / "dirchk").load(opts.group, "EXTRACT")
        if ck is not None and ck.write_position is not None and ck.write_trail == opts.label:
            last = LastWritten()
            if ck.last_csn is not None:
                last.add(int(ck.last_csn), ck.last_xid or "")
            return ck.write_position, last
    return None, None


def _open_writer(opts: SinkOptions, state: SinkState | None
                 ) -> tuple[TrailWriter, LastWritten, dict[str, TableDef]]:
    writer = opts.writer()
    if state is not None and state.run_id == opts.run_id and state.trail == opts.trail:
        try:
            writer.resume(state.seqno, state.length, state.tables,
                          last_csn=state.last.csn, last_io_time=state.last_io_time)
            return writer, state.last, dict(state.tables)
        except (OSError, ValueError):
            pass  # not what this run left: recover from the trail, start a new file
    start, known = _recovery_start(opts, state)
    last, _ = find_last_transaction(opts.trail, start, known)
    return writer, last, {}


def write_change_batches(opts: SinkOptions, batches: Iterator[pa.RecordBatch],
                         batch_id: int | None = None) -> TrailCommitMessage:
    """Append the transactions in ``batches`` to the trail (the writer task's work)."""
    with locked(Path(opts.state_file + ".lock")):
        state = load_state(Path(opts.state_file))
        writer, last, tables = _open_writer(opts, state)
        try:
            tally = _Tally()
            _append(writer, last, tables, batches, tally)
            return _durable(opts, writer, last, tally, batch_id)
        finally:
            if writer.current_file is not None:
                writer.suspend()


@dataclass(slots=True)
class _Tally:
    """What appends wrote since the last durable point."""

    counts: dict[tuple[str, int], int] = field(default_factory=dict)  # (table, op) -> n
    source_position: dict[str, Any] | None = None
    written: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)


def _append(writer: TrailWriter, last: LastWritten, tables: dict[str, TableDef],
            batches: Iterator[pa.RecordBatch], tally: _Tally) -> None:
    """Write the whole transactions in ``batches`` not already in the trail (buffered:
    :func:`_durable` makes them durable)."""
    counts = tally.counts
    in_txn = skip = False
    txn_csn, txn_xid = 0, ""
    notes: list[str] = []  # the open transaction's report lines
    defines: list[TableDef] = []  # written right after the next change (its DDL)
    for batch in batches:
        cols = batch if type(batch) is ChangeColumns else ChangeColumns(batch)
        ops, records, lasts = cols.ops, cols.records, cols.lasts
        for i, op in enumerate(ops):
            if op == OP_POSITION:
                tally.source_position = cols.position(i)
                continue
            if op == OP_METADATA:
                table_def = cols.table_def(i)
                tables[table_def.qualified_name] = table_def
                continue
            if op == OP_NOTE:
                notes.append(cols.texts[i] or "")
                continue
            if op == OP_DEFINE:  # the new definition: its DDL change comes next
                table_def = cols.table_def(i)
                tables[table_def.qualified_name] = table_def
                defines.append(table_def)
                continue
            if op == OP_TXNS:  # many whole transactions, already encoded
                if in_txn or defines:
                    raise ValueError(f"the trail sink's input has a batch of transactions "
                                     f"inside transaction {txn_xid} (CSN {txn_csn})")
                _write_batch(writer, last, tables, TxnBatch.parse(records[i] or b""), tally,
                             notes)
                notes = []
                continue
            if not in_txn:
                txn_csn, txn_xid = int(cols.csns[i] or 0), cols.xids[i] or ""
                skip = last.covers(txn_csn, txn_xid)
                if not skip and op == OP_PACKED and lasts[i] and not defines:
                    # a transaction of one packed row: of one record, most often
                    name = cols.tables[i] or ""
                    run, io_types = split_run(records[i] or b"")
                    if len(run) == 1 and writer.write_only(
                            txn_xid, txn_csn, run[0], tables.get(name), name,
                            cols.io_times[i] or 0):
                        key = (name, io_types[0])
                        counts[key] = counts.get(key, 0) + 1
                        last.add(txn_csn, txn_xid)
                        tally.written += 1
                        tally.notes.extend(notes)
                        notes = []
                        continue
                in_txn = True
                if not skip:
                    writer.begin_transaction(txn_xid, txn_csn)
            if not skip:
                record = records[i]
                if op == OP_PACKED:  # a run of encoded records of one table
                    name = cols.tables[i] or ""
                    run, io_types = split_run(record or b"")
                    writer.add_run(run, tables.get(name), name, cols.io_times[i] or 0)
                    for io_type in set(io_types):
                        key = (name, io_type)
                        counts[key] = counts.get(key, 0) + io_types.count(io_type)
                else:
                    change = cols.change(i)
                    name = change.table
                    # a DDL record needs no definition before it: its new one comes after
                    writer.add_change(change, tables.get(name))
                    for table_def in defines:
                        writer.add_definition(table_def)
                    key = (name, op)
                    counts[key] = counts.get(key, 0) + 1
            defines = []
            if lasts[i]:
                in_txn = False
                if skip:
                    tally.skipped += 1
                else:
                    writer.commit_transaction()
                    last.add(txn_csn, txn_xid)
                    tally.written += 1
                    tally.notes.extend(notes)
                notes = []
    tally.notes.extend(notes)  # lines about transactions that wrote nothing (excluded DDL)
    if in_txn:
        raise ValueError(f"the trail sink's input ended inside transaction {txn_xid} (CSN "
                         f"{txn_csn}): a source must send whole transactions")


def _write_batch(writer: TrailWriter, last: LastWritten, tables: dict[str, TableDef],
                 batch: TxnBatch, tally: _Tally, notes: list[str]) -> None:
    """The transactions of a batch not already in the trail: in one go when the writer can
    (``TrailWriter.write_batch``), else each as a transaction of packed rows is written."""
    counts = tally.counts
    if not last.covers(*batch.first) and writer.write_batch(batch, tables):
        for name, per_op in zip(batch.names, batch.counts, strict=True):
            for op, n in zip(OPERATIONS, per_op, strict=True):
                if n:
                    key = (name, int(op))
                    counts[key] = counts.get(key, 0) + n
        csn, xid, _ = batch.last
        last.add(csn, xid)
        tally.written += batch.count
        tally.notes.extend(notes)
        return
    for txn in batch.transactions():
        if last.covers(txn.csn, txn.xid):
            tally.skipped += 1
            notes = []
            continue
        runs = txn.runs
        if not (len(runs) == 1 and len(runs[0][1]) == 1 and writer.write_only(
                txn.xid, txn.csn, runs[0][1][0], tables.get(runs[0][0]), runs[0][0],
                txn.io_time)):
            writer.begin_transaction(txn.xid, txn.csn)
            for name, records in runs:
                writer.add_run(records, tables.get(name), name, txn.io_time)
            writer.commit_transaction()
        for name, records in runs:
            for record in records:
                key = (name, record[IO_TYPE_OFFSET])
                counts[key] = counts.get(key, 0) + 1
        last.add(txn.csn, txn.xid)
        tally.written += 1
        tally.notes.extend(notes)
        notes = []


def _durable(opts: SinkOptions, writer: TrailWriter, last: LastWritten, tally: _Tally,
             batch_id: int | None) -> TrailCommitMessage:
    """fsync what the appends wrote, record the sink state, and say what is durable."""
    return _durable_later(opts, writer, last, tally, batch_id)()


def _durable_later(opts: SinkOptions, writer: TrailWriter, last: LastWritten, tally: _Tally,
                   batch_id: int | None) -> Callable[[], TrailCommitMessage]:
    """:func:`_durable` in two halves: this one, on the writer's thread, writes everything
    through and takes what the state and the message say; the function it returns (once,
    on any thread, while appends go on) fsyncs that much, records the state and returns
    the message."""
    counts: dict[str, dict[str, int]] = {}
    for (table, op), n in tally.counts.items():
        kind = _STAT_KIND.get(op)
        if kind is not None:
            per_table = counts.setdefault(table, {})
            per_table[kind] = per_table.get(kind, 0) + n
    flushed, fd = writer.flush_handle()
    position: TrailPosition | None = None  # None: nothing written in this run yet
    state: SinkState | None = None
    if writer.current_file is not None:
        position = flushed
        state = SinkState(
            run_id=opts.run_id, trail=opts.trail, seqno=position.seqno, length=position.rba,
            tables=writer.tables_in_file, last=LastWritten(last.csn, set(last.xids)),
            last_io_time=writer.last_io_time, batch_id=batch_id)
    msg = TrailCommitMessage(
        trail=opts.label, last_csn=last.csn,
        position=None if position is None else (position[0], position[1]),
        last_xid=max(last.xids) if last.xids else None, last_io_time=writer.last_io_time,
        source_position=tally.source_position, counts=counts, transactions=tally.written,
        skipped=tally.skipped, notes=list(tally.notes))

    def finish() -> TrailCommitMessage:
        if fd is not None:
            writer.sync_handle(fd)  # durable before anything says so
        if state is not None:
            save_state(Path(opts.state_file), state)
        return msg

    return finish


def _through(writer: TrailWriter, batches: Iterator[pa.RecordBatch]
             ) -> Iterator[pa.RecordBatch]:
    """``batches``, each written through to the file once the sink has taken it."""
    for batch in batches:
        yield batch
        writer.write_through()


class TrailAppender:
    """The trail sink's writer kept open across appends, for a writer that streams (the
    Extract's :class:`~trailgate.extract.postgres.trail_streamer.TrailStreamer`).

    Each :meth:`append` writes what it takes through to the file as it goes (a long
    transaction's first part too; readers wait for its end), so readers (a Pump, a
    Replicat) see it, but does not fsync; :meth:`sync` makes
    everything so far durable, records the sink state and returns the commit message of
    all appends since the last sync.  The trail's lock is held from construction to
    :meth:`close`, which syncs first: the state then always covers what the file holds at
    a clean stop, and after a crash the next run finds the file longer than the state and
    recovers from the trail itself.  One thread uses an appender at a time.
    """

    def __init__(self, opts: SinkOptions):
        self.opts = opts
        with contextlib.ExitStack() as stack:
            stack.enter_context(locked(Path(opts.state_file + ".lock")))
            self.writer, self.last, self.tables = _open_writer(
                opts, load_state(Path(opts.state_file)))
            self._lock = stack.pop_all()
        self._tally = _Tally()
        self.closed = False

    def append(self, batches: Iterator[pa.RecordBatch | ChangeColumns]) -> None:
        """Write the transactions in ``batches`` (those not in the trail yet) through to
        the file, each batch as soon as it is taken: a long read that yields as it goes
        lets the readers start on its first transactions."""
        _append(self.writer, self.last, self.tables, _through(self.writer, batches),
                self._tally)
        self.writer.write_through()

    def sync(self, source_position: dict[str, Any] | None = None) -> TrailCommitMessage:
        """Make every append durable; the message covers the appends since the last sync
        (``source_position``: where the source stands, for the checkpoint)."""
        return self.sync_later(source_position)()

    def sync_later(self, source_position: dict[str, Any] | None = None
                   ) -> Callable[[], TrailCommitMessage]:
        """:meth:`sync` in two halves: this one writes everything through and takes what
        the state and the message say; the function it returns fsyncs that much and
        records the state, on another thread if need be, while appends go on.  Call it
        (once) before the next sync's, so the states are recorded in order."""
        if source_position is not None:
            self._tally.source_position = source_position
        finish = _durable_later(self.opts, self.writer, self.last, self._tally, None)
        self._tally = _Tally()
        return finish

    def close(self) -> None:
        """Sync, let go of the file (the run may resume it) and of the trail's lock.  If
        the sync fails, :meth:`abandon` still lets go of both."""
        if self.closed:
            return
        self.sync()
        self.closed = True
        try:
            if self.writer.current_file is not None:
                self.writer.suspend()
        finally:
            self._lock.close()

    def abandon(self) -> None:
        """After a failure: let go of the file and the lock without writing anything more
        (the state keeps the last sync; the next run recovers from the trail)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.writer.abandon()
        finally:
            self._lock.close()


def commit_checkpoint(opts: SinkOptions, messages: list[TrailCommitMessage]) -> None:
    """Fold the batch's results into the group checkpoint (atomic write)."""
    if not (opts.home and opts.group) or not messages:
        return
    store = CheckpointStore(Path(opts.home) / "dirchk")
    ck = store.load(opts.group, "EXTRACT") or Checkpoint(group=opts.group, kind="EXTRACT")
    for msg in messages:
        behind = False
        if msg.source_position:
            pos = dict(msg.source_position)
            recovery = pos.pop("recovery", None)
            read_time = pos.pop("read_time", None)
            behind = _behind(pos, ck.read_position)
            if not behind:  # a replay of a range the checkpoint passed keeps it
                ck.read_position = pos
                if recovery is not None:
                    ck.recovery_position = recovery
                if read_time is not None:
                    ck.read_time = read_time
        if msg.position is not None:
            ck.write_trail = msg.trail
            ck.write_position = TrailPosition(*msg.position)
        if msg.last_csn is not None and not behind:
            ck.last_csn, ck.last_xid = msg.last_csn, msg.last_xid
        for table, kinds in msg.counts.items():
            for kind, n in kinds.items():
                ck.count(table, kind, n)
    store.save(ck)
    for msg in messages:  # what is now durable: its report lines (DDL, DDLOPTIONS REPORT)
        for note in msg.notes:
            notes_log.info(note)


def _behind(pos: dict[str, Any], recorded: dict[str, Any] | None) -> bool:
    """Whether read position ``pos`` (a source LSN) is before the checkpoint's: a batch
    replayed after the Extract's streamer had checkpointed further (kill -9) must not move
    the checkpoint back."""
    try:
        return recorded is not None and int(pos["lsn"]) < int(recorded["lsn"])
    except (KeyError, TypeError, ValueError):
        return False


def message_json(msg: TrailCommitMessage) -> str:
    """A commit message as one JSON text (a Spark task's result row)."""
    return json.dumps(asdict(msg))


def message_of(text: str) -> TrailCommitMessage:
    """Undo :func:`message_json`."""
    data = json.loads(text)
    if data.get("position") is not None:
        data["position"] = tuple(data["position"])
    return TrailCommitMessage(**data)


#: The result rows of :func:`write_task`.
MESSAGE_SCHEMA = "message string"


def write_task(opts: SinkOptions) -> Callable[[Iterator[pa.RecordBatch]],
                                              Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function running the writer over a task's change rows: one result
    row, the commit message (``foreachBatch`` callers commit it on the driver)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow

        msg = write_change_batches(opts, batches)
        yield pyarrow.RecordBatch.from_pydict({"message": [message_json(msg)]})

    return write


def write_in_task(df: Any, opts: SinkOptions) -> list[TrailCommitMessage]:
    """Run the writer over ``df``'s change rows in one Spark task (a ``foreachBatch``
    caller's large or first batch); the commit messages, for :func:`commit_checkpoint`."""
    rows = df.coalesce(1).mapInArrow(write_task(opts), MESSAGE_SCHEMA).collect()
    return [message_of(r["message"]) for r in rows]


class TrailStreamWriter(DataSourceStreamArrowWriter):
    """One writer task per micro-batch; the commit writes the group checkpoint."""

    def __init__(self, opts: SinkOptions):
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TrailCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() != 0:
            raise ValueError("the trail sink writes one partition per micro-batch (a trail is "
                             "written in order): coalesce(1) the stream first")
        return write_change_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        commit_checkpoint(self.opts, [m for m in messages
                                      if isinstance(m, TrailCommitMessage)])

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: the next writer finds what reached the trail and skips it."""


class TrailDataSource(_TrailSource):
    """The ``trail`` format: the trail source (reads) plus the trail streaming sink."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        # one run id per query unless the caller gives one (a process run, for a group)
        self._run_id = uuid.uuid4().hex

    def streamWriter(self, schema: Any, overwrite: bool) -> TrailStreamWriter:
        return TrailStreamWriter(SinkOptions.parse(self.options, self._run_id))


def finish_run(opts: SinkOptions) -> TrailPosition | None:
    """Complete the file this run was writing (FileSize, LastCSN, LastIOTime in its header)
    at a clean stop; the next run starts a new file anyway.  Returns where the data ends."""
    with locked(Path(opts.state_file + ".lock")):
        state = load_state(Path(opts.state_file))
        if state is None or state.run_id != opts.run_id or state.trail != opts.trail:
            return None
        writer = opts.writer()
        try:
            writer.resume(state.seqno, state.length, state.tables, last_csn=state.last.csn,
                          last_io_time=state.last_io_time)
        except (OSError, ValueError):
            return None
        return writer.close()
