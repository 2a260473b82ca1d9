"""The operations layer end to end, on real PostgreSQL, real Spark and a real browser.

One pipeline (Extract → Replicat; the pump's hop is tested by tests/integration/
test_pump.py and tests/unit/test_heartbeat_hops.py, without the cost of a third JVM here)
under a Manager started by GGSCI, with heartbeat tables on both sides; the tests run in
order on it:

1. AUTOSTART starts both groups; heartbeats cross both hops and GG_LAG, GGSCI's LAG,
   the REST API and /metrics show the lag per path and hop; an idle slot keeps advancing.
2. The console in headless Chromium: the groups, the lag plot, statistics, events; a group
   stopped and started with its buttons (the Extract).  Screenshots of each page are kept.
3. kill -9 of the running Replicat: the Manager restarts it and the target is exact.
4. A collision (a data error): the Replicat abends, is reported and is not restarted.
5. No password anywhere (issue 22): the groups log in as a role whose password is unique to
   this run; neither ``ps``, any process's environment, the REST API, /metrics, nor any file
   the run wrote (the home with its encrypted trail, Spark's scratch, temporary files) holds
   it in any common encoding.
"""

from __future__ import annotations

import base64
import io
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from manager_support import call, free_port, token
from prometheus_client.parser import text_string_to_metric_families
from psycopg import sql

from trailgate.db.cluster import Cluster
from trailgate.db.connect import connect
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.pipeline import Pipeline, PipelineSpec
from trailgate.home import Home
from trailgate.manager.control import manager_state, stop_manager
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status
from trailgate.spark.session import SPARK_DIR_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
DDL = """\
CREATE SCHEMA ops;
CREATE TABLE ops.accounts (id integer PRIMARY KEY, counter integer NOT NULL, note text);
"""
ACCOUNTS = 20
ROLE = "opsgg"  # the groups' login, its password unique to this run


@dataclass
class Dbs:
    source_conninfo: str
    target_conninfo: str


@dataclass
class Ops:
    dbs: Dbs
    home: Home
    pipeline: Pipeline
    port: int
    token: str
    password: str
    directory: Path
    started: float

    @property
    def ext(self) -> str:
        return self.pipeline.groups[0].name

    @property
    def rep(self) -> str:
        return self.pipeline.groups[1].name


def _wait(done: Callable[[], Any], what: str, timeout: float = 300,
          check: Callable[[], None] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = done()
        if value:
            return value
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def _ggsci(ops: Ops, script: str) -> str:
    out = io.StringIO()
    ops.pipeline.ggsci(script, out, name="ops")
    return out.getvalue()


def _increments(conninfo: str, count: int, *, pause: float = 0.02, first: int = 0) -> None:
    with connect(conninfo, autocommit=False) as conn:
        for n in range(first, first + count):
            conn.execute("UPDATE ops.accounts SET counter = counter + 1, note = %s "
                         "WHERE id = %s", (f"txn {n}", n % ACCOUNTS))
            conn.commit()
            time.sleep(pause)


def _all_running(ops: Ops) -> bool:
    return all(lifecycle.process_state(ops.home, g.name).status is Status.RUNNING
               for g in ops.pipeline.groups)


def _rows(conninfo: str) -> list[tuple[Any, ...]]:
    with connect(conninfo) as conn:
        return conn.execute("SELECT * FROM ops.accounts ORDER BY id").fetchall()


@pytest.fixture(scope="module")
def ops(e2e_cluster: Cluster) -> Iterator[Ops]:
    directory = Path(tempfile.mkdtemp(prefix="tg-ops-"))
    home = Home(directory / "gg").create()
    old_spark_dir = os.environ.get(SPARK_DIR_ENV)
    os.environ[SPARK_DIR_ENV] = str(home.dirtmp / "spark")
    spec = PipelineSpec(tables=["ops.accounts"], maps=[("ops.*", "ops.*")], source_db="opsrc",
                        target_db="optgt", pump=False, replicat_delta=False, extract="OEXT",
                        replicat_pg_name="OREP", trigger="1 SECONDS",
                        encrypt_trail="AES256, KEYNAME ops")  # the scan covers sealed trails
    pipeline = Pipeline(home, spec)
    started = time.time()
    password = "Tg-" + secrets.token_urlsafe(18)
    with connect(e2e_cluster.conninfo()) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        conn.execute(sql.SQL("{} ROLE {} SUPERUSER LOGIN PASSWORD {}").format(
            sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(ROLE),
            sql.Literal(password)))
    e2e_cluster.create_database("opsrc")
    e2e_cluster.create_database("optgt")
    dbs = Dbs(e2e_cluster.conninfo("opsrc", user=ROLE, password=password),
              e2e_cluster.conninfo("optgt", user=ROLE, password=password))
    try:
        for conninfo in (dbs.source_conninfo, dbs.target_conninfo):
            run_sql(conninfo, DDL)
        run_sql(dbs.source_conninfo, "INSERT INTO ops.accounts SELECT g, 0, 'new' FROM "
                                     f"generate_series(0, {ACCOUNTS - 1}) g")
        run_sql(dbs.target_conninfo, "INSERT INTO ops.accounts SELECT g, 0, 'new' FROM "
                                     f"generate_series(0, {ACCOUNTS - 1}) g")
        setup, _start = pipeline.write_files(Databases.login(dbs.source_conninfo),
                                             Databases.login(dbs.target_conninfo))
        port = free_port()
        (home.dirprm / "mgr.prm").write_text(
            f"PORT {port}\nAUTOSTART ER *\nAUTORESTART ER *, RETRIES 3, WAITSECONDS 1\n"
            "PURGEOLDEXTRACTS ./dirdat/*, USECHECKPOINTS\nLAGSAMPLESECONDS 1\n"
            "LAGREPORTMINUTES 1\nLAGINFOSECONDS 0\n")
        pipeline.ggsci([setup, "DBLOGIN USERIDALIAS ggsrc\nADD HEARTBEATTABLE, FREQUENCY 1\n"
                               "DBLOGIN USERIDALIAS ggtgt\nADD HEARTBEATTABLE, TARGETONLY\n"
                               "START MANAGER\n"], io.StringIO(), name="ops")
        yield Ops(dbs, home, pipeline, port, token(home), password, directory, started)
    except BaseException:
        for g in pipeline.groups:
            print(f"--- {g.name}: {pipeline.report_tail(g, 30)}")
        raise
    finally:
        if manager_state(home).status is Status.RUNNING:
            stop_manager(home)
        print("\n".join(pipeline.stop_all()))
        print(home.ggserr_log.read_text()[-4000:] if home.ggserr_log.exists() else "")
        with connect(e2e_cluster.conninfo()) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                         "pg_replication_slots WHERE database = 'opsrc' AND NOT active")
        if old_spark_dir is None:
            os.environ.pop(SPARK_DIR_ENV, None)
        else:
            os.environ[SPARK_DIR_ENV] = old_spark_dir
        shutil.rmtree(directory, ignore_errors=True)


def _lag_rows(ops: Ops) -> list[dict[str, Any]]:
    with connect(ops.dbs.target_conninfo) as conn:
        cur = conn.execute("SELECT * FROM ggadmin.gg_lag")
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_autostart_and_heartbeat_through_every_hop(ops: Ops) -> None:
    _wait(lambda: _all_running(ops), "AUTOSTART")
    _wait(lambda: len(ops.pipeline.started_since(0)) == 2, "the groups' queries to start",
          check=ops.pipeline.check_running)
    _increments(ops.dbs.source_conninfo, 50)
    path = f"{ops.ext} ==> {ops.rep}"
    rows = _wait(lambda: [r for r in _lag_rows(ops) if r["incoming_path"] == path],
                 "a heartbeat on GG_LAG", check=ops.pipeline.check_running)
    row = rows[0]
    for hop in ("incoming_lag", "incoming_extract_lag", "incoming_replicat_lag"):
        assert 0 <= row[hop] < 30, row
    assert row["incoming_routing_lag"] is None  # no pump on this path
    assert abs(row["incoming_lag"] - (row["incoming_extract_lag"]
                                      + row["incoming_replicat_lag"])) < 1e-3
    with connect(ops.dbs.target_conninfo) as conn:
        history = conn.execute("SELECT count(*), count(DISTINCT heartbeat_received_ts) FROM "
                               "ggadmin.gg_lag_history WHERE incoming_path = %s",
                               (path,)).fetchone()
    assert history is not None and history[0] >= 1 and history[1] == history[0]

    out = _ggsci(ops, f"LAG REPLICAT {ops.rep}\nINFO REPLICAT {ops.rep}\n"
                      "DBLOGIN USERIDALIAS ggtgt\nINFO HEARTBEATTABLE\n")
    assert f"Heartbeat lag (GG_LAG), path {path}:" in out and "end to end (extract " in out
    assert "Heartbeat Lag        00:00:" in out
    assert f"Path {path}: lag " in out and "HEARTBEAT table frequency interval" in out

    _wait(lambda: call(ops.port, f"/api/groups/{ops.rep}/lag", token=ops.token)[1]["heartbeat"],
          "the Manager to sample the heartbeat")
    _status, text = call(ops.port, "/metrics")
    hops = {s.labels["hop"] for f in text_string_to_metric_families(text)
            if f.name == "trailgate_heartbeat_lag_seconds" for s in f.samples
            if s.labels["path"] == path}
    assert hops == {"total", "extract", "replicat"}

    # an idle source: heartbeats keep the slot moving
    def confirmed() -> int:
        with connect(ops.dbs.source_conninfo) as conn:
            row = conn.execute("SELECT (confirmed_flush_lsn - '0/0')::int8 FROM "
                               "pg_replication_slots WHERE slot_name = %s",
                               (f"trailgate_{ops.ext.lower()}",)).fetchone()
        return int(row[0]) if row else 0

    before = confirmed()
    _wait(lambda: confirmed() > before, "the idle slot to advance", timeout=60)


# -- the password scan (issue 22) -----------------------------------------------------------
def _needles(secret: str) -> list[bytes]:
    """``secret`` as it could sit in a file: raw, URL-quoted, UTF-16, and base64 at each of
    the three alignments (the part of the encoding that depends on the secret alone)."""
    raw = secret.encode()
    out = [raw, urllib.parse.quote(secret, safe="").encode(), secret.encode("utf-16-le")]
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw)
        out.append(encoded[4 if pad else 0:-4])
    return out


def _files_holding(secret: str, roots: Iterable[Path], since: float | None = None,
                   max_bytes: int = 64 << 20) -> list[str]:
    """Regular files under ``roots`` (modified since ``since``) that hold ``secret``."""
    needles, found = _needles(secret), []
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                path = Path(dirpath) / name
                try:
                    info = path.lstat()
                    if not path.is_file() or path.is_symlink() or info.st_size > max_bytes \
                            or (since is not None and info.st_mtime < since):
                        continue
                    data = path.read_bytes()
                except OSError:  # gone meanwhile, or a socket
                    continue
                if any(n in data for n in needles):
                    found.append(str(path))
    return found


def _processes_holding(secret: str) -> list[str]:
    """``ps -ww -eo args`` lines (full width), and processes whose environment or command
    line, that hold ``secret``."""
    needles = _needles(secret)
    args = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, check=True).stdout
    found = [line.decode(errors="replace") for line in args.splitlines()
             if any(n in line for n in needles)]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                data = (proc / "environ").read_bytes() + (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if any(n in data for n in needles):
                found.append(f"pid {proc.name} (environment or command line)")
    return found


def test_the_password_scan_finds_a_planted_password(tmp_path: Path) -> None:
    """The scan below can fail: each encoding of a planted password, in a file or in a
    process's arguments or environment, is found."""
    secret = "Tg-" + secrets.token_urlsafe(18)
    plants = {"raw.log": secret.encode(), "url.txt": urllib.parse.quote(secret).encode(),
              "b64.json": b'{"x": "' + base64.b64encode(b"password=" + secret.encode()) + b'"}'}
    for name, data in plants.items():
        (tmp_path / name).write_bytes(b"before " + data + b" after")
    (tmp_path / "clean.txt").write_text("nothing here")
    assert sorted(Path(p).name for p in _files_holding(secret, [tmp_path])) == sorted(plants)
    assert _files_holding(secret, [tmp_path], since=time.time() + 60) == []
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", secret],
                             env={**os.environ, "LEAKED": secret})
    try:
        time.sleep(0.2)
        assert len([p for p in _processes_holding(secret) if str(child.pid) in p]) >= 2
    finally:
        child.kill()
        child.wait()


def _api_texts(ops: Ops) -> Iterator[str]:
    """Everything the REST API and /metrics show of the pipeline."""
    for path in ("/api/manager", "/api/groups", "/api/lag", "/api/events"):
        yield str(call(ops.port, path, token=ops.token)[1])
    for group in ops.pipeline.groups:
        for tail in ("", "/stats", "/lag", "/report"):
            yield str(call(ops.port, f"/api/groups/{group.name}{tail}", token=ops.token)[1])
    yield str(call(ops.port, "/metrics")[1])


def test_no_password_in_ps_environments_rest_or_metrics(ops: Ops) -> None:
    """While both groups run under the Manager: their command lines, environments and the
    Manager's API carry no password (the groups read it from the sealed store)."""
    _wait(lambda: _all_running(ops), "AUTOSTART")
    assert _processes_holding(ops.password) == []
    texts = list(_api_texts(ops))
    assert any("OGG-00993" in t for t in texts)  # the events were read
    assert [t[:200] for t in texts if any(n.decode(errors="ignore") in t
                                          for n in _needles(ops.password))] == []


def test_console_in_a_browser(ops: Ops, tmp_path: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does)")
    from playwright.sync_api import expect, sync_playwright

    # the lag plot's heartbeat series needs a sample the Manager took, the statistics page a
    # change applied (the module's first test makes both; run alone, this one must too)
    _wait(lambda: _all_running(ops), "AUTOSTART")
    _wait(lambda: call(ops.port, f"/api/groups/{ops.rep}/lag", token=ops.token)[1]["heartbeat"],
          "the Manager to sample the heartbeat", check=ops.pipeline.check_running)
    _increments(ops.dbs.source_conninfo, 5, first=500)  # the statistics page shows ops.accounts
    _wait(lambda: ops.pipeline.operations(ops.pipeline.groups[1]) > 0,
          "the Replicat to apply a change", check=ops.pipeline.check_running)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{ops.port}/")
            expect(page.locator("#login")).to_be_visible()
            page.fill("#token", "not-the-token")
            page.click("#login-form button")
            expect(page.locator("#login-error")).to_contain_text("refused")
            page.screenshot(path=shots / "1-login.png")
            page.fill("#token", ops.token)
            page.click("#login-form button")
            rows = page.locator("#group-table tbody tr")
            expect(rows).to_have_count(2)
            for g in ops.pipeline.groups:
                expect(page.locator(f'tr[data-group="{g.name}"] .status')).to_have_text(
                    "RUNNING")
            expect(page.locator("#lag-plot .uplot canvas")).to_be_visible()
            expect(page.locator("#lag-plot .u-legend")).to_contain_text("(heartbeat)",
                                                                         timeout=30_000)
            page.screenshot(path=shots / "2-groups.png", full_page=True)

            ext = f'tr[data-group="{ops.ext}"]'
            mark = ops.pipeline.event_mark()
            page.click(f'{ext} button[data-action="stop"]')
            expect(page.locator(f"{ext} .status")).to_have_text("STOPPED", timeout=120_000)
            assert lifecycle.process_state(ops.home, ops.ext).status is Status.STOPPED
            page.screenshot(path=shots / "3-stopped.png", full_page=True)
            page.click(f'{ext} button[data-action="start"]')
            expect(page.locator(f"{ext} .status")).to_have_text("RUNNING", timeout=120_000)

            page.click('#tabs a[data-tab="stats"]')
            page.select_option("#stats-group", ops.rep)
            expect(page.locator("#stats-table tbody")).to_contain_text("ops.accounts")
            expect(page.locator("#report")).to_contain_text(ops.rep)
            page.screenshot(path=shots / "4-statistics.png", full_page=True)
            page.click('#tabs a[data-tab="events"]')
            expect(page.locator("#event-table tbody")).to_contain_text("Manager started")
            page.screenshot(path=shots / "5-events.png", full_page=True)
        finally:
            browser.close()
    print(f"\nconsole screenshots: {shots}")
    _wait(lambda: ops.pipeline.started_since(mark), "the Extract to run again",
          check=ops.pipeline.check_running)


def test_kill9_of_the_replicat_is_restarted_and_the_target_exact(ops: Ops) -> None:
    _wait(lambda: _all_running(ops), "every group running")
    mark = ops.pipeline.event_mark()
    work = threading.Thread(target=_increments, args=(ops.dbs.source_conninfo, 300),
                            kwargs={"first": 1000})
    work.start()
    try:
        _wait(lambda: ops.pipeline.operations(ops.pipeline.groups[1]) > 60,
              "the Replicat to apply some", check=ops.pipeline.check_running)
        pid = lifecycle.process_state(ops.home, ops.rep).pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: (s := lifecycle.process_state(ops.home, ops.rep)).status
              is Status.RUNNING and s.pid != pid, "the Manager to restart the Replicat")
    finally:
        work.join()
    log = ops.home.ggserr_log.read_bytes()[mark:].decode()
    assert f"REPLICAT {ops.rep} abended." in log
    assert f"Manager restarting REPLICAT {ops.rep} (retry 1 of 3)." in log
    ops.pipeline.wait_caught_up(ops.dbs.source_conninfo, timeout=600)
    assert _rows(ops.dbs.target_conninfo) == _rows(ops.dbs.source_conninfo)
    _status, group = call(ops.port, f"/api/groups/{ops.rep}", token=ops.token)
    assert group["restarts"] == 1 and group["status"] == "RUNNING"


@pytest.mark.heavy
def test_a_lost_target_connection_is_restarted(ops: Ops) -> None:
    """The Replicat's sessions on the target ended by the server (pg_terminate_backend, as
    a server restart or a network cut would): it abends with a retryable error and the
    Manager restarts it; the target ends exact."""
    mark = ops.pipeline.event_mark()
    work = threading.Thread(target=_increments, args=(ops.dbs.source_conninfo, 300),
                            kwargs={"first": 5000})
    work.start()

    def since() -> str:
        return ops.home.ggserr_log.read_bytes()[mark:].decode()

    try:
        # sessions ended until the Replicat abends for it (on a loaded machine it may first
        # abend, and be restarted, for a reason of Spark's own: the ends go on meanwhile)
        _wait(lambda: "lost the connection" in since() or _terminate(ops),
              "an abend for the lost connection", timeout=600)
        _wait(lambda: f"Manager restarting REPLICAT {ops.rep}" in
              since()[since().index("lost the connection"):],
              "the Manager to restart the Replicat after it")
    finally:
        work.join()
    _wait(lambda: lifecycle.process_state(ops.home, ops.rep).status is Status.RUNNING
          and ops.pipeline.started_since(mark), "the Replicat to run again")
    ops.pipeline.wait_caught_up(ops.dbs.source_conninfo, timeout=600)
    assert _rows(ops.dbs.target_conninfo) == _rows(ops.dbs.source_conninfo)


def _terminate(ops: Ops) -> bool:
    with connect(ops.dbs.target_conninfo) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     "application_name = %s", (f"trailgate replicat {ops.rep}",))
    time.sleep(1)
    return False


def test_a_data_error_is_reported_and_not_restarted(ops: Ops) -> None:
    restarts = call(ops.port, f"/api/groups/{ops.rep}", token=ops.token)[1]["restarts"]
    mark = ops.pipeline.event_mark()
    run_sql(ops.dbs.target_conninfo, "INSERT INTO ops.accounts VALUES (5000, 0, 'in the way')")
    run_sql(ops.dbs.source_conninfo, "INSERT INTO ops.accounts VALUES (5000, 1, 'collides')")
    _wait(lambda: lifecycle.process_state(ops.home, ops.rep).status is Status.ABENDED,
          "the Replicat to abend on the collision")
    _wait(lambda: "abended for an error a restart does not cure" in
          ops.home.ggserr_log.read_bytes()[mark:].decode(), "the Manager's report", 30)
    time.sleep(3)  # several Manager ticks: nothing restarts it
    assert lifecycle.process_state(ops.home, ops.rep).status is Status.ABENDED
    _status, group = call(ops.port, f"/api/groups/{ops.rep}", token=ops.token)
    assert group["restarts"] == restarts and group["status"] == "ABENDED"
    assert "23505" in group["last_abend"] or "already exists" in group["last_abend"]
    log = ops.home.ggserr_log.read_bytes()[mark:].decode()
    assert f"Manager restarting REPLICAT {ops.rep}" not in log


def test_no_password_in_any_file_the_run_wrote(ops: Ops) -> None:
    """After the whole run (starts, a kill -9, an abend): no file of the home, Spark's
    scratch and temporary directories, or the system's temporary directory written since
    the run began holds the password; the credential store is sealed."""
    store = ops.home.dircrd / "credentials.sealed"
    assert store.exists() and not (ops.home.dircrd / "credentials.json").exists()
    assert _files_holding(ops.password, [ops.directory]) == []
    assert _files_holding(ops.password, [Path(tempfile.gettempdir())], since=ops.started,
                          max_bytes=16 << 20) == []
    assert _processes_holding(ops.password) == []
