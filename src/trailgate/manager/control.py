"""GGSCI's ``START|STOP|INFO MANAGER``: the Manager launched detached, asked to stop, shown.

``START MANAGER`` checks ``mgr.prm`` first (a mistake is reported at the prompt with its
file and line), launches ``trailgate manager`` in its own session with its output in
``dirrpt/MGR.rpt``, and waits until it serves (``dirchk/MGR.mgr``) or ends — then the
report's last lines say why.  ``STOP MANAGER`` sends SIGTERM: the groups keep running.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.manager.params import parse_manager_params
from trailgate.manager.service import MANAGER_NAME, info_file
from trailgate.process import lifecycle
from trailgate.process.lifecycle import LifecycleError, Status

__all__ = ["ManagerState", "manager_command", "manager_state", "start_manager",
           "stop_manager"]


@dataclass(frozen=True, slots=True)
class ManagerState:
    """The Manager's status, pid and port (when it serves)."""

    status: Status
    pid: int | None = None
    port: int | None = None
    address: str | None = None


def manager_command(home: Home, kind: str, name: str) -> list[str]:
    return [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "manager",
            MANAGER_NAME]


def manager_state(home: Home) -> ManagerState:
    state = lifecycle.process_state(home, MANAGER_NAME)
    port = address = None
    if state.status is Status.RUNNING:
        try:
            data = json.loads(info_file(home).read_text("utf-8"))
            if data.get("pid") == state.pid:
                port, address = int(data["port"]), str(data.get("address"))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return ManagerState(state.status, state.pid, port, address)


def start_manager(home: Home, wait: float = 30.0) -> ManagerState:
    """Launch the Manager and wait until it serves; a LifecycleError says why not."""
    parse_manager_params(home)  # its errors, with file and line, before anything starts
    current = manager_state(home)
    if current.status in (Status.RUNNING, Status.STARTING):
        raise LifecycleError(f"Manager is already running (pid {current.pid}).")
    result = lifecycle.start_group(home, "MANAGER", MANAGER_NAME, command=manager_command,
                                   wait=wait)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        state = manager_state(home)
        if state.port is not None and state.pid == result.pid:
            return state
        if state.status not in (Status.RUNNING, Status.STARTING):
            tail = _tail(home)
            raise LifecycleError("Manager stopped while starting; VIEW REPORT MGR shows why. "
                                 f"Last lines of {home.report_file(MANAGER_NAME)}:\n{tail}")
        time.sleep(0.1)
    return manager_state(home)


def _tail(home: Home, count: int = 6) -> str:
    try:
        lines = home.report_file(MANAGER_NAME).read_text("utf-8", "replace").splitlines()
    except OSError:
        return "(no report)"
    return "\n".join([line for line in lines if line.strip()][-count:])


def stop_manager(home: Home, timeout: float = 30.0) -> int:
    """SIGTERM to the Manager, waiting for it to end; its pid."""
    try:
        return lifecycle.stop_group(home, "MANAGER", MANAGER_NAME, timeout=timeout)
    except TrailgateError as exc:
        if "is not running" in str(exc):
            raise LifecycleError("Manager is not running.") from None
        raise
