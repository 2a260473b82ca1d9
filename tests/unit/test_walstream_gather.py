"""The stream reader's pause before a read (``walstream._gather``): the shortest in the backlog
a stream opens on (a full chunk, or a server that has not caught up since the stream opened)
and for a trickle, longer the busier the stream, within its bounds; and the keepalives that
show the server caught up; ``EOFDELAYCSECS`` bounds the pause."""

from __future__ import annotations

from trailgate.capture.postgres import walstream
from trailgate.capture.postgres.walstream import MAX_GATHER_SECONDS, MIN_GATHER_SECONDS


def test_a_backlog_is_read_after_the_shortest_pause() -> None:
    assert walstream._gather(walstream._DRAIN_MESSAGES, 0.001, True) == MIN_GATHER_SECONDS
    # the server has not caught up since the stream opened: the backlog, read at once
    assert walstream._gather(2_000, 0.01, False) == MIN_GATHER_SECONDS
    assert walstream._gather(2_000, 0.01, True) == MAX_GATHER_SECONDS


def test_a_trickle_is_read_after_the_shortest_pause() -> None:
    assert walstream._gather(3, 0.5, True) == MIN_GATHER_SECONDS
    # 1,500 messages a second: 500 one-row transactions, or 1,250 rows a second in
    # transactions of ten
    assert walstream._gather(15, 0.01, True) == MIN_GATHER_SECONDS
    assert walstream._gather(1, 0.0, True) == MAX_GATHER_SECONDS  # a burst seen as a rate


def test_the_pause_grows_with_the_rate_up_to_its_bound() -> None:
    rates = [1_500, 4_500, 9_000, 40_000, 200_000]  # messages a second
    pauses = [walstream._gather(int(r * 0.01), 0.01, True) for r in rates]
    assert pauses == sorted(pauses)
    assert pauses[0] == MIN_GATHER_SECONDS and pauses[-1] == MAX_GATHER_SECONDS
    # 1,500 and 3,000 one-row transactions a second: many a read, within the bound
    assert MIN_GATHER_SECONDS < pauses[1] < pauses[2] < MAX_GATHER_SECONDS


def test_eofdelay_bounds_the_pause_but_never_below_the_shortest() -> None:
    busy = (2_000, 0.01, True)  # 200,000 messages a second
    assert walstream._gather(*busy, 0.005) == 0.005
    assert walstream._gather(*busy, 0.0) == MIN_GATHER_SECONDS
    assert walstream._gather(*busy, 1.0) > MAX_GATHER_SECONDS


def _chunk(kinds: str) -> list[tuple[int, bytes | None]]:
    """A read: ``m`` a message, ``k`` a keepalive."""
    return [(n, None if kind == "k" else b"I") for n, kind in enumerate(kinds)]


def test_a_keepalive_the_server_sent_while_waiting_shows_it_keeps_up() -> None:
    assert walstream._keeps_up(_chunk("mmmmk"), 0) == (True, 0)
    assert walstream._keeps_up(_chunk("mmkmm"), 0) == (True, 0)  # among the last four
    assert walstream._keeps_up(_chunk("kmmmmm"), 0) == (False, 0)  # busy since
    assert walstream._keeps_up(_chunk("mmmm"), 0) == (False, 0)


def test_a_keepalive_answering_the_reader_proves_nothing() -> None:
    # the server answers a request for a reply at once, however busy it is
    assert walstream._keeps_up(_chunk("mmmmk"), 1) == (False, 0)
    assert walstream._keeps_up(_chunk("mmkmk"), 1) == (True, 0)  # one answer, one its own
    assert walstream._keeps_up(_chunk("mmmmk"), 3) == (False, 2)  # two answers still due
    assert walstream._keeps_up(_chunk("mmmm"), 2) == (False, 2)
    assert walstream._keeps_up(_chunk("kmmmm"), 1) == (False, 0)  # the answer, then busy
    # answers are taken to be the last keepalives: the first may be the server's own
    assert walstream._keeps_up(_chunk("kmmmmk"), 1) == (False, 0)
    assert walstream._keeps_up(_chunk("mmkkm"), 1) == (True, 0)


def test_the_keepalive_a_stream_opens_with_is_not_counted() -> None:
    """It is neither an answer nor a sign of keeping up."""
    assert walstream._without_first_keepalive(_chunk("kk")) == (_chunk("kk")[1:], True)
    assert walstream._without_first_keepalive(_chunk("mk")) == (_chunk("mk"), False)


def test_only_a_keepalive_after_data_shows_the_server_caught_up() -> None:
    # the server sends one keepalive as the stream starts, before any data
    assert not walstream._data_before_keepalive(_chunk("kmmm"))
    assert not walstream._data_before_keepalive(_chunk("k"))
    assert not walstream._data_before_keepalive(_chunk("mmm"))
    assert walstream._data_before_keepalive(_chunk("kmmk"))
    assert walstream._data_before_keepalive(_chunk("mk"))


def _txns(per_txn: int, count: int) -> list[tuple[int, bytes | None]]:
    """``count`` transactions of ``per_txn`` messages each (Begin, rows, Commit)."""
    out: list[tuple[int, bytes | None]] = []
    for _ in range(count):
        out += [(0, b"B")] + [(0, b"I")] * (per_txn - 2) + [(0, b"C")]
    return out


def test_a_backlog_of_large_transactions_is_paced_and_one_of_small_ones_is_not() -> None:
    assert walstream._large_transactions(_txns(102, 10))  # 100-row transactions
    assert walstream._large_transactions(_txns(5_000, 1)[:300])  # inside a huge one
    assert not walstream._large_transactions(_txns(3, 300))  # one-row transactions
    assert not walstream._large_transactions(_txns(12, 40))  # ten-row transactions
    # the last messages decide: a backlog that turns to one-row transactions
    assert not walstream._large_transactions(_txns(102, 10) + _txns(3, 100))
