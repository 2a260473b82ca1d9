"""The stream apply's open trail file (``TrailTail``) beside the reference it stands in for:
where it answers, its scan is ``scan_boundary``'s and its span ``read_span``'s, on a file
growing by random cuts (records cut in two, metadata, fragmented records, marks, record
bounds); what it does not take (a next file, a header-less start, a changed file) it leaves
to the reference."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from test_scan_records import T, trail  # the same random trails

from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.replicat.range_apply import read_span
from trailgate.replicat.trail_tail import TrailTail
from trailgate.spark.key_split import single_marker
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail._accel import speedups
from trailgate.trail.naming import TrailName
from trailgate.trail.writer import TrailWriter

pytestmark = pytest.mark.skipif(speedups is None, reason="the C codec is not built")


def grow_and_follow(tmp_path: Path, seed: int) -> tuple[int, int]:
    """Follow a copy of a random trail as it grows by random cuts, the tail beside the
    reference at every look; (scans the tail answered, scans it left)."""
    original = trail(tmp_path / "src", seed)
    source = TrailName(original).file(0).read_bytes()
    ends, pos = [], TrailPosition(0, 0)  # where transactions end: a writer's usual cuts
    while (pos := scan_boundary(original, pos, max_records=1)[0]) > TrailPosition(0, 0) \
            and (not ends or pos.rba > ends[-1]):
        ends.append(pos.rba)
    (tmp_path / "dst").mkdir()
    prefix = str(tmp_path / "dst" / "sc")
    path = TrailName(prefix).file(0)
    rng = random.Random(seed)
    marks = [None, single_marker(Router.of([("public.*", None)], [])),
             lambda io_type, table: table == "other.u"]
    tail = TrailTail(prefix)
    at, state, written = TrailPosition(0, 0), None, 0
    answered = left = 0
    try:
        with open(path, "wb") as f:
            while written < len(source) or state is None or state.resume.rba < len(source):
                cut = min(len(source), written + rng.choice([0, 40, 300, 5_000, 120_000]))
                if rng.random() < 0.7:  # mostly whole transactions, as a writer writes
                    cut = next((e for e in ends if e >= cut), len(source))
                f.write(source[written:cut])
                f.flush()
                written = cut
                limit = rng.choice([100_000, 100_000, 3, 1])
                mark = rng.choice(marks)
                ref = scan_boundary(prefix, at, max_records=limit, state=state, mark=mark)
                got = tail.scan(at, state, os.stat(path), False, max_records=limit, mark=mark)
                if got is None:
                    left += 1
                else:
                    answered += 1
                    assert got == ref, (at, state, limit)
                end, _, state = ref
                if end > at:
                    span = tail.span(at, end)
                    if got is not None:
                        assert span is not None
                    if span is not None:
                        assert span == read_span(prefix, at, end)
                    tail.applied(end)
                    at = end
                if written == len(source) and end == at and state.resume.rba == len(source):
                    break
    finally:
        tail.close()
    assert at.rba == len(source)
    return answered, left


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_where_the_tail_answers_it_is_the_reference(tmp_path: Path, seed: int) -> None:
    answered, left = grow_and_follow(tmp_path, seed)
    assert answered > 2 * left, (answered, left)  # the reference: cut records, the start


def test_what_the_tail_does_not_take_is_left_to_the_reference(tmp_path: Path) -> None:
    prefix = str(tmp_path / "tt")
    with TrailWriter(prefix, fsync=False) as w:
        for n in range(3):
            w.write_transaction(Transaction(f"0.{n}.1", 10 + n, [Change(
                OpType.INSERT, "public.t", {0: str(n).encode(), 1: b"y"})]), {"public.t": T})
    path = TrailName(prefix).file(0)
    seen = os.stat(path)
    tail = TrailTail(prefix)
    try:
        # the file's start (before its header): the reference's
        assert tail.scan(TrailPosition(0, 0), None, seen, False, max_records=10,
                         mark=None) is None
        end, records, state = scan_boundary(prefix, TrailPosition(0, 0), max_records=1)
        assert records == 1
        # a next file seen by the look: the reference goes on into it
        assert tail.scan(end, state, seen, True, max_records=10, mark=None) is None
        # no stat (the file is gone) or one of another file: not this file's bytes
        assert tail.scan(end, state, None, False, max_records=10, mark=None) is None
        other = tmp_path / "other"
        other.write_bytes(b"")
        assert tail.scan(end, state, os.stat(other), False, max_records=10,
                         mark=None) is None
        got = tail.scan(end, state, seen, False, max_records=10, mark=None)
        assert got == scan_boundary(prefix, end, max_records=10, state=state)
        assert got is not None and got[1] == 2
        assert tail.span(end, got[0]) == read_span(prefix, end, got[0])
        assert tail.span(TrailPosition(0, end.rba + 1), got[0]) is None  # not from its start
    finally:
        tail.close()
