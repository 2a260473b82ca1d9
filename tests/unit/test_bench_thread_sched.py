"""The benchmarks' per-thread scheduling meter (``benchmarks/thread_sched.py``): a busy
thread's CPU and a sleeping thread's wakeups, from ``/proc``, under their own labels."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from thread_sched import ThreadMeter, ThreadRow, format_threads

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


def test_a_busy_thread_runs_and_a_sleeping_one_wakes() -> None:
    meter = ThreadMeter({})
    ready = threading.Barrier(3)
    go, measured = threading.Event(), threading.Event()  # a thread that ended is not counted
    done = threading.Semaphore(0)

    def busy() -> None:
        meter.add_own("busy")
        ready.wait()
        go.wait()
        end = time.thread_time() + 0.15
        while time.thread_time() < end:
            pass
        done.release()
        measured.wait()

    def sleeper() -> None:
        meter.add_own("sleeper")
        ready.wait()
        go.wait()
        for _ in range(60):
            time.sleep(0.001)
        done.release()
        measured.wait()

    threads = [threading.Thread(target=busy), threading.Thread(target=sleeper)]
    for t in threads:
        t.start()
    ready.wait()
    before = meter.sample()
    go.set()
    for _ in threads:
        done.acquire()
    rows, system = meter.used(before, meter.sample())
    measured.set()
    for t in threads:
        t.join()
    assert rows["busy"].run >= 0.12
    assert rows["sleeper"].voluntary >= 50  # each sleep is a wakeup
    assert rows["sleeper"].run * 3 < rows["busy"].run
    assert system[0] > 0  # the machine's context switches moved


def test_backends_are_shown_as_the_busiest_and_the_rest() -> None:
    rows = {label: ThreadRow(label, run, 0.0, vol, 0, 1)
            for label, run, vol in (("source backend 11", 0.5, 100),
                                    ("source backend 12", 2.0, 900),
                                    ("source backend 13", 0.1, 40),
                                    ("source walsender", 1.0, 500))}
    lines = format_threads("t", {"m": (rows, (100, 0, 0, 0))}, {"m": 1.0})
    text = "\n".join(lines)
    busiest = next(line for line in lines if line.startswith("source backend (busiest)"))
    assert busiest.split()[3] == "2.00"
    others = next(line for line in lines if line.startswith("source backends, the others"))
    assert others.split()[4] == "0.60"
    assert "source backend 12" not in text


def test_a_drivers_threads_that_end_between_samples_are_counted() -> None:
    """A driver's flush threads live for one flush each: their CPU shows as "ended threads"
    (the process's CPU less its live threads'), not lost between the samples."""
    import subprocess

    code = ("import sys, threading, time\n"
            "def burn():\n"
            "    end = time.thread_time() + 0.3\n"
            "    while time.thread_time() < end: pass\n"
            "sys.stdin.readline()\n"
            "t = threading.Thread(target=burn); t.start(); t.join()\n"
            "print('done', flush=True)\n"
            "sys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        meter = ThreadMeter({"grp": proc.pid})
        time.sleep(0.2)  # started
        tasks = Path(f"/proc/{proc.pid}/task")
        threads = len(list(tasks.iterdir()))
        before = meter.sample()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        # join() returns as the thread finishes, a moment before the kernel lets it go
        deadline = time.monotonic() + 10
        while len(list(tasks.iterdir())) > threads and time.monotonic() < deadline:
            time.sleep(0.01)
        rows, _ = meter.used(before, meter.sample())
    finally:
        proc.kill()
        proc.wait()
    ended = rows["grp driver: ended threads"].run
    assert 0.25 <= ended <= 0.45
    assert rows["grp driver: main thread"].run < 0.1
