"""``TrailWatch``: a reader's wait ends when the trail's directory changes or on an
interrupt, else at its timeout; closed, it touches no descriptor again (a closed number may
already be another file's)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from trailgate.trail.watch import TrailWatch


def test_a_write_a_new_file_and_an_interrupt_each_end_a_wait(tmp_path: Path) -> None:
    watch = TrailWatch(tmp_path)
    try:
        assert watch.active  # Linux: inotify
        assert not watch.wait(0.05)  # nothing happened
        (tmp_path / "aa000000000").write_bytes(b"x")  # created and written
        assert watch.wait(5.0)
        assert not watch.wait(0.05)  # the events were drained
        with open(tmp_path / "aa000000000", "ab") as fh:  # grows
            timer = threading.Timer(0.2, lambda: (fh.write(b"y"), fh.flush()))
            timer.start()
            started = time.monotonic()
            assert watch.wait(5.0)
            assert time.monotonic() - started < 4.0
            timer.join()
        watch.interrupt()  # before the wait: not lost
        assert watch.wait(5.0)
    finally:
        watch.close()


def test_closed_it_writes_to_no_reused_descriptor(tmp_path: Path) -> None:
    watch = TrailWatch(tmp_path)
    watch.close()
    r, w = os.pipe()  # likely takes a number the watch had
    try:
        watch.interrupt()
        watch.close()  # a second close closes nothing
        os.set_blocking(r, False)
        try:
            data = os.read(r, 10)
        except BlockingIOError:
            data = b""
        assert data == b""
        os.write(w, b"ok")
        assert os.read(r, 10) == b"ok"  # still open
    finally:
        os.close(r)
        os.close(w)
