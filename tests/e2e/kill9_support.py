"""What the kill -9 tests share: a trail that grows as a live Extract's would, the kill
itself (marked in the group's log), and a wait that shows the group's report when it times
out."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from replicat_support import TABLES, Increments

from trailgate.trail import TrailWriter


class TrailFeeder(threading.Thread):
    """Appends increments transactions to the trail, as a live Extract would."""

    def __init__(self, trail: Path, work: Increments, limit: int = 60_000, per_tick: int = 3):
        # the limit is only a bound: the feeder writes until the test stops it, so a kill
        # "while applying" late in a long run still has a trail that grows (at ~30
        # transactions a second, 6,000 ran out before the eighth of nine kills)
        super().__init__(daemon=True)
        self.trail, self.work, self.limit, self.per_tick = trail, work, limit, per_tick
        self.stop = threading.Event()
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            writer = TrailWriter(self.trail, megabytes=1, fsync=False, producer="K9")
            while not self.stop.is_set() and self.written < self.limit:
                for txn in self.work.transactions(self.per_tick):
                    writer.write_transaction(txn, TABLES)
                    self.written += 1
                writer.flush()
                time.sleep(0.1)
            writer.close()
        except BaseException as exc:  # the test reports it
            self.error = exc

    def finish(self) -> None:
        """Stop feeding and wait for the writer to close; a failure of its own fails the
        test."""
        self.stop.set()
        self.join(timeout=60)
        assert self.error is None, self.error


def kill9(proc: subprocess.Popen, log: Path, what: str) -> None:  # type: ignore[type-arg]
    """kill -9 the group's own process (nothing else), and say so in its log."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with open(log, "a") as fh:
        fh.write(f"\n=== test: kill -9 {what} ===\n")


def wait_for(predicate: Callable[[], object], timeout: float, what: str, log: Path,
             interval: float = 0.2) -> None:
    """Wait until ``predicate()`` is true; on timeout fail with the end of ``log``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            text = log.read_text()[-3000:] if log.exists() else ""
            raise AssertionError(f"timed out waiting for {what}\n{text}")
        time.sleep(interval)
