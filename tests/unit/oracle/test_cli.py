"""``trailgate capture oracle-dump``: seed 003's dump text through the command into a trail
file, read back and compared byte for byte with the seed's records."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.cli import main
from trailgate.model import OpType, TransInd
from trailgate.sample import STUDENT, seed_transactions
from trailgate.trail import TrailReader
from trailgate.trail.records import encode_change_record

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
US03 = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle" / "examples"
        / "us03_dictionary.json")
SEED_FILES = ["single_insert", "single_update", "single_delete", "multi_update",
              "multi_delete", "array_insert", "direct_load"]
SEED_LENGTHS = [[224], [138], [126], [139, 115, 115], [127, 103, 103], [218, 192, 202],
                [218, 192, 202]]


def run_capture(trail: Path, dumps: list[Path], *extra: str) -> int:
    return main(["capture", "oracle-dump", "--dictionary", str(US03), "--trail", str(trail),
                 *extra, *map(str, dumps)])


def summary(out: str, label: str) -> int:
    """A number from the command's summary table."""
    m = re.search(rf"^{re.escape(label)}\s+([\d,]+)$", out, re.M)
    assert m, f"{label!r} not in {out!r}"
    return int(m[1].replace(",", ""))


def trail_records(trail: Path) -> list[tuple[object, bytes]]:
    """(RawRecord, its bytes) of every change record in the trail (table definitions left
    out)."""
    out = []
    reader = TrailReader(trail)
    for pos, raw in reader.raw_records():
        if raw.io_type == OpType.METADATA:
            continue
        path = reader.trail.file(pos.seqno)
        with open(path, "rb") as f:
            f.seek(raw.rba)
            out.append((raw, f.read(raw.length)))
    return out


def transactions(records):
    """Group (raw, bytes) by transaction using the TransInd byte."""
    txns, cur = [], []
    for raw, data in records:
        cur.append((raw, data))
        if raw.trans_ind in (TransInd.LAST, TransInd.ONLY):
            txns.append(cur)
            cur = []
    assert not cur, "trail ends inside a transaction"
    return txns


def subrecords(record: bytes) -> dict[str, bytes]:
    out, pos, end = {}, 4, len(record) - 4
    while pos < end:
        type_, _flag, length = struct.unpack_from(">BBH", record, pos)
        out[chr(type_)] = record[pos + 4 : pos + 4 + length]
        pos += 4 + length
    return out


def expected_records(txn) -> list[bytes]:
    out = []
    for i, change in enumerate(txn.changes):
        first, last = i == 0, i == len(txn.changes) - 1
        ind = TransInd.ONLY if first and last else TransInd.FIRST if first else (
            TransInd.LAST if last else TransInd.MIDDLE)
        out.append(encode_change_record(change, STUDENT, ind, txn.csn if first else None,
                                        txn.xid if first else None))
    return out


def test_seed003_examples_through_the_command(tmp_path, capsys):
    trail = tmp_path / "dirdat" / "ox"
    # any order on the command line: files are ordered by log sequence
    assert run_capture(trail, [FIXTURES / f"{n}.dmp" for n in reversed(SEED_FILES)]) == 0
    out = capsys.readouterr().out
    assert summary(out, "transactions written") == 7 and summary(out, "dump files read") == 7
    assert summary(out, "redo records") == 33
    assert summary(out, "US03.STUDENT  Insert") == 7
    assert summary(out, "US03.STUDENT  FieldComp") == 4
    got = transactions(trail_records(trail))
    assert [[len(d) for _, d in t] for t in got] == SEED_LENGTHS
    seed = seed_transactions()
    for txn_records, seed_txn in zip(got, seed, strict=True):
        for (_raw, data), want in zip(txn_records, expected_records(seed_txn), strict=True):
            mine, theirs = subrecords(data), subrecords(want)
            assert mine["D"] == theirs["D"]  # the row values, as the seed prints them
            if seed_txn.xid != "4.21.865":  # the direct load's ROWIDs are its block's
                assert mine["T"] == theirs["T"]  # ROWID, commit SCN, XID
        first = subrecords(txn_records[0][1])["T"]
        assert str(seed_txn.csn).encode() in first and seed_txn.xid.encode() in first
    # seed 003's insert: the D area exactly as its TrailAnalyzer output shows it
    assert subrecords(got[0][0][1])["D"] == bytes.fromhex(
        "00000008000000043130313100 01000A000000064A6F7264616E"
        "0002000C000000085368657277 6F6F6400030005000000014D"
        "0004000E0000000A4D616E6368657374657200 05000D00000009436865 6D6973747279"
        "000600080000000432303133 00070008000000043930 3030".replace(" ", ""))
    assert got[0][0][0].rowid == "AAASrPAAEAAAAQ2AAK"
    assert [r.rowid for r, _ in got[6]] == ["AAASrPAAEAAAARgAAA", "AAASrPAAEAAAARgAAB",
                                            "AAASrPAAEAAAARgAAC"]


def test_records_match_the_codec_for_the_captured_changes(tmp_path, capsys):
    """Every byte of every record equals encode_change_record of the captured change."""
    from trailgate.capture.oracle import capture_oracle_dumps

    trail = tmp_path / "ox"
    dumps = [FIXTURES / f"{n}.dmp" for n in SEED_FILES]
    assert run_capture(trail, dumps) == 0
    want = [r for t in capture_oracle_dumps(US03, dumps) for r in expected_records(t)]
    assert [d for _, d in trail_records(trail)] == want


def _row(key: int, name: bytes) -> list[bytes | None]:
    return [encode_number(key), name, b"Sherwood", b"M", b"Manchester", b"Chemistry",
            encode_number(2013), encode_number(9000)]


def write_interleaved(directory: Path) -> list[Path]:
    """Two logs: A and B interleave in log 0x50; B rolls back; C starts in 0x50 and commits
    in 0x51; A commits in 0x51 after C."""
    a, b, c = Xid(4, 1, 100), Xid(5, 2, 200), Xid(6, 3, 300)
    first, second = directory / "log_0x50.dmp", directory / "log_0x51.dmp"
    with open(first, "w") as f1, open(second, "w") as f2:
        w = DumpWriter(f1, seq=0x50)
        w.insert(a, 1, _row(1, b"Ann"))
        w.insert(b, 2, _row(2, b"Bob"))
        w.insert(c, 3, _row(3, b"Cat"))
        w.update(a, 1, {7: encode_number(9000)}, {7: encode_number(7000)},
                 [(1, encode_number(1))])
        w.insert(b, 4, _row(4, b"Bea"))
        w.commit(b, rollback=True)
        w.switch(f2, 0x51)
        w.delete(c, 3, _row(3, b"Cat"))
        w.commit(c)
        w.commit(a)
        w.end()
    return [second, first]


def test_interleaved_rollback_and_commit_in_a_later_file(tmp_path, capsys):
    trail = tmp_path / "ox"
    assert run_capture(trail, write_interleaved(tmp_path)) == 0
    out = capsys.readouterr().out
    assert summary(out, "transactions written") == 2
    assert summary(out, "transactions rolled back") == 1
    assert summary(out, "transactions open at end") == 0
    got = transactions(trail_records(trail))
    assert [[r.op for r, _ in t] for t in got] == [[OpType.INSERT, OpType.DELETE],
                                                   [OpType.INSERT, OpType.FIELD_COMP]]
    assert [t[0][0].xid for t in got] == ["6.3.300", "4.1.100"]
    assert got[0][0][0].csn < got[1][0][0].csn


def test_malformed_dump_is_an_error_and_writes_nothing(tmp_path, capsys):
    dumps = write_interleaved(tmp_path)
    text = dumps[0].read_text()  # log 0x51: C's delete, C's commit, A's commit
    cut = text.index("ktucm redo", text.index("ktucm redo") + 1)  # A's commit
    dumps[0].write_text(text[:cut] + "ktucm redo: slt: 0x0001 sqn: 0x00000064 srt: 0 sta: 9 "
                        "flg: 0xZZ\n")
    trail = tmp_path / "dirdat" / "ox"
    assert run_capture(trail, dumps) == 1
    err = capsys.readouterr().err
    assert "log_0x51.dmp, line " in err and "redo record RBA 0x000051." in err
    assert "flg:" in err and "Nothing was written" in err
    assert "Traceback" not in err
    assert not list((tmp_path / "dirdat").glob("ox*"))  # not even C, which committed


def test_earlier_trail_files_are_kept_on_error(tmp_path, capsys):
    trail = tmp_path / "ox"
    assert run_capture(trail, [FIXTURES / "single_insert.dmp"]) == 0
    before = sorted(p.name for p in tmp_path.glob("ox*"))
    bad = tmp_path / "bad.dmp"
    bad.write_text((FIXTURES / "single_update.dmp").read_text().replace("OP:11.5", "OP:11.99"))
    assert run_capture(trail, [bad]) == 1
    assert "operation 11.99" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.glob("ox*")) == before


@pytest.mark.parametrize("policy", ["stop", "skip"])
def test_unknown_object_policy(tmp_path, capsys, policy):
    trail = tmp_path / "ox"
    dumps = [FIXTURES / "seed000_pk_update.dmp"]  # US01 objects: not in the US03 dictionary
    rc = run_capture(trail, dumps, "--on-unknown", policy)
    captured = capsys.readouterr()
    if policy == "stop":
        assert rc == 1 and "--on-unknown skip" in captured.err
    else:
        assert rc == 0 and summary(captured.out, "transactions written") == 0
        assert "1 warning(s)" in captured.out and "not in the dictionary" in captured.out


def test_missing_dump_file(tmp_path, capsys):
    assert run_capture(tmp_path / "ox", [tmp_path / "nope.dmp"]) == 1
    assert "nope.dmp: no such dump file" in capsys.readouterr().err
