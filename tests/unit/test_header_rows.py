"""Header-only trail reads through the C codec (``trail_rows.header_batches``) give
exactly the rows of the reference loop (``drive``) over the same range: every header
column, op filters, ranges inside a file and across files, a transaction cut off by a
writer's crash, records in fragments, a 12c+ file, and damage."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from trailgate.errors import TrailFormatError
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition, Transaction
from trailgate.spark import trail_rows
from trailgate.spark.trail_splits import split_file
from trailgate.trail import TrailWriter
from trailgate.trail.naming import TrailName
from trailgate.trail.release import resolve_format

pytestmark = pytest.mark.skipif(trail_rows.speedups is None, reason="the C codec is not built")

FIELDS = ("seqno", "rba", "end_rba", "op", "io_type", "table_name", "io_time", "trans_ind",
          "txn_first", "txn_last", "audit_rba", "audit_pos")
T = TableDef("app", "t", [Column("id", 0, ColumnKind.NUMBER, "integer"),
                          Column("v", 1, ColumnKind.VARCHAR2, "text")], key=["id"])
U = TableDef("app", "ü", [Column("k", 0, ColumnKind.NUMBER, "integer")], key=["k"])
DEFS = {"app.t": T, "app.ü": U}


def _transactions(n: int, big_every: int = 0) -> list[Transaction]:
    out = []
    for t in range(n):
        changes = [Change(OpType.INSERT, "app.t", after={0: b"%d" % t, 1: b"x" * 30},
                          io_time=212_000_000_000_000_000 + t)]
        if t % 3 == 0:
            changes.append(Change(OpType.DELETE, "app.ü", before={0: b"%d" % t}))
        if t % 4 == 1:
            changes.append(Change(OpType.FIELD_COMP, "app.t", after={0: b"%d" % t, 1: b"y"}))
        if big_every and t % big_every == 0:  # too long for one record: fragments
            changes.append(Change(OpType.INSERT, "app.t", after={0: b"-1", 1: b"z" * 70_000}))
        out.append(Transaction(f"1.{t}", 100 + t, changes))
    return out


def _write(trail: Path, txns: list[Transaction], **kw: object) -> list[TrailPosition]:
    writer = TrailWriter(trail, fsync=False, producer="TESTS", **kw)  # type: ignore[arg-type]
    ends = [writer.write_transaction(t, DEFS) for t in txns]
    writer.close()
    return ends


def _rows(batches: object) -> list[dict]:
    return [r for b in batches for r in b.to_pylist()]  # type: ignore[attr-defined]


def _same(trail: Path, lower: TrailPosition, upper: TrailPosition | None,
          ops: frozenset[str] | None = None, fields: tuple[str, ...] = FIELDS) -> list[dict]:
    def keep(record: trail_rows.TrailRecord) -> bool:
        io_type = record.raw.io_type
        return io_type != trail_rows._COMMENT and (ops is None or
                                                   trail_rows.op_label(io_type) in ops)
    want = _rows(trail_rows.drive(str(trail), lower, upper, trail_rows._Columns(fields),
                                  keep=keep, values=False))
    got = _rows(trail_rows.header_batches(str(trail), lower, upper, fields, ops))
    assert got == want
    return got


def test_every_header_column_equals_the_reference_over_pieces_and_filters(tmp_path):
    trail = tmp_path / "dirdat" / "aa"
    _write(trail, _transactions(400), megabytes=1)
    seqs = TrailName(str(trail)).sequence_numbers()
    assert len(seqs) == 1
    rows = _same(trail, TrailPosition(0, 0), None)
    assert len(rows) == 400 + 134 + 100 and {r["table_name"] for r in rows} == {"app.t", "app.ü"}
    cuts = split_file(str(trail), 0, TrailPosition(0, 0), 8 * 1024)
    assert len(cuts) > 3
    for lo, hi in itertools.pairwise([TrailPosition(0, 0), *cuts, TrailPosition(1, 0)]):
        _same(trail, lo, hi)
        _same(trail, lo, hi, frozenset({"Delete", "FieldComp"}), ("op", "rba", "txn_last"))
    # read_batches takes this path for header columns only
    assert _rows(trail_rows.read_batches(str(trail), TrailPosition(0, 0), None,
                                         fields=("op",))) == [{"op": r["op"]} for r in rows]


def test_files_fragments_a_crash_and_a_12c_file_go_to_the_reference_where_they_must(tmp_path):
    trail = tmp_path / "dirdat" / "bb"
    _write(trail, _transactions(60, big_every=7), megabytes=1)  # fragments inside
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="TESTS")
    for t in _transactions(3):  # a new file, then a transaction cut off by a crash
        writer.write_transaction(t, DEFS)
    writer.begin_transaction("9.9", 999)
    for change in _transactions(1)[0].changes:
        writer.add_change(change, DEFS[change.table])
    writer.flush()
    if writer._fd is not None:
        import os

        os.close(writer._fd)
        writer._fd = None
    _same(trail, TrailPosition(0, 0), None)
    _same(trail, TrailPosition(0, 0), TrailPosition(1, 0))
    _same(trail, TrailPosition(1, 0), None, frozenset({"Insert"}))
    twelve = tmp_path / "dirdat" / "cc"
    _write(twelve, _transactions(30), format=resolve_format("19.1", "LITTLEENDIAN"))
    assert len(_same(twelve, TrailPosition(0, 0), None)) > 30


def test_damage_is_reported_by_the_reader_with_its_rba(tmp_path):
    trail = tmp_path / "dirdat" / "dd"
    ends = _write(trail, _transactions(50), megabytes=1)
    path = TrailName(str(trail)).file(0)
    data = bytearray(path.read_bytes())
    data[ends[20].rba] = ord("X")
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=f"RBA {ends[20].rba}"):
        _rows(trail_rows.header_batches(str(trail), TrailPosition(0, 0), None, ("op",), None))


def test_a_typed_read_of_header_columns_equals_the_typed_reference(tmp_path):
    from trailgate.spark import typed_rows
    from trailgate.spark.trail_catalog import find_table

    trail = tmp_path / "dirdat" / "ee"
    _write(trail, _transactions(120), megabytes=1)
    table = typed_rows.TypedTable.of(find_table(str(trail), "app.t"))
    for fields, ops in ((("op", "rba"), None), (("seqno", "io_time", "op"),
                                                frozenset({"FieldComp"}))):
        fast = _rows(typed_rows.read_typed_batches(str(trail), TrailPosition(0, 0), None,
                                                   table, fields=fields, ops=ops))
        cols = typed_rows._TypedColumns(table, fields)
        keep = ops or typed_rows._ROW_OPS

        def mine(record: trail_rows.TrailRecord, keep: frozenset[str] = keep) -> bool:
            return record.raw.table == "app.t" and trail_rows.op_label(
                record.raw.io_type) in keep
        want = _rows(trail_rows.drive(str(trail), TrailPosition(0, 0), None, cols,
                                      keep=mine, values=cols.values))
        assert fast == want and fast
