"""Change rows of a trail range (what Replicat and Pump stream): ranges starting mid-file
still get their table definitions, crash-cut transactions yield nothing, routing renames."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from replicat_support import TABLES, Increments

from trailgate.apply.planner import partition_key, partition_of
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.replicat.batch_rows import BatchSummary, trail_changes
from trailgate.replicat.rows import Router, key_hash, read_change_rows
from trailgate.spark.change_rows import OP_METADATA, OP_POSITION
from trailgate.trail import TrailReader, TrailWriter


def _write(trail: Path, txns: list[Transaction]) -> list[TrailPosition]:
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    ends = [writer.write_transaction(t, TABLES) for t in txns]
    writer.close()
    return ends


def _rows(trail: Path, lower: TrailPosition, upper: TrailPosition | None, **kw: object):
    import pyarrow as pa

    return pa.Table.from_batches(list(read_change_rows(str(trail), lower, upper, **kw)))


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
    got = [tc for tc, _ in trail_changes(table)]
    want = [c for t in txns[10:20] for c in t.changes]
    assert [(tc.change.op, tc.change.after, tc.change.before) for tc in got] == [
        (c.op, c.after, c.before) for c in want]
    names = {t for op, t in zip(ops, table.column("table_name").to_pylist(), strict=True)
             if op == OP_METADATA}
    assert names == {c.table for c in want}
    summary = BatchSummary.from_rows(zip(
        ops, table.column("table_name").to_pylist(), table.column("seqno").to_pylist(),
        table.column("rba").to_pylist(), table.column("text").to_pylist(),
        table.column("single").to_pylist(), strict=True))
    assert summary.end == {"seqno": ends[19].seqno, "rba": ends[19].rba}
    for tc in got:
        tdef = summary.definitions.at(tc.change.table, tc.position)
        assert tdef == TABLES[tc.change.table]
    hashes = table.column("key_hash").to_pylist()
    real = [h for op, h in zip(ops, hashes, strict=True) if op not in (OP_METADATA,
                                                                       OP_POSITION)]
    for tc, h in zip(got, real, strict=True):
        key = partition_key(tc.change, TABLES[tc.change.table])
        assert h == key_hash(tc.change, TABLES[tc.change.table])
        assert h % 4 == partition_of(key, 4)  # the planner's split, computed by Spark


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
    xids = {tc.xid for tc, _ in trail_changes(table)}
    assert xids == {t.xid for t in txns}


def test_router_filters_and_renames(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    txns = list(Increments(seed=3).transactions(40))
    _write(trail, txns)
    router = Router.of([("public.accounts", "dr.acc")], [])
    table = _rows(trail, TrailPosition(0, 0), None, router=router)
    got = [tc for tc, _ in trail_changes(table)]
    assert {tc.change.table for tc in got} == {"dr.acc"}
    assert len(got) == sum(1 for t in txns for c in t.changes if c.table == "public.accounts")
    defs = [t for op, t in zip(table.column("op").to_pylist(),
                               table.column("text").to_pylist(), strict=True)
            if op == OP_METADATA]
    assert len(defs) == 1 and json.loads(defs[0])["schema"] == "dr"
    assert len(list(TrailReader(trail).transactions())) == 40
