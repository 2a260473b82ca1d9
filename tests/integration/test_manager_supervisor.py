"""AUTOSTART and AUTORESTART with real processes that run the real group runtime.

The child is a tiny group: ``GroupProcess`` (lock, pid file, report, abend record) around a
loop, told by ``dirchk/NAME.mode`` to run, to abend for a lost connection (retryable) or
for a data error (not).  kill -9 is real.  No Spark: the e2e test does the same with a
real Replicat.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from manager_support import CHILD

from trailgate.home import GroupInfo, Home
from trailgate.manager.params import parse_manager_params
from trailgate.manager.supervisor import Supervisor
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path / "gg").create()
    for name, kind in (("EXT1", "EXTRACT"), ("REP1", "REPLICAT")):
        home.add_group(GroupInfo(name, kind, "EXTTRAILSOURCE" if kind == "EXTRACT"
                                 else "EXTTRAIL", "./dirdat/aa"))
    (home.dirprm / "mgr.prm").write_text(
        "AUTOSTART ER *\nAUTORESTART ER *, RETRIES 2, WAITSECONDS 0\n")
    yield home
    for name in ("EXT1", "REP1"):
        pid = lifecycle.process_state(home, name).pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _supervisor(home: Home, tmp_path: Path, events: list[str]) -> Supervisor:
    script = tmp_path / "child.py"
    script.write_text(CHILD)

    def command(h: Home, kind: str, name: str) -> list[str]:
        return [sys.executable, str(script), str(h.path), kind, name]

    return Supervisor(home, parse_manager_params(home),
                      lambda lvl, code, msg: events.append(f"{lvl} {code} {msg}"),
                      command=command)


def _until(sup: Supervisor, done: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        sup.tick()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _state(home: Home, name: str) -> lifecycle.ProcessState:
    return lifecycle.process_state(home, name)


def _starts(home: Home, name: str) -> list[str]:
    path = home.dirchk / f"{name}.starts"
    return path.read_text().split() if path.exists() else []


def _kill(home: Home, name: str) -> int:
    pid = _state(home, name).pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    return pid


def test_autostart_and_autorestart(home: Home, tmp_path: Path) -> None:
    events: list[str] = []
    sup = _supervisor(home, tmp_path, events)
    sup.autostart()
    _until(sup, lambda: all(_state(home, n).status is Status.RUNNING for n in ("EXT1", "REP1")),
           "AUTOSTART")
    assert sum("AUTOSTART" in e for e in events) == 2

    # kill -9: restarted, with GoldenGate's events
    old = _kill(home, "REP1")
    _until(sup, lambda: _state(home, "REP1").status is Status.RUNNING
           and _state(home, "REP1").pid != old, "the restart after kill -9")
    assert sup.watch["REP1"].restarts_total == 1
    assert any("OGG-00979 REPLICAT REP1 abended." in e for e in events)
    assert any("OGG-00967 Manager restarting REPLICAT REP1 (retry 1 of 2)." in e
               for e in events)

    # a lost connection is retryable, but only RETRIES times within RESETMINUTES
    (home.dirchk / "EXT1.mode").write_text("lost")
    _kill(home, "EXT1")
    _until(sup, lambda: sup.watch["EXT1"].given_up, "EXT1 to exhaust its retries")
    assert _starts(home, "EXT1") == ["run", "lost", "lost"]
    assert any("OGG-00966" in e and "RETRIES 2" in e for e in events)
    for _ in range(10):
        sup.tick()
        time.sleep(0.05)
    assert _state(home, "EXT1").status is Status.ABENDED and len(_starts(home, "EXT1")) == 3

    # a data error: restarted after the kill, then reported and left alone
    (home.dirchk / "REP1.mode").write_text("data")
    _kill(home, "REP1")
    _until(sup, lambda: sup.watch["REP1"].given_up, "REP1's data error")
    assert _starts(home, "REP1") == ["run", "run", "data"]
    assert any("OGG-00968 REPLICAT REP1 abended for an error a restart does not cure: "
               "collision applying Insert" in e for e in events)
    for _ in range(10):
        sup.tick()
        time.sleep(0.05)
    assert _starts(home, "REP1") == ["run", "run", "data"]
    assert "collision" in (sup.watch["REP1"].last_abend or "")

    # a group a person stopped stays stopped
    (home.dirchk / "REP1.mode").write_text("run")
    lifecycle.start_group(home, "REPLICAT", "REP1", command=sup.command)
    _until(sup, lambda: _state(home, "REP1").status is Status.RUNNING, "a manual START")
    sup.tick()
    assert not sup.watch["REP1"].given_up  # running again: AUTORESTART covers it again
    lifecycle.stop_group(home, "REPLICAT", "REP1", timeout=20)
    for _ in range(10):
        sup.tick()
        time.sleep(0.05)
    assert _state(home, "REP1").status is Status.STOPPED
    assert _starts(home, "REP1") == ["run", "run", "data", "run"]


def test_resetminutes_window(home: Home, tmp_path: Path) -> None:
    """RETRIES 1 within RESETMINUTES 10, on a clock the test moves: a second death inside
    the window is not restarted, one after the window (counted from the restart) is."""
    (home.dirprm / "mgr.prm").write_text(
        "AUTORESTART REPLICAT *, RETRIES 1, WAITSECONDS 0, RESETMINUTES 10\n")
    events: list[str] = []
    sup = _supervisor(home, tmp_path, events)
    now = [1000.0]
    sup.clock = lambda: now[0]

    def start_by_hand() -> None:
        lifecycle.start_group(home, "REPLICAT", "REP1", command=sup.command)
        _until(sup, lambda: _state(home, "REP1").status is Status.RUNNING, "START")
        sup.tick()  # the Manager sees it running

    def die_at(when: float) -> None:
        now[0] = when
        old = _kill(home, "REP1")
        _until(sup, lambda: (_state(home, "REP1").status is Status.RUNNING
               and _state(home, "REP1").pid != old) or sup.watch["REP1"].given_up,
               f"REP1's fate after kill -9 at {when:g}")

    start_by_hand()
    die_at(1000)  # the first death: restarted (retry 1 of 1) at 1000
    assert sup.watch["REP1"].restarts_total == 1 and not sup.watch["REP1"].given_up
    die_at(1000 + 9 * 60)  # within RESETMINUTES of that restart: given up
    assert sup.watch["REP1"].given_up and _state(home, "REP1").status is Status.ABENDED
    assert any("OGG-00966" in e and "RESETMINUTES 10" in e for e in events)

    start_by_hand()  # a person starts it; the restart at 1000 still counts
    die_at(1000 + 9.5 * 60)
    assert sup.watch["REP1"].given_up and sup.watch["REP1"].restarts_total == 1
    start_by_hand()
    die_at(1000 + 10 * 60 + 1)  # the window has passed: restarted again
    assert not sup.watch["REP1"].given_up and sup.watch["REP1"].restarts_total == 2
    assert _state(home, "REP1").status is Status.RUNNING
    assert _starts(home, "REP1") == ["run"] * 5
