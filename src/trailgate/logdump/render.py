"""Logdump's record display: the GHDR block, the operation line, images, columns, tokens.

Layout follows Oracle's Logdump (seed 002) so output can be compared with GoldenGate's;
every function returns lines, leaving where they go to the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from trailgate.logdump.formats import hex_lines, io_type_name, julian_text, printable
from trailgate.logdump.headerinfo import group_name, token_name, token_value_text
from trailgate.logdump.layout import column_value_text, split_columns, subrecords
from trailgate.logdump.source import HeaderEntry
from trailgate.model import OpType, TableDef
from trailgate.trail.ddl import parse_marker
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.records import RawRecord, decode_lob_piece

__all__ = ["SEPARATOR", "Settings", "header_tokens", "render_file_header", "render_record"]

SEPARATOR = "_" * 67
_TRANS_LETTER = {0: "b", 1: "m", 2: "e", 3: "s"}
_GGS_TOKEN_NAMES = {ord("R"): "ORAROWID", ord("L"): "LOGCSN", ord("6"): "TRANID"}
_COLUMN_OPS = {OpType.DELETE, OpType.INSERT, OpType.UPDATE, OpType.FIELD_COMP, 134}


@dataclass(slots=True)
class Settings:
    """Display settings, changed by GHDR, DETAIL, FILEHEADER, USERTOKEN, GGSTOKEN, RECLEN,
    DECRYPT."""

    ghdr: bool = False
    detail: str = "OFF"  # OFF | ON | DATA
    fileheader: str = "OFF"  # OFF | ON | DETAIL
    usertoken: str = "OFF"  # OFF | ON | DETAIL
    ggstoken: str = "ON"  # OFF | ON | DETAIL
    headertoken: str = "OFF"  # OFF | ON | DETAIL
    reclen: int = 140  # bytes of a data area (or column) shown in hex
    tz: tzinfo = field(default=UTC)  # TIMEOFFSET: the zone times are shown in
    time_offset: str = "GMT"  # TIMEOFFSET as given (GMT, LOCAL, GMT+09:00)
    decrypt: bool = False  # DECRYPT ON: encrypted records opened with their key
    key_name: str | None = None  # DECRYPT ON KEYNAME k


def _char_cell(label: str, value: int) -> str:
    ch = chr(value) if 32 <= value < 127 else "."
    return f"{label:<11}: {ch:>5}  (x{value:02x})"


def _num_cell(label: str, value: int, digits: int = 2) -> str:
    return f"{label:<11}: {value:>5}  (x{value:0{digits}x})"


def _pair(left: str, right: str) -> str:
    return f"{left:<30}{right}"


def header_block(rec: RawRecord, tz: tzinfo = UTC,
                 audit_line: str | None = None) -> list[str]:
    """The GHDR ON block: the record header fields in Logdump's two columns (``audit_line``
    replaces the AuditRBA line: a 12c+ metadata record shows its DDR/TDR index there)."""
    return [
        _pair(_char_cell("Hdr-Ind", rec.hdr_ind), _char_cell("Partition", rec.partition)),
        _pair(_char_cell("UndoFlag", rec.undo_flag), _char_cell("BeforeAfter", rec.before_after)),
        _pair(_num_cell("RecLength", rec.rec_length, 4), f"{'IO Time':<11}: "
              + julian_text(rec.io_time, tz)),
        _pair(_num_cell("IOType", rec.io_type), _num_cell("OrigNode", rec.orig_node)),
        _pair(_char_cell("TransInd", rec.trans_ind), _char_cell("FormatType", rec.format_type)),
        _pair(_num_cell("SyskeyLen", rec.syskey_len), _char_cell("Incomplete", rec.incomplete)),
        audit_line or _pair(f"{'AuditRBA':<11}: {rec.audit_rba:>10}",
                            f"{'AuditPos':<11}: {rec.audit_pos}"),
        _pair(f"{'Continued':<11}: {'Y' if rec.continued else 'N':>5}  (x{rec.continued:02x})",
              _num_cell("RecCount", rec.rec_count)),
    ]


def op_line(when: int, name: str, length: int, rba: int, tz: tzinfo = UTC,
            pad: bool = True) -> str:
    """``2013/03/31 23:59:58.000.000 Insert               Len   110 RBA 1207`` (a 12c+
    metadata record's length unpadded: ``Metadata             Len 81 RBA 6237``)."""
    size = f"{length:>5}" if pad else str(length)
    return f"{julian_text(when, tz)} {name:<20} Len {size} RBA {rba}"


_TOKEN_AREAS = {ord("G"): "Record Header", ord("H"): "GHDR", ord("D"): "Data",
                ord("T"): "GGS Tokens", ord("U"): "User Tokens", ord("Z"): "Record Trailer"}


def _token_line(type_: int, flag: int, length: int) -> str:
    ch = chr(type_) if 32 <= type_ < 127 else "."
    name = _TOKEN_AREAS.get(type_, "Token")
    return f"TokenID x{type_:02x} '{ch}' {name:<16} Info x{flag:02x}  Length {length:>4}"


def header_tokens(buf: bytes, order: str, detail: bool) -> list[str]:
    """HEADERTOKEN: the record's G header, its areas (``DETAIL``: with the H area in hex)
    and its Z trailer, lengths read in ``order``."""
    if len(buf) < 8:
        return []
    total = int.from_bytes(buf[2:4], order)  # type: ignore[arg-type]
    lines = [_token_line(buf[0], buf[1], total)]
    pos, end = 4, len(buf) - 4
    while pos + 4 <= end:
        n = int.from_bytes(buf[pos + 2 : pos + 4], order)  # type: ignore[arg-type]
        lines.append(_token_line(buf[pos], buf[pos + 1], n))
        if detail and buf[pos] == ord("H"):
            lines += hex_lines(buf[pos + 4 : pos + 4 + n])
        pos += 4 + n
    lines.append(_token_line(buf[-4], buf[-3], int.from_bytes(buf[-2:], order)))  # type: ignore[arg-type]
    return lines


def _dump(data: bytes, reclen: int) -> list[str]:
    lines = hex_lines(data[:reclen])
    if len(data) > reclen:
        lines.append(f"   ... {len(data) - reclen} more bytes (RECLEN {reclen}; "
                     "RECLEN n shows more)")
    return lines


def _columns(data: bytes, start: int, end: int, table: TableDef | None,
             settings: Settings, continued: bool = False, order: str = "big",
             values: dict[int, bytes] | None = None) -> list[str]:
    """Each column's header line and bytes (``order``: the lengths' byte order), and with
    DETAIL DATA its value: decoded from its bytes, or (a 12c+ record) from ``values``, the
    record's columns in the 11.2 form."""
    by_index = {c.index: c for c in table.columns} if table is not None else {}
    slots, problem = split_columns(data, start, end, order)
    lines: list[str] = []
    for slot in slots:
        col = by_index.get(slot.index)
        name = f"  {col.name}" if col is not None else ""
        lines.append(f"Column {slot.index:>5} (x{slot.index:04x}), Len {slot.length:>5} "
                     f"(x{slot.length:04x}){name}")
        framed = data[slot.value_start : slot.value_end]
        lines += _dump(framed, settings.reclen)
        if values is not None:
            framed = values.get(slot.index, b"")
        if settings.detail == "DATA" and (values is None or slot.index in values):
            value = column_value_text(framed, col.kind if col is not None else None)
            label = col.name if col is not None else f"Column {slot.index}"
            lines.append(f"  {label} = {value}")
    if problem and continued:
        lines.append("  (the column list goes on in the next record)")
    elif problem:
        lines.append(f"  (column list stops: {problem})")
    return lines


def _ggs_tokens(buf: bytes, rec: RawRecord, settings: Settings) -> list[str]:
    subs, _ = subrecords(buf, 4, len(buf) - 4)
    lines: list[str] = []
    for sub in subs:
        if sub.type != ord("T"):
            continue
        tsubs, problem = subrecords(buf, sub.start, sub.end)
        lines.append("GGS tokens:")
        for t in tsubs:
            name = _GGS_TOKEN_NAMES.get(t.type, "TOKEN")
            ch = chr(t.type) if 32 <= t.type < 127 else "."
            lines.append(f"TokenID x{t.type:02x} '{ch}' {name:<16} Info x{t.flag:02x}  "
                         f"Length {t.length:>4}")
            lines += hex_lines(buf[t.start : t.end])
        if problem:
            lines.append(f"  (GGS token area stops: {problem})")
    return lines


def _user_tokens(buf: bytes, rec: RawRecord, settings: Settings) -> list[str]:
    if not rec.tokens:
        return []
    subs, _ = subrecords(buf, 4, len(buf) - 4)
    area = next((buf[s.start : s.end] for s in subs if s.type == ord("U")), b"")
    lines = [f"User tokens:   {len(area)} bytes"]
    width = max(len(name) for name in rec.tokens) + 4
    for name, value in rec.tokens.items():
        lines.append(f"{'TKN-' + name:<{width}} : {value}")
    if settings.usertoken == "DETAIL":
        lines += hex_lines(area)
    return lines


def _body(rec: RawRecord, table: TableDef | None, settings: Settings) -> list[str]:
    """What the record's data means, by operation type."""
    data = rec.data
    io = rec.io_type
    lines: list[str] = []
    if io == OpType.METADATA:
        try:
            tdef = decode_tabledef(data)
        except ValueError as exc:
            more = " (continued in the next record)" if rec.continued else ""
            return [f"Table definition: cannot read it here{more}: {exc}"]
        key = ",".join(tdef.key) or "none"
        lines.append(f"Table definition: {tdef.qualified_name}, {len(tdef.columns)} columns, "
                     f"key {tdef.key_kind} ({key})")
        for col in tdef.columns:
            null = "" if col.nullable else " NOT NULL"
            lines.append(f"  Column {col.index:>4}  {col.name:<30} {col.kind.value:<9} "
                         f"{col.source_type}{null}")
        return lines
    if io == OpType.DDL:
        return _ddl(data, rec)
    if io == OpType.COMMENT:
        return [f"Comment: {data.decode('utf-8', 'replace')}"]
    if io == OpType.LOB:
        try:
            index, count, number, offset, piece = decode_lob_piece(data)
        except ValueError as exc:
            return [f"LOB piece: cannot read its header: {exc}"]
        lob_col = next((c for c in table.columns if c.index == index), None) if table else None
        name = f" ({lob_col.name})" if lob_col else ""
        return [f"LOB piece {number} of {count} of column {index}{name}: offset {offset}, "
                f"{len(piece)} bytes"]
    if io == OpType.RECORD_FRAGMENT:
        return [f"Record fragment: {len(data)} more bytes of the data area; "
                + ("more fragments follow" if rec.continued else "the last fragment")]
    if settings.detail == "OFF":
        return lines
    if io == OpType.PK_UPDATE:
        if len(data) < 2:
            return ["  (PK update without its before-key length)"]
        blen = (data[0] << 8) | data[1]
        lines.append(f"Before key: {blen} bytes")
        lines += _columns(data, 2, min(2 + blen, len(data)), table, settings)
        lines.append("After image:")
        lines += _columns(data, 2 + blen, len(data), table, settings)
        return lines
    if io in _COLUMN_OPS:
        lines += _columns(data, 0, len(data), table, settings, bool(rec.continued))
    return lines


def _ddl(data: bytes, rec: RawRecord) -> list[str]:
    """A DDL record as GoldenGate's Logdump shows one: the statement and its length, then
    the DDL sequence, operation and object (and what the marker says went wrong)."""
    try:
        marker = parse_marker(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        more = " (continued in the next record)" if rec.continued else ""
        return [f"DDL: cannot read the marker text here{more}: {exc}"]
    statement = marker.statement
    lines = [f"DDL operation [{statement}], len {len(statement)}",
             f"DDL seqno [{marker.get('C5')}], optype [{marker.ddl_type}], objtype "
             f"[{marker.object_type}], objowner [{marker.owner}], objname [{marker.name}]"]
    if marker.master_name:
        lines.append(f"  on table [{marker.master_qualified_name}]")
    settings = marker.settings()
    if settings:
        lines.append("  Session: " + "; ".join(f"{k}={v}" for k, v in settings.items()))
    if marker.error:
        lines.append(f"  Error: {marker.error}")
    return lines


def render_record(rec: RawRecord, buf: bytes, table: TableDef | None,
                  settings: Settings) -> list[str]:
    """The whole display of one data record; ``buf`` is the record's bytes (G to Z)."""
    lines: list[str] = []
    if settings.ghdr:
        lines += header_block(rec, settings.tz)
        lines.append("")
    lines.append(op_line(rec.io_time, io_type_name(rec.io_type), rec.rec_length, rec.rba,
                         settings.tz))
    lines.append(f"Name: {rec.table}")
    label = "Before Image:" if rec.before_after == 0x42 else "After  Image:"
    lines.append(f"{label:<58}Partition {rec.partition:x}   G  "
                 f"{_TRANS_LETTER.get(rec.trans_ind, '?')}")
    if hasattr(rec, "encryption"):  # logdump.source.SealedRecord: shown without its key
        sealed = rec.encryption
        how = sealed.describe() if sealed is not None else "a key the file header does not name"
        lines.append(f"Encrypted: data and user tokens ({how}); DECRYPT ON shows them")
        lines += _dump(rec.data, settings.reclen)
        if settings.ggstoken != "OFF":
            lines += _ggs_tokens(buf, rec, settings)
        return lines
    lines += _dump(rec.data, settings.reclen)
    if rec.continued and rec.io_type != OpType.RECORD_FRAGMENT:
        lines.append("Continued: the data goes on in the following RecordFragment record(s)")
    lines += _body(rec, table, settings)
    if settings.ggstoken != "OFF":
        lines += _ggs_tokens(buf, rec, settings)
    if settings.usertoken != "OFF":
        lines += _user_tokens(buf, rec, settings)
    return lines


def file_header_groups(buf: bytes, length: int, with_hex: bool,
                       tz: tzinfo = UTC) -> list[str]:
    """FILEHEADER ON/DETAIL: each token group with its fields (and hex with DETAIL), the
    group line as Logdump 19.1 prints it (``GroupID x30 '0' TrailInfo …``)."""
    lines: list[str] = []
    groups, problem = subrecords(buf, 4, length - 4)
    for g in groups:
        ch = chr(g.type) if 32 <= g.type < 127 else "."
        lines.append(f"GroupID x{g.type:02x} '{ch}' {group_name(g.type):<16} Info "
                     f"x{g.flag:02x}  Length {g.length:>4}")
        if with_hex:
            lines += hex_lines(buf[g.offset : g.end])
        tokens, tproblem = subrecords(buf, g.start, g.end)
        for t in tokens:
            value = token_value_text(g.type, t.type, t.flag, buf[t.start : t.end], tz)
            if g.type == 0x30 and t.type == 0x35:
                hops, _ = subrecords(buf, t.start, t.end)
                value = " -> ".join(printable(buf[h.start + 2 : h.end]) for h in hops) or "-"
            lines.append(f"  {token_name(g.type, t.type):<20}: {value}")
        if tproblem:
            lines.append(f"  (group stops: {tproblem})")
    if problem:
        lines.append(f"(file header stops: {problem})")
    return lines


def render_file_header(entry: HeaderEntry, buf: bytes, settings: Settings) -> list[str]:
    """The file header as Logdump lists it at RBA 0."""
    h = entry.header
    lines = [op_line(h.creation_time, "FileHeader", h.length, 0, settings.tz),
             "Name: *FileHeader*"]
    if settings.fileheader == "OFF":
        lines += _dump(buf[4 : h.length - 4], settings.reclen)
        return lines
    lines += file_header_groups(buf, h.length, settings.fileheader == "DETAIL", settings.tz)
    return lines
