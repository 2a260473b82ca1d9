"""Start, stop and kill group processes, and tell whether they are running.

GGSCI's ``START`` (and the Manager's AUTOSTART/AUTORESTART) launch ``trailgate run …``
detached in a new session, its output appended to the report.  The contract with a running
group is one file, ``dirchk/NAME.pid``: written at start, removed at a clean stop, left by a
process that died (ABENDED).  A pid is believed only if that process lives, is no zombie and
runs the group (psutil), so a reused pid does not look RUNNING.  docs/processes.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path

import psutil

from trailgate.errors import TrailgateError
from trailgate.home import Home, validate_group_name

__all__ = [
    "DEFAULT_START_WAIT",
    "DEFAULT_STOP_TIMEOUT",
    "LifecycleError",
    "ProcessState",
    "StartResult",
    "Status",
    "default_command",
    "kill_group",
    "pid_file",
    "process_state",
    "read_pid",
    "start_group",
    "stop_group",
]

DEFAULT_START_WAIT = 10.0
DEFAULT_STOP_TIMEOUT = 60.0
_POLL = 0.05
_ABEND_LINE = re.compile(r"\babend", re.IGNORECASE)

#: builds the command that runs a group: (home, kind, name) -> argv
CommandFactory = Callable[[Home, str, str], Sequence[str]]

#: processes this Python process launched, by pid file: lets status say STARTING before the
#: group has written its pid file, and lets us reap children so they never linger as zombies
_launched: dict[Path, subprocess.Popen[bytes]] = {}


class LifecycleError(TrailgateError):
    """A group could not be started, stopped or killed; the message says why."""


class Status(StrEnum):
    """What ``INFO`` shows for a group process."""

    RUNNING = "RUNNING"
    STARTING = "STARTING"
    STOPPED = "STOPPED"
    ABENDED = "ABENDED"


@dataclass(frozen=True, slots=True)
class ProcessState:
    """A group's process status, its pid when it has one, and when its pid file was written
    (the start time of a running or abended process)."""

    status: Status
    pid: int | None = None
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class StartResult:
    """The outcome of ``start_group``: ``pid`` is the launched process; ``confirmed`` is true
    when the group wrote its pid file within the wait (false: still starting)."""

    pid: int
    confirmed: bool


def pid_file(home: Home, name: str) -> Path:
    """``dirchk/NAME.pid``."""
    return home.dirchk / f"{validate_group_name(name)}.pid"


def read_pid(path: Path) -> int | None:
    """The pid in ``path`` (plain text or JSON ``{"pid": n}``); ``None`` when the file is
    missing, empty or unreadable (a half-written file is treated as not yet there)."""
    try:
        text = path.read_text("utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text:
        return None
    if text.startswith("{"):
        try:
            value = json.loads(text).get("pid")
        except (ValueError, AttributeError):
            return None
    else:
        value = text.split()[0]
    try:
        pid = int(value)
    except (TypeError, ValueError):
        return None
    return pid if pid > 0 else None


def _alive(pid: int, name: str | None = None) -> bool:
    """True if ``pid`` is a live (non-zombie) process that, where we can tell, runs ``name``.

    A process launched here is asked through its Popen (which also reaps it): /proc alone
    cannot tell an exiting child from a live one.
    """
    for key, proc in list(_launched.items()):
        if proc.pid == pid:
            if proc.poll() is None:
                return True
            del _launched[key]
            return False
    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        if name is not None:
            return any(arg.upper() == name.upper() for arg in process.cmdline())
    except psutil.NoSuchProcess:  # gone, or a zombie by now
        return False
    except psutil.AccessDenied:
        pass  # it exists, and we may not look at it
    return True


def _report_says_abended(home: Home, name: str) -> bool:
    """The report's last non-empty line mentions an abend (a group that died but cleaned
    up its pid file still shows ABENDED)."""
    try:
        with open(home.report_file(name), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    lines = [line for line in tail.splitlines() if line.strip()]
    return bool(lines) and _ABEND_LINE.search(lines[-1]) is not None


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime)
    except OSError:
        return None


def process_state(home: Home, name: str) -> ProcessState:
    """RUNNING (pid file, live process), ABENDED (pid file, dead process; or no pid file and
    the report ends with an abend), STARTING (launched here, pid file not yet written), else
    STOPPED."""
    path = pid_file(home, name)
    pid = read_pid(path)
    if pid is not None:
        if _alive(pid, name):
            return ProcessState(Status.RUNNING, pid, _mtime(path))
        return ProcessState(Status.ABENDED, pid, _mtime(path))
    proc = _launched.get(path)
    if proc is not None:
        if proc.poll() is None:
            return ProcessState(Status.STARTING, proc.pid)
        del _launched[path]
    if path.exists():  # a pid file we cannot read: the group wrote something, then died
        return ProcessState(Status.ABENDED, None, _mtime(path))
    if _report_says_abended(home, name):
        return ProcessState(Status.ABENDED)
    return ProcessState(Status.STOPPED)


def default_command(home: Home, kind: str, name: str) -> list[str]:
    """``python -m trailgate.cli --home HOME run extract|replicat NAME``."""
    return [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "run",
            kind.lower(), validate_group_name(name)]


def start_group(home: Home, kind: str, name: str, *, extra_args: Sequence[str] = (),
                command: CommandFactory | None = None,
                wait: float = DEFAULT_START_WAIT) -> StartResult:
    """Launch the group detached and wait up to ``wait`` seconds for its pid file.

    A process that exits during the wait is an error quoting the end of its report; one that
    is still starting when the wait ends is left to start (``confirmed`` is false).
    """
    name = validate_group_name(name)
    state = process_state(home, name)
    if state.status in (Status.RUNNING, Status.STARTING):
        raise LifecycleError(f"{kind} {name} is already running (pid {state.pid}).")
    path = pid_file(home, name)
    path.unlink(missing_ok=True)  # a dead process's file: the new one writes its own
    home.dirrpt.mkdir(parents=True, exist_ok=True)
    argv = [*(command or default_command)(home, kind, name), *extra_args]
    report = home.report_file(name)
    with open(report, "ab") as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=home.path,
                                    start_new_session=True, close_fds=True)
        except OSError as exc:
            raise LifecycleError(f"cannot start {kind} {name}: {exc}") from None
    _launched[path] = proc
    deadline = time.monotonic() + wait
    while True:
        if read_pid(path) == proc.pid:
            return StartResult(proc.pid, True)
        code = proc.poll()
        if code is not None:
            del _launched[path]
            tail = _tail(report, 8)
            detail = ("\n" + "\n".join(tail)) if tail else ""
            raise LifecycleError(
                f"{kind} {name} stopped while starting (exit status {code}); VIEW REPORT "
                f"{name} shows why. Last lines of {report}:{detail}")
        if time.monotonic() >= deadline:
            return StartResult(proc.pid, False)
        time.sleep(_POLL)


def _tail(path: Path, count: int) -> list[str]:
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-count:]


def stop_group(home: Home, kind: str, name: str, *, timeout: float = DEFAULT_STOP_TIMEOUT,
               wait: bool = True) -> int:
    """Ask the group to stop (SIGTERM: it finishes the current batch and checkpoints) and,
    with ``wait``, wait up to ``timeout`` seconds for it to exit; returns its pid.

    A group that exited after the request is STOPPED, so a pid file it left is removed.
    """
    state = process_state(home, name)
    if state.status not in (Status.RUNNING, Status.STARTING) or state.pid is None:
        raise LifecycleError(f"{kind} {validate_group_name(name)} is not running.")
    pid = state.pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        raise LifecycleError(f"not allowed to signal process {pid} of {kind} "
                             f"{validate_group_name(name)}; stop it as the user running it"
                             ) from None
    if not wait:
        return pid
    if not _wait_exit(pid, name, timeout):
        raise LifecycleError(
            f"{kind} {validate_group_name(name)} (pid {pid}) did not stop within "
            f"{timeout:g} seconds; it may still be finishing a batch. INFO {kind} "
            f"{validate_group_name(name)} shows when it has stopped; KILL {kind} "
            f"{validate_group_name(name)} stops it at once.")
    if read_pid(pid_file(home, name)) == pid:
        pid_file(home, name).unlink(missing_ok=True)
    return pid


def kill_group(home: Home, kind: str, name: str, *, timeout: float = 10.0) -> int:
    """SIGKILL the group and remove its pid file; returns the pid killed.  Nothing is lost:
    the next start resumes from the last checkpoint."""
    state = process_state(home, name)
    if state.status not in (Status.RUNNING, Status.STARTING) or state.pid is None:
        raise LifecycleError(f"{kind} {validate_group_name(name)} is not running.")
    pid = state.pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _wait_exit(pid, name, timeout)
    pid_file(home, name).unlink(missing_ok=True)
    return pid


def _wait_exit(pid: int, name: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid, name):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True
