"""The Manager's HTTP service idles quietly: uvicorn's housekeeping loop woke its thread
ten times a second; the Manager's looks once a second, and a stop still ends it."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any

from trailgate.manager.server import HttpService, bind


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _wakeups(thread_id: int | None) -> int:
    for line in Path(f"/proc/self/task/{thread_id}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_an_idle_http_service_wakes_about_once_a_second() -> None:
    sock = bind("127.0.0.1", 0, "test")
    port = sock.getsockname()[1]
    http = HttpService(_app, sock)
    http.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    assert r.read() == b"ok"
                    assert r.headers["date"]  # the housekeeping keeps the Date header
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP service did not answer"
                time.sleep(0.1)
        time.sleep(0.5)
        before = _wakeups(http.thread.native_id)
        time.sleep(2.0)
        assert _wakeups(http.thread.native_id) - before <= 6  # uvicorn's own: about 20
    finally:
        started = time.monotonic()
        http.stop()
        assert not http.alive
        assert time.monotonic() - started < 5
