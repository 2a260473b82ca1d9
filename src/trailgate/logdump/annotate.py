"""``trailgate trail dump FILE [--annotate]``: every byte of a trail file, explained.

With ``--annotate`` the output follows seed 001's TrailAnalyzer: bytes in hex, nested
``<46_30>`` / ``</46_30>`` tags for sub-records, and ``#`` comments naming each field, so a
person can check a trail byte by byte against the seeds.  Without it, a plain hex dump with
decimal offsets (Logdump's RBAs).  Damage is annotated and skipped, never fatal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from trailgate.errors import TrailFormatError
from trailgate.logdump.formats import (
    io_type_name,
    julian_text,
    oracle_rba,
    printable,
    spaced_hex,
    trailanalyzer_time,
)
from trailgate.logdump.headerinfo import (
    group_name,
    is_string_token,
    token_name,
    token_value_text,
)
from trailgate.logdump.layout import Sub, column_value_text, split_columns, subrecords
from trailgate.model import OpType, TableDef
from trailgate.trail.header import VENDOR_ORACLE, FileHeader, decode_file_header
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.reader import find_next_record
from trailgate.trail.records import RawRecord, decode_record
from trailgate.trail.release12 import parse_record
from trailgate.trail.release12.layout import frame_length

__all__ = ["Annotator", "add_arguments", "annotate", "plain_dump", "run"]

_TRANS_IND = {0: "first", 1: "middle", 2: "last", 3: "only record of its transaction"}
_T_NAMES = {ord("R"): "ROWID", ord("L"): "Commit SCN", ord("6"): "Transaction ID"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="trail file to dump")
    parser.add_argument("--annotate", action="store_true",
                        help="TrailAnalyzer-style output: nested tags and field comments")
    parser.add_argument("--from", dest="start", type=int, default=0, metavar="RBA",
                        help="start at this RBA (0: the file header)")
    parser.add_argument("--count", type=int, default=None, metavar="N",
                        help="dump at most N data records")


def _type_comment(type_: int, flag: int, length: int) -> str:
    ch = chr(type_) if 32 <= type_ < 127 else "."
    return f"Type={type_:02X} ({ch}) Flag={flag} Len={length}"


class Annotator:
    """Builds the annotated dump line by line (nesting depth gives the indentation)."""

    def __init__(self, buf: bytes, path: str):
        self.buf = buf
        self.path = path
        self.lines: list[str] = []
        self.depth = 0
        self.tables: dict[str, TableDef] = {}
        self.oracle = False
        self.damaged = 0
        self._meta: tuple[str, list[bytes]] | None = None

    # -- emitting ---------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def comment(self, text: str) -> None:
        self.line(f"# {text}")

    def data(self, data: bytes, comment: str | None = None, sep: str = " ") -> None:
        """Bytes 16 a line; ``comment`` goes on the first line."""
        if not data:
            if comment:
                self.comment(comment)
            return
        for start in range(0, len(data), 16):
            text = spaced_hex(data[start : start + 16])
            if start == 0 and comment:
                text += f"{sep}# {comment}"
            self.line(text)

    def text_data(self, data: bytes) -> None:
        """Bytes 16 a line, each line's printable characters as its comment."""
        for start in range(0, len(data), 16):
            chunk = data[start : start + 16]
            self.line(f"{spaced_hex(chunk):<47}   # {printable(chunk)}")

    def sub_header(self, sub: Sub) -> None:
        self.line(f"{spaced_hex(self.buf[sub.offset : sub.start])}   "
                  f"# {_type_comment(sub.type, sub.flag, sub.length)}")

    def open_tag(self, path: str) -> None:
        self.line(f"<{path}>")
        self.depth += 1

    def close_tag(self, path: str) -> None:
        self.depth -= 1
        self.line(f"</{path}>")

    # -- the file header ----------------------------------------------------------------

    def file_header(self, header: FileHeader) -> None:
        buf = self.buf
        self.comment("File header")
        top = Sub(buf[0], buf[1], 0, header.length - 4)
        self.line(f"{spaced_hex(buf[0:4])}   # {_type_comment(top.type, top.flag, header.length)}")
        self.depth += 1
        groups, problem = subrecords(buf, 4, header.length - 4)
        for g in groups:
            self.sub_header(g)
            tag = f"46_{g.type:02X}"
            self.open_tag(tag)
            self.comment(group_name(g.type))
            tokens, tproblem = subrecords(buf, g.start, g.end)
            for t in tokens:
                self._token(g.type, t, tag)
            if tproblem:
                self._rest(tokens[-1].end if tokens else g.start, g.end, tproblem)
            self.close_tag(tag)
        if problem:
            self._rest(groups[-1].end if groups else 4, header.length - 4, problem)
        self.depth -= 1
        end = header.length
        self.line(f"{spaced_hex(buf[end - 4 : end])}   "
                  f"# {_type_comment(buf[end - 4], buf[end - 3], header.length)}")
        self.line("")

    def _token(self, group: int, t: Sub, parent: str) -> None:
        self.sub_header(t)
        tag = f"{parent}_{t.type:02X}"
        self.open_tag(tag)
        value = self.buf[t.start : t.end]
        name = token_name(group, t.type)
        if group == 0x30 and t.type == 0x35:
            self.comment("URIHistory: one URI per Data Pump hop")
            hops, problem = subrecords(self.buf, t.start, t.end)
            for hop in hops:
                self.sub_header(hop)
                hop_tag = f"{tag}_{hop.type:02X}"
                self.open_tag(hop_tag)
                self._string(self.buf[hop.start : hop.end], "URI")
                self.close_tag(hop_tag)
            if problem:
                self._rest(hops[-1].end if hops else t.start, t.end, problem)
        elif is_string_token(group, t.type) and t.flag != 0xFF:
            self._string(value, name)
        else:
            self.comment(f"{name} = {token_value_text(group, t.type, t.flag, value)}")
            self.data(value)
        self.close_tag(tag)

    def _string(self, value: bytes, name: str) -> None:
        n = int.from_bytes(value[:2], "big") if len(value) >= 2 else -1
        self.comment(name)
        self.comment(f"String Len = {n} (0x{max(n, 0):X})")
        self.data(value[:2])
        text = value[2:]
        for i, line in enumerate(text.decode("utf-8", "replace").splitlines() or [""]):
            self.comment(f"{'' if i == 0 else '  '}{line}")
        self.data(text)

    def _rest(self, start: int, end: int, problem: str) -> None:
        self.comment(f"DAMAGED: {problem}")
        self.data(self.buf[start:end])

    # -- data records -------------------------------------------------------------------

    def record(self, rec: RawRecord) -> None:
        buf = self.buf
        start, end = rec.rba, rec.rba + rec.length
        self.comment(f"Record at RBA {start}: {io_type_name(rec.io_type)} {rec.table}")
        self.line(f"{spaced_hex(buf[start : start + 4])}   "
                  f"# {_type_comment(buf[start], buf[start + 1], rec.length)}")
        self.comment(f"Row ({rec.length - 8} bytes)")
        self.depth += 1
        subs, problem = subrecords(buf, start + 4, end - 4)
        for sub in subs:
            self.sub_header(sub)
            tag = f"47_{sub.type:02X}"
            self.open_tag(tag)
            if sub.type == ord("H"):
                self._h(sub, rec)
            elif sub.type == ord("D"):
                self._d(sub, rec)
            elif sub.type == ord("T"):
                self._t(sub, tag)
            elif sub.type == ord("U"):
                self._u(sub)
            elif sub.type == ord("E"):  # an encrypted record (ENCRYPTTRAIL): not opened here
                b = self.buf
                self.comment(f"Encrypted area ({sub.length} bytes): D and U sub-records "
                             "sealed with AES-GCM (docs/trail-format.md)")
                self.data(b[sub.start:sub.start + 12], "Nonce")
                self.data(b[sub.start + 12:sub.end - 16], "Ciphertext")
                self.data(b[sub.end - 16:sub.end], "Tag")
            else:
                self.comment(f"Unknown area ({sub.length} bytes)")
                self.text_data(buf[sub.start : sub.end])
            self.close_tag(tag)
        if problem:
            self._rest(subs[-1].end if subs else start + 4, end - 4, problem)
        self.depth -= 1
        self.line(f"{spaced_hex(buf[end - 4 : end])}   "
                  f"# {_type_comment(buf[end - 4], buf[end - 3], rec.length)}")
        self.line("")
        self._observe(rec)

    def _h(self, sub: Sub, rec: RawRecord) -> None:
        b = self.buf
        p = sub.start
        ba = chr(rec.before_after) if 32 <= rec.before_after < 127 else "?"
        image = {0x41: "after image", 0x42: "before image"}.get(rec.before_after, "")
        self.comment(f"Row Header ({sub.length} bytes)")
        self.data(b[p : p + 1], f"Hdr-Ind {chr(rec.hdr_ind)}")
        self.data(b[p + 1 : p + 2], f"Partition {rec.partition}")
        self.data(b[p + 2 : p + 3], f"UndoFlag {rec.undo_flag}")
        self.data(b[p + 3 : p + 4], f"BeforeAfter {ba} ({image})" if image else "BeforeAfter")
        self.data(b[p + 4 : p + 6], f"RecLength {rec.rec_length}")
        self.data(b[p + 6 : p + 7], f"Flags - 0x{rec.io_type:02X} {io_type_name(rec.io_type)}")
        self.data(b[p + 7 : p + 8], f"OrigNode {rec.orig_node}")
        self.data(b[p + 8 : p + 16], f"Timestamp {trailanalyzer_time(rec.io_time)}")
        self.data(b[p + 16 : p + 24], f"AuditPos {rec.audit_pos}")
        self.data(b[p + 24 : p + 25],
                  f"TransInd {rec.trans_ind} ({_TRANS_IND.get(rec.trans_ind, '?')})")
        rba = f"AuditRBA {rec.audit_rba}"
        if self.oracle:
            rba += f" - redo RBA {oracle_rba(rec.audit_rba, rec.audit_pos)}"
        self.data(b[p + 25 : p + 29], rba)
        self.data(b[p + 29 : p + 30], f"FormatType {chr(rec.format_type)}")
        self.data(b[p + 30 : p + 31], f"SyskeyLen {rec.syskey_len}")
        self.data(b[p + 31 : p + 32], f"Incomplete {rec.incomplete}")
        self.data(b[p + 32 : p + 33], f"Continued {rec.continued}")
        self.data(b[p + 33 : p + 34], f"RecCount {rec.rec_count}")
        self.data(b[p + 34 : sub.end], f"Object {rec.table}")

    def _d(self, sub: Sub, rec: RawRecord) -> None:
        data = self.buf[sub.start : sub.end]
        io = rec.io_type
        self.comment(f"Row Data ({sub.length} bytes)")
        table = self.tables.get(rec.table)
        if io == OpType.RECORD_FRAGMENT or rec.continued:
            more = "more fragments follow" if rec.continued else "the last part"
            self.comment(f"Part of a data area split across records; {more}")
            self.text_data(data)
        elif io == OpType.LOB:
            self._lob(data, table)
        elif io in (OpType.METADATA, OpType.DDL, OpType.COMMENT):
            what = {OpType.METADATA: "Table definition (METADATA_TEXT keys)",
                    OpType.DDL: "DDL marker text", OpType.COMMENT: "Comment"}[OpType(io)]
            self.comment(what)
            self.text_data(data)
        elif io == OpType.PK_UPDATE and len(data) >= 2:
            blen = int.from_bytes(data[:2], "big")
            self.data(data[:2], f"Before key length {blen}")
            self.comment("Before key")
            self._columns(data, 2, min(2 + blen, len(data)), table)
            self.comment("After image")
            self._columns(data, 2 + blen, len(data), table)
        else:
            self._columns(data, 0, len(data), table)

    def _columns(self, data: bytes, start: int, end: int, table: TableDef | None) -> None:
        by_index = {c.index: c for c in table.columns} if table is not None else {}
        slots, problem = split_columns(data, start, end)
        for slot in slots:
            col = by_index.get(slot.index)
            self.data(data[slot.offset : slot.value_start],
                      f"Column {slot.index}, Length {slot.length}")
            self.comment(f"Slot {slot.index} ({slot.length} bytes)")
            framed = data[slot.value_start : slot.value_end]
            name = col.name if col is not None else f"Column {slot.index}"
            value = column_value_text(framed, col.kind if col is not None else None, 60)
            self.data(framed, f"{name} = {value}")
        if problem:
            rest = slots[-1].value_end if slots else start
            self.comment(f"DAMAGED: {problem}")
            self.data(data[rest:end])

    def _lob(self, data: bytes, table: TableDef | None) -> None:
        if len(data) < 20:
            self._rest_data(data, "LOB piece header cut short")
            return
        fields = [int.from_bytes(data[i : i + 4], "big") for i in range(0, 20, 4)]
        index = fields[0]
        col = next((c for c in table.columns if c.index == index), None) if table else None
        name = f" ({col.name})" if col is not None else ""
        self.data(data[0:4], f"Column {index}{name}")
        self.data(data[4:8], f"Number of pieces = {fields[1]}")
        self.data(data[8:12], f"Piece number {fields[2]}")
        self.data(data[12:16], f"Start offset {fields[3]} bytes")
        self.data(data[16:20], f"{fields[4]} bytes")
        self.text_data(data[20:])

    def _rest_data(self, data: bytes, problem: str) -> None:
        self.comment(f"DAMAGED: {problem}")
        self.data(data)

    def _t(self, sub: Sub, parent: str) -> None:
        self.comment(f"Row Metadata ({sub.length} bytes)")
        subs, problem = subrecords(self.buf, sub.start, sub.end)
        for t in subs:
            self.sub_header(t)
            tag = f"{parent}_{t.type:02X}"
            self.open_tag(tag)
            value = self.buf[t.start : t.end]
            name = _T_NAMES.get(t.type, "Unknown token")
            shown = value[:-2] if t.type == ord("R") and value.endswith(b"\x00\x01") else value
            self.data(value, f"{name} {shown.decode('ascii', 'replace')}")
            self.close_tag(tag)
        if problem:
            self._rest(subs[-1].end if subs else sub.start, sub.end, problem)

    def _u(self, sub: Sub) -> None:
        self.comment(f"User tokens ({sub.length} bytes)")
        b = self.buf
        p = sub.start
        while p < sub.end:
            if p + 2 > sub.end:
                self._rest(p, sub.end, "token cut short")
                return
            n = int.from_bytes(b[p : p + 2], "big")
            name = b[p + 2 : p + 2 + n].decode("utf-8", "replace")
            self.data(b[p : min(p + 2 + n, sub.end)], f"Token name {name}")
            p += 2 + n
            if p + 2 > sub.end:
                self._rest(p, sub.end, "token value cut short")
                return
            v = int.from_bytes(b[p : p + 2], "big")
            value = b[p + 2 : p + 2 + v].decode("utf-8", "replace")
            self.data(b[p : min(p + 2 + v, sub.end)], f"TKN-{name} = {value}")
            p += 2 + v

    def _observe(self, rec: RawRecord) -> None:
        """Learn table definitions (joining fragments) so later columns get names."""
        if rec.io_type == OpType.METADATA:
            self._meta = (rec.table, [rec.data])
        elif rec.io_type == OpType.RECORD_FRAGMENT and self._meta and self._meta[0] == rec.table:
            self._meta[1].append(rec.data)
        else:
            self._meta = None
            return
        if not rec.continued:
            parts = self._meta[1]
            self._meta = None
            try:
                table = decode_tabledef(b"".join(parts))
            except ValueError:
                return
            self.tables[table.qualified_name] = table

    def unparsed(self, start: int, end: int, why: str) -> None:
        self.damaged += 1
        self.comment(f"ERROR at RBA {start}: {why}")
        self.comment(f"{end - start} bytes that are not part of a good record "
                     f"(RBA {start} to {end - 1})")
        self.text_data(self.buf[start:end])
        self.line("")


def _records(buf: bytes, start: int) -> Iterator[tuple[int, RawRecord | None, str | None]]:
    """(rba, record, problem) from ``start``: problem set (and record None) for damage, or
    for a record cut short at the end."""
    pos = start
    end = len(buf)
    while pos < end:
        if end - pos < 4 or (buf[pos] == 0x47 and pos + ((buf[pos + 2] << 8) | buf[pos + 3])
                             > end and ((buf[pos + 2] << 8) | buf[pos + 3]) >= 47):
            yield pos, None, "incomplete"
            return
        try:
            rec = decode_record(buf, pos, end, sealed=True)
        except (ValueError, UnicodeDecodeError) as exc:
            yield pos, None, str(exc)
            return
        rec.rba = pos
        yield pos, rec, None
        pos += rec.length


def annotate(buf: bytes, path: str, start: int = 0, count: int | None = None) -> Annotator:
    """The annotated dump of ``buf`` (a whole trail file) from ``start``."""
    ann = Annotator(buf, path)
    header = None
    try:
        header = decode_file_header(buf[:0xFFFF], max_compatibility=255)
    except ValueError as exc:
        if start == 0:
            ann.comment(f"ERROR: {path}: damaged file header: {exc}")
    if header is not None:
        ann.oracle = header.database.vendor == VENDOR_ORACLE
        if start == 0:
            ann.file_header(header)
        elif start < header.length:
            raise TrailFormatError(f"--from {start} is inside the file header (RBA 0 to "
                                   f"{header.length - 1}); use 0 or a record RBA", path=path)
        if header.compatibility > 3:
            _annotate12(ann, buf, max(start, header.length), count)
            return ann
        if start > header.length:
            ann.comment("Table definitions before this RBA are read for column names")
            for _rba, rec, _problem in _records(buf, header.length):
                if rec is None or rec.rba >= start:
                    break
                ann._observe(rec)
    pos = max(start, header.length if header is not None else 0)
    shown = 0
    while pos < len(buf) and (count is None or shown < count):
        resync = None
        for rba, rec, problem in _records(buf, pos):
            if count is not None and shown >= count:
                pos = len(buf)
                break
            if rec is not None:
                ann.record(rec)
                shown += 1
                pos = rba + rec.length
                continue
            if problem == "incomplete":
                ann.comment(f"{len(buf) - rba} bytes of an incomplete record at RBA {rba} "
                            "(cut short: its writer is still writing it, or stopped)")
                ann.data(buf[rba:])
                pos = len(buf)
                break
            found = find_next_record(buf, rba + 1)
            resync = len(buf) if found is None else found
            ann.unparsed(rba, resync, problem or "")
            pos = resync
            break
        else:
            break
        if resync is None and pos >= len(buf):
            break
    return ann


def _annotate12(ann: Annotator, buf: bytes, pos: int, count: int | None) -> None:
    """A 12c+ file: each record's header fields as a comment and its bytes (the field by
    field annotation is seed 001's 11.2 layout; Logdump's GHDR ON and HEADERTOKEN DETAIL
    read 12c+ records field by field)."""
    ann.comment("A 12c+ record layout (CompatibilityLevel above 3): records are shown whole; "
                "Logdump (GHDR ON, HEADERTOKEN DETAIL, DETAIL DATA) reads their fields")
    order, shown = "big", 0
    while pos < len(buf) and (count is None or shown < count):
        try:
            view = parse_record(buf, pos, len(buf), order)
        except ValueError as exc:
            if frame_length_or_none(buf, pos, order) is None:
                ann.comment(f"{len(buf) - pos} bytes of an incomplete record at RBA {pos}")
                ann.data(buf[pos:])
                return
            found = find_next_record12(buf, pos + 1, order)
            ann.unparsed(pos, found, str(exc))
            pos = found
            continue
        order = view.order
        where = (f"TDR index {view.tdr_index}" if view.name is None and view.io_type != 170
                 else view.name or "")
        ann.line("")
        ann.comment(f"Record at RBA {pos}: {io_type_name(view.io_type)} {where} "
                    f"({view.order}-endian, {view.length} bytes; RecLength {view.rec_length}, "
                    f"TransInd {view.trans_ind}, OrigNode {view.orig_node}, Partition "
                    f"x{view.partition:02x}, AuditRBA {view.audit_rba}, AuditPos "
                    f"{view.audit_pos}, IO Time {julian_text(view.io_time)})")
        ann.text_data(buf[pos : pos + view.length])
        pos += view.length
        shown += 1


def frame_length_or_none(buf: bytes, pos: int, order: str) -> int | None:
    """The record length at ``pos`` if its frame fits in either order, else None (cut
    short or damaged)."""
    try:
        found = frame_length(buf, pos, len(buf), order)
    except ValueError:
        return -1
    return None if found is None else found[0]


def find_next_record12(buf: bytes, pos: int, order: str) -> int:
    """The RBA of the next well-formed 12c+ record after damage (the end if none)."""
    while True:
        pos = buf.find(b"G\x01", pos)
        if pos < 0:
            return len(buf)
        try:
            parse_record(buf, pos, len(buf), order)
            return pos
        except ValueError:
            pos += 1


def plain_dump(buf: bytes, start: int = 0, count: int | None = None) -> list[str]:
    """Hex and ASCII, 16 bytes a line, with decimal offsets (RBAs)."""
    end = len(buf)
    if count is not None:
        pos, n = start, 0
        try:
            header = decode_file_header(buf[:0xFFFF], max_compatibility=255)
            if pos == 0:
                pos = header.length
        except ValueError:
            pass
        order = "big"
        while n < count and pos + 4 <= len(buf) and buf[pos] == 0x47:
            try:
                found = frame_length(buf, pos, len(buf), order)
            except ValueError:
                found = None
            if found is None:
                pos = len(buf)
                break
            pos, order = pos + found[0], found[1]
            n += 1
        end = min(pos, len(buf))
    lines = []
    for off in range(start, end, 16):
        chunk = buf[off : min(off + 16, end)]
        left = chunk[:8].hex(" ").upper()
        right = chunk[8:].hex(" ").upper()
        lines.append(f"{off:>10}  {left:<23}  {right:<23}  |{printable(chunk)}|")
    return lines


def run(args: argparse.Namespace) -> int:
    """Entry point for ``trailgate trail dump``."""
    path = Path(args.file)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise TrailFormatError(f"cannot read trail file: {exc.strerror}", path=str(path)) from None
    start = args.start or 0
    if start < 0 or start > len(buf):
        raise TrailFormatError(f"--from {start} is outside the file (0 to {len(buf)})",
                               path=str(path))
    if args.count is not None and args.count < 0:
        raise TrailFormatError("--count must not be negative", path=str(path))
    out = sys.stdout
    if args.annotate:
        ann = annotate(buf, str(path), start, args.count)
        out.write("\n".join(ann.lines) + "\n")
        if ann.damaged:
            print(f"trailgate: {path}: {ann.damaged} damaged area(s); see the ERROR comments",
                  file=sys.stderr)
            return 1
        return 0
    out.write("\n".join(plain_dump(buf, start, args.count)) + "\n")
    return 0
