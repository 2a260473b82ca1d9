"""The Replicat process with Delta Lake and Parquet change-log targets (real deltalake,
real local Spark): last change per key wins, one commit per batch, replays skipped."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from replicat_support import (
    TABLES,
    Increments,
    forget_last_commit,
    replicat_home,
    tdef,
    write_trail,
)
from scd2_support import delta_history, history_from_trail
from spark_conftest import spark_session  # noqa: F401

from trailgate.changes.routing import Router
from trailgate.home import Home
from trailgate.model import TrailPosition
from trailgate.replicat.config import load_replicat_config
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.replicat.lake_apply import LakeBatchApply
from trailgate.trail import TrailWriter


def run_once(home: Home, spark: object) -> int:
    return run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark)


@pytest.mark.spark
def test_delta_target_equals_source_and_replays_are_skipped(tmp_path: Path,
                                                            spark: object) -> None:
    lake = tmp_path / "lake"
    home = replicat_home(tmp_path / "home", f"REPLICAT rep1\nTARGETDELTA {lake}\n"
                         "MAP public.*, TARGET lake.*;\n", checkpoint_table=None)
    work = Increments(seed=21)
    write_trail(home.dirdat / "rt", work.transactions(100))
    assert run_once(home, spark) == 0
    write_trail(home.dirdat / "rt", work.transactions(50))
    assert run_once(home, spark) == 0
    table = DeltaTable(str(lake / "lake" / "accounts"))
    rows = {r["id"]: r["counter"] for r in table.to_pyarrow_table().to_pylist()}
    assert rows == work.expected_accounts()
    version = table.version()
    events = DeltaTable(str(lake / "lake" / "events")).to_pyarrow_table().to_pylist()
    assert {r["id"] for r in events} == work.events
    # Spark forgets its last commit (a crash between apply and commit): the replay is
    # skipped by the Delta log's application transaction
    forget_last_commit(home)
    assert run_once(home, spark) == 0
    table = DeltaTable(str(lake / "lake" / "accounts"))
    assert table.version() == version
    assert {r["id"]: r["counter"] for r in table.to_pyarrow_table().to_pylist()} == rows
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None
    assert ck.stats["lake.accounts"].updates == sum(work.counters.values())


@pytest.mark.spark
def test_parquet_change_log_rows_once_per_change(tmp_path: Path, spark: object) -> None:
    logs = tmp_path / "logs"
    home = replicat_home(tmp_path / "home", f"REPLICAT rep1\nTARGETPARQUET {logs}\n"
                         "MAP public.accounts, TARGET cdc.accounts;\n", checkpoint_table=None)
    work = Increments(seed=4)
    write_trail(home.dirdat / "rt", work.transactions(80))
    assert run_once(home, spark) == 0
    forget_last_commit(home)
    write_trail(home.dirdat / "rt", work.transactions(30))
    assert run_once(home, spark) == 0
    data = pq.read_table(logs / "cdc" / "accounts")
    assert not (logs / "cdc" / "events").exists()  # not mapped
    rows = data.to_pylist()
    assert len({(r["seqno"], r["rba"]) for r in rows}) == len(rows), "a change twice"
    updates = [r for r in rows if r["op"] == "FIELD_COMP"]
    assert len(updates) == sum(work.counters.values())
    inserts = [r for r in rows if r["op"] == "INSERT"]
    assert {r["after"]["id"] for r in inserts} == set(work.counters)
    final: dict[int, int] = {}
    for r in sorted(rows, key=lambda r: (r["seqno"], r["rba"])):
        final[r["after"]["id"]] = r["after"]["counter"]
    assert final == work.expected_accounts()
    assert {r["batch_id"] for r in rows} >= {0, 1}


@pytest.mark.spark
def test_delta_target_from_a_21_1_trail_equals_the_one_from_the_11_2_trail(
        tmp_path: Path, spark: object) -> None:
    """The Delta Replicat applies a self-describing 21.1 trail (little-endian, TDRs) to the
    same table contents as the 11.2 trail of the same changes."""
    contents = {}
    for release in ("11.2", "21.1"):
        lake = tmp_path / release / "lake"
        home = replicat_home(tmp_path / release / "home", f"REPLICAT rep1\nTARGETDELTA "
                             f"{lake}\nMAP public.*, TARGET lake.*;\n", checkpoint_table=None)
        work = Increments(seed=8)
        write_trail(home.dirdat / "rt", work.transactions(30), release=release,
                    byte_order="LITTLEENDIAN" if release == "21.1" else None)
        assert run_once(home, spark) == 0
        accounts = DeltaTable(str(lake / "lake" / "accounts")).to_pyarrow_table().to_pylist()
        events = DeltaTable(str(lake / "lake" / "events")).to_pyarrow_table().to_pylist()
        assert {r["id"]: r["counter"] for r in accounts} == work.expected_accounts()
        contents[release] = (sorted(accounts, key=lambda r: r["id"]),
                             sorted(events, key=lambda r: r["id"]))
    assert contents["21.1"] == contents["11.2"]


@pytest.mark.parametrize("kind", ["DELTA", "PARQUET"])
@pytest.mark.parametrize("redefined", ["same", "other"])
def test_a_batch_across_trail_files_applies_every_file(tmp_path: Path, kind: str,
                                                       redefined: str) -> None:
    """Each trail file repeats the definitions of the tables it holds (a restarted Extract
    begins a new file).  A batch reaching across two files was cut there into two parts
    under one application id, so Delta took the second part for applied and skipped it
    (and Parquet wrote both to one file name): the Delta target of the kill -9 RESYNC case
    of tests/e2e/test_incremental_snapshot.py lost every change after the restart.  The
    same definition again no longer cuts the batch (``same``); a definition that differs
    without DDL (``other``: a column's type) still does, and each part is applied."""
    lake = tmp_path / "lake"
    home = replicat_home(tmp_path / "home", f"REPLICAT rep1\nTARGET{kind} {lake}\n"
                         "MAP public.*, TARGET lake.*;\n", checkpoint_table=None)
    work = Increments(seed=7)
    write_trail(home.dirdat / "rt", work.transactions(40))
    if redefined == "same":  # a second file, the same definitions again
        write_trail(home.dirdat / "rt", work.transactions(40))
    else:
        wider = tdef("public.accounts", [("id", "integer"), ("counter", "bigint"),
                                         ("name", "text")], ["id"])
        writer = TrailWriter(home.dirdat / "rt", fsync=False)
        for txn in work.transactions(40):
            writer.write_transaction(txn, {**TABLES, wider.qualified_name: wider})
        writer.close()
    cfg = load_replicat_config(home, "REP1")
    lake_apply = LakeBatchApply(cfg, Router.of(cfg.source_patterns,
                                               list(cfg.params.map_excludes)), None)
    _, counts = lake_apply.apply(None, (TrailPosition(0, 0), TrailPosition(2, 0)), 0)
    assert counts["lake.accounts"].updates == sum(work.counters.values())
    if kind == "DELTA":
        table = DeltaTable(str(lake / "lake" / "accounts"))
        rows = {r["id"]: r["counter"] for r in table.to_pyarrow_table().to_pylist()}
    else:
        rows = {}
        log = pq.read_table(lake / "lake" / "accounts").to_pylist()
        for r in sorted(log, key=lambda r: (r["seqno"], r["rba"])):
            rows[r["after"]["id"]] = r["after"]["counter"]
    assert rows == work.expected_accounts()


@pytest.mark.spark
def test_scd2_delta_target_equals_history_from_the_trail_and_replays_are_skipped(
        tmp_path: Path, spark: object) -> None:
    """MAP …, SCD TYPE 2 through the Replicat process: the history equals the one computed
    from the trail's changes, and a replayed batch changes nothing."""
    lake = tmp_path / "lake"
    home = replicat_home(tmp_path / "home", f"REPLICAT rep1\nTARGETDELTA {lake}\n"
                         "MAP public.*, TARGET lake.*_history, SCD TYPE 2;\n",
                         checkpoint_table=None)
    work = Increments(seed=12, accounts=15)
    # two files before the first run: its batch spans them, and each file defines the
    # tables again (a batch cut there in two parts lost the second part's changes)
    write_trail(home.dirdat / "rt", work.transactions(60))
    write_trail(home.dirdat / "rt", work.transactions(30))
    assert run_once(home, spark) == 0
    write_trail(home.dirdat / "rt", work.transactions(40))
    assert run_once(home, spark) == 0
    forget_last_commit(home)
    assert run_once(home, spark) == 0
    trail = home.dirdat / "rt"
    accounts = delta_history(lake / "lake" / "accounts_history", "id", ["id", "counter", "name"])
    assert accounts == history_from_trail(spark, trail, "public.accounts", "id",
                                          {"id": int, "counter": int, "name": str})
    assert len(accounts) > 2 * len(work.counters)  # versions, not just the last rows
    assert {r["id"]: r["counter"] for r in accounts if r["__is_current"]} == work.counters
    events = delta_history(lake / "lake" / "events_history", "id", ["id", "kind"])
    assert events == history_from_trail(spark, trail, "public.events", "id",
                                        {"id": int, "kind": str})
    assert {r["id"] for r in events if r["__is_current"]} == work.events
    assert any(r["__end_csn"] is not None for r in events)  # deletes closed versions
