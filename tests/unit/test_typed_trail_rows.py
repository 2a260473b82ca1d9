"""Typed rows from a trail without Spark: value conversion, schema union, the catalog."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from trailgate.errors import TrailFormatError
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition, Transaction
from trailgate.spark.trail_catalog import find_table, list_batch, trail_tables
from trailgate.spark.trail_rows import read_batches
from trailgate.spark.typed_rows import TypedTable, read_typed_batches
from trailgate.spark.typed_values import arrow_type, to_arrow
from trailgate.trail import TrailWriter
from trailgate.trail.naming import TrailName


def col(name: str, index: int, kind: ColumnKind, source: str) -> Column:
    return Column(name, index, kind, source)


def test_values_convert_a_column_at_a_time_and_unholdable_ones_become_null():
    n = ColumnKind.NUMBER
    assert to_arrow([b"12.50", b"NaN", None], arrow_type(col("a", 0, n, "numeric(6,2)"))
                    ).to_pylist() == [Decimal("12.50"), None, None]
    assert to_arrow([b"-32768"], arrow_type(col("a", 0, n, "smallint"))).type == pa.int16()
    assert to_arrow([b"1", b"0"], arrow_type(col("a", 0, n, "boolean"))).to_pylist() == [
        True, False]
    assert to_arrow([b"Infinity", b"-0.5"], arrow_type(col("a", 0, n, "double precision"))
                    ).to_pylist() == [float("inf"), -0.5]
    day = arrow_type(col("d", 0, ColumnKind.DATE, "date"))
    assert to_arrow([b"0001-01-01:00:00:00", b"infinity"], day).to_pylist() == [
        date(1, 1, 1), None]
    stamp = arrow_type(col("t", 0, ColumnKind.TIMESTAMP, "timestamp with time zone"))
    assert to_arrow([b"9999-12-31:23:59:59.999999000", b"2024-02-29:12:00:00"], stamp
                    ).to_pylist() == [datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                                      datetime(2024, 2, 29, 12, tzinfo=UTC)]
    text = arrow_type(col("s", 0, ColumnKind.VARCHAR2, "text"))
    assert to_arrow([b"\xffx", "é".encode()], text).to_pylist() == ["\\xffx", "é"]
    assert arrow_type(col("n", 0, n, "numeric")) == pa.string()
    assert arrow_type(col("o", 0, n, "NUMBER(10,2)")) == pa.decimal128(10, 2)


@pytest.mark.parametrize(("kind", "source", "expected"), [
    (ColumnKind.NUMBER, "NUMBER(10)", pa.int64()),
    (ColumnKind.NUMBER, "FLOAT", pa.float64()),
    (ColumnKind.NUMBER, "BINARY_DOUBLE", pa.float64()),
    (ColumnKind.NUMBER, "INTEGER", pa.decimal128(38, 0)),
    (ColumnKind.NUMBER, "oid", pa.int64()),
    (ColumnKind.TIMESTAMP, "TIMESTAMP(3)", pa.timestamp("us")),
])
def test_a_typed_read_has_the_types_a_lake_target_of_the_table_gets(kind, source, expected):
    from trailgate.apply.changelog import change_log_schema

    column = col("c", 0, kind, source)
    assert arrow_type(column) == expected
    table = TableDef("app", "t", [column], key=["c"])
    assert change_log_schema(table).field("after").type.field("c").type == expected
    text = {pa.int64(): b"42", pa.float64(): b"1.5E+10", pa.decimal128(38, 0): b"7",
            pa.timestamp("us"): b"2024-02-29:12:00:00.123000"}[expected]
    assert to_arrow([text], expected).to_pylist()[0] is not None


V1 = TableDef("app", "t", [col("id", 0, ColumnKind.NUMBER, "integer"),
                           col("v", 1, ColumnKind.VARCHAR2, "text")], key=["id"])
V2 = TableDef("app", "t", [*V1.columns, col("w", 2, ColumnKind.NUMBER, "bigint")], key=["id"])


def _trail(tmp_path: Path) -> str:
    trail = tmp_path / "dirdat" / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="TESTS")
    writer.write_transaction(Transaction("1.1", 10, [
        Change(OpType.INSERT, "app.t", after={0: b"1", 1: b"one"}),
        Change(OpType.FIELD_COMP, "app.t", after={0: b"1", 1: b"uno"})]), {"app.t": V1})
    writer.write_transaction(Transaction("1.2", 11, [
        Change(OpType.INSERT, "app.t", after={0: b"2", 1: None, 2: b"20"}),
        Change(OpType.DELETE, "app.t", before={0: b"1"})]), {"app.t": V2})
    writer.close()
    return str(trail)


def test_the_schema_is_the_union_of_the_definitions_and_earlier_rows_have_nulls(tmp_path):
    trail = _trail(tmp_path)
    table = TypedTable.of(find_table(trail, "APP.T"))
    assert [n for n, _ in table.columns] == ["id", "v", "w"]
    rows = [r for b in read_typed_batches(trail, TrailPosition(0, 0), None, table)
            for r in b.to_pylist()]
    assert [(r["op"], r["id"], r["v"], r["w"], r["before"], r["csn"]) for r in rows] == [
        ("Insert", 1, "one", None, None, 10), ("FieldComp", 1, "uno", None, None, 10),
        ("Insert", 2, None, 20, None, 11),
        ("Delete", None, None, None, {"id": 1, "v": None, "w": None}, 11)]
    # some columns only, an op filter: the same rows' values
    some = [r for b in read_typed_batches(trail, TrailPosition(0, 0), None, table,
                                          fields=("w", "op"), ops=frozenset({"Insert"}))
            for r in b.to_pylist()]
    assert some == [{"w": None, "op": "Insert"}, {"w": 20, "op": "Insert"}]
    # a range starting after the first definition knows the one in force
    start = rows[2]["seqno"], rows[2]["rba"]
    later = [r for b in read_typed_batches(trail, TrailPosition(*start), None, table)
             for r in b.to_pylist()]
    assert [(r["id"], r["w"]) for r in later] == [(2, 20), (None, None)]


def test_the_catalog_lists_tables_and_names_them_when_one_is_missing(tmp_path):
    trail = _trail(tmp_path)
    [table] = trail_tables(trail)
    assert table.name == "app.t" and table.changes == 4 and table.definitions == [V1, V2]
    listed = list_batch(trail).to_pylist()
    assert listed == [{"table_name": "app.t", "columns": "`id` int, `v` string, `w` bigint",
                       "definitions": 2, "changes": 4}]
    with pytest.raises(ValueError, match=r"no such table .*\(its tables: app.t\)"):
        find_table(trail, "app.nope")


def test_generic_rows_with_some_columns_and_no_values_decoded(tmp_path):
    trail = _trail(tmp_path)
    full = [r for b in read_batches(trail, TrailPosition(0, 0), None) for r in b.to_pylist()]
    ops = [r for b in read_batches(trail, TrailPosition(0, 0), None, fields=("op", "rba"),
                                   ops=frozenset({"Insert", "Delete"}))
           for r in b.to_pylist()]
    assert ops == [{"op": r["op"], "rba": r["rba"]} for r in full
                   if r["op"] in ("Insert", "Delete")]
    assert dict(full[2]["after"]) == {"id": "2", "v": None, "w": "20"}


def test_a_big_file_splits_at_transaction_boundaries_and_pieces_know_the_columns(tmp_path):
    from trailgate.spark.trail_splits import definitions_at, split_file

    trail = tmp_path / "dirdat" / "aa"
    writer = TrailWriter(trail, megabytes=10, fsync=False, producer="TESTS")
    for t in range(300):
        writer.write_transaction(Transaction(f"1.{t}", 100 + t, [
            Change(OpType.INSERT, "app.t", after={0: b"%d" % (t * 3 + k), 1: b"x" * 300})
            for k in range(3)]), {"app.t": V1})
    writer.close()
    whole = [r for b in read_batches(str(trail), TrailPosition(0, 0), None)
             for r in b.to_pylist()]
    cuts = split_file(str(trail), 0, TrailPosition(0, 0), 64 * 1024)
    assert len(cuts) >= 3
    bounds = [TrailPosition(0, 0), *cuts, TrailPosition(1, 0)]
    pieces = []
    for lo, hi in itertools.pairwise(bounds):
        defs = {d.qualified_name: d for d in definitions_at(str(trail), lo)}
        pieces += [r for b in read_batches(str(trail), lo, hi, definitions=defs or None)
                   for r in b.to_pylist()]
    assert pieces == whole and len(whole) == 900
    assert all(r["txn_first"] for r in pieces[::3])


def test_the_catalogs_c_pass_finds_what_the_reader_finds(tmp_path):
    """``tables_between`` through the C codec's scan equals the reader's logical records: several
    tables, definitions that change, ranges starting inside the file, a record cut short
    at the end (a writer that died) and a damaged record (the reader reports it)."""
    from trailgate.spark import trail_catalog

    trail = tmp_path / "dirdat" / "aa"
    other = TableDef("app", "u", [col("k", 0, ColumnKind.NUMBER, "integer")], key=["k"])
    writer = TrailWriter(trail, megabytes=10, fsync=False, producer="TESTS")
    ends = []
    for t in range(200):
        defs = {"app.t": V1 if t < 120 else V2, "app.u": other}
        changes = [Change(OpType.INSERT, "app.t", after={0: b"%d" % t, 1: b"x" * 40})]
        if t % 3 == 0:
            changes.append(Change(OpType.DELETE, "app.u", before={0: b"%d" % t}))
        ends.append(writer.write_transaction(Transaction(f"1.{t}", 100 + t, changes), defs))
    writer.close()
    path = TrailName(str(trail)).file(0)

    def both(start: int, end: int | None) -> None:
        fast = trail_catalog.tables_between(str(trail), 0, start, end)
        slow = trail_catalog._tables_slow(str(trail), 0, start, end, {})
        assert [(x.name, x.changes, x.history) for x in fast] == [
            (x.name, x.changes, x.history) for x in slow]

    for start, end in ((0, None), (ends[50].rba, None), (ends[10].rba, ends[150].rba)):
        both(start, end)
    [t, u] = trail_catalog.tables_between(str(trail), 0, 0, None)
    assert (t.name, t.changes, t.definitions, u.changes) == ("app.t", 200, [V1, V2], 67)
    with open(path, "ab") as f:  # the next record, cut short by a crash
        f.write(b"G\x01\x01\x00H\x00")
    both(0, None)
    data = bytearray(path.read_bytes())
    data[ends[100].rba] = ord("X")  # no G where a record starts
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=f"RBA {ends[100].rba}"):
        trail_catalog.tables_between(str(trail), 0, 0, None)
