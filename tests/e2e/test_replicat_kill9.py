"""kill -9 ``trailgate run replicat`` at several points while a trail grows, restart it, and
the target equals the source exactly: every update adds 1 to a counter, so an update applied
twice (or lost) shows in the final counters."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import psycopg
import pytest
from kill9_support import TrailFeeder, kill9, wait_for
from replicat_support import (
    Increments,
    accounts,
    events,
    pg_target,
    replicat_home,
    run_group,
    start_group,
)

from trailgate.db.cluster import Cluster

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def _applied(home) -> int:  # type: ignore[no-untyped-def]
    ck = home.checkpoints.load("REP1", "REPLICAT")
    return int(ck.last_csn or 0) if ck else 0


def _applying(conninfo: str) -> bool:
    """A Replicat session is inside a transaction right now."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                           "LIKE 'trailgate replicat%%' AND state <> 'idle'").fetchone()
    return bool(row and row[0])


def _diagnose(conninfo: str, home) -> str:  # type: ignore[no-untyped-def]
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT pid, application_name, state, wait_event_type, "
                            "wait_event, left(query, 120), xact_start FROM pg_stat_activity "
                            "WHERE datname = current_database()").fetchall()
    report = home.report_file("REP1").read_text()[-2500:]
    return "\n".join(map(str, rows)) + "\n--- report ---\n" + report


def _window_args(n: int, windows: str) -> list[str]:
    """The run's batch window: ``short`` 0.3 s, ``default`` the default (10 s, the stream
    apply checkpointing on its own about every second), ``both`` alternating."""
    short = windows == "short" or (windows == "both" and n % 2 == 0)
    return ["--trigger", "0.3"] if short else []


def _run_kills(cluster: Cluster, tmp_path: Path, kills: int, seed: int,
               windows: str = "short") -> None:
    conninfo = cluster.create_database(f"rk9_{seed}")
    pg_target(conninfo)
    home = replicat_home(tmp_path / "home", (
        f"REPLICAT rep1\nTARGETDB {conninfo}\nSPARK MASTER local[2]\n"
        "SPARK CONF trailgate.replicat.partitions=3\n"
        "SPARK CONF trailgate.replicat.maxRecordsPerTrigger=1500\n"
        "MAP public.*, TARGET public.*;\n"))
    work = Increments(seed=seed, accounts=40)
    feeder = TrailFeeder(home.dirdat / "rt", work)
    feeder.start()
    log = tmp_path / "replicat.log"
    rng = random.Random(seed)
    proc = None
    try:
        for n in range(kills):
            proc = start_group(home, "replicat", "REP1", *_window_args(n, windows), log=log)
            point = n % 3
            if point == 0:  # in steady state, just after a group checkpoint
                seen = _applied(home)
                wait_for(lambda s=seen: _applied(home) > s, 300, "a checkpoint", log)
                time.sleep(rng.uniform(0, 0.8))
                what = "after a checkpoint"
            elif point == 1:  # while a partition's database transaction is open
                wait_for(lambda: _applying(conninfo), 300, "an apply", log, 0.01)
                what = "while applying a batch"
            else:  # while starting up: Spark launching, a batch being planned
                time.sleep(rng.uniform(3, 9))
                what = "during start-up"
            assert proc.poll() is None, log.read_text()[-3000:]
            kill9(proc, log, what)
        feeder.finish()
        try:
            done = run_group(home, "replicat", "REP1", "--once", timeout=240)
        except subprocess.TimeoutExpired:
            raise AssertionError("the final run did not finish:\n" + _diagnose(conninfo, home)
                                 ) from None
        assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-3000:]
    finally:
        feeder.stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    assert feeder.written > 100
    assert accounts(conninfo) == work.expected_accounts(), "an update applied twice or lost"
    assert events(conninfo) == work.events
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.last_csn == work.csn
    print(f"\n{kills} kill -9, {feeder.written} transactions, "
          f"{sum(work.counters.values())} increments applied exactly once")


def test_kill9_replicat_then_exact_target(e2e_cluster, tmp_path):
    # after a checkpoint, then inside a partition's transaction, with the default window
    # (the group checkpoint written by the stream apply between Spark's batches)
    _run_kills(e2e_cluster, tmp_path, kills=2, seed=5, windows="default")


@pytest.mark.heavy
def test_kill9_replicat_many_times(e2e_cluster, tmp_path):
    _run_kills(e2e_cluster, tmp_path, kills=9, seed=55, windows="both")
