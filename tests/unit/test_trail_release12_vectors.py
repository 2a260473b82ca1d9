"""Public Logdump output of real GoldenGate 12c-21c trails (tests/unit/gg12_vectors.py names
each source): every record rebuilt from its printed bytes decodes to what that Logdump
printed — header fields, lengths, IO times in the printed zone, table, column values — and
trailgate's Logdump prints the same header block and operation line."""

from __future__ import annotations

from pathlib import Path

import pytest
from gg12_vectors import (
    F1,
    F2,
    F3,
    KST,
    S1_DDR_TEXT,
    S1_HEADERS,
    S1_ROWS,
    S1_TDR_TEXT,
    S2_ROWS,
    S2_TDR_TEXT,
    S3_HEADERS,
    S3_REF,
    S3_ROWS,
    S3_TDR_TEXT,
    S5_D,
    S5_OP_LINE,
    S5_PRINTED,
    S5_ROW,
    S5_ZONE,
    S11_GHDR,
    S11_LENGTHS,
    S11_ROWID_TOKEN,
    S12_D,
    Vector,
    hexb,
)
from logdump_run import logdump_text

from trailgate.logdump.formats import io_type_name
from trailgate.logdump.headerinfo import token_value_text
from trailgate.logdump.layout import subrecords
from trailgate.logdump.render import op_line
from trailgate.logdump.time_cmds import parse_time_offset
from trailgate.model import Change, OpType, julian_from_unix_micros
from trailgate.trail import DatabaseInfo, FileHeader, TrailReader
from trailgate.trail.release import parse_release
from trailgate.trail.release12 import encode_change12, parse_record
from trailgate.trail.release12.layout import index_pair, pack_header, sub

LE = "little"
VENDOR = {"MYSQL": 6, "POSTGRESQL": 21, "ORACLE": 7}


def g_record(h: bytes, d: bytes | None, t: bytes | None, order: str = LE) -> bytes:
    body = sub(0x48, h, order)
    if d is not None:
        body += sub(0x44, d, order)
    if t is not None:
        body += sub(0x54, t, order)
    n = (len(body) + 8).to_bytes(2, order)  # type: ignore[arg-type]
    return b"G\x01" + n + body + b"Z\x01" + n


def tokens(items: list[tuple[int, int, bytes]]) -> bytes:
    return b"".join(sub(tid, value, LE, info) for tid, info, value in items)


def rebuilt(v: Vector, tail: bytes | None = None) -> bytes:
    """The record from its printed bytes; an area Logdump did not print in hex is filled to
    its printed length (only the header is checked then)."""
    h = hexb(v.ghdr)
    if tail is not None:
        assert len(tail) == len(h) - 34, "the substituted tail keeps the printed length"
        h = h[:34] + tail
    d = hexb(v.d) if v.d is not None else (b"\x00" * v.d_length if v.d_length else None)
    if v.t is not None:
        t = tokens(v.t)
    elif v.t_length:
        t = sub(ord("X"), b"\x00" * (v.t_length - 4), LE)
    else:
        t = None
    return g_record(h, d, t)


def julian(text: str, zone: str) -> int:
    from datetime import datetime

    tz, _ = parse_time_offset(zone)
    when = datetime.strptime(text, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=tz)
    return julian_from_unix_micros(int(when.timestamp()) * 1_000_000 + when.microsecond)


ALL_HEADERS = [*S1_HEADERS, *S1_ROWS, *S2_ROWS, *S3_HEADERS, S3_REF, *S3_ROWS]


@pytest.mark.parametrize("v", ALL_HEADERS, ids=lambda v: v.tag)
def test_each_printed_ghdr_decodes_to_what_logdump_printed(v: Vector):
    record = rebuilt(v)
    assert len(record) == v.g_length  # G = 4 + (4+H) + (4+D) + (4+T) + 4, as printed
    view = parse_record(record, 0, len(record))
    assert view.order == view.data_order == LE
    assert view.rec_length == (v.d_length or 0)
    tz, _ = parse_time_offset(KST)
    # the operation line: type name, RecLength, the IO time in KST, and the RBA
    assert op_line(view.io_time, io_type_name(view.io_type), view.rec_length, v.rba, tz,
                   pad=not view.is_metadata) == v.op_line
    if view.is_metadata:
        assert (view.ddr_index, view.tdr_index) == (1, v.tdr_index)
    elif v.tdr_index:
        assert view.name is None  # a two-byte tail: a TDR index, not a name


# -- whole files: records at their printed RBAs ----------------------------------------------

def _filler(size: int, order: str = LE) -> bytes:
    """A GGSComment record of exactly ``size`` bytes (between records placed at an RBA)."""
    text = "filler".ljust(size - 51, ".")
    change = Change(op=OpType.COMMENT, table="GGS_COMMENT", text=text, io_time=0)
    record = encode_change12(change, None, parse_release("21.1", order), 21, 3)[0]
    assert len(record) == size
    return record


def write_file(path: Path, vendor: str, records: list[tuple[int | None, bytes]],
               level: int = 7) -> Path:
    header = FileHeader(seqno=0, filename=str(path), compatibility=level,
                        database=DatabaseInfo(vendor=VENDOR[vendor], name="db"))
    out = bytearray(header.encode())
    for rba, record in records:
        if rba is not None:
            gap = rba - len(out)
            assert gap == 0 or gap >= 51, f"no room for a filler before RBA {rba}"
            while gap:
                size = gap if gap <= 60_000 else 30_000
                out += _filler(size)
                gap -= size
        out += record
    path.write_bytes(bytes(out))
    return path


def metadata(orig: int, tdr: int, text: str | None, tail: bytes, when: int,
             audit_pos: int) -> bytes:
    """A DDR or TDR record rebuilt from what Logdump printed of it."""
    d = text.encode() if text is not None else None
    head = pack_header(LE, partition=0, before_after=0x41, rec_length=len(d or b""),
                       io_type=170, orig_node=orig, io_time=when, audit_pos=audit_pos,
                       audit_rba=index_pair(1, tdr, LE), trans_ind=3, continued=0, tail=tail)
    return g_record(head, d, None)


def logdump(path: Path, *commands: str) -> list[str]:
    return logdump_text(path, *commands).splitlines()


def image(change: Change) -> dict[int, bytes | None]:
    return (change.before if change.op is OpType.DELETE else change.after) or {}


def check_rows(path: Path, rows: list[Vector], zone: str = KST) -> None:
    """Each row vector: table, operation, TransInd, lengths, values as Logdump printed them;
    and trailgate's Logdump prints the same header block, operation line and name."""
    by_rba = {r.raw.rba: r for r in TrailReader(path, single_file=True).records()
              if r.change is not None}
    for v in rows:
        record = by_rba[v.rba].raw
        change = by_rba[v.rba].change
        assert change is not None
        assert record.table == v.table, v.tag
        assert record.rec_length == (v.d_length or 0)
        assert image(change) == v.values, v.tag
        if v.t is not None:
            printed = {tid: value for tid, _i, value in v.t}
            assert record.xid == printed[0x36].decode()
            assert record.csn is not None
        lines = logdump(path, f"timeoffset {zone}", "ghdr on", "detail data", f"pos {v.rba}",
                        "n")
        assert v.op_line in lines, v.tag
        assert v.name_line in lines, v.tag
        for printed_line in v.printed:
            assert printed_line in lines, (v.tag, printed_line)


def test_mysql_21_3_trail(tmp_path: Path):
    """S1: OGG 21.3 for MySQL — DDR, TDR, insert, FieldComp, delete, truncate."""
    ddr, tdr = S1_HEADERS[0], S1_HEADERS[1]
    path = write_file(tmp_path / "bb000000000", "MYSQL", [
        (None, metadata(1, 0, S1_DDR_TEXT, b"\x00", julian(
            "2022/12/26 15:03:45.978220", KST), 7)),
        (None, metadata(2, 1, S1_TDR_TEXT, b"test.ogg_test\x00", julian(
            "2022/12/26 15:03:45.978221", KST), 7)),
        *[(v.rba, rebuilt(v, tail=(1).to_bytes(2, LE))) for v in S1_ROWS],
    ])
    check_rows(path, S1_ROWS)
    records = list(TrailReader(path, single_file=True).records())
    table = next(r.table_def for r in records if r.raw.table == "test.ogg_test")
    assert [(c.name, c.kind.value) for c in table.columns] == [("c1", "NUMBER"),
                                                               ("c2", "VARCHAR2")]
    assert table.key == ["c1"]
    first = next(r for r in records if r.change is not None and r.raw.rba == S1_ROWS[0].rba)
    # MySQL's LOGCSN "<binlog index>:<offset>" as an integer that keeps commit order
    assert first.raw.csn == 7_000_000_000_012_041
    # Logdump shows the DDR and TDR as GoldenGate's does
    lines = logdump(path, "timeoffset GMT+09:00", "ghdr on", "sfmd ddr")
    assert "Database type: MYSQL" in lines and "TimeZone: GMT+09:00" in lines
    assert "DDR/TDR index:   (001, 000)     AuditPos   : 7" in lines
    lines = logdump(path, "timeoffset GMT+09:00", "ghdr on", "sfmd tdr 1")
    assert "Table Name: test.ogg_test" in lines and "End of definition" in lines
    assert ("c1  132     11        0  0  0 0 0      4      4      4 0 0 0 0 1    0 1   0    3"
            "       -1      0 0 0") in lines
    assert tdr.printed[6] in lines and ddr.printed[6] not in lines  # the TDR, not the DDR
    assert "TDR Index    1: test.ogg_test (2 columns)" in logdump(path, "show tdr")
    shown = logdump(path, "show ddr")  # the DDR's fields as S1's Logdump printed them
    for printed in ("DDR Version: 1", "Database type: MYSQL", "Character set ID: UTF-8",
                    "National character set ID: UTF-16BE", "Locale: en_US", "TimeZone: GMT+09:00"):
        assert printed in shown


def test_a_binary_tdr_gives_the_table_name_and_values_by_shape(tmp_path: Path):
    """A TDR trailgate cannot parse (neither text nor the binary layout of GoldenGate 12.2,
    e.g. a later release's binary TDR): S1's rows after it keep the table's name (from
    the record header), carry their values by column index and shape (no names or types; a
    binary integer stays its bytes), and every tool says why instead of failing."""
    from trailgate.interchange import export_records

    unreadable = bytes(range(256))[::-1] * 2  # not text: stands for GoldenGate's binary TDR
    head = pack_header(LE, partition=0, before_after=0x41, rec_length=len(unreadable),
                       io_type=170, orig_node=2, io_time=0, audit_pos=7,
                       audit_rba=index_pair(1, 1, LE), trans_ind=3, continued=0,
                       tail=b"test.ogg_test\x00")
    path = write_file(tmp_path / "bb000000000", "MYSQL", [
        (None, metadata(1, 0, S1_DDR_TEXT, b"\x00", 0, 7)),
        (None, g_record(head, unreadable, None)),
        *[(v.rba, rebuilt(v, tail=(1).to_bytes(2, LE))) for v in S1_ROWS],
    ])
    rows = [r for r in TrailReader(path, single_file=True).records() if r.change is not None
            and r.change.op is not OpType.COMMENT]
    assert {r.raw.table for r in rows} == {"test.ogg_test"}
    assert all(r.table_def is None for r in rows)
    insert, update, delete, truncate = (r.change for r in rows)
    assert insert.after == {0: b"\x00\x00\x00\x01", 1: b"insert"}  # type: ignore[union-attr]
    assert update.after == {0: b"\x00\x00\x00\x01", 1: b"update"}  # type: ignore[union-attr]
    assert delete.before == {0: b"\x00\x00\x00\x01"}  # type: ignore[union-attr]
    assert truncate.op is OpType.TRUNCATE  # type: ignore[union-attr]
    exported = [o for o in export_records(path, single_file=True) if o["record"] == "change"
                and o["table"] == "test.ogg_test"]
    assert exported[0]["columns"] == [{"index": 0, "value": "\x00\x00\x00\x01"},
                                      {"index": 1, "value": "insert"}]  # no name, no type
    tdr_rba = next(r.raw.rba for r in TrailReader(path, single_file=True).records()
                   if r.raw.io_type == 170 and r.raw.table == "test.ogg_test")
    reason = (f"definition not readable: the TDR at RBA {tdr_rba}: the TDR is neither text "
              "nor a binary TDR (a GoldenGate 12.2 token tree)")
    assert f"TDR Index    1: test.ogg_test ({reason})" in logdump(path, "show tdr")
    shown = logdump(path, "sfmd tdr 1")
    assert "Table Name: test.ogg_test" in shown
    assert any(line.startswith("Table definition (TDR 1): neither the text") for line in shown)
    assert not any("Traceback" in line for line in logdump(path, "detail data", "n 8"))


def test_mysql_21_3_pk_update(tmp_path: Path):
    """S2: OGG 21.3 for MySQL — insert (with a DATE), FieldComp, PK update (115), delete."""
    path = write_file(tmp_path / "aa000000000", "MYSQL", [
        (None, metadata(1, 0, S1_DDR_TEXT, b"\x00", 0, 4)),
        (None, metadata(2, 1, S2_TDR_TEXT, b"mysql.test\x00", 0, 4)),
        *[(v.rba, rebuilt(v, tail=(1).to_bytes(2, LE))) for v in S2_ROWS],
    ])
    check_rows(path, S2_ROWS)
    pk = next(r.change for r in TrailReader(path, single_file=True).records()
              if r.change is not None and r.change.op is OpType.PK_UPDATE)
    assert pk is not None and pk.before == {0: b"10"} and pk.after == {0: b"9"}
    lines = logdump(path, "detail on", "pos 2258", "n")
    assert "Before Image          Len    12 (x0000000c)" in lines
    assert "KeyLen    10 (x0000000a)" in lines
    assert "After Image           Len    10 (x0000000a)" in lines


def test_postgresql_21_3_trail_with_a_tdr_reference(tmp_path: Path):
    """S3: OGG 21.3 for PostgreSQL 11 — a TDR, a TDR reference (test_d takes test_f's
    definition as TDR index 2), inserts, updates, deletes and truncates of both tables."""
    p1 = S3_HEADERS[0]
    ref_tail = b"test.test_d\x00"
    path = write_file(tmp_path / "pg000000000", "POSTGRESQL", [
        (None, metadata(1, 0, S1_DDR_TEXT.replace("MYSQL", "POSTGRESQL"), b"\x00", 0, 0)),
        (None, metadata(2, 1, S3_TDR_TEXT, b"test.test_f\x00",
                        julian("2022/12/06 12:26:59.569243", KST), 83894176)),
        (S3_ROWS[0].rba, rebuilt(S3_ROWS[0], tail=(1).to_bytes(2, LE))),
        (S3_REF.rba, rebuilt(S3_REF, tail=ref_tail)),
        *[(v.rba, rebuilt(v, tail=v.tdr_index.to_bytes(2, LE))) for v in S3_ROWS[1:]],
    ])
    check_rows(path, S3_ROWS)
    records = list(TrailReader(path, single_file=True).records())
    test_d = next(r.table_def for r in records if r.raw.table == "test.test_d")
    assert [(c.name, c.kind.value) for c in test_d.columns] == [
        ("int", "NUMBER"), ("varchar", "VARCHAR2"), ("time", "TIMESTAMP"), ("char", "CHAR")]
    insert = next(r.raw for r in records if r.raw.rba == 1840)
    # PostgreSQL's LOGCSN is the commit LSN: the integer trailgate's own capture uses
    assert insert.csn == 0x05002818 and insert.xid == "717" and insert.trans_ind == 0
    lines = logdump(path, "timeoffset GMT+09:00", "ghdr on", f"pos {S3_REF.rba}", "n")
    for printed in [*S3_REF.printed, S3_REF.op_line, S3_REF.name_line]:
        assert printed in lines
    lines = logdump(path, "pos 1840", "n")
    assert "TokenID x74 't' ORATAG           Info x01  Length    0" in lines
    assert " 3030 3030 3030 3030 2f30 3530 3032 3831 38        | 00000000/05002818" in lines
    assert p1.printed[6] == "DDR/TDR index:   (001, 001)     AuditPos   : 83894176"
    lines = logdump(path, "timeoffset GMT+09:00", "ghdr on", "sfmd tdr 1")
    assert p1.printed[6] in lines and "Table Name: test.test_f" in lines


def test_oracle_insert_with_its_authors_values(tmp_path: Path):
    """S5: an Oracle insert (19c-era Logdump, UTC+03:30): the GHDR fields as printed, the
    163-byte data area, and the row its author listed."""
    tz_when = julian("2021/01/10 15:57:58.375252", S5_ZONE)
    columns = ["ID", "STATUS", "CREATED", "TRACKING", "KIND", "FLAG", "A", "B", "C"]
    lines = [f"{n:<9} 64     40        0  0  0 1 0     40     40      0 0 0 0 0 1    0 0   0"
             f"    {1 if n == 'TRACKING' else 2}       -1      0 0 0" for n in columns]
    lines[2] = ("CREATED  192     29        0  9  0 1 0     29     29     29 0 6 0 0 1    0 0"
                "   0  180       -1      0 0 0")
    tdr = ("TDR version: 11\nDefinition for table SHAHKAR3.SUBSCRIPTION_REQUEST\nRecord "
           "Length: 0\nColumns: 9\n" + "\n".join(lines) + "\nEnd of definition\n")
    other = ("TDR version: 11\nDefinition for table SHAHKAR3.OTHER\nRecord Length: 0\n"
             "Columns: 1\nID   64     40        0  0  0 1 0     40     40      0 0 0 0 0 1    "
             "0 1   0    2       -1      0 0 0\nEnd of definition\n")
    head = pack_header(LE, partition=0x0C, before_after=0x41, rec_length=len(S5_D), io_type=5,
                       orig_node=0xFF, io_time=tz_when, audit_pos=730057636, audit_rba=3866,
                       trans_ind=2, continued=0, tail=(2).to_bytes(2, LE))
    path = write_file(tmp_path / "ex000000000", "ORACLE", [
        (None, metadata(1, 0, S1_DDR_TEXT.replace("MYSQL", "ORACLE"), b"\x00", 0, 0)),
        (None, metadata(2, 1, other, b"SHAHKAR3.OTHER\x00", 0, 0)),
        (None, metadata(2, 2, tdr, b"SHAHKAR3.SUBSCRIPTION_REQUEST\x00", 0, 0)),
        (3828, g_record(head, S5_D, None)),
    ])
    (record,) = [r for r in TrailReader(path, single_file=True).records()
                 if r.change and r.change.op is OpType.INSERT]
    assert record.raw.table == "SHAHKAR3.SUBSCRIPTION_REQUEST"
    assert record.change is not None
    assert [record.change.after[i] for i in range(9)] == S5_ROW  # type: ignore[index]
    out = logdump(path, f"timeoffset {S5_ZONE}", "ghdr on", "pos 3828", "n")
    for printed in [*S5_PRINTED, S5_OP_LINE,
                    "Name: SHAHKAR3.SUBSCRIPTION_REQUEST  (TDR Index: 2)"]:
        assert printed in out


def test_seed002_row_with_a_tdr_and_a_pnr_index(tmp_path: Path):
    """S12 (seed 002 H.3.2): Partition 0x8C, TDR/PNR index 1/2, the 18-byte data area."""
    tdr = ("TDR version: 11\nDefinition for table TKGGU1.T1\nRecord Length: 0\nColumns: 2\n"
           + "".join(f"C{i}   64     40        0  0  0 1 0     40     40      0 0 0 0 0 1    0"
                     f" {1 - i}   0    2       -1      0 0 0\n" for i in range(2))
           + "End of definition\n")
    head = pack_header(LE, partition=0x8C, before_after=0x41, rec_length=18, io_type=5,
                       orig_node=0xFF, io_time=0, audit_pos=13287580, audit_rba=15,
                       trans_ind=0, continued=0, tail=(1).to_bytes(2, LE) + (2).to_bytes(2, LE))
    path = write_file(tmp_path / "tr000000000", "ORACLE", [
        (None, metadata(1, 0, S1_DDR_TEXT.replace("MYSQL", "ORACLE"), b"\x00", 0, 0)),
        (None, metadata(2, 1, tdr, b"TKGGU1.T1\x00", 0, 0)),
        (3486, g_record(head, S12_D, None)),
    ])
    (record,) = [r for r in TrailReader(path, single_file=True).records()
                 if r.change and r.change.op is OpType.INSERT]
    assert record.raw.table == "TKGGU1.T1" and record.raw.partition == 0x8C
    assert (record.raw.audit_rba, record.raw.audit_pos, record.raw.trans_ind) == (15, 13287580, 0)
    assert record.change is not None and record.change.after == {0: b"1", 1: b"1"}
    assert "Name: TKGGU1.T1  (TDR/PNR Index: 1/2)" in logdump(path, "pos 3486", "n")


def test_logdump_reference_2005_record_with_its_table_name_in_the_header(tmp_path: Path):
    """S11 (Logdump reference 12.2, HEADERTOKEN DETAIL): the header of a little-endian
    record whose table name follows the 34 fixed bytes — the 12.1 layout; G/H/D/T lengths as
    printed, the T area its GGSTOKEN example (a ROWID token, length little-endian)."""
    record = g_record(S11_GHDR, b"\x00" * S11_LENGTHS["D"], S11_ROWID_TOKEN[0:0] + (
        S11_ROWID_TOKEN))
    assert len(record) == S11_LENGTHS["G"]
    view = parse_record(record, 0, len(record))
    assert (len(view.h), view.rec_length, view.io_type, view.partition) == (42, 60, 5, 4)
    assert (view.trans_ind, view.audit_rba, view.audit_pos, view.name) == (
        1, 16, 42932472, "HR.JOBS")
    assert view.t == S11_ROWID_TOKEN and len(S11_ROWID_TOKEN) == S11_LENGTHS["T"]


# -- file headers --------------------------------------------------------------------------

@pytest.mark.parametrize(("prefix", "zone", "expected"), [
    (F1, "GMT+05:30", {"CompatibilityLevel": "6", "CreationTime": "2018/10/05 19:36:58.451.814",
                       "URI": "uri:localhost:localdomain::u02:ggate:PUMP2",
                       "Filename": "./dirdat/ba000000001"}),
    (F2, "GMT", {"CompatibilityLevel": "7", "CreationTime": "2022/09/08 02:11:48.956.534",
                 "URI": "uri:DERATVDB00001::software:ogg:191:EXT_I_01"}),
    (F3, "GMT+08:00", {"CompatibilityLevel": "3", "CreationTime": "2016/04/28 20:10:14.246.832",
                       "URI": "uri:h-7b6g4gqx::data:oggtest", "Filename": "./dirdat/ra000000"}),
], ids=["12.3", "19.1", "11.2"])
def test_printed_file_headers_decode_to_what_logdump_printed(prefix, zone, expected):
    """F1 (Logdump 12.3), F2 (19.1), F3 (11.2): the TrailInfo tokens in the printed bytes."""
    from trailgate.trail.header import TOKEN_NAMES

    tz, _ = parse_time_offset(zone)
    tokens, _ = subrecords(prefix, 4, len(prefix))  # the bytes end inside the group
    got = {TOKEN_NAMES[0x30].get(t.type): token_value_text(0x30, t.type, t.flag,
                                                           prefix[t.start : t.end], tz)
           for t in tokens}
    for name, value in expected.items():
        assert got[name] == value
    assert prefix[8:16] == b"GG\r\nTL\n\r"


# -- Logdump's HEADERTOKEN DETAIL and FILEHEADER DETAIL against what was printed -------------

#: S1's HEADERTOKEN DETAIL output for its DDR record (RBA 6237), verbatim.
S1_DDR_HEADERTOKEN = [
    "TokenID x47 'G' Record Header    Info x01  Length  132",
    "TokenID x48 'H' GHDR             Info x00  Length   35",
    " 4500 0041 5100 aa01 6ccf ab5a e816 f302 0700 0000 | E..AQ...l..Z........",
    " 0000 0000 0100 0000 0352 0000 0001 00             | .........R.....",
    "TokenID x44 'D' Data             Info x00  Length   81",
    "TokenID x5a 'Z' Record Trailer   Info x01  Length  132",
]


def test_headertoken_detail_prints_what_s1s_logdump_printed(tmp_path: Path):
    """S1's DDR rebuilt from its printed header (its 81-byte binary D area is not public:
    zeros stand in) prints the same six HEADERTOKEN DETAIL lines; an insert's token lines
    give its printed G/H/D/T lengths and its printed header bytes."""
    ddr, insert = S1_HEADERS[0], S1_ROWS[0]
    path = write_file(tmp_path / "bb000000000", "MYSQL", [
        (ddr.rba, rebuilt(ddr)),
        (None, metadata(2, 1, S1_TDR_TEXT, b"test.ogg_test\x00", 0, 7)),
        (7000, rebuilt(insert, tail=(1).to_bytes(2, LE))),  # after the TDR's longer text
    ])
    lines = logdump(path, "headertoken detail", f"pos {ddr.rba}", "n")
    start = lines.index(S1_DDR_HEADERTOKEN[0])
    assert lines[start : start + 6] == S1_DDR_HEADERTOKEN
    lines = logdump(path, "headertoken detail", "pos 7000", "n")
    start = lines.index("TokenID x47 'G' Record Header    Info x01  Length  162")
    assert lines[start + 1] == "TokenID x48 'H' GHDR             Info x00  Length   36"
    assert lines[start + 2] == (" 450c 0041 1800 05ff 00a0 8d5a e816 f302 0700 0000 | "
                                "E..A.......Z........")
    assert lines[start + 4 : start + 7] == [
        "TokenID x44 'D' Data             Info x00  Length   24",
        "TokenID x54 'T' GGS Tokens       Info x00  Length   82",
        "TokenID x5a 'Z' Record Trailer   Info x01  Length  162"]


#: The hex lines F1 (Logdump 12.3) and F2 (Logdump 19.1) printed under FILEHEADER DETAIL,
#: verbatim, after the first (whose group length covers tokens the sources do not show).
F1_PRINTED = [
    " 0006 3200 0004 2000 0000 3300 0008 02f2 9daf 3d9e | ..2... ...3.......=.",
    " 3966 3400 002c 002a 7572 693a 6c6f 6361 6c68 6f73 | 9f4..,.*uri:localhos",
    " 743a 6c6f 6361 6c64 6f6d 6169 6e3a 3a75 3032 3a67 | t:localdomain::u02:g",
    " 6761 7465 3a50 554d 5032 3500 002f 3500 002b 0029 | gate:PUMP25../5..+.)",
    " 7572 693a 6c6f 6361 6c68 6f73 743a 6c6f 6361 6c64 | uri:localhost:locald",
    " 6f6d 6169 6e3a 3a75 3032 3a67 6761 7465 3a45 5854 | omain::u02:ggate:EXT",
    " 3236 0000 1600 142e 2f64 6972 6461 742f 6261 3030 | 26....../dirdat/ba00",
]
F2_PRINTED = [
    " 0007 3200 0004 2000 0000 3300 0008 02f3 0e54 6873 | ..2... ...3......Ths",
    " 0976 3400 002e 002c 7572 693a 4445 5241 5456 4442 | .v4....,uri:DERATVDB",
    " 3030 3030 313a 3a73 6f66 7477 6172 653a 6f67 673a | 00001::software:ogg:",
    " 3139 313a 4558 545f 495f 3031 3600 002d 002b 2f73 | 191:EXT_I_016..-.+/s",
    " 6f66 7477 6172 652f 6f67 672f 3139 312f 6469 7264 | oftware/ogg/191/dird",
    " 6174 2f30 312f 6f75 742f 6569 3030 3030 3030 3534 | at/01/out/ei00000054",
]


@pytest.mark.parametrize(("header", "printed", "zone", "decoded"), [
    (FileHeader(seqno=1, filename="./dirdat/ba000000001", compatibility=6,
                uri="uri:localhost:localdomain::u02:ggate:PUMP2",
                uri_history=["uri:localhost:localdomain::u02:ggate:EXT2"],
                creation_time=0x02F29DAF3D9E3966), F1_PRINTED, "GMT+05:30",
     "  CreationTime        : 2018/10/05 19:36:58.451.814"),
    (FileHeader(seqno=547, filename="/software/ogg/191/dirdat/01/out/ei000000547",
                compatibility=7, uri="uri:DERATVDB00001::software:ogg:191:EXT_I_01",
                creation_time=0x02F30E5468730976), F2_PRINTED, "GMT",
     "  CreationTime        : 2022/09/08 02:11:48.956.534"),
], ids=["F1-12.3", "F2-19.1"])
def test_fileheader_detail_prints_what_logdump_printed(tmp_path: Path, header, printed, zone,
                                                       decoded):
    """A file header with F1's or F2's values: trailgate's FILEHEADER DETAIL prints the hex
    lines Oracle's Logdump printed for it, and the same CreationTime in the printed zone."""
    path = tmp_path / "ba000000001"
    path.write_bytes(header.encode())
    lines = logdump(path, "fileheader detail", f"timeoffset {zone}", "n")
    start = lines.index(printed[0])
    assert lines[start : start + len(printed)] == printed
    assert lines[start - 2].startswith("GroupID x30 '0' TrailInfo        Info x00  Length")
    assert decoded in lines
    assert f"  CompatibilityLevel  : {header.compatibility}" in lines
