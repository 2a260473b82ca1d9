"""Partition keys, the single-partition rule, and last-change-wins folding."""

from __future__ import annotations

import zlib

import pytest

from trailgate.apply import (
    CollisionError,
    Mapper,
    StaticCatalog,
    TargetColumn,
    TargetTable,
    partition_key,
    partition_of,
    requires_single_partition,
    split_partitions,
)
from trailgate.apply.planner import fold
from trailgate.apply.records import TrailChange
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text

K = ColumnKind
SRC = TableDef("public", "t", [Column("id", 0, K.NUMBER, "integer"),
                               Column("v", 1, K.VARCHAR2, "text")], ["id"])
DEFS = {"public.t": SRC}
_rba = iter(range(100, 10**9, 100))


def tc(op: OpType, after=None, before=None, table: str = "public.t") -> TrailChange:
    return TrailChange(Change(op, table, after, before), 1, "x", TrailPosition(0, next(_rba)))


def test_partition_key_uses_the_key_from_the_right_image() -> None:
    assert partition_key(tc(OpType.INSERT, {0: b"1", 1: b"a"}), SRC) == ("public.t", (b"1",))
    assert partition_key(tc(OpType.FIELD_COMP, {0: b"1"}), SRC) == ("public.t", (b"1",))
    assert partition_key(tc(OpType.DELETE, before={0: b"1"}), SRC) == ("public.t", (b"1",))
    assert partition_key(tc(OpType.PK_UPDATE, {0: b"2"}, {0: b"1"}), SRC) == (
        "public.t", (b"1",))
    assert partition_key(tc(OpType.INSERT, {0: b"1"}), None) == ("public.t",)
    nokey = TableDef("public", "t", SRC.columns, [], "NONE")
    assert partition_key(tc(OpType.INSERT, {0: b"1"}), nokey) == ("public.t",)


def test_partition_of_is_stable_across_processes() -> None:
    # crc32, not hash(): the same key lands in the same partition in every Python worker
    assert partition_of(("public.t", (b"1",)), 8) == partition_of(("public.t", (b"1",)), 8)
    key = ("public.t", (b"1",))
    assert partition_of(key, 1000003) == zlib.crc32(repr(key).encode()) % 1000003


def test_single_partition_rule() -> None:
    assert not requires_single_partition([tc(OpType.INSERT, {0: b"1"}),
                                          tc(OpType.FIELD_COMP, {0: b"1"})])
    for op in (OpType.PK_UPDATE, OpType.TRUNCATE, OpType.DDL):
        assert requires_single_partition([tc(OpType.INSERT, {0: b"1"}), tc(op)])


def test_split_keeps_each_key_in_one_partition_in_order() -> None:
    batch = [tc(OpType.INSERT, {0: str(k).encode()}) for k in range(40)]
    batch += [tc(OpType.FIELD_COMP, {0: str(k).encode(), 1: b"x"}) for k in range(40)]
    parts = split_partitions(batch, DEFS, 4)
    assert len(parts) == 4 and sum(map(len, parts)) == 80
    for part in parts:
        positions = [c.position for c in part]
        assert positions == sorted(positions)
    where = {}
    for i, part in enumerate(parts):
        for c in part:
            assert where.setdefault(partition_key(c, SRC), i) == i
    whole = [*batch, tc(OpType.TRUNCATE)]
    assert split_partitions(whole, DEFS, 4) == [whole]


def _mapper(head: str = "") -> Mapper:
    p = parse_params_text(f"REPLICAT r\nTARGETDB x\n{head}MAP public.t, TARGET public.t;\n",
                          "r.prm")
    assert isinstance(p, ReplicatParams)
    target = TargetTable("public", "t", [TargetColumn("id", "integer"),
                                         TargetColumn("v", "text")], ["id"])
    return Mapper(p, StaticCatalog([target]))


def _fold(changes: list[TrailChange], existing: dict[str, str | None], head: str = ""):
    m = _mapper(head)
    mapped = m.map_all(changes, DEFS)
    rows = {(("id", k),): {"id": k, "v": v} for k, v in existing.items()}
    return fold(mapped[0].mapping, mapped, rows.get, ["id", "v"])


def test_fold_pk_update_chain_and_reinsert() -> None:
    out = _fold([tc(OpType.PK_UPDATE, {0: b"2"}, {0: b"1"}),
                 tc(OpType.PK_UPDATE, {0: b"3", 1: b"moved"}, {0: b"2"}),
                 tc(OpType.INSERT, {0: b"1", 1: b"again"}),
                 tc(OpType.INSERT, {0: b"9", 1: b"tmp"}),
                 tc(OpType.DELETE, before={0: b"9"})], {"1": "orig"})
    assert out.rows == {(("id", "1"),): {"id": "1", "v": "again"},
                        (("id", "2"),): None,
                        (("id", "3"),): {"id": "3", "v": "moved"},
                        (("id", "9"),): None}
    assert (out.counts.inserts, out.counts.updates, out.counts.deletes) == (2, 2, 1)


def test_fold_collisions() -> None:
    clash = [tc(OpType.INSERT, {0: b"1", 1: b"dup"}), tc(OpType.FIELD_COMP, {0: b"5"})]
    out = _fold(clash, {"1": "a"}, head="HANDLECOLLISIONS\n")
    assert out.rows == {(("id", "1"),): {"id": "1", "v": "dup"}}
    assert out.counts.collisions == 2
    with pytest.raises(CollisionError, match=r"insert of a row that already exists.*id = '1'"):
        _fold(clash, {"1": "a"})
    out = _fold(clash, {"1": "a"}, head="REPERROR (DEFAULT, DISCARD)\n")
    assert out.counts.discards == 2 and not out.rows
    assert [d.codes[0] for d in out.discards] == ["23505", "-1403"]


def test_fold_truncate_forgets_existing_rows() -> None:
    out = _fold([tc(OpType.FIELD_COMP, {0: b"1", 1: b"x"}), tc(OpType.TRUNCATE),
                 tc(OpType.INSERT, {0: b"1", 1: b"y"}),
                 tc(OpType.FIELD_COMP, {0: b"1", 1: b"z"})], {"1": "a"},
                head="GETTRUNCATES\n")
    assert out.truncated and out.rows == {(("id", "1"),): {"id": "1", "v": "z"}}
    # after the truncate the old row is gone: updating it is a missing-row collision
    with pytest.raises(CollisionError, match="does not exist"):
        _fold([tc(OpType.TRUNCATE), tc(OpType.FIELD_COMP, {0: b"1", 1: b"x"})], {"1": "a"},
              head="GETTRUNCATES\n")
