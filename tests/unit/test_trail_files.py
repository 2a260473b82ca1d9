"""Trail files: naming, rollover, append-mode restart, tailing a live trail, crashed writers,
compatibility refusal and the header fields filled at completion."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from trailgate.errors import TrailFormatError
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.sample import STUDENT, seed_transactions
from trailgate.trail import TrailName, TrailReader, TrailWriter, parse_trail_file, read_header

TABLES = {STUDENT.qualified_name: STUDENT}


def _txn(i: int, rows: int = 1, pad: int = 0) -> Transaction:
    return Transaction(f"1.{i}.7", 1000 + i, [
        Change(OpType.INSERT, "US03.STUDENT",
               after={0: str(i * 100 + r).encode(), 1: b"x" * pad, 7: b"9000"})
        for r in range(rows)
    ])


def test_names_nine_digits_and_reads_six(tmp_path: Path):
    assert parse_trail_file("aa000000012") == ("aa", 12)
    assert parse_trail_file("ex000016") == ("ex", 16)
    assert parse_trail_file("aa12") is None
    legacy = tmp_path / "ex000016"
    with TrailWriter(tmp_path / "zz", fsync=False) as w:
        w.write_transaction(_txn(1), TABLES)
    os.rename(tmp_path / "zz000000000", legacy)
    reader = TrailReader(tmp_path / "ex")
    assert [rt.transaction.xid for rt in reader.transactions()] == ["1.1.7"]
    assert TrailName(tmp_path / "ex").file(16) == legacy
    with pytest.raises(ValueError, match="two-character prefix"):
        TrailName(tmp_path / "abc")


def test_rollover_at_megabytes_and_header_completion(tmp_path: Path):
    with TrailWriter(tmp_path / "aa", megabytes=1, fsync=False) as w:
        for i in range(60):
            w.write_transaction(_txn(i, rows=5, pad=4000), TABLES)
    seqs = TrailName(tmp_path / "aa").sequence_numbers()
    assert len(seqs) >= 2
    for seq in seqs:
        path = tmp_path / f"aa{seq:09d}"
        header = read_header(path)
        assert header.seqno == seq
        assert header.file_size == path.stat().st_size <= 1024 * 1024
        assert header.last_csn is not None and header.first_csn <= header.last_csn
    # each file carries the table definition before its first change
    for seq in seqs:
        reader = TrailReader(tmp_path / f"aa{seq:09d}", single_file=True)
        first = next(reader.records())
        assert first.table_def is not None and first.change is None
    assert sum(1 for _ in TrailReader(tmp_path / "aa").transactions()) == 60


def test_restarted_writer_begins_a_new_file(tmp_path: Path):
    for run in range(3):
        w = TrailWriter(tmp_path / "aa", fsync=False)
        w.write_transaction(_txn(run), TABLES)
        w.flush()
        w.close()
    assert TrailName(tmp_path / "aa").sequence_numbers() == [0, 1, 2]


def test_writer_reports_positions_after_each_transaction(tmp_path: Path):
    positions = []
    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        for txn in seed_transactions():
            positions.append(w.write_transaction(txn, TABLES))
    reader = TrailReader(tmp_path / "aa")
    ends = [rt.end for rt in reader.transactions()]
    assert ends == positions
    # reading from a position resumes exactly after that transaction
    resumed = TrailReader(tmp_path / "aa", start=positions[2], tables=reader.tables)
    assert [rt.transaction.xid for rt in resumed.transactions()] == [
        t.xid for t in seed_transactions()[3:]]


def test_partial_record_of_crashed_writer_and_restart(tmp_path: Path):
    w = TrailWriter(tmp_path / "aa", fsync=False)
    w.write_transaction(_txn(1), TABLES)
    w.begin_transaction("9.9.9", 5000)
    for _r in range(3):
        w.add_change(_txn(2).changes[0], STUDENT)
    w.flush()
    path = w.current_file
    assert path is not None
    # the crash: the last record is cut in half, the transaction never committed
    size = path.stat().st_size
    os.truncate(path, size - 30)
    reader = TrailReader(tmp_path / "aa")
    assert [rt.transaction.xid for rt in reader.transactions()] == ["1.1.7"]
    # restart: a new file; readers skip the cut record and the incomplete transaction
    w2 = TrailWriter(tmp_path / "aa", fsync=False)
    w2.write_transaction(_txn(3), TABLES)
    w2.close()
    reader = TrailReader(tmp_path / "aa")
    assert [rt.transaction.xid for rt in reader.transactions()] == ["1.1.7", "1.3.7"]


def test_follow_tails_a_live_trail(tmp_path: Path):
    stop = threading.Event()
    got: list[str] = []
    with TrailWriter(tmp_path / "aa", megabytes=1, fsync=False) as w:
        w.write_transaction(_txn(0), TABLES)
        w.flush()
        reader = TrailReader(tmp_path / "aa", follow=True, poll_interval=0.02,
                             should_stop=stop.is_set)

        def consume() -> None:
            for rt in reader.transactions():
                got.append(rt.transaction.xid)
                if len(got) == 40:
                    stop.set()

        thread = threading.Thread(target=consume)
        thread.start()
        for i in range(1, 40):
            w.write_transaction(_txn(i, rows=3, pad=20000), TABLES)
            w.flush()
            time.sleep(0.002)
    thread.join(timeout=20)
    stop.set()
    assert not thread.is_alive()
    assert got == [f"1.{i}.7" for i in range(40)]
    assert len(TrailName(tmp_path / "aa").sequence_numbers()) > 1


def test_newer_compatibility_level_is_refused(tmp_path: Path):
    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        w.write_transaction(_txn(1), TABLES)
    path = TrailName(tmp_path / "aa").file(0)
    data = bytearray(path.read_bytes())
    at = data.index(bytes.fromhex("31 00 00 02 00 03"))  # TrailInfo's CompatibilityLevel 3
    data[at + 4 : at + 6] = (9).to_bytes(2, "big")
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=r"CompatibilityLevel 9 is newer"):
        list(TrailReader(tmp_path / "aa").records())
    data[at + 4 : at + 6] = (3).to_bytes(2, "big")
    path.write_bytes(bytes(data))
    assert len(list(TrailReader(tmp_path / "aa").transactions())) == 1


def test_unknown_header_tokens_and_subrecords_are_skipped(tmp_path: Path):
    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        w.write_transaction(_txn(1), TABLES)
    path = tmp_path / "aa000000000"
    data = bytearray(path.read_bytes())
    # add an unknown token (type 0x3F) to the ContinuityInfo group, fixing up lengths
    flen = int.from_bytes(data[2:4], "big")
    group_at = data.rfind(b"\x34\x00\x00\x08", 0, flen)
    extra = b"\x31\x00\x00\x02\xab\xcd"
    data[group_at + 2 : group_at + 4] = (8 + len(extra)).to_bytes(2, "big")
    data[group_at + 12 : group_at + 12] = extra
    new_len = flen + len(extra)
    data[2:4] = new_len.to_bytes(2, "big")
    data[new_len - 2 : new_len] = new_len.to_bytes(2, "big")
    path.write_bytes(bytes(data))
    assert [rt.transaction.xid for rt in TrailReader(tmp_path / "aa").transactions()] == [
        "1.1.7"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b, at: b.__setitem__(at, 0x58), "where a G record"),
        (lambda b, at: b.__setitem__(slice(at + 2, at + 4), b"\x00\x05"), "impossible record"),
        (lambda b, at: b.__setitem__(-1, 0x00), "Z trailer"),
        (lambda b, at: b.__setitem__(slice(at + 6, at + 8), b"\x7f\x00"), "does not fit"),
    ],
)
def test_damaged_records_name_file_and_rba(tmp_path: Path, damage, message):
    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        pos = w.write_transaction(_txn(1), TABLES)
        w.write_transaction(_txn(2), TABLES)
    path = tmp_path / "aa000000000"
    data = bytearray(path.read_bytes())
    damage(data, pos.rba)
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=message) as info:
        list(TrailReader(tmp_path / "aa").records())
    assert str(path) in str(info.value) and f"RBA {pos.rba}" in str(info.value)


def test_scan_for_header_resynchronises(tmp_path: Path):
    from trailgate.trail import find_next_record

    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        p1 = w.write_transaction(_txn(1), TABLES)
        p2 = w.write_transaction(_txn(2), TABLES)
    data = bytearray((tmp_path / "aa000000000").read_bytes())
    data[p1.rba + 10] ^= 0xFF  # damage inside the second transaction's record
    assert find_next_record(bytes(data), p1.rba + 1) == p2.rba or find_next_record(
        bytes(data), p1.rba + 1) is None
    assert find_next_record(bytes(data), 0) is not None
    start = TrailPosition(0, p2.rba)
    assert TrailReader(tmp_path / "aa", start=start).position == start


def test_read_file_header_reads_only_the_header_and_says_what_decode_says(tmp_path: Path):
    """The header read from an open file (its own bytes only) is the one decoded from the
    file's first 64 KB, the file left just after it; a file cut inside its header, or not a
    trail, raises the same ValueError as decoding its first 64 KB does."""
    import io
    import re

    from trailgate.trail.header import decode_file_header, read_file_header

    with TrailWriter(tmp_path / "hh", fsync=False) as w:
        for i in range(50):
            w.write_transaction(_txn(i, pad=200), TABLES)
    data = (tmp_path / "hh000000000").read_bytes()
    want = decode_file_header(data[:0xFFFF])
    f = io.BytesIO(data)
    assert read_file_header(f) == want and f.tell() == want.length < len(data)
    for cut in [b"", data[:3], data[:4], data[:20], data[:want.length - 1], b"Q" + data[1:]]:
        with pytest.raises(ValueError) as expected:
            decode_file_header(cut[:0xFFFF])
        with pytest.raises(ValueError, match=re.escape(str(expected.value))):
            read_file_header(io.BytesIO(cut))
