"""Seed 000's supplemental data blocks decode to the values the seed states.

The blocks are seed 000's hex, in the layout docs/oracle-dumps.md defines: its explanatory
"Bytes 00-01: …" lines and "col n: … # NAME = value" annotations are prose, not data, and are
left out.  One slip is corrected: the all-columns example prints Column 6 Value as
``42 69 6F 6C 6F 67 69`` while its own annotation, the table data and the stated value say
``Biology`` (``… 67 79``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.capture.oracle import capture_oracle_dumps
from trailgate.capture.oracle.datatypes import to_trail
from trailgate.capture.oracle.dictionary import Dictionary
from trailgate.capture.oracle.supplemental import parse_supplemental
from trailgate.errors import SourceError
from trailgate.model import OpType

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
US01 = FIXTURES / "us01_dictionary.json"

PK = """Header (20 bytes)
 00011C01 00080001 00000008 00001000 00000000
Column List Header (2 bytes)
 0001
Column Size List (2 bytes)
 0003
Column 1 Value (3 bytes)
 C2 0B 02"""

UK = """Header (20 bytes)
 00011C01 00030001 00000003 00001000 00000000
Column List Header (2 bytes)
 0002
Column Size List (2 bytes)
 0007
Column 1 Value (7 bytes)
 52 65 62 65 63 63 61"""

FK = """Header (20 bytes)
00021C01 00060001 00000006 00001000 00000000
Column List Header (4 bytes)
 0005 0007
Column Size List (4 bytes)
 0009 0003
Column 1 Value (9 bytes)
 43 61 6D 62 72 69 64 67 65
Column 2 Value (3 bytes)
 C2 15 0E"""

ALL = """Header (20 bytes)
  00071c01 00080001 00000008 00001000 00000000
Column List Header (14 bytes)
  0001 0002 0003 0004 0005 0006 0007
Column Size List (14 bytes)
 0003 0005 0008 0001 0006 0007 0003
Column 1 Value (3 bytes)
 C2 0B 05
Column 2 Value (5 bytes)
 4A 61 73 6F 6E
Column 3 Value (8 bytes)
 52 6F 62 69 6E 73 6F 6E
Column 4 Value (1 byte)
 4D
Column 5 Value (6 bytes)
 4F 78 66 6F 72 64
Column 6 Value (7 bytes)
 42 69 6F 6C 6F 67 79
Column 7 Value (3 bytes)
 C2 15 0E"""

CHAINED = [
    ("00000401 00070001 00000007 00001000 00000000 010003FF 00000000", 7, 0x010003FF, 0, 0),
    ("00000401 000D0001 0000000D 00001000 00000000 010003FF 00000000", 13, 0x010003FF, 0, 0),
    ("00000401 00070001 00000007 00001000 00000000 010003FC 00000003", 7, 0x010003FC, 0, 3),
]

CLUSTER = """Header (28 bytes)
 00010C01 00050001 00000005 00001000 00000000 0100036F 00010002
Column List Header (2 bytes)
 0001
Column Size List (2 bytes)
 0003
Column 1 Value (3 bytes)
 C2 0B 04"""


def parse(text: str):
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)]
    return parse_supplemental(lines, lambda ln, msg: SourceError(f"line {ln}: {msg}"))


def named(text: str) -> dict[str, bytes | None]:
    """Decode a block against seed 000's US01.STUDENT, by column name."""
    table = Dictionary.load(US01).by_object_id(76381)
    out = {}
    for intcol, raw in parse(text).columns:
        col = table.by_intcol[intcol]
        out[col.name] = to_trail(raw, col.kind, col.charset)
    return out


def test_primary_key_block():
    sup = parse(PK)
    assert sup.first_modified == 8 and sup.head_dba is None
    assert named(PK) == {"STUDENT_KEY": b"1001"}


def test_unique_key_block():
    assert parse(UK).first_modified == 3
    assert named(UK) == {"FIRST_NAME": b"Rebecca"}


def test_foreign_key_block():
    assert parse(FK).first_modified == 6
    assert named(FK) == {"UNIVERSITY": b"Cambridge", "ENTRY_YEAR": b"2013"}


def test_all_columns_block():
    assert named(ALL) == {"STUDENT_KEY": b"1004", "FIRST_NAME": b"Jason",
                          "SURNAME": b"Robinson", "GENDER": b"M", "UNIVERSITY": b"Oxford",
                          "SUBJECT": b"Biology", "ENTRY_YEAR": b"2013"}


@pytest.mark.parametrize(("words", "first", "dba", "tabn", "slot"), CHAINED)
def test_chained_row_header_names_the_head_piece(words, first, dba, tabn, slot):
    sup = parse(f"Header (28 bytes)\n {words}")
    assert (sup.first_modified, sup.head_dba, sup.head_tabn, sup.head_slot) == (
        first, dba, tabn, slot)
    assert sup.columns == []


def test_index_cluster_header_and_cluster_key():
    sup = parse(CLUSTER)
    assert (sup.first_modified, sup.head_dba, sup.head_tabn, sup.head_slot) == (
        5, 0x0100036F, 1, 2)
    assert sup.columns == [(1, bytes.fromhex("c20b04"))]  # CLUSTER_KEY = 1003


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda t: t.replace("Header (20 bytes)", "Header (24 bytes)"), r"Header \(20 bytes\)"),
    (lambda t: t.replace(" 0003\n", " 0004\n"), "size list says 4"),
    (lambda t: t.replace("C2 0B 02", "C2 0B"), "has 2 bytes, expected 3"),
    (lambda t: t.replace("C2 0B 02", "C2 0B 0G"), "hex"),
    (lambda t: t.rsplit("\n", 2)[0], "cut short"),
    # \xa0 is whitespace to str.split but not to bytes.fromhex: a message, not a traceback
    (lambda t: t.replace("00000008 00001000", "00000008\xa000001000"), "separated by spaces"),
])
def test_malformed_blocks_are_refused(mutate, message):
    with pytest.raises(SourceError, match=message):
        parse(mutate(PK))


def test_pk_supplemental_update_end_to_end():
    """Seed 000's PK example (UPDATE … SET tuition_fee = 6000 WHERE student_key = 1001) with
    its supplemental block beneath the 5.1 change.  The seed shows no commit for it: the
    fixture's last record is a 5.4 written for the transaction (2.1.966, from CLS 19 slt 1
    sqn 0x3c6)."""
    [t] = list(capture_oracle_dumps(US01, [FIXTURES / "seed000_pk_update.dmp"]))
    assert t.xid == "2.1.966"
    [c] = t.changes
    assert c.op is OpType.FIELD_COMP and c.table == "US01.STUDENT"
    assert c.after == {0: b"1001", 7: b"6000"}


CHAINED_FIXTURE = FIXTURES / "seed000_chained_update.dmp"


def test_chained_row_without_logged_key_is_refused():
    """Seed 000's chained-row update (UPDATE t35 SET c7 = c7 + 10 WHERE c1 = 1005) logs only
    the 28-byte header (minimal supplemental logging), so the key C1 is not in the redo: no
    record can identify the row, and capture says so instead of writing a keyless one.  (The
    fixture's commit record is written for the transaction 4.14.817; the seed shows none.)"""
    with pytest.raises(SourceError, match=r"does not carry key column\(s\) C1"):
        list(capture_oracle_dumps(US01, [CHAINED_FIXTURE]))


def test_chained_row_update_uses_head_piece_rowid(tmp_path):
    """The same update with primary key logging as well: the header then logs one column
    (C1 = 1005).  The URP is on a middle piece (DBA 0x010003fd, col 1 of the piece); the
    header's first-modified column 7 places it as C7, and the ROWID is the head piece's:
    DBA 0x010003ff slot 0, from the 28-byte header (not the LKR, not the URP's block)."""
    text = CHAINED_FIXTURE.read_text().replace(
        "Header (28 bytes)\n 00000401 00070001 00000007 00001000 00000000 010003FF 00000000\n",
        "Header (28 bytes)\n 00010401 00070001 00000007 00001000 00000000 010003FF 00000000\n"
        "Column List Header (2 bytes)\n 0001\nColumn Size List (2 bytes)\n 0003\n"
        "Column 1 Value (3 bytes)\n C2 0B 06\n")
    dump = tmp_path / "chained_pk.dmp"
    dump.write_text(text)
    [t] = list(capture_oracle_dumps(US01, [dump]))
    [c] = t.changes
    assert t.xid == "4.14.817"
    assert c.op is OpType.FIELD_COMP and c.table == "US01.T35"
    assert c.after == {0: b"1005", 6: b"20"}
    from trailgate.capture.oracle.rowid import encode_rowid
    assert c.rowid == encode_rowid(76390, 4, 0x3FF, 0)
