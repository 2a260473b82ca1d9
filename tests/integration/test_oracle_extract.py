"""The Oracle redo dump Extract on Spark: ``trailgate run extract`` over a DUMPDIR.

The oracle for "what the trail must hold" is the capture library run over the same dumps
in one process (``capture_oracle_dumps``), which the unit tests pin to seed 003.  Every test
compares transactions (XID, commit SCN, each change with its ROWID) and, for the batch run,
the bytes of every trail record with the one-shot command's trail.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.capture.oracle import capture_oracle_dumps
from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.errors import SourceError
from trailgate.extract.oracle.group import run_oracle_extract
from trailgate.extract.postgres.group import RunOptions
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import OpType
from trailgate.trail import TrailReader

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"
US03 = ROOT / "src" / "trailgate" / "capture" / "oracle" / "examples" / "us03_dictionary.json"
SEED = ["single_insert", "single_update", "single_delete", "multi_update", "multi_delete",
        "array_insert", "direct_load"]  # log sequences 0x44 … 0x4d, in this order


def _row(key: int, name: str) -> list[bytes | None]:
    return [encode_number(key), name.encode(), b"Sherwood", b"M", b"Manchester",
            b"Chemistry", encode_number(2013), encode_number(9000)]


def write_logs(directory: Path, count: int, *, first_seq: int = 0x60, per_log: int = 30,
               seed: int = 3) -> list[Path]:
    """``count`` consecutive logs' dumps (named in sequence order).  Transactions interleave,
    many span a log switch (changes in one file, commit in a later one) and about one in
    six rolls back; whatever is open after the last log stays open (never emitted)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"thread1_seq{first_seq + i:06d}.dmp" for i in range(count)]
    files = [open(p, "w", encoding="latin-1") for p in paths]  # noqa: SIM115
    try:
        w = DumpWriter(files[0], seq=first_seq, scn=0x200000)
        open_txns: dict[Xid, int] = {}
        sqn, key = 1000, 20_000
        for i in range(count):
            if i:
                w.switch(files[i], first_seq + i)
            for _ in range(per_log):
                if len(open_txns) < 3 or rng.random() < 0.4:
                    xid = Xid(rng.randint(1, 9), rng.randint(0, 40), sqn)
                    sqn += 1
                    open_txns[xid] = 0
                xid = rng.choice(list(open_txns))
                key += 1
                kind = rng.random()
                if kind < 0.5:
                    w.insert(xid, key % 200, _row(key, f"n{key}"))
                elif kind < 0.8:
                    w.update(xid, key % 200, {7: encode_number(9000)},
                             {7: encode_number(key % 7000)}, [(1, encode_number(key - 1))])
                else:
                    w.delete(xid, key % 200, _row(key, f"d{key}"))
                open_txns[xid] += 1
                if open_txns[xid] >= rng.randint(1, 6):
                    w.commit(xid, rollback=rng.random() < 0.17, seconds=rng.randint(0, 2))
                    del open_txns[xid]
        w.end()
    finally:
        for f in files:
            f.close()
    return paths


def make_home(path: Path, dumps: Path, group: str = "ORA1", extra: str = "") -> Home:
    home = Home(path).create()
    home.add_group(GroupInfo(group, "EXTRACT", "DUMPDIR", source_path=str(dumps)))
    home.add_trail(group, TrailInfo("./dirdat/ox", megabytes=1))
    shutil.copy(US03, home.path / "dictionary.json")
    (home.dirprm / f"{group.lower()}.prm").write_text(
        f"EXTRACT {group}\n"
        f"TRANLOGOPTIONS DUMPDIR {dumps}, DICTIONARY ./dictionary.json, ONUNKNOWN STOP\n"
        f"EXTTRAIL ./dirdat/ox\n{extra}TABLE us03.*;\n")
    return home


def expected(files: list[Path]) -> list[tuple]:
    return [(t.xid, t.csn, [_change(c) for c in t.changes])
            for t in capture_oracle_dumps(US03, files)]


def _change(c) -> tuple:
    return (c.op, c.table, c.before, c.after, c.rowid)


def trail_transactions(home: Home) -> list[tuple]:
    reader = TrailReader(home.path / "dirdat" / "ox")
    return [(t.transaction.xid, t.transaction.csn, [_change(c) for c in t.transaction.changes])
            for t in reader.transactions()]


def change_records(trail: Path) -> list[bytes]:
    out = []
    reader = TrailReader(trail)
    for pos, raw in reader.raw_records():
        if raw.io_type != OpType.METADATA:
            with open(reader.trail.file(pos.seqno), "rb") as f:
                f.seek(raw.rba)
                out.append(f.read(raw.length))
    return out


def with_end(src: Path, dst: Path) -> Path:
    """Copy a seed fixture into the dump directory as a complete dump."""
    dst.write_text(src.read_text() + "END OF REDO DUMP\n")
    return dst


# -- batch (--once), in this process's Spark session --------------------------------------
def test_once_parses_in_parallel_and_matches_the_one_shot_command(spark, tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    seed = [with_end(FIXTURES / f"{n}.dmp", dumps / f"thread1_seq{0x44 + i:06d}.dmp")
            for i, n in enumerate(SEED)]
    generated = write_logs(dumps, 3)
    files = seed + generated
    home = make_home(tmp_path / "home", dumps)
    want = expected(files)
    assert any(t[0] == "4.11.854" for t in want) and len(want) > 20
    assert run_oracle_extract(home, "ORA1", RunOptions(once=True), spark=spark) == 0
    assert trail_transactions(home) == want
    # byte for byte what the one-shot command writes for the same dumps
    from trailgate.cli import main

    assert main(["capture", "oracle-dump", "--dictionary", str(US03), "--trail",
                 str(tmp_path / "oneshot" / "ox"), *map(str, files)]) == 0
    assert change_records(home.path / "dirdat" / "ox") == change_records(
        tmp_path / "oneshot" / "ox")
    # the seed's record lengths are in there, in commit order
    lengths = [len(r) for r in change_records(home.path / "dirdat" / "ox")][:15]
    assert lengths == [224, 138, 126, 139, 115, 115, 127, 103, 103, 218, 192, 202, 218, 192,
                       202]
    ck = home.checkpoints.load("ORA1", "EXTRACT")
    assert ck is not None and ck.last_xid == want[-1][0] and ck.last_csn == want[-1][1]
    assert ck.read_position["last_file"] == str(generated[-1])
    assert "assembly" in ck.read_position
    # a second run finds nothing new and writes nothing twice
    assert run_oracle_extract(home, "ORA1", RunOptions(once=True), spark=spark) == 0
    assert trail_transactions(home) == want
    # a new log later: only its transactions are added (including ones that began earlier)
    more = write_logs(tmp_path / "later", 4)[3:]
    shutil.move(str(more[0]), dumps / more[0].name)
    all_files = [*files, dumps / more[0].name]
    assert run_oracle_extract(home, "ORA1", RunOptions(once=True), spark=spark) == 0
    assert trail_transactions(home) == expected(all_files)


def test_malformed_dump_stops_with_file_line_and_rba_and_nothing_partial(spark, tmp_path):
    dumps = tmp_path / "dumps"
    files = write_logs(dumps, 2)
    text = files[1].read_text()
    at = text.index("ktucm redo", len(text) // 2)
    files[1].write_text(text[:at] + "ktucm redo: slt: 0xZZ" + text[at + 20:])
    home = make_home(tmp_path / "home", dumps)
    with pytest.raises(SourceError) as err:
        run_oracle_extract(home, "ORA1", RunOptions(once=True), spark=spark)
    msg = str(err.value)
    assert "thread1_seq000097.dmp, line " in msg and "redo record RBA 0x000061." in msg
    assert "Traceback" not in msg
    assert trail_transactions(home) == []  # the error is found before anything is written
    report = (home.dirrpt / "ORA1.rpt").read_text()
    assert "ABENDING" in report or "Abend" in report


# -- streaming and kill -9: separate `trailgate run extract` processes -------------------
def _start(home: Home, log: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "trailgate.cli", "--home",
                                 str(home.path), "run", "extract", "ORA1", "--trigger", "0.5",
                                 *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the Extract exited ({proc.returncode}) while waiting for "
                                 f"{what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


def _count(home: Home) -> int:
    try:
        return len(trail_transactions(home))
    except (OSError, ValueError):
        return 0


def _scenario(tmp_path: Path, count: int) -> tuple[Home, Path, list[Path]]:
    staging = tmp_path / "staging"
    logs = write_logs(staging, count, per_log=60)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    return make_home(tmp_path / "home", dumps), dumps, logs


def _arrive(path: Path, dumps: Path) -> Path:
    """A finished dump appears in the directory at once (a rename)."""
    return Path(shutil.move(str(path), dumps / path.name))


def test_streaming_run_picks_up_a_new_dump(spark, tmp_path):
    """In this process: the streaming query captures the dumps present, then one that
    appears while it runs (its transactions began in the earlier files)."""
    import threading

    home, dumps, logs = _scenario(tmp_path, 3)
    files = [_arrive(p, dumps) for p in logs[:2]]
    first = expected(files)
    seen: list[list[tuple]] = []

    def third_dump_arrives() -> None:  # once the first batch is in the trail
        deadline = time.monotonic() + 150
        while _count(home) < len(first) and time.monotonic() < deadline:
            time.sleep(0.3)
        seen.append(trail_transactions(home))
        files.append(_arrive(logs[2], dumps))

    helper = threading.Thread(target=third_dump_arrives)
    helper.start()
    try:  # the group runs in this (main) thread: Spark streams start from it
        assert run_oracle_extract(home, "ORA1", RunOptions(max_batches=2, trigger_seconds=0.5),
                                  spark=spark) == 0
    finally:
        helper.join(200)
    assert seen == [first]
    assert trail_transactions(home) == expected(files)
    ck = home.checkpoints.load("ORA1", "EXTRACT")
    assert ck is not None and ck.read_position["last_file"] == str(files[-1])


@pytest.mark.heavy
def test_kill_9_of_run_extract_then_restart_is_exact(spark, tmp_path):
    """``trailgate run extract`` killed with SIGKILL (it and its Spark) mid-run; the next run
    writes each committed transaction exactly once."""
    home, dumps, logs = _scenario(tmp_path, 4)
    log = tmp_path / "extract.log"
    files = [_arrive(p, dumps) for p in logs[:2]]
    first = _start(home, log)
    try:
        _wait(lambda: _count(home) >= len(expected(files)), 240, "the first dumps", first, log)
        files += [_arrive(p, dumps) for p in logs[2:]]
        time.sleep(1.0)  # the kill lands before, during or after the next batch
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    assert run_oracle_extract(home, "ORA1", RunOptions(once=True), spark=spark) == 0
    got = trail_transactions(home)
    assert got == expected(files)
    assert len({t[0] for t in got}) == len(got)


@pytest.mark.heavy
def test_two_streaming_processes_with_kill_9_between_are_exact(tmp_path):
    """Streaming ``trailgate run extract`` processes: dumps arrive while it runs, kill -9,
    more dumps, a second streaming run, a clean stop (SIGTERM)."""
    home, dumps, logs = _scenario(tmp_path, 5)
    log = tmp_path / "extract.log"

    def want(n: int) -> list[tuple]:
        return expected([dumps / p.name for p in logs[:n]])

    _arrive(logs[0], dumps)
    _arrive(logs[1], dumps)
    first = _start(home, log)
    try:
        _wait(lambda: _count(home) >= len(want(2)), 240, "the first two dumps", first, log)
        assert trail_transactions(home) == want(2)
        _arrive(logs[2], dumps)  # picked up while running
        _wait(lambda: _count(home) >= len(want(3)), 120, "the third dump", first, log)
        assert trail_transactions(home) == want(3)
        _arrive(logs[3], dumps)
        time.sleep(1.0)  # kill -9 whenever it lands: before, during or after the batch
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    _arrive(logs[4], dumps)
    second = _start(home, log)
    try:
        _wait(lambda: _count(home) >= len(want(5)), 240, "every dump after the restart",
              second, log)
        os.killpg(second.pid, signal.SIGTERM)  # Ctrl-C: a clean stop
        assert second.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
    got = trail_transactions(home)
    assert got == want(5)  # each committed transaction once, in commit order
    assert len({t[0] for t in got}) == len(got)
    assert "stopped normally" in (home.path / "ggserr.log").read_text()
    assert "SIGTERM" in (home.dirrpt / "ORA1.rpt").read_text()
