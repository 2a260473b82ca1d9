"""Reading a trail: records with their positions, across files, optionally tailing a live one.

Three layers, each on the one below: :meth:`TrailReader.raw_records` (records as written),
:meth:`TrailReader.records` (fragments joined, LOB pieces folded, metadata applied) and
:meth:`TrailReader.transactions` (complete ones only).  11.2 records are decoded here,
12c+ ones by ``release12.FileDecoder``.  A damaged record raises ``TrailFormatError`` with
file and RBA; a record cut short by a crashed writer at a file's end (``trail.cut`` tells
it from a damaged length) is not an error: the reader waits (``follow``) or goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from trailgate.errors import TrailFormatError
from trailgate.model import (
    Change,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    Transaction,
    TransInd,
)
from trailgate.trail.cut import cut_record_problem
from trailgate.trail.header import FileHeader, decode_file_header
from trailgate.trail.keys import KeyRing, reader_keyring
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.naming import TrailName
from trailgate.trail.records import RawRecord, decode_change, decode_lob_piece, decode_record
from trailgate.trail.release import MAX_READ_LEVEL
from trailgate.trail.release12 import FileDecoder
from trailgate.trail.release12.columns import UNIFIED
from trailgate.trail.release12.priming import primed_decoder
from trailgate.trail.sealing import CIPHERS, Buffer, RecordOpener

__all__ = ["FIXED_WIDTH_KINDS", "ReadTransaction", "TrailReader", "TrailRecord", "find_next_record",
           "opener_for", "read_header", "record_bytes"]

log = logging.getLogger("trailgate.trail")
#: the kinds whose values the 11.2 format writes without a length
FIXED_WIDTH_KINDS = frozenset({ColumnKind.CHAR, ColumnKind.DATE, ColumnKind.TIMESTAMP})
_FIXED_KINDS = FIXED_WIDTH_KINDS
_NOT_CHANGES = frozenset({OpType.RECORD_FRAGMENT, OpType.LOB})
_KNOWN_OPS = frozenset(int(op) for op in OpType)
_FRAGMENT = int(OpType.RECORD_FRAGMENT)
_LOB = int(OpType.LOB)
_CHUNK = 1 << 20


@dataclass(slots=True)
class TrailRecord:
    """A logical record: one change (or metadata/DDL/comment) with where it lies."""

    position: TrailPosition
    end: TrailPosition
    raw: RawRecord
    change: Change | None = None
    table_def: TableDef | None = None
    starts_transaction: bool = False
    ends_transaction: bool = False
    fragments: int = 1
    lob_pieces: int = 0


@dataclass(slots=True)
class ReadTransaction:
    """A complete transaction read from a trail, with the span of records it occupies."""

    transaction: Transaction
    start: TrailPosition
    end: TrailPosition
    records: list[TrailRecord] = field(default_factory=list)


def read_header(path: str | Path, max_compatibility: int = MAX_READ_LEVEL) -> FileHeader:
    """Read and check one trail file's header."""
    try:
        with open(path, "rb") as f:
            data = f.read(0xFFFF)
    except OSError as exc:
        raise TrailFormatError(f"cannot read trail file: {exc.strerror}", path=str(path)) from None
    try:
        return decode_file_header(data, max_compatibility=max_compatibility)
    except ValueError as exc:
        raise TrailFormatError(str(exc), path=str(path), rba=0) from None


_OPENERS: dict[tuple[str, bytes], RecordOpener] = {}


def opener_for(header: FileHeader, path: str | Path, keyring: KeyRing | None = None
               ) -> RecordOpener | None:
    """What opens the records of the file at ``path`` (header ``header``): ``None`` for a
    file in the clear; ``TrailKeyError`` when its key is not in ``keyring`` (default: the
    ENCKEYS file of the home the trail is in)."""
    enc = header.encryption
    if enc is None:
        return None
    name = str(path)
    if enc.cipher not in CIPHERS or not enc.key_name or len(enc.fingerprint) != 8:
        raise TrailFormatError(f"the file header's encryption ({enc.cipher or 'no cipher'}, "
                               f"key {enc.key_name or '?'}) is not one trailgate reads",
                               path=name, rba=0)
    if header.compatibility > 3:
        raise TrailFormatError("an encrypted file in a 12c+ format: trailgate encrypts only "
                               "11.2-format trails", path=name, rba=0)
    ring = keyring or reader_keyring(Path(path).parent)
    key = ring.key_for(enc.key_name, enc.key_version, enc.fingerprint, path=name)
    cache_key = (enc.cipher, key.secret)
    opener = _OPENERS.get(cache_key)
    if opener is None:
        if len(_OPENERS) > 64:
            _OPENERS.clear()
        opener = _OPENERS[cache_key] = RecordOpener(enc, key)
    return opener


def open_record(opener: RecordOpener, buf: Buffer, pos: int,
                length: int, path: str, rba: int) -> bytes:
    """The plain bytes of the record at ``pos`` of an encrypted file, or
    ``TrailFormatError`` naming the file and RBA (damaged, tampered with, wrong key, or a
    record in the clear where the file says every record is encrypted)."""
    try:
        plain = opener.open(buf, pos, length)
    except ValueError as exc:
        raise TrailFormatError(str(exc), path=path, rba=rba) from None
    if plain is None:
        raise TrailFormatError(
            "a record in the clear in a file whose header says its records are encrypted "
            f"({opener.info.describe()}): it was not written by the trail's writer; it is "
            "not applied", path=path, rba=rba)
    return plain


def find_next_record(buf: bytes, start: int) -> int | None:
    """The offset of the next well-formed G record at or after ``start`` (SCANFORHEADER)."""
    pos = start
    end = len(buf)
    while True:
        pos = buf.find(b"G\x01", pos)
        if pos < 0 or pos + 4 > end:
            return None
        try:
            decode_record(buf, pos, end, sealed=True)
            return pos
        except (ValueError, UnicodeDecodeError):
            pos += 1


class TrailReader:
    """Reads the trail ``DIR/aa`` from ``start`` (default: its first file)."""

    def __init__(
        self,
        trail: str | Path,
        start: TrailPosition | None = None,
        *,
        follow: bool = False,
        poll_interval: float = 0.2,
        should_stop: Callable[[], bool] | None = None,
        tables: dict[str, TableDef] | None = None,
        max_compatibility: int = MAX_READ_LEVEL,
        single_file: bool = False,
        values: bool = True,
        keyring: KeyRing | None = None,
    ):
        path = Path(trail)
        self.single_path: Path | None = path if single_file else None
        self.trail = TrailName(path.parent / "aa") if single_file else TrailName(trail)
        self.label = str(path) if single_file else str(self.trail)
        if start is None:
            if single_file:
                parsed_seq = _seq_of(path)
                start = TrailPosition(parsed_seq, 0)
            else:
                seqs = self.trail.sequence_numbers()
                start = TrailPosition(seqs[0] if seqs else 0, 0)
        self._seq = start.seqno
        self._rba = start.rba
        self.follow = follow
        self.poll_interval = poll_interval
        self.should_stop = should_stop or (lambda: False)
        self.tables: dict[str, TableDef] = dict(tables or {})
        self.max_compatibility = max_compatibility
        self.header: FileHeader | None = None
        self.dropped_transactions = 0
        self._fixed: dict[str, frozenset[int]] = {}
        self._codec: FileDecoder | None = None  # the current file's, when it is 12c+
        # False: row records are not decoded (``change`` stays None), for readers that need
        # only record headers and table definitions
        self.values = values
        self.keyring = keyring  # None: each encrypted file's home's ENCKEYS file
        self._opener: RecordOpener | None = None

    @property
    def position(self) -> TrailPosition:
        """The next unread position (after the last record read)."""
        return TrailPosition(self._seq, self._rba)

    @position.setter
    def position(self, value: TrailPosition) -> None:
        self._seq, self._rba = value.seqno, value.rba

    # -- physical records ----------------------------------------------------------------

    def _path(self, seqno: int) -> Path:
        if self.single_path is not None:
            return self.single_path
        return self.trail.file(seqno)

    def _next_exists(self, seqno: int) -> bool:
        if self.single_path is not None:
            return False
        return any(s > seqno for s in self.trail.sequence_numbers())

    def _next_seq(self, seqno: int) -> int:
        return min(s for s in self.trail.sequence_numbers() if s > seqno)

    def raw_records(self) -> Iterator[tuple[TrailPosition, RawRecord]]:
        """Physical records from the current position, across files."""
        for seq, rec in self._raw():
            yield TrailPosition(seq, rec.rba), rec

    def _raw(self) -> Iterator[tuple[int, RawRecord]]:
        while True:
            seq = self._seq
            path = self._path(seq)
            if not path.exists():
                if self._next_exists(seq):
                    self._seq, self._rba = self._next_seq(seq), 0
                    continue
                if not self.follow or self.should_stop():
                    return
                time.sleep(self.poll_interval)
                continue
            finished = yield from self._read_file(seq, path)
            if not finished:
                return
            self._seq, self._rba = self._next_seq(seq), 0

    def _read_file(self, seq: int, path: Path) -> Generator[tuple[int, RawRecord], None, bool]:
        """Yield the records of one file; returns True when the reader should go on to the
        next file, False when it should stop."""
        name = str(path)
        with open(path, "rb") as f:
            head = f.read(0xFFFF)
            if len(head) < 4 or (head[0] == ord("F") and len(head) < (head[2] << 8 | head[3])):
                # The header itself is still being written (or was cut by a crash).
                while True:
                    if self._next_exists(seq):
                        log.warning("%s: file header incomplete; continuing in the next file",
                                    name)
                        return True
                    if not self.follow or self.should_stop():
                        return False
                    time.sleep(self.poll_interval)
                    f.seek(0)
                    head = f.read(0xFFFF)
                    if len(head) >= 4 and len(head) >= (head[2] << 8 | head[3]):
                        break
            try:
                self.header = decode_file_header(head, max_compatibility=self.max_compatibility)
            except ValueError as exc:
                raise TrailFormatError(str(exc), path=name, rba=0) from None
            base = max(self._rba, self.header.length)
            opener = self._opener = opener_for(self.header, path, self.keyring)
            codec = self._codec = None
            if self.header.compatibility > 3:
                try:
                    codec = self._codec = primed_decoder(path, self.header, base)
                except ValueError as exc:
                    raise TrailFormatError(f"reading the table definitions before this "
                                           f"position: {exc}", path=name, rba=base) from None
                for tname, tdef in codec.definitions().items():
                    self.tables[tname] = tdef
                    self._fixed.pop(tname, None)
            f.seek(base)
            buf = b""
            pos = 0
            if codec is not None:
                codec.base = base  # its messages name file RBAs: buf[0] is at base
            opened_to = base  # an encrypted file: records before this are opened in buf
            while True:
                chunk = f.read(_CHUNK)
                if chunk:
                    buf = buf[pos:] + chunk
                    base += pos
                    pos = 0
                    if codec is not None:
                        codec.base = base
                end = len(buf)
                while pos + 4 <= end:
                    if codec is not None:
                        try:
                            found = codec.read(buf, pos, end)
                            if found is None:
                                break
                            rec, length = found
                        except (ValueError, UnicodeDecodeError) as exc:
                            raise TrailFormatError(
                                f"{exc}; Logdump shows the record as it is", path=name,
                                rba=base + pos) from None
                        rec.rba = base + pos
                        pos += length
                        self._rba = base + pos
                        yield seq, rec
                        continue
                    if buf[pos] != 0x47:
                        raise TrailFormatError(
                            f"record type 0x{buf[pos]:02X} where a G record (0x47) should start"
                            "; use Logdump's SCANFORHEADER to find the next good record",
                            path=name, rba=base + pos,
                        )
                    length = (buf[pos + 2] << 8) | buf[pos + 3]
                    if pos + length > end:
                        if length < 46:
                            raise TrailFormatError(f"impossible record length {length}",
                                                   path=name, rba=base + pos)
                        break
                    if opener is not None and base + pos >= opened_to:
                        # open the whole records from here in one go (same length: the
                        # offsets hold); one that cannot be opened is read alone below
                        opened, stop, _ = opener.open_run(buf, pos, end)
                        if stop > pos:
                            buf = buf[:pos] + opened + buf[stop:]
                        opened_to = base + stop
                    try:
                        if opener is None or base + pos < opened_to:
                            rec = decode_record(buf, pos, end)
                        else:
                            plain = open_record(opener, buf, pos, length, name, base + pos)
                            rec = decode_record(plain, 0, length)
                    except (ValueError, UnicodeDecodeError) as exc:
                        raise TrailFormatError(str(exc), path=name, rba=base + pos) from None
                    rec.rba = base + pos
                    pos += length
                    self._rba = base + pos
                    yield seq, rec
                if chunk:
                    continue
                # End of what the file holds now.
                if pos < end:
                    self._check_cut(f, name, buf, pos, end, base, codec)
                if self._next_exists(seq):
                    more = f.read(_CHUNK)  # the writer may have finished after our last read
                    if more:
                        buf = buf[pos:] + more
                        base += pos
                        pos = 0
                        if codec is not None:
                            codec.base = base
                        continue
                    if pos < end:
                        self._check_cut(f, name, buf, pos, end, base, codec)
                        log.warning("%s: %d bytes of a record cut short at RBA %d (a writer "
                                    "crashed); continuing in the next file", name, end - pos,
                                    base + pos)
                    return True
                if not self.follow or self.should_stop():
                    if pos < end:
                        log.info("%s: %d bytes of an incomplete record at RBA %d", name,
                                 end - pos, base + pos)
                    return False
                time.sleep(self.poll_interval)

    @staticmethod
    def _check_cut(f: BinaryIO, name: str, buf: bytes, pos: int, end: int, base: int,
                   codec: FileDecoder | None) -> None:
        """The file ends inside the record at ``pos``: raise ``TrailFormatError`` unless that
        record can be one its writer is still writing (or was writing when it crashed)."""
        rba = base + pos
        problem = cut_record_problem(buf, pos, end, codec.order if codec else "big",
                                     release12=codec is not None)
        if problem is None:
            here = f.tell()
            try:
                f.seek(0)
                completed = decode_file_header(f.read(0xFFFF), max_compatibility=255).file_size
            except ValueError:
                completed = None
            finally:
                f.seek(here)
            if completed is not None and rba < completed <= base + end:
                problem = (f"the file was completed by its writer at {completed} bytes, yet "
                           f"the record here runs past its end ({end - pos} bytes of it are "
                           "there): its length field is damaged")
        if problem is not None:
            raise TrailFormatError(
                f"{problem}. Logdump shows the record as it is (SCANFORHEADER finds the next "
                "good one); restore the file from a copy, or have the writer write the trail "
                "again from before this position", path=name, rba=rba)

    # -- logical records -----------------------------------------------------------------

    def records(self) -> Iterator[TrailRecord]:
        """Logical records: fragments joined and LOB pieces folded in."""
        held: TrailRecord | None = None  # complete, but LOB pieces may still follow
        building: TrailRecord | None = None  # waiting for its RECORD_FRAGMENTs
        parts: list[bytes] = []
        for seq, raw in self._raw():
            io_type = raw.io_type
            record: TrailRecord | None = None
            if building is not None:
                if io_type == _FRAGMENT and raw.table == building.raw.table:
                    parts.append(raw.data)
                    building.fragments += 1
                    building.end = TrailPosition(seq, self._rba)
                    building.ends_transaction = raw.trans_ind >= TransInd.LAST
                    if raw.continued:
                        continue
                    record, building = building, None
                    record.raw.continued = 0
                    self._finish(record, b"".join(parts))
                else:
                    log.warning("%s: record at %s lost its continuation (writer crash); "
                                "dropped", self.label, building.position)
                    building.ends_transaction = False
                    yield building
                    building = None
            if record is None:
                if held is not None:
                    if io_type == _LOB and raw.table == held.raw.table:
                        self._fold_lob(held, raw, seq)
                        held.end = TrailPosition(seq, self._rba)
                        held.ends_transaction = raw.trans_ind >= TransInd.LAST
                        if held.ends_transaction:
                            yield held
                            held = None
                        continue
                    yield held
                    held = None
                ind = raw.trans_ind
                record = TrailRecord(TrailPosition(seq, raw.rba), TrailPosition(seq, self._rba),
                                     raw, None, None, ind == 0 or ind == 3, ind >= 2)
                if raw.continued:
                    building = record
                    parts = [raw.data]
                    continue
                self._finish(record, raw.data)
            if record.change is None or record.ends_transaction:
                yield record
            else:
                held = record
        if held is not None:
            yield held

    def _finish(self, record: TrailRecord, data: bytes) -> None:
        raw = record.raw
        io_type = raw.io_type
        if io_type == OpType.METADATA:
            if not data or raw.orig_node in (1, 4):
                return  # a database (DDR) or partition (PNR) record, or a TDR not readable
            try:
                defined = decode_tabledef(data)
            except ValueError as exc:
                raise self._error(f"metadata record: {exc}", record.position) from None
            self.tables[defined.qualified_name] = defined
            self._fixed.pop(defined.qualified_name, None)
            record.table_def = defined
            return
        if io_type in UNIFIED and record.fragments > 1 and self.values:
            raise self._error(f"{raw.table}: a unified update (IOType {io_type}) continued in "
                              "record fragments, which trailgate cannot read yet: nothing "
                              "after it is read, so no change is skipped", record.position)
        if io_type in _NOT_CHANGES or io_type not in _KNOWN_OPS or not self.values:
            return
        if record.fragments > 1 and self._codec is not None:
            try:
                data = self._codec.convert_joined(io_type, data, raw.table)
            except ValueError as exc:
                raise self._error(f"{raw.table}: {exc}", record.position) from None
        name = raw.table
        table = self.tables.get(name)
        fixed = self._fixed.get(name)
        if fixed is None and table is not None:
            fixed = self._fixed[name] = frozenset(
                c.index for c in table.columns if c.kind in _FIXED_KINDS)
        try:
            record.change = decode_change(raw, fixed, data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise self._error(f"{name}: {exc}", record.position) from None
        record.table_def = table

    def _error(self, message: str, position: TrailPosition) -> TrailFormatError:
        return TrailFormatError(message, path=str(self._path(position.seqno)), rba=position.rba)

    def _fold_lob(self, record: TrailRecord, raw: RawRecord, seq: int) -> None:
        pos = TrailPosition(seq, raw.rba)
        try:
            index, _count, number, offset, piece = decode_lob_piece(raw.data)
        except ValueError as exc:
            raise self._error(f"LOB piece: {exc}", pos) from None
        change = record.change
        assert change is not None
        image = change.before if change.op is OpType.DELETE else change.after
        if image is None:
            image = {}
            change.after = image
        existing = image.get(index) if number > 1 else b""
        if existing is None or len(existing) != offset:
            raise TrailFormatError(
                f"LOB piece {number} of column {index} starts at {offset} but "
                f"{0 if existing is None else len(existing)} bytes came before it",
                path=str(self._path(pos.seqno)), rba=pos.rba)
        image[index] = existing + piece
        record.lob_pieces += 1

    # -- transactions --------------------------------------------------------------------

    def transactions(self) -> Iterator[ReadTransaction]:
        """Complete transactions, in trail order."""
        open_txn: ReadTransaction | None = None
        changes: list[Change] = []  # open_txn's
        for record in self.records():
            if record.change is None and record.raw.io_type in (OpType.METADATA,):
                continue
            if record.starts_transaction:
                if open_txn is not None:
                    self._drop(open_txn)
                raw = record.raw
                changes = []
                open_txn = ReadTransaction(
                    Transaction(xid=raw.xid or "", csn=raw.csn or 0, changes=changes,
                                commit_time=raw.io_time),
                    start=record.position, end=record.end,
                )
            elif open_txn is None:
                # Expected when reading starts inside a transaction (one file of a trail that
                # rolled over mid-transaction); the transaction is read whole from its start.
                log.info("%s: record at %s belongs to a transaction whose start is not in "
                         "this trail range; skipped", self.label, record.position)
                continue
            if record.change is not None:
                changes.append(record.change)
                open_txn.records.append(record)
                open_txn.transaction.commit_time = record.change.io_time
            open_txn.end = record.end
            if record.ends_transaction:
                yield open_txn
                open_txn = None
        # A transaction without its last record is incomplete: not yielded.

    def _drop(self, txn: ReadTransaction) -> None:
        self.dropped_transactions += 1
        log.warning("%s: transaction %s at %s has no last record (its writer stopped); dropped",
                    self.label, txn.transaction.xid or "?", txn.start)


def _seq_of(path: Path) -> int:
    from trailgate.trail.naming import parse_trail_file

    parsed = parse_trail_file(path)
    return parsed[1] if parsed else 0


def record_bytes(trail: str | Path) -> bytes:
    """Every file of ``trail`` after its file header, end to end: what two trails written
    from the same changes must share (headers differ in times and hosts)."""
    out = []
    name = TrailName(trail)
    for seq in name.sequence_numbers():
        data = name.file(seq).read_bytes()
        out.append(data[decode_file_header(data[:0xFFFF]).length:])
    return b"".join(out)
