"""A slot streamed over the replication protocol (``WalStream``), against a real server: the
same messages as the SQL peek, bounded by ``end`` between transactions, confirmations that
move the slot, bounded read-ahead, and clear errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from trailgate.capture.postgres import fastpath, walstream
from trailgate.capture.postgres.capture import PgCapture
from trailgate.capture.postgres.slots import add_extract
from trailgate.capture.postgres.trandata import add_trandata
from trailgate.capture.postgres.walstream import WalStream
from trailgate.db.connect import connect
from trailgate.errors import SourceError

pytestmark = pytest.mark.postgres


@pytest.fixture
def src(pg_db: str) -> Iterator[psycopg.Connection[Any]]:
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE public.t (id int PRIMARY KEY, v text)")
        add_trandata(conn, "public.t")
        yield conn


def _lsn(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8").fetchone()
    assert row is not None
    return int(row[0])


def _slot(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    source = add_extract(conn, conn.info.dbname.split("_")[0])
    return source.slot, source.publication


def _peek(conn: psycopg.Connection[Any], slot: str, pub: str, upto: int
          ) -> list[tuple[int, bytes]]:
    rows = conn.execute(
        "SELECT (lsn - '0/0'::pg_lsn)::int8, data FROM pg_logical_slot_peek_binary_changes("
        "%s, NULL, NULL, 'proto_version', '1', 'publication_names', %s, 'messages', 'true')",
        (slot, f'"{pub}"')).fetchall()
    return [(int(lsn), bytes(data)) for lsn, data in rows]


def _commits(messages: list[tuple[int, bytes]]) -> list[int]:
    return [int.from_bytes(d[2:10], "big") for _, d in messages if d[:1] == b"C"]


def _insert_late(conninfo: str) -> None:
    """A row committed half a second from now (on a thread: a read waits for it)."""
    time.sleep(0.5)
    with connect(conninfo) as conn:
        conn.execute("INSERT INTO t VALUES (1, 'late')")


def _confirmed(conn: psycopg.Connection[Any], slot: str) -> int:
    row = conn.execute("SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM "
                       "pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("fast_drain", [True, False], ids=["C drain", "Python reader"])
def test_same_messages_as_peek_split_between_transactions(src, pg_db, fast_drain) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    for n in range(6):
        with src.transaction():
            src.execute("INSERT INTO t SELECT g, 'v' FROM generate_series(%s::int, %s::int) g",
                        (n * 100, n * 100 + 99))
    src.execute("UPDATE t SET v = 'w' WHERE id % 7 = 0")
    src.execute("DELETE FROM t WHERE id % 5 = 0")
    end = _lsn(src)
    peeked = _peek(src, slot, pub, end)
    commits = _commits(peeked)
    assert len(commits) == 8
    middle = commits[3]  # a batch boundary right at a commit: that one goes to the second
    with WalStream(pg_db, slot, pub, start, fast_drain=fast_drain) as stream:
        assert (stream._fast_drain is not None) == (fast_drain and fastpath.available)
        first = list(stream.messages(middle))
        assert stream.position == middle
        second = list(stream.messages(end))
        assert stream.position == end
        assert list(stream.messages(end)) == []
    assert _commits(first) == commits[:3]
    assert _commits(second) == commits[3:]
    # the same bytes; only a Relation message's LSN differs (the walsender sends 0)
    got = first + second
    assert [d for _, d in got] == [d for _, d in peeked]
    assert [lsn for lsn, d in got if d[:1] != b"R"] == \
        [lsn for lsn, d in peeked if d[:1] != b"R"]


@pytest.mark.parametrize("fast_drain", [True, False], ids=["C drain", "Python reader"])
def test_over_a_unix_socket_a_backlog_that_fills_it_many_times_comes_whole(
        src, pg_db, pg_cluster, fast_drain) -> None:
    """A Unix socket holds a few hundred messages: the reader reads on past each fill (the C
    drain without the GIL) and hands out exactly what the server sent."""
    slot, pub = _slot(src)
    start = _lsn(src)
    src.execute("DO $$ BEGIN FOR i IN 1 .. 3000 LOOP "
                "INSERT INTO t VALUES (i, repeat('x', i % 50)); COMMIT; END LOOP; END $$")
    src.execute("UPDATE t SET v = 'w' WHERE id % 3 = 0")
    end = _lsn(src)
    peeked = _peek(src, slot, pub, end)
    socket_db = pg_cluster.conninfo(src.info.dbname, via_socket=True)
    with WalStream(socket_db, slot, pub, start, fast_drain=fast_drain) as stream:
        assert stream._unix
        got = list(stream.messages(end))
    assert len(_commits(got)) == 3001
    assert [d for _, d in got] == [d for _, d in peeked]


def test_waits_for_the_server_then_stops_at_an_idle_end(src, pg_db) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    with WalStream(pg_db, slot, pub, start) as stream:
        # nothing committed: the end is reached through the server's keepalive
        idle_end = _lsn(src)
        t0 = time.monotonic()
        assert list(stream.messages(idle_end)) == []
        assert time.monotonic() - t0 < 5
        # an end past the server's WAL: the call waits until the server has read that far,
        # which the insert committed meanwhile makes happen; that insert commits after the
        # end, so it is left for the next call
        beyond = _lsn(src) + 1
        writer = threading.Thread(target=_insert_late, args=(pg_db,))
        writer.start()
        try:
            first = list(stream.messages(beyond))
        finally:
            writer.join()
        assert all(commit < beyond for commit in _commits(first))
        assert stream.position == beyond
        got = first + list(stream.messages(_lsn(src)))
        assert [d[:1] for _, d in got if d[:1] in b"BRIC"] == [b"B", b"R", b"I", b"C"]


def test_a_consumer_waiting_for_the_server_asks_it_at_a_steady_pace(src, pg_db) -> None:
    # the server answers each ask at once; asking again on every answer was a busy
    # exchange of thousands of messages a second for as long as the server was behind
    slot, pub = _slot(src)
    with WalStream(pg_db, slot, pub, _lsn(src)) as stream:
        beyond = _lsn(src) + 1
        writer = threading.Thread(target=_insert_late, args=(pg_db,))
        before = stream.status_updates
        writer.start()
        try:
            list(stream.messages(beyond))
        finally:
            writer.join()
        assert stream.position == beyond
        assert stream.status_updates - before <= 0.5 / 0.02 + 15
        # each ask's answer is read as one, not as the server keeping up with the WAL
        deadline = time.monotonic() + 10
        while stream._unanswered and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stream._unanswered == 0


def test_confirm_moves_the_slot_and_a_new_stream_starts_there(src, pg_db) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    src.execute("INSERT INTO t VALUES (1, 'a')")
    middle = _lsn(src)
    src.execute("INSERT INTO t VALUES (2, 'b')")
    end = _lsn(src)
    with WalStream(pg_db, slot, pub, start) as stream:
        assert len(_commits(list(stream.messages(middle)))) == 1
        assert _confirmed(src, slot) < middle
        stream.confirm(middle)
        deadline = time.monotonic() + 10
        while _confirmed(src, slot) < middle:
            assert time.monotonic() < deadline, "the slot did not move"
            time.sleep(0.05)
    assert _confirmed(src, slot) == middle
    # a new stream asked to start earlier starts at the confirmed position
    with WalStream(pg_db, slot, pub, start) as stream:
        got = list(stream.messages(end))
    rows = [d for _, d in got if d[:1] == b"I"]
    assert len(rows) == 1 and b"b" in rows[0]


def test_a_busy_live_stream_is_read_in_few_gulps_and_loses_nothing(src, pg_db,
                                                                   monkeypatch) -> None:
    # every caught-up stream counts as busy here: each read pauses EOFDELAY's 50 ms first
    monkeypatch.setattr(walstream, "GATHER_FROM_RATE", 0)
    monkeypatch.setattr(walstream, "GATHER_PER_RATE", 1.0)
    slot, pub = _slot(src)
    start = _lsn(src)
    with WalStream(pg_db, slot, pub, start, max_gather=0.05) as stream:
        src.execute("INSERT INTO t VALUES (0, 'first')")
        first = _lsn(src)
        assert len(_commits(list(stream.messages(first)))) == 1
        time.sleep(0.2)  # the server's keepalive after it: the stream has caught up
        chunks = stream.chunks
        # 300 one-row transactions, live, at most a thousand a second
        src.execute("DO $$ BEGIN FOR i IN 1 .. 300 LOOP "
                    "INSERT INTO t VALUES (i, 'live'); COMMIT; PERFORM pg_sleep(0.001); "
                    "END LOOP; END $$")
        end = _lsn(src)
        got = list(stream.messages(end))
        chunks = stream.chunks - chunks
    assert len(_commits(got)) == 300 and len(got) == 900  # Begin, Insert, Commit each
    assert [d for _, d in got] == [d for _, d in _peek(src, slot, pub, end)][-900:]
    # read at 2 ms, each transaction a millisecond apart came alone or in twos and threes
    assert chunks < 300 / 4


def _record_pacing(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """For each chunk the reader reads while the server is still behind: whether the chunk
    holds large transactions, and whether the loop paced it (what it passed ``_gather``).

    The loop asks ``_keeps_up`` only until the server has caught up, and a "no" leaves it
    behind: such a chunk's pace is the rule's alone.  The chunk asked about lacks the
    keepalive the stream opens with, if it is the first; large without it, it is large with
    it (the loop's test), so a large chunk here is one the loop must pace over TCP."""
    seen: list[tuple[bool, bool]] = []
    behind: list[bool] = []  # the chunk at hand, between the loop's two calls
    keeps_up, gather = walstream._keeps_up, walstream._gather

    def spy_keeps_up(chunk: list[tuple[int, bytes | None]], unanswered: int
                     ) -> tuple[bool, int]:
        result = keeps_up(chunk, unanswered)
        if not result[0]:
            behind.append(walstream._large_transactions(chunk))
        return result

    def spy_gather(messages: int, seconds: float, paced: bool,
                   longest: float = walstream.MAX_GATHER_SECONDS) -> float:
        if behind:
            seen.append((behind.pop(), paced))
        return gather(messages, seconds, paced, longest)

    monkeypatch.setattr(walstream, "_keeps_up", spy_keeps_up)
    monkeypatch.setattr(walstream, "_gather", spy_gather)
    return seen


@pytest.mark.parametrize(("rows", "count", "via_socket"), [
    (100, 150, False), (1, 3000, False), (100, 150, True)],
    ids=["100-row transactions", "one-row transactions", "100-row over a Unix socket"])
def test_a_backlog_of_large_transactions_is_paced_over_tcp(src, pg_db, pg_cluster, monkeypatch,
                                                           rows, count, via_socket) -> None:
    """Before the server has caught up, the reader paces each chunk of large transactions by
    its rate as it does a live stream's; chunks of one-row transactions, and any on a Unix
    socket, keep the shortest pause.  Seen in what the loop passes ``_gather``, not timed."""
    slot, pub = _slot(src)
    start = _lsn(src)
    # a backlog of some MB (100-row) or one (one-row): many reads either way
    src.execute(f"DO $$ BEGIN FOR n IN 0 .. {count - 1} LOOP "
                f"INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(n * {rows}, "
                f"n * {rows} + {rows - 1}) g; COMMIT; END LOOP; END $$")
    end = _lsn(src)
    peeked = _peek(src, slot, pub, end)
    seen = _record_pacing(monkeypatch)
    conninfo = pg_cluster.conninfo(src.info.dbname, via_socket=via_socket)
    with WalStream(conninfo, slot, pub, start) as stream:
        assert stream._unix == via_socket
        got = list(stream.messages(end))
    assert len(_commits(got)) == count
    assert [d for _, d in got] == [d for _, d in peeked]
    large = [paced for is_large, paced in seen if is_large]
    if rows == 1:  # read in chunks before the server caught up, none of large transactions
        assert seen and not large
        assert not any(paced for _, paced in seen)
    elif via_socket:
        assert large
        assert not any(paced for _, paced in seen)
    else:
        assert large and all(large)


def test_read_ahead_is_bounded_and_loses_nothing(src, pg_db) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    for n in range(40):
        src.execute("INSERT INTO t SELECT g, repeat('x', 200) "
                    "FROM generate_series(%s::int, %s::int) g", (n * 500, n * 500 + 499))
    end = _lsn(src)
    limit = 256 << 10
    with WalStream(pg_db, slot, pub, start, buffer_bytes=limit) as stream:
        time.sleep(1.0)  # the reader fills its buffer and stops
        assert stream._buffered < limit + 5000 * 400
        peak = 0
        inserts = 0
        for _, data in stream.messages(end):
            peak = max(peak, stream._buffered)
            inserts += data[:1] == b"I"
    assert inserts == 20_000
    assert peak < limit + 5000 * 400  # at most one drained chunk past the limit


def test_pgcapture_reads_and_acknowledges_through_a_stream(src, pg_db, tmp_path) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    src.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    src.execute("UPDATE t SET v = 'c' WHERE id = 2")
    end = _lsn(src)
    with WalStream(pg_db, slot, pub, start) as stream:
        cap = PgCapture(pg_db, slot, pub, spill_dir=tmp_path, stream=stream)
        try:
            txns = []
            for t in cap.read(start_after_lsn=start - 1, upto_lsn=end):
                txns.append([(c.op.name, c.after) for c in t.transaction.changes])
            assert [len(t) for t in txns] == [2, 1]
            assert txns[1][0][1] == {0: b"2", 1: b"c"}
            cap.acknowledge(end)
            deadline = time.monotonic() + 10
            while _confirmed(src, slot) < end:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            cap.close()


def test_a_missing_slot_and_a_busy_slot(src, pg_db) -> None:
    slot, pub = _slot(src)
    with pytest.raises(SourceError, match=r"does not exist.*ADD EXTRACT"):
        WalStream(pg_db, "no_such_slot", pub, 0)
    start = _lsn(src)
    src.execute("INSERT INTO t VALUES (1, 'a')")
    end = _lsn(src)
    with WalStream(pg_db, slot, pub, start) as stream:
        t0 = time.monotonic()
        with pytest.raises(SourceError, match="in use by another process"):
            WalStream(pg_db, slot, pub, start, slot_wait=1.0)
        assert time.monotonic() - t0 < 10
        assert len(_commits(list(stream.messages(end)))) == 1


@pytest.mark.parametrize("fast_drain", [True, False], ids=["C drain", "Python reader"])
@pytest.mark.parametrize("via_socket", [False, True], ids=["TCP", "Unix socket"])
def test_a_dropped_connection_is_an_error_not_a_hang(src, pg_db, pg_cluster, fast_drain,
                                                     via_socket) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    conninfo = pg_cluster.conninfo(src.info.dbname, via_socket=via_socket)
    with WalStream(conninfo, slot, pub, start, fast_drain=fast_drain) as stream:
        src.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                    "WHERE slot_name = %s", (slot,))
        src.execute("INSERT INTO t VALUES (1, 'a')")
        t0 = time.monotonic()
        with pytest.raises(SourceError, match=r"lost the replication connection|terminat"):
            list(stream.messages(_lsn(src)))
        assert time.monotonic() - t0 < 10


def test_a_consumer_that_stops_inside_a_transaction_spoils_the_stream(src, pg_db) -> None:
    slot, pub = _slot(src)
    start = _lsn(src)
    src.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    end = _lsn(src)
    with WalStream(pg_db, slot, pub, start) as stream:
        messages = stream.messages(end)
        next(messages)  # Begin
        messages.close()
        with pytest.raises(RuntimeError, match="inside a transaction"):
            list(stream.messages(end))
