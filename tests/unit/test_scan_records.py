"""The boundary scan's C loop (``_speedups.scan_records``) beside the Python loop it stands
in for: the same boundaries, counts, marks and resumable state over trails with metadata,
fragmented records, several files, limits, record bounds and unfinished transactions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from trailgate.changes.routing import Router
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition, Transaction
from trailgate.spark import trail_offsets
from trailgate.spark.key_split import single_marker
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail._accel import speedups
from trailgate.trail.naming import TrailName
from trailgate.trail.writer import TrailWriter

pytestmark = pytest.mark.skipif(speedups is None, reason="the C codec is not built")

T = TableDef("public", "t", [Column("id", 0, ColumnKind.NUMBER, "integer"),
                             Column("body", 1, ColumnKind.VARCHAR2, "text")], ["id"])
U = TableDef("other", "u", [Column("id", 0, ColumnKind.NUMBER, "integer")], ["id"])


def trail(path: Path, seed: int, *, files: bool = False) -> str:
    """Random transactions: small and large (a 70 KB value is a fragmented record), PK
    updates and truncates (what the Replicat's mark looks for), two tables."""
    rng = random.Random(seed)
    prefix = str(path / "sc")
    with TrailWriter(prefix, megabytes=1 if files else 500, fsync=False) as w:
        for n in range(120):
            changes = []
            for _ in range(rng.randrange(1, 6)):
                table = rng.choice([T, T, U])
                k = str(rng.randrange(1000)).encode()
                roll = rng.random()
                if roll < 0.03:
                    changes.append(Change(OpType.TRUNCATE, table.qualified_name))
                elif roll < 0.08:
                    changes.append(Change(OpType.PK_UPDATE, table.qualified_name, {0: k},
                                          {0: b"1"}))
                elif table is T and roll < 0.25:
                    changes.append(Change(OpType.INSERT, "public.t",
                                          {0: k, 1: b"x" * rng.randrange(20_000, 90_000)}))
                else:
                    changes.append(Change(OpType.INSERT, table.qualified_name,
                                          {0: k} | ({1: b"y"} if table is T else {})))
            w.write_transaction(Transaction(f"0.{n}.1", 10 + n, changes),
                                {"public.t": T, "other.u": U})
    return prefix


def both(prefix: str, start: TrailPosition, monkeypatch: pytest.MonkeyPatch, **kw: object
         ) -> tuple[object, object]:
    fast = scan_boundary(prefix, start, **kw)  # type: ignore[arg-type]
    with monkeypatch.context() as m:
        m.setattr(trail_offsets, "speedups", None)
        slow = scan_boundary(prefix, start, **kw)  # type: ignore[arg-type]
    return fast, slow


@pytest.mark.parametrize("files", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_c_loop_finds_what_the_python_loop_finds(tmp_path: Path, seed: int, files: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = trail(tmp_path, seed, files=files)
    rng = random.Random(seed)
    marks = [None, single_marker(Router.of([("public.*", None)], [])),
             lambda io_type, table: table == "other.u"]
    start = TrailPosition(0, 0)
    steps = 0
    while True:
        kw = {"max_records": rng.choice([None, 1, 7, 7, 50, 50]), "mark": rng.choice(marks)}
        fast, slow = both(prefix, start, monkeypatch, **kw)
        assert fast == slow, (start, kw)
        end = fast[0]
        # a limit somewhere inside what this scan covered, and a state carried over
        if end != start and end.seqno == start.seqno:
            limit = TrailPosition(end.seqno, rng.randrange(start.rba, end.rba + 1))
            assert both(prefix, start, monkeypatch, limit=limit, **kw)[0] == \
                both(prefix, start, monkeypatch, limit=limit, **kw)[1]
            first = both(prefix, start, monkeypatch, limit=limit, **kw)[0]
            state = first[2]  # type: ignore[index]
            fast2, slow2 = both(prefix, state.boundary, monkeypatch, state=state, **kw)
            assert fast2 == slow2
        if end == start:
            break
        start = end
        steps += 1
    assert steps >= 1
    assert start.seqno > 0 if files else start.seqno == 0


def test_an_unfinished_transaction_and_a_cut_record(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = trail(tmp_path, 3)
    path = Path(prefix + "000000000")
    data = path.read_bytes()
    for cut in (len(data) - 1, len(data) - 200, len(data) - 70_000):
        path.write_bytes(data[:cut])
        fast, slow = both(prefix, TrailPosition(0, 0), monkeypatch)
        assert fast == slow, cut


def test_damage_is_left_to_the_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken record stops the C loop; the Python loop then reports it as before."""
    from trailgate.trail.header import decode_file_header

    prefix = trail(tmp_path, 4)
    path = Path(prefix + "000000000")
    data = bytearray(path.read_bytes())
    pos = decode_file_header(bytes(data[:0xFFFF])).length
    for _ in range(40):  # the 41st record
        pos += (data[pos + 2] << 8) | data[pos + 3]
    for offset, byte in ((0, 0xEE), (3, 0x01), (6, 0xFF)):  # G type, its length, H length
        broken = bytearray(data)
        broken[pos + offset] = byte
        path.write_bytes(bytes(broken))
        errors = []
        for pure in (False, True):
            with monkeypatch.context() as m:
                if pure:
                    m.setattr(trail_offsets, "speedups", None)
                try:
                    scan_boundary(prefix, TrailPosition(0, 0))
                except Exception as exc:  # the same error either way
                    errors.append(str(exc))
        assert len(errors) == 2 and errors[0] == errors[1], offset


def test_the_last_files_end_needs_no_reader(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan that reads the last file to its end in C returns there: the reader would
    open the file, its header and a listing only to find nothing more (what each step of
    a live stream apply paid).  A later file, after a gap too, is still gone on to."""
    prefix = trail(tmp_path, 5, files=True)
    seqs = TrailName(prefix).sequence_numbers()
    assert len(seqs) >= 2
    expected = both(prefix, TrailPosition(0, 0), monkeypatch)
    assert expected[0] == expected[1]

    def no_reader(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reader was opened at the last file's end")

    last = TrailPosition(seqs[-1], 0)
    want = both(prefix, last, monkeypatch)[1]
    with monkeypatch.context() as m:
        m.setattr(trail_offsets, "TrailReader", no_reader)
        assert scan_boundary(prefix, last) == want
    # the file before the last one read to its end: on to the next, here after a gap
    gap = Path(TrailName(prefix).file(seqs[-1] + 1))
    Path(TrailName(prefix).file(seqs[-1])).rename(gap)
    fast, slow = both(prefix, TrailPosition(seqs[-2], 0), monkeypatch)
    assert fast == slow and fast[0].seqno == seqs[-1] + 1  # type: ignore[index]


def test_has_file_after_answers_as_the_listing(tmp_path: Path) -> None:
    """``TrailName.has_file_after`` (the scan's look for a later file) says what
    ``sequence_numbers`` says: other prefixes, six-digit names, a directory and other
    names do not count."""
    for name in ("aa000000000", "aa000000002", "aa000004", "ab000000009", "aa00000001x",
                 "aa000000000.lock", "aaa00000008"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "aa000000007").mkdir()
    name = TrailName(str(tmp_path / "aa"))
    for seqno in range(-1, 10):
        assert name.has_file_after(seqno) == any(
            s > seqno for s in name.sequence_numbers()), seqno
    assert not TrailName(str(tmp_path / "missing" / "aa")).has_file_after(0)
