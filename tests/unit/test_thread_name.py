"""A thread's name as the kernel shows it (``/proc/self/task/<tid>/comm``)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from trailgate.thread_name import name_native_thread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")


def _comm_of_a_thread_that_names_itself(name: str) -> str:
    seen: list[str] = []

    def run() -> None:
        name_native_thread(name)
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text())

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return seen[0].rstrip("\n")


def test_a_thread_names_itself_for_the_kernel_and_only_itself() -> None:
    main = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text()
    assert _comm_of_a_thread_that_names_itself("trail streamer") == "trail streamer"
    assert Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text() == main


def test_a_long_name_keeps_its_first_15_bytes() -> None:
    assert _comm_of_a_thread_that_names_itself("apply checkpoint writer") == "apply checkpoin"
