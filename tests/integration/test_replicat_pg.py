"""The Replicat process against a real PostgreSQL target: a trail (written by TrailWriter)
applied by ``run_replicat_group`` on local Spark, exactly once, by key in parallel."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import (
    ACCOUNTS,
    CKPT,
    EVENTS,
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


def prm(conninfo: str, extra: str = "", maps: str = "MAP public.*, TARGET public.*;",
        split: int | None = 1) -> str:
    """``split``: splitMinRecords (1: every batch as key partitions, in Spark tasks; None:
    the default, small batches read and applied on the driver)."""
    conf = "" if split is None else f"SPARK CONF trailgate.replicat.splitMinRecords={split}\n"
    return (f"REPLICAT rep1\nTARGETDB {conninfo}\n"
            f"SPARK CONF trailgate.replicat.partitions=3\n{conf}{extra}{maps}\n")


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
    checkpoint table makes it a no-op.  Small batches are applied on the driver, in one
    key partition."""
    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db, split=None))
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
    assert query(pg_db, f"SELECT DISTINCT partition FROM {CKPT}") == [(0,)]


def test_replay_keeps_the_split_when_settings_change(tmp_path: Path, pg_db: str,
                                                     spark: object) -> None:
    """A batch applied in three key partitions, one of them lost to a crash, replayed after
    the parallelism and the split threshold changed: it splits as recorded, so the lost
    partition is applied and nothing twice."""
    import psycopg

    from trailgate.changes.range_rows import key_hash
    from trailgate.model import Change, OpType

    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db))
    work = Increments(seed=11)
    write_trail(home.dirdat / "rt", work.transactions(60))
    assert run_once(home, spark) == 0
    before = query(pg_db, f"SELECT batch_id, partition FROM {CKPT} ORDER BY 1, 2")
    assert [p for _, p in before] == [0, 1, 2]
    # as if key partition 1's transaction had not committed when the Replicat was killed:
    # neither Spark's commit nor the group checkpoint were written
    forget_last_commit(home)
    (home.dirchk / "REP1.cpr").unlink()

    def lost(table: str, tdef: object, ids: object) -> list[int]:
        return [i for i in ids if key_hash(Change(OpType.INSERT, table,
                                                  after={0: str(i).encode()}), tdef) % 3 == 1]
    gone_accounts = lost("public.accounts", ACCOUNTS, work.counters)
    gone_events = lost("public.events", EVENTS, work.events)
    assert gone_accounts and gone_events
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {CKPT} WHERE partition = 1")
        conn.execute("DELETE FROM public.accounts WHERE id = ANY(%s)", (gone_accounts,))
        conn.execute("DELETE FROM public.events WHERE id = ANY(%s)", (gone_events,))
    home.param_file("REP1").write_text(prm(pg_db, split=None).replace("partitions=3",
                                                                      "partitions=2"))
    assert run_once(home, spark) == 0
    assert query(pg_db, f"SELECT batch_id, partition FROM {CKPT} ORDER BY 1, 2") == before
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events


def test_aftercsn_skips_earlier_transactions_on_the_driver(tmp_path: Path, pg_db: str,
                                                          spark: object) -> None:
    """AFTERCSN with a batch read and applied on the driver: earlier transactions are left
    out, later ones applied, and the checkpoint still moves to the end."""
    from trailgate.model import Change, OpType, Transaction

    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(pg_db, split=None))
    txns = [Transaction(f"0.{n}.1", 100 + n, [Change(OpType.INSERT, "public.events",
                                                     after={0: str(n).encode(), 1: b"k"})])
            for n in range(1, 21)]
    write_trail(home.dirdat / "rt", txns)
    assert run_once(home, spark, aftercsn=110) == 0
    assert events(pg_db) == set(range(11, 21))
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.last_csn == 120
    assert ck.stats["public.events"].inserts == 10


def test_new_spark_checkpoint_starts_at_the_group_checkpoint(tmp_path: Path, pg_db: str,
                                                            spark: object) -> None:
    """Spark's checkpoint removed: the query starts where the group checkpoint says, not at
    the trail's start (every update adds 1: one applied twice shows), and batches keep to
    maxRecordsPerTrigger."""
    import shutil

    pg_target(pg_db)
    home = replicat_home(tmp_path, prm(
        pg_db, split=None, extra="SPARK CONF trailgate.replicat.maxRecordsPerTrigger=40\n"))
    work = Increments(seed=5)
    write_trail(home.dirdat / "rt", work.transactions(60))
    assert run_once(home, spark) == 0
    batches = query(pg_db, f"SELECT count(DISTINCT batch_id) FROM {CKPT}")[0][0]
    assert batches >= 3  # about 170 changes, at most 40 (whole transactions) a batch
    shutil.rmtree(home.spark_checkpoint_dir("REP1") / "spark")
    write_trail(home.dirdat / "rt", work.transactions(30))
    assert run_once(home, spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events
