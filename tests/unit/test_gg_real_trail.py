"""A trail file GoldenGate 12.2 wrote itself (tests/fixtures/goldengate/README.md: Oracle's
GoldenGate for Big Data sample trail, source S19 of docs/trail-format.md): every record's
frame, header fields, tables, values and tokens as its bytes give them, through trailgate's
record parser, reader and Logdump."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from gg_areas import tdr_records
from logdump_run import logdump_text

from trailgate.interchange import export_records
from trailgate.model import OpType, julian_from_unix_micros
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.header import decode_file_header
from trailgate.trail.release import parse_release
from trailgate.trail.release12 import FileDecoder, parse_record
from trailgate.trail.release12.definitions import (
    DatabaseDef,
    decode_ddr,
    decode_tdr,
    encode_ddr_binary,
    encode_tdr_binary,
    record_length,
)
from trailgate.trail.release12.metabin import build_tdr, parse_ddr, parse_tdr
from trailgate.trail.release12.tokens import walk

REAL = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"

#: (RBA, IOType, OrigNode, TransInd, TDR index, BeforeAfter) of each record after the header.
FRAMES = [
    (1414, 170, 1, 3, 0, "A"), (1548, 170, 2, 3, 1, "A"),
    (1956, 5, 0xFF, 0, 1, "A"), (2126, 5, 0xFF, 1, 1, "A"),
    (2264, 170, 2, 1, 2, "A"),  # TCUSTORD's TDR, in the middle of the transaction
    (2928, 5, 0xFF, 1, 2, "A"), (3106, 5, 0xFF, 2, 2, "A"),
    (3286, 5, 0xFF, 0, 1, "A"), (3462, 5, 0xFF, 1, 1, "A"), (3600, 5, 0xFF, 2, 1, "A"),
    (3733, 5, 0xFF, 0, 2, "A"), (3940, 5, 0xFF, 1, 2, "A"), (4120, 5, 0xFF, 2, 2, "A"),
    (4300, 134, 0xFF, 0, 2, "A"), (4586, 134, 0xFF, 1, 2, "A"), (4845, 134, 0xFF, 1, 2, "A"),
    (5100, 134, 0xFF, 2, 1, "A"),
    (5272, 3, 0xFF, 0, 2, "B"), (5480, 3, 0xFF, 2, 2, "B"),
]


def julian(text: str) -> int:
    moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return julian_from_unix_micros(int(moment.timestamp()) * 1_000_000 + moment.microsecond)


def logdump(*commands: str) -> str:
    return logdump_text(REAL, *commands)


def test_every_record_of_the_real_file_frames_as_its_bytes_say():
    """19 records after a 1,414-byte file header, big-endian throughout, each header field
    where docs/trail-format.md puts it; metadata records carry their DDR/TDR index in bytes
    24-27, rows their TDR index in the 2-byte tail, TDRs their table's name."""
    buf = REAL.read_bytes()
    header = decode_file_header(buf)
    assert header.compatibility == 5 and header.length == 1414
    assert header.database.vendor == 7 and header.database.name == "ORA1120I"
    assert header.producer.version_string.startswith("Version 12.2.0.1.0 OGGCORE_12.2.0.1.0")
    pos, seen = header.length, []
    while pos < len(buf):
        rec = parse_record(buf, pos, len(buf), "big")
        assert rec.order == rec.data_order == "big"
        assert rec.hdr_ind == 0x45 and rec.format_type == 0x52 and rec.rec_count == 1
        assert rec.rec_length == len(rec.d or b"")
        index = rec.tdr_index
        seen.append((pos, rec.io_type, rec.orig_node, rec.trans_ind, index,
                     chr(rec.before_after)))
        if rec.io_type == 170:
            assert rec.partition == 0 and rec.t is None
            assert rec.ddr_index == 1
            assert rec.name == {0: None, 1: "QASOURCE.TCUSTMER", 2: "QASOURCE.TCUSTORD"}[index]
        else:
            assert rec.partition == 0x0C and rec.audit_rba == 108466  # the redo sequence
            assert rec.name is None and len(rec.tail) == 2
        pos += rec.length
    assert pos == len(buf) == 5660
    assert seen == FRAMES


def test_real_file_times_and_tokens():
    """IO times read with GoldenGate's epoch (docs/trail-format.md "Times"): the rows of the
    first transaction at 2015-11-05 18:45:36 UTC, the metadata two seconds later, the file
    created at 18:45:18.173484; every row has ORAROWID, each transaction's first row LOGCSN,
    TRANID (and ORATAG, empty, in the first)."""
    buf = REAL.read_bytes()
    header = decode_file_header(buf)
    assert header.creation_time == julian("2015-11-05 18:45:18.173484")
    rec = parse_record(buf, 1956, len(buf))
    assert rec.io_time == julian("2015-11-05 18:45:36.000000")
    assert parse_record(buf, 1414, len(buf)).io_time == julian("2015-11-05 18:45:38.198361")
    assert parse_record(buf, 3286, len(buf)).io_time == julian("2015-11-05 18:45:39.000000")
    tokens, problem = walk(rec.t or b"", "big")
    assert problem is None
    assert [(chr(t), i, v) for t, i, v in tokens] == [
        ("R", 0, b"AAKifQAAKAAAFDHAAA\x00\x01"), ("t", 1, b""), ("L", 0, b"7824137832"),
        ("6", 0, b"2.3.228025")]
    firsts = {rba: walk(parse_record(buf, rba, len(buf)).t or b"", "big")[0]
              for rba, io, *_ in FRAMES if io != 170}
    csns = {rba: v for rba, toks in firsts.items() for t, _i, v in toks if t == 0x4C}
    assert csns == {1956: b"7824137832", 3286: b"7824137914", 3733: b"7824137917",
                    4300: b"7824137919", 5272: b"7824137921"}
    assert all(toks[0][0] == 0x52 for toks in firsts.values())


def test_logdump_counts_the_real_file():
    out = logdump("count")
    assert "LogTrail " in out and "has 19 records" in out
    for line in ("Insert                            10", "GGSUnifiedUpdate                   4",
                 "Delete                             2", "Metadata                           3"):
        assert line in out


def metadata_area(rba: int) -> bytes:
    buf = REAL.read_bytes()
    return parse_record(buf, rba, len(buf)).d or b""


def test_the_binary_ddr_gives_its_fields():
    """The DDR's tokens: version 1, database name ORA1120I and time zone GMT (the file
    header's DatabaseInfo has both too), the case-sensitivity bytes; the rest by token path.
    Cross-check: the same layout gives S1's 21.3 MySQL DDR (empty name, GMT+09:00) exactly
    the 81 bytes its Logdump printed."""
    area = metadata_area(1414)
    ddr = parse_ddr(area)
    assert (ddr.version, ddr.name, ddr.timezone) == (1, "ORA1120I", "GMT")
    assert ddr.case_sensitivity == bytes.fromhex("14141414141414141414141411141414")
    assert ddr.unknown == {"2.1": 0, "2.2": 1, "2.3": 0}
    fixed = len(area) - len("ORA1120I") - len("GMT")
    assert fixed + len("") + len("GMT+09:00") == 81
    shown = decode_ddr(area, "ORACLE").lines()
    assert shown[:5] == ["Database Name: ORA1120I", "DDR Version: 1", "Database type: ORACLE",
                         "Case sensitivity: 14 14 14 14 14 14 14 14 14 14 14 14 11 14 14 14",
                         "TimeZone: GMT"]


#: (name, GG type, external length, fetch offset, scale, internal/binary length, table
#: length, least significant DT, key, sub type, Oracle type) of each column, as the DDL of
#: GoldenGate's demo tables makes them and DEFGEN would print them.
TCUSTMER = [("CUST_CODE", 64, 4, 0, 0, 4, 0, 0, 1, 0, 1),
            ("NAME", 64, 30, 10, 0, 30, 0, 0, 0, 0, 1),
            ("CITY", 64, 20, 46, 0, 20, 0, 0, 0, 0, 1),
            ("STATE", 0, 2, 72, 0, 2, 0, 0, 0, 0, 96)]
TCUSTORD = [("CUST_CODE", 64, 4, 0, 0, 4, 0, 0, 1, 0, 1),
            ("ORDER_DATE", 192, 19, 10, 0, 19, 19, 5, 1, 0, 12),
            ("PRODUCT_CODE", 64, 8, 32, 0, 8, 0, 0, 1, 0, 1),
            ("ORDER_ID", 64, 50, 46, 0, 50, 50, 0, 1, 2, 2),
            ("PRODUCT_PRICE", 134, 10, 102, 2, 8, 8, 0, 0, 3, 2),
            ("PRODUCT_AMOUNT", 134, 8, 114, 0, 8, 8, 0, 0, 3, 2),
            ("TRANSACTION_ID", 64, 50, 126, 0, 50, 50, 0, 0, 2, 2)]


def test_both_binary_tdrs_give_every_column_field():
    """Every named field of both TDRs, against the two tables' DDL; the fields whose meaning
    is unknown hold the same value in all 11 columns."""
    for rba, expected, keys, length in ((1548, TCUSTMER, 1, 78), (2264, TCUSTORD, 4, 182)):
        tdr = parse_tdr(metadata_area(rba))
        assert tdr.version == 1 and tdr.key_count == keys
        assert tdr.unknown == {"2.2": 0, "2.3": 0, "2.4": 0}
        got = [(c.name, c.data_type, c.external_length, c.offset, c.scale, c.length_a,
                c.table_length, c.least_dt, int(c.key), c.sub_type, c.native_type)
               for c in tdr.columns]
        assert got == expected
        for c in tdr.columns:
            assert c.length_a == c.length_c and c.charset == -1
            assert (c.unknown_u32, c.unknown_u16_2, c.unknown_u16_5) == (0, 0, 0)
            assert c.flags & ~0x01 == 0x22 and c.extra == bytes(14)
        assert sum(c.key for c in tdr.columns) == keys
        assert record_length(tdr) == length


def test_the_reader_gives_named_typed_changes_of_the_real_file():
    """TrailReader: each table's definition from its binary TDR, every row's values (binary
    NUMBERs as their digits with the TDR's scale), the unified updates as the compressed
    updates they are (key unchanged in all four), CSN and XID per transaction."""
    records = list(TrailReader(REAL, single_file=True).records())
    changes = [(r.raw.rba, r.change.op, r.raw.table, r.change.after, r.change.before)
               for r in records if r.change is not None]
    tcustmer = next(r.table_def for r in records if r.raw.table == "QASOURCE.TCUSTMER"
                    and r.change is not None)
    tcustord = next(r.table_def for r in records if r.raw.table == "QASOURCE.TCUSTORD"
                    and r.change is not None)
    assert tcustmer is not None and tcustord is not None
    assert [(c.name, c.kind.value, c.length, c.nullable) for c in tcustmer.columns] == [
        ("CUST_CODE", "VARCHAR2", 4, False), ("NAME", "VARCHAR2", 30, True),
        ("CITY", "VARCHAR2", 20, True), ("STATE", "CHAR", 2, True)]
    assert tcustmer.key == ["CUST_CODE"] and tcustmer.key_kind == "PRIMARY"
    assert [(c.name, c.kind.value, c.scale) for c in tcustord.columns] == [
        ("CUST_CODE", "VARCHAR2", None), ("ORDER_DATE", "DATE", None),
        ("PRODUCT_CODE", "VARCHAR2", None), ("ORDER_ID", "NUMBER", None),
        ("PRODUCT_PRICE", "NUMBER", 2), ("PRODUCT_AMOUNT", "NUMBER", None),
        ("TRANSACTION_ID", "NUMBER", None)]
    assert tcustord.key == ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"]
    C, D = "QASOURCE.TCUSTMER", "QASOURCE.TCUSTORD"

    def row(*v: str) -> dict[int, bytes]:
        return {i: x.encode() for i, x in enumerate(v) if x is not None}

    assert changes == [
        (1956, OpType.INSERT, C, row("WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"), None),
        (2126, OpType.INSERT, C, row("JANE", "ROCKY FLYER INC.", "DENVER", "CO"), None),
        (2928, OpType.INSERT, D, row("WILL", "1994-09-30:15:33:00", "CAR", "144", "17520.00",
                                     "3", "100"), None),
        (3106, OpType.INSERT, D, row("JANE", "1995-11-11:13:52:00", "PLANE", "256",
                                     "133300.00", "1", "100"), None),
        (3286, OpType.INSERT, C, row("DAVE", "DAVE'S PLANES INC.", "TALLAHASSEE", "FL"), None),
        (3462, OpType.INSERT, C, row("BILL", "BILL'S USED CARS", "DENVER", "CO"), None),
        (3600, OpType.INSERT, C, row("ANN", "ANN'S BOATS", "SEATTLE", "WA"), None),
        (3733, OpType.INSERT, D, row("BILL", "1995-12-31:15:00:00", "CAR", "765", "15000.00",
                                     "3", "100"), None),
        (3940, OpType.INSERT, D, row("BILL", "1996-01-01:00:00:00", "TRUCK", "333",
                                     "26000.00", "15", "100"), None),
        (4120, OpType.INSERT, D, row("DAVE", "1993-11-03:07:51:35", "PLANE", "600",
                                     "135000.00", "2", "200"), None),
        (4300, OpType.FIELD_COMP, D, row("BILL", "1995-12-31:15:00:00", "CAR", "765",
                                         "14000.00"), None),
        (4586, OpType.FIELD_COMP, D, row("BILL", "1996-01-01:00:00:00", "TRUCK", "333",
                                         "25000.00"), None),
        (4845, OpType.FIELD_COMP, D, row("WILL", "1994-09-30:15:33:00", "CAR", "144",
                                         "16520.00"), None),
        (5100, OpType.FIELD_COMP, C, {0: b"ANN", 2: b"NEW YORK", 3: b"NY"}, None),
        (5272, OpType.DELETE, D, None, row("DAVE", "1993-11-03:07:51:35", "PLANE", "600",
                                           "135000.00", "2", "200")),
        (5480, OpType.DELETE, D, None, row("JANE", "1995-11-11:13:52:00", "PLANE", "256",
                                           "133300.00", "1", "100")),
    ]
    firsts = [(r.raw.rba, r.raw.csn, r.raw.xid) for r in records if r.raw.csn is not None]
    assert firsts == [(1956, 7824137832, "2.3.228025"), (3286, 7824137914, "11.33.1268278"),
                      (3733, 7824137917, "7.33.350848"), (4300, 7824137919, "11.12.1268224"),
                      (5272, 7824137921, "9.9.479055")]
    exported = next(o for o in export_records(REAL, single_file=True)
                    if o["record"] == "change" and o["table"] == D)
    assert [(c["name"], c["type"], c["value"]) for c in exported["columns"]][3:5] == [
        ("ORDER_ID", "NUMBER", "144"), ("PRODUCT_PRICE", "NUMBER", "17520.00")]
    assert exported["timestamp"] == "2015-11-05T18:45:36.000000+00:00"


def test_unified_updates_give_both_images():
    """All four unified updates: two zero bytes, the before image's length, the full before
    image, then the after image (key columns and the changed ones)."""
    buf = REAL.read_bytes()
    decoder = FileDecoder(decode_file_header(buf))
    pos, images = decoder_start(buf), {}
    while pos < len(buf):
        rec = parse_record(buf, pos, len(buf))
        decoder.normalise(rec)
        if rec.io_type == 134:
            images[pos] = decoder.unified_images(rec)
        pos += rec.length
    before, after = images[5100]
    assert before == bytes.fromhex("0000 0007 0000 0003") + b"ANN" + bytes.fromhex(
        "0001 000f 0000 000b") + b"ANN'S BOATS" + bytes.fromhex("0002 000b 0000 0007") + \
        b"SEATTLE" + bytes.fromhex("0003 0004 0000") + b"WA"
    assert after == bytes.fromhex("0000 0007 0000 0003") + b"ANN" + bytes.fromhex(
        "0002 000c 0000 0008") + b"NEW YORK" + bytes.fromhex("0003 0004 0000") + b"NY"
    prices = {rba: (b[b.index(b"\x00\x04\x00") :], a[a.index(b"\x00\x04\x00") :])
              for rba, (b, a) in images.items() if rba != 5100}
    assert {rba: (p[0][8:16], p[1][8:]) for rba, p in prices.items()} == {
        4300: (b"15000.00", b"14000.00"), 4586: (b"26000.00", b"25000.00"),
        4845: (b"17520.00", b"16520.00")}


def decoder_start(buf: bytes) -> int:
    return decode_file_header(buf).length


def test_logdump_prints_the_real_metadata_and_unified_updates():
    tdr = logdump("sfmd tdr 2").splitlines()
    assert "Table Name: QASOURCE.TCUSTORD" in tdr
    assert "TDR version: 1" in tdr and "Record Length: 182" in tdr and "Columns: 7" in tdr
    assert any(line.split() == ["PRODUCT_PRICE", "134", "10", "102", "2", "0", "1", "0", "8",
                                "8", "8", "0", "0", "0", "0", "1", "0", "0", "3", "2", "-1",
                                "0", "0", "0"] for line in tdr)
    assert "TDR Index    2: QASOURCE.TCUSTORD (7 columns)" in logdump("show tdr")
    assert "TimeZone: GMT" in logdump("show ddr")
    shown = logdump("detail data", "pos 5100", "n")
    for line in ("GGSUnifiedUpdate     Len    92 RBA 5100", "Before Image          Len    53 "
                 "(x00000035)", "  NAME = ANN'S BOATS", "After Image           Len    35 "
                 "(x00000023)", "  CITY = NEW YORK", "  STATE = NY"):
        assert line in shown
    assert "PRODUCT_PRICE = 14000.00" in logdump("detail data", "pos 4300", "n")
    assert "Traceback" not in logdump("ghdr on", "detail data", *["n"] * 20)


def test_trailgate_writes_the_real_tdr_and_ddr_byte_for_byte():
    """FORMAT RELEASE 12.2+ writes DDRs and TDRs in this layout: TCUSTMER's definition as
    read from the real TDR gives back the real TDR's bytes, the DDR's fields the real DDR's;
    TCUSTORD's columns match but for the two NUMBER(p,s) columns GoldenGate sends as binary
    numbers (trailgate sends numbers as text, type 64)."""
    decoder = FileDecoder(decode_file_header(REAL.read_bytes()))
    for rba in (1414, 1548, 2264):
        decoder.normalise(parse_record(REAL.read_bytes(), rba, len(REAL.read_bytes())))
    tables = decoder.definitions()
    assert encode_tdr_binary(tables["QASOURCE.TCUSTMER"], exact=False) == metadata_area(1548)
    ours = parse_tdr(encode_tdr_binary(tables["QASOURCE.TCUSTORD"], exact=False)).columns
    real = parse_tdr(metadata_area(2264)).columns
    assert [c for i, c in enumerate(ours) if i < 4] == real[:4]
    assert ours[6].name == "TRANSACTION_ID" and ours[4].data_type == 64
    assert encode_ddr_binary(DatabaseDef(name="ORA1120I")) == metadata_area(1414)


def test_a_12_2_trail_trailgate_writes_reads_back_exactly(tmp_path: Path):
    """Round trip: the demo tables' changes written with FORMAT RELEASE 12.2 read back to the
    same changes and the exact TableDefs (trailgate's token in its TDRs); without that token
    its TDRs still give the columns' names, kinds and keys, as GoldenGate's do."""
    records = list(TrailReader(REAL, single_file=True).records())
    tables = {r.raw.table: r.table_def for r in records if r.table_def is not None}
    txns = [rt.transaction for rt in TrailReader(REAL).transactions()]
    with TrailWriter(tmp_path / "tw", format=parse_release("12.2"), fsync=False) as w:
        for txn in txns:
            w.write_transaction(txn, tables)
    back = [rt.transaction for rt in TrailReader(tmp_path / "tw").transactions()]
    assert [(t.xid, t.csn, list(t.changes)) for t in back] == [
        (t.xid, t.csn, list(t.changes)) for t in txns]
    got = {r.raw.table: r.table_def for r in TrailReader(tmp_path / "tw").records()
           if r.table_def is not None}
    assert got == tables
    areas = tdr_records(tmp_path / "tw000000000")
    assert len(areas) == 2
    for name, tdr_area in areas:
        tdr = parse_tdr(tdr_area)
        assert tdr.trailgate is not None
        bare = decode_tdr(build_tdr(dataclasses.replace(tdr, trailgate=None)), name)
        table = tables[name]
        assert bare.definition is not None
        assert [(c.name, c.kind) for c in bare.definition.columns] == [
            (c.name, c.kind) for c in table.columns]
        assert bare.definition.key == table.key


def test_fileheader_detail_names_the_database_time_zone():
    """DatabaseInfo token 0x3D of a 12.2 header is the database's time zone: the string the
    DDR's time zone token holds too."""
    out = logdump("fileheader detail", "n")
    assert "  TimeZone            : GMT" in out
    assert "  Name                : ETEST" in out  # the Extract (ProducerInfo)


def test_a_negative_scale_is_written_and_read_back(tmp_path: Path):
    """A NUMBER with a negative scale (Oracle; PostgreSQL 15+) does not fit the binary TDR's
    unsigned scale field: 0 goes there, and trailgate's own token keeps the exact scale."""
    decoder = FileDecoder(decode_file_header(REAL.read_bytes()))
    for rba in (1414, 1548, 2264):
        decoder.normalise(parse_record(REAL.read_bytes(), rba, len(REAL.read_bytes())))
    table = decoder.definitions()["QASOURCE.TCUSTORD"]
    columns = list(table.columns)
    columns[4] = dataclasses.replace(columns[4], precision=8, scale=-2)
    odd = dataclasses.replace(table, columns=columns)
    area = encode_tdr_binary(odd)
    assert parse_tdr(area).columns[4].scale == 0
    assert decode_tdr(area, odd.qualified_name).definition == odd
