"""Logdump's display of 12c+ records as GoldenGate's Logdump shows them: the DDR/TDR index in
the header block, ``Name: … (TDR Index: n)``, the DDR and TDR text, the data area and its
columns as the file holds them (in its byte order), and every GGS token.

The record's meaning comes from the decoder (:class:`~trailgate.logdump.source.Record`);
its bytes from the file, so a record trailgate cannot read is still shown as it is.
"""

from __future__ import annotations

from trailgate.logdump.formats import hex_lines, io_type_name
from trailgate.logdump.layout import split_columns
from trailgate.logdump.render import (
    Settings,
    _body,
    _columns,
    _dump,
    header_block,
    op_line,
)
from trailgate.logdump.source import Record
from trailgate.model import TableDef
from trailgate.trail.release12.columns import split_unified
from trailgate.trail.release12.definitions import TRAILGATE_LINE, decode_ddr, tdr_text
from trailgate.trail.release12.layout import ORIG_DDR, ORIG_PNR, ORIG_TDR, ORIG_TDR_REF
from trailgate.trail.release12.metabin import is_binary, parse_tdr
from trailgate.trail.release12.tokens import TOKEN_NAMES, walk

__all__ = ["TDR_LEGEND", "render_record12"]

#: The TDR field legend Logdump prints above a table definition.
TDR_LEGEND = [
    " 1)Name          2)Data Type        3)External Length  4)Fetch Offset      5)Scale"
    "         6)Level",
    " 7)Null          8)Bump if Odd      9)Internal Length 10)Binary Length    11)Table Length"
    " 12)Most Sig DT",
    "13)Least Sig DT 14)High Precision  15)Low Precision   16)Elementary Item  17)Occurs"
    "       18)Key Column",
    "19)Sub DataType 20)Native DataType 21)Character Set   22)Character Length 23)LOB Type"
    "     24)Partial Type",
    "25)Remarks",
]
_TRANS_LETTER = {0: "b", 1: "m", 2: "e", 3: "s"}
_ROW_OPS = frozenset({3, 5, 10, 15, 115, 134, 135})


def _metadata(rec: Record, settings: Settings) -> list[str]:
    view = rec.view
    assert view is not None
    d = view.d or b""
    orig = view.orig_node
    if view.continued:
        return [f"Table Name: {view.name or '?'}", "(the definition goes on in the next "
                "record)", *_dump(d, settings.reclen)]
    if orig == ORIG_DDR:
        try:
            ddr = decode_ddr(d, rec.db_type)
        except ValueError as exc:
            return [f"Database definition (DDR): {exc}", *_dump(d, settings.reclen)]
        first, *rest = ddr.lines()
        return [first, "*", *rest, "*"]
    if orig == ORIG_TDR_REF:
        return [f"Table Name: {view.name or '?'} (Ref TDR Index: {view.tdr_index})"]
    if orig == ORIG_TDR:
        lines = [f"Table Name: {view.name or rec.table}"]
        if is_binary(d):
            try:
                tdr = parse_tdr(d)
            except ValueError as exc:
                return [*lines, f"Table definition (TDR {view.tdr_index}): {exc}",
                        *_dump(d, settings.reclen)]
            return [*lines, "*", *TDR_LEGEND, "*",
                    *tdr_text(tdr, view.name or rec.table)]
        text = d.decode("utf-8", "replace").partition(TRAILGATE_LINE)[0]
        if not text.startswith("TDR version") or rec.problem or not rec.data:
            reason = rec.problem or "neither the text of a table definition nor a binary " \
                "TDR (a GoldenGate 12.2 token tree)"
            return [*lines, f"Table definition (TDR {view.tdr_index}): {reason}",
                    *_dump(d, settings.reclen)]
        return [*lines, "*", *TDR_LEGEND, "*", *text.rstrip("\n").splitlines()]
    if orig == ORIG_PNR:
        return [f"Partition record (PNR) of {view.name or '?'}: its layout is not public",
                *_dump(d, settings.reclen)]
    return _body(rec, None, settings)  # the 12.1 layout: trailgate's 11.2 metadata text


def _seed_values(data: bytes, start: int, end: int) -> dict[int, bytes]:
    """Each column's framed value in the record's 11.2 form (what DETAIL DATA decodes)."""
    slots, _ = split_columns(data, start, end)
    return {s.index: data[s.value_start : s.value_end] for s in slots}


def _row(rec: Record, table: TableDef | None, settings: Settings) -> list[str]:
    view = rec.view
    assert view is not None
    d, order = view.d or b"", view.data_order
    seed = rec.data if not rec.problem else b""
    if view.io_type in (134, 135):
        try:
            split = split_unified(d, order)
        except ValueError as exc:
            return [f"  ({exc})"]
        before, after = split - 4, len(d) - split
        old, new = rec.images or (b"", b"")
        lines = [f"Before Image          Len {before:>5} (x{before:08x})"]
        lines += _columns(d, 4, split, table, settings, False, order,
                          _seed_values(old, 0, len(old)))
        lines += ["", f"After Image           Len {after:>5} (x{after:08x})"]
        lines += _columns(d, split, len(d), table, settings, False, order,
                          _seed_values(new, 0, len(new)))
        return lines
    if view.io_type == 115:
        if len(d) < 2:
            return ["  (PK update without its before-key length)"]
        klen = int.from_bytes(d[:2], order)  # type: ignore[arg-type]
        skey = int.from_bytes(seed[:2], "big") if len(seed) >= 2 else 0
        lines = [f"Before Image          Len {klen + 2:>5} (x{klen + 2:08x})",
                 f"KeyLen {klen:>5} (x{klen:08x})"]
        lines += _columns(d, 2, min(2 + klen, len(d)), table, settings, False, order,
                          _seed_values(seed, 2, 2 + skey))
        after = len(d) - 2 - klen
        lines += ["", f"After Image           Len {after:>5} (x{after:08x})"]
        lines += _columns(d, 2 + klen, len(d), table, settings, False, order,
                          _seed_values(seed, 2 + skey, len(seed)))
        return lines
    return _columns(d, 0, len(d), table, settings, False, order,
                    _seed_values(seed, 0, len(seed)))


def _ggs_tokens(rec: Record) -> list[str]:
    view = rec.view
    assert view is not None
    if view.t is None:
        return []
    tokens, problem = walk(view.t, view.order)
    lines = ["GGS tokens:"]
    for tid, info, value in tokens:
        ch = chr(tid) if 32 <= tid < 127 else "."
        lines.append(f"TokenID x{tid:02x} '{ch}' {TOKEN_NAMES.get(tid, 'TOKEN'):<16} Info "
                     f"x{info:02x}  Length {len(value):>4}")
        lines += hex_lines(value)
    if problem:
        lines.append(f"  (GGS token area stops: {problem})")
    return lines


def render_record12(rec: Record, table: TableDef | None, settings: Settings) -> list[str]:
    """The whole display of one 12c+ record."""
    view = rec.view
    assert view is not None
    lines: list[str] = []
    if settings.ghdr:
        audit = None
        if view.is_metadata:
            audit = (f"DDR/TDR index:   ({view.ddr_index:03d}, {view.tdr_index:03d})     "
                     f"AuditPos   : {view.audit_pos}")
        lines += header_block(rec, settings.tz, audit)
        lines.append("")
    lines.append(op_line(view.io_time, io_type_name(view.io_type), view.rec_length, view.rba,
                         settings.tz, pad=not view.is_metadata))
    if view.is_metadata:
        lines += _metadata(rec, settings)
        return lines
    if view.io_type in (160, 205):
        lines.append(f"Name: {view.name or ''}".rstrip())
    elif view.name is None:
        where = (f"TDR/PNR Index: {view.tdr_index}/{view.pnr_index}" if view.pnr_index
                 else f"TDR Index: {view.tdr_index}")
        lines.append(f"Name: {rec.table}  ({where})")
    else:
        lines.append(f"Name: {rec.table}")
    if rec.problem:
        lines.append(f"trailgate cannot read this record: {rec.problem}")
    label = "Before Image:" if view.before_after == 0x42 else "After  Image:"
    lines.append(f"{label:<58}Partition x{view.partition:02x}   G  "
                 f"{_TRANS_LETTER.get(view.trans_ind, '?')}")
    lines += _dump(view.d or b"", settings.reclen)
    if view.continued:
        lines.append("Continued: the data goes on in the following RecordFragment record(s)")
    if settings.detail != "OFF" and view.io_type in _ROW_OPS and not view.continued:
        lines += _row(rec, table, settings)
    elif view.io_type not in _ROW_OPS:
        lines += _body(rec, table, settings)
    if settings.ggstoken != "OFF":
        lines += _ggs_tokens(rec)
    if settings.usertoken != "OFF" and rec.tokens:
        width = max(len(name) for name in rec.tokens) + 4
        lines.append(f"User tokens:   {len(view.u or b'')} bytes")
        lines += [f"{'TKN-' + n:<{width}} : {v}" for n, v in rec.tokens.items()]
        if settings.usertoken == "DETAIL":
            lines += hex_lines(view.u or b"")
    return lines
