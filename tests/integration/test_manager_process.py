"""The Manager as a real process (no Spark): GGSCI START/INFO/STOP MANAGER, bad input, REST
without or with bad credentials, /metrics through Prometheus's parser, and kill -9 of the
Manager in the middle of a purge."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from manager_support import CHILD, call, free_port, start_manager, token, write_mgr_prm
from prometheus_client.parser import text_string_to_metric_families

from trailgate.checkpoint import Checkpoint
from trailgate.db.connect import CredentialStore
from trailgate.errors import TrailgateError
from trailgate.ggsci.shell import Shell
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import TrailPosition
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status
from trailgate.trail.naming import TrailName

READER_AT = 1500  # the reader's checkpoint: files below it may go
REP1_LAG = 125  # seconds: REP1's lag at checkpoint, above LAGCRITICAL
FILES = 2000


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path / "gg").create()
    home.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG", trails=[TrailInfo("./dirdat/aa")]))
    home.add_group(GroupInfo("REP1", "REPLICAT", "EXTTRAIL", "./dirdat/aa"))
    ext = Checkpoint("EXT1", "EXTRACT", read_position={"lsn": 5})
    ext.write_position = TrailPosition(FILES - 1, 10)
    home.checkpoints.save(ext)
    rep = Checkpoint("REP1", "REPLICAT", read_position={"seqno": READER_AT, "rba": 99})
    rep.count("public.t", "insert", 7)
    rep.read_time = (datetime.now(UTC) - timedelta(seconds=REP1_LAG)).isoformat()
    home.checkpoints.save(rep)
    yield home
    for name in ("MGR", "REP1"):
        pid = lifecycle.process_state(home, name).pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _ggsci(home: Home, script: str) -> str:
    out = io.StringIO()
    shell = Shell(home, out)
    try:
        shell.run_script(script, "test.oby")
    except TrailgateError:  # a failing command: its ERROR lines are in the output
        pass
    finally:
        shell.close()
    return out.getvalue()


def _run_child(home: Home, tmp_path: Path) -> int:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    result = lifecycle.start_group(home, "REPLICAT", "REP1", command=lambda h, k, n: [
        sys.executable, str(script), str(h.path), k, n])
    assert result.confirmed
    return result.pid


def test_ggsci_manager_rest_and_metrics(home: Home, tmp_path: Path) -> None:
    pid = _run_child(home, tmp_path)  # a running group: nothing may stop it
    port = write_mgr_prm(home, "AUTORESTART ER *, WAITSECONDS 1\nLAGREPORTMINUTES 1\n"
                               "LAGCRITICALSECONDS 60\n")
    out = _ggsci(home, "START MANAGER\nINFO MANAGER\nINFO ALL\n")
    assert f"Manager started (port {port})." in out, out
    assert f"Manager is running (IP port 127.0.0.1.{port}, Process ID" in out
    assert "MANAGER     RUNNING" in out
    secret = token(home)

    # LAGREPORT's first pass, at start: REP1 is above LAGCRITICAL, EXT1 (lag 0) is not
    deadline = time.monotonic() + 30
    while "OGG-00947" not in home.ggserr_log.read_text():
        assert time.monotonic() < deadline, home.ggserr_log.read_text()[-2000:]
        time.sleep(0.1)
    lag_lines = [x for x in home.ggserr_log.read_text().splitlines() if "Lag for" in x]
    assert len(lag_lines) == 1 and "WARNING OGG-00947  trailgate Lag for REPLICAT REP1 is " \
        "00:02:0" in lag_lines[0], lag_lines

    # no credentials, a bad token, a bad password: refused; nothing acted on
    assert call(port, "/api/groups")[0] == 401
    assert call(port, "/api/groups", token="not-the-token")[0] == 401
    assert call(port, "/api/groups/REP1/stop", token="not-the-token", method="POST")[0] == 401
    bad = base64.b64encode(b"admin:wrong").decode()
    assert call(port, "/api/groups", headers={"Authorization": f"Basic {bad}"})[0] == 401
    assert lifecycle.process_state(home, "REP1").status is Status.RUNNING

    # a credential-store user of domain Manager, and the token
    CredentialStore(home.path).add("console", "admin", "s3cret", "Manager")
    good = base64.b64encode(b"admin:s3cret").decode()
    status, groups = call(port, "/api/groups", headers={"Authorization": f"Basic {good}"})
    assert status == 200 and {g["name"]: g["status"] for g in groups} == {
        "EXT1": "STOPPED", "REP1": "RUNNING"}
    status, info = call(port, "/api/groups/REP1", token=secret)
    assert info["read_position_text"] == f"{READER_AT}:99" and info["pid"] == pid
    status, stats = call(port, "/api/groups/REP1/stats", token=secret)
    assert stats["tables"]["public.t"]["inserts"] == 7
    assert call(port, "/api/groups/NOPE", token=secret)[0] == 404
    status, report = call(port, "/api/groups/REP1/report", token=secret)
    assert status == 200 and "test group" in report
    status, events = call(port, "/api/events", token=secret)
    assert any(e["code"] == "OGG-00983" for e in events)
    status, lag = call(port, "/api/groups/REP1/lag", token=secret)
    assert status == 200 and lag["heartbeat"] == []
    status, spec = call(port, "/openapi.json")
    assert "/api/groups/{name}/stop" in spec["paths"]
    assert set(spec["components"]["securitySchemes"]) == {"HTTPBearer", "HTTPBasic"}

    status, text = call(port, "/metrics")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    running = {s.labels["group"]: s.value for s in families["trailgate_group_running"].samples}
    assert running == {"EXT1": 0, "REP1": 1}
    records = [s for s in families["trailgate_records"].samples
               if s.name == "trailgate_records_total" and s.labels["operation"] == "insert"]
    assert [(s.labels["table"], s.value) for s in records] == [("public.t", 7)]
    seqnos = {(s.labels["group"], s.labels["position"]): s.value
              for s in families["trailgate_trail_seqno"].samples}
    assert seqnos == {("REP1", "read"): READER_AT, ("EXT1", "write"): FILES - 1}
    assert "trailgate_group_restarts" in families and "trailgate_heartbeat_lag_seconds" in \
        families

    # bad input while it runs: a second Manager, a port in use; both refused, nothing stopped
    second = subprocess.run([sys.executable, "-m", "trailgate.cli", "--home", str(home.path),
                             "manager"], capture_output=True, text=True, timeout=120)
    assert second.returncode == 1 and "MANAGER MGR is already running" in second.stderr
    out = _ggsci(home, "STOP MANAGER !\nINFO MANAGER\n")
    assert "Manager stopped." in out and "Manager is DOWN!" in out
    assert lifecycle.process_state(home, "REP1").status is Status.RUNNING
    assert lifecycle.process_state(home, "REP1").pid == pid

    key = home.dircrd / "wallet.key"  # a key file others may read: refused, and said so
    key.chmod(0o644)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        used = busy.getsockname()[1]
        (home.dirprm / "mgr.prm").write_text(f"PORT {used}\nAUTOSTART ER *\n")
        out = _ggsci(home, "START MANAGER\n")
    key.chmod(0o600)
    assert "the credential store cannot be opened, so its console users (domain Manager) " \
           "cannot log in; the token still works: " in home.ggserr_log.read_text()
    assert "has mode 0644: it must be readable only by its owner" in home.ggserr_log.read_text()
    assert f"PORT {used}: the port is in use on 127.0.0.1 by another process" in out, out
    assert "Manager stopped while starting" in out or "stopped while starting" in out
    assert lifecycle.process_state(home, "REP1").pid == pid  # still running, untouched
    assert lifecycle.process_state(home, "EXT1").status is Status.STOPPED  # no AUTOSTART

    (home.dirprm / "mgr.prm").write_text(f"PORT {free_port()}\nAUTORESTART ER * RETRIES 3\n")
    out = _ggsci(home, "START MANAGER\n")
    assert "mgr.prm, line 2: AUTORESTART:" in out and "(in: AUTORESTART ER * RETRIES 3)" in out
    assert lifecycle.process_state(home, "REP1").pid == pid


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kill9_of_the_manager_mid_purge_leaves_every_reader_its_data(home: Home) -> None:
    trail = TrailName(home.dirdat / "aa")
    for seqno in range(FILES):
        trail.file(seqno).write_bytes(seqno.to_bytes(4, "big") * 64)
    kept = {s: _digest(trail.file(s)) for s in range(READER_AT, FILES)}
    proc, _port = start_manager(home, "PURGEOLDEXTRACTS ./dirdat/*, USECHECKPOINTS\n")
    deadline = time.monotonic() + 60
    while len(trail.sequence_numbers()) == FILES:  # the purge has begun
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = trail.sequence_numbers()
    assert left[-(FILES - READER_AT):] == list(range(READER_AT, FILES))
    assert {s: _digest(trail.file(s)) for s in range(READER_AT, FILES)} == kept
    mid = len(left) > FILES - READER_AT
    # the next Manager finishes the job, exactly up to the reader
    proc, _port = start_manager(home, "PURGEOLDEXTRACTS ./dirdat/*, USECHECKPOINTS\n")
    deadline = time.monotonic() + 120
    while trail.sequence_numbers() != list(range(READER_AT, FILES)):
        assert time.monotonic() < deadline, len(trail.sequence_numbers())
        time.sleep(0.1)
    assert {s: _digest(trail.file(s)) for s in range(READER_AT, FILES)} == kept
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)
    log = home.ggserr_log.read_text()
    # every file the second Manager purged is logged; the killed one may have died between
    # removing a file and logging it (the file is gone either way, never a reader's)
    second = READER_AT - (FILES - len(left))
    assert second <= log.count("Purged old extract file") <= READER_AT
    print(f"\nkill -9 after {FILES - len(left)} of {READER_AT} files purged "
          f"({'mid-purge' if mid else 'after the purge'})")
