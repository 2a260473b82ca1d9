"""The Replicat process against a real PostgreSQL target: a trail (written by TrailWriter)
applied by ``run_replicat_group`` on local Spark, exactly once, by key in parallel."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import (
    ACCOUNTS,
    CKPT,
    Increments,
    accounts,
    events,
    forget_last_commit,
    pg_target,
    query,
    replicat_home,
    write_trail,
)
from spark_conftest import spark_session  # noqa: F401

from trailgate.home import Home
from trailgate.replicat.group import RunOptions, run_replicat_group

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def prm(conninfo: str, extra: str = "", maps: str = "MAP public.*, TARGET public.*;") -> str:
    return (f"REPLICAT rep1\nTARGETDB {conninfo}\n"
            f"SPARK CONF trailgate.replicat.partitions=3\n{extra}{maps}\n")


def run_once(home: Home, spark: object, **kw: object) -> int:
    return run_replicat_group(home, "REP1", RunOptions(once=True, **kw), spark=spark)


def test_trail_applied_exactly_once_across_runs(tmp_path: Path, pg_db: str,
                                                spark: object) -> None:
    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db))
    work = Increments(seed=7)
    write_trail(home.dirdat / "rt", work.transactions(150))
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events
    # more data, a new trail file: the next run applies only what is new
    write_trail(home.dirdat / "rt", work.transactions(80))
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events
    # nothing new: nothing applied again
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    parts = query(pg_db, f"SELECT count(DISTINCT partition) FROM {CKPT} "
                         "WHERE group_name = 'REP1'")[0][0]
    assert parts > 1, "changes to different keys were applied in several partitions"
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.read_position["seqno"] == 1
    stats = ck.stats["public.accounts"]
    assert stats.inserts == len(work.counters)
    assert stats.updates == sum(work.counters.values())
    assert ck.read_time is not None and ck.last_csn == work.csn


def test_replayed_batch_is_skipped(tmp_path: Path, pg_db: str, spark: object) -> None:
    """A batch applied but not committed by Spark (crash after apply) is replayed: the
    checkpoint table makes it a no-op."""
    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db))
    work = Increments(seed=3)
    write_trail(home.dirdat / "rt", work.transactions(60))
    assert run_once(home, spark) == 0
    # forget Spark's commit of the last batch, as a kill between apply and commit would
    forget_last_commit(home)
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None
    assert ck.stats["public.accounts"].updates == sum(work.counters.values())


def test_key_update_batch_applies_in_order(tmp_path: Path, pg_db: str, spark: object) -> None:
    """A batch holding a PK update is applied whole, in trail order."""
    from trailgate.model import Change, OpType, Transaction

    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db))
    t = 212_000_000_000_000_000
    txns = [
        Transaction("a", 1, [Change(OpType.INSERT, "public.accounts", io_time=t,
                                    after={0: b"1", 1: b"0", 2: b"x"})], commit_time=t),
        Transaction("b", 2, [Change(OpType.PK_UPDATE, "public.accounts", io_time=t,
                                    before={0: b"1"}, after={0: b"2", 1: b"5"})],
                    commit_time=t),
        Transaction("c", 3, [Change(OpType.INSERT, "public.accounts", io_time=t,
                                    after={0: b"1", 1: b"9", 2: b"again"})], commit_time=t),
        Transaction("d", 4, [Change(OpType.FIELD_COMP, "public.accounts", io_time=t,
                                    after={0: b"2", 1: b"6"})], commit_time=t),
    ]
    write_trail(home.dirdat / "rt", txns)
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == {1: 9, 2: 6}
    assert ACCOUNTS.key == ["id"]
