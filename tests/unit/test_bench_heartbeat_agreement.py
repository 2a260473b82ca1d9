"""The apply benchmark's check that heartbeat lag agrees with the lag it measures
(``benchmarks/apply_pg.py``, issue 21): the tolerance is the band a median of n samples
falls in 95% of the time, and a heartbeat is compared with the transactions committed
next to it."""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from apply_pg import AGREE_SLACK, heartbeat_pairs, median_band


def _lags(rng: random.Random, n: int) -> list[float]:
    """A loaded machine's lags: mostly tens of milliseconds, now and then a stall."""
    return [rng.lognormvariate(-3.5, 0.6) + (rng.uniform(0.5, 5.0) if rng.random() < 0.05
                                             else 0.0) for _ in range(n)]


def test_the_band_holds_the_median_of_n_heartbeats_about_95_percent_of_the_time() -> None:
    rng = random.Random(3)
    txns = _lags(rng, 1000)
    for n in (10, 22, 60):
        low, high = median_band(txns, n)
        inside = 0
        for _ in range(1000):  # heartbeats: n draws from the same lags
            beats = sorted(rng.choice(txns) for _ in range(n))
            median = beats[n // 2] if n % 2 else (beats[n // 2 - 1] + beats[n // 2]) / 2
            inside += low <= median <= high
        assert 920 <= inside <= 990, (n, inside)  # about 95%
        # heartbeats that wait a fixed 60 ms more than the data fall outside it, slack too
        slow = sorted(x + 0.06 for x in rng.sample(txns, n))
        assert not low - AGREE_SLACK <= slow[n // 2] <= high + AGREE_SLACK


def test_a_heartbeat_is_paired_with_the_transactions_committed_next_to_it() -> None:
    t0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    txns = [(t0 + timedelta(milliseconds=20 * i), 0.030 + 0.001 * (i % 3)) for i in range(100)]
    beats = [(t0 + timedelta(milliseconds=500), 0.025, 0.040),  # GG_LAG, at the commit
             (t0 + timedelta(seconds=30), 0.5, 0.5)]  # no transaction near it: left out
    assert heartbeat_pairs(beats, txns) == [0.040 - 0.031]
