"""START / STOP / KILL and process status with real child processes.

The child is a small Python script that keeps the pid-file contract a group runtime keeps
(write ``dirchk/NAME.pid`` at start, remove it on SIGTERM), so these tests exercise real
process launch, signals, detaching and status detection without Spark.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from trailgate.ggsci.shell import Shell
from trailgate.home import GroupInfo, Home
from trailgate.process import lifecycle
from trailgate.process.lifecycle import LifecycleError, Status

CHILD = r'''
import os, signal, sys, time
home, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
pid_file = os.path.join(home, "dirchk", name + ".pid")
if mode == "fail":
    print(f"{name}: ERROR OGG-00303 bad parameter on line 3", flush=True)
    sys.exit(3)
if mode == "slow":
    time.sleep(1.0)
with open(pid_file, "w") as fh:
    fh.write(f"{os.getpid()}\n")
print(f"{name} started, args {sys.argv[4:]}", flush=True)

def stop(*_):
    os.unlink(pid_file)
    print(f"{name} stopped", flush=True)
    sys.exit(0)

if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, stop)
if mode == "abend":
    print(f"{name} ABENDING: out of cheese", flush=True)
    sys.exit(1)
while True:
    time.sleep(0.05)
'''


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path / "gg").create()
    for name in ("EXT1", "REP1"):
        kind = "EXTRACT" if name.startswith("EXT") else "REPLICAT"
        home.add_group(GroupInfo(name, kind, "EXTTRAILSOURCE" if kind == "EXTRACT"
                                 else "EXTTRAIL", "./dirdat/aa"))
        home.param_file(name).write_text(f"{kind} {name}\n")
    yield home
    for name in ("EXT1", "REP1"):  # never leave a child behind
        pid = lifecycle.read_pid(lifecycle.pid_file(home, name))
        state = lifecycle.process_state(home, name)
        for p in {pid, state.pid} - {None}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)  # type: ignore[arg-type]


@pytest.fixture
def child(tmp_path: Path) -> Path:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return script


def command(script: Path, mode: str = "run") -> lifecycle.CommandFactory:
    return lambda home, kind, name: [sys.executable, str(script), str(home.path), name, mode]


def wait_for(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_start_status_stop(home: Home, child: Path) -> None:
    result = lifecycle.start_group(home, "EXTRACT", "ext1", command=command(child),
                                   extra_args=["--atcsn", "42"])
    assert result.confirmed
    state = lifecycle.process_state(home, "EXT1")
    assert state.status is Status.RUNNING and state.pid == result.pid
    assert os.getsid(result.pid) == result.pid  # detached in its own session
    with pytest.raises(LifecycleError, match="already running"):
        lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child))
    assert lifecycle.stop_group(home, "EXTRACT", "EXT1", timeout=10) == result.pid
    assert lifecycle.process_state(home, "EXT1").status is Status.STOPPED
    report = home.report_file("EXT1").read_text()
    assert "EXT1 started, args ['--atcsn', '42']" in report and "EXT1 stopped" in report


def test_kill_removes_the_pid_file(home: Home, child: Path) -> None:
    pid = lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child)).pid
    assert lifecycle.kill_group(home, "EXTRACT", "EXT1") == pid
    assert not lifecycle.pid_file(home, "EXT1").exists()
    assert lifecycle.process_state(home, "EXT1").status is Status.STOPPED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_crash_leaves_the_group_abended(home: Home, child: Path) -> None:
    lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child, "abend"))
    wait_for(lambda: lifecycle.process_state(home, "EXT1").status is Status.ABENDED)
    # a restart clears it
    lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child))
    assert lifecycle.process_state(home, "EXT1").status is Status.RUNNING
    pid = lifecycle.read_pid(lifecycle.pid_file(home, "EXT1"))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # kill -9: the pid file stays
    wait_for(lambda: lifecycle.process_state(home, "EXT1").status is Status.ABENDED)


def test_start_failure_quotes_the_report(home: Home, child: Path) -> None:
    with pytest.raises(LifecycleError) as info:
        lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child, "fail"))
    assert "exit status 3" in str(info.value)
    assert "EXT1: ERROR OGG-00303 bad parameter on line 3" in str(info.value)
    assert lifecycle.process_state(home, "EXT1").status is Status.STOPPED


def test_stop_timeout_then_kill(home: Home, child: Path) -> None:
    lifecycle.start_group(home, "REPLICAT", "REP1", command=command(child, "stubborn"))
    with pytest.raises(LifecycleError, match=r"did not stop within 0\.5 seconds"):
        lifecycle.stop_group(home, "REPLICAT", "REP1", timeout=0.5)
    assert lifecycle.process_state(home, "REP1").status is Status.RUNNING
    lifecycle.kill_group(home, "REPLICAT", "REP1")
    assert lifecycle.process_state(home, "REP1").status is Status.STOPPED


def test_starting_before_the_pid_file_exists(home: Home, child: Path) -> None:
    result = lifecycle.start_group(home, "EXTRACT", "EXT1", command=command(child, "slow"),
                                   wait=0.0)
    assert not result.confirmed
    assert lifecycle.process_state(home, "EXT1").status is Status.STARTING
    wait_for(lambda: lifecycle.process_state(home, "EXT1").status is Status.RUNNING)


def test_pid_file_forms_and_stale_pids(home: Home) -> None:
    path = lifecycle.pid_file(home, "EXT1")
    for text, expected in (("123\n", 123), ('{"pid": 456, "started": "x"}', 456), ("", None),
                           ("garbage", None), ("-5", None), ('{"pid": "7"}', 7)):
        path.write_text(text)
        assert lifecycle.read_pid(path) == expected, text
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path.write_text(f"{dead.pid}\n")
    assert lifecycle.process_state(home, "EXT1").status is Status.ABENDED
    # a live process that is not the group (pid reused after a crash) is not RUNNING
    path.write_text(f"{os.getpid()}\n")
    assert lifecycle.process_state(home, "EXT1").status is Status.ABENDED
    path.unlink()
    home.report_file("EXT1").write_text("started\nEXTRACT EXT1 abended: disk full\n\n")
    assert lifecycle.process_state(home, "EXT1").status is Status.ABENDED
    home.report_file("EXT1").write_text("EXTRACT EXT1 stopped normally\n")
    assert lifecycle.process_state(home, "EXT1").status is Status.STOPPED


def test_ggsci_start_info_stop_kill(home: Home, child: Path) -> None:
    out = io.StringIO()
    shell = Shell(home, out, run_command=command(child), stop_timeout=10)
    script = """\
START EXTRACT ext1
START ER *
INFO ALL
INFO EXTRACT ext1
STOP EXTRACT ext1
KILL REPLICAT rep1
INFO ALL
"""
    with pytest.raises(Exception, match="obey file stopped"):
        shell.run_script(script, "lifecycle.oby")
    text = out.getvalue()
    # START ER * reports EXT1 already running, starts REP1, and the script stops there
    assert "EXTRACT EXT1 starting" in text
    assert "ERROR: EXTRACT EXT1 is already running" in text
    assert "REPLICAT REP1 starting" in text
    assert "ERROR: 1 of 2 groups failed." in text
    assert "lifecycle.oby, line 2: the obey file stopped here" in text
    out.truncate(0)
    out.seek(0)
    shell.run_script(script.split("\n", 2)[2], "lifecycle2.oby")
    text = out.getvalue()
    assert "EXTRACT     RUNNING     EXT1" in text and "REPLICAT    RUNNING     REP1" in text
    pid = lifecycle.process_state(home, "EXT1").pid
    assert pid is None  # stopped by now
    assert "Process ID" in text and "Status RUNNING" in text
    assert "Sending STOP request to EXTRACT EXT1 ...\nRequest processed." in text
    assert "Killed process (" in text and "for REPLICAT REP1" in text
    final = text.rsplit("INFO ALL", 1)[1]
    assert "EXTRACT     STOPPED     EXT1" in final and "REPLICAT    STOPPED     REP1" in final
    log = home.ggserr_log.read_text()
    assert "GGSCI command" in log and "START EXTRACT ext1." in log


def test_ggsci_stop_without_waiting(home: Home, child: Path) -> None:
    out = io.StringIO()
    shell = Shell(home, out, run_command=command(child))
    shell.run_script("START EXTRACT ext1\nSTOP EXTRACT ext1 !\n", "nowait.oby")
    assert "Request sent; not waiting for EXTRACT EXT1 to stop." in out.getvalue()
    wait_for(lambda: lifecycle.process_state(home, "EXT1").status is Status.STOPPED)


def test_ggsci_refuses_to_delete_or_alter_a_running_group(home: Home, child: Path) -> None:
    out = io.StringIO()
    shell = Shell(home, out, interactive=True, run_command=command(child))
    shell.run_interactive_line("START EXTRACT ext1")
    shell.run_interactive_line("DELETE EXTRACT ext1")
    shell.run_interactive_line("ALTER EXTRACT ext1, EXTSEQNO 3, EXTRBA 0")
    shell.run_interactive_line("KILL EXTRACT ext1")
    text = out.getvalue()
    assert text.count("is running (pid") == 2
    assert "STOP EXTRACT EXT1 before DELETE" in text and "before ALTER" in text
    assert home.group("EXT1") is not None
