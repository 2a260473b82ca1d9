"""``trailgate trail dump``: TrailAnalyzer-style annotation checked against seed 003's
printed insert, every byte accounted for, damage annotated and skipped; the plain dump."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_logdump_trails import main_trail, raw_records

from trailgate.cli import main as trailgate_main
from trailgate.logdump.annotate import annotate, plain_dump
from trailgate.model import OpType

# Seed 003's TrailAnalyzer output for the STUDENT insert: its D area, line for line.
SEED_003_INSERT_D = """\
# Slot 0 (8 bytes)
00 00 00 04 31 30 31 31 # STUDENT_KEY = 1011
# Slot 1 (10 bytes)
00 00 00 06 4A 6F 72 64 61 6E # FIRST_NAME = Jordan
# Slot 2 (12 bytes)
00 00 00 08 53 68 65 72 77 6F 6F 64 # SURNAME = Sherwood
# Slot 3 (5 bytes)
00 00 00 01 4D # GENDER = M
# Slot 4 (14 bytes)
00 00 00 0A 4D 61 6E 63 68 65 73 74 65 72 # UNIVERSITY = Manchester
# Slot 5 (13 bytes)
00 00 00 09 43 68 65 6D 69 73 74 72 79 # SUBJECT = Chemistry
# Slot 6 (8 bytes)
00 00 00 04 32 30 31 33 # ENTRY_YEAR = 2013
# Slot 7 (8 bytes)
00 00 00 04 39 30 30 30 # TUITION_FEE = 9000
""".splitlines()
_HEX_LINE = re.compile(r"^(?:[0-9A-F]{2})(?: [0-9A-F]{2})*$")


@pytest.fixture(scope="module")
def trail(tmp_path_factory) -> Path:
    return main_trail(tmp_path_factory.mktemp("annotate"))


def dump(capsys, *argv: str) -> tuple[int, str, str]:
    status = trailgate_main(["trail", "dump", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def bytes_of(lines: list[str]) -> bytes:
    """The bytes an annotated dump shows: the hex before each line's comment."""
    out = bytearray()
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if text and not text.startswith("<"):
            assert _HEX_LINE.match(text), line
            out += bytes.fromhex(text)
    return bytes(out)


def test_seed_003_insert_annotated_as_the_seed_prints_it(trail, capsys):
    insert = next(r for r in raw_records(trail) if r.io_type == OpType.INSERT)
    status, out, _ = dump(capsys, str(trail), "--annotate", "--from", str(insert.rba),
                          "--count", "1")
    assert status == 0
    lines = [line.strip() for line in out.splitlines()]
    assert "47 01 00 E0   # Type=47 (G) Flag=1 Len=224" in lines
    assert "48 00 00 2F   # Type=48 (H) Flag=0 Len=47" in lines
    assert "44 00 00 6E   # Type=44 (D) Flag=0 Len=110" in lines
    assert "5A 01 00 E0   # Type=5A (Z) Flag=1 Len=224" in lines
    d_area = lines[lines.index("<47_44>") + 2 : lines.index("</47_44>")]
    # between the seed's lines: each column's 4-byte index/length header
    assert [line for line in d_area if not line.endswith(tuple(
        f"# Column {i}, Length {n}" for i, n in enumerate((8, 10, 12, 5, 14, 13, 8, 8))))] \
        == SEED_003_INSERT_D
    assert "05 # Flags - 0x05 Insert" in lines
    assert "# Timestamp 2013:03:31 23:59:58 000000 ms" in out
    assert "00 00 00 44 # AuditRBA 68 - redo RBA 0x000044.00000005.0010" in lines
    assert "55 53 30 33 2E 53 54 55 44 45 4E 54 00 # Object US03.STUDENT" in lines
    assert "41 41 41 53 72 50 41 41 45 41 41 41 41 51 32 41 # ROWID AAASrPAAEAAAAQ2AAK" \
        in lines
    assert "31 36 32 31 32 31 35 # Commit SCN 1621215" in lines
    assert "34 2E 31 31 2E 38 35 34 # Transaction ID 4.11.854" in lines
    for tag in ("47_48", "47_44", "47_54", "47_54_52", "47_54_4C", "47_54_36"):
        assert f"<{tag}>" in lines and f"</{tag}>" in lines
    assert bytes_of(out.splitlines()) == trail.read_bytes()[insert.rba : insert.rba + 224]


def test_whole_file_every_byte_shown_and_header_fields_named(trail):
    ann = annotate(trail.read_bytes(), str(trail))
    assert ann.damaged == 0
    assert bytes_of(ann.lines) == trail.read_bytes()
    text = "\n".join(ann.lines)
    for tag in ("46_30", "46_31", "46_32", "46_33", "46_34", "46_30_3A"):
        assert f"<{tag}>" in text and f"</{tag}>" in text
    for comment in (r"# Signature = GG\r\nTL\n\r", "# CompatibilityLevel = 3",
                    f"# {trail.absolute()}", "# FirstCSN = 1621215", "# Seqno = 0",
                    "# VendorType = 7 (ORACLE)", "# OSName", "# Name", "# EX1",
                    "# RecoveryMode = 1", "# CreationTime = 20"):
        assert comment in text, comment
    assert "# Type=46 (F) Flag=0 Len=" in text
    # the other record kinds
    assert "# Before key length 30" in text and "# SUBJECT = Divinity" in text
    assert "# Number of pieces = 3" in text and "# Start offset 64000 bytes" in text
    assert "# Part of a data area split across records; more fragments follow" in text
    assert "# Table definition (METADATA_TEXT keys)" in text
    assert "# TKN-HOST = syshq" in text
    assert "# Flags - 0xA0 DDL" in text and "# Flags - 0xA1 RecordFragment" in text


def test_non_oracle_trail_has_no_redo_address(tmp_path):
    path = main_trail(tmp_path, vendor=21)
    text = "\n".join(annotate(path.read_bytes(), str(path)).lines)
    assert "# VendorType = 21 (POSTGRESQL)" in text and "redo RBA" not in text


def test_damage_is_annotated_and_skipped(trail, tmp_path, capsys):
    records = raw_records(trail)
    victim = next(r for r in records if r.io_type == OpType.FIELD_COMP)
    data = bytearray(trail.read_bytes())
    data[victim.rba + 2 : victim.rba + 4] = b"\x00\x10"  # an impossible length
    broken = tmp_path / "aa000000000"
    broken.write_bytes(bytes(data))
    status, out, err = dump(capsys, str(broken), "--annotate")
    assert status == 1 and "damaged area" in err
    assert f"# ERROR at RBA {victim.rba}: impossible record length 16" in out
    following = records[records.index(victim) + 1]
    assert f"# Record at RBA {following.rba}: Delete US03.STUDENT" in out
    assert bytes_of(out.splitlines()) == bytes(data)
    cut = tmp_path / "aa000000001"
    cut.write_bytes(trail.read_bytes()[: victim.rba + 40])
    status, out, _ = dump(capsys, str(cut), "--annotate")
    assert status == 0 and f"# 40 bytes of an incomplete record at RBA {victim.rba}" in out
    assert bytes_of(out.splitlines()) == cut.read_bytes()


def test_plain_dump_offsets_and_ranges(trail, capsys):
    buf = trail.read_bytes()
    lines = plain_dump(buf)
    assert lines[0].startswith(f"{0:>10}  46 00 {buf[2]:02X} {buf[3]:02X} 30 00 ")
    ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in buf[:16])
    assert lines[0].endswith(f" 30 00 00 08 47 47 0D 0A  |{ascii_}|")
    assert lines[1].startswith(f"{16:>10}  ")
    assert len(lines) == (len(buf) + 15) // 16
    insert = next(r for r in raw_records(trail) if r.io_type == OpType.INSERT)
    status, out, _ = dump(capsys, str(trail), "--from", str(insert.rba), "--count", "1")
    out_lines = out.splitlines()
    assert status == 0 and out_lines[0].startswith(
        f"{insert.rba:>10}  47 01 00 E0 48 00 00 2F  45 04 00 41 00 6E 05 FF  |G...H../E..A.n..|")
    assert len(out_lines) == 14  # 224 bytes


def test_bad_arguments_are_messages(trail, tmp_path, capsys):
    status, _, err = dump(capsys, str(tmp_path / "missing"), "--annotate")
    assert status == 1 and "cannot read trail file" in err and "Traceback" not in err
    status, _, err = dump(capsys, str(trail), "--annotate", "--from", "5")
    assert status == 1 and "inside the file header" in err
    status, _, err = dump(capsys, str(trail), "--from", "99999999")
    assert status == 1 and "outside the file" in err


@pytest.mark.parametrize(("release", "order"), [("21.1", "little"), ("19.1", "big")])
def test_12c_file_annotated_record_by_record_and_damage_skipped(tmp_path, capsys, release,
                                                                order):
    """``trail dump --annotate`` on a 12c+ file: the file header field by field, each record
    named with its header fields and shown whole, every byte accounted for; a damaged record
    is reported and the dump goes on at the next good one."""
    from trailgate.sample import COURSE, STUDENT, seed_transactions
    from trailgate.trail import TrailWriter
    from trailgate.trail.release import parse_release
    from trailgate.trail.release12 import parse_record

    tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
    with TrailWriter(tmp_path / "aa", fsync=False, format=parse_release(release, order)) as w:
        for txn in seed_transactions():
            w.write_transaction(txn, tables)
    path = tmp_path / "aa000000000"
    data = path.read_bytes()
    status, out, _ = dump(capsys, str(path), "--annotate")
    assert status == 0
    assert bytes_of(out.splitlines()) == data
    assert "# CompatibilityLevel = 7" in out
    assert "# A 12c+ record layout (CompatibilityLevel above 3)" in out
    headers = [line for line in out.splitlines() if line.startswith("# Record at RBA")]
    rbas = [int(line.split()[4].rstrip(":")) for line in headers]
    assert len(rbas) >= 4
    first_row = next(line for line in headers if ": Insert TDR index" in line)
    assert f"({order}-endian" in first_row and "TransInd" in first_row
    assert any(": Metadata" in line for line in headers)  # the DDR and TDRs
    # damage a row record's length: reported by RBA, the next record still annotated
    victim = rbas[headers.index(first_row)]
    view = parse_record(data, victim, len(data))
    broken = bytearray(data)
    broken[victim + 2 : victim + 4] = b"\x00\x00"  # a G length impossible in either order
    bad = tmp_path / "bb000000000"
    bad.write_bytes(bytes(broken))
    status, out, err = dump(capsys, str(bad), "--annotate")
    assert status == 1 and "damaged area" in err
    assert f"# ERROR at RBA {victim}:" in out
    assert f"# Record at RBA {victim + view.length}:" in out
    assert bytes_of(out.splitlines()) == bytes(broken)
