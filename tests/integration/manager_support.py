"""Shared by the Manager tests: a free port, the Manager as a real process, REST calls."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from trailgate.home import Home
from trailgate.manager.control import manager_state
from trailgate.process.lifecycle import Status

ROOT = Path(__file__).resolve().parents[2]

#: A tiny group: the real runtime (lock, pid file, report, abend record) around a loop;
#: dirchk/NAME.mode says run, abend for a lost connection, or abend for a data error.
CHILD = r'''
import sys, time
from trailgate.errors import ConfigError, TargetError
from trailgate.home import Home
from trailgate.process.runtime import GroupProcess
home, kind, name = Home(sys.argv[1]), sys.argv[2], sys.argv[3]
mode_file = home.dirchk / f"{name}.mode"
mode = mode_file.read_text().strip() if mode_file.exists() else "run"
with open(home.dirchk / f"{name}.starts", "a") as fh:
    fh.write(mode + "\n")
with GroupProcess(home, kind, name, title="test group") as proc:
    proc.started()
    if mode == "data":
        raise TargetError("collision applying Insert: table public.t, key id = 1")
    if mode == "lost":
        raise TargetError("lost the connection to u@db:5432/app while applying batch 3")
    while not proc.stop_requested:
        time.sleep(0.05)
    proc.stopped("stop requested")
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_mgr_prm(home: Home, text: str) -> int:
    """``dirprm/mgr.prm`` with ``text`` and a free PORT; returns the port."""
    port = free_port()
    (home.dirprm / "mgr.prm").write_text(f"PORT {port}\n{text}")
    return port


def start_manager(home: Home, text: str,
                  timeout: float = 60) -> tuple[subprocess.Popen[bytes], int]:
    """``trailgate manager`` in the background, serving; retried on a port clash."""
    for _ in range(5):
        port = write_mgr_prm(home, text)
        log = open(home.path / "manager.out", "ab")  # noqa: SIM115 - kept by the process
        proc = subprocess.Popen([sys.executable, "-m", "trailgate.cli", "--home",
                                 str(home.path), "manager", "MGR"], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = manager_state(home)
            if state.status is Status.RUNNING and state.port == port:
                return proc, port
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        out = (home.path / "manager.out").read_text()
        if "is in use" not in out:
            proc.kill()
            raise AssertionError(f"the Manager did not start:\n{out[-3000:]}")
    raise AssertionError("no free port after 5 tries")


def call(port: int, path: str, *, token: str | None = None, method: str = "GET",
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """An HTTP call to the Manager: (status, parsed JSON or text)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers=dict(headers or {}))
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as res:
            status, body, kind = res.status, res.read(), res.headers.get("content-type", "")
    except urllib.error.HTTPError as err:
        status, body, kind = err.code, err.read(), err.headers.get("content-type", "")
    text = body.decode("utf-8")
    return status, json.loads(text) if "json" in kind else text


def token(home: Home) -> str:
    return (home.dircrd / "mgr.token").read_text().strip()
