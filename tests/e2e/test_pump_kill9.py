"""kill -9 ``trailgate run extract PUMP`` (a data pump) at several points while its input
trail grows, restart it, and the output trail holds every input transaction exactly once,
in order."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from kill9_support import TrailFeeder, kill9, wait_for
from replicat_support import Increments, run_group, start_group

from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.trail import TrailReader
from trailgate.trail.naming import TrailName

pytestmark = [pytest.mark.spark]


def _home(path: Path, remote: Path) -> Home:
    home = Home(path).create()
    home.add_group(GroupInfo("PUMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                             begin={"seqno": 0, "rba": 0}))
    home.add_trail("PUMP1", TrailInfo(str(remote / "rt"), "RMTTRAIL", megabytes=1))
    home.param_file("PUMP1").write_text(
        f"EXTRACT pump1\nSPARK MASTER local[2]\nRMTTRAIL {remote / 'rt'}\nPASSTHRU\n"
        "TABLE public.*;\n")
    return home


def _written(home: Home) -> int:
    ck = home.checkpoints.load("PUMP1", "EXTRACT")
    return int(ck.last_csn or 0) if ck else 0


def _in_batch(home: Home) -> bool:
    """Spark has planned a batch it has not committed: the pump is writing it."""
    spark = home.spark_checkpoint_dir("PUMP1") / "spark"

    def ids(sub: str) -> set[str]:
        try:
            return {p.name for p in (spark / sub).iterdir() if p.name.isdigit()}
        except FileNotFoundError:
            return set()

    return bool(ids("offsets") - ids("commits"))


def _transactions(trail: Path) -> list[tuple]:
    return [(t.transaction.csn, t.transaction.xid,
             [(c.op, c.table, c.before, c.after) for c in t.transaction.changes])
            for t in TrailReader(trail).transactions()]


def _run_kills(tmp_path: Path, kills: int, seed: int) -> None:
    remote = tmp_path / "remote" / "dirdat"
    home = _home(tmp_path / "home", remote)
    work = Increments(seed=seed, accounts=40)
    feeder = TrailFeeder(home.dirdat / "aa", work)
    feeder.start()
    log = tmp_path / "pump.log"
    rng = random.Random(seed)
    proc = None
    try:
        for n in range(kills):
            proc = start_group(home, "extract", "PUMP1", "--trigger", "0.3", log=log)
            if n % 2 == 0:  # just after a checkpoint
                seen = _written(home)
                wait_for(lambda s=seen: _written(home) > s, 300, "a checkpoint", log)
                time.sleep(rng.uniform(0, 0.5))
                what = "after a checkpoint"
            else:  # a batch planned, not committed: the sink is writing it
                wait_for(lambda: _in_batch(home), 300, "a batch in flight", log, 0.005)
                what = "while a batch is in flight"
            assert proc.poll() is None, log.read_text()[-3000:]
            kill9(proc, log, what)
        feeder.finish()
        done = run_group(home, "extract", "PUMP1", "--once", timeout=300)
        assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-3000:]
    finally:
        feeder.stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    got = _transactions(remote / "rt")
    want = _transactions(home.dirdat / "aa")
    csns = [t[0] for t in got]
    assert len(csns) == len(set(csns)), "a transaction is in the output twice"
    assert got == want
    assert len(TrailName(remote / "rt").sequence_numbers()) >= 2  # restarts: new files
    print(f"\n{kills} kill -9, {len(got)} transactions exactly once")


def test_kill9_pump_then_exact_output(tmp_path):
    _run_kills(tmp_path, kills=2, seed=8)


@pytest.mark.heavy
def test_kill9_pump_many_times(tmp_path):
    _run_kills(tmp_path, kills=8, seed=88)
