"""What the public GoldenGate 21.3 metadata records fix about their layout.

S1 (MySQL) and S3 (PostgreSQL) of docs/trail-format.md's Sources are the only public 21c
DDR and TDRs: Logdump 21.3 printed each one's data-area length and decoded fields, never
its bytes.  These tests hold the arithmetic the docs draw from them: S1's DDR has exactly
the length of GoldenGate 12.2's DDR layout; both TDRs are shorter than the 12.2 layout by 16
bytes a column and 20 a TDR, so 21.3's TDR layout differs and two lengths cannot say how; the
printed fetch offsets follow DEFGEN's rule without 12.2's rounding.  A TDR in the simplest
12.2 variant that has both lengths is read with its column names (the reader skips absent
optional parts), and damaging it gives clean errors only; that variant is a candidate, not
GoldenGate's layout.
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import pytest
from gg12_vectors import KST, S1_DDR_TEXT, S1_HEADERS, S1_ROWS, S1_TDR_TEXT, S3_HEADERS, S3_TDR_TEXT
from logdump_run import logdump_text
from test_trail_release12_vectors import (
    LE,
    check_rows,
    g_record,
    julian,
    metadata,
    rebuilt,
    write_file,
)

from trailgate.errors import TrailFormatError
from trailgate.trail import TrailReader
from trailgate.trail.release12.definitions import column_rows, record_length
from trailgate.trail.release12.layout import index_pair, pack_header
from trailgate.trail.release12.metabin import (
    BinColumn,
    BinDdr,
    BinTdr,
    build_ddr,
    build_tdr,
    parse_ddr,
    parse_tdr,
)

S1_DDR_LENGTH, S1_TDR_LENGTH = S1_HEADERS[0].d_length, S1_HEADERS[1].d_length  # 81, 138
S3_TDR_LENGTH = S3_HEADERS[0].d_length  # 252


def printed(text: str) -> list[tuple[str, list[int]]]:
    """The column rows of a TDR as Logdump 21.3 printed it: name and its 23 numbers."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 24 and not line.startswith(("TDR", "Definition", "Record")):
            rows.append((parts[0], [int(p) for p in parts[1:]]))
    return rows


def column(name: str, n: list[int], part_b: bytes = bytes(14)) -> BinColumn:
    """A printed column in 12.2's column entry (the fields docs/trail-format.md maps)."""
    key = n[16] == 1
    return BinColumn(name, n[0], n[7], n[1], n[8], n[9], 0, n[2], n[19], n[18], n[17],
                     n[10], n[11], n[3], 0, 0x22 | key, part_b)


S1_COLUMNS, S3_COLUMNS = printed(S1_TDR_TEXT), printed(S3_TDR_TEXT)


def tdr_12_2(rows: list[tuple[str, list[int]]]) -> bytes:
    return build_tdr(BinTdr(11, None, [column(name, n) for name, n in rows]))


def candidate(rows: list[tuple[str, list[int]]], order: str = "big") -> bytes:
    """The simplest 12.2 variant with 21.3's lengths: no part B in a column entry and no
    group-2 tokens 2-4 (S19's unknown zeros); everything else as 12.2 writes it."""

    def tok(tid: int, value: bytes, long: bool = False) -> bytes:
        size = len(value).to_bytes(4 if long else 2, order)  # type: ignore[arg-type]
        return bytes((tid, 0x40 if long else 0)) + size + value

    def u16(value: int) -> bytes:
        return value.to_bytes(2, order)  # type: ignore[arg-type]

    fixed = struct.Struct((">" if order == "big" else "<") + "HIIIIIIiHHHHHHH")
    entries = b""
    for name, n in rows:
        c = column(name, n)
        part_a = u16(len(name)) + name.encode() + fixed.pack(
            c.data_type, c.length_a, c.external_length, c.length_c, c.table_length, 0,
            c.offset, c.charset, c.native_type, c.sub_type, c.unknown_u16_2, c.least_dt,
            c.scale, 0, c.flags)
        entry = u16(len(part_a)) + part_a
        entries += u16(len(entry)) + entry
    keys = sum(n[16] for _name, n in rows)
    body = (tok(1, u16(11)) + tok(2, tok(1, tok(1, u16(keys))))
            + tok(3, u16(len(rows)) + entries, long=True))
    return tok(0x30, body, long=True)


def test_s1s_ddr_has_the_length_of_the_12_2_layout():
    """S1's DDR (MySQL, empty database name, time zone GMT+09:00) built in S19's layout
    has the 81 bytes Logdump 21.3 printed, in either byte order."""
    case = bytes.fromhex(S1_DDR_TEXT.split("Case sensitivity: ")[1].split("\n")[0])
    for order in ("big", "little"):
        area = build_ddr(BinDdr(1, "", "GMT+09:00", case), order)  # type: ignore[arg-type]
        assert len(area) == S1_DDR_LENGTH == 81
        back = parse_ddr(area)
        assert (back.version, back.name, back.timezone, back.case_sensitivity) == (
            1, "", "GMT+09:00", case)


def test_21_3s_tdrs_are_16_bytes_a_column_and_20_a_tdr_shorter_than_12_2s():
    """The 12.2 layout would make S1's 2-column TDR 190 bytes and S3's 4-column TDR 336;
    Logdump 21.3 printed 138 and 252.  Two lengths give two unknowns: 50 bytes plus the
    name a column (12.2: 66) and 34 a TDR (12.2: 54)."""
    assert (len(tdr_12_2(S1_COLUMNS)), S1_TDR_LENGTH) == (190, 138)
    assert (len(tdr_12_2(S3_COLUMNS)), S3_TDR_LENGTH) == (336, 252)
    names1 = sum(len(name) for name, _n in S1_COLUMNS)
    names3 = sum(len(name) for name, _n in S3_COLUMNS)
    per_column, odd = divmod(S3_TDR_LENGTH - S1_TDR_LENGTH - (names3 - names1), 2)
    assert odd == 0  # a whole number of bytes a column
    per_tdr = S1_TDR_LENGTH - 2 * per_column - names1
    assert (per_column, per_tdr) == (50, 34)


def test_21_3s_printed_offsets_follow_defgens_rule_without_rounding():
    """Each printed fetch offset is the previous one plus its width (binary length, a null
    flag, a 2-byte length for data type 64, one byte), not rounded to even as 12.2's are;
    trailgate's record length (the last offset plus its width) gives the printed one."""
    for rows, text in ((S1_COLUMNS, S1_TDR_TEXT), (S3_COLUMNS, S3_TDR_TEXT)):
        offset = 0
        for _name, n in rows:
            assert n[2] == offset
            offset += n[8] + 3 + (2 if n[0] == 64 else 0)
        tdr = BinTdr(11, None, [column(name, n) for name, n in rows])
        assert f"Record Length: {record_length(tdr)}" in text.splitlines()
    assert [n[2] for _name, n in S1_COLUMNS] == [0, 7]  # 12.2's rule would put c2 at 8


@pytest.mark.parametrize("order", ["big", "little"])
def test_a_tdr_in_the_length_fitting_variant_reads_with_its_column_names(
        tmp_path: Path, order: str):
    """The variant has 21.3's lengths, and the reader takes it (a column entry without a
    part B, a TDR without the unknown group-2 tokens): S1's rows get their names, types and
    key, and decode to what S1's Logdump printed."""
    s1, s3 = candidate(S1_COLUMNS, order), candidate(S3_COLUMNS, order)
    assert (len(s1), len(s3)) == (S1_TDR_LENGTH, S3_TDR_LENGTH)
    parsed = parse_tdr(s3)
    assert [c.name for c in parsed.columns] == ["int", "varchar", "time", "char"]
    assert (parsed.version, parsed.key_count, parsed.unknown) == (11, 1, {})
    path = write_file(tmp_path / "bb000000000", "MYSQL", [
        (None, metadata(1, 0, S1_DDR_TEXT, b"\x00", 0, 7)),
        (None, _tdr_record(s1, b"test.ogg_test\x00")),
        *[(v.rba, rebuilt(v, tail=(1).to_bytes(2, LE))) for v in S1_ROWS],
    ])
    check_rows(path, S1_ROWS)
    table = next(r.table_def for r in TrailReader(path, single_file=True).records()
                 if r.raw.table == "test.ogg_test" and r.table_def is not None)
    assert [(c.name, c.kind.value) for c in table.columns] == [("c1", "NUMBER"),
                                                               ("c2", "VARCHAR2")]
    assert table.key == ["c1"]
    shown = _logdump(path, "timeoffset " + KST, "sfmd tdr 1")
    assert "TDR version: 11" in shown and "Record Length: 132" in shown
    for row in _rows(S1_TDR_TEXT):  # S1's rows as its Logdump printed them, byte for byte
        assert row in shown


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line.split()) == 24]


def test_logdump_prints_a_tdrs_columns_as_logdump_21_3_did():
    """S1's and S3's TDRs: names padded to the longest plus two, each number right-aligned
    in the same field in every row of both tables (different name widths, 2 databases)."""
    for text, rows in ((S1_TDR_TEXT, S1_COLUMNS), (S3_TDR_TEXT, S3_COLUMNS)):
        assert column_rows(rows) == _rows(text)
    wide = column_rows([("a", [1234, *[123456789] * 22])])[0]
    assert wide.split() == ["a", "1234", *["123456789"] * 22]  # still apart when too wide


def _tdr_record(area: bytes, tail: bytes) -> bytes:
    head = pack_header(LE, partition=0, before_after=0x41, rec_length=len(area),
                       io_type=170, orig_node=2,
                       io_time=julian("2022/12/26 15:03:45.978221", KST), audit_pos=7,
                       audit_rba=index_pair(1, 1, LE), trans_ind=3, continued=0, tail=tail)
    return g_record(head, area, None)


def _logdump(path: Path, *commands: str) -> list[str]:
    text = logdump_text(path, *commands)
    assert "Traceback" not in text
    return text.splitlines()


def test_every_cut_and_garbled_byte_of_the_variant_is_a_clean_error():
    for order in ("big", "little"):
        area = candidate(S3_COLUMNS, order)
        for cut in range(len(area)):
            with pytest.raises(ValueError):
                parse_tdr(area[:cut])
        for at in range(len(area)):
            for byte in (0x00, 0xFF, area[at] ^ 0x01):
                with contextlib.suppress(ValueError):
                    parse_tdr(area[:at] + bytes((byte,)) + area[at + 1 :])


def test_a_damaged_variant_tdr_in_a_file_is_reported_by_file_and_rba(tmp_path: Path):
    """Cut inside a well-framed record: the rows keep their table and values by shape,
    SHOW TDR names the TDR's RBA, every reader either reads on or raises TrailFormatError
    naming the file and RBA; Logdump never shows a traceback."""
    area = candidate(S1_COLUMNS, "little")
    for cut in (1, 5, 6, 20, 40, 77, len(area) - 1):
        (tmp_path / f"cut{cut}").mkdir()
        path = write_file(tmp_path / f"cut{cut}" / "bb000000000", "MYSQL", [
            (None, metadata(1, 0, S1_DDR_TEXT, b"\x00", 0, 7)),
            (None, _tdr_record(area[:cut], b"test.ogg_test\x00")),
            *[(v.rba, rebuilt(v, tail=(1).to_bytes(2, LE))) for v in S1_ROWS],
        ])
        tdr_rba = next(r.raw.rba for r in TrailReader(path, single_file=True).records()
                       if r.raw.io_type == 170 and r.raw.table == "test.ogg_test")
        try:
            rows = [r for r in TrailReader(path, single_file=True).records()
                    if r.raw.table == "test.ogg_test" and r.raw.io_type != 170]
            assert len(rows) == len(S1_ROWS) and all(r.table_def is None for r in rows)
        except TrailFormatError as exc:
            assert "bb000000000" in str(exc) and " RBA " in str(exc), str(exc)
        shown = _logdump(path, "ghdr on", "detail data", "n 8", "show tdr", "sfmd tdr 1")
        assert any(f"the TDR at RBA {tdr_rba}: " in line for line in shown), cut
