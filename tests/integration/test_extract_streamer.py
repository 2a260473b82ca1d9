"""The Extract's trail streamer against a real server: transactions reach the trail as they
commit, before any micro-batch asks; a sync makes them durable and says what it covers; a
new run replaying the same range writes nothing twice; a lost stream is the next sync's
error; a long read writes what has arrived before it waits for more."""

from __future__ import annotations

import errno
import threading
import time

import pytest
from extract_support import make_home, trail_transactions, wait_for

from trailgate.capture.postgres.slots import slot_name
from trailgate.capture.postgres.trandata import add_trandata
from trailgate.db.connect import connect
from trailgate.errors import SourceError
from trailgate.extract.postgres import trail_streamer
from trailgate.extract.postgres.source import SourceOptions, StreamedSlot, slot_state
from trailgate.extract.postgres.trail_streamer import TrailStreamer
from trailgate.spark.trail_sink import SinkOptions, TrailAppender
from trailgate.spark.trail_sink_state import load_state

pytestmark = [pytest.mark.postgres]


def _setup(pg_db, tmp_path):
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        add_trandata(conn, "public.t")
    home = make_home(tmp_path / "gg", pg_db, "STR", "TABLE public.*;")
    with connect(pg_db) as conn:
        _, start, _ = slot_state(conn, slot_name("STR"))
    source = SourceOptions.parse({"home": str(home.path), "group": "STR"})
    return home, source, start


def _sink(home, run_id: str) -> SinkOptions:
    return SinkOptions.parse({"path": str(home.dirdat / "aa"), "home": str(home.path),
                              "group": "STR", "runId": run_id}, run_id)


def _commit(pg_db, first: int, rows: int = 3) -> int:
    """One transaction of ``rows`` inserts; the end of its commit record, exactly (read
    from the WAL: a position read after the commit may lie past a record another process
    logged meanwhile, such as a running-transactions snapshot)."""
    with connect(pg_db) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        before = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        xid = conn.execute(
            "INSERT INTO t SELECT g, 'v' || g FROM generate_series(%s::int, %s::int) g "
            "RETURNING pg_current_xact_id()::text::int8 %% 4294967296",
            (first, first + rows - 1)).fetchone()[0]
        row = conn.execute(
            "SELECT (max(end_lsn) - '0/0'::pg_lsn)::int8 FROM pg_get_wal_records_info("
            "%s::pg_lsn, pg_current_wal_flush_lsn()) WHERE record_type = 'COMMIT' "
            "AND xid::text::int8 = %s", (before, xid)).fetchone()
    assert row is not None and row[0] is not None, "no commit record found"
    return int(row[0])


def test_transactions_reach_the_trail_before_a_sync_and_a_replay_adds_nothing(pg_db,
                                                                             tmp_path):
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    sink = _sink(home, "run-1")
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, sink, start)
    try:
        end1 = _commit(pg_db, 1)
        # in the trail with no micro-batch asking: the streamer wrote it through
        wait_for(lambda: len(trail_transactions(trail)) == 1, 30, "the first transaction")
        assert load_state(home.dirchk / "STR.trailstate") is None  # not yet durable
        msg = streamer.sync(end1)
        assert msg.transactions == 1 and msg.skipped == 0
        assert msg.counts == {"public.t": {"insert": 3}}
        assert msg.source_position is not None and msg.source_position["lsn"] >= end1
        state = load_state(home.dirchk / "STR.trailstate")
        assert state is not None and state.run_id == "run-1"
        assert state.length == home.dirdat.joinpath("aa000000000").stat().st_size
        _commit(pg_db, 10)
        end3 = _commit(pg_db, 20)
        wait_for(lambda: streamer.written >= end3 or len(trail_transactions(trail)) == 3,
                 30, "three transactions")
    finally:
        streamer.close()
        slot.close()
    # a clean stop leaves the state covering the whole file
    state = load_state(home.dirchk / "STR.trailstate")
    assert state is not None
    assert state.length == home.dirdat.joinpath("aa000000000").stat().st_size
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 3]
    # a new run reading the slot again from the start skips what the trail holds (the
    # first sync confirmed the slot past the first transaction: the server sends the rest)
    slot = StreamedSlot(source)
    again = TrailStreamer(slot, _sink(home, "run-2"), start)
    try:
        msg = again.sync(end3)
        assert msg.transactions == 0 and msg.skipped == 2
    finally:
        again.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 3]


def _end_stream(pg_db) -> None:
    """Terminate the slot's walsender and wait until the slot is free."""
    with connect(pg_db, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                     "WHERE slot_name = %s", (slot_name("STR"),))
        wait_for(lambda: conn.execute(
            "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
            (slot_name("STR"),)).fetchone()[0] is None, 30, "the slot to be free", 0.05)


def test_a_lost_stream_is_opened_again_and_a_lost_slot_is_the_next_syncs_error(pg_db,
                                                                             tmp_path):
    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start)
    try:
        streamer.sync(_commit(pg_db, 1))
        _end_stream(pg_db)  # a server restart, say: the next read opens a new stream
        # (once the stream's thread has seen the end: a read racing it fails the streamer,
        # which the group reports and the Manager's AUTORESTART restarts)
        wait_for(lambda: not slot.is_open, 10, "the stream's end seen", 0.01)
        msg = streamer.sync(_commit(pg_db, 10))
        assert msg.transactions == 1 and slot.opened == 2
        assert [len(t[2]) for t in trail_transactions(home.dirdat / "aa")] == [3, 3]
        _end_stream(pg_db)
        with connect(pg_db, autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot_name("STR"),))
        with pytest.raises(SourceError, match=f"{slot_name('STR')}.*does not exist"):
            streamer.sync(_commit(pg_db, 20))
        with pytest.raises(SourceError):  # and every sync after it
            streamer.sync(_commit(pg_db, 30))
    finally:
        streamer.close()
        slot.close()
    # what was written before the failure stays: two whole transactions
    assert [len(t[2]) for t in trail_transactions(home.dirdat / "aa")] == [3, 3]


def _slot_active(pg_db) -> bool:
    with connect(pg_db, autocommit=True) as conn:
        return conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                            (slot_name("STR"),)).fetchone()[0]


def test_the_stop_file_holds_it_off_the_slot_but_a_sync_gets_its_range(pg_db, tmp_path):
    """While the group's stop file exists the streamer lets go of the slot (the server
    decodes nothing for it) and writes nothing new; a sync still gets what it asks for, and
    once the file is gone the stream goes on where it stopped, nothing lost or doubled."""
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    stop = home.dirchk / "STR.stop"
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, stop_file=str(stop))
    try:
        end1 = _commit(pg_db, 1)
        wait_for(lambda: len(trail_transactions(trail)) == 1, 30, "the first transaction")
        streamer.sync(end1)  # its flush confirms the slot
        stop.touch()
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot to be let go", 0.02)
        end2 = _commit(pg_db, 10)
        end3 = _commit(pg_db, 20)
        with connect(pg_db, autocommit=True) as conn:
            confirmed = conn.execute(
                "SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM pg_replication_slots "
                "WHERE slot_name = %s", (slot_name("STR"),)).fetchone()[0]
        # the confirmation reached the server before it let go (nothing else moves the
        # slot; the server moves it no further than it has sent, which may stop short of
        # end1, the WAL position read after the commit)
        assert confirmed > start
        time.sleep(0.5)
        assert len(trail_transactions(trail)) == 1 and not _slot_active(pg_db)  # held
        msg = streamer.sync(end2)  # what a batch waits for, no more
        assert msg.transactions == 1
        time.sleep(0.5)
        assert len(trail_transactions(trail)) == 2
        stop.unlink()  # released
        wait_for(lambda: len(trail_transactions(trail)) == 3, 30, "the rest")
        assert streamer.sync(end3).transactions == 1
    finally:
        streamer.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 3]


@pytest.mark.parametrize("flushsecs", [0, 2])
def test_with_flushsecs_a_hold_and_a_stop_leave_trail_checkpoint_and_slot_consistent(
        pg_db, tmp_path, flushsecs):
    """The stop-file test above with the group's FLUSHSECS set (0: after every write; 2:
    longer than the test waits for anything): a hold makes the trail durable and
    checkpointed before it lets go of the slot, the slot is never confirmed past the
    checkpoint, a sync during the hold gets its range and no more, the release goes on
    where it stopped, and a stop leaves the checkpoint covering the whole trail.  A new
    run replaying from the start writes nothing twice; every insert is counted once."""
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        add_trandata(conn, "public.t")
    home = make_home(tmp_path / "gg", pg_db, "STR", "TABLE public.*;",
                     extra=f"FLUSHSECS {flushsecs}\n")
    with connect(pg_db) as conn:
        _, start, _ = slot_state(conn, slot_name("STR"))
    source = SourceOptions.parse({"home": str(home.path), "group": "STR"})
    flush_seconds = source.config.params.flush_secs
    assert flush_seconds == flushsecs  # what the Extract hands its streamer (group.py)
    trail = home.dirdat / "aa"
    stop = home.dirchk / "STR.stop"

    def consistent() -> None:  # durable, checkpointed, and the slot no further
        state = load_state(home.dirchk / "STR.trailstate")  # (a run starts a new file)
        assert state is not None
        assert state.length == home.dirdat.joinpath(f"aa{state.seqno:09d}").stat().st_size
        ck = home.checkpoints.load("STR", "EXTRACT")
        assert ck is not None and ck.write_position is not None
        assert (ck.write_position.seqno, ck.write_position.rba) == (state.seqno,
                                                                    state.length)
        assert ck.last_csn == trail_transactions(trail)[-1][0]
        restart, confirmed = _slot_lsns(pg_db)
        assert restart <= confirmed <= _checkpoint_lsn(home)

    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, stop_file=str(stop),
                             flush_seconds=flush_seconds)
    try:
        end1 = _commit(pg_db, 1)
        wait_for(lambda: len(trail_transactions(trail)) == 1, 30, "the first transaction")
        stop.touch()  # held before any sync or period: the hold itself flushes
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot to be let go", 0.02)
        assert _checkpoint_lsn(home) >= end1 and _confirmed(pg_db) > start
        consistent()
        end2 = _commit(pg_db, 10)
        end3 = _commit(pg_db, 20)
        time.sleep(0.3)
        assert len(trail_transactions(trail)) == 1 and not _slot_active(pg_db)  # held
        msg = streamer.sync(end2)  # what a batch waits for, no more
        assert msg.transactions == 1 and _checkpoint_lsn(home) >= end2
        time.sleep(0.3)
        assert len(trail_transactions(trail)) == 2
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot let go again", 0.02)
        consistent()
        stop.unlink()  # released
        wait_for(lambda: len(trail_transactions(trail)) == 3, 30, "the rest")
        stop.touch()  # a stop: held, then closed
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot let go at the stop", 0.02)
        assert _checkpoint_lsn(home) >= end3
    finally:
        streamer.close()
        slot.close()
    consistent()
    ck = home.checkpoints.load("STR", "EXTRACT")
    assert ck is not None and ck.stats["public.t"].inserts == 9  # each once
    stop.unlink()
    # a new run replaying from the old start: nothing twice, the checkpoint not moved back
    ahead = _checkpoint_lsn(home)
    slot = StreamedSlot(source)
    again = TrailStreamer(slot, _sink(home, "run-2"), start, stop_file=str(stop),
                          flush_seconds=flush_seconds)
    try:
        assert again.sync(end3).transactions == 0
        end4 = _commit(pg_db, 30)
        wait_for(lambda: len(trail_transactions(trail)) == 4, 30, "the next transaction")
        assert again.sync(end4).transactions <= 1  # (FLUSHSECS 0 may have flushed it)
    finally:
        again.close()
        slot.close()
    assert _checkpoint_lsn(home) >= max(ahead, end4)
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 3, 3]
    consistent()
    ck = home.checkpoints.load("STR", "EXTRACT")
    assert ck is not None and ck.stats["public.t"].inserts == 12


def _wakeups(thread_id: int | None) -> int:
    with open(f"/proc/self/task/{thread_id}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_an_idle_streamer_wakes_rarely_and_a_sync_still_ends_at_once(pg_db, tmp_path):
    """Issue 21's idle CPU: the thread woke every 50 ms to look for requests; now the
    server's data and every request wake it, so it looks twice a second while idle — and
    a sync asked of an idle streamer is not kept waiting for that."""
    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start)
    try:
        end = _commit(pg_db, 1)
        wait_for(lambda: streamer.written >= end, 30, "the transaction")
        streamer.sync(end)
        time.sleep(0.5)
        before = _wakeups(streamer._thread.native_id)
        time.sleep(2.0)
        assert _wakeups(streamer._thread.native_id) - before <= 12  # was about 40
        took = []
        for _ in range(5):  # each sync wakes the idle thread through its interrupt
            t0 = time.monotonic()
            streamer.sync(end)
            took.append(time.monotonic() - t0)
        assert sorted(took)[2] < 0.3, took
    finally:
        streamer.close()
        slot.close()


def test_a_long_read_writes_what_has_arrived_before_it_waits(pg_db, tmp_path):
    """A read whose end the server has not reached (a backlog being decoded) writes the
    transactions it has through to the trail before it waits, so a Replicat starts on
    them; once the server passes the end the read completes, nothing doubled."""
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    end1 = _commit(pg_db, 1)
    end = end1 + (1 << 20)
    slot = StreamedSlot(source)
    appender = TrailAppender(_sink(home, "run-1"))
    failed: list[BaseException] = []

    def read() -> None:
        try:  # 1 MB of WAL past the first commit: nothing writes that much meanwhile
            appender.append(slot.read(start, end, position=False))
        except BaseException as exc:
            failed.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wait_for(lambda: len(trail_transactions(trail)) == 1, 30,
                 "the first transaction in the trail", 0.02)
        assert reader.is_alive() and not failed  # still waiting for the server
        for first in (10, 20):  # two segment switches: the server's WAL moves past the end
            with connect(pg_db, autocommit=True) as conn:
                conn.execute("SELECT pg_switch_wal()")
            _commit(pg_db, first)
        reader.join(30)
        assert not reader.is_alive() and not failed
    finally:
        if reader.is_alive():
            slot.close()
            reader.join(30)
        appender.close()
        slot.close()
    # the first transaction once, and whatever else committed before the read's end (the
    # one after the first switch may), each once
    txns = trail_transactions(trail)
    csns = [t[0] for t in txns]
    assert txns and len(txns[0][2]) == 3 and csns == sorted(set(csns))
    assert all(int(csn) < end for csn in csns)


def _slot_lsns(pg_db) -> tuple[int, int]:
    """The slot's restart and confirmed points."""
    with connect(pg_db, autocommit=True) as conn:
        row = conn.execute("SELECT (restart_lsn - '0/0'::pg_lsn)::int8, "
                           "(confirmed_flush_lsn - '0/0'::pg_lsn)::int8 "
                           "FROM pg_replication_slots WHERE slot_name = %s",
                           (slot_name("STR"),)).fetchone()
    return int(row[0]), int(row[1])


def test_a_streamed_slots_restart_point_follows_its_batches(pg_db, tmp_path):
    """A batch's commit logs a running-transactions snapshot when the slot's restart point
    lags by more than RESTART_LAG_BYTES, also while the driver's stream holds the slot (it
    confirms through the stream): the next confirmation moves the restart point past the
    batch, so a stream opened again (a released hold, a restart) does not decode up to
    15 s of WAL the trail already holds before its first new transaction."""
    from trailgate.extract.postgres.source import RESTART_LAG_BYTES, PgCaptureStreamReader

    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source, snapshots=False)  # only the batch's commit logs one here
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start)
    reader = PgCaptureStreamReader(source)
    try:
        with connect(pg_db) as conn:  # a batch of more WAL than the lag allowed
            conn.execute("INSERT INTO t SELECT g, repeat('x', 300) "
                         "FROM generate_series(1, 8000) g")
        end1 = _commit(pg_db, 10_001)
        assert end1 - start > RESTART_LAG_BYTES
        streamer.sync(end1)
        assert _slot_active(pg_db)  # busy: the commit cannot advance it itself
        reader.commit({"lsn": end1})  # (before the stream's confirmation, as may happen)
        end2 = _commit(pg_db, 20_001)  # the next batch, past the snapshot
        streamer.sync(end2)
        # soon (the server's own snapshot, every 15 s, would move it too, but later)
        wait_for(lambda: _slot_lsns(pg_db)[0] >= end1, 5,
                 "the restart point to pass the first batch", 0.05)
    finally:
        reader.stop()
        streamer.close()
        slot.close()


def test_the_restart_point_follows_the_streamers_own_flushes(pg_db, tmp_path):
    """With FLUSHSECS and no micro-batch at all (a 10 s window leaves them far apart), the
    streamer's confirmations log a running-transactions snapshot every RESTART_LAG_BYTES,
    so the slot's restart point moves past what the trail holds within a few flushes."""
    from trailgate.extract.postgres.source import RESTART_LAG_BYTES

    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, flush_seconds=0.2)
    try:
        with connect(pg_db) as conn:  # more WAL than the lag allowed
            conn.execute("INSERT INTO t SELECT g, repeat('x', 300) "
                         "FROM generate_series(1, 8000) g")
        end1 = _commit(pg_db, 10_001)
        assert end1 - start > RESTART_LAG_BYTES
        wait_for(lambda: _slot_lsns(pg_db)[1] >= end1, 10, "the slot confirmed", 0.05)
        _commit(pg_db, 20_001)  # later WAL, confirmed past the logged snapshot
        wait_for(lambda: _slot_lsns(pg_db)[0] >= end1, 10,
                 "the restart point to pass the first transaction", 0.05)
    finally:
        streamer.close()
        slot.close()


@pytest.mark.parametrize("caught_up", [True, False])
def test_a_hold_lets_go_of_the_slot_with_its_restart_point_at_the_trails_end(
        pg_db, tmp_path, monkeypatch, caught_up):
    """Before a hold lets go of the slot the streamer logs a running-transactions snapshot,
    reads the stream past it and confirms it once durable and checkpointed: the slot's
    restart point is then at the end of what the trail holds (the stream opened at the
    release decodes nothing the trail has), the slot is never confirmed past the group
    checkpoint, and the stream goes on at the release with nothing lost or doubled.  A
    stream further behind the server than SETTLE_MAX_BYTES (here made 0) lets go at once,
    settling to nothing."""
    import trailgate.extract.postgres.trail_streamer as trail_streamer

    if not caught_up:
        monkeypatch.setattr(trail_streamer, "SETTLE_MAX_BYTES", 0)
    points: list[int] = []  # what each settling gave the hold to read to (0: nothing)
    settle = TrailStreamer._settle_point

    def spied(self):
        points.append(settle(self))
        return points[-1]

    monkeypatch.setattr(TrailStreamer, "_settle_point", spied)
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    stop = home.dirchk / "STR.stop"
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, stop_file=str(stop),
                             flush_seconds=0.2)
    try:
        first = _commit(pg_db, 1)
        wait_for(lambda: _checkpoint_lsn(home) >= first, 30, "the first checkpoint")
        _commit(pg_db, 10)  # past the snapshot the first confirmation logged
        wait_for(lambda: _slot_lsns(pg_db)[0] >= first, 10, "the restart point to move")
        # more WAL than a hold leaves behind its restart point (SETTLE_SLACK_BYTES), less
        # than makes a confirmation log a snapshot (RESTART_LAG_BYTES)
        end1 = _commit(pg_db, 20, rows=2000)
        wait_for(lambda: _checkpoint_lsn(home) >= end1, 10, "the checkpoint")
        stop.touch()
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot to be let go", 0.02)
        restart, confirmed = _slot_lsns(pg_db)
        assert points  # the hold settled
        if caught_up:  # before: where the slot was created
            assert restart >= end1  # (a snapshot of the server's own may have done it)
        else:  # let go at once, nothing read on to (the server's own snapshots may still
            # move the restart point a little)
            assert not any(points)
        assert restart <= confirmed <= _checkpoint_lsn(home)
        end2 = _commit(pg_db, 3000)
        time.sleep(0.3)
        assert len(trail_transactions(trail)) == 3 and not _slot_active(pg_db)  # held
        stop.unlink()
        wait_for(lambda: _checkpoint_lsn(home) >= end2, 30, "the transaction after it")
    finally:
        streamer.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 2000, 3]


def _rolled_back(pg_db) -> None:
    """A little WAL that reaches no trail: a transaction rolled back."""
    with connect(pg_db, autocommit=False) as conn:
        conn.execute("INSERT INTO t VALUES (-1, 'gone')")
        conn.rollback()


def test_a_hold_settles_the_restart_point_with_one_snapshot(pg_db, tmp_path, monkeypatch):
    """A hold of a caught-up stream logs one running-transactions snapshot, not two: after
    each confirmation the streamer waits (briefly) for the server to take it before it
    looks at the restart point, so it does not log a second snapshot only because it
    looked too soon.  The stream's confirmations here reach the server 0.1 s late (its
    thread sends each after a pause: a busy machine, where that thread waits for a core).
    Three holds in a row, each after a transaction of more WAL than
    SETTLE_SLACK_BYTES: each leaves the restart point at the trail's end, never confirmed
    past the checkpoint, having logged exactly one snapshot, and the trail holds every
    transaction once."""
    from trailgate.capture.postgres.walstream import WalStream

    send = WalStream._send_status

    def late(self, pg, reply):
        if self._confirm > self._sent_confirm:
            time.sleep(0.1)
        send(self, pg, reply)

    monkeypatch.setattr(WalStream, "_send_status", late)
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    stop = home.dirchk / "STR.stop"
    logged = _count_snapshots(monkeypatch)  # the snapshots the holds logged
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, stop_file=str(stop),
                             flush_seconds=0.2)
    try:
        first = _commit(pg_db, 1)
        wait_for(lambda: _checkpoint_lsn(home) >= first, 30, "the first checkpoint")
        _commit(pg_db, 10)  # past the snapshot the first confirmation logged
        wait_for(lambda: _slot_lsns(pg_db)[0] >= first, 10, "the restart point to move")
        for hold in range(3):
            end = _commit(pg_db, 1000 * (hold + 1), rows=900)
            _rolled_back(pg_db)  # WAL past the trail's end: the snapshot lies beyond it
            wait_for(lambda end=end: _checkpoint_lsn(home) >= end, 10, "the checkpoint")
            stop.touch()
            wait_for(lambda: not _slot_active(pg_db), 30, "the slot to be let go", 0.02)
            restart, confirmed = _slot_lsns(pg_db)
            assert restart >= end and confirmed <= _checkpoint_lsn(home)
            assert len(logged) == hold + 1, f"hold {hold + 1} logged {logged}"
            stop.unlink()
            wait_for(lambda: _slot_active(pg_db), 30, "the stream opened again", 0.02)
        last = _commit(pg_db, 9000)
        wait_for(lambda: _checkpoint_lsn(home) >= last, 30, "the transaction after them")
    finally:
        streamer.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 900, 900, 900, 3]


def test_a_hold_whose_confirmations_do_not_reach_the_server_still_lets_go(
        pg_db, tmp_path, monkeypatch):
    """The settle's wait for the server to take a confirmation is bounded: with the
    stream's confirmations lost during a hold (here never handed to the stream), the hold
    lets go of the slot after at most SETTLE_CONFIRM_SECONDS a look, the slot confirmed
    no further than the checkpoint, and the release goes on with nothing lost or
    doubled."""
    from trailgate.capture.postgres.walstream import WalStream

    lost = threading.Event()
    confirm = WalStream.confirm

    def maybe(self, lsn):
        if not lost.is_set():
            confirm(self, lsn)

    monkeypatch.setattr(WalStream, "confirm", maybe)
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    stop = home.dirchk / "STR.stop"
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, stop_file=str(stop),
                             flush_seconds=0.2)
    try:
        first = _commit(pg_db, 1)
        wait_for(lambda: _confirmed(pg_db) >= first, 30, "the first confirmation")
        lost.set()
        end1 = _commit(pg_db, 10, rows=900)  # more WAL than SETTLE_SLACK_BYTES
        wait_for(lambda: _checkpoint_lsn(home) >= end1, 10, "the checkpoint")
        began = time.monotonic()
        stop.touch()
        wait_for(lambda: not _slot_active(pg_db), 30, "the slot to be let go", 0.02)
        waited = time.monotonic() - began
        assert waited < 2 * trail_streamer.SETTLE_CONFIRM_SECONDS + 3, waited
        restart, confirmed = _slot_lsns(pg_db)
        assert restart <= confirmed < end1 <= _checkpoint_lsn(home)
        lost.clear()
        stop.unlink()
        end2 = _commit(pg_db, 2000)
        wait_for(lambda: _checkpoint_lsn(home) >= end2, 30, "the transaction after it")
        wait_for(lambda: _confirmed(pg_db) >= end2, 10, "the slot confirmed again")
    finally:
        streamer.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 900, 3]


def _confirmed(pg_db) -> int:
    with connect(pg_db, autocommit=True) as conn:
        return int(conn.execute(
            "SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM pg_replication_slots "
            "WHERE slot_name = %s", (slot_name("STR"),)).fetchone()[0])


def _count_snapshots(monkeypatch) -> list[int]:
    """The running-transactions snapshots the streamer's settling logs from now on (the
    real method runs), in a list that grows as it logs them."""
    logged: list[int] = []
    real = StreamedSlot.snapshot_if_behind

    def counted(self, end, slack, **kwargs):
        lsn = real(self, end, slack, **kwargs)
        if lsn is not None:
            logged.append(lsn)
        return lsn

    monkeypatch.setattr(StreamedSlot, "snapshot_if_behind", counted)
    return logged


def _checkpoint_lsn(home) -> int:
    ck = home.checkpoints.load("STR", "EXTRACT")
    return int(ck.read_position.get("lsn", 0)) if ck is not None else 0


def test_flushsecs_makes_it_durable_checkpointed_and_confirmed_with_no_batch(pg_db,
                                                                             tmp_path):
    """FLUSHSECS: with no micro-batch asking, the streamer makes what it wrote durable,
    writes the group checkpoint (read position, write position, last CSN, counts once)
    and then confirms the slot, within about the period.  A new run replaying an older
    range (Spark's offset log behind all of that) appends nothing twice and does not move
    the checkpoint back."""
    home, source, start = _setup(pg_db, tmp_path)
    trail = home.dirdat / "aa"
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, flush_seconds=0.5)
    try:
        end1 = _commit(pg_db, 1)
        wait_for(lambda: _checkpoint_lsn(home) >= end1, 30, "the first checkpoint")
        end2 = _commit(pg_db, 10)
        began = time.monotonic()
        wait_for(lambda: _checkpoint_lsn(home) >= end2 and _confirmed(pg_db) > end1, 10,
                 "the second checkpoint and the slot's confirmation", 0.02)
        assert time.monotonic() - began < 6  # about the period, not a batch window (10 s)
        state = load_state(home.dirchk / "STR.trailstate")  # durable before checkpointed
        assert state is not None
        assert state.length == home.dirdat.joinpath("aa000000000").stat().st_size
        ck = home.checkpoints.load("STR", "EXTRACT")
        assert ck is not None and ck.write_position is not None
        assert ck.write_position.rba == state.length
        assert ck.last_csn == trail_transactions(trail)[-1][0]
        assert ck.stats["public.t"].inserts == 6  # each flush's counts once
        assert _confirmed(pg_db) <= _checkpoint_lsn(home)  # never past the checkpoint
        end3 = _commit(pg_db, 20)
        wait_for(lambda: streamer.written >= end3, 30, "the third transaction")
        msg = streamer.sync(end3)  # a micro-batch after the flushes: only what is left
        assert sum(n for kinds in msg.counts.values() for n in kinds.values()) <= 3
        assert _checkpoint_lsn(home) >= end3
        wait_for(lambda: _confirmed(pg_db) > end2, 10, "the slot past the second")
        assert streamer.flushes >= 3
    finally:
        streamer.close()
        slot.close()
    ck = home.checkpoints.load("STR", "EXTRACT")
    assert ck is not None and ck.stats["public.t"].inserts == 9
    ahead = _checkpoint_lsn(home)
    # a replay from the older start (a kill -9 with Spark's offset log behind): the slot
    # streams from its confirmed position, the trail skips what it holds
    slot = StreamedSlot(source)
    again = TrailStreamer(slot, _sink(home, "run-2"), start, flush_seconds=0.5)
    try:
        msg = again.sync(end1)
        assert msg.transactions == 0
        assert _checkpoint_lsn(home) == ahead  # not moved back
        end4 = _commit(pg_db, 30)
        wait_for(lambda: _checkpoint_lsn(home) >= end4, 10, "the new transaction")
    finally:
        again.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(trail)] == [3, 3, 3, 3]
    ck = home.checkpoints.load("STR", "EXTRACT")
    assert ck is not None and ck.stats["public.t"].inserts == 12


def test_a_slow_flush_does_not_hold_the_reads(pg_db, tmp_path, monkeypatch):
    """FLUSHSECS's fsyncs and checkpoint writes run beside the reads: while one is slow (a
    disk busy with others' writes; here its slow half held until released), transactions
    committed meanwhile still reach the trail, and nothing says they are durable — the
    checkpoint, the slot's confirmation — until the flush has ended."""
    release, started = threading.Event(), threading.Event()

    class SlowDisk(TrailAppender):
        def sync_later(self, source_position=None):
            finish = super().sync_later(source_position)

            def slow():
                if not release.is_set():
                    started.set()
                    release.wait(30)
                return finish()
            return slow

    monkeypatch.setattr(trail_streamer, "TrailAppender", SlowDisk)
    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, flush_seconds=0.2)
    try:
        end1 = _commit(pg_db, 1)
        wait_for(started.is_set, 10, "the first flush")
        confirmed = _confirmed(pg_db)
        end2 = _commit(pg_db, 10)
        wait_for(lambda: streamer.written >= end2, 10,
                 "the second transaction in the trail while the flush is held")
        assert _checkpoint_lsn(home) < end1 and _confirmed(pg_db) == confirmed
        synced: list[int] = []  # a micro-batch's sync answers only once it is durable

        def batch() -> None:
            streamer.sync(end2)
            synced.append(_checkpoint_lsn(home))

        waiting = threading.Thread(target=batch)
        waiting.start()
        time.sleep(0.3)
        assert not synced
        release.set()
        waiting.join(30)
        assert synced and synced[0] >= end2
        wait_for(lambda: _confirmed(pg_db) >= end2, 10,
                 "confirmed once checkpointed", 0.02)
        assert _confirmed(pg_db) <= _checkpoint_lsn(home)
    finally:
        release.set()
        streamer.close()
        slot.close()
    assert [len(t[2]) for t in trail_transactions(home.dirdat / "aa")] == [3, 3]


def test_a_failed_flush_stops_the_streamer_with_nothing_acknowledged(pg_db, tmp_path,
                                                                     monkeypatch):
    """A flush whose slow half fails (a disk's write error, injected after its fsync and
    state file) stops the streamer: the waiting sync raises it, the group checkpoint and
    the slot's confirmation stay where they were, and close reports nothing more."""
    class FailingDisk(TrailAppender):
        def sync_later(self, source_position=None):
            finish = super().sync_later(source_position)

            def fail():
                finish()
                raise OSError(errno.EIO, "Input/output error (injected)")
            return fail

    monkeypatch.setattr(trail_streamer, "TrailAppender", FailingDisk)
    home, source, start = _setup(pg_db, tmp_path)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, _sink(home, "run-1"), start, flush_seconds=None)
    try:
        before = _checkpoint_lsn(home), _confirmed(pg_db)
        end = _commit(pg_db, 1)
        with pytest.raises(OSError, match="injected"):
            streamer.sync(end)
        time.sleep(0.3)  # nothing goes out after the failure either
        assert (_checkpoint_lsn(home), _confirmed(pg_db)) == before
    finally:
        unreported = streamer.close()
        slot.close()
    assert unreported is None  # the sync reported it
