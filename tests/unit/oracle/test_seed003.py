"""Seed 003's worked examples: redo dump -> the changes GoldenGate wrote to its trail.

The fixtures in tests/fixtures/oracle/ are the seed's dump text (prose between fragments
removed), with these changes, each because a real dump could not contain the seed's text:

* single_insert.dmp: the commit record's ``SCN: 0x0000.0018bcdF`` is written lower case
  (``0018bcdf``): dumps print hex in lower case; the parser rejects the slip
  (test_malformed.py::test_seed_slips_are_rejected).
* single_update.dmp: ``flags: 0x00000000bdba:`` gets its missing space.
* single_delete.dmp: the ITL ``scn: 0x0000.0018bcdcf`` (nine digits) becomes ``0018bcdf``,
  the commit SCN of the insert example, which that ITL entry refers to.
* direct_load.dmp: ``@0xleef`` becomes ``@0x1eef`` (the row directory shows ``offs=0x1eef``)
  and row 2 gets its missing ``col 4`` line (``Manchester``; cc is 8 and the trail has it).

``ALTER SYSTEM DUMP LOGFILE`` omits supplemental data (seed 000), yet the updates' keys exist
only there.  So single_update.dmp and multi_update.dmp carry, beneath each 5.1 change, STUDENT's
primary key in seed 000's primary-key layout (header ``00011C01 00080001 00000008 …``: one
column, first modified column 8 = TUITION_FEE).  multi_delete.dmp carries the key the same way
(first-modified 0, a delete modifies no column); single_delete.dmp carries none, so its key
comes from the deleted row's image in the undo, as the seed says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.capture.oracle import capture_oracle_dumps
from trailgate.capture.oracle.dumpparser import parse_dump
from trailgate.model import OpType, julian_from_unix_micros

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
DICTIONARY = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle"
              / "examples" / "us03_dictionary.json")


def capture(name: str):
    txns = list(capture_oracle_dumps(DICTIONARY, [FIXTURES / f"{name}.dmp"]))
    assert len(txns) == 1
    return txns[0]


def julian(y, mo, d, h, mi, s) -> int:
    from calendar import timegm
    return julian_from_unix_micros(timegm((y, mo, d, h, mi, s)) * 1_000_000)


ROW_1011 = {0: b"1011", 1: b"Jordan", 2: b"Sherwood", 3: b"M", 4: b"Manchester",
            5: b"Chemistry", 6: b"2013", 7: b"9000"}
ROW_1007 = {0: b"1007", 1: b"Victoria", 2: b"Evans", 3: b"F", 4: b"Oxford", 5: b"Theology",
            6: b"2013", 7: b"9000"}
ROW_1008 = {0: b"1008", 1: b"Katy", 2: b"Pierce", 3: b"F", 4: b"Oxford", 5: b"Theology",
            6: b"2013", 7: b"9000"}
ROW_1009 = {0: b"1009", 1: b"Shane", 2: b"Thomas", 3: b"M", 4: b"Manchester",
            5: b"Media Studies", 6: b"2013", 7: b"9000"}


def test_single_row_insert():
    t = capture("single_insert")
    assert (t.xid, t.csn) == ("4.11.854", 1621215)
    [c] = t.changes
    assert c.op is OpType.INSERT and c.table == "US03.STUDENT"
    assert c.after == ROW_1011 and c.before is None
    assert c.rowid == "AAASrPAAEAAAAQ2AAK"
    assert c.io_time == julian(2013, 3, 31, 23, 59, 58)
    # AuditRBA = log sequence 0x44; AuditPos = block 5 << 9 | offset 0x10 of the IRP's record
    assert (c.audit_seq, c.audit_pos) == (0x44, 5 << 9 | 0x10)
    assert t.commit_time == julian(2013, 3, 31, 23, 59, 58)


def test_single_row_update_is_key_plus_changed_column():
    t = capture("single_update")
    assert (t.xid, t.csn) == ("3.6.1012", 1622900)
    [c] = t.changes
    assert c.op is OpType.FIELD_COMP
    assert c.after == {0: b"1010", 7: b"6000"} and c.before is None
    assert c.rowid == "AAASrPAAEAAAAQ2AAJ"
    assert c.io_time == julian(2013, 4, 1, 0, 55, 0)
    assert (c.audit_seq, c.audit_pos) == (0x45, 6 << 9 | 0x10)


def test_single_row_delete_key_from_undo_image():
    t = capture("single_delete")
    assert (t.xid, t.csn) == ("1.33.830", 1625893)
    [c] = t.changes
    assert c.op is OpType.DELETE
    assert c.before == {0: b"1004"} and c.after is None
    assert c.rowid == "AAASrPAAEAAAAQ2AAD"
    assert c.io_time == julian(2013, 4, 1, 2, 35, 47)


def test_multi_row_update_gives_one_change_per_row():
    t = capture("multi_update")
    assert (t.xid, t.csn) == ("6.27.1204", 1630607)
    assert [c.op for c in t.changes] == [OpType.FIELD_COMP] * 3
    assert [c.after for c in t.changes] == [{0: b"1007", 7: b"7500"}, {0: b"1008", 7: b"7500"},
                                            {0: b"1009", 7: b"7500"}]
    assert [c.rowid for c in t.changes] == ["AAASrPAAEAAAAQ2AAG", "AAASrPAAEAAAAQ2AAH",
                                            "AAASrPAAEAAAAQ2AAI"]
    # each row's own redo record: 0x47.6.0010, 0x47.7.0064, 0x47.7.018c
    assert [c.audit_pos for c in t.changes] == [6 << 9 | 0x10, 7 << 9 | 0x64, 7 << 9 | 0x18C]


def test_multi_row_delete_gives_one_change_per_row():
    t = capture("multi_delete")
    assert (t.xid, t.csn) == ("3.23.1016", 1638367)
    assert [c.op for c in t.changes] == [OpType.DELETE] * 3
    assert [c.before for c in t.changes] == [{0: b"1007"}, {0: b"1008"}, {0: b"1009"}]
    assert [c.rowid for c in t.changes] == ["AAASrPAAEAAAAQ2AAD", "AAASrPAAEAAAAQ2AAL",
                                            "AAASrPAAEAAAAQ2AAM"]


def test_array_insert_splits_into_rows():
    t = capture("array_insert")
    assert (t.xid, t.csn) == ("7.13.846", 1641683)
    assert [c.op for c in t.changes] == [OpType.INSERT] * 3
    assert [c.after for c in t.changes] == [ROW_1007, ROW_1008, ROW_1009]
    assert [c.rowid for c in t.changes] == ["AAASrPAAEAAAAQ2AAG", "AAASrPAAEAAAAQ2AAH",
                                            "AAASrPAAEAAAAQ2AAI"]
    assert {c.audit_pos for c in t.changes} == {5 << 9 | 0x10}


def test_direct_load_rows_become_inserts():
    t = capture("direct_load")
    assert (t.xid, t.csn) == ("4.21.865", 1652769)
    assert [c.after for c in t.changes] == [ROW_1007, ROW_1008, ROW_1009]
    assert [c.rowid for c in t.changes] == ["AAASrPAAEAAAARgAAA", "AAASrPAAEAAAARgAAB",
                                            "AAASrPAAEAAAARgAAC"]
    assert {(c.audit_seq, c.audit_pos) for c in t.changes} == {(0x4D, 0xB << 9 | 0xB4)}


def test_all_examples_together_in_commit_scn_order():
    files = [FIXTURES / f"{n}.dmp" for n in ("direct_load", "single_update", "array_insert",
                                             "single_insert", "multi_delete", "single_delete",
                                             "multi_update")]  # any order: sorted by log seq
    txns = list(capture_oracle_dumps(DICTIONARY, files))
    assert [(t.xid, t.csn) for t in txns] == [
        ("4.11.854", 1621215), ("3.6.1012", 1622900), ("1.33.830", 1625893),
        ("6.27.1204", 1630607), ("3.23.1016", 1638367), ("7.13.846", 1641683),
        ("4.21.865", 1652769)]
    assert sum(len(t.changes) for t in txns) == 1 + 1 + 1 + 3 + 3 + 3 + 3


@pytest.mark.parametrize("name", ["single_insert", "single_delete", "array_insert",
                                  "direct_load"])
def test_index_and_commit_redo_yield_no_changes(name):
    """Only table-layer changes (11.x, 19.1) become trail records: one per row."""
    records = list(parse_dump(FIXTURES / f"{name}.dmp"))
    def rows(c) -> int:
        if c.layer == 19:
            return len(c.rows)
        return len(c.kdo.rows) if c.kdo.op == "QMI" else 1

    expected = sum(rows(c) for r in records for c in r.changes if c.layer in (11, 19))
    index_changes = sum(1 for r in records for c in r.changes if c.layer == 10)
    assert index_changes > 0
    assert len(capture(name).changes) == expected


def test_undo_class_gives_undo_segment_number():
    """CLS 15 + 2*usn is an undo header: 23 -> 4, 27 -> 6, 17 -> 1 (seed 003)."""
    seen = {}
    for name in ("single_insert", "multi_update", "single_delete"):
        first = next(parse_dump(FIXTURES / f"{name}.dmp"))
        ktudh = first.changes[0]
        seen[ktudh.cls] = ktudh.xid.split(".")[0]
    assert seen == {23: "4", 27: "6", 17: "1"}
