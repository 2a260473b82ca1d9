"""kill -9 ``trailgate run extract`` at several points of a running workload, restart it,
and the trail holds every committed transaction exactly once, in commit order."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest
from extract_support import (
    make_home,
    reference_slot,
    reference_transactions,
    start_extract,
    trail_transactions,
    wait_for,
)
from kill9_support import kill9

from trailgate.capture.postgres.trandata import add_trandata
from trailgate.db.cluster import Cluster
from trailgate.db.connect import connect
from trailgate.home import Home
from trailgate.trail.naming import TrailName

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


class Workload(threading.Thread):
    """Small and medium transactions, updates with key changes, deletes, rollbacks and
    interleaved sessions, until stopped; ``big()`` asks for one large transaction."""

    def __init__(self, conninfo: str, seed: int):
        super().__init__(daemon=True)
        self.conninfo = conninfo
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.big_rows = 0
        self.next_id = 1
        self.commits = 0
        self.error: BaseException | None = None

    def big(self, rows: int) -> None:
        self.big_rows = rows

    def run(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=False) as a, \
                    psycopg.connect(self.conninfo, autocommit=False) as b:
                while not self.stop.is_set():
                    self._one(a, b)
                    time.sleep(self.rng.uniform(0.005, 0.03))
        except BaseException as exc:  # the test reports it
            self.error = exc

    def _ids(self, n: int) -> range:
        start = self.next_id
        self.next_id += n
        return range(start, start + n)

    def _one(self, a: psycopg.Connection, b: psycopg.Connection) -> None:
        rng = self.rng
        if self.big_rows:
            ids = self._ids(self.big_rows)
            a.execute("INSERT INTO k9 SELECT g, 'big', repeat('b', 100) FROM "
                      "generate_series(%s::int, %s::int) g", (ids.start, ids.stop - 1))
            a.commit()
            self.big_rows = 0
            self.commits += 1
            return
        kind = rng.choice(["ins", "ins", "multi", "upd", "pk", "del", "rollback", "inter"])
        if kind in ("ins", "multi"):
            for i in self._ids(1 if kind == "ins" else rng.randint(10, 60)):
                a.execute("INSERT INTO k9 VALUES (%s, %s, %s)",
                          (i, f"v{i}", None if i % 7 == 0 else "n" * (i % 50)))
        elif kind == "upd":
            a.execute("UPDATE k9 SET v = v || '+' WHERE id = %s", (rng.randint(1, self.next_id),))
        elif kind == "pk":
            new = self._ids(1).start
            a.execute("UPDATE k9 SET id = %s WHERE id = %s", (new, rng.randint(1, new - 1)))
        elif kind == "del":
            a.execute("DELETE FROM k9 WHERE id = %s", (rng.randint(1, self.next_id),))
        elif kind == "rollback":
            a.execute("INSERT INTO k9 VALUES (%s, 'never', NULL)", (self._ids(1).start,))
            a.rollback()
            return
        else:  # two sessions, committed in the other order
            x, y = self._ids(2)
            a.execute("INSERT INTO k9 VALUES (%s, 'a', NULL)", (x,))
            b.execute("INSERT INTO k9 VALUES (%s, 'b', NULL)", (y,))
            b.commit()
            self.commits += 1
        a.commit()
        self.commits += 1


def _flush_lsn(conninfo: str) -> int:
    with connect(conninfo) as conn:
        return int(conn.execute(
            "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8").fetchone()[0])


def _read_lsn(home: Home, group: str) -> int:
    ck = home.checkpoints.load(group, "EXTRACT")
    return int(ck.read_position.get("lsn", 0)) if ck else 0


def _file_growing(trail: Path) -> bool:
    """A trail file is being written right now (its size changes within 50 ms)."""
    seqs = TrailName(trail).sequence_numbers()
    if not seqs:
        return False
    path = TrailName(trail).file(seqs[-1])
    before = path.stat().st_size
    time.sleep(0.05)
    return path.stat().st_size != before


def _run_kills(cluster: Cluster, tmp_path: Path, kills: int, seed: int,
               first_point: int = 0) -> None:
    conninfo = cluster.create_database(f"k9_{seed}")
    group = f"K{seed}"  # slots are per server: each test its own group
    with connect(conninfo) as conn:
        conn.execute("CREATE TABLE k9 (id int PRIMARY KEY, v text, note text)")
        add_trandata(conn, "public.k9")
    home = make_home(tmp_path / "home", conninfo, group, "TABLE public.k9;", megabytes=1)
    ref = reference_slot(conninfo, f"REF{seed}")
    log = tmp_path / "extract.log"
    rng = random.Random(seed)
    work = Workload(conninfo, seed)
    work.start()
    trail = home.dirdat / "aa"
    runs = 0
    proc = None
    try:
        for n in range(kills):
            proc = start_extract(home, group, "--trigger", "0.3", log=log)
            runs += 1
            point = (first_point + n) % 3
            if point == 0:  # while starting up: Spark launching, first batch planned
                time.sleep(rng.uniform(2, 8))
                what = "during start-up"
            elif point == 1:  # in steady state, just after a checkpoint
                seen = _read_lsn(home, group)
                wait_for(lambda s=seen: _read_lsn(home, group) > s, 180, "a new checkpoint")
                time.sleep(rng.uniform(0, 1.0))
                what = "after a checkpoint"
            else:  # while a large transaction is being written to the trail
                wait_for(lambda: _read_lsn(home, group) > 0, 180, "a first checkpoint")
                work.big(15_000)
                wait_for(lambda: _file_growing(trail), 180, "the trail to grow", 0.01)
                what = "while writing a large transaction"
            assert proc.poll() is None, log.read_text()[-3000:]
            kill9(proc, log, what)
        work.stop.set()
        work.join(timeout=60)
        assert work.error is None, work.error
        target = _flush_lsn(conninfo)
        proc = start_extract(home, group, "--trigger", "0.3", log=log)
        runs += 1
        wait_for(lambda: _read_lsn(home, group) >= target, 300, "the Extract to catch up")
        # Ctrl-C as a terminal sends it, to the whole process group: a clean stop, exit 0
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        work.stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    got = trail_transactions(trail)
    expected = reference_transactions(conninfo, ref, tmp_path / "spill")
    assert work.commits > 50 and len(expected) > 50
    csns = [t[0] for t in got]
    assert len(csns) == len(set(csns)), "a transaction is in the trail twice"
    missing = sorted({t[0] for t in expected} - set(csns))
    assert not missing, f"{len(missing)} committed transactions missing from the trail"
    assert got == expected
    assert len(TrailName(trail).sequence_numbers()) >= 2  # restarts began new files
    assert not (home.dirchk / f"{group}.pid").exists()
    report = (home.dirrpt / f"{group}.rpt").read_text()
    assert "SIGINT received" in report and "stopped normally" in report
    print(f"\n{runs} runs, {kills} kill -9, {len(got)} transactions exactly once")


def test_kill9_during_workload_then_exact_trail(e2e_cluster, tmp_path):
    # after a checkpoint, then in the middle of a large transaction's write
    _run_kills(e2e_cluster, tmp_path, kills=2, seed=9, first_point=1)


@pytest.mark.heavy
def test_kill9_many_times(e2e_cluster, tmp_path):
    # start-up, after a checkpoint, mid large transaction: three times each
    _run_kills(e2e_cluster, tmp_path, kills=9, seed=99)
