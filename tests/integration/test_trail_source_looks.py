"""The trail sources' looks at a growing trail (``_reach``): every look of one batch window
starts where the last one found its boundary, so a long window reads each appended record
once, and the result is what one scan from the batch's start gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import Increments, write_trail

import trailgate.spark.trail_source as trail_source
from trailgate.model import TrailPosition
from trailgate.spark.trail_options import parse_options
from trailgate.spark.trail_source import TrailStreamReader

START = TrailPosition(0, 0)


def _reader(trail: Path) -> TrailStreamReader:
    return TrailStreamReader(parse_options({"path": str(trail)}, streaming=True))


@pytest.mark.parametrize("bounded", [False, True])
def test_looks_at_a_growing_trail_read_each_record_once(tmp_path: Path, bounded: bool,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    trail = tmp_path / "dirdat" / "rt"
    trail.parent.mkdir()
    work = Increments(seed=3)
    write_trail(trail, work.transactions(20))
    first = _reader(trail)
    b1, _ = first._reach(START, None)
    assert first._state is not None
    bound = first._state.covered + 25 if bounded else None
    starts: list[TrailPosition] = []
    real = trail_source.scan_boundary

    def scan(path: str, start: TrailPosition, **kw: object):  # type: ignore[no-untyped-def]
        starts.append(start)
        return real(path, start, **kw)  # type: ignore[arg-type]

    looks = _reader(trail)
    monkeypatch.setattr(trail_source, "scan_boundary", scan)
    assert looks._reach(START, bound) == (b1, False)
    assert looks._reach(START, bound) == (b1, False)  # nothing appended: no scan
    write_trail(trail, work.transactions(20))
    write_trail(trail, work.transactions(20))
    got = looks._reach(START, bound)
    assert starts == [START, b1]  # the second scan went on from the first one's boundary
    monkeypatch.undo()
    once = _reader(trail)
    assert got == once._reach(START, bound)
    assert got[1] == bounded
    assert looks._state is not None and once._state is not None
    assert looks._state.boundary == once._state.boundary
    assert looks._state.covered == once._state.covered
    if bounded:
        assert looks._reach(START, bound) == got  # full: no further look
