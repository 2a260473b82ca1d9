"""A record length damaged in the middle of a trail is an error naming file and RBA, not a
torn tail: the reader (Python framing), the boundary scan (C framing first, the Python
reader after it) and a tailing reader all stop with it; a record genuinely cut by a crashed
writer is still read past."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from trailgate.errors import TrailFormatError
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.sample import STUDENT
from trailgate.spark import trail_offsets
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail import TrailName, TrailReader, TrailWriter
from trailgate.trail.cut import cut_record_problem
from trailgate.trail.release import parse_release

TABLES = {STUDENT.qualified_name: STUDENT}


def _txn(i: int) -> Transaction:
    return Transaction(f"1.{i}.7", 1000 + i, [
        Change(OpType.INSERT, "US03.STUDENT", after={0: str(i).encode(), 1: b"x" * 40,
                                                      7: b"9000"})])


def _write(tmp_path: Path, files: int = 1, **kwargs: object) -> list[Path]:
    for f in range(files):
        with TrailWriter(tmp_path / "aa", fsync=False, **kwargs) as w:  # type: ignore[arg-type]
            for i in range(10):
                w.write_transaction(_txn(f * 10 + i), TABLES)
    name = TrailName(tmp_path / "aa")
    return [name.file(s) for s in name.sequence_numbers()]


def _damage(path: Path, nth: int, order: str = "big") -> int:
    """Set the length field of the file's ``nth`` record far past the file's end."""
    rbas = [pos.rba for pos, _ in TrailReader(path, single_file=True).raw_records()]
    rba = rbas[nth]
    with open(path, "r+b") as f:
        f.seek(rba + 2)
        f.write((0xFFF0).to_bytes(2, order))
    return rba


def _read_all(trail: Path, **kwargs: object) -> list[str]:
    return [rt.transaction.xid for rt in TrailReader(trail, **kwargs).transactions()]  # type: ignore[arg-type]


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_damaged_length_mid_file_is_an_error(tmp_path: Path, pure: bool,
                                             monkeypatch: pytest.MonkeyPatch):
    if pure:
        monkeypatch.setattr(trail_offsets, "speedups", None)
    path = _write(tmp_path)[0]
    rba = _damage(path, 5)
    with pytest.raises(TrailFormatError, match=f"{path} at RBA {rba}: .*length field is damaged"
                       ".*Logdump"):
        _read_all(tmp_path / "aa")
    # the Spark source's boundary scan and the Replicat's: C framing, then the reader
    with pytest.raises(TrailFormatError, match=f"at RBA {rba}:"):
        scan_boundary(str(tmp_path / "aa"), TrailPosition(0, 0))


def test_damaged_length_before_a_later_file_is_an_error(tmp_path: Path):
    paths = _write(tmp_path, files=2)
    rba = _damage(paths[0], 7)
    with pytest.raises(TrailFormatError, match=f"{paths[0]} at RBA {rba}:"):
        _read_all(tmp_path / "aa")


def test_damaged_last_record_of_a_completed_file_is_an_error(tmp_path: Path):
    paths = _write(tmp_path, files=2)
    rbas = [pos.rba for pos, _ in TrailReader(paths[0], single_file=True).raw_records()]
    with open(paths[0], "r+b") as f:  # the last record: its length and its trailer
        f.seek(rbas[-1] + 2)
        f.write((0xFFF0).to_bytes(2, "big"))
        f.seek(-4, os.SEEK_END)
        f.write(b"\x00\x00\x00\x00")
    with pytest.raises(TrailFormatError, match="completed by its writer"):
        _read_all(tmp_path / "aa")


def test_tailing_reader_stops_on_damage_instead_of_waiting(tmp_path: Path):
    _write(tmp_path)
    path = TrailName(tmp_path / "aa").file(0)
    rba = _damage(path, 3)
    stop = threading.Event()
    timer = threading.Timer(10, stop.set)  # the old reader waited until told to stop
    timer.start()
    try:
        with pytest.raises(TrailFormatError, match=f"at RBA {rba}:"):
            _read_all(tmp_path / "aa", follow=True, poll_interval=0.02,
                      should_stop=stop.is_set)
        assert not stop.is_set()
    finally:
        timer.cancel()


def test_damaged_length_in_a_12c_trail_is_an_error(tmp_path: Path):
    path = _write(tmp_path, format=parse_release("21.1", "little"))[0]
    rba = _damage(path, 6, "little")
    with pytest.raises(TrailFormatError, match=f"at RBA {rba}: .*length field is damaged"):
        _read_all(tmp_path / "aa")


def test_every_beginning_of_a_record_is_a_possible_cut(tmp_path: Path):
    path = _write(tmp_path)[0]
    data = path.read_bytes()
    rbas = [pos.rba for pos, _ in TrailReader(path, single_file=True).raw_records()]
    for rba in rbas[1:4]:
        length = (data[rba + 2] << 8) | data[rba + 3]
        for cut in range(rba + 4, rba + length):
            assert cut_record_problem(data, rba, cut) is None, (rba, cut)
    twelve = _write(tmp_path / "c", format=parse_release("21.1", "little"))[0]
    data = twelve.read_bytes()
    rba = [pos.rba for pos, _ in TrailReader(twelve, single_file=True).raw_records()][2]
    length = int.from_bytes(data[rba + 2 : rba + 4], "little")
    for cut in range(rba + 4, rba + length):
        assert cut_record_problem(data, rba, cut, "little", release12=True) is None


def test_crashed_writers_cut_record_is_still_skipped(tmp_path: Path):
    w = TrailWriter(tmp_path / "aa", fsync=False)
    w.write_transaction(_txn(1), TABLES)
    w.begin_transaction("9.9.9", 5000)
    w.add_change(_txn(2).changes[0], STUDENT)
    w.add_change(_txn(3).changes[0], STUDENT)
    w.flush()
    path = w.current_file
    assert path is not None
    os.truncate(path, path.stat().st_size - 20)
    w2 = TrailWriter(tmp_path / "aa", fsync=False)
    w2.write_transaction(_txn(4), TABLES)
    w2.close()
    assert _read_all(tmp_path / "aa") == ["1.1.7", "1.4.7"]
    assert scan_boundary(str(tmp_path / "aa"), TrailPosition(0, 0))[1] == 2
