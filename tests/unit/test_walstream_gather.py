"""The stream reader's pause before a read (``walstream._gather``): the shortest after a full
chunk and for a trickle, longer the busier the stream, within its bounds, whether the server
keeps up or works through a backlog."""

from __future__ import annotations

from trailgate.capture.postgres import walstream
from trailgate.capture.postgres.walstream import MAX_GATHER_SECONDS, MIN_GATHER_SECONDS


def test_a_full_chunk_is_followed_by_the_shortest_pause() -> None:
    assert walstream._gather(walstream._DRAIN_MESSAGES, 0.001) == MIN_GATHER_SECONDS
    assert walstream._gather(walstream._DRAIN_MESSAGES, 1.0) == MIN_GATHER_SECONDS
    # a busy stream below a full chunk: the longest (fewer, bigger TCP segments)
    assert walstream._gather(2_000, 0.01) == MAX_GATHER_SECONDS


def test_a_trickle_is_read_after_the_shortest_pause() -> None:
    assert walstream._gather(3, 0.5) == MIN_GATHER_SECONDS
    assert walstream._gather(150, 0.01) == MIN_GATHER_SECONDS  # 15,000 a second
    assert walstream._gather(1, 0.0) == MAX_GATHER_SECONDS  # a burst seen as a rate


def test_the_pause_grows_with_the_rate_up_to_its_bound() -> None:
    rates = [5_000, 20_000, 40_000, 80_000, 200_000]  # messages a second
    pauses = [walstream._gather(int(r * 0.01), 0.01) for r in rates]
    assert pauses == sorted(pauses)
    assert pauses[0] == MIN_GATHER_SECONDS and pauses[-1] == MAX_GATHER_SECONDS
    assert MIN_GATHER_SECONDS < pauses[2] < MAX_GATHER_SECONDS
