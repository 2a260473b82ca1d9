"""The seeds' own examples as expected outputs: column encodings (seed 001), record lengths
and D/T bytes of seed 003's worked examples, the H header and RBA encoding (seed 001)."""

from __future__ import annotations

import struct

import pytest

from trailgate.model import ColumnKind, Transaction, TransInd, unix_micros_from_julian
from trailgate.sample import STUDENT, seed_transactions
from trailgate.trail.header import FileHeader, decode_file_header
from trailgate.trail.records import decode_change, decode_record, encode_change_record
from trailgate.trail.values import fixed_indexes, frame_value


def hexbytes(text: str) -> bytes:
    return bytes.fromhex(text)


# -- seed 001: column encodings ---------------------------------------------------------

@pytest.mark.parametrize(
    ("kind", "value", "width", "expected"),
    [
        (ColumnKind.NUMBER, b"2013", None, "00 00 00 04 32 30 31 33"),
        (ColumnKind.NUMBER, None, None, "FF FF 00 00"),
        (ColumnKind.VARCHAR2, b"GoldenGate", 20, "00 00 00 0A 47 6F 6C 64 65 6E 47 61 74 65"),
        (ColumnKind.VARCHAR2, None, 20, "FF FF 00 00"),
        (ColumnKind.CHAR, b"GoldenGate", 20,
         "00 00 47 6F 6C 64 65 6E 47 61 74 65 20 20 20 20 20 20 20 20 20 20"),
        (ColumnKind.CHAR, None, 20, "FF FF" + " 00" * 20),
        (ColumnKind.DATE, b"2013-03-14:22:39:56", None,
         "00 00 32 30 31 33 2D 30 33 2D 31 34 3A 32 32 3A 33 39 3A 35 36"),
        (ColumnKind.DATE, None, None,
         "FF FF 31 39 30 30 2D 30 31 2D 30 31 3A 30 30 3A 30 30 3A 30 30"),
        (ColumnKind.TIMESTAMP, b"2013-03-14:22:39:56.236526000", None,
         "00 00 32 30 31 33 2D 30 33 2D 31 34 3A 32 32 3A 33 39 3A 35 36 2E"
         "32 33 36 35 32 36 30 30 30"),
        (ColumnKind.TIMESTAMP, None, None,
         "FF FF 31 39 30 30 2D 30 31 2D 30 31 3A 30 30 3A 30 30 3A 30 30 2E"
         "30 30 30 30 30 30 30 30 30"),
        (ColumnKind.RAW, bytes.fromhex("0000000060000000"), None,
         "00 00 00 08 00 00 00 00 60 00 00 00"),
        (ColumnKind.RAW, None, None, "FF FF 00 00"),
        (ColumnKind.ROWID, b"AAASiCAAEAAAAMVAAD", None,
         "00 00 00 12 41 41 41 53 69 43 41 41 45 41 41 41 41 4D 56 41 41 44"),
        (ColumnKind.ROWID, None, None, "FF FF 00 00"),
        (ColumnKind.LONG, None, None, "FF FF 00 00"),
    ],
)
def test_seed001_column_encodings(kind, value, width, expected):
    assert frame_value(kind, value, width) == hexbytes(expected)


def test_seed001_long_value_in_one_record():
    text = b"x" * 513
    assert frame_value(ColumnKind.LONG, text)[:4] == hexbytes("00 00 02 01")


# -- seed 003: worked examples ----------------------------------------------------------

def _records(txn: Transaction) -> list[bytes]:
    out = []
    for i, change in enumerate(txn.changes):
        first, last = i == 0, i == len(txn.changes) - 1
        ind = TransInd.ONLY if first and last else TransInd.FIRST if first else (
            TransInd.LAST if last else TransInd.MIDDLE)
        out.append(encode_change_record(change, STUDENT, ind, txn.csn if first else None,
                                        txn.xid if first else None))
    return out


def _subrecords(record: bytes) -> dict[str, tuple[int, bytes]]:
    """Top-level sub-records of a G record: type letter -> (length, content)."""
    out = {}
    pos, end = 4, len(record) - 4
    while pos < end:
        type_, _flag, length = struct.unpack_from(">BBH", record, pos)
        out[chr(type_)] = (length, record[pos + 4 : pos + 4 + length])
        pos += 4 + length
    return out


SEED = seed_transactions()


def test_insert_lengths_and_bytes():
    (record,) = _records(SEED[0])
    assert len(record) == 224
    assert record[:4] == hexbytes("47 01 00 E0") and record[-4:] == hexbytes("5A 01 00 E0")
    subs = _subrecords(record)
    assert subs["H"][0] == 47 and subs["D"][0] == 110 and subs["T"][0] == 47
    assert subs["D"][1] == hexbytes(
        "00 00 00 08 00 00 00 04 31 30 31 31"
        "00 01 00 0A 00 00 00 06 4A 6F 72 64 61 6E"
        "00 02 00 0C 00 00 00 08 53 68 65 72 77 6F 6F 64"
        "00 03 00 05 00 00 00 01 4D"
        "00 04 00 0E 00 00 00 0A 4D 61 6E 63 68 65 73 74 65 72"
        "00 05 00 0D 00 00 00 09 43 68 65 6D 69 73 74 72 79"
        "00 06 00 08 00 00 00 04 32 30 31 33"
        "00 07 00 08 00 00 00 04 39 30 30 30"
    )
    assert subs["T"][1] == (
        hexbytes("52 00 00 14") + b"AAASrPAAEAAAAQ2AAK\x00\x01"
        + hexbytes("4C 00 00 07") + b"1621215" + hexbytes("36 00 00 08") + b"4.11.854"
    )
    h = subs["H"][1]
    assert h[34:] == b"US03.STUDENT\x00"
    assert h[6] == 0x05  # seed 001's flag byte: insert


def test_update_is_compressed_key_plus_changed_column():
    (record,) = _records(SEED[1])
    assert len(record) == 138
    subs = _subrecords(record)
    assert subs["D"] == (24, hexbytes("00 00 00 08 00 00 00 04 31 30 31 30"
                                      "00 07 00 08 00 00 00 04 36 30 30 30"))
    assert subs["H"][1][6] == 0x0F
    assert subs["T"][1].endswith(b"1622900" + hexbytes("36 00 00 08") + b"3.6.1012")


def test_delete_carries_the_key():
    (record,) = _records(SEED[2])
    assert len(record) == 126
    subs = _subrecords(record)
    assert subs["D"] == (12, hexbytes("00 00 00 08 00 00 00 04 31 30 30 34"))
    assert subs["H"][1][6] == 0x03 and subs["H"][1][3] == ord("B")
    assert b"AAASrPAAEAAAAQ2AAD\x00\x01" in subs["T"][1]


@pytest.mark.parametrize(
    ("index", "lengths", "t_lengths"),
    [
        (3, [139, 115, 115], [48, 24, 24]),  # multi-row update
        (4, [127, 103, 103], [48, 24, 24]),  # multi-row delete
        (5, [218, 192, 202], [47, 24, 24]),  # array insert
        (6, [218, 192, 202], [47, 24, 24]),  # direct load insert
    ],
)
def test_multi_row_examples(index, lengths, t_lengths):
    records = _records(SEED[index])
    assert [len(r) for r in records] == lengths
    assert [_subrecords(r)["T"][0] for r in records] == t_lengths
    # CSN and XID in the first record's T area only: the others hold just the ROWID
    first_t = _subrecords(records[0])["T"][1]
    assert first_t[24:28] == b"L\x00\x00\x07"
    assert all(_subrecords(r)["T"][1][:4] == b"R\x00\x00\x14" for r in records[1:])
    assert sum(lengths) == {3: 369, 4: 333, 5: 612, 6: 612}[index]


def test_array_insert_second_row_bytes():
    records = _records(SEED[5])
    assert _subrecords(records[1])["D"] == (101, hexbytes(
        "00 00 00 08 00 00 00 04 31 30 30 38 00 01 00 08 00 00 00 04 4B 61 74 79"
        "00 02 00 0A 00 00 00 06 50 69 65 72 63 65 00 03 00 05 00 00 00 01 46"
        "00 04 00 0A 00 00 00 06 4F 78 66 6F 72 64"
        "00 05 00 0C 00 00 00 08 54 68 65 6F 6C 6F 67 79"
        "00 06 00 08 00 00 00 04 32 30 31 33 00 07 00 08 00 00 00 04 39 30 30 30"))
    assert _subrecords(records[2])["T"][1] == hexbytes("52 00 00 14") + (
        b"AAASrPAAEAAAAQ2AAI\x00\x01")


def test_records_decode_back_to_the_changes():
    for txn in SEED:
        for change, record in zip(txn.changes, _records(txn), strict=True):
            raw = decode_record(record, 0, len(record))
            assert raw.table == "US03.STUDENT" and raw.rowid == change.rowid
            decoded = decode_change(raw, fixed_indexes([c.kind for c in STUDENT.columns]))
            assert decoded == change


# -- seed 001: the H record and RBA encoding ---------------------------------------------

SEED001_H = hexbytes(
    "45 04 00 41 00 15 73 FF 02 F1 FD 87 76 B3 53 40"
    "00 00 00 00 00 AF 72 3C 00 00 00 00 06 52 00 00"
    "00 01 55 53 30 31 2E 54 38 00"
)


def test_seed001_h_record_decodes_as_documented():
    data = b"\x00" * 0x15
    record = (b"G\x01" + (8 + 4 + len(SEED001_H) + 4 + len(data)).to_bytes(2, "big")
              + b"H\x00" + len(SEED001_H).to_bytes(2, "big") + SEED001_H
              + b"D\x00" + len(data).to_bytes(2, "big") + data)
    record += b"Z\x01" + record[2:4]
    raw = decode_record(record, 0, len(record))
    assert (raw.hdr_ind, raw.partition, raw.before_after) == (0x45, 4, ord("A"))
    assert raw.rec_length == 21 and raw.io_type == 0x73 and raw.orig_node == 0xFF
    assert raw.table == "US01.T8" and raw.audit_rba == 6
    assert (raw.audit_pos >> 9, raw.audit_pos & 0x1FF) == (0x57B9, 0x3C)
    assert raw.format_type == ord("R") and raw.rec_count == 1
    # the seed's timestamp is a whole second in Julian microseconds
    assert unix_micros_from_julian(raw.io_time) % 1_000_000 == 0


def test_redo_rba_encoding_of_the_insert():
    (record,) = _records(SEED[0])
    raw = decode_record(record, 0, len(record))
    assert raw.audit_rba == 0x44 and raw.audit_pos == (5 << 9) | 0x10


# -- seed 001: file header ---------------------------------------------------------------

def test_file_header_layout_matches_seed001():
    header = FileHeader(seqno=16, filename="/home/oracle/goldengate/dirdat/ex000016",
                        uri="uri:vm4:juliandyke:com::home:oracle:goldengate",
                        creation_time=0x02F1FD8775A41724, first_csn=1145074,
                        first_io_time=0x02F1FD8776B35340)
    data = header.encode()
    assert data[:2] == b"F\x00"
    # extract details: the seed's 450-byte group for these strings
    assert data[4:8] == hexbytes("30 00 01 C2")
    assert data[8:20] == hexbytes("30 00 00 08 47 47 0D 0A 54 4C 0A 0D")
    assert data[20:26] == hexbytes("31 00 00 02 00 03")
    assert data[26:34] == hexbytes("32 00 00 04 20 00 00 00")
    assert data[34:46] == hexbytes("33 00 00 08 02 F1 FD 87 75 A4 17 24")
    assert hexbytes("38 00 00 04 00 00 00 10") in data
    assert hexbytes("39 FF 00 08") + b"\x00" * 8 in data
    assert hexbytes("3A 00 00 81 07") + b"1145074" + b"\x00" * 121 in data
    assert hexbytes("3B FF 00 81") + b"\x00" * 129 in data
    decoded = decode_file_header(data)
    assert decoded.seqno == 16 and decoded.first_csn == 1145074 and decoded.last_csn is None
    assert decoded.uri == header.uri and decoded.filename == header.filename


def test_julian_microseconds_as_a_datetime_are_exact():
    from datetime import UTC, datetime

    from trailgate.model import datetime_from_julian, julian_from_unix_micros

    assert datetime_from_julian(julian_from_unix_micros(0)) == datetime(1970, 1, 1, tzinfo=UTC)
    # a float of seconds cannot hold this microsecond; integer arithmetic must
    late = julian_from_unix_micros(253_402_300_799_999_999)
    assert datetime_from_julian(late) == datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
