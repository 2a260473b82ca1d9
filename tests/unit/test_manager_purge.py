"""PURGEOLDEXTRACTS on real trail files and real checkpoint files: exactly up to the slowest
reader of any home, MINKEEP rules as minimums, nothing when a reader's position is unknown."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from trailgate.checkpoint import Checkpoint
from trailgate.ggsci.shell import Shell
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.manager.params import PurgeRule
from trailgate.manager.purge import matching_trails, purge_trail
from trailgate.manager.readers import register_reader, unregister_reader
from trailgate.model import TrailPosition
from trailgate.trail.naming import TrailName

FILES = 10


def _setup(tmp_path: Path) -> tuple[Home, Home, TrailName]:
    a = Home(tmp_path / "a").create()
    b = Home(tmp_path / "b").create()
    trail = TrailName(a.dirdat / "aa")
    for seqno in range(FILES):
        trail.file(seqno).write_bytes(f"file {seqno}".encode() * 100)
    a.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG", trails=[TrailInfo("./dirdat/aa")]))
    ext = Checkpoint("EXT1", "EXTRACT", read_position={"lsn": 1})
    ext.write_position = TrailPosition(FILES - 1, 100)
    a.checkpoints.save(ext)
    _reader(a, "REP1", "./dirdat/aa", 5)
    _reader(b, "REP2", str(a.dirdat / "aa"), 3)  # another home, same trail
    register_reader(b, str(a.dirdat / "aa"), "REP2", "REPLICAT")
    return a, b, trail


def _reader(home: Home, name: str, trail: str, seqno: int | None) -> None:
    home.add_group(GroupInfo(name, "REPLICAT", "EXTTRAIL", trail, begin={"seqno": 0, "rba": 0}))
    if seqno is not None:
        home.checkpoints.save(Checkpoint(name, "REPLICAT",
                                         read_position={"seqno": seqno, "rba": 10}))


def _left(trail: TrailName) -> list[int]:
    return trail.sequence_numbers()


def _purge(home: Home, trail: TrailName, rule: PurgeRule) -> tuple[list[str], object]:
    events: list[str] = []
    outcome = purge_trail(home, trail, rule, lambda lvl, code, msg: events.append(
        f"{lvl} {code} {msg}"))
    return events, outcome


def test_purges_exactly_up_to_the_slowest_reader_of_any_home(tmp_path: Path) -> None:
    a, _b, trail = _setup(tmp_path)
    rule = PurgeRule("./dirdat/*")
    assert [str(t) for t in matching_trails(a, rule)] == [str(trail)]
    events, outcome = _purge(a, trail, rule)
    assert _left(trail) == list(range(3, FILES))  # REP2 (home b) reads file 3
    assert len(events) == 3 and all("OGG-00957" in e and "Purged old extract file" in e
                                    and "USECHECKPOINTS" in e for e in events)
    assert {u.group: u.needs for u in outcome.users} == {"EXT1": 9, "REP1": 5, "REP2": 3}


def test_a_replay_before_the_checkpoint_keeps_its_file(tmp_path: Path) -> None:
    a, b, trail = _setup(tmp_path)
    offsets = b.spark_checkpoint_dir("REP2") / "spark" / "offsets"
    offsets.mkdir(parents=True)
    for batch, seqno in ((7, 1), (8, 4)):  # batch 8 (uncommitted) starts at 1:0
        (offsets / str(batch)).write_text(f'v1\n{{}}\n{{"seqno":{seqno},"rba":0}}\n')
    _purge(a, trail, PurgeRule("./dirdat/aa"))
    assert _left(trail) == list(range(1, FILES))


def test_a_reader_stopped_longer_than_minkeephours_keeps_its_files(tmp_path: Path) -> None:
    a, _b, trail = _setup(tmp_path)
    old = time.time() - 5 * 3600
    for seqno in range(FILES):
        os.utime(trail.file(seqno), (old, old))
    os.utime(trail.file(1), None)  # modified just now: MINKEEPHOURS keeps it
    _purge(a, trail, PurgeRule("./dirdat/*", min_keep_seconds=3600))
    assert _left(trail) == [1, *range(3, FILES)]


def test_minkeepfiles_keeps_the_newest_files(tmp_path: Path) -> None:
    a, _b, trail = _setup(tmp_path)
    _purge(a, trail, PurgeRule("./dirdat/*", min_keep_files=8))
    assert _left(trail) == list(range(2, FILES))


def test_nousecheckpoints_purges_by_the_minkeep_rule_alone(tmp_path: Path) -> None:
    a, _b, trail = _setup(tmp_path)
    _purge(a, trail, PurgeRule("./dirdat/*", use_checkpoints=False, min_keep_files=2))
    assert _left(trail) == [8, 9]


def test_nothing_without_readers_or_with_an_unknown_position(tmp_path: Path) -> None:
    a, b, trail = _setup(tmp_path)
    (b.dirchk / "REP2.cpr").write_text("{ not json")
    events, outcome = _purge(a, trail, PurgeRule("./dirdat/*"))
    assert _left(trail) == list(range(FILES)) and not events
    assert "REPLICAT REP2" in outcome.kept_because and "corrupt" in outcome.kept_because
    unregister_reader(b, str(a.dirdat / "aa"), "REP2")
    a.delete_group("REP1")
    _events, outcome = _purge(a, trail, PurgeRule("./dirdat/*"))
    assert _left(trail) == list(range(FILES)) and outcome.kept_because == "no process reads it"


def test_a_reader_that_has_not_run_needs_its_begin_position(tmp_path: Path) -> None:
    a, b, trail = _setup(tmp_path)
    b.checkpoints.delete("REP2", "REPLICAT")
    info = b.group("REP2")
    assert info is not None
    info.begin = {"seqno": 2, "rba": 0}
    b.update_group(info)
    _purge(a, trail, PurgeRule("./dirdat/*"))
    assert _left(trail) == list(range(2, FILES))


def _ggsci(home: Home, script: str) -> str:
    out = io.StringIO()
    shell = Shell(home, out)
    try:
        shell.run_script(script, "test.oby")
    finally:
        shell.close()
    return out.getvalue()


def test_ggsci_registers_another_homes_pump_and_replicat_and_purge_keeps_their_files(
        tmp_path: Path) -> None:
    a = Home(tmp_path / "a").create()
    b = Home(tmp_path / "b").create()
    trail = TrailName(a.dirdat / "aa")
    for seqno in range(FILES):
        trail.file(seqno).write_bytes(b"x" * 100)
    a.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG", trails=[TrailInfo("./dirdat/aa")]))
    ext = Checkpoint("EXT1", "EXTRACT", read_position={"lsn": 1})
    ext.write_position = TrailPosition(FILES - 1, 100)
    a.checkpoints.save(ext)
    shared = str(a.dirdat / "aa")
    out = _ggsci(b, f"ADD EXTRACT pmpb, EXTTRAILSOURCE {shared}\n"
                    f"ADD RMTTRAIL {b.dirdat / 'bb'}, EXTRACT pmpb\n"
                    f"ADD REPLICAT repb, EXTTRAIL {shared}, NODBCHECKPOINT\n")
    assert "REPLICAT added." in out and "WARNING" not in out, out
    registry = json.loads((a.dirdat / "aa.readers.json").read_text())["readers"]
    assert registry == [{"home": str(b.path), "group": "PMPB", "kind": "EXTRACT"},
                        {"home": str(b.path), "group": "REPB", "kind": "REPLICAT"}]

    rule = PurgeRule("./dirdat/*")
    _purge(a, trail, rule)  # neither has run: both need their begin position, file 0
    assert _left(trail) == list(range(FILES))
    pump = Checkpoint("PMPB", "EXTRACT", read_position={"seqno": 6, "rba": 0})
    pump.write_position = TrailPosition(0, 10)
    b.checkpoints.save(pump)
    b.checkpoints.save(Checkpoint("REPB", "REPLICAT", read_position={"seqno": 4, "rba": 0}))
    _events, outcome = _purge(a, trail, rule)
    assert _left(trail) == list(range(4, FILES))
    assert {u.label: u.needs for u in outcome.users if u.role == "READER"} == {
        f"EXTRACT PMPB ({b.path})": 6, f"REPLICAT REPB ({b.path})": 4}

    # DELETE REPLICAT forgets it: the other home's pump alone holds the trail back now
    assert "Deleted REPLICAT REPB." in _ggsci(b, "DELETE REPLICAT repb\n")
    registry = json.loads((a.dirdat / "aa.readers.json").read_text())["readers"]
    assert [e["group"] for e in registry] == ["PMPB"]
    _purge(a, trail, rule)
    assert _left(trail) == list(range(6, FILES))
