"""One trail file opened for inspection: records at any RBA, damage reported, never hidden.

Logdump must position anywhere, step past damage and look at files a writer is still
appending to, which the streaming :class:`~trailgate.trail.reader.TrailReader` is not made
for; this reads the file through ``mmap`` and decodes one record at a time with the codec.
A 12c+ file's records come with their file layout (:class:`Record12`) and, when trailgate
cannot make sense of one, what it could not read: Logdump still shows it as it is.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from trailgate.errors import TrailFormatError
from trailgate.trail.cut import cut_record_problem
from trailgate.trail.header import FileHeader, TrailEncryption, decode_file_header
from trailgate.trail.naming import TrailName, parse_trail_file
from trailgate.trail.records import RawRecord, decode_record
from trailgate.trail.release12 import FileDecoder, Record12, parse_record
from trailgate.trail.release12.layout import frame_length
from trailgate.trail.sealing import RecordOpener, sealed_area

__all__ = ["Eof", "HeaderEntry", "Record", "SealedRecord", "TrailFile"]

_MIN_RECORD = 8 + 4 + 34 + 1  # G/Z, H header, H fixed part, the name's NUL


@dataclass(slots=True)
class HeaderEntry:
    """The file header record (RBA 0) as Logdump lists it among the records."""

    header: FileHeader
    rba: int = 0

    @property
    def length(self) -> int:
        return self.header.length


@dataclass(slots=True)
class Record(RawRecord):
    """A record of a 12c+ file: what the reader makes of it, its layout in the file
    (``view``), and what trailgate could not read in it (``problem``)."""

    view: Record12 | None = None
    problem: str | None = None
    own_index: int | None = None  # the TDR index a TDR or TDR reference record defines
    images: tuple[bytes, bytes] | None = None  # a unified update's, in the 11.2 form
    db_type: str = ""  # the source database's type, from the file header (a DDR's display)


def _as_record(raw: RawRecord, view: Record12, problem: str | None = None,
               own_index: int | None = None,
               images: tuple[bytes, bytes] | None = None) -> Record:
    fields = {name: getattr(raw, name) for name in RawRecord.__dataclass_fields__}
    fields["io_type"] = view.io_type  # a unified update stays one to Logdump
    return Record(**fields, view=view, problem=problem, own_index=own_index, images=images)


def _raw_of(view: Record12) -> RawRecord:
    """The record's header fields and file bytes, for a record the decoder could not read."""
    return RawRecord(view.rba, view.length, view.flag, view.hdr_ind, view.partition,
                     view.undo_flag, view.before_after, view.rec_length, view.io_type,
                     view.orig_node, view.io_time, view.audit_pos, view.trans_ind,
                     view.audit_rba, view.format_type, view.syskey_len, view.incomplete,
                     view.continued, view.rec_count, view.name or "", view.d or b"")


@dataclass(slots=True)
class SealedRecord(RawRecord):
    """An encrypted record read without its key (DECRYPT OFF): the header fields as they
    are; ``data`` is the encrypted area (nonce, ciphertext, tag), not the row."""

    encryption: TrailEncryption | None = None


@dataclass(slots=True)
class Eof:
    """The end of what the file holds; ``partial`` bytes of a record cut short follow."""

    rba: int
    partial: int = 0


class TrailFile:
    """A trail file mapped read-only; re-mapped when a writer has appended to it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 - kept open for the mapping
        except OSError as exc:
            raise TrailFormatError(f"cannot open: {exc.strerror}", path=str(path)) from None
        self.buf: bytes | mmap.mmap = b""
        self._map()
        self.header: FileHeader | None = None
        self.header_error: str | None = None
        try:
            self.header = decode_file_header(bytes(self.buf[:0xFFFF]), max_compatibility=255)
        except ValueError as exc:
            self.header_error = str(exc)
        self.decrypt = False  # DECRYPT ON: encrypted records are shown opened
        self.key_name: str | None = None  # DECRYPT ON KEYNAME k
        self._opener: RecordOpener | None = None
        self._opened: dict[int, bytes] = {}  # RBA -> the opened bytes of a record shown
        self.decoder: FileDecoder | None = None  # a 12c+ file's metadata state
        self._decoded_to = 0  # the decoder has seen every metadata record before this RBA
        if self.header is not None and self.header.compatibility > 3:
            self.decoder = FileDecoder(self.header)
            self._decoded_to = self.header.length

    @property
    def release12(self) -> bool:
        """True for a 12c+ file (CompatibilityLevel above 3)."""
        return self.decoder is not None

    def _map(self) -> None:
        size = os.fstat(self._file.fileno()).st_size
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()
        self.buf = mmap.mmap(self._file.fileno(), size, access=mmap.ACCESS_READ) if size else b""

    @property
    def size(self) -> int:
        return len(self.buf)

    @property
    def first_record_rba(self) -> int:
        """Where data records start (after the file header)."""
        return self.header.length if self.header is not None else 0

    def refresh(self) -> None:
        """Pick up bytes a writer appended since the file was mapped."""
        if os.fstat(self._file.fileno()).st_size != len(self.buf):
            self._map()

    def close(self) -> None:
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()
        self.buf = b""
        self._file.close()

    def error(self, message: str, rba: int) -> TrailFormatError:
        return TrailFormatError(message, path=str(self.path), rba=rba)

    def read_at(self, rba: int) -> RawRecord | HeaderEntry | Eof:
        """The record starting at ``rba``.

        Raises :class:`TrailFormatError` (with file and RBA) when the bytes there are not a
        well-formed record; returns :class:`Eof` at the end of the file or before a record
        that is cut short (a writer still writing it, or one that crashed).
        """
        if rba == 0:
            if self.header is not None:
                return HeaderEntry(self.header)
            if self.size == 0:
                return Eof(0)
            raise self.error(f"damaged file header: {self.header_error}; use SCANFORHEADER "
                             "to find the first record", 0)
        if rba >= self.size:
            self.refresh()
            if rba >= self.size:
                return Eof(rba)
        if self.decoder is not None:
            return self._read12(rba)
        buf = self.buf
        left = self.size - rba
        if buf[rba] != 0x47:
            raise self.error(f"record type 0x{buf[rba]:02X} where a G record (0x47) should "
                             "start; use SCANFORHEADER (SFH) to find the next good record", rba)
        if left < 4:
            return Eof(rba, left)
        length = (buf[rba + 2] << 8) | buf[rba + 3]
        if length < _MIN_RECORD:
            raise self.error(f"impossible record length {length}; use SCANFORHEADER (SFH) to "
                             "find the next good record", rba)
        if length > left:
            self.refresh()
            if length > self.size - rba:
                self._check_cut(rba)
                return Eof(rba, self.size - rba)
            buf = self.buf
        try:
            record = decode_record(buf, rba, self.size, sealed=True)
        except (ValueError, UnicodeDecodeError) as exc:
            raise self.error(f"{exc}; use SCANFORHEADER (SFH) to find the next good record",
                             rba) from None
        record.rba = rba
        area = sealed_area(buf, rba, length)
        if area is None:
            return record
        if not self.decrypt:
            fields = {name: getattr(record, name) for name in RawRecord.__dataclass_fields__}
            fields["data"] = bytes(buf[area[0]:area[1]])
            return SealedRecord(**fields, encryption=self.header.encryption
                                if self.header is not None else None)
        plain = self._open(rba, length)
        record = decode_record(plain, 0, length)
        record.rba = rba
        if len(self._opened) > 4096:
            self._opened.clear()
        self._opened[rba] = plain
        return record

    def _open(self, rba: int, length: int) -> bytes:
        """The opened bytes of the encrypted record at ``rba`` (DECRYPT ON)."""
        from trailgate.trail.reader import open_record, opener_for

        if self._opener is None:
            header = self.header
            if header is None or header.encryption is None:
                raise self.error("an encrypted record in a file whose header names no key; "
                                 "DECRYPT OFF shows it as it is", rba)
            if self.key_name and self.key_name.upper() != header.encryption.key_name.upper():
                raise self.error(f"DECRYPT ON KEYNAME {self.key_name}: this file is encrypted "
                                 f"with key {header.encryption.key_name}", rba)
            self._opener = opener_for(header, self.path)
            assert self._opener is not None
        return open_record(self._opener, self.buf, rba, length, str(self.path), rba)

    def set_decrypt(self, on: bool, key_name: str | None) -> None:
        """DECRYPT ON [KEYNAME k] | OFF for this file."""
        self.decrypt, self.key_name = on, key_name
        self._opener = None
        self._opened.clear()

    def _check_cut(self, rba: int) -> None:
        """The file ends inside the record at ``rba``: an error unless that can be a record
        its writer is still writing (or was writing when it crashed)."""
        order = self.decoder.order if self.decoder is not None else "big"
        problem = cut_record_problem(self.buf, rba, self.size, order,
                                     release12=self.decoder is not None)
        if problem is not None:
            raise self.error(f"{problem}; use SCANFORHEADER (SFH) to find the next good "
                             "record", rba)

    def _frame12(self, rba: int) -> Record12 | Eof:
        assert self.decoder is not None
        try:
            found = frame_length(self.buf, rba, self.size, self.decoder.order)
            if found is None:
                self.refresh()
                found = frame_length(self.buf, rba, self.size, self.decoder.order)
            if found is None:
                self._check_cut(rba)
                return Eof(rba, self.size - rba)
            return parse_record(self.buf, rba, self.size, found[1])
        except ValueError as exc:
            raise self.error(f"{exc}; use SCANFORHEADER (SFH) to find the next good record",
                             rba) from None

    def _read12(self, rba: int) -> Record | Eof:
        """The 12c+ record at ``rba``, the file's metadata before it applied first."""
        decoder = self.decoder
        assert decoder is not None and self.header is not None
        view = self._frame12(rba)
        if isinstance(view, Eof):
            return view
        if rba < self._decoded_to:  # back: learn the metadata from the start again
            decoder = self.decoder = FileDecoder(self.header)
            self._decoded_to = self.header.length
        pos = self._decoded_to
        buf = self.buf
        while pos < rba:  # the metadata records between the last record read and this one
            try:
                found = frame_length(buf, pos, self.size, decoder.order)
                if found is None:
                    break
                if buf[pos + 14] in (170, 161):
                    decoder.normalise(parse_record(buf, pos, self.size, found[1]))
            except ValueError:
                break  # damage before this record: the record itself may still be readable
            pos += found[0]
        decoder.order = view.order
        self._decoded_to = rba + view.length
        try:
            raw = decoder.normalise(view)
        except (ValueError, UnicodeDecodeError) as exc:
            return _as_record(_raw_of(view), view, str(exc))
        own = images = None
        if view.io_type == 170 and view.orig_node in (2, 3) and not view.continued:
            own = view.tdr_index if view.orig_node == 2 else max(decoder.tdrs, default=0)
        if view.io_type in (134, 135) and not view.continued:
            images = decoder.unified_images(view)  # normalise read them without error
        record = _as_record(raw, view, None, own, images)
        record.db_type = decoder.db_type
        return record

    def next_rba(self, entry: RawRecord | HeaderEntry) -> int:
        return entry.rba + entry.length

    def scan_for_header(self, start: int) -> int | None:
        """The RBA of the next well-formed record at or after ``start`` (SCANFORHEADER)."""
        self.refresh()
        pos = max(start, 0)
        buf = self.buf
        while True:
            pos = buf.find(b"G\x01", pos)
            if pos < 0 or pos + 4 > self.size:
                return None
            try:
                if self.decoder is not None:
                    parse_record(buf, pos, self.size, self.decoder.order)
                else:
                    decode_record(buf, pos, self.size, sealed=True)
                return pos
            except (ValueError, UnicodeDecodeError):
                pos += 1

    def record_bytes(self, entry: RawRecord | HeaderEntry) -> bytes:
        """The record's bytes as shown: an encrypted record opened with DECRYPT ON."""
        opened = self._opened.get(entry.rba) if isinstance(entry, RawRecord) else None
        if opened is not None and not isinstance(entry, SealedRecord):
            return opened
        return bytes(self.buf[entry.rba : entry.rba + entry.length])

    def sibling(self, step: int = 1) -> Path | None:
        """The file ``step`` sequence numbers on in the same trail, if the name is a trail
        file name and that file exists (NEXTTRAIL)."""
        parsed = parse_trail_file(self.path)
        if parsed is None:
            return None
        trail = TrailName(self.path)
        seq = parsed[1] + step
        if seq < 0:
            return None
        later = [s for s in trail.sequence_numbers() if s >= seq] if step > 0 else [seq]
        if not later:
            return None
        candidate = trail.file(later[0])
        return candidate if candidate.exists() else None
