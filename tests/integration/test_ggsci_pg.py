"""GGSCI against the embedded PostgreSQL: DBLOGIN, TRANDATA, SCHEMATRANDATA, ADD/DELETE
EXTRACT (replication slots), checkpoint tables, via obey files and stdin."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from trailgate.cli import main
from trailgate.db.cluster import Cluster
from trailgate.db.connect import connect
from trailgate.home import Home

pytestmark = pytest.mark.postgres


@pytest.fixture
def src(pg_db: str) -> Iterator[psycopg.Connection]:
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA us01")
        conn.execute("CREATE TABLE us01.t22 (c1 int PRIMARY KEY, c2 text)")
        conn.execute("CREATE TABLE us01.t27 (c1 int, c2 text, c3 int NOT NULL, "
                     "CONSTRAINT t27_uk UNIQUE (c3))")
        conn.execute("CREATE TABLE us01.heap (a int, b text)")
        yield conn


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "gg").create()


def quoted(conninfo: str) -> str:
    """A conninfo as a GGSCI string literal (a password may contain ``--``)."""
    return "'" + conninfo.replace("'", "''") + "'"


def run_obey(home: Home, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
             ) -> tuple[int, str]:
    oby = tmp_path / "setup.oby"
    oby.write_text(text)
    status = main(["--home", str(home.path), "ggsci", str(oby)])
    return status, capsys.readouterr().out


def run_stdin(home: Home, text: str, monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    status = main(["--home", str(home.path), "ggsci"])
    return status, capsys.readouterr().out


def slots(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots "
                                       "ORDER BY 1").fetchall()]


def test_setup_obey_file(src: psycopg.Connection, pg_db: str, home: Home, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    script = f"""\
-- the usual setup, as a GoldenGate DBA writes it
DBLOGIN SOURCEDB {quoted(pg_db)}
ADD TRANDATA us01.t22
ADD TRANDATA us01.t27, ALLCOLS
ADD TRANDATA us01.heap
INFO TRANDATA us01.*
ADD EXTRACT gx1, TRANLOG, BEGIN NOW
ADD EXTTRAIL ./dirdat/aa, EXTRACT gx1
INFO ALL
"""
    try:
        status, out = run_obey(home, script, tmp_path, capsys)
        assert status == 0, out
        assert "Successfully logged into database." in out
        assert "Logging of supplemental redo data enabled for table us01.t22." in out
        assert re.search(r"WARNING OGG-06439  No unique key is defined for table us01.heap",
                         out)
        assert "Columns supplementally logged for table us01.t22: c1." in out
        assert "Columns supplementally logged for table us01.t27: c3, c1, c2." in out
        assert src.execute("SELECT relreplident::text FROM pg_class "
                           "WHERE oid = 'us01.t27'::regclass").fetchone()[0] == "f"
        assert re.search(r"Replication slot trailgate_gx1 created at LSN [0-9A-F]+/[0-9A-F]+ "
                         r"\(publication trailgate\)\.\nEXTRACT added\.", out)
        assert "trailgate_gx1" in slots(src)
        group = home.group("GX1")
        assert group is not None and set(group.begin) == {"lsn"}  # type: ignore[arg-type]
        assert "EXTRACT     STOPPED     GX1" in out
        assert conninfo_to_dict(pg_db)["password"] not in out  # the echo masks it
        assert "password=***" in out
        # deleting the Extract drops its slot (DBLOGIN in the same session)
        status, out = run_obey(home, f"DBLOGIN SOURCEDB {quoted(pg_db)}\nDELETE EXTRACT gx1\n",
                               tmp_path, capsys)
        assert status == 0, out
        assert "Replication slot trailgate_gx1 dropped.\nDeleted EXTRACT GX1." in out
        assert "trailgate_gx1" not in slots(src)
        assert home.group("GX1") is None
    finally:
        src.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = 'trailgate_gx1'")


def test_stdin_script_stops_at_the_first_error(src: psycopg.Connection, pg_db: str,
                                               home: Home, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_stdin(home, "ADD TRANDATA us01.t22\nINFO ALL\n", monkeypatch, capsys)
    assert status == 1
    assert "ERROR: Not logged into database, use DBLOGIN.\n" \
           "ERROR: stdin, line 1: the obey file stopped here" in out
    script = (f"DBLOGIN SOURCEDB {quoted(pg_db)}\nADD TRANDATA us01.nothere\n"
              f"ADD TRANDATA us01.t22\n")
    status, out = run_stdin(home, script, monkeypatch, capsys)
    assert status == 1
    assert "ERROR: no table matches us01.nothere" in out
    assert "stdin, line 2: the obey file stopped here" in out
    assert src.execute("SELECT relreplident::text FROM pg_class "
                       "WHERE oid = 'us01.t22'::regclass").fetchone()[0] == "d"
    assert "Traceback" not in out


def test_schematrandata_and_delete_trandata(src: psycopg.Connection, pg_db: str,
                                            home: Home, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    script = f"""\
DBLOGIN SOURCEDB {quoted(pg_db)}
ADD SCHEMATRANDATA us01
INFO SCHEMATRANDATA us01
DELETE TRANDATA us01.t22
DELETE SCHEMATRANDATA us01
INFO SCHEMATRANDATA us01
"""
    status, out = run_stdin(home, script, monkeypatch, capsys)
    assert status == 0, out
    assert re.search(r"INFO OGG-01788  SCHEMATRANDATA has been added on schema us01\.", out)
    assert re.search(r"INFO OGG-06480  Schema level supplemental logging, excluding "
                     r"non-validated keys, is enabled on schema us01\.", out)
    assert "Logging of supplemental redo data disabled for table us01.t22." in out
    assert re.search(r"INFO OGG-01792  SCHEMATRANDATA has been deleted on schema us01\.", out)
    assert "Schema level supplemental logging is disabled on schema us01." in out
    status, out = run_stdin(home, f"DBLOGIN SOURCEDB {quoted(pg_db)}\n"
                                  f"ADD SCHEMATRANDATA us01, ALLCOLS\n", monkeypatch, capsys)
    assert status == 1 and "ALLCOLS is not supported on PostgreSQL" in out


def test_dblogin_alias_and_prerequisite_report(pg_cluster: Cluster, pg_db: str,
                                               src: psycopg.Connection, home: Home,
                                               tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    db = src.info.dbname
    src.execute("DROP ROLE IF EXISTS ggplain")
    src.execute("CREATE ROLE ggplain LOGIN PASSWORD 'pw--x'")
    plain = pg_cluster.conninfo(db, user="ggplain", password="pw--x")
    script = f"""\
ADD CREDENTIALSTORE
ALTER CREDENTIALSTORE ADD USER {quoted(plain)} PASSWORD 'pw--x' ALIAS plain
DBLOGIN USERIDALIAS plain
"""
    try:
        status, out = run_obey(home, script, tmp_path, capsys)
        assert status == 0, out
        assert "Successfully logged into database." in out
        assert "ERROR: user ggplain lacks the REPLICATION privilege" in out
        assert "Capture from " in out and "is not possible until the ERROR lines" in out
        assert "pw--x" not in out
        status, out = run_obey(home, "DBLOGIN USERIDALIAS nobody\n", tmp_path, capsys)
        assert status == 1 and "credential alias 'nobody' does not exist" in out
        status, out = run_obey(home, "DBLOGIN SOURCEDB 'host=127.0.0.1 port=1 dbname=x'\n",
                               tmp_path, capsys)
        assert status == 1 and "ERROR: cannot connect to PostgreSQL" in out
    finally:
        src.execute("REASSIGN OWNED BY ggplain TO CURRENT_USER")
        src.execute("DROP OWNED BY ggplain")


def test_checkpoint_table_and_replicat(src: psycopg.Connection, pg_db: str, home: Home,
                                       tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    home.globals_file.write_text("CHECKPOINTTABLE ggadmin.chkpt\n")
    script = f"""\
DBLOGIN SOURCEDB {quoted(pg_db)}
ADD CHECKPOINTTABLE
ADD REPLICAT rep1, EXTTRAIL ./dirdat/aa
INFO CHECKPOINTTABLE ggadmin.chkpt
"""
    status, out = run_obey(home, script, tmp_path, capsys)
    assert status == 0, out
    assert "Successfully created checkpoint table ggadmin.chkpt." in out
    assert re.search(r"Checkpoint table ggadmin.chkpt created \d{4}-\d\d-\d\dT", out)
    cols = [r[0] for r in src.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'ggadmin' "
        "AND table_name = 'chkpt' ORDER BY ordinal_position").fetchall()]
    assert cols == ["group_name", "batch_id", "partition", "position", "updated"]
    assert home.group("REP1").checkpoint_table == "ggadmin.chkpt"  # type: ignore[union-attr]
    # what a Replicat writes, and what INFO and DELETE REPLICAT do with it
    src.execute("INSERT INTO ggadmin.chkpt (group_name, batch_id, partition, position) "
                "VALUES ('REP1', 7, 0, '0:1234'), ('REP1', 7, 1, '0:1234')")
    with pytest.raises(psycopg.errors.UniqueViolation):  # a replayed partition is refused
        src.execute("INSERT INTO ggadmin.chkpt (group_name, batch_id, partition, position) "
                    "VALUES ('REP1', 7, 1, '0:1234')")
    status, out = run_obey(home, f"DBLOGIN SOURCEDB {quoted(pg_db)}\nINFO CHECKPOINTTABLE\n"
                                 f"DELETE REPLICAT rep1\nADD CHECKPOINTTABLE\n",
                           tmp_path, capsys)
    assert status == 1
    assert "REP1: last batch 7, 2 row(s), updated" in out
    assert "Deleted 2 row(s) of REP1 from checkpoint table ggadmin.chkpt." in out
    assert "ERROR: Checkpoint table ggadmin.chkpt already exists" in out
    status, out = run_obey(home, f"DBLOGIN SOURCEDB {quoted(pg_db)}\nDELETE CHECKPOINTTABLE\n"
                                 f"INFO CHECKPOINTTABLE\n", tmp_path, capsys)
    assert status == 1
    assert "Successfully deleted checkpoint table ggadmin.chkpt." in out
    assert "ERROR: Checkpoint table ggadmin.chkpt does not exist" in out
