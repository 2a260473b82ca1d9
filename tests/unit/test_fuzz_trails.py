"""Fuzzed trails of every format through every reader, on the C and the pure-Python codec:
trails written by trailgate (11.2 as seeds 001/002 describe, 12.1, 19.1 big-endian, 21.1)
with damage aimed at their records, and random bytes after a sound header or none.  Each
input goes through the reader's three layers, SCANFORHEADER's search, the Spark source's
boundary scan and splits, the Replicat's span reader, a Logdump session, ``trail export``
and ``trail dump`` (fuzz_worker.py): each works or raises trailgate's error naming file and
RBA, never another exception, a crash in C or a hang, and the C codec decides every input
as the pure-Python reference does (same records, same error at the same RBA).  The quick
cases run in the default suite; ``./dev test-heavy -k fuzz`` runs hundreds of examples."""

from __future__ import annotations

import pytest
from fuzz_support import (
    HEAVY,
    QUICK,
    TRAIL_FORMATS,
    apply_edits,
    edits,
    fuzz_settings,
    same_on_both_paths,
    trail_base,
)
from hypothesis import given
from hypothesis import strategies as st

from trailgate.trail.header import decode_file_header

PROFILES = [pytest.param(QUICK, id="quick"),
            pytest.param(HEAVY, id="heavy", marks=pytest.mark.heavy)]


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_damaged_trails(profile: dict) -> None:
    @fuzz_settings(profile)
    @given(st.sampled_from(TRAIL_FORMATS), st.integers(0, 1), edits(),
           st.integers(0, 1 << 16), st.integers(-4, 8))
    def check(fmt: tuple, which: int, changes: list, anchor: int, offset: int) -> None:
        base = trail_base(*fmt)
        files = list(base.files)
        files[which] = apply_edits(files[which], list(base.anchors[which]), changes)
        start = max(0, base.anchors[0][anchor % len(base.anchors[0])] + offset)
        same_on_both_paths("trail", {"files": files, "start": start})

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_random_bytes_as_trails(profile: dict) -> None:
    """After a sound file header (or instead of one): random bytes, and random runs of
    record-like bytes (G, H, Z sub-record types with random lengths)."""
    sub = st.tuples(st.sampled_from([b"G", b"H", b"D", b"T", b"Z", b"F", b"\x00"]),
                    st.binary(min_size=1, max_size=1), st.sampled_from(
                        [b"\x00\x00", b"\x00\x04", b"\x00\x2e", b"\xff\xff", b"\x01\x00"]),
                    st.binary(max_size=40)).map(b"".join)
    body = st.one_of(st.binary(max_size=2000), st.lists(sub, max_size=30).map(b"".join))

    @fuzz_settings(profile, scale=0.5)
    @given(st.sampled_from(TRAIL_FORMATS), st.booleans(), body)
    def check(fmt: tuple, keep_header: bool, blob: bytes) -> None:
        base = trail_base(*fmt)
        head = base.files[0][: decode_file_header(base.files[0]).length] if keep_header else b""
        same_on_both_paths("trail", {"files": [head + blob]})

    check()
