"""Fuzzing the reader with mutated trails yields only TrailFormatError: never another
exception, a hang or a memory blow-up."""

from __future__ import annotations

import contextlib
import random
import resource
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trailgate.errors import TrailFormatError
from trailgate.model import Change, OpType, Transaction
from trailgate.sample import COURSE, STUDENT, seed_transactions
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.header import decode_file_header

_BASE: bytes | None = None


def _base_trail() -> bytes:
    global _BASE
    if _BASE is None:
        with tempfile.TemporaryDirectory() as tmp:
            tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
            with TrailWriter(f"{tmp}/aa", fsync=False) as w:
                for txn in seed_transactions():
                    w.write_transaction(txn, tables)
                big = Change(OpType.INSERT, "US03.STUDENT",
                             after={0: b"1", 1: b"v" * 70_000, 2: None},
                             tokens={"HOST": "db1", "GROUP": "EXT1"})
                w.write_transaction(Transaction("9.1.1", 99, [big] * 2), tables)
            _BASE = (Path(tmp) / "aa000000000").read_bytes()
    return _BASE


def _read_everything(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "aa000000000"
        path.write_bytes(data)
        reader = TrailReader(Path(tmp) / "aa")
        for _ in reader.transactions():
            pass
        reader = TrailReader(Path(tmp) / "aa")
        for _ in reader.raw_records():
            pass


mutations = st.lists(
    st.tuples(st.integers(0, 10**9), st.integers(0, 255), st.sampled_from(["set", "del", "ins"])),
    min_size=1, max_size=8,
)


def mutate(base: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    """``base`` with each (where, byte, set|del|ins) edit applied."""
    data = bytearray(base)
    for where, byte, how in edits:
        at = where % (len(data) + 1)
        if how == "set" and at < len(data):
            data[at] = byte
        elif how == "del" and at < len(data):
            del data[at]
        else:
            data[at:at] = bytes((byte,))
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_mutated_trails_raise_only_trail_format_error(edits):
    data = mutate(_base_trail(), edits)
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with contextlib.suppress(TrailFormatError):
        _read_everything(data)
    assert time.monotonic() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_truncations_at_every_length_are_clean():
    data = _base_trail()
    rng = random.Random(7)
    for cut in [*sorted(rng.sample(range(len(data)), 300)), 0, 1, 3, 8]:
        with contextlib.suppress(TrailFormatError):
            _read_everything(data[:cut])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_random_header_bytes(blob):
    with contextlib.suppress(ValueError):
        decode_file_header(b"F\x00" + blob)
