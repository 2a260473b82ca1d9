"""The Replicat's streaming apply (``replicat.streamer``) against a real PostgreSQL target:
the trail applied as it grows, exactly once across new streamers, held by the stop file, and
the batch path taking over where it got."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from replicat_support import (
    CKPT,
    TABLES,
    Increments,
    accounts,
    events,
    pg_target,
    query,
    replicat_home,
    tdef,
    write_trail,
)
from spark_conftest import spark_session  # noqa: F401

from trailgate.changes.routing import Router
from trailgate.db.cluster import Cluster
from trailgate.errors import TargetError
from trailgate.home import Home
from trailgate.model import Change, OpType, TrailPosition
from trailgate.replicat.config import ReplicatConfig, load_replicat_config
from trailgate.replicat.ddl_steps import ddl_steps
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.replicat.micro_batch import BatchApplier
from trailgate.replicat.stream_apply import ApplyStreamer, Progress
from trailgate.replicat.task_apply import open_applier
from trailgate.replicat.task_rows import BatchSummary
from trailgate.replicat.trail_tail import TrailTail
from trailgate.spark.trail_offsets import end_of_data
from trailgate.trail import TrailWriter
from trailgate.trail.ddl import encode_marker
from trailgate.trail.naming import TrailName

pytestmark = [pytest.mark.postgres]

START = TrailPosition(0, 0)


def _setup(tmp_path: Path, pg_db: str) -> tuple[Home, ReplicatConfig, Router]:
    pg_target(pg_db)
    home = replicat_home(tmp_path, f"REPLICAT rep1\nTARGETDB {pg_db}\nBATCHSQL\n"
                                   "MAP public.*, TARGET public.*;\n")
    cfg = load_replicat_config(home, "REP1")
    return home, cfg, Router.of(cfg.source_patterns, list(cfg.params.map_excludes))


def _streamer(cfg: ReplicatConfig, router: Router, start: TrailPosition = START,
              stop_file: Path | None = None) -> ApplyStreamer:
    return ApplyStreamer(open_applier(cfg), cfg.trail, router, start, stop_file=stop_file)


def _append(cfg: ReplicatConfig, work: Increments, n: int) -> TrailPosition:
    """``n`` more transactions in a new trail file; where the trail ends then."""
    write_trail(Path(cfg.trail), work.transactions(n))
    end = end_of_data(cfg.trail)
    assert end is not None
    return end


def _until(predicate: Callable[[], bool], what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _row(pg_db: str) -> list[tuple[object, ...]]:
    return query(pg_db, f"SELECT batch_id, partition, position FROM {CKPT} ORDER BY 1, 2")


def test_applied_as_the_trail_grows_and_never_twice(tmp_path: Path, pg_db: str) -> None:
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=5)
    write_trail(Path(cfg.trail), work.transactions(60))
    streamer = _streamer(cfg, router)
    try:
        # no micro-batch asked: the thread applies what the trail holds on its own
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the first file")
        write_trail(Path(cfg.trail), work.transactions(40))  # a second file
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the second file")
        end = end_of_data(cfg.trail)
        assert end is not None and end.seqno == 1
        progress = streamer.sync(end)
        assert progress.position == end
        assert progress.last_csn == work.csn
        assert progress.read_time is not None
        counts = progress.counts["public.accounts"]
        assert counts.inserts == len(work.counters)
        assert counts.updates == sum(work.counters.values())
        assert streamer.sync(end).counts == {}  # taken once
        assert events(pg_db) == work.events
        # one row, the streamed apply's, at the end of what it applied
        assert _row(pg_db) == [(-1, 0, str(end))]
    finally:
        streamer.close()
    # a new streamer from the trail's start goes on where the row says: nothing again
    again = _streamer(cfg, router)
    try:
        assert again.position == end
        assert again.sync(end).counts == {}
        end2 = _append(cfg, work, 30)
        progress = again.sync(end2)
        assert progress.position == end2
        assert sum(c.operations for c in progress.counts.values()) > 0
        assert accounts(pg_db) == work.expected_accounts()
        assert events(pg_db) == work.events
        assert _row(pg_db) == [(-1, 0, str(end2))]
    finally:
        again.close()


def _wakeups(thread_id: int | None) -> int:
    """How often a thread of this process went to sleep and woke (voluntary switches)."""
    for line in Path(f"/proc/self/task/{thread_id}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_an_idle_trail_is_not_polled_and_a_change_wakes_the_streamer(
        tmp_path: Path, pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21's idle CPU: the thread looked at an idle trail every 10 ms (100 wake-ups a
    second, all day).  Now it sleeps until the trail's directory changes: with its timer
    made 60 s long, a second idle costs a few wake-ups, and a new file is still applied
    at once."""
    import trailgate.replicat.stream_apply as stream_apply

    monkeypatch.setattr(stream_apply, "WATCH_SECONDS", 60.0, raising=False)
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=9)
    write_trail(Path(cfg.trail), work.transactions(10))
    streamer = _streamer(cfg, router)
    try:
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the first file")
        time.sleep(0.3)  # settled into its idle wait
        before = _wakeups(streamer._thread.native_id)
        time.sleep(1.0)
        assert _wakeups(streamer._thread.native_id) - before <= 5
        write_trail(Path(cfg.trail), work.transactions(10))  # no sync: only the kernel tells
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the second file",
               timeout=30)
    finally:
        streamer.close()


def test_eofdelay_bounds_the_gap_before_the_next_step(tmp_path: Path, pg_db: str) -> None:
    """A Replicat's EOFDELAYCSECS (``step_gap``): transactions that reach the trail while
    a slow step runs wait for the next step until the gap after that step's start has
    passed (``STEP_SPACING`` times a 0.3 s step is 6 s, above the gap asked), then land."""
    _, cfg, router = _setup(tmp_path, pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION public.slow_step() RETURNS trigger LANGUAGE plpgsql "
                     "AS $$BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END$$")
        conn.execute("CREATE TRIGGER slow_step AFTER INSERT OR UPDATE ON public.accounts "
                     "FOR EACH STATEMENT EXECUTE FUNCTION public.slow_step()")
        conn.execute("ALTER TABLE public.accounts ENABLE ALWAYS TRIGGER slow_step")
    work = Increments(seed=21)
    streamer = ApplyStreamer(open_applier(cfg), cfg.trail, router, START, step_gap=2.0)
    try:
        began = time.monotonic()
        write_trail(Path(cfg.trail), work.transactions(1))
        _until(lambda: bool(query(pg_db, "SELECT 1 FROM pg_stat_activity "
                                         "WHERE wait_event = 'PgSleep'")),
               "the first step to run", timeout=30)
        write_trail(Path(cfg.trail), work.transactions(1))  # during the first step
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "both transactions",
               timeout=30)
        assert time.monotonic() - began >= 2.0  # the second step waited for the gap
    finally:
        streamer.close()


@pytest.mark.parametrize("found", ["nothing", "transactions"])
def test_a_file_written_during_a_scan_is_applied(
        tmp_path: Path, pg_db: str, monkeypatch: pytest.MonkeyPatch, found: str) -> None:
    """CI, stop 29: a second file written while the streamer's scan was finding nothing was
    never applied — the trail's look was taken after the scan, so it already held the new
    file and matched every later look.  Here the file is written inside that scan; and
    inside a scan that found transactions, after whose step the streamer waits for the
    trail to change (its look, taken before the scan, does not hold the new file)."""
    import trailgate.replicat.stream_apply as stream_apply

    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=13)
    write_trail(Path(cfg.trail), work.transactions(20))
    first = work.expected_accounts()
    if found == "nothing":  # a streamer before applied the file: the next one starts at its end
        before = _streamer(cfg, router)
        try:
            _until(lambda: accounts(pg_db) == first, "the first file")
        finally:
            before.close()
    written: list[bool] = []

    def write_once(start: TrailPosition, end: TrailPosition) -> None:
        if not written and (end == start and start.rba > 0) == (found == "nothing"):
            write_trail(Path(cfg.trail), work.transactions(20))  # lands after the look
            written.append(True)

    real_scan, real_tail = stream_apply.scan_boundary, TrailTail.scan

    def scan_then_write(trail: str, start: TrailPosition, **kw: Any) -> Any:
        result = real_scan(trail, start, **kw)
        write_once(start, result[0])
        return result

    def tail_then_write(tail: TrailTail, at: TrailPosition, *args: Any, **kw: Any) -> Any:
        result = real_tail(tail, at, *args, **kw)  # the open file's scan, the same way
        if result is not None:
            write_once(at, result[0])
        return result

    monkeypatch.setattr(stream_apply, "scan_boundary", scan_then_write)
    monkeypatch.setattr(TrailTail, "scan", tail_then_write)
    streamer = _streamer(cfg, router)
    try:
        _until(lambda: bool(written), f"the scan that found {found}", timeout=30)
        assert accounts(pg_db) == first or accounts(pg_db) == work.expected_accounts()
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the file written "
               "during the scan", timeout=20)
        assert events(pg_db) == work.events
    finally:
        streamer.close()


def test_a_trickle_is_applied_as_it_lands_with_one_scan_a_step(
        tmp_path: Path, pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction at a time, as a live Extract writes them: each is applied without a
    sync asking, and a step whose scan read all its look saw waits for the trail to change
    instead of scanning again for nothing (two scans a step before)."""
    import trailgate.replicat.stream_apply as stream_apply

    scans: list[TrailPosition] = []
    real_scan, real_tail = stream_apply.scan_boundary, TrailTail.scan

    def scan(trail: str, start: TrailPosition, **kw: Any) -> Any:
        scans.append(start)
        return real_scan(trail, start, **kw)

    def tail(self: TrailTail, at: TrailPosition, *args: Any, **kw: Any) -> Any:
        found = real_tail(self, at, *args, **kw)
        if found is not None:
            scans.append(at)
        return found

    monkeypatch.setattr(stream_apply, "scan_boundary", scan)
    monkeypatch.setattr(TrailTail, "scan", tail)
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=17)
    writer = TrailWriter(cfg.trail, fsync=False)
    try:
        writer.write_transaction(next(work.transactions(1)), TABLES)
        writer.write_through()
        streamer = _streamer(cfg, router)
        try:
            _until(lambda: accounts(pg_db) == work.expected_accounts(), "the first")
            scans.clear()
            first = streamer.transactions
            for _ in range(15):
                writer.write_transaction(next(work.transactions(1)), TABLES)
                writer.write_through()
                _until(lambda: accounts(pg_db) == work.expected_accounts(), "a transaction",
                       timeout=30)
                time.sleep(0.03)
            steps = streamer.transactions - first
            assert steps == 15
            assert len(scans) <= steps + 3, scans
            assert events(pg_db) == work.events
        finally:
            streamer.close()
    finally:
        writer.close()


def test_a_next_file_seen_half_written_is_applied_once_complete(tmp_path: Path,
                                                                pg_db: str) -> None:
    """The streamer's scan stops before a next file still being written; the file growing
    afterwards (not only its appearing) must wake the streamer."""
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=11)
    write_trail(Path(cfg.trail), work.transactions(20))
    first = work.expected_accounts()
    write_trail(Path(cfg.trail), work.transactions(20))
    second = TrailName(cfg.trail).file(1)
    whole = second.read_bytes()
    second.write_bytes(whole[:10])  # the next file as a writer has just begun it
    streamer = _streamer(cfg, router)
    try:
        _until(lambda: accounts(pg_db) == first, "the first file")
        time.sleep(0.3)  # the streamer has looked at the half-written file and idles
        with second.open("ab") as f:
            f.write(whole[10:])
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the completed file")
        assert events(pg_db) == work.events
    finally:
        streamer.close()


def test_the_stop_file_holds_all_but_what_a_batch_waits_for(tmp_path: Path,
                                                            pg_db: str) -> None:
    home, cfg, router = _setup(tmp_path, pg_db)
    stop = home.dirchk / "REP1.stop"
    stop.touch()
    work = Increments(seed=8)
    write_trail(Path(cfg.trail), work.transactions(30))
    first = work.expected_accounts()
    end0 = end_of_data(cfg.trail)
    write_trail(Path(cfg.trail), work.transactions(30))
    assert end0 is not None
    streamer = _streamer(cfg, router, stop_file=stop)
    try:
        time.sleep(0.5)
        assert accounts(pg_db) == {} and _row(pg_db) == []  # held
        assert streamer.sync(end0).position == end0  # what a batch waits for, no more
        assert accounts(pg_db) == first
        time.sleep(0.5)
        assert _row(pg_db) == [(-1, 0, str(end0))]
        stop.unlink()  # released
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the rest")
    finally:
        streamer.close()


def test_a_row_moved_by_another_process_stops_it_with_nothing_committed(
        tmp_path: Path, pg_db: str) -> None:
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=2)
    end = _append(cfg, work, 20)
    streamer = _streamer(cfg, router)
    try:
        streamer.sync(end)
        before = accounts(pg_db)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(f"UPDATE {CKPT} SET position = '0:1' WHERE batch_id = -1")
        end2 = _append(cfg, work, 20)
        with pytest.raises(TargetError, match="another process applies for this group"):
            streamer.sync(end2)
        assert accounts(pg_db) == before
        assert _row(pg_db) == [(-1, 0, "0:1")]
    finally:
        streamer.close()


def test_a_lost_connection_is_raised_and_a_new_streamer_goes_on(tmp_path: Path,
                                                                pg_db: str) -> None:
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=6)
    end = _append(cfg, work, 30)
    streamer = _streamer(cfg, router)
    try:
        streamer.sync(end)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE application_name = 'trailgate replicat REP1'")
        end2 = _append(cfg, work, 30)
        with pytest.raises(TargetError, match=r"lost the connection .* applying the trail's "
                                              r"next transactions.* what the target did not "
                                              r"commit is applied again"):
            streamer.sync(end2)
    finally:
        streamer.close()
    assert _row(pg_db) == [(-1, 0, str(end))]
    again = _streamer(cfg, router)
    try:
        assert again.sync(end2).position == end2
    finally:
        again.close()
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events


@pytest.mark.spark
def test_the_batch_path_starts_where_the_streamed_apply_got(tmp_path: Path, pg_db: str,
                                                            spark: object) -> None:
    """A run without the streamer (``--once``) after a streaming one: what the row covers is
    left out, the rest applied once (a doubled insert would be a collision and stop it)."""
    home, cfg, router = _setup(tmp_path, pg_db)
    stop = home.dirchk / "REP1.stop"
    stop.touch()
    work = Increments(seed=4)
    write_trail(Path(cfg.trail), work.transactions(40))
    end0 = end_of_data(cfg.trail)
    write_trail(Path(cfg.trail), work.transactions(40))
    assert end0 is not None
    streamer = _streamer(cfg, router, stop_file=stop)
    streamer.sync(end0)
    streamer.close()
    stop.unlink()
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events
    end = end_of_data(cfg.trail)
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.read_position == {"seqno": end.seqno, "rba": end.rba}
    rows = _row(pg_db)
    assert rows[0] == (-1, 0, str(end0)) and len(rows) == 2 and rows[1][:2] == (0, 0)
    # streaming again from where Spark's offsets are (as the group starts it), then a
    # --once run that finds everything covered by the row: nothing applied, no batch row
    end2 = _append(cfg, work, 10)
    streamer = _streamer(cfg, router, start=end)
    try:
        streamer.sync(end2)
    finally:
        streamer.close()
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    assert accounts(pg_db) == work.expected_accounts()
    assert len(_row(pg_db)) == 2
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck is not None and ck.read_position == {"seqno": end2.seqno, "rba": end2.rba}


def test_a_backlog_with_ddl_is_cut_at_its_ddl_transactions(tmp_path: Path, pg_db: str) -> None:
    """A backlog step holding a DDL is applied as the DML before it, the DDL's transaction
    alone, and the DML after it: three target transactions, so the DML around the DDL stays
    set-based; the data and the DDL land as in one step."""
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=9)
    events2 = tdef("public.events", [("id", "integer"), ("kind", "text"), ("c", "integer")],
                   ["id"])
    w = TrailWriter(Path(cfg.trail), megabytes=1, fsync=False)
    for txn in work.transactions(150):
        w.write_transaction(txn, TABLES)
    w.begin_transaction("0.ddl.1", work.csn + 1)
    work.csn += 1
    w.add_change(Change(OpType.DDL, "public.events", text=encode_marker(
        "ALTER TABLE public.events ADD c int", [("C5", "1"), ("B3", "public"),
                                                ("B4", "events"), ("B5", "TABLE"),
                                                ("B6", "ALTER")])), None)
    w.add_definition(events2)
    w.commit_transaction()
    for txn in work.transactions(150):
        w.write_transaction(txn, {**TABLES, "public.events": events2})
    w.close()
    end = end_of_data(cfg.trail)
    assert end is not None
    steps = ddl_steps(cfg.trail, START, end)
    assert len(steps) == 3 and steps[0][0] == START and steps[-1][1] == end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(steps))
    streamer = _streamer(cfg, router)
    try:
        assert streamer.sync(end).position == end
        assert streamer.transactions == 3
    finally:
        streamer.close()
    assert accounts(pg_db) == work.expected_accounts()
    assert events(pg_db) == work.events
    assert query(pg_db, "SELECT count(*) FROM pg_attribute WHERE attrelid = "
                        "'public.events'::regclass AND attname = 'c'") == [(1,)]
    assert _row(pg_db) == [(-1, 0, str(end))]


def test_the_group_checkpoint_moves_between_batches_and_counts_once(tmp_path: Path,
                                                                    pg_db: str) -> None:
    """With a long batch window the stream apply writes the group checkpoint itself about
    every ``checkpoint_seconds`` after steps (INFO, LAG and the Manager stay current); a
    micro-batch then records only what is left, and the clean stop the rest: every change
    counted once, the position and last commit those of the last step."""
    home, cfg, router = _setup(tmp_path, pg_db)
    applier = BatchApplier(cfg, 1, spark_dir=tmp_path / "spark", start=START,
                           continuous=True)
    assert applier.continuous
    rest: list[dict] = []
    applier.on_rest = rest.append  # the run's report: what came after the last batch
    applier.streamer = ApplyStreamer(open_applier(cfg), cfg.trail, router, START,
                                     checkpoint=applier._stream_checkpoint,
                                     checkpoint_seconds=0.5)

    def checkpoint() -> tuple[TrailPosition, int | None, int, int]:
        ck = home.checkpoints.load("REP1", "REPLICAT")
        if ck is None or not ck.read_position:
            return START, None, 0, 0
        stats = ck.stats.get("public.accounts")
        return (TrailPosition(int(ck.read_position["seqno"]), int(ck.read_position["rba"])),
                ck.last_csn, stats.inserts if stats else 0, stats.updates if stats else 0)

    work = Increments(seed=6)
    try:
        end1 = _append(cfg, work, 30)
        _until(lambda: checkpoint()[0] == end1, "the first checkpoint", timeout=10)
        assert checkpoint()[1] == work.csn
        end2 = _append(cfg, work, 30)
        began = time.monotonic()
        _until(lambda: checkpoint()[0] == end2, "the second checkpoint", timeout=10)
        assert time.monotonic() - began < 6  # about the period, not a batch window (10 s)
        end3 = _append(cfg, work, 30)
        # a micro-batch: sync, then the checkpoint; its counts (the run's report) are all
        # since the last sync, whatever the checkpoint took meanwhile
        counts = applier._streamed((end2, end3), 7)
        assert counts is not None and counts["public.accounts"].operations > 0
        assert checkpoint()[:2] == (end3, work.csn)
        end4 = _append(cfg, work, 5)
        _until(lambda: accounts(pg_db) == work.expected_accounts(), "the last transactions")
    finally:
        applier.close()  # the clean stop's checkpoint
    pos, csn, inserts, updates = checkpoint()
    assert (pos, csn) == (end4, work.csn)
    assert len(rest) == 1  # the report's counts: the batch's and the rest, each once
    assert (counts["public.accounts"].operations + rest[0]["public.accounts"].operations
            == inserts + updates)
    assert inserts == len(work.counters) and updates == sum(work.counters.values())
    assert accounts(pg_db) == work.expected_accounts()
    # a replay's stream apply starts at its row, which a tail with nothing mapped may leave
    # behind the group checkpoint: recording it never moves the checkpoint back
    applier._checkpoint(BatchSummary(end={"seqno": START.seqno, "rba": START.rba},
                                     last_csn=1), {})
    assert checkpoint() == (end4, work.csn, inserts, updates)


def test_a_slow_checkpoint_write_does_not_hold_the_steps(tmp_path: Path, pg_db: str) -> None:
    """The stream apply's own group checkpoint write (its fsyncs: tens of milliseconds on
    a busy disk) runs beside the steps: while one is slow (held here until released) the
    trail's new transactions are still applied, and a later write covers them."""
    _, cfg, router = _setup(tmp_path, pg_db)
    release, started = threading.Event(), threading.Event()
    written: list[TrailPosition] = []

    def slow(progress: Progress) -> None:
        started.set()
        release.wait(30)
        written.append(progress.position)

    work = Increments(seed=7)
    streamer = ApplyStreamer(open_applier(cfg), cfg.trail, router, START, checkpoint=slow,
                             checkpoint_seconds=0.1)
    try:
        _append(cfg, work, 5)
        _until(started.is_set, "the first checkpoint write", timeout=30)
        end2 = _append(cfg, work, 5)
        _until(lambda: streamer.position == end2, "steps while the write is held", timeout=30)
        assert accounts(pg_db) == work.expected_accounts()
        assert not written
        release.set()
        _until(lambda: bool(written) and written[-1] == end2, "a write covering them",
               timeout=30)
    finally:
        release.set()
        streamer.close()


def test_commits_a_crashed_target_lost_are_applied_again(tmp_path: Path) -> None:
    """COMMIT NOWAIT (the default with a checkpoint table): steps return before the target's
    disk has them, so the streamer reports as applied, to a sync, a checkpoint or its close,
    only what a flush made durable.  The target crashes (immediate stop, its WAL writer
    asleep) with steps applied but not flushed; a streamer from what was reported applies
    what the crash lost exactly once."""
    directory = Path(tempfile.mkdtemp(prefix="tg-pg-"))  # a path the server's user reaches
    cluster = Cluster(directory, settings={"wal_writer_delay": "'10s'"})
    cluster.create()
    cluster.start()
    try:
        conninfo = cluster.create_database("crash")
        _, cfg, router = _setup(tmp_path, conninfo)
        assert cfg.params.commit_nowait
        work = Increments(seed=11)
        end1 = _append(cfg, work, 20)
        streamer = ApplyStreamer(open_applier(cfg), cfg.trail, router, START, nowait=True)
        try:
            assert streamer.sync(end1).position == end1  # flushed before it answers
            end2 = _append(cfg, work, 3)
            _until(lambda: _row(conninfo) == [(-1, 0, str(end2))], "the last steps")
            assert streamer.position == end1  # applied, not yet durable
            cluster.stop("immediate")
        finally:
            progress = streamer.close()  # its flush fails: the target is down
        assert progress.position == end1
        cluster.start()  # on another port if the old one is still held
        conninfo = cluster.conninfo("crash")
        cfg = dataclasses.replace(cfg, target=conninfo)
        # the crash lost the last steps with their row, or none of them
        assert _row(conninfo) in ([(-1, 0, str(end1))], [(-1, 0, str(end2))])
        streamer = ApplyStreamer(open_applier(cfg), cfg.trail, router, progress.position,
                                 nowait=True)
        try:
            assert streamer.sync(end2).position == end2
        finally:
            streamer.close()
        assert accounts(conninfo) == work.expected_accounts()  # nothing lost, none twice
        assert events(conninfo) == work.events
        assert _row(conninfo) == [(-1, 0, str(end2))]
    finally:
        cluster.destroy()
        shutil.rmtree(directory, ignore_errors=True)


def test_commit_nowait_checkpoints_only_what_was_flushed_and_counts_once(tmp_path: Path,
                                                                          pg_db: str) -> None:
    """With COMMIT NOWAIT every position a checkpoint write records was flushed first, and
    each step's counts reach the group checkpoint once: a write at a position it already
    has adds no counts (as the group checkpoint does), so counts of steps not yet durable
    must wait for the write that covers them."""
    _, cfg, router = _setup(tmp_path, pg_db)
    work = Increments(seed=13)
    applier = open_applier(cfg)
    flushed: list[TrailPosition] = []
    real_flush = applier.flush_commits

    def flush() -> None:  # the real flush, recorded
        before = streamer._progress.position
        real_flush()
        flushed.append(before)

    applier.flush_commits = flush  # type: ignore[method-assign]
    written: list[Progress] = []

    def record(progress: Progress) -> None:  # as the group checkpoint keeps counts
        if written and written[-1].position == progress.position:
            progress = Progress(progress.position)
        written.append(progress)

    streamer = ApplyStreamer(applier, cfg.trail, router, START, checkpoint=record,
                             checkpoint_seconds=3600, nowait=True)
    try:
        first = _append(cfg, work, 10)
        end = first
        for _ in range(3):
            end = _append(cfg, work, 10)
            streamer.sync(end)
            streamer.checkpoint()
            more = _append(cfg, work, 10)  # applied, not yet durable
            _until(lambda more=more: streamer._progress.position >= more, "the next steps")
            streamer.sync(first)  # a batch behind the streamer: its position again
            streamer.checkpoint()
            end = more
        streamer.sync(end)
        streamer.checkpoint()
    finally:
        streamer.close()
    assert flushed and written
    for progress in written:
        assert any(f >= progress.position for f in flushed), progress.position
    counts = [p.counts["public.accounts"] for p in written if "public.accounts" in p.counts]
    assert (sum(c.inserts for c in counts), sum(c.updates for c in counts)) == (
        len(work.counters), sum(work.counters.values()))
    assert accounts(pg_db) == work.expected_accounts()
