"""GGSCI's heartbeat table against the embedded PostgreSQL: ADD, INFO, ALTER (a running
writer follows at its next beat), the Manager's RETENTION_TIME purge of the history every
PURGE_FREQUENCY, DELETE, and the error without a GGSCHEMA."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_ggsci_pg import quoted, run_obey

from trailgate.db.connect import connect
from trailgate.db.heartbeat import HeartbeatWriter, heartbeat_objects
from trailgate.home import GroupInfo, Home
from trailgate.manager.lag import LagMonitor
from trailgate.manager.params import ManagerParams

pytestmark = pytest.mark.postgres


def _until(done: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _published(conninfo: str) -> list[str]:
    with connect(conninfo) as conn:
        return [r[0] for r in conn.execute(
            "SELECT schemaname || '.' || tablename FROM pg_publication_tables "
            "WHERE pubname = 'trailgate'").fetchall()]


def _history(conninfo: str) -> list[str]:
    with connect(conninfo) as conn:
        return [r[0] for r in conn.execute(
            "SELECT incoming_extract FROM ggadmin.gg_heartbeat_history ORDER BY 1").fetchall()]


def test_heartbeattable_add_alter_purge_delete(pg_db: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    home = Home(tmp_path / "gg").create()
    login = f"DBLOGIN SOURCEDB {quoted(pg_db)}\n"

    # no GGSCHEMA in GLOBALS: GoldenGate's error, nothing created
    _status, out = run_obey(home, login + "ADD HEARTBEATTABLE\n", tmp_path, capsys)
    assert "No heartbeat table schema available (OGG-02735)" in out and "GGSCHEMA" in out, out
    with connect(pg_db) as conn:
        assert not any(heartbeat_objects(conn, "ggadmin").values())

    home.globals_file.write_text("GGSCHEMA ggadmin\n")
    status, out = run_obey(home, login + "ADD HEARTBEATTABLE, FREQUENCY 1, RETENTION_TIME 2\n"
                           "INFO HEARTBEATTABLE\n", tmp_path, capsys)
    assert status == 0, out
    assert "Successfully created heartbeat table ggadmin.gg_heartbeat_seed." in out
    assert "HEARTBEAT table frequency interval: 1 seconds." in out
    assert "HEARTBEAT table retention time: 2 days." in out
    assert "No heartbeat received yet." in out
    assert "ggadmin.gg_heartbeat_seed" in _published(pg_db)

    # a running writer beats every second; after ALTER it follows the new frequency from
    # its next beat (the row written then reads it), without a restart
    writer = HeartbeatWriter(pg_db, "ggadmin", "EXT1")
    writer.start()
    try:
        _until(lambda: writer.beats >= 3, "three heartbeats at FREQUENCY 1")
        status, out = run_obey(home, login + "ALTER HEARTBEATTABLE, FREQUENCY 3600\n"
                               "INFO HEARTBEATTABLE\n", tmp_path, capsys)
        assert status == 0, out
        assert "Successfully altered heartbeat table ggadmin: frequency 3600 seconds, " \
               "retention 2 days" in out
        assert "HEARTBEAT table frequency interval: 3600 seconds." in out
        altered = writer.beats
        time.sleep(2.5)  # the beat in flight and the next one (which reads 3600) at most
        settled = writer.beats
        assert settled - altered <= 2
        time.sleep(3)
        assert writer.beats == settled, "the writer did not follow ALTER HEARTBEATTABLE"
    finally:
        writer.stop()
    assert not writer.is_alive()

    # the Manager purges the target's history older than RETENTION_TIME (2 days), then
    # not again before PURGE_FREQUENCY (1 day) has passed
    home.add_group(GroupInfo("REP1", "REPLICAT", "EXTTRAIL", "./dirdat/aa"))
    home.param_file("REP1").write_text(f"REPLICAT rep1\nTARGETDB {pg_db}\nMAP a.*, TARGET a.*;\n")
    with connect(pg_db) as conn:
        for name, age in (("OLD", "3 days"), ("KEPT", "1 day"), ("NEW", "0 seconds")):
            conn.execute("INSERT INTO ggadmin.gg_heartbeat_history (remote_database, "
                         "incoming_extract, heartbeat_timestamp, incoming_replicat, "
                         "incoming_replicat_ts) VALUES ('src', %s, now() - %s::interval, "
                         "'REP1', now() - %s::interval)", (name, age, age))
    monitor = LagMonitor(home, ManagerParams(), lambda *_: None)
    try:
        monitor.sample([])
        assert _history(pg_db) == ["KEPT", "NEW"]
        assert {r["incoming_path"] for r in monitor.heartbeat_rows} >= {"NEW ==> REP1"}
        with connect(pg_db) as conn:
            conn.execute("INSERT INTO ggadmin.gg_heartbeat_history (incoming_extract, "
                         "incoming_replicat_ts) VALUES ('OLD2', now() - '5 days'::interval)")
        monitor.sample([])
        assert _history(pg_db) == ["KEPT", "NEW", "OLD2"]
    finally:
        monitor.close()

    status, out = run_obey(home, login + "DELETE HEARTBEATTABLE\nINFO HEARTBEATTABLE\n",
                           tmp_path, capsys)
    assert status == 0, out
    assert "Successfully deleted heartbeat table ggadmin.gg_heartbeat_seed." in out
    assert "Successfully deleted heartbeat table ggadmin.gg_heartbeat_history." in out
    assert "No heartbeat table in schema ggadmin" in out
    with connect(pg_db) as conn:
        assert not any(heartbeat_objects(conn, "ggadmin").values())
        views = conn.execute("SELECT count(*) FROM pg_views WHERE schemaname = 'ggadmin'"
                             ).fetchone()
        assert views is not None and views[0] == 0
    assert "ggadmin.gg_heartbeat_seed" not in _published(pg_db)
    _status, out = run_obey(home, login + "ALTER HEARTBEATTABLE, FREQUENCY 5\n", tmp_path,
                            capsys)
    assert "ERROR: No heartbeat table in schema ggadmin; ADD HEARTBEATTABLE creates it." in out
