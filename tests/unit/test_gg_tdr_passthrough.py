"""A TDR GoldenGate wrote, read and written again: its bytes come back as read, tokens
trailgate does not know included, whether the area alone goes round (metabin) or the table
definition travels through a reader, the JSON form a Pump's Spark stream carries and a
FORMAT RELEASE 12.2 writer — on the real 12.2 trail (tests/fixtures/goldengate, S19)."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

from gg_areas import tdr_areas

from trailgate.changes.change_rows import tabledef_from_json, tabledef_to_json
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.header import decode_file_header
from trailgate.trail.release import parse_release
from trailgate.trail.release12 import parse_record
from trailgate.trail.release12.metabin import build_ddr, build_tdr, parse_ddr, parse_tdr

REAL = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"
TCUSTMER_TDR, TCUSTORD_TDR, DDR = 1548, 2264, 1414


def tok(tid: int, value: bytes, info: int = 0) -> bytes:
    """A token as docs/trail-format.md lays them out (big-endian; info 0x40: 4-byte length)."""
    return bytes((tid, info)) + len(value).to_bytes(4 if info & 0x40 else 2, "big") + value


def area(rba: int) -> bytes:
    buf = REAL.read_bytes()
    return parse_record(buf, rba, len(buf)).d or b""


def with_unknown_tokens(real: bytes) -> bytes:
    """``real`` (a TDR of S19) with tokens no public TDR shows, at every level of its tree:
    a top-level token before the column list and one after it (4-byte length form), one
    more in group 2 and in the key group, non-zero values in group 2's unknown tokens; the
    version and the column list as read."""
    body = real[6:]  # inside the outer 0x30 token (info 0x40)
    version = body[:6]
    group_len = int.from_bytes(body[8:10], "big")
    group, columns = body[10 : 10 + group_len], body[10 + group_len :]
    assert version[:2] == b"\x01\x00" and body[6:8] == b"\x02\x00" and columns[:2] == b"\x03\x40"
    key_group = tok(1, group[4:10] + tok(7, b"\x05\x06\x07"))  # key count, then an unknown
    assert group[4:6] == b"\x01\x00"  # the key count token
    new_group = (key_group + tok(2, (0x01020304).to_bytes(4, "big")) + tok(3, b"\x00\x09")
                 + tok(4, b"\x00\x00") + tok(0x21, b"what is this", 0x40))
    return tok(0x30, version + tok(0x0B, b"\xde\xad\xbe\xef\x01") + tok(2, new_group)
               + columns + tok(0x60, bytes(range(17)), 0x40), 0x40)


def test_a_real_tdr_and_ddr_build_back_to_their_bytes_in_both_orders():
    """S19's DDR and both TDRs: read and built again, the same bytes; built little-endian
    and read, the same fields, and that built big-endian again the real bytes."""
    for rba, parse, build in ((DDR, parse_ddr, build_ddr), (TCUSTMER_TDR, parse_tdr, build_tdr),
                              (TCUSTORD_TDR, parse_tdr, build_tdr)):
        real = area(rba)
        assert build(parse(real)) == real  # type: ignore[operator]
        little = build(parse(real), "little")  # type: ignore[operator]
        assert little != real and parse(little) == parse(real)  # type: ignore[operator]
        assert build(parse(little), "big") == real  # type: ignore[operator]


def test_unknown_tokens_survive_a_read_write_round_trip_byte_for_byte():
    """Tokens trailgate does not know — at the top, in group 2, in the key group, before
    and after the column list, in either length form — come back byte for byte, also when a
    known field changes (trailgate's own token added, then taken away again)."""
    for rba in (TCUSTMER_TDR, TCUSTORD_TDR):
        odd = with_unknown_tokens(area(rba))
        tdr = parse_tdr(odd)
        assert tdr.columns == parse_tdr(area(rba)).columns
        assert tdr.key_count == parse_tdr(area(rba)).key_count
        assert tdr.unknown == {"11": "de ad be ef 01", "2.1.7": "05 06 07", "2.2": 0x01020304,
                               "2.3": 9, "2.4": 0, "2.33": "77 68 61 74 20 69 73 20 74 68 69 73",
                               "96": " ".join(f"{b:02x}" for b in range(17))}
        assert build_tdr(tdr) == odd
        marked = build_tdr(dataclasses.replace(tdr, trailgate=b"W='X'"))
        again = parse_tdr(marked)
        assert again.trailgate == b"W='X'" and again.unknown == tdr.unknown
        assert build_tdr(dataclasses.replace(again, trailgate=None)) == odd


def test_a_column_entry_keeps_its_own_shape():
    """A column entry with bytes after its fields in part A, or with no part B (the 21c
    candidate form), builds back as read."""
    real = area(TCUSTMER_TDR)
    tdr = parse_tdr(real)
    first = tdr.columns[0]
    odd = dataclasses.replace(tdr, columns=[
        dataclasses.replace(first, tail_a=b"\x01\x02\x03"),
        dataclasses.replace(tdr.columns[1], part_b=False, extra=b""), *tdr.columns[2:]])
    built = build_tdr(odd)
    assert parse_tdr(built).columns == odd.columns and build_tdr(parse_tdr(built)) == built
    assert len(built) == len(real) + 3 - 16  # 3 bytes more in part A, 2 + 14 of part B less


def with_tdr(path: Path, rba: int, new: bytes) -> Path:
    """The real file with the TDR record at ``rba`` carrying ``new`` as its data area (its
    header's RecLength and the record's lengths set to fit)."""
    buf = REAL.read_bytes()
    total = int.from_bytes(buf[rba + 2 : rba + 4], "big")
    head_len = int.from_bytes(buf[rba + 6 : rba + 8], "big")
    head = bytearray(buf[rba + 8 : rba + 8 + head_len])
    head[4:6] = len(new).to_bytes(2, "big")
    body = b"H\x00" + struct.pack(">H", head_len) + head + b"D\x00" + struct.pack(
        ">H", len(new)) + new
    size = struct.pack(">H", len(body) + 8)
    record = b"G\x01" + size + body + b"Z\x01" + size
    path.write_bytes(buf[:rba] + record + buf[rba + total :])
    return path


def test_a_trail_passed_through_keeps_goldengates_tdrs(tmp_path: Path):
    """The real trail, TCUSTMER's TDR given unknown tokens, read and written again as a
    Pump does (definitions through their JSON form, changes as read, the input's file
    header, FORMAT RELEASE 12.2): TCUSTMER's TDR comes out byte for byte as it went in.
    TCUSTORD's two binary NUMBER columns (data type 134) are described as the text
    trailgate sends for them, every other token and field as read, with trailgate's token
    for the exact definition; both tables and every change read back the same."""
    odd_area = with_unknown_tokens(area(TCUSTMER_TDR))
    source = with_tdr(tmp_path / "gg000000000", TCUSTMER_TDR, odd_area)
    header = decode_file_header(source.read_bytes())
    tables = {r.raw.table: tabledef_from_json(tabledef_to_json(r.table_def))
              for r in TrailReader(source, single_file=True).records()
              if r.table_def is not None}
    txns = [rt.transaction for rt in TrailReader(tmp_path / "gg").transactions()]
    assert sum(len(t.changes) for t in txns) == 16
    with TrailWriter(tmp_path / "tw", format=parse_release("12.2"), fsync=False,
                     database=header.database) as w:
        for txn in txns:
            w.write_transaction(txn, tables)
    tdrs = tdr_areas(tmp_path / "tw000000000")
    assert tdrs["QASOURCE.TCUSTMER"] == odd_area
    ours, theirs = parse_tdr(tdrs["QASOURCE.TCUSTORD"]), parse_tdr(area(TCUSTORD_TDR))
    assert ours.unknown == theirs.unknown and ours.trailgate is not None
    assert [c.data_type for c in theirs.columns] == [64, 192, 64, 64, 134, 134, 64]
    assert [c.data_type for c in ours.columns] == [64, 192, 64, 64, 64, 64, 64]
    assert ours.columns[:4] == theirs.columns[:4] and ours.columns[6].name == "TRANSACTION_ID"
    back = [rt.transaction for rt in TrailReader(tmp_path / "tw").transactions()]
    assert [(t.xid, t.csn, list(t.changes)) for t in back] == [
        (t.xid, t.csn, list(t.changes)) for t in txns]
    assert {r.raw.table: r.table_def for r in TrailReader(tmp_path / "tw").records()
            if r.table_def is not None} == tables


def test_a_kept_tdr_of_a_table_whose_column_indexes_have_gaps_is_described_anew():
    """Review, stop 30: a TDR's columns are by position, a table's by ``Column.index``; a
    table with a dropped column's gap (indexes 0 and 2) whose TDR came from a trail raised
    a KeyError in the writer.  It is described anew, and reads back as that table."""
    from trailgate.model import Column, ColumnKind, TableDef
    from trailgate.trail.release12.definitions import encode_tdr_binary

    table = TableDef("S", "T", [Column("ID", 0, ColumnKind.NUMBER, "NUMBER(10)"),
                                Column("NOTE", 2, ColumnKind.VARCHAR2, "VARCHAR2(20)",
                                       length=20)], key=["ID"])
    own = encode_tdr_binary(table)
    kept = dataclasses.replace(table, source_tdr=own.hex())
    assert encode_tdr_binary(kept) == own
    odd = with_unknown_tokens(own)
    assert encode_tdr_binary(dataclasses.replace(table, source_tdr=odd.hex())) == own


def test_a_malformed_tdr_names_its_top_level_problem():
    """Review, stop 30: an area of two top-level tokens is named as such, not as Python's
    unpacking error."""
    import pytest

    real = area(TCUSTMER_TDR)
    with pytest.raises(ValueError, match="2 top-level tokens"):
        parse_tdr(real + real)
