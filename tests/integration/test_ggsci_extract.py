"""GGSCI starts, watches and stops a real Extract (``trailgate run extract`` on Spark)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from trailgate.cli import main
from trailgate.db.connect import connect
from trailgate.home import Home
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


@pytest.fixture
def src(pg_db: str) -> Iterator[psycopg.Connection]:
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA shop")
        conn.execute("CREATE TABLE shop.orders (id int PRIMARY KEY, item text)")
        yield conn
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE slot_name = 'trailgate_gxe1' AND active_pid IS NULL")


def ggsci(home: Home, script: str, tmp_path: Path,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    oby = tmp_path / "cmds.oby"
    oby.write_text(script)
    status = main(["--home", str(home.path), "ggsci", str(oby)])
    return status, capsys.readouterr().out


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_start_stats_stop_a_real_extract(src: psycopg.Connection, pg_db: str,
                                         tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    home = Home(tmp_path / "gg").create()
    conninfo = "'" + pg_db.replace("'", "''") + "'"
    home.param_file("gxe1").write_text(
        f"EXTRACT gxe1\nSOURCEDB {pg_db}\nEXTTRAIL ./dirdat/ea\n"
        f"SPARK MASTER local[1]\nSPARK TRIGGER 1 SECONDS\nTABLE shop.*;\n")
    status, out = ggsci(home, f"""\
DBLOGIN SOURCEDB {conninfo}
ADD TRANDATA shop.orders
ADD EXTRACT gxe1, TRANLOG, BEGIN NOW
ADD EXTTRAIL ./dirdat/ea, EXTRACT gxe1
START EXTRACT gxe1
""", tmp_path, capsys)
    try:
        assert status == 0, out + home.report_file("GXE1").read_text()
        assert "EXTRACT GXE1 starting" in out
        assert lifecycle.process_state(home, "GXE1").status is Status.RUNNING
        src.execute("INSERT INTO shop.orders SELECT g, 'item ' || g "
                    "FROM generate_series(1, 25) g")
        src.execute("UPDATE shop.orders SET item = 'changed' WHERE id <= 3")

        def counted() -> bool:
            cp = home.checkpoints.load("GXE1", "EXTRACT")
            stats = cp.stats.get("shop.orders") if cp else None
            return stats is not None and (stats.inserts, stats.updates) == (25, 3)

        wait_for(counted, 180, "the Extract to checkpoint 25 inserts and 3 updates")
        status, out = ggsci(home, "INFO ALL\nINFO EXTRACT gxe1, SHOWCH\nSTATS gxe1\n"
                                  "STOP EXTRACT gxe1\nINFO ALL\nVIEW REPORT gxe1\n",
                            tmp_path, capsys)
        assert status == 0, out
        first, last = out.split("> INFO ALL")[1], out.split("> INFO ALL")[2]
        assert re.search(r"EXTRACT +RUNNING +GXE1", first)
        assert re.search(r"Process ID +\d+", out)
        assert re.search(r"Sequence #: 0\n +RBA: [1-9]\d*", out)  # the trail was written
        assert re.search(r"Total inserts +25\.00", out)
        assert re.search(r"Total updates +3\.00", out)
        assert "Request processed." in out
        assert re.search(r"EXTRACT +STOPPED +GXE1", last)
        assert not lifecycle.pid_file(home, "GXE1").exists()
        assert "OGG-00975" in home.ggserr_log.read_text()
        assert re.search(r"EXTRACT +GXE1 +Last Started \d{4}-", out)
    finally:
        state = lifecycle.process_state(home, "GXE1")
        if state.status in (Status.RUNNING, Status.STARTING):
            lifecycle.kill_group(home, "EXTRACT", "GXE1")
