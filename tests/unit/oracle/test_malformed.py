"""Malformed dumps stop capture with a SourceError naming file, line and redo record; no
partial transaction is ever emitted, and the parser never guesses past a slip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trailgate.capture.oracle import capture_oracle_dumps
from trailgate.errors import SourceError

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
US03 = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle" / "examples"
        / "us03_dictionary.json")


def run(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return list(capture_oracle_dumps(US03, [path]))


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.dmp").read_text()


def mutated(name: str, old: str, new: str) -> str:
    text = fixture(name)
    assert text.count(old) == 1, old
    return text.replace(old, new)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(("name", "old", "new", "message"), [
    # the seed's own slips, as printed: each is something no real dump contains
    ("single_insert", "SCN: 0x0000.0018bcdf SUBSCN", "SCN: 0x0000.0018bcdF SUBSCN",
     "malformed REDO RECORD header"),
    ("direct_load", "@0x1eef", "@0xleef", "row address"),
    ("direct_load", "col 4: [10] 4d 61 6e 63 68 65 73 74 65 72\ncol 5: [13]", "col 5: [13]",
     "expected col 4 but found col 5"),
    ("single_update", "\nxtype: XA flags: 0x00000000 bdba:",
     "\nxtype: XA flags: 0x00000000bdba:", "after flags:"),
])
def test_seed_slips_are_rejected(tmp_path, name, old, new, message):
    with pytest.raises(SourceError, match=re.escape(message)):
        run(tmp_path, f"{name}.dmp", mutated(name, old, new))


def test_error_names_file_line_and_rba(tmp_path):
    text = mutated("single_insert", "col 2: [ 8] 53 68 65 72 77 6f 6f 64",
                   "col 2: [ 8] 53 68 65 72 77 6f 6f 6z")
    with pytest.raises(SourceError) as err:
        run(tmp_path, "badhex.dmp", text)
    msg = str(err.value)
    assert f"badhex.dmp, line {line_of(text, '6f 6f 6z')}, " in msg
    assert "redo record RBA 0x000044.00000005.0010" in msg
    assert "bad hex byte '6z'" in msg


def test_dump_cut_mid_record(tmp_path):
    text = fixture("single_insert")
    cut = text[: text.index("col 5: [ 9]")]
    with pytest.raises(SourceError, match=r"line \d+, redo record RBA 0x000044.00000005.0010: "
                                          r"change ends where 'col' was expected"):
        run(tmp_path, "cut.dmp", cut)


def test_dump_cut_mid_change_header(tmp_path):
    text = fixture("single_insert")
    cut = text[: text.index("OP:11.2 ENC:0 RBL:0")]
    with pytest.raises(SourceError, match="malformed change header"):
        run(tmp_path, "cut.dmp", cut)


def test_dump_cut_mid_commit(tmp_path):
    text = fixture("single_insert")
    cut = text[: text.index("0x00c000b2.01ee.0f ext: 0")]
    with pytest.raises(SourceError, match=r"RBA 0x000044.00000007.00e0: change ends"):
        run(tmp_path, "cut.dmp", cut)


def test_no_partial_transaction_before_a_later_error(tmp_path):
    """A good transaction is emitted; the broken one after it never is, not even in part."""
    good = fixture("single_insert")
    bad = mutated("multi_update", "col 7: [ 2] c2 4c\n\n", "col 7: [ 2] c2\n\n")
    path1, path2 = tmp_path / "a.dmp", tmp_path / "b.dmp"
    path1.write_text(good)
    path2.write_text(bad)
    got = []
    with pytest.raises(SourceError, match=r"b\.dmp"):
        for txn in capture_oracle_dumps(US03, [path1, path2]):
            got.append(txn)
    assert [t.xid for t in got] == ["4.11.854"]


def test_unknown_operation_in_a_data_layer(tmp_path):
    text = mutated("single_insert", "OP:11.2 ENC:0 RBL:0", "OP:11.6 ENC:0 RBL:0")
    with pytest.raises(SourceError, match=r"operation 11.6 changes table data"):
        run(tmp_path, "op.dmp", text)


def test_kdo_operation_must_match_the_opcode(tmp_path):
    text = mutated("single_insert", "KDO Op code: IRP row dependencies Disabled\n  xtype: XA "
                   "flags: 0x00000000 bdba: 0x01000436 hdba: 0x01000432\nitli: 2 ispac: 0 "
                   "maxfr: 4858\ntabn: 0 slot: 10(0xa) size/delt: 53",
                   "KDO Op code: URP row dependencies Disabled\n  xtype: XA "
                   "flags: 0x00000000 bdba: 0x01000436 hdba: 0x01000432\nitli: 2 ispac: 0 "
                   "maxfr: 4858\ntabn: 0 slot: 10(0xa) size/delt: 53")
    with pytest.raises(SourceError, match=r"expected 'flag:' but found 'size/delt:'"):
        run(tmp_path, "kdo.dmp", text)


def test_change_numbers_must_follow_each_other(tmp_path):
    text = mutated("single_insert", "CHANGE #3 TYP:2", "CHANGE #5 TYP:2")
    with pytest.raises(SourceError, match="CHANGE #5 where #3 was expected"):
        run(tmp_path, "num.dmp", text)


def test_records_out_of_order(tmp_path):
    text = mutated("single_insert", "RBA: 0x000044.00000007.00e0", "RBA: 0x000044.00000001.00e0")
    with pytest.raises(SourceError, match="RBA does not follow"):
        run(tmp_path, "order.dmp", text)


def test_not_a_dump(tmp_path):
    with pytest.raises(SourceError, match="no REDO RECORD found"):
        run(tmp_path, "empty.dmp", "Trace file /u01/app/oracle/diag/ora_123.trc\n")


def test_missing_dump_file(tmp_path):
    with pytest.raises(SourceError, match="cannot read the dump file"):
        list(capture_oracle_dumps(US03, [tmp_path / "nope.dmp"]))


def test_preamble_and_end_marker_are_accepted(tmp_path):
    text = ("Trace file /u01/app/oracle/diag/rdbms/north/NORTH/trace/NORTH_ora_4242.trc\n"
            "DUMP OF REDO FROM FILE '/u01/app/oradata/NORTH/redo01.log'\n\n"
            + fixture("single_insert") + "END OF REDO DUMP\n----- Redo read statistics -----\n")
    [t] = run(tmp_path, "full.dmp", text)
    assert t.xid == "4.11.854"


def test_supplemental_data_under_the_wrong_change(tmp_path):
    text = fixture("single_update")
    block = text[text.index("Header (20 bytes)"): text.index("C2 0B 0B") + len("C2 0B 0B\n")]
    text = text.replace(block, "").replace("login username = US03\n",
                                           "login username = US03\n" + block)
    with pytest.raises(SourceError, match=r"supplemental data beneath a 5\.20 change"):
        run(tmp_path, "sup.dmp", text)
