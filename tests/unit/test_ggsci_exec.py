"""GGSCI executor and shell on a temporary home: registry, status tables, checkpoints, files,
credential store, history, obey files and the error policy (no database, no processes)."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trailgate.checkpoint import Checkpoint
from trailgate.cli import main
from trailgate.ggsci import display
from trailgate.ggsci.executor import mask_secrets
from trailgate.ggsci.shell import Shell, history_line, run
from trailgate.home import GroupInfo, Home
from trailgate.model import TrailPosition
from trailgate.wallet import CredentialStore, MasterKeyWallet, master_key


def ggsci(home: Path, script: str) -> tuple[int, str]:
    """Run ``script`` as ``trailgate ggsci < script`` would; returns (status, output)."""
    out = io.StringIO()
    status = run(argparse.Namespace(home=str(home), obey=None), stdin=io.StringIO(script),
                 stdout=out)
    return status, out.getvalue()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home with EXTRACT EXT1 as ADD EXTRACT ext1, TRANLOG, BEGIN NOW registers it after
    DBLOGIN (the slot itself is tested against PostgreSQL in test_ggsci_pg)."""
    home = Home(tmp_path / "gg").create()
    home.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG", begin={"lsn": "0/1000000"},
                             description="orders capture"))
    return home


SETUP = """\
ADD EXTTRAIL ./dirdat/aa, EXTRACT ext1, MEGABYTES 100
ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/aa
ADD RMTTRAIL ./dirdat/rt, EXTRACT pmp1
ADD EXTRACT ora1, TRANLOG, DUMPDIR /dumps, SCN 4711
ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt
"""


def test_add_commands_fill_the_registry(home: Home) -> None:
    home.globals_file.write_text("CHECKPOINTTABLE gg.chkpt\n")
    status, out = ggsci(home.path, SETUP)
    assert status == 0, out
    groups = {g.name: g for g in home.groups()}
    assert sorted(groups) == ["EXT1", "ORA1", "PMP1", "REP1"]
    ext1 = groups["EXT1"]
    assert (ext1.kind, ext1.source, ext1.description) == (
        "EXTRACT", "TRANLOG", "orders capture")
    assert [(t.path, t.kind, t.megabytes) for t in ext1.trails] == [
        ("./dirdat/aa", "EXTTRAIL", 100)]
    assert (groups["PMP1"].source, groups["PMP1"].source_path) == (
        "EXTTRAILSOURCE", "./dirdat/aa")
    assert [(t.path, t.kind, t.megabytes) for t in groups["PMP1"].trails] == [
        ("./dirdat/rt", "RMTTRAIL", 500)]
    assert (groups["ORA1"].source, groups["ORA1"].source_path, groups["ORA1"].begin) == (
        "DUMPDIR", "/dumps", {"scn": 4711})
    rep = groups["REP1"]
    assert (rep.kind, rep.source, rep.source_path, rep.checkpoint_table, rep.begin) == (
        "REPLICAT", "EXTTRAIL", "./dirdat/rt", "gg.chkpt", {"seqno": 0, "rba": 0})
    # echoed like a GGSCI session, with GGSCI's answers
    assert re.search(r"GGSCI \(.+\) 1> ADD EXTTRAIL \./dirdat/aa, EXTRACT ext1", out)
    assert "EXTTRAIL added." in out and "RMTTRAIL added." in out
    assert "REPLICAT added." in out
    # every change is in the event log
    log = home.ggserr_log.read_text()
    assert "OGG-00987" in log and "ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt." in log


def test_duplicate_group_stops_the_script_with_file_and_line(home: Home) -> None:
    status, out = ggsci(home.path, SETUP + "ADD REPLICAT ext1, EXTTRAIL ./dirdat/aa\n"
                                           "INFO ALL\n")
    assert status == 1
    assert "ERROR: EXTRACT EXT1 already exists." in out
    assert "ERROR: stdin, line 6: the obey file stopped here" in out
    assert "> INFO ALL" not in out


def test_syntax_error_anywhere_runs_nothing(home: Home) -> None:
    status, out = ggsci(home.path, "ADD EXTRACT e2, EXTTRAILSOURCE ./x/aa\nADD EXTRAKT x\n")
    assert status == 1
    assert "ERROR: Invalid command: 'ADD EXTRAKT x'" in out
    assert "ERROR: stdin, line 2: nothing in stdin was run" in out
    assert [g.name for g in home.groups()] == ["EXT1"]


def test_trandata_needs_dblogin(home: Home) -> None:
    status, out = ggsci(home.path, "INFO TRANDATA us01.t22\nINFO ALL\n")
    assert status == 1
    assert "ERROR: Not logged into database, use DBLOGIN." in out.splitlines()
    for script in ("ADD SCHEMATRANDATA us01\n", "ADD CHECKPOINTTABLE gg.chk\n",
                   "DELETE TRANDATA us01.t22\n"):
        assert "ERROR: Not logged into database, use DBLOGIN." in ggsci(home.path, script)[1]


def test_interactive_mode_reports_errors_and_continues(home: Home) -> None:
    out = io.StringIO()
    shell = Shell(home, out, interactive=True)
    assert shell.run_interactive_line("INFO TRANDATA us01.t22") is False
    assert shell.run_interactive_line("ADD EXTRAKT x") is False
    assert shell.run_interactive_line("ADD EXTRACT e5, EXTTRAILSOURCE ./dirdat/aa") is False
    assert shell.run_interactive_line("EXIT") is True
    text = out.getvalue()
    assert "ERROR: Not logged into database, use DBLOGIN." in text
    assert "ERROR: Invalid command: 'ADD EXTRAKT x'" in text
    assert "EXTRACT added." in text
    assert shell.prompt.endswith(" 4> ")  # a line that does not parse takes no number


def _checkpoint(group: str, kind: str, *, lag: int = 5, age: int = 0) -> Checkpoint:
    now = datetime.now(UTC) - timedelta(seconds=age)
    cp = Checkpoint(group, kind, read_position={"lsn": "0/16B3748"},
                    recovery_position={"lsn": "0/16B3000"},
                    read_time=(now - timedelta(seconds=lag)).isoformat(),
                    write_trail="./dirdat/aa", write_position=TrailPosition(3, 1234),
                    last_csn=23827784, last_xid="771")
    cp.updated = now.isoformat()
    cp.stats_since = (now - timedelta(hours=1)).isoformat()
    cp.count("public.orders", "insert", 10)
    cp.count("public.orders", "update", 4)
    cp.count("public.orders", "discard", 1)
    cp.count("public.items", "delete", 2)
    cp.count("public.items", "truncate", 1)
    return cp


def _save(home: Home, cp: Checkpoint) -> None:
    """Write a checkpoint as the running group does, keeping our ``updated`` stamp."""
    home.checkpoints.path(cp.group, cp.kind).write_text(json.dumps(cp.to_json()))


def test_info_all_table_shows_status_and_lag(home: Home) -> None:
    ggsci(home.path, SETUP)
    _save(home, _checkpoint("EXT1", "EXTRACT", lag=75, age=3725))
    status, out = ggsci(home.path, "INFO ALL\n")
    assert status == 0
    lines = out.splitlines()
    head = lines.index("Program     Status      Group       Lag at Chkpt  Time Since Chkpt")
    assert lines[head + 2] == "MANAGER     STOPPED"  # GGSCI's first row: the Manager
    rows = [line for line in lines[head + 3:head + 7]]
    assert re.fullmatch(r"EXTRACT     STOPPED     EXT1        00:01:15      01:02:0[5-9]",
                        rows[0]), rows[0]
    assert rows[1].startswith("EXTRACT     STOPPED     ORA1        00:00:00")
    assert rows[3].startswith("REPLICAT    STOPPED     REP1        00:00:00")
    # a dead process's pid file: ABENDED
    (home.dirchk / "REP1.pid").write_text("999999999\n")
    assert "REPLICAT    ABENDED     REP1" in ggsci(home.path, "INFO ALL\n")[1]


def test_info_showch_reads_the_checkpoint_file(home: Home) -> None:
    ggsci(home.path, SETUP)
    _save(home, _checkpoint("EXT1", "EXTRACT"))
    status, out = ggsci(home.path, "INFO EXTRACT ext1, SHOWCH, DETAIL\n")
    assert status == 0, out
    lines = [line.strip() for line in out.splitlines()]
    assert re.match(r"EXTRACT +EXT1 +Last Started .* Status STOPPED", out.splitlines()[3]) \
        or any(re.match(r"EXTRACT +EXT1 +(Last Started|Initialized).*Status STOPPED", line)
               for line in lines)
    assert "Checkpoint Lag       00:00:05 (updated 00:00:00 ago)" in out
    assert "Log Read Checkpoint  PostgreSQL WAL" in out
    order = ["Read Checkpoint #1", "Startup Checkpoint (starting position in the data source):",
             "LSN: 0/1000000",
             "Recovery Checkpoint (position of oldest unprocessed transaction in the data "
             "source):", "LSN: 0/16B3000",
             "Current Checkpoint (position of last record read in the data source):",
             "LSN: 0/16B3748", "Write Checkpoint #1",
             "Current Checkpoint (current write position):", "Sequence #: 3", "RBA: 1234",
             "Extract Trail: ./dirdat/aa", "Trail Type: EXTTRAIL", "CSN: 23827784",
             "XID: 771"]
    positions = [lines.index(item) for item in order]
    assert positions == sorted(positions)
    assert re.search(r"\./dirdat/aa +3 +1234 +100 EXTTRAIL", out)  # DETAIL's trail table
    assert f"Checkpoint file      {home.dirchk / 'EXT1.cpe'}" in out


def test_info_without_checkpoint_and_wildcards(home: Home) -> None:
    ggsci(home.path, SETUP)
    status, out = ggsci(home.path, "INFO EXTRACT *\n")
    assert status == 0
    assert [m.group(1) for m in re.finditer(r"^EXTRACT +(\w+) +Initialized", out, re.M)] == [
        "EXT1", "ORA1", "PMP1"]
    assert "First Record  SCN 4711" in out
    assert "Log Read Checkpoint  File ./dirdat/aa" in out
    status, out = ggsci(home.path, "INFO EXTRACT rep1\n")
    assert status == 1 and "ERROR: REP1 is a REPLICAT, not a EXTRACT." in out
    status, out = ggsci(home.path, "INFO X*\n")
    assert status == 1 and "ERROR: No group matches X*" in out


def test_stats_per_table_and_totals(home: Home) -> None:
    ggsci(home.path, SETUP)
    _save(home, _checkpoint("EXT1", "EXTRACT"))
    status, out = ggsci(home.path, "STATS EXTRACT ext1, REPORTRATE MIN\n")
    assert status == 0, out
    blocks = out.split("Extracting from ")
    orders = next(b for b in blocks if b.startswith("public.orders:"))
    assert re.search(r"Total inserts +10\.00", orders)
    assert re.search(r"Total updates +4\.00", orders)
    assert re.search(r"Total discards +1\.00", orders)
    assert re.search(r"Total operations +14\.00", orders)
    items = next(b for b in blocks if b.startswith("public.items:"))
    assert re.search(r"Total deletes +2\.00", items)
    assert re.search(r"Total truncates +1\.00", items)
    totals = out.split("*** All tables (2)")[1]
    assert re.search(r"Total operations +17\.00", totals)
    assert re.search(r"Total discards +1\.00", totals)
    assert re.search(r"Rate \(operations per minute\) +0\.28", totals)  # 17 ops in 60 min
    assert "Output to ./dirdat/aa:" in out
    status, out = ggsci(home.path, "STATS ext1, TABLE public.ord*\n")
    assert "public.orders" in out and "public.items" not in out
    status, out = ggsci(home.path, "STATS ext1, RESET\n")
    assert status == 0 and "Statistics of EXTRACT EXT1 reset." in out
    cp = home.checkpoints.load("EXT1", "EXTRACT")
    assert cp is not None and cp.stats == {}
    assert "No database operations have been performed." in ggsci(home.path, "STATS ext1\n")[1]


def test_lag(home: Home) -> None:
    ggsci(home.path, SETUP)
    _save(home, _checkpoint("EXT1", "EXTRACT", lag=42))
    status, out = ggsci(home.path, "LAG EXTRACT ext1\n")
    assert status == 0
    assert "Last record lag 42 seconds." in out
    assert "EXT1 is not running" in out
    assert "No records yet processed." in ggsci(home.path, "LAG pmp1\n")[1]


def test_info_exttrail_uses_the_write_checkpoint(home: Home) -> None:
    ggsci(home.path, SETUP)
    _save(home, _checkpoint("EXT1", "EXTRACT"))
    status, out = ggsci(home.path, "INFO EXTTRAIL *\n")
    assert status == 0
    assert re.search(r"Extract Trail: \./dirdat/aa\n.*\n +Extract: EXT1\n +Seqno: 3\n"
                     r" +RBA: 1234\n +File Size: 100M", out)
    assert "./dirdat/rt" not in out
    assert "Extract: PMP1" in ggsci(home.path, "INFO RMTTRAIL ./dirdat/rt\n")[1]
    status, out = ggsci(home.path, "DELETE EXTTRAIL ./dirdat/rt\n")
    assert status == 1 and "use DELETE RMTTRAIL ./dirdat/rt" in out
    status, out = ggsci(home.path, "DELETE RMTTRAIL ./dirdat/rt\n")
    assert status == 0 and "Deleting remote trail ./dirdat/rt for extract PMP1" in out
    assert home.group("PMP1").trails == []  # type: ignore[union-attr]


def test_view_and_edit_params(home: Home) -> None:
    ggsci(home.path, SETUP)
    status, out = ggsci(home.path, "VIEW PARAMS ext1\n")
    assert status == 1
    assert f"ERROR: Parameter file {home.dirprm / 'ext1.prm'} does not exist." in out
    status, out = ggsci(home.path, "EDIT PARAMS ext1\n")
    assert status == 0 and str(home.dirprm / "ext1.prm") in out.splitlines()
    assert (home.dirprm / "ext1.prm").read_text() == "EXTRACT EXT1\n"
    (home.dirprm / "ext1.prm").write_text("EXTRACT ext1\nEXTTRAIL ./dirdat/aa\n")
    status, out = ggsci(home.path, "EDIT PARAMS ext1\nVIEW PARAMS ext1\nEDIT PARAMS GLOBALS\n")
    assert "EXTRACT ext1\nEXTTRAIL ./dirdat/aa\n" in out  # an existing file is kept
    assert home.globals_file.exists()
    home.report_file("EXT1").write_text("***** report of EXT1 *****\nline two\n")
    assert "***** report of EXT1 *****\nline two" in ggsci(home.path, "VIEW REPORT ext1\n")[1]
    status, out = ggsci(home.path, "VIEW REPORT rep1\n")
    assert status == 1 and "ERROR: Report file" in out
    assert "GGSCI command" in ggsci(home.path, "VIEW GGSEVT\n")[1]


def test_edit_params_opens_the_editor_when_interactive(home: Home, tmp_path: Path) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\necho 'REPLICAT rep9' > \"$1\"\n")
    editor.chmod(0o755)
    shell = Shell(home, io.StringIO(), interactive=True, environ={"EDITOR": str(editor)})
    shell.run_interactive_line("EDIT PARAMS rep9")
    assert home.param_file("rep9").read_text() == "REPLICAT rep9\n"


def test_alter(home: Home) -> None:
    ggsci(home.path, SETUP)
    status, out = ggsci(home.path, "ALTER REPLICAT rep1, EXTSEQNO 7, EXTRBA 100\n")
    assert status == 0 and "REPLICAT altered." in out
    assert home.group("rep1").begin == {"seqno": 7, "rba": 100}  # type: ignore[union-attr]
    rep_cp = Checkpoint("REP1", "REPLICAT", read_position={"seqno": 7, "rba": 100})
    home.checkpoints.save(rep_cp)
    ggsci(home.path, "ALTER REPLICAT rep1, EXTSEQNO 9, EXTRBA 0\n")
    cp = home.checkpoints.load("REP1", "REPLICAT")
    assert cp is not None and cp.read_position == {"seqno": 9, "rba": 0}
    status, out = ggsci(home.path, "ALTER REPLICAT rep1, BEGIN NOW\n")
    assert status == 1 and "BEGIN applies only before the first start" in out
    status, out = ggsci(home.path, "ALTER EXTRACT ext1, SCN 5\n")
    assert status == 1 and "reposition it with LSN x/y" in out
    status, out = ggsci(home.path, "ALTER EXTRACT ext1, LSN 0/2000000\n")
    assert status == 1 and "has not run yet" in out
    cp = _checkpoint("EXT1", "EXTRACT")
    cp.read_position = {"lsn": 0x16B3748}  # as the running Extract writes it: a number
    _save(home, cp)
    status, out = ggsci(home.path, "ALTER EXTRACT ext1, LSN 0/1000000\n")
    assert status == 1 and "has read up to LSN 0/16B3748" in out
    status, out = ggsci(home.path, "ALTER EXTRACT ext1, LSN 0/2000000\n")
    assert status == 0, out
    cp = home.checkpoints.load("EXT1", "EXTRACT")
    assert cp is not None and cp.read_position == {"lsn": 0x2000000}
    assert cp.recovery_position is None
    _save(home, _checkpoint("EXT1", "EXTRACT"))
    status, out = ggsci(home.path, "ALTER EXTRACT ext1, ETROLLOVER\n")
    assert status == 0 and "Rollover performed" in out
    cp = home.checkpoints.load("EXT1", "EXTRACT")
    assert cp is not None and cp.write_position == TrailPosition(4, 0)


def test_delete_groups(home: Home) -> None:
    ggsci(home.path, SETUP)
    spark_dir = home.spark_checkpoint_dir("PMP1")
    spark_dir.mkdir()
    (spark_dir / "offsets").write_text("x")
    _save(home, _checkpoint("PMP1", "EXTRACT"))
    status, out = ggsci(home.path, "DELETE EXTRACT pmp1\n")
    assert status == 0 and "Deleted EXTRACT PMP1." in out
    assert not spark_dir.exists() and not home.checkpoints.path("PMP1", "EXTRACT").exists()
    status, out = ggsci(home.path, "DELETE EXTRACT ext1\n")  # its slot needs a login
    assert status == 1 and "drops its replication slot trailgate_ext1" in out
    status, out = ggsci(home.path, "DELETE EXTRACT ext1 !\n")
    assert status == 0 and "pg_drop_replication_slot('trailgate_ext1')" in out
    home.globals_file.write_text("CHECKPOINTTABLE gg.chk\n")
    ggsci(home.path, "ADD REPLICAT rep2, EXTTRAIL ./dirdat/rt\n")
    assert "checkpoint table gg.chk" in ggsci(home.path, "DELETE REPLICAT rep2\n")[1]
    status, out = ggsci(home.path, "DELETE REPLICAT rep2 !\nDELETE REPLICAT rep1\n")
    assert status == 0
    assert sorted(g.name for g in home.groups()) == ["ORA1"]


def test_start_without_parameter_file(home: Home) -> None:
    ggsci(home.path, SETUP)
    status, out = ggsci(home.path, "START EXTRACT ext1\n")
    assert status == 1
    assert f"Parameter file {home.dirprm / 'ext1.prm'} does not exist" in out
    status, out = ggsci(home.path, "STOP EXTRACT ext1\n")
    assert status == 0 and "EXTRACT EXT1 is already stopped." in out
    status, out = ggsci(home.path, "KILL EXTRACT ext1\n")
    assert status == 1 and "ERROR: EXTRACT EXT1 is not running." in out


def test_credential_store(home: Home) -> None:
    script = """\
ADD CREDENTIALSTORE
ALTER CREDENTIALSTORE ADD USER postgresql://gg:s3cret@db:5432/app ALIAS src
ALTER CREDENTIALSTORE ADD USER gg2 PASSWORD pw2 ALIAS tgt DOMAIN Prod
INFO CREDENTIALSTORE
"""
    status, out = ggsci(home.path, script)
    assert status == 1  # ADD USER without PASSWORD, not interactive
    assert "needs PASSWORD pw" in out
    script = script.replace("app ALIAS src", "app PASSWORD 'p w' ALIAS src")
    status, out = ggsci(home.path, script.replace("ADD CREDENTIALSTORE\n", ""))
    assert status == 0, out
    assert "Credential store in " in out and "altered." in out
    assert "Userid: postgresql://gg:***@db:5432/app" in out and "s3cret" not in out
    assert "Default domain: OracleGoldenGate" in out and "Alias: src" in out
    assert "Other domains:\n\n  Prod\n" in out and "Alias: tgt" not in out
    status, out = ggsci(home.path, "INFO CREDENTIALSTORE DOMAIN Prod\n")
    assert "Domain: Prod\n\n  Alias: tgt\n  Userid: gg2\n" in out, out
    store = home.dircrd / "credentials.sealed"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.dircrd.stat().st_mode) == 0o700
    assert json.loads(store.read_text())["header"]["cipher"] == "AES-256-GCM"
    assert CredentialStore(home.path).get("src").password == "p w"
    for path in home.path.rglob("*"):  # sealed: no password in any file of the home
        if path.is_file():
            assert b"p w" not in path.read_bytes() and b"pw2" not in path.read_bytes(), path
    status, out = ggsci(home.path, "ALTER CREDENTIALSTORE ADD USER x PASSWORD y ALIAS src\n")
    assert status == 1 and "use ALTER CREDENTIALSTORE REPLACE" in out
    status, out = ggsci(home.path,
                        "ALTER CREDENTIALSTORE REPLACE USER x PASSWORD y ALIAS src\n"
                        "ALTER CREDENTIALSTORE DELETE USER gg2 DOMAIN Prod\n"
                        "INFO CREDENTIALSTORE\n")
    assert status == 0, out
    assert "Userid: x" in out and "tgt" not in out
    status, out = ggsci(home.path, "DELETE CREDENTIALSTORE\nINFO CREDENTIALSTORE\n")
    assert status == 1 and "does not exist; ADD CREDENTIALSTORE creates it." in out


def test_master_key_wallet(home: Home) -> None:
    status, out = ggsci(home.path, "ADD MASTERKEY\n")
    assert status == 1 and "The wallet is not open; use OPEN WALLET (or CREATE WALLET)" in out
    status, out = ggsci(home.path, "OPEN WALLET\n")
    assert status == 1 and "There is no wallet at location './dirwlt'" in out
    status, out = ggsci(home.path, "CREATE WALLET\nADD MASTERKEY\nRENEW MASTERKEY\n"
                                   "RENEW MASTERKEY\nDELETE MASTERKEY VERSION 1\nINFO MASTERKEY\n"
                                   "INFO MASTERKEY VERSION 3\n")
    assert status == 0, out
    assert "Created wallet at location './dirwlt'.\nOpened wallet at location './dirwlt'." in out
    assert "Master key 'OGG_DEFAULT_MASTERKEY' added to wallet at location './dirwlt'." in out
    assert "Masterkey 'OGG_DEFAULT_MASTERKEY' renewed to version 3 in wallet at location " \
           "'./dirwlt'." in out
    assert "Version 1 of Masterkey 'OGG_DEFAULT_MASTERKEY' deleted from wallet" in out
    assert re.search(r"Masterkey Name: +OGG_DEFAULT_MASTERKEY\n", out)
    assert re.search(r"\n1 +\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} +Deleted\n2 .* +Available\n"
                     r"3 .* +Current\n", out), out
    key = master_key(home.path)
    assert key.version == 3
    assert f"Key Hash (SHA1):                0x{hashlib.sha1(key.key).hexdigest().upper()}" in out
    assert key.key.hex().upper() not in out.upper()
    # a new session: the wallet must be opened again; PURGE removes the marked version
    status, out = ggsci(home.path, "RENEW MASTERKEY\n")
    assert status == 1 and "not open" in out
    status, out = ggsci(home.path, "OPEN WALLET\nUNDELETE MASTERKEY VERSION 1\n"
                                   "DELETE MASTERKEY RANGE FROM 1 TO 2\nPURGE WALLET\n"
                                   "INFO MASTERKEY\nADD MASTERKEY\n")
    assert status == 1  # ADD MASTERKEY: the wallet has one
    assert "Version 1 of Masterkey 'OGG_DEFAULT_MASTERKEY' undeleted from wallet" in out
    assert "purged: versions 1, 2 removed." in out and "RENEW MASTERKEY makes a new version" in out
    assert [v.version for v in MasterKeyWallet(home.path).versions()] == [3]
    assert "OPEN WALLET" not in home.ggserr_log.read_text()  # logged: what changes something
    assert "PURGE WALLET" in home.ggserr_log.read_text()


def test_history_and_repeat(home: Home) -> None:
    status, out = ggsci(home.path, "INFO ALL\nADD EXTRACT e1, EXTTRAILSOURCE ./dirdat/aa\n"
                                   "HISTORY\n! INFO\n! 1\n! -3\n")
    assert status == 0, out
    assert "    1: INFO ALL\n    2: ADD EXTRACT e1, EXTTRAILSOURCE ./dirdat/aa\n" \
           "    3: HISTORY\n" in out
    assert re.search(r"> ! INFO\nINFO ALL\nProgram", out)
    assert re.search(r"> ! -3\nHISTORY\nGGSCI Command History", out)
    status, out = ggsci(home.path, "! 5\n")
    assert status == 1 and "the history is empty" in out


def test_obey_nested_exit_and_loops(home: Home, tmp_path: Path) -> None:
    (tmp_path / "inner.oby").write_text("ADD EXTRACT e1, EXTTRAILSOURCE ./dirdat/aa\n"
                                        "EXIT\nADD EXTRACT e2, EXTTRAILSOURCE ./dirdat/aa\n")
    (tmp_path / "outer.oby").write_text("OBEY inner.oby\nADD EXTRACT e3, EXTTRAILSOURCE "
                                        "./dirdat/aa\n")
    status = main(["--home", str(home.path), "ggsci", str(tmp_path / "outer.oby")])
    assert status == 0
    assert [g.name for g in home.groups()] == ["E1", "EXT1"]
    (tmp_path / "loop.oby").write_text("INFO ALL\nOBEY loop.oby\n")
    status, out = ggsci(home.path, f"OBEY {tmp_path / 'loop.oby'}\n")
    assert status == 1 and "ERROR: OBEY loop:" in out
    assert out.count("the obey file stopped here") == 2  # loop.oby, then stdin
    (tmp_path / "bad.oby").write_text("INFO ALL\nSTART EXTRACT nothere\n")
    status, out = ggsci(home.path, f"OBEY {tmp_path / 'bad.oby'}\nINFO ALL\n")
    assert status == 1
    assert "ERROR: EXTRACT NOTHERE does not exist." in out
    assert f"ERROR: {tmp_path / 'bad.oby'}, line 2: the obey file stopped here" in out
    assert "ERROR: stdin, line 1: the obey file stopped here" in out


def test_cli_obey_file_argument_and_missing_file(home: Home, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    oby = tmp_path / "setup.oby"
    oby.write_text("-- set up\nADD EXTRACT e1, EXTTRAILSOURCE ./dirdat/aa\n\nINFO ALL\n")
    assert main(["--home", str(home.path), "ggsci", str(oby)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"GGSCI \(.+\) 1> ADD EXTRACT e1, EXTTRAILSOURCE \./dirdat/aa\n"
                     r"EXTRACT added\.\n\nGGSCI \(.+\) 2> INFO ALL\n", out)
    assert main(["--home", str(home.path), "ggsci", str(tmp_path / "nope.oby")]) == 1
    assert "ERROR: Obey file" in capsys.readouterr().out


def test_environment_home(home: Home, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRAILGATE_HOME", str(home.path))
    monkeypatch.setattr("sys.stdin", io.StringIO("ADD EXTRACT e1, EXTTRAILSOURCE ./x/aa\n"))
    assert main(["ggsci"]) == 0
    assert home.group("E1") is not None


def test_help(home: Home) -> None:
    status, out = ggsci(home.path, "HELP\nHELP ADD EXTRACT\n")
    assert status == 0
    assert "  INFO ALL" in out
    assert re.search(r"> HELP ADD EXTRACT\nADD EXTRACT name, \{TRANLOG", out)


def test_add_extract_tranlog_needs_dblogin_and_begin_now(home: Home) -> None:
    status, out = ggsci(home.path, "ADD EXTRACT e1, TRANLOG, BEGIN NOW\n")
    assert status == 1
    assert "ERROR: Not logged into database, use DBLOGIN. ADD EXTRACT E1, TRANLOG creates " \
           "its replication slot" in out
    for begin in ("BEGIN 2020-01-01", "LSN 0/16B3748"):
        status, out = ggsci(home.path, f"ADD EXTRACT e1, TRANLOG, {begin}\n")
        assert status == 1 and "so use BEGIN NOW" in out
    assert home.group("E1") is None


def test_mask_secrets_and_formats() -> None:
    assert mask_secrets("DBLOGIN USERID gg, PASSWORD 'a b'") == "DBLOGIN USERID gg, PASSWORD ***"
    assert mask_secrets("SOURCEDB host=x password=abc dbname=y") == \
        "SOURCEDB host=x password=*** dbname=y"
    assert mask_secrets("USER postgresql://gg:pw@db/app") == "USER postgresql://gg:***@db/app"
    assert mask_secrets("ADD USER gg PASSWORD 'p''w' ALIAS a") == "ADD USER gg PASSWORD *** ALIAS a"
    assert mask_secrets('PASSWORD "x""y" z') == "PASSWORD *** z"
    # the interactive history file: the PASSWORD clause dropped (a recalled line prompts)
    assert history_line("ALTER CREDENTIALSTORE ADD USER gg PASSWORD 'a''b c' ALIAS x") == \
        "ALTER CREDENTIALSTORE ADD USER gg ALIAS x"
    assert history_line("DBLOGIN USERID gg, PASSWORD s3cret") == "DBLOGIN USERID gg"
    # libpq's keyword with spaces around its "=" is not a PASSWORD clause: masked whole
    assert mask_secrets("SOURCEDB host=h password = s3cret dbname=d") == \
        "SOURCEDB host=h password = *** dbname=d"
    assert history_line("DBLOGIN SOURCEDB host=h password = s3cret dbname=d") == \
        "DBLOGIN SOURCEDB host=h password = *** dbname=d"
    assert history_line("DBLOGIN SOURCEDB postgresql://u:pw@h/db") == \
        "DBLOGIN SOURCEDB postgresql://u:***@h/db"
    assert display.format_hms(0) == "00:00:00"
    assert display.format_hms(3 * 3600 + 61) == "03:01:01"
    assert display.format_hms(123 * 3600) == "123:00:00"
    assert display.format_position({"lsn": (1 << 32) | 0x16B3748}) == ["LSN: 1/16B3748"]


def test_unreadable_checkpoint_is_a_message(home: Home) -> None:
    ggsci(home.path, SETUP)
    home.checkpoints.path("EXT1", "EXTRACT").write_text("{not json")
    status, out = ggsci(home.path, "INFO ALL\nINFO ext1\n")
    assert status == 1
    assert "WARNING: " in out and "checkpoint file is corrupt" in out
    assert "Traceback" not in out
    assert os.path.basename(str(home.checkpoints.path("EXT1", "EXTRACT"))) in out
