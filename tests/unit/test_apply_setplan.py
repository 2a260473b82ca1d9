"""BATCHSQL's set plan (no database): key chains collapsed, key changes kept in order, and
the per-column value converters equal to ``text_from_trail``."""

from __future__ import annotations

import random

import pytest

from trailgate.apply import Mapper, StaticCatalog, TargetColumn, TargetTable
from trailgate.apply.mapping import MappedChange
from trailgate.apply.records import TrailChange
from trailgate.apply.setplan import plan_table
from trailgate.apply.values import text_converter, text_from_trail
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text

K = ColumnKind
SRC = TableDef("public", "orders", [Column("id", 0, K.NUMBER, "integer"),
                                    Column("name", 1, K.VARCHAR2, "text"),
                                    Column("qty", 2, K.NUMBER, "integer")], ["id"])
INS, U, D, PK = OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE, OpType.PK_UPDATE


def _mapper(triggers: bool = False, key: list[str] | None = None) -> Mapper:
    p = parse_params_text("REPLICAT rep1\nTARGETDB x\nMAP public.orders, TARGET r.orders;\n",
                          "rep1.prm")
    assert isinstance(p, ReplicatParams)
    table = TargetTable("r", "orders", [TargetColumn(c, "text") for c in ("id", "name", "qty")],
                        ["id"] if key is None else key, triggers=triggers)
    return Mapper(p, StaticCatalog([table]))


def _changes(mapper: Mapper, *specs: tuple) -> list[MappedChange]:
    out = []
    for n, (op, after, before) in enumerate(specs):
        tc = TrailChange(Change(op, "public.orders", after, before), 10 + n, "1.2.3",
                         TrailPosition(0, 100 * (n + 1)))
        m = mapper.map(tc, SRC)
        assert m is not None
        out.append(m)
    return out


def test_chains_collapse_to_their_end_state() -> None:
    m = _mapper()
    changes = _changes(
        m,
        (INS, {0: b"1", 1: b"a", 2: b"1"}, None), (U, {0: b"1", 2: b"2"}, None),  # I U
        (U, {0: b"2", 1: b"b"}, None), (U, {0: b"2", 2: b"9"}, None),  # U U
        (INS, {0: b"3", 1: b"c"}, None), (D, None, {0: b"3"}),  # I D
        (D, None, {0: b"4"}), (INS, {0: b"4", 1: b"d"}, None),  # D I
        (U, {0: b"5", 2: b"5"}, None), (D, None, {0: b"5"}),  # U D
        (D, None, {0: b"6"}),  # D
    )
    plan = plan_table(changes[0].mapping, changes)
    assert plan is not None and plan.ordered == []
    assert plan.inserts == {("id", "name", "qty"): [("1", "a", "2")],
                            ("id", "name"): [("3", "c"), ("4", "d")]}
    assert plan.updates == {("name", "qty"): [("2", "b", "9")]}
    assert plan.delete_first == [("4",), ("5",), ("6",)]
    assert plan.delete_last == [("3",)]
    c = plan.counts
    assert (c.inserts, c.updates, c.deletes) == (3, 4, 4)


def test_key_changes_and_their_keys_stay_in_order() -> None:
    m = _mapper()
    changes = _changes(
        m,
        (INS, {0: b"1", 1: b"a"}, None),
        (PK, {0: b"2"}, {0: b"1"}),  # 1 -> 2
        (U, {0: b"2", 2: b"7"}, None),  # an update of the new key
        (INS, {0: b"1", 1: b"again"}, None),  # the old key reused
        (INS, {0: b"8", 1: b"h"}, None),  # unrelated: collapsed
    )
    plan = plan_table(changes[0].mapping, changes)
    assert plan is not None
    assert plan.ordered == changes[:4]
    assert plan.inserts == {("id", "name"): [("8", "h")]}


def test_a_collision_inside_a_chain_keeps_the_table_in_order() -> None:
    m = _mapper()
    changes = _changes(m, (INS, {0: b"1"}, None), (INS, {0: b"2"}, None), (INS, {0: b"1"}, None))
    plan = plan_table(changes[0].mapping, changes)
    assert plan is not None and plan.ordered == changes
    assert not plan.inserts and plan.counts.inserts == 0


def test_tables_with_triggers_get_no_plan() -> None:
    m = _mapper(triggers=True)
    changes = _changes(m, (INS, {0: b"1"}, None))
    assert plan_table(changes[0].mapping, changes) is None


def test_tables_without_key_stay_in_order() -> None:
    m = _mapper(key=[])
    keyless = TableDef("public", "orders", SRC.columns, [], "NONE")
    tc = TrailChange(Change(INS, "public.orders", {0: b"1"}), 1, "x", TrailPosition(0, 1))
    mc = m.map(tc, keyless)
    assert mc is not None and mc.mapping.all_columns_key
    plan = plan_table(mc.mapping, [mc])
    assert plan is not None and plan.ordered == [mc]


@pytest.mark.parametrize("source_type,kind", [
    ("integer", K.NUMBER), ("numeric(12,3)", K.NUMBER), ("boolean", K.NUMBER),
    ("text", K.VARCHAR2), ("character(4)", K.CHAR), ("bytea", K.RAW),
    ("date", K.DATE), ("timestamp without time zone", K.TIMESTAMP),
    ("timestamp with time zone", K.TIMESTAMP), ("timestamp(3) with time zone", K.TIMESTAMP),
    ("NUMBER(8,2)", K.NUMBER), ("VARCHAR2(30)", K.VARCHAR2), ("DATE", K.DATE),
    ("TIMESTAMP(6)", K.TIMESTAMP), ("RAW(16)", K.RAW), ("jsonb", K.VARCHAR2),
])
def test_converters_equal_text_from_trail(source_type: str, kind: ColumnKind) -> None:
    col = Column("c", 0, kind, source_type)
    convert = text_converter(col)
    rng = random.Random(source_type)
    samples = [b"1", b"0", b"-12.5", b"abc", "h\u00e9llo".encode(), b"\x00\xff",
               b"2013-03-14:00:00:00", b"2013-03-14:22:39:56", b"2013-03-14:22:39:56.5",
               b"2013-03-14:22:39:56.123456789", b"2013-03-14:22:39:56.12345678\n",
               b"1999-12-31:23:59:59.000001000", b"infinity", b"12345-01-01:00:00:00",
               bytes(rng.randrange(256) for _ in range(8))]
    for value in samples:
        try:
            want: object = text_from_trail(value, col)
        except UnicodeDecodeError:
            want = UnicodeDecodeError
        try:
            got: object = convert(value)
        except UnicodeDecodeError:
            got = UnicodeDecodeError
        assert got == want, value


@pytest.mark.parametrize("source_type,kind,name", [
    ("integer", K.NUMBER, "ascii"), ("boolean", K.NUMBER, "bool"), ("text", K.VARCHAR2, "utf8"),
    ("bytea", K.RAW, "raw"), ("date", K.DATE, "date"),
    ("timestamp without time zone", K.TIMESTAMP, "timestamp"),
    ("timestamp with time zone", K.TIMESTAMP, "timestamptz"),
    ("DATE", K.DATE, None), ("NUMBER(8,2)", K.NUMBER, "utf8"),
])
def test_converter_names(source_type: str, kind: ColumnKind, name: str | None) -> None:
    """What the C set planner is told a column's conversion is."""
    from trailgate.apply.values import converter_name

    assert converter_name(text_converter(Column("c", 0, kind, source_type))) == name
