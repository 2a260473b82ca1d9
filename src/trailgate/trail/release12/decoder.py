"""Decoding one 12c+ trail file: each record into the same RawRecord an 11.2 file gives.

The file's metadata records (DDR, TDR, TDR reference) are kept per file, as GoldenGate
writes them per file, and a row record's TDR index resolves to its table.  The RawRecord
has the table's name, an 11.2 D area (:mod:`.columns`), and the CSN/XID/ROWID of its token
area, so readers above never see the format.  The optional C path handles the common row
record; everything else, and every error message, is here.
"""

from __future__ import annotations

import re
from dataclasses import replace

from trailgate.model import TableDef
from trailgate.trail._accel import load_optional
from trailgate.trail._accel import speedups as _speedups
from trailgate.trail.header import FileHeader
from trailgate.trail.metadata import decode_tabledef, encode_tabledef
from trailgate.trail.records import RawRecord, _decode_tokens, decode_record
from trailgate.trail.release12.columns import UNIFIED, to_seed, unified_images, unified_to_seed
from trailgate.trail.release12.definitions import (
    VENDOR_NAMES,
    DatabaseDef,
    TableSpec,
    decode_ddr,
    decode_tdr,
    spec_of,
)
from trailgate.trail.release12.layout import (
    ORIG_DDR,
    ORIG_PNR,
    ORIG_TDR,
    ORIG_TDR_REF,
    Record12,
    frame_length,
    parse_record,
)
from trailgate.trail.release12.tokens import decode_t

__all__ = ["FileDecoder", "fixed_map"]

#: The C path (``_codec12.c``): None when not compiled or TRAILGATE_PURE_PYTHON is set.
_c = load_optional("trailgate.trail.release12._codec12")
#: The 11.2 C decoder the C path hands its records to (records.decode_record without the
#: Python frame around it; its None sends the record to the reference).
_seed_decode = _speedups.decode_record if _speedups is not None else None

_METADATA, _DDL, _COMMENT, _FRAGMENT = 170, 160, 205, 161
_DDL_NAME = re.compile(r",B3='((?:[^']|'')*)'.*?,B4='((?:[^']|'')*)'", re.S)


def fixed_map(spec: TableSpec | None) -> bytes | None:
    """What the C path needs of a table: per column index 1 for fixed-width framing, 0 for
    a length-prefixed value, 2 for an index the definition lacks (judged by shape)."""
    if spec is None or spec.definition is None or not spec.plain:
        return None
    size = max(spec.columns, default=-1) + 1
    out = bytearray(b"\x02" * size)
    for index, column in spec.columns.items():
        out[index] = 1 if column.mode == "fixed" else 0
    return bytes(out)


class FileDecoder:
    """The decoding state of one 12c+ file: its byte order so far, its DDR, and its TDRs by
    index (and, in the 12.1 layout, table definitions by name)."""

    def __init__(self, header: FileHeader):
        self.level = header.compatibility
        self.order = "big"  # of the frames: tried first for the next record
        self.data_order = "big"  # of the header fields and columns of the last record
        self.db_type = VENDOR_NAMES.get(header.database.vendor, "")
        self.ddr: DatabaseDef | None = None
        self.tdrs: dict[int, TableSpec] = {}
        self.by_name: dict[str, TableSpec] = {}
        self._meta_parts: list[bytes] | None = None  # a TDR split into fragments
        self._meta_rec: Record12 | None = None
        self.use_c = _c is not None  # tests compare the C path with the reference
        self.base = 0  # the file offset of the buffer's start (a reader of chunks sets it)
        self._c_tables: list[tuple[bytes, bytes] | None] = []  # by TDR index
        self._c_names: dict[bytes, bytes | None] = {}  # the 12.1 layout, by name

    # -- what a reader needs before and between records ---------------------------------

    def length_at(self, buf: bytes, pos: int, end: int) -> int | None:
        """The length of the record at ``pos`` (``None``: not all there yet); ``ValueError``
        when its frame matches in neither byte order."""
        found = frame_length(buf, pos, end, self.order)
        if found is None:
            return None
        self.order = found[1]
        return found[0]

    def definitions(self) -> dict[str, TableDef]:
        """The table definitions the file has given so far, by name."""
        out = {s.name: s.definition for s in self.by_name.values() if s.definition is not None}
        out.update((s.name, s.definition) for s in self.tdrs.values()
                   if s.definition is not None)
        return out

    def table_spec(self, name: str) -> TableSpec | None:
        """The latest definition of ``name`` (to convert a D area joined from fragments)."""
        found = self.by_name.get(name)
        for spec in self.tdrs.values():
            if spec.name == name:
                found = spec
        return found

    # -- records ------------------------------------------------------------------------

    def read(self, buf: bytes, pos: int, end: int) -> tuple[RawRecord, int] | None:
        """The record at ``pos`` and its length, ``None`` while it is not all there (a
        reader's loop: the C path first, which finds the length itself)."""
        if self.use_c:
            seeded = _c.to_seed(buf, pos, end, self.order == "little",  # type: ignore[union-attr]
                                self._c_tables, self._c_names)
            if seeded is not None:
                seed, length, little = seeded
                try:
                    raw = (_seed_decode(seed, 0, len(seed), RawRecord) if _seed_decode
                           is not None else decode_record(seed, 0, len(seed)))
                except (ValueError, UnicodeDecodeError):
                    raw = None  # text the 11.2 decoder refuses: the reference decides
                if raw is not None:
                    raw.rba, raw.length = pos, length
                    if little != (self.order == "little"):
                        self.order = self.data_order = "little" if little else "big"
                    return raw, length
        length = self.length_at(buf, pos, end)
        if length is None:
            return None
        rec = parse_record(buf, pos, end, self.order)
        self.order, self.data_order = rec.order, rec.data_order
        return self.normalise(rec), length

    def decode(self, buf: bytes, pos: int, end: int) -> RawRecord:
        """The record at ``pos`` as an 11.2-form RawRecord; ``ValueError`` says what does not
        fit, for the caller to report with the file and RBA."""
        found = self.read(buf, pos, end)
        if found is None:
            raise ValueError(f"record cut short: {end - pos} bytes left")
        return found[0]

    def _decode_python(self, buf: bytes, pos: int, end: int) -> RawRecord:
        """:meth:`decode` by the reference code alone (what the C path must match)."""
        rec = parse_record(buf, pos, end, self.order)
        self.order, self.data_order = rec.order, rec.data_order
        return self.normalise(rec)

    def _c_learn(self, index: int | None, spec: TableSpec) -> None:
        """Tell the C path about a table it may decode by itself."""
        fixed = fixed_map(spec)
        if index is None:
            self._c_names[spec.name.encode("utf-8")] = fixed
            return
        while len(self._c_tables) <= index:
            self._c_tables.append(None)
        self._c_tables[index] = None if fixed is None else (spec.name.encode("utf-8"), fixed)

    def normalise(self, rec: Record12) -> RawRecord:
        """:meth:`decode` for a record already parsed (Logdump parses it itself)."""
        io_type = rec.io_type
        d = rec.d or b""
        if io_type == _METADATA or (io_type == _FRAGMENT and self._meta_parts is not None):
            name, data = self._metadata(rec, d)
        elif io_type in (_DDL, _COMMENT):
            name, data = rec.name or self._ddl_name(d), d
        else:
            spec = self._row_table(rec)
            name = spec.name if spec is not None else (rec.name or "")
            if rec.continued or io_type == _FRAGMENT:
                data = d  # converted once the fragments are joined (convert_joined)
            elif io_type in UNIFIED:
                io_type, data = unified_to_seed(io_type, d, rec.data_order, spec)
            else:
                data = to_seed(io_type, d, rec.data_order, spec)
        rowid = csn = xid = None
        if rec.t is not None:
            rowid, csn, xid = self._tokens(rec.t, rec)
        tokens = None
        if rec.u is not None:
            tokens = _decode_tokens(rec.u, 0, len(rec.u), rec.order == "little")
        return RawRecord(rec.rba, rec.length, rec.flag, rec.hdr_ind, rec.partition,
                         rec.undo_flag, rec.before_after, rec.rec_length, io_type,
                         rec.orig_node, rec.io_time, rec.audit_pos, rec.trans_ind,
                         rec.audit_rba, rec.format_type, rec.syskey_len, rec.incomplete,
                         rec.continued, rec.rec_count, name, data, rowid, csn, xid, tokens)

    def unified_images(self, rec: Record12) -> tuple[bytes, bytes]:
        """A unified update's before and after images in the 11.2 column form (Logdump
        shows both; readers get the update they amount to)."""
        return unified_images(rec.d or b"", rec.data_order, self._row_table(rec))

    def convert_joined(self, io_type: int, data: bytes, name: str) -> bytes:
        """The 11.2 form of a row record's D area joined from its fragments."""
        return to_seed(io_type, data, self.data_order, self.table_spec(name))

    def copy(self) -> FileDecoder:
        """An independent copy of this state (a reader that starts where this one is)."""
        twin = FileDecoder.__new__(FileDecoder)
        twin.level, twin.order, twin.data_order = self.level, self.order, self.data_order
        twin.db_type, twin.ddr, twin.base = self.db_type, self.ddr, self.base
        twin.tdrs, twin.by_name = dict(self.tdrs), dict(self.by_name)
        twin.use_c, twin._c_tables, twin._c_names = self.use_c, list(self._c_tables), dict(
            self._c_names)
        twin._meta_parts = list(self._meta_parts) if self._meta_parts is not None else None
        twin._meta_rec = self._meta_rec
        return twin

    def _tokens(self, t: bytes, rec: Record12) -> tuple[str | None, int | None, str | None]:
        try:
            return decode_t(t, rec.order)
        except ValueError:
            if rec.order == rec.data_order:
                raise
            return decode_t(t, rec.data_order)

    def _row_table(self, rec: Record12) -> TableSpec | None:
        if rec.name is not None:
            return self.by_name.get(rec.name) or TableSpec(rec.name, None)
        spec = self.tdrs.get(rec.tdr_index)
        if spec is None:
            known = ", ".join(str(i) for i in sorted(self.tdrs)) or "none"
            raise ValueError(f"the record refers to TDR index {rec.tdr_index}, which no table "
                             f"definition (TDR) earlier in this file defines (known: {known}); "
                             "read the file from its start")
        if spec.definition is None:
            return spec  # the TDR could not be read: values by their shape, name kept
        return spec

    def _ddl_name(self, d: bytes) -> str:
        m = _DDL_NAME.search(d.decode("utf-8", "replace"))
        if m is None:
            return ""
        return f"{m.group(1)}.{m.group(2)}".replace("''", "'")

    # -- metadata ----------------------------------------------------------------------------

    def _metadata(self, rec: Record12, d: bytes) -> tuple[str, bytes]:
        """Learn from a metadata record; returns the RawRecord's table and data: a TDR's
        definition as 11.2 metadata text, nothing for what defines no table."""
        if self._meta_parts is not None:
            self._meta_parts.append(d)
            if rec.continued:  # named as the first part, which readers join it to
                return (self._meta_rec.name if self._meta_rec else None) or "", b""
            d = b"".join(self._meta_parts)
            first = self._meta_rec
            assert first is not None
            self._meta_parts = self._meta_rec = None
            rec = replace(first, continued=0)
        elif rec.continued:
            self._meta_parts, self._meta_rec = [d], rec
            return rec.name or "", b""
        orig = rec.orig_node
        if orig == ORIG_DDR:
            try:
                self.ddr = decode_ddr(d, self.db_type)
                self.db_type = self.ddr.db_type
            except ValueError:
                self.ddr = None
            return "", d
        if orig == ORIG_PNR:
            return rec.name or "", b""
        if orig == ORIG_TDR:
            spec = self._tdr(rec, d)
            index = rec.tdr_index or (max(self.tdrs, default=0) + 1)
            self.tdrs[index] = spec
            self._c_learn(index, spec)
        elif orig == ORIG_TDR_REF:
            spec = self._tdr_ref(rec)
            index = max(self.tdrs, default=0) + 1
            self.tdrs[index] = spec
            self._c_learn(index, spec)
        else:  # the 12.1 layout: trailgate's 11.2 metadata text, named in the header
            try:
                table = decode_tabledef(d)
            except ValueError:
                return rec.name or "", b""
            spec = spec_of(table)
            self.by_name[table.qualified_name] = spec
            self._c_learn(None, spec)
            return table.qualified_name, d
        if spec.definition is None:
            return spec.name, b""
        return spec.name, encode_tabledef(spec.definition, with_source=True)

    def _tdr(self, rec: Record12, d: bytes) -> TableSpec:
        try:
            return decode_tdr(d, rec.name, self.db_type)
        except ValueError as exc:
            return TableSpec(rec.name or f"?TDR{rec.tdr_index}", None,
                             problem=f"the TDR at RBA {self.base + rec.rba}: {exc}")

    def _tdr_ref(self, rec: Record12) -> TableSpec:
        ref = self.tdrs.get(rec.tdr_index)
        name = rec.name or f"?TDR{max(self.tdrs, default=0) + 1}"
        if ref is None:
            return TableSpec(name, None, problem=f"refers to TDR index {rec.tdr_index}, which "
                             "no TDR before it defines")
        if ref.definition is None:
            return TableSpec(name, None, dict(ref.columns), ref.problem)
        schema, _, tname = name.rpartition(".")
        table = TableDef(schema, tname, ref.definition.columns, ref.definition.key,
                         ref.definition.key_kind, ref.definition.object_id)
        return TableSpec(name, table, dict(ref.columns))
