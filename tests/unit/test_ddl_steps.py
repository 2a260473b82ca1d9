"""A stream step cut at its DDL transactions: the C scan and the Python loop (the reference)
find the same steps — a DDL transaction first, two in a row, one with DML in it, one that a
rollover splits across files, one last — and the steps are consecutive and cover the range."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.replicat import ddl_steps as module
from trailgate.replicat.ddl_steps import ddl_steps
from trailgate.spark.trail_offsets import end_of_data
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.ddl import encode_marker

T = TableDef("app", "t", [Column("id", 0, ColumnKind.NUMBER, "integer"),
                          Column("v", 1, ColumnKind.VARCHAR2, "text")], ["id"])
DDL = encode_marker("ALTER TABLE app.t ADD w int", [("B3", "app"), ("B4", "t"),
                                                    ("B5", "TABLE"), ("B6", "ALTER")])


def _write(trail: Path) -> list[str]:
    """The trail; each transaction's kind in order (D: holds a DDL, R: rows only)."""
    kinds = []
    with TrailWriter(trail, megabytes=1, fsync=False) as w:
        csn = 0

        def txn(*changes: Change) -> None:
            nonlocal csn
            csn += 1
            w.begin_transaction(f"0.{csn}.1", csn)
            for change in changes:
                w.add_change(change, None if change.op is OpType.DDL else T)
                if change.op is OpType.DDL:
                    w.add_definition(T)
            w.commit_transaction()
            kinds.append("D" if any(c.op is OpType.DDL for c in changes) else "R")

        def row(n: int, size: int = 10) -> Change:
            return Change(OpType.INSERT, "app.t", after={0: b"%d" % n, 1: b"x" * size})

        ddl = Change(OpType.DDL, "app.t", text=DDL)
        txn(ddl)
        txn(row(1), row(2))
        txn(ddl)
        txn(ddl)
        for n in range(3, 200):
            txn(row(n, 6000))  # past MEGABYTES 1: the trail rolls over
        txn(row(900, 30000), ddl, row(901))  # DML and DDL in one transaction, across files
        txn(row(902))
        txn(ddl)
    return kinds


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    path = tmp_path_factory.mktemp("steps") / "aa"
    return str(path), _write(path)


def _ends(trail: str) -> list[TrailPosition]:
    reader = TrailReader(trail)
    return [rt.end for rt in reader.transactions()]


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_steps_cut_at_each_ddl_transaction(trail: tuple[str, list[str]], pure: bool,
                                           monkeypatch: pytest.MonkeyPatch):
    path, kinds = trail
    if pure:
        monkeypatch.setattr(module, "speedups", None)
    ends = _ends(path)
    start, end = TrailPosition(0, 0), ends[-1]  # a step ends with a transaction
    assert end.seqno >= 1
    steps = ddl_steps(path, start, end)
    assert steps[0][0] == start and steps[-1][1] == end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(steps))
    # a DDL step ends where its transaction ends; the steps hold the transactions in order
    expected, held = [], []
    for kind, txn_end in zip(kinds, ends, strict=True):
        if kind == "D":
            if held:
                expected.append("R" * len(held))
            expected.append("D")
            held = []
        else:
            held.append(txn_end)
    if held:
        expected.append("R" * len(held))
    assert len(steps) == len(expected)
    for (lower, upper), kind in zip(steps, expected, strict=True):
        inside = [k for k, e in zip(kinds, ends, strict=True) if lower < e <= upper]
        assert "".join(inside) == kind


def test_c_and_python_agree_from_any_boundary(trail: tuple[str, list[str]],
                                             monkeypatch: pytest.MonkeyPatch):
    path, _ = trail
    ends = _ends(path)
    for lower, end in ((TrailPosition(0, 0), ends[-1]), (ends[0], ends[-1]),
                       (ends[2], ends[150]), (ends[100], end_of_data(path)),
                       (ends[-3], ends[-1])):
        assert end is not None
        fast = ddl_steps(path, lower, end)
        with monkeypatch.context() as m:
            m.setattr(module, "speedups", None)
            reference = ddl_steps(path, lower, end)
        assert [(a.seqno, a.rba, b.seqno, b.rba) for a, b in fast] == [
            (a.seqno, a.rba, b.seqno, b.rba) for a, b in reference]
