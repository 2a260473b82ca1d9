"""LAGREPORT: the Manager's lag events in ggserr.log, from real checkpoint files.

Each group's checkpoint is saved with a read time a known number of seconds before it was
written (its "Lag at Chkpt"); the Manager's statuses and LagMonitor.report then write
OGG-00948 (INFO, above LAGINFO) and OGG-00947 (WARNING, above LAGCRITICAL) through the
home's event log, as GoldenGate words them, and nothing for a group under the thresholds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trailgate.checkpoint import Checkpoint
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.manager.lag import LagMonitor
from trailgate.manager.params import parse_manager_params
from trailgate.manager.status import group_status

#: group -> its lag at checkpoint, in seconds
LAGS = {"EXT1": 5, "PMP1": 45, "REP1": 3725}


def _home(tmp_path: Path, mgr_prm: str) -> Home:
    home = Home(tmp_path / "gg").create()
    home.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG", trails=[TrailInfo("./dirdat/aa")]))
    home.add_group(GroupInfo("PMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                             trails=[TrailInfo("./dirdat/bb", "RMTTRAIL")]))
    home.add_group(GroupInfo("REP1", "REPLICAT", "EXTTRAIL", "./dirdat/bb"))
    home.add_group(GroupInfo("REP2", "REPLICAT", "EXTTRAIL", "./dirdat/bb"))  # never ran
    for name, lag in LAGS.items():
        kind = "REPLICAT" if name.startswith("REP") else "EXTRACT"
        cp = Checkpoint(name, kind, read_position={"seqno": 0, "rba": 0})
        # save() stamps `updated` with now: the read time is `lag` seconds before it
        cp.read_time = (datetime.now(UTC) - timedelta(seconds=lag)).isoformat()
        home.checkpoints.save(cp)
    (home.dirprm / "mgr.prm").write_text(mgr_prm)
    return home


def _report(home: Home) -> list[str]:
    """One LAGREPORT pass, as the Manager makes it; the lag lines it left in ggserr.log."""
    monitor = LagMonitor(home, parse_manager_params(home), home.log_event)
    monitor.report([group_status(home, info) for info in home.groups()])
    if not home.ggserr_log.exists():
        return []
    return [line for line in home.ggserr_log.read_text().splitlines() if "Lag for" in line]


def _event(line: str) -> tuple[str, str, str, int]:
    """(level, code, group, lag in seconds) of one ggserr.log lag line."""
    m = re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(\w+)\s+(OGG-\d{5})\s+(?:trailgate )?"
                     r"Lag for (?:EXTRACT|REPLICAT) (\w+) is (\d\d):(\d\d):(\d\d) "
                     r"\(checkpoint updated 00:00:0\d ago\)\.", line)
    assert m, line
    h, mi, s = (int(x) for x in m.group(4, 5, 6))
    return m[1], m[2], m[3], h * 3600 + mi * 60 + s


def test_info_and_critical_events_cross_their_thresholds(tmp_path: Path) -> None:
    home = _home(tmp_path, "LAGREPORTMINUTES 1\nLAGINFOSECONDS 30\nLAGCRITICALMINUTES 60\n")
    events = [_event(line) for line in _report(home)]
    by_group = {group: (level, code) for level, code, group, _lag in events}
    assert by_group == {"PMP1": ("INFO", "OGG-00948"), "REP1": ("WARNING", "OGG-00947")}
    lags = {group: lag for _level, _code, group, lag in events}
    assert abs(lags["PMP1"] - 45) <= 1 and abs(lags["REP1"] - 3725) <= 1  # 01:02:05
    assert len(events) == 2  # EXT1 is under LAGINFO; REP2 has no checkpoint


def test_nothing_below_the_thresholds_or_without_them(tmp_path: Path) -> None:
    home = _home(tmp_path, "LAGREPORTMINUTES 1\nLAGINFOHOURS 2\nLAGCRITICALHOURS 3\n")
    assert _report(home) == []
    (home.dirprm / "mgr.prm").write_text("LAGREPORTMINUTES 1\n")
    assert _report(home) == []


@pytest.mark.parametrize(("prm", "expected"), [
    # LAGINFO 0: every group with a lag, every time
    ("LAGINFOSECONDS 0\n", {"EXT1": "OGG-00948", "PMP1": "OGG-00948", "REP1": "OGG-00948"}),
    # LAGCRITICAL alone: only what is above it, as a warning
    ("LAGCRITICALSECONDS 40\n", {"PMP1": "OGG-00947", "REP1": "OGG-00947"}),
])
def test_laginfo_zero_and_lagcritical_alone(tmp_path: Path, prm: str,
                                             expected: dict[str, str]) -> None:
    home = _home(tmp_path, "LAGREPORTMINUTES 1\n" + prm)
    assert {group: code for _lvl, code, group, _lag in map(_event, _report(home))} == expected
