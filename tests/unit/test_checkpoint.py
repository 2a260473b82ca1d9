"""Checkpoints: round trip, corruption reported clearly, and crash-safe replacement."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trailgate.checkpoint import (
    Checkpoint,
    CheckpointStore,
    TableStats,
    atomic_write_bytes,
    load_checkpoint,
    save_checkpoint,
)
from trailgate.errors import ConfigError
from trailgate.model import TrailPosition


def _sample() -> Checkpoint:
    cp = Checkpoint("EXT1", "EXTRACT",
                    read_position={"scn": 1234567, "file": "redo01.trc", "line": 88},
                    recovery_position={"scn": 1234000, "file": "redo01.trc", "line": 12},
                    write_trail="./dirdat/aa", write_position=TrailPosition(3, 40960),
                    last_csn=1234560, last_xid="0x0005.01a.00000c2b")
    cp.count("HR.EMP", "insert", 5)
    cp.count("HR.EMP", "update")
    cp.count("HR.DEPT", "ddl")
    cp.count("HR.DEPT", "discard", 2)
    return cp


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    cp = _sample()
    path = tmp_path / "EXT1.cpe"
    save_checkpoint(path, cp)
    back = load_checkpoint(path)
    assert back == cp
    assert back.write_position == TrailPosition(3, 40960)
    assert back.stats["HR.EMP"] == TableStats(inserts=5, updates=1)
    assert back.stats["HR.EMP"].total == 6
    assert back.stats["HR.DEPT"].total == 1  # discards are not operations done


def test_missing_checkpoint_is_none(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path / "NOPE.cpe") is None


def test_read_lsn_is_the_read_position_as_a_number() -> None:
    assert Checkpoint("E", "EXTRACT").read_lsn == 0
    assert Checkpoint("E", "EXTRACT", read_position={"lsn": None}).read_lsn == 0
    assert Checkpoint("E", "EXTRACT", read_position={"lsn": 4711}).read_lsn == 4711
    assert Checkpoint("E", "EXTRACT", read_position={"lsn": "4711"}).read_lsn == 4711


def test_count_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown statistics kind"):
        Checkpoint("R", "REPLICAT").count("A.B", "upsert")


def test_reset_stats_clears_and_restamps() -> None:
    cp = _sample()
    before = cp.stats_since
    time.sleep(0.001)
    cp.reset_stats()
    assert cp.stats == {}
    assert cp.stats_since > before


@pytest.mark.parametrize("content", [
    b"", b"{", b"[]", b"\xff\xfe", b'{"version": 99}',
    b'{"version": 1, "group": "EXT1"}',
])
def test_corrupt_checkpoint_names_file_and_recovery(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "EXT1.cpe"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert str(path) in message
    assert "corrupt" in message
    assert "ALTER EXTRACT EXT1" in message and "delete it" in message


def test_store_paths_follow_goldengate_names(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    assert store.path("ext1", "EXTRACT").name == "EXT1.cpe"
    assert store.path("rep1", "replicat").name == "REP1.cpr"
    with pytest.raises(ValueError):
        store.path("x", "PUMP")


def test_store_save_load_delete(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "dirchk")
    cp = Checkpoint("REP1", "REPLICAT", read_position={"seqno": 2, "rba": 1500})
    store.save(cp)
    assert store.load("rep1", "REPLICAT") == cp
    assert store.load("rep1", "EXTRACT") is None
    assert store.delete("REP1", "REPLICAT") is True
    assert store.delete("REP1", "REPLICAT") is False
    assert store.load("REP1", "REPLICAT") is None


def test_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "EXT1.cpe"
    for i in range(5):
        cp = _sample()
        cp.read_position["line"] = i
        save_checkpoint(path, cp)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["EXT1.cpe"]
    loaded = load_checkpoint(path)
    assert loaded is not None and loaded.read_position["line"] == 4


def test_failed_write_keeps_old_file_and_removes_temp(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    atomic_write_bytes(path, b"old")

    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


_DIE_BEFORE_RENAME = r"""
import os, signal, sys, tempfile
from pathlib import Path
target = Path(sys.argv[1])
fd, tmp = tempfile.mkstemp(prefix=".tmp-" + target.name + ".", dir=target.parent)
os.write(fd, b'{"version": 1, "group": "EXT1", "ki')  # half a checkpoint
os.fsync(fd)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_kill_between_temp_write_and_rename_keeps_old_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "EXT1.cpe"
    cp = _sample()
    save_checkpoint(path, cp)
    proc = subprocess.run([sys.executable, "-c", _DIE_BEFORE_RENAME, str(path)], check=False)
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p for p in tmp_path.iterdir() if p.name != "EXT1.cpe"]
    assert len(leftovers) == 1  # the half-written temp file is there...
    assert load_checkpoint(path) == cp  # ...and the checkpoint is untouched
    removed = CheckpointStore(tmp_path).clean_temporaries()
    assert removed == leftovers
    assert [p.name for p in tmp_path.iterdir()] == ["EXT1.cpe"]


_WRITE_FOREVER = r"""
import sys
from trailgate.checkpoint import Checkpoint, save_checkpoint
path = sys.argv[1]
i = 0
print("ready", flush=True)
while True:
    i += 1
    cp = Checkpoint("EXT1", "EXTRACT", read_position={"lsn": i, "pad": "x" * (i % 5000)})
    cp.count("PUBLIC.T", "insert", i)
    save_checkpoint(path, cp)
"""


def test_kill_9_during_continuous_writes_never_corrupts(tmp_path: Path) -> None:
    path = tmp_path / "EXT1.cpe"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    first = Checkpoint("EXT1", "EXTRACT", read_position={"lsn": 0, "pad": ""})
    first.count("PUBLIC.T", "insert", 0)
    save_checkpoint(path, first)
    last_seen = 0
    for delay in (0.05, 0.11, 0.17, 0.23, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", _WRITE_FOREVER, str(path)],
                                stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cp = load_checkpoint(path)  # must never raise
        assert cp is not None
        n = cp.read_position["lsn"]
        assert cp.read_position["pad"] == "x" * (n % 5000)
        assert cp.stats["PUBLIC.T"].inserts == n
        last_seen = max(last_seen, n)
    assert last_seen > 0  # the writer did run
    json.loads(path.read_text())  # and it is plain JSON a person can read
