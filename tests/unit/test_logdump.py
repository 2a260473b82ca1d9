"""Logdump driven by commands, checked on its output text: header fields, columns, tokens,
COUNT, FILTER, POSITION, SCANFORHEADER over damage, SAVE, NEXTTRAIL, and bad commands."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest
from test_logdump_trails import main_trail, raw_records, rolled_trail

from trailgate.cli import main as trailgate_main
from trailgate.logdump.cli import run_lines
from trailgate.logdump.commands import execute, lookup
from trailgate.logdump.session import Session
from trailgate.model import OpType
from trailgate.sample import seed_transactions
from trailgate.trail import TrailReader


@pytest.fixture(scope="module")
def trail(tmp_path_factory) -> Path:
    return main_trail(tmp_path_factory.mktemp("main"))


def logdump(*commands: str, file: Path | None = None) -> str:
    """Run commands in a fresh session; returns everything it printed."""
    out = io.StringIO()
    session = Session(out)
    if file is not None:
        session.open(file)
    run_lines(session, commands)
    session.close()
    return out.getvalue()


def rba_of(path: Path, io_type: int, nth: int = 0) -> int:
    return [r.rba for r in raw_records(path) if r.io_type == io_type][nth]


def test_ghdr_block_and_operation_line_follow_logdump(trail):
    insert = rba_of(trail, OpType.INSERT)
    out = logdump("ghdr on", f"pos {insert}", "n", file=trail)
    lines = out.splitlines()
    assert "Hdr-Ind    :     E  (x45)     Partition  :     .  (x04)" in lines
    assert "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)" in lines
    assert "RecLength  :   110  (x006e)   IO Time    : 2013/03/31 23:59:58.000.000" in lines
    assert "IOType     :     5  (x05)     OrigNode   :   255  (xff)" in lines
    assert "TransInd   :     .  (x03)     FormatType :     R  (x52)" in lines
    assert "AuditRBA   :         68       AuditPos   : 2576" in lines
    assert "Continued  :     N  (x00)     RecCount   :     1  (x01)" in lines
    assert f"2013/03/31 23:59:58.000.000 Insert               Len   110 RBA {insert}" in lines
    assert "Name: US03.STUDENT" in lines
    assert lines[lines.index("Name: US03.STUDENT") + 1].startswith("After  Image:")
    # the data area: hex words and ASCII, 20 bytes a line (as GoldenGate's Logdump)
    assert (" 0000 0008 0000 0004 3130 3131 0001 000a 0000 0006 | ........1011........"
            in lines)


def test_ghdr_off_shows_no_header_block(trail):
    out = logdump(f"pos {rba_of(trail, OpType.INSERT)}", "n", file=trail)
    assert "Hdr-Ind" not in out and "Insert               Len   110" in out


def test_detail_lists_columns_with_names_and_data_decodes_values(trail):
    insert = rba_of(trail, OpType.INSERT)
    on = logdump("detail on", f"pos {insert}", "n", file=trail).splitlines()
    i = on.index("Column     0 (x0000), Len     8 (x0008)  STUDENT_KEY")
    assert on[i + 1].startswith(" 0000 0004 3130 3131") and on[i + 1].endswith("| ....1011")
    assert "Column     7 (x0007), Len     8 (x0008)  TUITION_FEE" in on
    assert "  STUDENT_KEY = 1011" not in on
    data = logdump("detail data", f"pos {insert}", "n", file=trail).splitlines()
    assert "  STUDENT_KEY = 1011" in data and "  UNIVERSITY = Manchester" in data
    off = logdump(f"pos {insert}", "n", file=trail)
    assert "Column     0" not in off


def test_delete_shows_before_image_and_pk_update_both_keys(trail):
    out = logdump("detail data", "sft delete", file=trail)
    assert "Before Image:" in out and "  STUDENT_KEY = 1004" in out
    out = logdump("detail data", "sft pkupdate", file=trail)
    assert "Before key: 30 bytes" in out and "After image:" in out
    assert "  SUBJECT = Theology" in out and "  SUBJECT = Divinity" in out


def test_transaction_area_and_user_tokens(trail):
    out = logdump(f"pos {rba_of(trail, OpType.INSERT)}", "n", file=trail)
    assert "TokenID x52 'R' ORAROWID         Info x00  Length   20" in out
    assert " 4141 4153 7250 4141 4541 4141 4151 3241 414b 0001 | AAASrPAAEAAAAQ2AAK.." in out
    assert "TokenID x4c 'L' LOGCSN" in out and "| 1621215" in out
    assert "TokenID x36 '6' TRANID" in out and "| 4.11.854" in out
    assert "ORAROWID" not in logdump("ggstoken off", f"pos {rba_of(trail, 5)}", "n", file=trail)
    course = rba_of(trail, OpType.INSERT, 1)
    assert "TKN-" not in logdump(f"pos {course}", "n", file=trail)  # USERTOKEN OFF default
    out = logdump("usertoken on", f"pos {course}", "n", file=trail).splitlines()
    assert "TKN-HOST  : syshq" in out and "TKN-GROUP : EXTORA" in out
    assert "User tokens:   28 bytes" in out


def test_file_header_groups_and_detail_hex(trail):
    out = logdump("fileheader on", "n", file=trail)
    assert "Name: *FileHeader*" in out
    for group in ("TrailInfo", "MachineInfo", "DatabaseInfo", "ProducerInfo",
                  "ContinuityInfo"):
        assert f"' {group:<16} Info x00" in out
    lines = out.splitlines()
    assert r"  Signature           : GG\r\nTL\n\r" in lines
    assert "  CompatibilityLevel  : 3" in lines
    assert "  FirstCSN            : 1621215" in lines
    assert "  VendorType          : 7 (ORACLE)" in lines
    assert "  Name                : EX1" in lines
    assert f"  Filename            : {trail.absolute()}" in lines
    assert "  RecoveryMode        : 1" in lines
    assert " 3000" not in out  # no hex without DETAIL
    detail = logdump("fh detail", "n", file=trail)
    assert any(line.startswith(" 3000 ") and "GG..TL" in line for line in detail.splitlines())


def test_metadata_ddl_lob_and_fragment_records(trail):
    out = logdump("n 2", file=trail)
    assert "Table definition: US03.STUDENT, 8 columns, key PRIMARY (STUDENT_KEY)" in out
    assert "  Column    7  TUITION_FEE" in out
    out = logdump("sft ddl", file=trail)
    statement = "ALTER TABLE US03.STUDENT ADD (NOTES VARCHAR2(100))"
    assert f"DDL operation [{statement}], len {len(statement)}" in out
    assert ("DDL seqno [], optype [ALTER], objtype [TABLE], objowner [US03], objname "
            "[STUDENT]") in out
    out = logdump("sft lob", "sft 116", "sft lob", file=trail)
    assert "LOB piece 1 of 3 of column 1 (BODY): offset 0, 32000 bytes" in out
    assert "LOB piece 3 of 3 of column 1 (BODY): offset 64000, 6000 bytes" in out
    out = logdump("sft recordfragment", file=trail)
    assert "RecordFragment" in out and "the last fragment" in out
    out = logdump("filter include filename us03.wide", "filter include iotype insert", "n",
                  file=trail)
    assert "Continued: the data goes on in the following RecordFragment record(s)" in out


def test_count_totals_and_detail(trail):
    records = raw_records(trail)
    inserts = sum(r.io_type == OpType.INSERT for r in records)
    out = logdump("count", file=trail)
    lines = out.splitlines()
    assert f"LogTrail {trail} has {len(records)} records" in lines
    assert f"{'Total Data Bytes':<24}{sum(r.rec_length for r in records):>12}" in lines
    assert f"{'Insert':<24}{inserts:>12}" in lines
    assert f"{'LargeObject':<24}{3:>12}" in lines
    assert f"{'Before Images':<24}{1:>12}" in lines
    assert "Average of 7 Transactions" in out
    assert any(line.startswith("US03.STUDENT") and line.split()[1] == "5" for line in lines)
    detail = logdump("count detail", file=trail).splitlines()
    i = detail.index("US03.COURSE")
    assert detail[i + 3].split()[:2] == ["GGSPKUpdate", "1"]
    assert detail[i + 4].split()[:2] == ["Insert", "1"]
    assert detail[i + 5].split()[:2] == ["Metadata", "1"]


def test_filters_select_records(trail):
    out = logdump("filter include filename US03.COURSE", "n 3", file=trail)
    names = [line for line in out.splitlines() if line.startswith("Name:")]
    assert names == ["Name: US03.COURSE"] * 3  # metadata, insert, PK update
    assert "Filtering suppressed" in out
    out = logdump("filter exclude iotype metadata", "filter include filename us03.*",
                  "count", file=trail)
    assert f"{'Metadata':<24}" not in out
    assert "Counting records that pass the filter" in out
    out = logdump('filter include string "Jordan"', "n 5", file=trail)
    assert out.count("Name: US03.STUDENT") == 1 and "Eof reached" in out
    insert = rba_of(trail, OpType.INSERT)
    out = logdump(f"filter include rba {insert} {insert + 10}", "n 3", file=trail)
    shown = [line for line in out.splitlines() if " Len " in line and " RBA " in line]
    assert shown == [f"2013/03/31 23:59:58.000.000 Insert               Len   110 RBA {insert}"]
    out = logdump("filter include iotype insert", "filter match any",
                  "filter include iotype delete", "show filter", "count", file=trail)
    assert "match ANY include condition" in out
    assert f"{'Delete':<24}{1:>12}" in out and f"{'FieldComp':<24}" not in out
    out = logdump("filter include iotype delete", "filter clear", "count", file=trail)
    assert f"{'FieldComp':<24}{1:>12}" in out and "Filtering cleared" in out
    out = logdump("filter include iotype delete", "filter off", "count", file=trail)
    assert f"{'FieldComp':<24}{1:>12}" in out


def test_position_first_last_and_rba(trail):
    records = raw_records(trail)
    update = rba_of(trail, OpType.FIELD_COMP)
    out = logdump(f"pos {update}", "n", file=trail)
    assert f"Reading forward from RBA {update}" in out
    assert f"FieldComp            Len    24 RBA {update}" in out
    out = logdump("pos last", "n", "n", file=trail)
    assert f"RBA {records[-1].rba}" in out and "DDL" in out
    assert f"Eof reached at RBA {records[-1].rba + records[-1].length}" in out
    out = logdump("n 3", "pos first", "n", file=trail)
    assert out.count("FileHeader           Len") == 2
    out = logdump(f"pos {update + 1}", "n", file=trail)
    assert f"Warning: RBA {update + 1} is not the start of a good record" in out
    assert f"at RBA {update + 1}" in out and "SCANFORHEADER" in out


def test_scanforheader_resynchronises_after_a_damaged_record(trail, tmp_path):
    damaged = tmp_path / "aa000000000"
    shutil.copy(trail, damaged)
    records = raw_records(trail)
    victim = next(r for r in records if r.io_type == OpType.INSERT)
    following = records[records.index(victim) + 1]
    data = bytearray(damaged.read_bytes())
    data[victim.rba + victim.length - 3] ^= 0xFF  # its Z trailer no longer matches
    data[victim.rba + 20 : victim.rba + 24] = b"\xde\xad\xbe\xef"
    damaged.write_bytes(bytes(data))
    out = logdump(f"pos {victim.rba}", "n", "sfh", "n", file=damaged)
    assert f"Error: {damaged} at RBA {victim.rba}: " in out
    assert "SCANFORHEADER" in out and "Traceback" not in out
    assert f"next record header at RBA {following.rba}" in out
    assert f"FieldComp            Len    24 RBA {following.rba}" in out
    assert f"RBA {records[records.index(victim) + 2].rba}" in out  # NEXT goes on from there


def test_damaged_record_type_and_cut_file(trail, tmp_path):
    damaged = tmp_path / "aa000000000"
    data = bytearray(trail.read_bytes())
    first = raw_records(trail)[0]
    data[first.rba] = 0x00
    damaged.write_bytes(bytes(data))
    out = logdump("n 2", "sfh", file=damaged)
    assert f"at RBA {first.rba}: record type 0x00 where a G record (0x47) should start" in out
    assert f"next record header at RBA {raw_records(trail)[1].rba}" in out
    cut = tmp_path / "cut000000000"
    cut.write_bytes(trail.read_bytes()[: first.rba + 30])
    out = logdump("n 3", file=cut)
    assert f"Eof reached at RBA {first.rba} of {cut}; 30 bytes of an incomplete record" in out
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a trail file at all")
    out = logdump("n", "sfh", file=junk)
    assert "damaged file header" in out and "No record header found" in out


def test_damaged_length_mid_file_is_an_error_not_an_end(trail, tmp_path, capsys):
    damaged = tmp_path / "aa000000000"
    data = bytearray(trail.read_bytes())
    records = raw_records(trail)
    victim = next(r for r in records[:-1] if r.rba + 0xFFF0 > len(data))
    following = records[records.index(victim) + 1]
    data[victim.rba + 2 : victim.rba + 4] = b"\xff\xf0"  # runs past the file's end
    damaged.write_bytes(bytes(data))
    out = logdump(f"pos {victim.rba}", "n", "sfh", file=damaged)
    assert f"Error: {damaged} at RBA {victim.rba}: " in out and "Eof reached" not in out
    assert "length field is damaged" in out and "SCANFORHEADER" in out
    assert f"next record header at RBA {following.rba}" in out
    # trail export stops with the same error instead of ending early
    assert trailgate_main(["trail", "export", str(tmp_path / "aa"), "--output",
                           str(tmp_path / "out.jsonl")]) == 1
    assert f"at RBA {victim.rba}: " in capsys.readouterr().err


def test_save_writes_a_readable_trail_file(trail, tmp_path):
    target = tmp_path / "saved"
    insert = rba_of(trail, OpType.INSERT)
    out = logdump(f"pos {insert}", f"save {target} 3 records", "n", file=trail)
    assert f"Saved 3 records and 1 table definitions to {target}" in out
    assert f"Insert               Len   110 RBA {insert}" in out  # position unchanged
    records = list(TrailReader(target, single_file=True).records())
    ops = [r.raw.io_type for r in records]
    assert ops == [OpType.COMMENT, OpType.METADATA, OpType.INSERT, OpType.FIELD_COMP,
                   OpType.DELETE, OpType.COMMENT]
    seeds = [t.changes[0] for t in seed_transactions()[:3]]
    assert [r.change for r in records[2:5]] == seeds
    assert "Logdump SAVE" in records[0].change.text
    again = logdump(f"save {target} 1", file=trail)
    assert "exists" in again and "!" in again
    assert "Saved 1 records" in logdump(f"save {target} ! 1 records", file=trail)
    shown = logdump("sft ggscomment", file=target)
    assert "GGSComment" in shown and "Comment: Logdump SAVE: 1 records from" in shown


def test_save_keeps_fragmented_records_whole(trail, tmp_path):
    target = tmp_path / "wide"
    wide = next(r.rba for r in raw_records(trail) if r.table == "US03.WIDE"
                and r.io_type == OpType.INSERT)
    logdump(f"pos {wide}", f"save {target} 1", file=trail)
    (record,) = [r for r in TrailReader(target, single_file=True).records()
                 if r.raw.io_type == OpType.INSERT]
    assert record.fragments == 2 and record.change.after[3] == b"z" * 30_000


def test_nexttrail_and_eof_across_files(tmp_path):
    files = rolled_trail(tmp_path)
    out = logdump("pos last", "n", "n", "nexttrail", "fh on", "n", file=files[0])
    assert f"Eof reached at RBA {files[0].stat().st_size} of {files[0]}" in out
    assert f"Next file of this trail: {files[1]} (NEXTTRAIL opens it)" in out
    assert f"Current LogTrail is {files[1]}" in out
    assert "  Seqno               : 1" in out
    last = logdump("nexttrail", file=files[-1])
    assert "No next file after" in last


def test_bad_commands_give_clear_messages(trail, tmp_path):
    out = logdump("frobnicate", "pos abc", "ghdr maybe", "filter include iotype bogus",
                  'filter include string "unterminated', "next 1 2", "save x", "sft",
                  file=trail)
    assert "Error: unknown command 'frobnicate'; HELP lists the commands" in out
    assert "Error: the RBA must be a number, not 'abc'" in out
    assert "Usage: POSITION {rba | 0 | FIRST | LAST}" in out
    assert "Error: GHDR takes ON | OFF" in out
    assert "unknown record type 'bogus'" in out
    assert "check the quotes" in out
    assert "NEXT takes at most one count" in out
    assert "SAVE needs a file name and a record count" in out
    assert "SCANFORTYPE needs a record type" in out
    assert "Traceback" not in out
    assert "No file is open" in logdump("n")
    assert "cannot open: No such file" in logdump(f"open {tmp_path / 'missing'}")


def test_abbreviations_help_env_rectype_and_exit(trail):
    assert lookup("n").name == "NEXT" and lookup("POS").name == "POSITION"
    assert lookup("sfh").name == "SCANFORHEADER" and lookup("fh").name == "FILEHEADER"
    assert lookup("posi").name == "POSITION" and lookup("zz") is None
    out = logdump("help", "help sft", "show rectype", "ghdr on", "env", "exit", "n",
                  file=trail)
    assert "SCANFORTYPE type  (abbreviation: SFT)" in out
    assert "  205 - GGSComment" in out and "  115 - (GGS)KeyFieldComp" in out
    assert "GHDR                : ON" in out
    assert "Current RBA         : 0" in out
    assert "FileHeader" not in out  # EXIT stopped before NEXT
    session = Session(io.StringIO())
    assert execute(session, "QUIT") is True and execute(session, "-- comment") is False


def test_trailgate_logdump_reads_commands_from_stdin(trail, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(
        "ghdr on\ndetail data\nsft insert\ncount\nexit\n"))
    assert trailgate_main(["logdump", str(trail)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Current LogTrail is {trail}\n")
    assert "Logdump 1 >" not in out  # no prompt when stdin is not a terminal
    assert "AuditRBA   :         68       AuditPos   : 2576" in out
    assert "  STUDENT_KEY = 1011" in out and f"has {len(raw_records(trail))} records" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"open {trail}\nn\n"))
    assert trailgate_main(["logdump"]) == 0
    assert "Name: *FileHeader*" in capsys.readouterr().out
