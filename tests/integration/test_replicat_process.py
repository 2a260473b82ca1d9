"""The Replicat as a process: start-up errors name file/line/object, collisions follow
HANDLECOLLISIONS/REPERROR, and GGSCI starts, watches (INFO/STATS/LAG) and stops it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import psycopg
import pytest
from replicat_support import (
    CKPT,
    Increments,
    accounts,
    pg_target,
    query,
    replicat_home,
    run_group,
    write_trail,
)
from spark_conftest import spark_session  # noqa: F401

from trailgate.cli import main
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.model import Change, OpType, Transaction
from trailgate.process import lifecycle
from trailgate.process.lifecycle import Status
from trailgate.replicat.group import RunOptions, run_replicat_group

pytestmark = [pytest.mark.postgres]
T = 212_000_000_000_000_000


def ins(csn: int, acc: int, counter: int) -> Transaction:
    return Transaction(f"x{csn}", csn, [Change(OpType.INSERT, "public.accounts", io_time=T,
                                               after={0: str(acc).encode(),
                                                      1: str(counter).encode(), 2: b"n"})],
                       commit_time=T)


def upd(csn: int, acc: int, counter: int) -> Transaction:
    return Transaction(f"x{csn}", csn, [Change(OpType.FIELD_COMP, "public.accounts",
                                               io_time=T, after={0: str(acc).encode(),
                                                                 1: str(counter).encode()})],
                       commit_time=T)


# -- start-up errors: no Spark is started ---------------------------------------------------

def test_malformed_parameter_file_stops_with_file_and_line(tmp_path: Path, pg_db: str) -> None:
    pg_target(pg_db)
    home = replicat_home(tmp_path, f"REPLICAT rep1\nTARGETDB {pg_db}\n"
                         "MAP public.accounts TARGET public.accounts;\nFROBNICATE yes\n")
    done = run_group(home, "replicat", "REP1", "--once", timeout=120)
    assert done.returncode == 1
    assert "rep1.prm" in done.stderr and "line 4" in done.stderr, done.stderr
    assert "FROBNICATE" in done.stderr and "Traceback" not in done.stderr
    assert lifecycle.process_state(home, "REP1").status is Status.ABENDED
    assert "ABENDING" in home.ggserr_log.read_text()


def test_map_to_missing_target_table_stops_at_start(tmp_path: Path, pg_db: str) -> None:
    pg_target(pg_db)
    home = replicat_home(tmp_path, f"REPLICAT rep1\nTARGETDB {pg_db}\n"
                         "MAP public.accounts, TARGET public.accounts;\n"
                         "MAP public.events, TARGET public.nosuch;\n")
    done = run_group(home, "replicat", "REP1", "--once", timeout=120)
    assert done.returncode == 1
    err = done.stderr
    assert "rep1.prm" in err and "line 4" in err and "public.nosuch" in err, err
    assert "does not exist" in err and "Traceback" not in err
    assert "public.nosuch" in home.report_file("REP1").read_text()


def test_missing_checkpoint_table_is_named(tmp_path: Path, pg_db: str) -> None:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.accounts (id int PRIMARY KEY, counter int, "
                     "name text)")
    home = replicat_home(tmp_path, f"REPLICAT rep1\nTARGETDB {pg_db}\n"
                         "MAP public.accounts, TARGET public.accounts;\n",
                         checkpoint_table="gg.nothere")
    done = run_group(home, "replicat", "REP1", "--once", timeout=120)
    assert done.returncode == 1
    assert "gg.nothere" in done.stderr and "ADD CHECKPOINTTABLE" in done.stderr, done.stderr


# -- collisions through the process ---------------------------------------------------------

def prm(pg_db: str, map_options: str = "", head: str = "", name: str = "rep1") -> str:
    return (f"REPLICAT {name}\nTARGETDB {pg_db}\n{head}"
            f"MAP public.accounts, TARGET public.accounts{map_options};\n")


@pytest.mark.spark
def test_collision_abends_then_applies_after_fix(tmp_path: Path, pg_db: str,
                                                 spark: object) -> None:
    pg_target(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO public.accounts VALUES (2, 100, 'already')")
    home = replicat_home(tmp_path, prm(pg_db))
    write_trail(home.dirdat / "rt", [ins(1, 1, 0), ins(2, 2, 0), upd(3, 1, 1)])
    with pytest.raises(TrailgateError) as err:
        run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark)
    text = str(err.value)
    assert "public.accounts" in text and "23505" in text and "REPERROR" in text, text
    assert "Traceback" not in text and "at org.apache" not in text
    assert lifecycle.process_state(home, "REP1").status is Status.ABENDED
    assert accounts(pg_db) == {2: 100}  # the batch's partition rolled back
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM public.accounts WHERE id = 2")
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    assert accounts(pg_db) == {1: 1, 2: 0}


@pytest.mark.spark
def test_the_python_api_runs_a_replicat(tmp_path: Path, pg_db: str, spark: object) -> None:
    from trailgate import api

    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db))
    write_trail(home.dirdat / "rt", [ins(1, 1, 0), ins(2, 2, 0), upd(3, 1, 5)])
    assert api.run_group(home.path, "rep1", once=True, spark=spark) == 0
    assert accounts(pg_db) == {1: 5, 2: 0}
    assert lifecycle.process_state(home, "REP1").status is Status.STOPPED


@pytest.mark.spark
def test_reperror_discard_and_handlecollisions(tmp_path: Path, pg_db: str,
                                               spark: object) -> None:
    pg_target(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO public.accounts VALUES (2, 100, 'already')")
    home = replicat_home(tmp_path, prm(pg_db, head="REPERROR (23505, DISCARD)\n"
                                                   "REPERROR (-1403, DISCARD)\n"))
    write_trail(home.dirdat / "rt", [ins(1, 1, 0), ins(2, 2, 0), upd(3, 7, 5), upd(4, 1, 1)])
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    assert accounts(pg_db) == {1: 1, 2: 100}
    discards = home.discard_file("REP1").read_text()
    assert discards.count("Discarded record") == 2
    assert "error 23505" in discards and "error -1403" in discards
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.stats["public.accounts"].discards == 2

    home2 = replicat_home(tmp_path / "h2", prm(pg_db, head="HANDLECOLLISIONS\n",
                                               name="rep2"), name="REP2")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("TRUNCATE public.accounts")
        conn.execute("INSERT INTO public.accounts VALUES (2, 100, 'already')")
    write_trail(home2.dirdat / "rt", [ins(1, 1, 0), ins(2, 2, 0), upd(3, 7, 5),
                                      upd(4, 2, 3)])
    assert run_replicat_group(home2, "REP2", RunOptions(once=True), spark=spark) == 0
    assert accounts(pg_db) == {1: 0, 2: 3}


# -- GGSCI ------------------------------------------------------------------------------------

def ggsci(home: Home, script: str, tmp_path: Path,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    oby = tmp_path / "cmds.oby"
    oby.write_text(script)
    status = main(["--home", str(home.path), "ggsci", str(oby)])
    return status, capsys.readouterr().out


@pytest.mark.spark
def test_ggsci_start_stats_lag_stop_replicat(tmp_path: Path, pg_db: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pg_target(pg_db)
    home = Home(tmp_path / "gg").create()
    home.param_file("REP1").write_text(
        f"REPLICAT rep1\nTARGETDB {pg_db}\nSPARK MASTER local[1]\n"
        "SPARK TRIGGER 1 SECONDS\nMAP public.*, TARGET public.*;\n")
    work = Increments(seed=9)
    write_trail(home.dirdat / "rt", work.transactions(40))
    status, out = ggsci(home, "ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, CHECKPOINTTABLE "
                              "gg.ckpt\nSTART REPLICAT rep1\n", tmp_path, capsys)
    try:
        assert status == 0, out
        assert "REPLICAT REP1 starting" in out

        def applied() -> bool:
            ck = home.checkpoints.load("REP1", "REPLICAT")
            s = ck.stats.get("public.accounts") if ck else None
            return s is not None and s.updates == sum(work.counters.values())

        deadline = time.monotonic() + 180
        while not applied():
            assert time.monotonic() < deadline, home.report_file("REP1").read_text()
            assert lifecycle.process_state(home, "REP1").status is not Status.ABENDED, \
                home.report_file("REP1").read_text()
            time.sleep(0.5)
        assert accounts(pg_db) == work.expected_accounts()
        status, out = ggsci(home, "INFO REPLICAT rep1\nSTATS REPLICAT rep1\nLAG REPLICAT "
                                  "rep1\nSTOP REPLICAT rep1\nINFO ALL\n", tmp_path, capsys)
        assert status == 0, out
        assert re.search(r"REPLICAT +REP1 +Last Started .* Status RUNNING", out), out
        assert re.search(r"Sequence # 0, RBA [1-9]\d*", out), out
        assert "Replicating from public.accounts" in out
        assert re.search(rf"Total updates +{sum(work.counters.values())}\.00", out), out
        assert re.search(rf"Total inserts +{len(work.counters)}\.00", out), out
        assert re.search(r"Total discards +0\.00", out)
        assert re.search(r"Last record lag \d+ seconds", out), out
        assert "Request processed." in out
        assert re.search(r"REPLICAT +STOPPED +REP1", out), out
        assert "stopped normally" in home.ggserr_log.read_text()
        # a running group applies the trail as it grows: the streamed apply's row alone,
        # and a clean stop leaves the group checkpoint where that row is
        rows = query(pg_db, f"SELECT batch_id, position FROM {CKPT}")
        ck = home.checkpoints.load("REP1", "REPLICAT")
        assert ck is not None and len(rows) == 1 and rows[0][0] == -1, rows
        assert rows[0][1] == f"{ck.read_position['seqno']}:{ck.read_position['rba']}"
        assert "Apply:            as the trail grows" in home.report_file("REP1").read_text()
    finally:
        if lifecycle.process_state(home, "REP1").status in (Status.RUNNING, Status.STARTING):
            lifecycle.kill_group(home, "REPLICAT", "REP1")
