"""Rows of a trail range — change rows (what the Pump streams) and apply rows (what the
Replicat streams, whole or as key partitions): ranges starting mid-file still get their
table definitions, crash-cut transactions yield nothing, routing renames, key partitions
split a range exactly as the planner would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import pyarrow as pa
import pytest
from replicat_support import TABLES, Increments

from trailgate.apply.planner import partition_key, partition_of, split_partitions
from trailgate.changes.apply_rows import read_apply_rows
from trailgate.changes.change_rows import OP_METADATA, OP_POSITION, iter_change_rows
from trailgate.changes.range_rows import key_hash, read_change_rows
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.replicat.task_rows import BatchSummary, TaskRows, trail_changes
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail import TrailReader, TrailWriter


def _write(trail: Path, txns: list[Transaction]) -> list[TrailPosition]:
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    ends = [writer.write_transaction(t, TABLES) for t in txns]
    writer.close()
    return ends


def _rows(trail: Path, lower: TrailPosition, upper: TrailPosition | None, **kw: object):
    return pa.Table.from_batches(list(read_change_rows(str(trail), lower, upper, **kw)))


def _apply_rows(trail: Path, lower: TrailPosition, upper: TrailPosition | None,
                **kw: object) -> pa.Table:
    return pa.Table.from_batches(list(read_apply_rows(str(trail), lower, upper, **kw)))


def _changes(table: pa.Table) -> list:
    """The change rows' TrailChanges (Pump form)."""
    out = []
    seqnos, rbas = table.column("seqno").to_pylist(), table.column("rba").to_pylist()
    for i, row in enumerate(iter_change_rows(table)):
        if row.change is not None:
            out.append((row.change, TrailPosition(seqnos[i], rbas[i]), row.csn, row.xid))
    return out


def test_mid_file_range_has_definitions_and_positions(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=1).transactions(30))
    ends = _write(trail, txns)
    table = _rows(trail, ends[9], ends[19], hashes=True)
    ops = table.column("op").to_pylist()
    assert ops[-1] == OP_POSITION
    info = json.loads(table.column("text").to_pylist()[-1])
    assert (info["seqno"], info["rba"]) == (ends[19].seqno, ends[19].rba)
    assert info["csn"] == txns[19].csn and info["read_time"]
    got = _changes(table)
    want = [c for t in txns[10:20] for c in t.changes]
    assert [(c.op, c.after, c.before) for c, *_ in got] == [
        (c.op, c.after, c.before) for c in want]
    names = {t for op, t in zip(ops, table.column("table_name").to_pylist(), strict=True)
             if op == OP_METADATA}
    assert names == {c.table for c in want}
    summary = BatchSummary.from_rows(zip(
        ops, table.column("table_name").to_pylist(), table.column("seqno").to_pylist(),
        table.column("rba").to_pylist(), table.column("text").to_pylist(),
        table.column("single").to_pylist(), strict=True))
    assert summary.end == {"seqno": ends[19].seqno, "rba": ends[19].rba}
    for change, position, *_ in got:
        tdef = summary.definitions.at(change.table, position)
        assert tdef == TABLES[change.table]
    hashes = table.column("key_hash").to_pylist()
    real = [h for op, h in zip(ops, hashes, strict=True) if op not in (OP_METADATA,
                                                                       OP_POSITION)]
    for (change, *_), h in zip(got, real, strict=True):
        key = partition_key(change, TABLES[change.table])
        assert h == key_hash(change, TABLES[change.table])
        assert h % 4 == partition_of(key, 4)  # the planner's split


def test_crash_cut_transaction_yields_nothing(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=2).transactions(5))
    _write(trail, txns)
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    cut = Transaction("cut", 99_999, [Change(OpType.INSERT, "public.events",
                                             after={0: b"9", 1: b"x"})] * 2)
    writer.begin_transaction(cut.xid, cut.csn)
    for c in cut.changes:
        writer.add_change(c, TABLES[c.table])
    writer.flush()
    table = _rows(trail, TrailPosition(0, 0), None)
    assert {xid for *_, xid in _changes(table)} == {t.xid for t in txns}
    applied = trail_changes(_apply_rows(trail, TrailPosition(0, 0), None))
    assert {tc.xid for tc in applied} == {t.xid for t in txns}


def test_router_filters_and_renames(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=3).transactions(40))
    _write(trail, txns)
    router = Router.of([("public.accounts", "dr.acc")], [])
    table = _rows(trail, TrailPosition(0, 0), None, router=router)
    got = [c for c, *_ in _changes(table)]
    assert {c.table for c in got} == {"dr.acc"}
    assert len(got) == sum(1 for t in txns for c in t.changes if c.table == "public.accounts")
    defs = [t for op, t in zip(table.column("op").to_pylist(),
                               table.column("text").to_pylist(), strict=True)
            if op == OP_METADATA]
    assert len(defs) == 1 and json.loads(defs[0])["schema"] == "dr"
    assert len(list(TrailReader(trail).transactions())) == 40


def test_apply_rows_carry_every_change_exactly(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=5).transactions(30))
    txns.append(Transaction("tok", 5_000, [Change(
        OpType.INSERT, "public.events", after={0: b"900", 1: None}, io_time=7, audit_seq=3,
        audit_pos=4, rowid="AAAx", tokens={"who": "me"})]))
    ends = _write(trail, txns)
    table = _apply_rows(trail, ends[9], None)
    got = trail_changes(table)
    want = [(t, i, c) for t in txns[10:] for i, c in enumerate(t.changes)]
    assert [tc.change for tc in got] == [c for *_, c in want]
    assert [(tc.csn, tc.xid) for tc in got] == [(t.csn, t.xid) for t, *_ in want]
    for tc, (t, i, _) in zip(got, want, strict=True):
        n = len(t.changes)
        assert tc.trans_ind == (3 if n == 1 else 0 if i == 0 else 2 if i == n - 1 else 1)
    rows = TaskRows()
    rows.add(table)
    assert len(rows.positions) == 1
    info = json.loads(rows.positions[0])
    assert (info["seqno"], info["rba"], info["csn"]) == (ends[-1].seqno, ends[-1].rba, 5_000)
    for tc in got:
        assert rows.definitions.at(tc.change.table, tc.position) == TABLES[tc.change.table]


@pytest.mark.parametrize("n", [2, 3])
def test_key_partitions_split_a_range_as_the_planner_does(tmp_path: Path, n: int) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=6).transactions(60))
    ends = _write(trail, txns)
    whole = trail_changes(_apply_rows(trail, ends[4], ends[50]))
    want = split_partitions(whole, TABLES, n)
    assert all(want)
    for p in range(n):
        table = _apply_rows(trail, ends[4], ends[50], part=(p, n))
        rows = TaskRows()
        rows.add(table)
        assert set(rows.changes) == {p}
        got = rows.changes[p]
        assert [tc.position for tc in got] == [tc.position for tc in want[p]]  # trail order
        assert [tc.change for tc in got] == [tc.change for tc in want[p]]
        assert len(rows.positions) == 1  # every key partition ends with the position row
        assert set(rows.definitions.by_table) == {tc.change.table for tc in got}


def test_scan_marks_ranges_with_key_changes(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=7).transactions(10))
    txns.insert(5, Transaction("pk", 10_500, [Change(
        OpType.PK_UPDATE, "public.events", after={0: b"77"}, before={0: b"76"})]))
    ends = _write(trail, txns)

    def single(io_type: int, table: str) -> bool:
        return io_type == OpType.PK_UPDATE and table == "public.events"
    records = sum(len(t.changes) for t in txns)
    _, covered, state = scan_boundary(str(trail), TrailPosition(0, 0), mark=single)
    assert (state.covered, state.marked) == (covered, True) and covered == records
    _, _, state = scan_boundary(str(trail), ends[5], mark=single)  # after the PK update
    assert not state.marked
    _, _, state = scan_boundary(str(trail), TrailPosition(0, 0), limit=ends[4], mark=single)
    assert not state.marked and state.boundary == ends[4]


def test_cyclic_gc_paused_while_a_batch_is_applied() -> None:
    import gc

    from trailgate.apply.paused_gc import paused_gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
