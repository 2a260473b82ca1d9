"""Finding the libpq psycopg uses, for the stream reader's C drain (``stream_drain``)."""

from __future__ import annotations

import pytest

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres.stream_drain import drainer, libpq_path
from trailgate.trail._accel import load_optional

_LINE = "7f1c2a000000-7f1c2a040000 r-xp 00001000 08:01 1234 {}"


def test_one_libpq_is_found_and_two_are_refused() -> None:
    one = "/venv/psycopg_binary.libs/libpq-e9b5c9ac.so.5.18"
    maps = "\n".join([_LINE.format("/usr/lib/libc.so.6"), _LINE.format(one),
                      _LINE.format(one), "7f1c2a040000-7f1c2a050000 rw-p 00000000 00:00 0"])
    assert libpq_path(maps) == one
    assert libpq_path(maps + "\n" + _LINE.format("/usr/lib/x86_64-linux-gnu/libpq.so.5")) \
        is None
    assert libpq_path(_LINE.format("/usr/lib/libpqxx.a")) is None
    assert libpq_path("") is None


def test_the_drain_binds_in_this_process_when_c_is_built() -> None:
    import psycopg.pq  # noqa: F401  (loads libpq, as any stream does first)

    assert (drainer() is not None) == fastpath.available


def test_the_drain_refuses_bad_arguments_before_touching_libpq() -> None:
    import psycopg.pq  # noqa: F401

    if drainer() is None:
        pytest.skip("no C drain in this build")
    module = load_optional("trailgate.capture.postgres._pgfast")
    assert module is not None
    for short in ((1, [], 10, 0, 0), (1, [], 10, 0, 0, 3)):  # no socket, or no wait
        with pytest.raises(TypeError):
            module.drain(*short)
    for sock, wait_ns in ((3, -1), (3, 1_000_000_000), (2**40, 0)):
        with pytest.raises((ValueError, OverflowError)):
            module.drain(1, [], 10, 0, 0, sock, wait_ns)
    with pytest.raises(ValueError, match="null connection"):
        module.drain(0, [], 10, 0, 0, -1, 0)
    out: list[object] = []
    assert module.drain(1, out, 0, 5, 7, -1, 0) == (0, 0, 5, 7, 0) and out == []
