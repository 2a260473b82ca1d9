"""``BatchWindow``: when a source lets the next micro-batch start (a fake clock: each sleep
moves it, and the source's position is a function of the time)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from trailgate.spark.batch_window import BatchWindow, window_ms


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps = 0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1
        self.pauses.append(round(seconds, 3))


def window(clock: Clock, seconds: float = 0.5) -> BatchWindow[int]:
    return BatchWindow(seconds, poll=0.02, poll_max=0.2, quiet=0.03, idle=0.5, clock=clock,
                       sleep=clock.sleep)


def source(clock: Clock, rate: float, until: float, start: float = 100.0,
           full_at: int | None = None) -> Callable[[], tuple[int, bool]]:
    """Positions growing by ``rate`` per second from ``start`` to ``until``."""
    def probe() -> tuple[int, bool]:
        pos = int(max(0.0, min(clock.now, until) - start) * rate)
        if full_at is not None and pos >= full_at:
            return full_at, True
        return pos, False
    return probe


def never() -> bool:
    return False


def test_idle_source_waits_a_little_then_starts_no_batch() -> None:
    clock = Clock()
    w = window(clock)
    assert w.settle(0, lambda: (0, False), never) == 0
    assert 0.5 <= clock.now - 100.0 < 0.55


def test_an_idle_group_returns_to_spark_rarely_but_still_looks_often() -> None:
    """Issue 21's idle CPU: each return with nothing new costs Spark a turn of its loop in
    the JVM, and the next call follows at once; by default a call now waits 5 s (it was
    0.5 s), looking every 0.2 s at most, and new data or a stop ends it at the next look."""
    clock = Clock()
    w: BatchWindow[int] = BatchWindow(0.5, clock=clock, sleep=clock.sleep)
    assert w.settle(0, lambda: (0, False), never) == 0
    assert clock.now - 100.0 >= 5.0
    assert max(clock.pauses) <= 0.2
    start = clock.now
    assert w.settle(0, source(clock, 1000, until=start + 10, start=start + 1.0), never) > 0
    assert clock.now - start < 1.0 + 0.2 + 0.5 + 0.05  # the first look after it, a window
    start = clock.now
    assert w.settle(10**9, lambda: (0, False), lambda: clock.now > start + 1.0) == 10**9
    assert clock.now - start <= 1.0 + 0.2 + 1e-9


def test_the_first_change_after_a_pause_starts_a_batch_at_once() -> None:
    clock = Clock()
    w = window(clock)
    assert w.settle(0, lambda: (7, False), never) == 7
    assert clock.now == 100.0


def test_a_burst_starts_its_batch_once_the_source_is_quiet() -> None:
    """A batch has just started; a burst ending 0.12 s later starts the next one about
    one quiet period after it ends, with everything the burst wrote — not at the end of
    the window."""
    clock = Clock()
    w = window(clock)
    w.settle(-1, lambda: (0, False), never)  # the last batch started at 100.0
    end = w.settle(0, source(clock, 1000, until=100.12), never)
    assert end == 120
    assert 100.12 <= clock.now < 100.12 + 0.07


def test_steady_load_gives_one_batch_per_window() -> None:
    clock = Clock()
    w = window(clock)
    probe = source(clock, 1000, until=1e9)
    starts, ends, begin = [], [], 0
    for _ in range(5):
        begin = w.settle(begin, probe, never)
        starts.append(clock.now)
        ends.append(begin)
        clock.now += 0.1  # the batch's own work
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(0.5 <= g < 0.56 for g in gaps), gaps
    assert ends == sorted(ends) and len(set(ends)) == 5


def test_new_data_after_a_long_pause_starts_at_once_when_quiet() -> None:
    clock = Clock()
    w = window(clock)
    w.settle(0, source(clock, 1000, until=100.05), never)  # a first batch
    clock.now = 200.0
    probe = source(clock, 1000, until=1e9, start=199.0)  # a backlog, nothing arriving now
    frozen = probe()
    assert w.settle(10, lambda: frozen, never) == frozen[0]
    assert clock.now - 200.0 < 0.001  # the window has long passed: no wait at all


def test_a_full_batch_starts_at_once() -> None:
    clock = Clock()
    w = window(clock)
    w.settle(0, source(clock, 1000, until=100.01), never)
    t0 = clock.now
    assert w.settle(10, source(clock, 10**6, until=1e9, full_at=5000), never) == 5000
    assert clock.now - t0 < 0.04


def test_a_stop_ends_the_wait_without_a_batch() -> None:
    clock = Clock()
    w = window(clock)
    w.settle(-1, lambda: (0, False), never)  # the last batch started at 100.0
    stop_at = 100.1
    assert w.settle(0, source(clock, 1000, until=1e9), lambda: clock.now >= stop_at) == 0
    assert clock.now < stop_at + 0.05
    clock.now = 300.0
    assert w.settle(0, lambda: (0, False), lambda: True) == 0
    assert clock.sleeps < 10 ** 3


def test_window_ms_is_the_option_value() -> None:
    assert window_ms(0.5) == "500" and window_ms(0) == "0" and window_ms(1.2345) == "1234"


def test_an_idle_source_is_looked_at_less_and_less_often_until_something_arrives() -> None:
    clock = Clock()
    w = window(clock)
    w.settle(0, lambda: (0, False), never)
    w.settle(0, lambda: (0, False), never)
    assert clock.pauses[:6] == [0.02, 0.04, 0.08, 0.16, 0.2, 0.2]
    assert set(clock.pauses[6:]) == {0.2}  # the next call goes on where this one stopped
    arrival = clock.now + 0.1
    clock.pauses.clear()
    assert w.settle(0, lambda: (1, False) if clock.now >= arrival else (0, False),
                    never) == 1
    assert clock.now - arrival < 0.2 + 1e-9  # found within one (longest) pause
    clock.pauses.clear()
    w.settle(1, lambda: (1, False), never)
    assert clock.pauses[0] == 0.02  # after new data, quick looks again


# -- a patient window (the Extract writing the trail as transactions arrive) ---------------

def patient(clock: Clock, seconds: float = 1.0, eager: int = 0) -> BatchWindow[int]:
    return BatchWindow(seconds, poll=0.02, poll_max=0.2, quiet=0.03, idle=0.5, patient=True,
                       eager=eager, clock=clock, sleep=clock.sleep)


def test_a_patient_window_waits_a_window_after_a_pause() -> None:
    """A burst after a pause is one batch a window after its first change was seen, with
    all of the burst; it was a batch at its first change and another a window later."""
    clock = Clock()
    w = patient(clock, eager=1)
    assert w.settle(0, lambda: (7, False), never) == 7  # the eager one, at once
    clock.now += 30.0  # a pause
    burst = source(clock, 1000, start=clock.now, until=clock.now + 0.6)
    clock.now += 0.01
    assert w.settle(7, burst, never) >= 599  # all of the burst (600, to rounding)
    assert 131.01 <= clock.now < 131.01 + 0.21


def test_a_patient_windows_first_batches_start_at_once_under_a_steady_load() -> None:
    """The threads of a patient group begin with its first batches (the Extract's trail
    streamer with the second): they do not wait a long window under a steady load."""
    clock = Clock()
    w = patient(clock, 10.0, eager=2)
    probe = source(clock, 1000, until=1e9)
    clock.now += 0.01
    first = w.settle(0, probe, never)
    assert first == 10 and clock.now == pytest.approx(100.01)
    clock.now += 0.5  # the first batch (a Spark task)
    second = w.settle(first, probe, never)
    assert second > first and clock.now == pytest.approx(100.51)  # not a window later
    w.settle(second, probe, never)  # then one per window
    assert clock.now >= 100.51 + 10.0


def test_a_patient_window_lets_the_window_pass_instead_of_starting_on_quiet() -> None:
    """A burst ending 0.12 s after the last batch started: a plain window starts the next
    batch about 0.15 s in; a patient one when the window has passed, with all of it."""
    clock = Clock()
    w = patient(clock, eager=1)
    w.settle(-1, lambda: (0, False), never)  # the last batch started at 100.0
    assert w.settle(0, source(clock, 1000, until=100.12), never) == 120
    assert 101.02 <= clock.now < 101.02 + 1e-6  # a window from the first change seen


def test_small_steps_with_quiet_between_give_one_batch_per_patient_window() -> None:
    """WAL moving in small steps (autovacuum): a plain window started a batch after each
    step's quiet; a patient one starts one per window."""
    def steps() -> tuple[int, bool]:
        return int((clock.now - 100.0) / 0.1) + 1, False  # a step every 100 ms

    counts = []
    for make in (window, patient):
        clock = Clock()
        w = make(clock, 1.0)
        begin, starts = 0, 0
        while clock.now < 105.0:
            end = w.settle(begin, steps, never)
            if end > begin:
                starts += 1
                begin = end
                clock.now += 0.05  # the batch's own work
        counts.append(starts)
    plain, patient_starts = counts
    assert plain >= 25, plain
    assert patient_starts <= 6, patient_starts


def test_a_patient_window_starts_at_once_at_a_batch_bound_and_stops_on_request() -> None:
    clock = Clock()
    w = patient(clock, eager=1)
    w.settle(-1, lambda: (0, False), never)  # the last batch started at 100.0
    assert w.settle(0, source(clock, 10**5, until=1e9, full_at=5000), never) == 5000
    assert clock.now - 100.0 < 0.25  # seen at the next look (every 0.2 s at the most)
    t0 = clock.now
    assert w.settle(5000, source(clock, 1000, until=1e9),
                    lambda: clock.now >= t0 + 0.3) == 5000
    assert clock.now < t0 + 0.3 + 0.21


def test_the_trail_sources_take_a_patient_window_option(tmp_path: Path) -> None:
    from trailgate.spark.batch_window import PATIENT_OPTION, WINDOW_OPTION
    from trailgate.spark.trail_options import parse_options
    from trailgate.spark.trail_source import TrailStreamReader

    base = {"path": str(tmp_path / "rt"), WINDOW_OPTION: "1000"}
    plain = TrailStreamReader(parse_options(base, streaming=True))
    patient = TrailStreamReader(parse_options({**base, PATIENT_OPTION: "true"},
                                              streaming=True))
    assert plain._window is not None and not plain._window.patient
    assert patient._window is not None and patient._window.patient
    with pytest.raises(ValueError, match="batchWindowPatient"):
        parse_options({**base, PATIENT_OPTION: "maybe"}, streaming=True)
