"""Trail reads with values built by the C codec (``change_rows``) give exactly the rows of the
reference loop (``drive`` over the Python reader): random trails of several tables and
column kinds, NULLs, compressed updates, deletes with before images only, PK updates,
truncates, DDL, tokens, values that are not UTF-8, records in fragments, a definition that
changes mid-trail, ranges inside files and across them; damage gives the reader's error."""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

from trailgate.errors import TrailFormatError
from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
)
from trailgate.spark import trail_rows, typed_rows
from trailgate.spark.trail_catalog import find_table
from trailgate.spark.trail_splits import split_file
from trailgate.trail import TrailWriter
from trailgate.trail.naming import TrailName

pytestmark = pytest.mark.skipif(trail_rows.speedups is None, reason="the C codec is not built")

N, V, C, D, S, R = (ColumnKind.NUMBER, ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.DATE,
                    ColumnKind.TIMESTAMP, ColumnKind.RAW)
A = TableDef("app", "a", [
    Column("id", 0, N, "bigint"), Column("qty", 1, N, "integer"),
    Column("price", 2, N, "numeric(12,2)"), Column("ratio", 3, N, "double precision"),
    Column("name", 4, V, "text"), Column("flag", 5, N, "boolean"),
    Column("day", 6, D, "date"), Column("at", 7, S, "timestamp with time zone"),
    Column("blob", 8, R, "bytea"), Column("code", 9, C, "character(4)", length=4),
], key=["id"])
B1 = TableDef("app", "b", [Column("k", 0, N, "integer"), Column("v", 1, V, "text")], key=["k"])
B2 = TableDef("app", "b", [Column("k", 0, N, "integer"), Column("v", 1, V, "text"),
                           Column("w", 2, S, "timestamp")], key=["k"])


def _value(rng: random.Random, column: Column, n: int) -> bytes | None:
    if column.index and rng.random() < 0.15:
        return None
    kind = column.kind
    if kind is D:
        return b"2024-%02d-%02d:00:00:00" % (n % 12 + 1, n % 28 + 1)
    if kind is S:
        return b"2024-02-29:12:%02d:%02d.%06d000" % (n % 60, n % 59, n % 1000000)
    if kind is R:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if kind is C:
        return b"C%03d" % (n % 1000)
    if column.source_type == "text":
        return rng.choice([b"customer %d" % n, "é%d".encode() % n, b"\xff\xfe", b""])
    if column.source_type == "boolean":
        return b"1" if n % 2 else b"0"
    if column.source_type == "numeric(12,2)":
        return rng.choice([b"%d.%02d" % (n, n % 100), b"NaN"])
    return b"%d" % n


def _image(rng: random.Random, table: TableDef, n: int, part: bool = False
           ) -> dict[int, bytes | None]:
    cols = table.columns
    if part:  # a compressed update: the key and some columns
        cols = [cols[0], *rng.sample(cols[1:], rng.randrange(len(cols)))]
    return {c.index: _value(rng, c, n) for c in cols}


def _change(rng: random.Random, table: TableDef, n: int) -> Change:
    name = table.qualified_name
    op = rng.choice([OpType.INSERT, OpType.INSERT, OpType.UPDATE, OpType.FIELD_COMP,
                     OpType.DELETE, OpType.PK_UPDATE, OpType.TRUNCATE])
    extra: dict[str, object] = {}
    if rng.random() < 0.1:
        extra["tokens"] = {"TK-HOST": f"h{n}", "L": "é"}
    if rng.random() < 0.1:
        extra["rowid"] = f"AAAR{n:014d}"
    io_time = 212_000_000_000_000_000 + n
    if op is OpType.DELETE:
        return Change(op, name, before={0: b"%d" % n}, io_time=io_time, **extra)
    if op is OpType.PK_UPDATE:
        return Change(op, name, before={0: b"%d" % n}, after=_image(rng, table, n, True),
                      io_time=io_time, **extra)
    if op is OpType.TRUNCATE:
        return Change(op, name, io_time=io_time)
    return Change(op, name, after=_image(rng, table, n, op is OpType.FIELD_COMP),
                  io_time=io_time, **extra)


def _random_trail(trail: Path, seed: int, txns: int = 120, *, ddl: bool = True,
                  big: bool = True) -> None:
    rng = random.Random(seed)
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="TESTS")
    b = B1
    n = 0
    for t in range(txns):
        writer.begin_transaction(f"{t}.{seed}", 1000 + t)
        for _ in range(rng.randrange(1, 12)):
            n += 1
            which = rng.random()
            if which < 0.6:
                writer.add_change(_change(rng, A, n), A)
            elif which < 0.85:
                writer.add_change(_change(rng, b, n), b)
            else:  # a table without a definition in the trail
                writer.add_change(Change(OpType.INSERT, "app.nodef",
                                         after={0: b"%d" % n, 3: b"x\x00y"}), None)
        if ddl and t == txns // 2:  # the definition changes mid-trail
            writer.add_change(Change(OpType.DDL, "app.b",
                                     text="ALTER TABLE app.b ADD w timestamp"), None)
            b = B2
            writer.add_definition(b)
        if big and t % 37 == 5:  # too long for one record: fragments
            writer.add_change(Change(OpType.INSERT, "app.b",
                                     after={0: b"-1", 1: b"z" * 70_000}), b)
        writer.commit_transaction()
        if t % 25 == 24:
            writer.write_comment(f"comment {t}")
    writer.close()


def _table(batches: object) -> pa.Table:
    got = list(batches)  # type: ignore[call-overload]
    return pa.Table.from_batches(got) if got else pa.table({})


def _reference(trail: Path, lower: TrailPosition, upper: TrailPosition | None,
               fields: tuple[str, ...] | None = None, ops: frozenset[str] | None = None,
               batch_rows: int = 10_000) -> pa.Table:
    def keep(record: trail_rows.TrailRecord) -> bool:
        io_type = record.raw.io_type
        return io_type != trail_rows._COMMENT and (ops is None or
                                                   trail_rows.op_label(io_type) in ops)
    values = fields is None or "before" in fields or "after" in fields
    return _table(trail_rows.drive(str(trail), lower, upper, trail_rows._Columns(fields),
                                   keep=keep, values=values, batch_rows=batch_rows))


def _generic_pair(trail: Path, lower: TrailPosition, upper: TrailPosition | None,
                  fields: tuple[str, ...] | None = None, ops: frozenset[str] | None = None,
                  batch_rows: int = 10_000) -> tuple[pa.Table, pa.Table]:
    got = _table(trail_rows.read_batches(str(trail), lower, upper, fields=fields, ops=ops,
                                         batch_rows=batch_rows))
    return got, _reference(trail, lower, upper, fields, ops, batch_rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generic_rows_equal_the_reference_on_random_trails(tmp_path, seed):
    trail = tmp_path / "dirdat" / "aa"
    _random_trail(trail, seed)
    got, want = _generic_pair(trail, TrailPosition(0, 0), None)
    assert got.num_rows > 500 and got.equals(want)
    after = got.column("after").to_pylist()
    assert any(m and ("w", None) in m for m in after)  # the new definition's column
    assert any(m and ("3", "x\x00y") in m for m in after)  # no definition: the index
    assert any(m and any(k == "blob" for k, _ in m) for m in after)
    assert got.column("tokens").null_count < got.num_rows
    # ranges inside files and across them, fewer columns, op filters, small batches
    seqs = TrailName(str(trail)).sequence_numbers()
    cuts = [c for s in seqs for c in split_file(str(trail), s, TrailPosition(s, 0), 64 * 1024)]
    bounds = [TrailPosition(seqs[0], 0), *cuts, None]
    for lo, hi in itertools.pairwise(bounds):
        assert lo is not None
        g, w = _generic_pair(trail, lo, hi, batch_rows=50)
        assert g.equals(w)
    for fields, ops in ((("op", "csn", "after"), frozenset({"Delete", "FieldComp"})),
                        (("xid", "before", "rowid", "tokens"), None),
                        (("csn", "xid", "table_name"), None)):
        g, w = _generic_pair(trail, TrailPosition(0, 0), None, fields, ops)
        assert g.equals(w) and g.num_rows


def _typed_pair(trail: Path, name: str, lower: TrailPosition, upper: TrailPosition | None,
                fields: tuple[str, ...] | None = None, ops: frozenset[str] | None = None
                ) -> tuple[pa.Table, pa.Table]:
    table = typed_rows.TypedTable.of(find_table(str(trail), name))
    wanted = fields or tuple(table.arrow_schema().names)
    got = _table(typed_rows.read_typed_batches(str(trail), lower, upper, table,
                                               fields=fields, ops=ops))
    cols = typed_rows._TypedColumns(table, wanted)
    keep_ops = typed_rows._ROW_OPS if ops is None else typed_rows._ROW_OPS & ops

    def mine(record: trail_rows.TrailRecord) -> bool:
        return record.raw.table == name and trail_rows.op_label(record.raw.io_type) in keep_ops
    start = table.definition_at(lower)
    want = _table(trail_rows.drive(str(trail), lower, upper, cols, keep=mine,
                                   values=cols.values,
                                   tables={name: start} if start is not None else None))
    return got, want


@pytest.mark.parametrize("seed", [4, 5])
def test_typed_rows_equal_the_reference_on_random_trails(tmp_path, seed):
    trail = tmp_path / "dirdat" / "tt"
    _random_trail(trail, seed)
    for name in ("app.a", "app.b"):
        got, want = _typed_pair(trail, name, TrailPosition(0, 0), None)
        assert got.num_rows > 50 and got.equals(want), name
    got, _ = _typed_pair(trail, "app.b", TrailPosition(0, 0), None)
    assert got.column("w").null_count < got.num_rows  # the column a DDL added
    got, _ = _typed_pair(trail, "app.a", TrailPosition(0, 0), None)
    assert got.column("price").null_count < got.num_rows
    seqs = TrailName(str(trail)).sequence_numbers()
    cuts = [c for s in seqs for c in split_file(str(trail), s, TrailPosition(s, 0), 64 * 1024)]
    for lo, hi in itertools.pairwise([TrailPosition(seqs[0], 0), *cuts, None]):
        assert lo is not None
        g, w = _typed_pair(trail, "app.b", lo, hi)
        assert g.equals(w)
    for fields in (("name", "blob", "op", "csn"), ("before", "xid"), ("code", "io_time")):
        g, w = _typed_pair(trail, "app.a", TrailPosition(0, 0), None, fields,
                           frozenset({"Insert", "Delete", "PKUpdate"}))
        assert g.equals(w) and g.num_rows


def test_damage_gives_the_readers_error_never_a_crash(tmp_path):
    trail = tmp_path / "dirdat" / "dd"
    _random_trail(trail, 9, txns=40, ddl=False, big=False)
    path = TrailName(str(trail)).file(0)
    clean = path.read_bytes()
    rng = random.Random(9)
    errors = 0
    for _ in range(60 * int(os.environ.get("TRAILGATE_CHANGE_ROWS_ROUNDS", "1"))):
        data = bytearray(clean)
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(2000, len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        outcomes = []
        for read in (lambda: _table(trail_rows.read_batches(str(trail), TrailPosition(0, 0),
                                                            None)),
                     lambda: _reference(trail, TrailPosition(0, 0), None)):
            try:
                outcomes.append(read())
            except TrailFormatError as exc:
                outcomes.append(str(exc))
        got, want = outcomes
        if isinstance(want, str):
            errors += 1
            assert got == want
        else:
            assert isinstance(got, pa.Table) and got.equals(want)
    assert errors > 5
    for cut in sorted(rng.sample(range(2000, len(clean)), 12)):  # a crashed writer's tail
        path.write_bytes(clean[:cut])
        got = _table(trail_rows.read_batches(str(trail), TrailPosition(0, 0), None))
        assert got.equals(_reference(trail, TrailPosition(0, 0), None))
