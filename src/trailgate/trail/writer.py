"""Writing a trail: transactions in, fsynced files out, with rollover and append-mode restart.

A writer always starts a new file (seed 002's append mode: a restarted Extract never writes
into a file a previous run left), writes each table's definition before that table's first
change in every file, and reports its position after each transaction so a checkpoint can
store it once :meth:`TrailWriter.flush` has made the data durable.  It writes the 11.2
format of the seeds, or with ``format`` a 12c+ release's (:mod:`trailgate.trail.release12`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from trailgate.checkpoint import fsync_dir
from trailgate.model import Change, OpType, TableDef, TrailPosition, Transaction, TransInd
from trailgate.trail.header import (
    COMPATIBILITY_LEVEL,
    DatabaseInfo,
    FileHeader,
    MachineInfo,
    ProducerInfo,
    decode_file_header,
    home_uri,
    now_julian,
)
from trailgate.trail.keys import KeyRing, home_of_trail, keyring_for
from trailgate.trail.naming import TrailName
from trailgate.trail.records import (
    MAX_RECORD,
    decode_change,
    decode_record,
    encode_change_records,
    encode_metadata_record,
    split_for_room,
    table_fixed_indexes,
    with_t_area,
)
from trailgate.trail.release import DEFAULT_FORMAT, TrailFormat, format_for_level
from trailgate.trail.release12 import FileEncoder, encode_change12
from trailgate.trail.sealing import SEAL_OVERHEAD, RecordSealer
from trailgate.trail.txn_batch import TRANS_IND_OFFSET, TxnBatch

__all__ = ["TrailWriter"]

_NO_TABLE = frozenset({int(OpType.DDL), int(OpType.COMMENT), int(OpType.METADATA)})
_ONLY = bytes((TransInd.ONLY,))

_SPILL_BYTES = 4 << 20  # write (without fsync) once this much is buffered


class TrailWriter:
    """Writes transactions to a trail (``DIR/aa``), rolling files at ``megabytes``."""

    def __init__(
        self,
        trail: str | Path,
        *,
        megabytes: int = 500,
        producer: ProducerInfo | str = "TRAILGATE",
        database: DatabaseInfo | None = None,
        home: str | Path | None = None,
        uri_history: list[str] | None = None,
        compatibility: int = COMPATIBILITY_LEVEL,
        fsync: bool = True,
        format: TrailFormat | None = None,
        start_seqno: int | None = None,
        named_as: str | Path | None = None,
        encrypt: str | None = None,
        key_name: str | None = None,
        keyring: KeyRing | None = None,
    ):
        """``start_seqno``: write from this sequence number on instead of after the
        trail's last file (a file prepared elsewhere and renamed into place);
        ``named_as``: the trail whose file names the headers carry (default: ``trail``);
        ``encrypt``: ENCRYPTTRAIL's cipher (``AES256``…), each new file sealed with the
        current version of ``key_name`` (``None``: the master key) from ``keyring``
        (default: the home's ENCKEYS file)."""
        self.trail = TrailName(trail)
        self._named_as = TrailName(named_as) if named_as is not None else self.trail
        self.trail.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max(1, megabytes) * 1024 * 1024
        self.producer = ProducerInfo(name=producer) if isinstance(producer, str) else producer
        self.database = database or DatabaseInfo()
        self._home = home
        self.uri = home_uri(home if home is not None else self.trail.directory.parent)
        self.uri_history = list(uri_history or [])
        if format is None:
            format = (DEFAULT_FORMAT if compatibility == COMPATIBILITY_LEVEL
                      else format_for_level(compatibility))
        self.format = format
        self.compatibility = format.level
        self._trans_ind_offset = format.trans_ind_offset
        self._enc = None if format.seed_layout else FileEncoder(
            format, self.database.vendor, self.database.name)
        if format.level >= 6:  # 12.3 and 19.1 headers end the URI with the group's name
            self.uri += ":" + self.producer.name
        self.machine = MachineInfo.current()
        self._fsync = fsync
        # one fsync of the trail at a time, and the first failure kept: the kernel reports
        # a lost write once, to whichever fsync comes first (this thread's or a flush's)
        self._sync_lock = threading.Lock()
        self._sync_error: OSError | None = None
        self._fd: int | None = None
        self._seq = self._first_sequence() if start_seqno is None else start_seqno
        self._header: FileHeader | None = None
        self._buf = bytearray()
        self._file_len = 0
        self._has_data = False
        self._tables_in_file: dict[str, TableDef] = {}
        self._last_csn: int | None = None
        self._last_io_time: int | None = None
        # the open transaction
        self._txn: tuple[str, int] | None = None
        self._txn_records = 0
        self._pending: tuple[list[bytes], TableDef | None, str, int] | None = None
        self._after: list[TableDef] = []  # definitions to write right after the pending
        self._next_header: FileHeader | None = None
        self._encrypt = encrypt
        self._key_name = key_name
        self._keyring = keyring
        self._sealer: RecordSealer | None = None
        if encrypt is not None:
            if not format.seed_layout:
                raise ValueError(
                    f"ENCRYPTTRAIL is for the 11.2 trail format; FORMAT RELEASE "
                    f"{format.release} trails are written in the clear (drop FORMAT RELEASE "
                    "or ENCRYPTTRAIL)")
            self._new_sealer()  # a missing key is an error at start, not at the first file

    # -- encryption ----------------------------------------------------------------------

    def _ring(self) -> KeyRing:
        if self._keyring is not None:
            return self._keyring
        home = Path(self._home) if self._home is not None else home_of_trail(
            self.trail.directory)
        return keyring_for(home)

    def _new_sealer(self) -> None:
        """The sealer of the current key (a new file picks up a key added since)."""
        assert self._encrypt is not None
        key = self._ring().current(self._key_name)
        if self._sealer is None or self._sealer.key != key:
            self._sealer = RecordSealer(self._encrypt, key)

    @property
    def encryption(self) -> str | None:
        """What the files are encrypted with (cipher, key name, version), or None."""
        return None if self._sealer is None else self._sealer.info.describe()

    def _sealed(self, record: bytes) -> bytes:
        assert self._sealer is not None
        if len(record) + SEAL_OVERHEAD <= MAX_RECORD:
            return self._sealer.seal(record)
        return b"".join(map(self._sealer.seal, split_for_room(record, SEAL_OVERHEAD)))

    # -- positions ---------------------------------------------------------------------

    @property
    def position(self) -> TrailPosition:
        """Where the next record will go (after the last one written)."""
        if self._fd is None:
            return TrailPosition(self._seq, 0)
        return TrailPosition(self._seq, self._file_len)

    @property
    def current_file(self) -> Path | None:
        """The file being written, if one is open."""
        return self.trail.file(self._seq) if self._fd is not None else None

    def _first_sequence(self) -> int:
        seqs = self.trail.sequence_numbers()
        if not seqs:
            return 0
        last = self.trail.file(seqs[-1])
        try:
            with open(last, "rb") as f:
                decode_file_header(f.read(0xFFFF), max_compatibility=255)
        except (OSError, ValueError):
            # A crash while the file was being created left no usable header: reuse its seqno.
            if last.stat().st_size < 0xFFFF:
                return seqs[-1]
        return seqs[-1] + 1

    # -- transactions -------------------------------------------------------------------

    def write_transaction(self, txn: Transaction, tables: Mapping[str, TableDef]) -> TrailPosition:
        """Write a whole transaction; returns the position after it (not yet fsynced)."""
        self.begin_transaction(txn.xid, txn.csn)
        for change in txn.changes:
            self.add_change(change, tables.get(change.table))
        return self.commit_transaction()

    def begin_transaction(self, xid: str, csn: int) -> None:
        """Start a transaction; its changes follow with :meth:`add_change`."""
        if self._txn is not None:
            raise RuntimeError("a transaction is already open in this trail writer")
        self._txn = (xid, csn)
        self._txn_records = 0

    def add_change(self, change: Change, table: TableDef | None) -> None:
        """Add one change to the open transaction (streamed: memory stays bounded)."""
        if self._txn is None:
            raise RuntimeError("add_change without begin_transaction")
        first = self._txn_records == 0 and self._pending is None
        xid, csn = self._txn
        if self._enc is not None:
            records = encode_change12(change, table, self.format, self.database.vendor,
                                      TransInd.MIDDLE, csn if first else None,
                                      xid if first else None)
        else:
            records = encode_change_records(
                change, table, TransInd.MIDDLE, csn if first else None, xid if first else None
            )
        if self._pending is not None:
            self._emit(*self._pending, last=False)
        self._pending = (records, table, change.table, change.io_time)

    def add_definition(self, table: TableDef) -> None:
        """Write ``table``'s definition (a metadata record) right after the change just
        added: a DDL record is followed by the new definition of the table it changed, so
        a reader has it before any later change, whatever file that change lands in."""
        if self._txn is None or self._pending is None:
            raise RuntimeError("add_definition belongs right after a change of a transaction")
        self._after.append(table)

    def add_run(self, records: list[bytes], table: TableDef | None, name: str,
                io_time: int) -> None:
        """Add changes of one table already encoded, one record each
        (``records.encode_row_record``: TransInd MIDDLE, no T area).  The bytes are those
        ``add_change`` gives: the T area on the transaction's first record, metadata record,
        rollover and TransInd as for any change; runs that fit in the file are appended in
        one go."""
        if self._txn is None:
            raise RuntimeError("add_run without begin_transaction")
        if not records:
            return
        if self._enc is not None:  # 11.2 records: laid out again the 12c+ way, one by one
            fixed = table_fixed_indexes(table)
            for record in records:
                self.add_change(decode_change(decode_record(record, 0, len(record)), fixed),
                                table)
            return
        if self._pending is not None:
            self._emit(*self._pending, last=False)
            self._pending = None
        if self._txn_records == 0:  # the transaction's first change: CSN and XID go with it
            first = self._with_t_area(records[0], table)
            records = records[1:]
            if not records:
                self._pending = (first, table, name, io_time)
                return
            self._emit(first, table, name, io_time, last=False)
        body = records[:-1]
        if body and (self._fd is None
                     or (table is not None and self._tables_in_file.get(name) != table)):
            self._emit(body[:1], table, name, io_time, last=False)  # file, metadata
            body = body[1:]
        if body:
            size = sum(map(len, body))
            if self._sealer is not None:
                size += SEAL_OVERHEAD * len(body)
            if self._file_len + size <= self.max_bytes:  # all MIDDLE, no rollover: as is
                if self._sealer is not None:  # (the other branch seals them in _append)
                    body = [self._sealed(r) for r in body]
                    size = sum(map(len, body))
                self._buf += b"".join(body)
                self._file_len += size
                if len(self._buf) >= _SPILL_BYTES:
                    self._write_buffer()
                self._txn_records += len(body)
                self._has_data = True
                self._last_csn = self._txn[1]
                self._last_io_time = io_time
            else:
                for record in body:
                    self._emit([record], table, name, io_time, last=False)
        self._pending = ([records[-1]], table, name, io_time)

    def write_only(self, xid: str, csn: int, record: bytes, table: TableDef | None,
                   name: str, io_time: int) -> bool:
        """A whole transaction of one change already encoded (as :meth:`add_run` takes
        it), written as ``begin_transaction``, ``add_run`` and ``commit_transaction``
        would write it, when that is one record appended to the open file: the file has
        the table's definition and room for the record.  Otherwise nothing is done and
        the answer is ``False``: the caller takes the general path."""
        if (self._txn is not None or self._enc is not None or self._fd is None
                or table is None or self._after):
            return False
        if not self._defined(name, table):
            return False
        patched = with_t_area(record, csn, xid)
        seal = SEAL_OVERHEAD if self._sealer is not None else 0
        if patched is None or self._file_len + len(patched) + seal > self.max_bytes:
            return False
        off = self._trans_ind_offset
        self._append(patched[:off] + _ONLY + patched[off + 1:])
        self._wrote_transaction(1, csn, io_time)
        return True

    def write_batch(self, batch: TxnBatch, tables: Mapping[str, TableDef]) -> bool:
        """Many whole transactions whose records are final (:mod:`trail.txn_batch`),
        appended in one go when that is what the general path would write: the open file
        has each table's definition (``tables``) and room for them all, and its records are
        11.2's, not sealed.  Otherwise nothing is done and the answer is ``False``: the
        caller takes each transaction on the general path."""
        if (self._txn is not None or self._enc is not None or self._sealer is not None
                or self._fd is None or self._after
                or self._trans_ind_offset != TRANS_IND_OFFSET):
            return False
        records = batch.records
        if self._file_len + len(records) > self.max_bytes:
            return False
        if not all(self._defined(name, tables.get(name)) for name in batch.names):
            return False
        self._append(records)
        csn, _, io_time = batch.last
        self._wrote_transaction(batch.last_records, csn, io_time)
        return True

    def _defined(self, name: str, table: TableDef | None) -> bool:
        """Whether the open file holds ``table``'s definition under ``name``, so a record of
        it needs no metadata record first (an equal definition is then kept by identity,
        the next comparison's cheap form)."""
        known = self._tables_in_file.get(name)
        if table is None or known is None:
            return False
        if known is not table:
            if known != table:
                return False
            self._tables_in_file[name] = table
        return True

    def _wrote_transaction(self, records: int, csn: int, io_time: int) -> None:
        """What a whole transaction appended outside begin/commit leaves behind."""
        self._txn_records = records
        self._has_data = True
        self._last_csn = csn
        self._last_io_time = io_time

    def _with_t_area(self, record: bytes, table: TableDef | None) -> list[bytes]:
        """The first change's record(s) with the transaction's CSN and XID."""
        assert self._txn is not None
        xid, csn = self._txn
        patched = with_t_area(record, csn, xid)
        if patched is not None:
            return [patched]
        # too long with its T area: fragments, exactly as add_change makes them
        change = decode_change(decode_record(record, 0, len(record)), table_fixed_indexes(table))
        return encode_change_records(change, table, TransInd.MIDDLE, csn, xid)

    def commit_transaction(self) -> TrailPosition:
        """End the transaction; returns the position after its last record."""
        if self._txn is None:
            raise RuntimeError("commit_transaction without begin_transaction")
        if self._pending is not None:
            self._emit(*self._pending, last=True)
            self._pending = None
        self._txn = None
        return self.position

    def _emit(
        self, records: list[bytes], table: TableDef | None, name: str, io_time: int, *, last: bool
    ) -> None:
        assert self._txn is not None
        csn = self._txn[1]
        meta: list[bytes] = []
        size = sum(map(len, records))
        if self._sealer is not None:
            size += SEAL_OVERHEAD * len(records)
        if self._fd is not None and self._has_data and self._file_len + size > self.max_bytes:
            self._finish_file()
        if self._fd is None:
            self._open_file(csn, io_time)
        described = any(r[14] not in _NO_TABLE for r in records)  # a DDL or comment is not
        if self._enc is not None:
            if described and self._enc.needs_metadata(
                    name, table, self._tables_in_file.get(name)):
                meta = self._enc.metadata(name, table, io_time)
                if table is not None:
                    self._tables_in_file[name] = table
            records = self._enc.patch(records, name)
        elif described and table is not None and (known := self._tables_in_file.get(name)
                                                  ) is not table:
            if known != table:
                meta = encode_metadata_record(table, io_time)
            self._tables_in_file[name] = table  # equal or new: next time compared by identity
        for rec in meta:
            self._append(rec)
        after, self._after = self._after, []
        for i, rec in enumerate(records):
            is_first = self._txn_records == 0
            is_last = last and i == len(records) - 1
            if is_first and is_last:
                ind = TransInd.ONLY
            elif is_first:
                ind = TransInd.FIRST
            elif is_last:
                ind = TransInd.LAST
            else:
                ind = TransInd.MIDDLE
            if ind != TransInd.MIDDLE:
                off = self._trans_ind_offset
                rec = rec[:off] + bytes((ind,)) + rec[off + 1 :]
            self._append(rec)
            self._txn_records += 1
        for defined in after:
            name = defined.qualified_name
            # in this file's format: a 12c+ file defines tables by its own records
            for rec in (self._enc.metadata(name, defined, io_time) if self._enc is not None
                        else encode_metadata_record(defined, io_time)):
                self._append(rec)
            self._tables_in_file[name] = defined
        self._has_data = True
        self._last_csn = csn
        self._last_io_time = io_time

    def write_comment(self, text: str) -> None:
        """Write a GGSComment record (Logdump's SAVE brackets saved data with them)."""
        self.begin_transaction("", 0)
        self.add_change(Change(op=OpType.COMMENT, table="GGS_COMMENT", text=text), None)
        self.commit_transaction()

    def start_file(self, header: FileHeader | None = None) -> None:
        """End the current file; the next record starts a new one.

        With ``header`` the new file's header repeats its fields (creation time, names, URI
        history, producer, first CSN): ``trail import`` uses this to reproduce a trail's bytes.
        """
        if self._txn is not None:
            raise RuntimeError("start_file inside a transaction")
        if self._fd is not None and self._has_data:
            self._finish_file()
        self._next_header = header

    def ensure_file(self, first_csn: int, first_io_time: int) -> None:
        """Open the file now if none is open: a file exists even if nothing is written."""
        if self._fd is None:
            self._open_file(first_csn, first_io_time)

    def resume(self, seqno: int, length: int, tables: Mapping[str, TableDef], *,
               last_csn: int | None = None, last_io_time: int | None = None) -> None:
        """Go on appending to file ``seqno`` of this trail at ``length``.

        For a writer whose run spans several processes (the Spark trail sink writes each
        micro-batch in a new task): ``length`` is the end of the last transaction the run
        made durable and ``tables`` the definitions already in the file.  The file must be
        exactly ``length`` bytes with a readable header, else ``ValueError``: the caller then
        starts a new file, as append mode after a crash does.
        """
        if self._fd is not None or self._txn is not None:
            raise RuntimeError("resume on a writer that already has a file open")
        path = self.trail.file(seqno)
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size != length:
                raise ValueError(f"{path} is {size} bytes, expected {length}")
            header = decode_file_header(os.pread(fd, 0xFFFF, 0), max_compatibility=255)
            if header.length > length:
                raise ValueError(f"{path}: header longer than the file")
            wanted = None if self._sealer is None else self._sealer.info
            if header.encryption != wanted:
                raise ValueError(f"{path}: written with other encryption than this writer's")
            os.lseek(fd, length, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._seq = seqno
        self._header = header
        self._buf = bytearray()
        self._file_len = length
        self._has_data = length > header.length
        self._tables_in_file = dict(tables)
        if self._enc is not None:
            self._enc.resume(path, length)
        self._last_csn = last_csn
        self._last_io_time = last_io_time
        self._next_header = None

    @property
    def tables_in_file(self) -> dict[str, TableDef]:
        """The table definitions already written to the current file."""
        return dict(self._tables_in_file)

    @property
    def last_csn(self) -> int | None:
        """The CSN of the last transaction written (``None`` before the first)."""
        return self._last_csn

    @property
    def last_io_time(self) -> int | None:
        """The io_time of the last record written (``None`` before the first)."""
        return self._last_io_time

    # -- files ----------------------------------------------------------------------------

    def _append(self, record: bytes | memoryview) -> None:
        if self._sealer is not None:
            record = self._sealed(bytes(record))
        self._buf += record
        self._file_len += len(record)
        if len(self._buf) >= _SPILL_BYTES:
            self._write_buffer()

    def _write_buffer(self) -> None:
        assert self._fd is not None
        with memoryview(self._buf) as view:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        self._buf = bytearray()

    def _open_file(self, first_csn: int, first_io_time: int) -> None:
        path = self.trail.file(self._seq)
        header = FileHeader(
            seqno=self._seq,
            filename=str(self._named_as.file(self._seq).absolute()),
            uri=self.uri,
            uri_history=self.uri_history,
            compatibility=self.compatibility,
            creation_time=now_julian(),
            first_csn=first_csn,
            first_io_time=first_io_time,
            machine=self.machine,
            database=self.database,
            producer=self.producer,
        )
        template, self._next_header = self._next_header, None
        if template is not None:
            for name in ("filename", "uri", "uri_history", "compatibility", "charset",
                         "creation_time", "multipart", "first_csn", "first_io_time", "machine",
                         "database", "producer", "recovery_mode"):
                setattr(header, name, getattr(template, name))
            header.compatibility = self.format.level  # the records follow this writer's format
        if self._encrypt is not None:
            self._new_sealer()
            assert self._sealer is not None
            header.encryption = self._sealer.info
        data = header.encode()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._header = header
        self._buf = bytearray(data)
        self._file_len = len(data)
        self._has_data = False
        self._tables_in_file = {}
        if self._enc is not None:
            self._enc.start_file()
        self._write_buffer()
        if self._fsync:
            self._sync(self._fd)
            fsync_dir(path.parent)

    def _finish_file(self) -> None:
        """Make the current file complete: data durable, FileSize/LastCSN/LastIOTime set."""
        if self._fd is None:
            return
        self.flush()
        assert self._header is not None
        for offset, data in self._header.completion_patches(
            self._file_len, self._last_csn, self._last_io_time
        ):
            os.pwrite(self._fd, data, offset)
        if self._fsync:
            self._sync(self._fd)
        os.close(self._fd)
        self._fd = None
        self._seq += 1

    def write_through(self) -> TrailPosition:
        """Write everything buffered to the file without fsync: readers see it, a crash of
        this process does not lose it, a crash of the machine may.  Returns the position."""
        if self._fd is not None and self._buf:
            self._write_buffer()
        return self.position

    def flush_handle(self) -> tuple[TrailPosition, int | None]:
        """Write everything buffered; the position and a duplicate of the file's descriptor
        (None without a file or without fsync), whose fsync, on any thread, makes that
        position durable while this writer goes on (the caller closes it).  A file the
        writer completes meanwhile is fsynced by the writer first."""
        position = self.write_through()
        if self._fd is None or not self._fsync:
            return position, None
        return position, os.dup(self._fd)

    def sync_handle(self, fd: int) -> None:
        """fsync and close a descriptor :meth:`flush_handle` gave, on any thread; raises
        if this or any earlier fsync of the writer's files failed."""
        try:
            self._sync(fd)
        finally:
            os.close(fd)

    def _sync(self, fd: int) -> None:
        with self._sync_lock:
            if self._sync_error is not None:
                raise OSError(self._sync_error.errno, "an earlier fsync of the trail failed "
                              f"({self._sync_error.strerror}): what it held may not be on "
                              "disk; restart the group") from self._sync_error
            try:
                os.fsync(fd)
            except OSError as exc:
                self._sync_error = exc
                raise

    def flush(self) -> TrailPosition:
        """Write everything buffered and fsync; returns the durable position."""
        self.write_through()
        if self._fd is not None and self._fsync:
            self._sync(self._fd)
        return self.position

    def suspend(self) -> TrailPosition:
        """Make everything written durable and let go of the file without completing it:
        another process goes on with :meth:`resume`.  Returns the durable position."""
        if self._txn is not None:
            raise RuntimeError("suspend inside a transaction")
        position = self.flush()
        if self._fd is not None:
            if self._enc is not None:
                self._enc.remember(self.trail.file(self._seq), position.rba)
            os.close(self._fd)
            self._fd = None
        return position

    def close(self) -> TrailPosition:
        """Flush and complete the current file. A transaction still open is not written."""
        self._pending = None
        self._after = []
        self._txn = None
        position = self.position
        if self._fd is not None:
            self._finish_file()
        return position

    def abandon(self) -> None:
        """Drop the file as a crashed writer would leave it: buffered records are lost and the
        header's completion fields stay unset. For tests of crash recovery."""
        self._buf = bytearray()
        self._pending = None
        self._after = []
        self._txn = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> TrailWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
