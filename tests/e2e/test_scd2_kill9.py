"""kill -9 a Replicat that keeps SCD type 2 history in Delta while its trail grows, restart
it, and the history equals the one computed from the trail's changes: a version applied
twice or lost shows as a row too many or a wrong validity."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from kill9_support import TrailFeeder, kill9
from replicat_support import Increments, replicat_home, run_group, start_group
from scd2_support import delta_history, history_from_trail
from spark_conftest import spark_session  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def _checkpoints(home) -> int:  # type: ignore[no-untyped-def]
    ck = home.checkpoints.load("REP1", "REPLICAT")
    return int(ck.last_csn or 0) if ck else 0


def test_kill9_scd2_replicat_then_exact_history(tmp_path: Path, spark: object) -> None:
    lake = tmp_path / "lake"
    home = replicat_home(tmp_path / "home", (
        f"REPLICAT rep1\nTARGETDELTA {lake}\nSPARK MASTER local[2]\n"
        "SPARK CONF trailgate.replicat.maxRecordsPerTrigger=300\n"
        "MAP public.*, TARGET lake.*_history, SCD TYPE 2;\n"), checkpoint_table=None)
    work = Increments(seed=9, accounts=30)
    feeder = TrailFeeder(home.dirdat / "rt", work)
    feeder.start()
    log = tmp_path / "replicat.log"
    rng = random.Random(9)
    proc = None
    try:
        for n in range(4):
            proc = start_group(home, "replicat", "REP1", "--trigger", "0.3", log=log)
            seen = _checkpoints(home)
            deadline = time.monotonic() + 300
            while _checkpoints(home) <= seen:  # a batch applied: the group is at work
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                assert proc.poll() is None, log.read_text()[-3000:]
                time.sleep(0.1)
            time.sleep(rng.uniform(0, 1.5))  # then anywhere: planning, merging, committing
            kill9(proc, log, f"number {n + 1}")
        feeder.finish()
        done = run_group(home, "replicat", "REP1", "--once", timeout=300)
        assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-3000:]
    finally:
        feeder.stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    trail = home.dirdat / "rt"
    accounts = delta_history(lake / "lake" / "accounts_history", "id", ["id", "counter", "name"])
    assert accounts == history_from_trail(spark, trail, "public.accounts", "id",
                                          {"id": int, "counter": int, "name": str})
    assert {r["id"]: r["counter"] for r in accounts if r["__is_current"]} == work.counters
    events = delta_history(lake / "lake" / "events_history", "id", ["id", "kind"])
    assert events == history_from_trail(spark, trail, "public.events", "id",
                                        {"id": int, "kind": str})
    print(f"\n4 kill -9, {feeder.written} transactions, {len(accounts) + len(events)} "
          f"versions exact")
