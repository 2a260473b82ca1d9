"""A table added to a running pipeline is snapshotted in chunks through the log: exact.

The Extract runs (its own process) while a workload changes ``app.orders`` and a table the
pipeline does not capture yet, ``app.added`` (inserts, updates, deletes and key moves,
across chunk boundaries).  Then ``SEND EXTRACT …, SNAPSHOT TABLE app.added``
(which publishes the table once its tracking has begun) — the workload keeps going while
the chunks are read and placed in the trail between the log's transactions.  Replicats
into PostgreSQL and Delta, started on an empty ``app.added``, end with it equal to the
source, row for row.
"""

from __future__ import annotations

import io
import os
import random
import signal
import threading
import time

import psycopg
import pytest
from load_support import Workload, differences, seed
from replicat_support import start_group

from trailgate.demo.compare import compare_tables
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.process import lifecycle
from trailgate.run import run_named_group

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

ADDED_DDL = """
CREATE TABLE app.added (id integer PRIMARY KEY, grp integer NOT NULL, val text,
                        ts timestamptz DEFAULT now());
INSERT INTO app.added SELECT g, g % 7, 'v' || g, now() FROM generate_series(1, 3000) g;
"""


class AddedWorkload(threading.Thread):
    """Changes app.added all the time, in small transactions, keys moving between chunks."""

    def __init__(self, conninfo: str, round_: int = 0):
        super().__init__(daemon=True)
        self.conninfo = conninfo
        self.round = round_  # a later round moves keys to values no earlier round used
        self.stop = threading.Event()
        self.done = 0
        self.error: BaseException | None = None

    def wait(self, n: int) -> None:
        deadline = time.monotonic() + 60
        while self.done < n and time.monotonic() < deadline:
            time.sleep(0.05)

    def run(self) -> None:
        rng = random.Random(11 + self.round)
        nxt, low = 10_000 + 100_000 * self.round, -100_000 * self.round
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self.stop.is_set():
                    with conn.transaction():
                        for _ in range(rng.randint(1, 3)):
                            k = rng.randint(1, 3200)
                            op = rng.random()
                            if op < 0.45:
                                conn.execute("UPDATE app.added SET val = %s, grp = grp + 1 "
                                             "WHERE id = %s", (f"u{rng.random()}", k))
                            elif op < 0.6:
                                conn.execute("DELETE FROM app.added WHERE id = %s", (k,))
                            elif op < 0.85:
                                conn.execute("INSERT INTO app.added VALUES (%s, 1, 'i') ON "
                                             "CONFLICT (id) DO UPDATE SET val = 'again'",
                                             (rng.randint(1, 3200),))
                            else:  # a key moves, down into chunks already read or up
                                nxt, low = nxt + 1, low - 1
                                target = rng.choice([low, nxt])
                                conn.execute("UPDATE app.added SET id = %s WHERE id = %s",
                                             (target, k))
                    self.done += 1
                    time.sleep(0.003 * rng.random())
        except BaseException as exc:  # reported by the test
            self.error = exc


def _reports(home: Home) -> str:
    """The Extract's reports, the aged ones (of runs before a restart) first."""
    aged = sorted(home.dirrpt.glob("EXTS[0-9].rpt"), reverse=True)
    return "".join(p.read_text() for p in [*aged, home.report_file("EXTS")])


def _snapshot_done(home: Home, proc, log, table: str, deadline: float, after: int = 0) -> None:
    """Until the Extract's reports say the snapshot of ``table`` (its ``after``+1-th) is
    done and the checkpoint no longer carries it."""
    requests = home.dirchk / "EXTS.snapshots"
    while True:
        ck = home.checkpoints.load("EXTS", "EXTRACT")
        pending = any(requests.glob("*.json"))
        under_way = ck is not None and ck.read_position.get("snapshots")
        report = _reports(home)
        assert "runner stopped" not in report and "refused" not in report, report[-3000:]
        if not pending and not under_way and ck is not None and \
                report.count(f"Snapshot of {table} done") > after:
            return
        assert proc.poll() is None and time.monotonic() < deadline, \
            log.read_text()[-3000:] + home.report_file("EXTS").read_text()[-3000:]
        time.sleep(0.3)


def _caught_up(src: str, home: Home, proc, log) -> None:
    """Until the Extract's checkpoint is past everything the source has written."""
    with psycopg.connect(src, autocommit=True) as conn:
        end = conn.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8").fetchone()[0]
    while int((home.checkpoints.load("EXTS", "EXTRACT").read_position or {}).get("lsn", 0)) \
            < end:
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.3)


def _send(home: Home, line: str) -> None:
    out = io.StringIO()
    shell = Shell(home, out)
    shell.run_script(line + "\n", "snap")
    shell.close()
    assert "Request queued: app.added" in out.getvalue(), out.getvalue()


def _targets_equal(src: str, tgt: str, home: Home, groups: tuple[str, str] = ("REPSP", "REPSD"),
                   delta: str = "delta",
                   tables: tuple[str, ...] = ("app.added", "app.orders", "app.events")
                   ) -> None:
    for group in groups:
        assert run_named_group(home, group, once=True) == 0
    diff = differences(src, tgt, tables)
    assert not diff, diff
    result = compare_tables(src, ["app.added"], delta_root=home.path / delta)[0]
    assert result.equal, result.differences


@pytest.mark.parametrize("kill_midway", [
    False, pytest.param(True, marks=pytest.mark.heavy)],
    ids=["resync", "resync-kill9-restart"])
def test_table_added_to_a_running_pipeline_is_snapshotted_exactly(e2e_cluster, tmp_path,
                                                                  kill_midway):
    """Then the targets are damaged and ``SEND … SNAPSHOT TABLE app.added, RESYNC`` (the
    target emptied, the chunks fill it again) makes them equal once more — with
    ``kill_midway`` (heavy) the Extract is killed -9 after a few chunks of the RESYNC and
    restarted: it resumes the snapshot from its checkpoint, in a new trail file (which
    repeats the table's definition: a Delta batch across the two files must apply both)."""
    src = e2e_cluster.create_database(f"snap_src{int(kill_midway)}")
    tgt = e2e_cluster.create_database(f"snap_tgt{int(kill_midway)}")
    seed(src, orders=2000, items=500, events=100)
    seed(tgt, orders=2000, items=500, events=100)
    with psycopg.connect(tgt, autocommit=True) as conn:  # the target table, empty
        conn.execute("CREATE TABLE app.added (id integer PRIMARY KEY, grp integer NOT NULL, "
                     "val text, ts timestamptz)")
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "exts.prm").write_text(
        f"EXTRACT exts\nSOURCEDB {src}\nEXTTRAIL ./dirdat/aa\nSPARK MASTER local[1]\n"
        "SPARK CONF trailgate.extract.snapshotChunkRows=300\nTABLE app.*;\n")
    (home.dirprm / "repsp.prm").write_text(f"REPLICAT repsp\nTARGETDB {tgt}\nBATCHSQL\n"
                                           "MAP app.*, TARGET app.*;\n")
    (home.dirprm / "repsd.prm").write_text("REPLICAT repsd\nTARGETDELTA ./delta\n"
                                           "MAP app.added, TARGET app.added;\n")
    shell = Shell(home, io.StringIO())
    shell.run_script(f"DBLOGIN SOURCEDB '{src}'\nADD TRANDATA app.orders\n"
                     "ADD TRANDATA app.items\nADD TRANDATA app.increments\n"
                     "ADD TRANDATA app.events\nADD EXTRACT exts, TRANLOG, BEGIN NOW\n"
                     "ADD EXTTRAIL ./dirdat/aa, EXTRACT exts\n"
                     f"DBLOGIN SOURCEDB '{tgt}'\nADD CHECKPOINTTABLE gg.ck\n"
                     "ADD REPLICAT repsp, EXTTRAIL ./dirdat/aa, CHECKPOINTTABLE gg.ck\n"
                     "ADD REPLICAT repsd, EXTTRAIL ./dirdat/aa, NODBCHECKPOINT\n", "setup")
    log = tmp_path / "extract.log"
    proc = start_group(home, "extract", "EXTS", log=log)
    orders = Workload(src, seed=2, tables=("app.orders", "app.events")).start()
    added = AddedWorkload(src)
    try:
        deadline = time.monotonic() + 300
        while home.checkpoints.load("EXTS", "EXTRACT") is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        with psycopg.connect(src, autocommit=True) as conn:  # a new table, not captured yet
            conn.execute(ADDED_DDL)
        added.start()
        added.wait(30)
        _send(home, "SEND EXTRACT exts, SNAPSHOT TABLE app.added")
        _snapshot_done(home, proc, log, "app.added", deadline)
        time.sleep(1)
    finally:
        added.stop.set()
        if added.ident is not None:  # started
            added.join(30)
        orders.stop()
    assert added.error is None, added.error
    assert added.done > 50
    _caught_up(src, home, proc, log)  # the Extract has everything
    report = home.report_file("EXTS").read_text()
    assert "Snapshot of app.added started" in report and "chunk(s)" in report
    _targets_equal(src, tgt, home)

    # RESYNC: the snapshot again, under the workload.  Two more Replicats (app.added only;
    # a group run in this process keeps its lock while this process's JVM lives) read the
    # trail from its start; the PostgreSQL target holds rows the source never had: only
    # the RESYNC's truncate removes them, and its chunks and the log then fill the tables.
    tgt2 = e2e_cluster.create_database(f"snap_tgt2{int(kill_midway)}")
    with psycopg.connect(tgt2, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.added (id integer PRIMARY KEY, "
                     "grp integer NOT NULL, val text, ts timestamptz)")
        conn.execute("INSERT INTO app.added SELECT g, 0, 'junk', now() "
                     "FROM generate_series(900000, 900050) g")
    (home.dirprm / "repsp2.prm").write_text(f"REPLICAT repsp2\nTARGETDB {tgt2}\nBATCHSQL\n"
                                            "MAP app.added, TARGET app.added;\n")
    (home.dirprm / "repsd2.prm").write_text("REPLICAT repsd2\nTARGETDELTA ./delta2\n"
                                            "MAP app.added, TARGET app.added;\n")
    shell = Shell(home, io.StringIO())
    shell.run_script("ADD REPLICAT repsp2, EXTTRAIL ./dirdat/aa, NODBCHECKPOINT\n"
                     "ADD REPLICAT repsd2, EXTTRAIL ./dirdat/aa, NODBCHECKPOINT\n", "round 2")
    shell.close()
    added = AddedWorkload(src, round_=1)
    added.start()
    deadline = time.monotonic() + 300
    try:
        _send(home, "SEND EXTRACT exts, SNAPSHOT TABLE app.added, RESYNC")
        if kill_midway:  # after a few chunks: kill -9, restart, it resumes
            while not any(int(s.get("chunks", 0)) >= 3 for s in (home.checkpoints.load(
                    "EXTS", "EXTRACT").read_position or {}).get("snapshots") or []):
                assert proc.poll() is None and time.monotonic() < deadline, \
                    log.read_text()[-3000:]
                time.sleep(0.1)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            proc = start_group(home, "extract", "EXTS", log=log)
        _snapshot_done(home, proc, log, "app.added", deadline, after=1)
    finally:
        added.stop.set()
        if added.ident is not None:  # started
            added.join(30)
    assert added.error is None, added.error
    _caught_up(src, home, proc, log)
    lifecycle.stop_group(home, "EXTRACT", "EXTS", timeout=120)
    proc.wait(60)
    report = _reports(home)
    assert report.count("Snapshot of app.added started") == 2, report[-3000:]
    _targets_equal(src, tgt2, home, ("REPSP2", "REPSD2"), "delta2", ("app.added",))
