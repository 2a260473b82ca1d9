"""Applying batches to real Delta tables (deltalake): merge = sequential apply, replays skipped."""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from trailgate.apply import CollisionError, DiscardWriter, TrailChange
from trailgate.apply.delta import DeltaApplier
from trailgate.capture.postgres.types import classify
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text


def tdef(name: str, cols: list[tuple[str, str]], key: list[str]) -> TableDef:
    schema, _, table = name.rpartition(".")
    columns = []
    for i, (cname, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef(schema, table, columns, key)


ORDERS = tdef("public.orders", [("id", "integer"), ("name", "text"), ("qty", "integer")],
              ["id"])
DEFS = {"public.orders": ORDERS}


class Trail:
    def __init__(self) -> None:
        self.rba = 0
        self.csn = 100

    def __call__(self, op: OpType, after: dict[int, bytes | None] | None = None,
                 before: dict[int, bytes | None] | None = None,
                 table: str = "public.orders") -> TrailChange:
        self.rba += 100
        self.csn += 1
        return TrailChange(Change(op, table, after, before), self.csn, f"x{self.csn}",
                           TrailPosition(1, self.rba))


def params(body: str, head: str = "") -> ReplicatParams:
    p = parse_params_text(f"REPLICAT rep1\nTARGETDELTA /x\n{head}{body}", "rep1.prm")
    assert isinstance(p, ReplicatParams)
    return p


MAP = "MAP public.orders, TARGET lake.orders;"


def content(path: Path) -> list[dict[str, Any]]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def test_merge_applies_last_change_per_key(tmp_path: Path) -> None:
    t = Trail()
    a = DeltaApplier(tmp_path, params(MAP))
    a.validate()
    b1 = [t(OpType.INSERT, {0: b"1", 1: b"a", 2: b"10"}),
          t(OpType.INSERT, {0: b"2", 1: b"b", 2: b"20"}),
          t(OpType.INSERT, {0: b"3", 1: b"c", 2: b"30"})]
    res = a.apply_batch(0, b1, DEFS)
    assert res.counts["lake.orders"].inserts == 3
    path = tmp_path / "lake" / "orders"
    b2 = [t(OpType.FIELD_COMP, {0: b"1", 2: b"11"}),  # only qty changes
          t(OpType.FIELD_COMP, {0: b"1", 1: None}),
          t(OpType.DELETE, before={0: b"2"}),
          t(OpType.PK_UPDATE, {0: b"4", 2: b"31"}, {0: b"3"}),  # 3 -> 4 -> 5
          t(OpType.PK_UPDATE, {0: b"5"}, {0: b"4"}),
          t(OpType.INSERT, {0: b"3", 1: b"new", 2: None}),  # 3 is free again
          t(OpType.INSERT, {0: b"9", 1: b"z", 2: b"9"}),
          t(OpType.DELETE, before={0: b"9"})]
    res = a.apply_batch(1, b2, DEFS)
    assert content(path) == [{"id": 1, "name": None, "qty": 11},
                             {"id": 3, "name": "new", "qty": None},
                             {"id": 5, "name": "c", "qty": 31}]
    c = res.counts["lake.orders"]
    assert (c.inserts, c.updates, c.deletes) == (2, 4, 2)
    dt = DeltaTable(str(path))
    assert dt.transaction_version("REP1") == 1
    assert dt.history(1)[0]["operation"] == "MERGE"


def test_replayed_batch_is_skipped(tmp_path: Path) -> None:
    t = Trail()
    a = DeltaApplier(tmp_path, params(MAP))
    batch = [t(OpType.INSERT, {0: b"1", 1: b"a", 2: b"1"})]
    a.apply_batch(5, batch, DEFS)
    path = tmp_path / "lake" / "orders"
    version = DeltaTable(str(path)).version()
    # a different applier (process restarted) replays batch 5, and an older batch
    b = DeltaApplier(tmp_path, params(MAP))
    for batch_id in (5, 4):
        res = b.apply_batch(batch_id, [t(OpType.FIELD_COMP, {0: b"1", 2: b"99"})], DEFS)
        assert res.skipped and res.skipped_tables == ["lake.orders"] and not res.counts
    assert DeltaTable(str(path)).version() == version
    assert content(path) == [{"id": 1, "name": "a", "qty": 1}]
    assert b.applied_version("lake.orders") == 5
    res = b.apply_batch(6, [t(OpType.FIELD_COMP, {0: b"1", 2: b"99"})], DEFS)
    assert not res.skipped and content(path)[0]["qty"] == 99


def _random_batches(seed: int, n_batches: int = 6, size: int = 25) -> list[list[TrailChange]]:
    """Random valid histories over a few keys: inserts of free keys, updates, PK updates and
    deletes of live keys (as a source would produce them)."""
    rnd = random.Random(seed)
    t = Trail()
    live: dict[int, dict[int, bytes | None]] = {}
    batches = []
    for _ in range(n_batches):
        batch = []
        for _ in range(size):
            free = [k for k in range(8) if k not in live]
            choice = rnd.random()
            if (choice < 0.3 or not live) and free:
                k = rnd.choice(free)
                row = {0: str(k).encode(), 1: rnd.choice([b"x", b"y", None]),
                       2: str(rnd.randint(0, 99)).encode()}
                live[k] = row
                batch.append(t(OpType.INSERT, dict(row)))
            elif choice < 0.6 and live:
                k = rnd.choice(sorted(live))
                col = rnd.choice([1, 2])
                val = str(rnd.randint(0, 99)).encode() if col == 2 else rnd.choice([b"p", None])
                live[k][col] = val
                batch.append(t(OpType.FIELD_COMP, {0: str(k).encode(), col: val}))
            elif choice < 0.8 and live and free:
                k = rnd.choice(sorted(live))
                nk = rnd.choice(free)
                row = live.pop(k)
                row[0] = str(nk).encode()
                live[nk] = row
                batch.append(t(OpType.PK_UPDATE, {0: row[0]}, {0: str(k).encode()}))
            elif live:
                k = rnd.choice(sorted(live))
                del live[k]
                batch.append(t(OpType.DELETE, before={0: str(k).encode()}))
        batches.append(batch)
    batches.append([])
    expected = sorted(({"id": int(r[0]), "name": None if r[1] is None else r[1].decode(),  # type: ignore[union-attr]
                        "qty": int(r[2])} for r in live.values()),  # type: ignore[arg-type]
                      key=lambda r: r["id"])
    batches[-1] = expected  # type: ignore[list-item]
    return batches


@pytest.mark.parametrize("seed", range(6))
def test_merge_equals_sequential_apply(tmp_path: Path, seed: int) -> None:
    *batches, expected = _random_batches(seed)
    a = DeltaApplier(tmp_path, params(MAP))
    for i, batch in enumerate(batches):
        a.apply_batch(i, batch, DEFS)
    assert content(tmp_path / "lake" / "orders") == expected


def test_created_table_types_from_oracle_definition(tmp_path: Path) -> None:
    cols = [Column("STUDENT_KEY", 0, ColumnKind.NUMBER, "NUMBER(10)"),
            Column("NAME", 1, ColumnKind.VARCHAR2, "VARCHAR2(30)"),
            Column("ENROLLED", 2, ColumnKind.DATE, "DATE"),
            Column("FEE", 3, ColumnKind.NUMBER, "NUMBER(8,2)"),
            Column("RATIO", 4, ColumnKind.NUMBER, "NUMBER"),
            Column("PHOTO", 5, ColumnKind.RAW, "RAW(4)")]
    d = TableDef("US03", "STUDENT", cols, ["STUDENT_KEY"])
    p = params("MAP US03.STUDENT, TARGET lake.student, COLMAP (USEDEFAULTS, "
               "loaded = @GETENV('GGHEADER', 'COMMITTIMESTAMP'), src = 'us03');")
    t = Trail()
    a = DeltaApplier(tmp_path, p)
    a.apply_batch(0, [t(OpType.INSERT, {0: b"1011", 1: b"Rebecca", 2: b"2013-03-14:22:39:56",
                                        3: b"9000.5", 4: b"0.333", 5: b"\x01\x02"},
                        table="US03.STUDENT")], {"US03.STUDENT": d})
    dt = DeltaTable(str(tmp_path / "lake" / "student"))
    schema = pa.schema(dt.schema())
    assert [(f.name, f.type) for f in schema] == [
        ("STUDENT_KEY", pa.int64()), ("NAME", pa.string()), ("ENROLLED", pa.timestamp("us")),
        ("FEE", pa.decimal128(8, 2)), ("RATIO", pa.string()), ("PHOTO", pa.binary()),
        ("loaded", pa.timestamp("us", tz="UTC")), ("src", pa.string())]
    row = dt.to_pyarrow_table().to_pylist()[0]
    assert row["STUDENT_KEY"] == 1011 and row["FEE"] == Decimal("9000.50")
    assert row["ENROLLED"].isoformat() == "2013-03-14T22:39:56" and row["PHOTO"] == b"\x01\x02"
    assert row["RATIO"] == "0.333" and row["src"] == "us03"


def test_existing_table_with_keycols(tmp_path: Path) -> None:
    path = tmp_path / "lake" / "tally"
    write_deltalake(str(path), pa.table({"code": ["a"], "n": pa.array([1], pa.int64()),
                                         "extra": ["keep"]}))
    src = tdef("public.tally", [("id", "integer"), ("code", "text"), ("n", "bigint")], ["id"])
    p = params("MAP public.tally, TARGET lake.tally, COLMAP (USEDEFAULTS), KEYCOLS (code);")
    t = Trail()
    a = DeltaApplier(tmp_path, p)
    a.validate()
    a.apply_batch(0, [t(OpType.INSERT, {0: b"1", 1: b"b", 2: b"2"}, table="public.tally"),
                      t(OpType.UPDATE, {0: b"7", 1: b"a", 2: b"5"}, table="public.tally")],
                  {"public.tally": src})
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(),
                  key=lambda r: r["code"]) == [{"code": "a", "n": 5, "extra": "keep"},
                                               {"code": "b", "n": 2, "extra": None}]


def test_collisions(tmp_path: Path) -> None:
    t = Trail()
    seed = [t(OpType.INSERT, {0: b"1", 1: b"a", 2: b"1"})]
    clash = [t(OpType.INSERT, {0: b"1", 1: b"dup", 2: b"2"}),
             t(OpType.FIELD_COMP, {0: b"9", 2: b"9"}),
             t(OpType.DELETE, before={0: b"8"}),
             t(OpType.INSERT, {0: b"2", 1: b"b", 2: b"2"})]
    hc = DeltaApplier(tmp_path / "hc", params(MAP, head="HANDLECOLLISIONS\n"))
    hc.apply_batch(0, seed, DEFS)
    res = hc.apply_batch(1, clash, DEFS)
    assert content(tmp_path / "hc" / "lake" / "orders") == [
        {"id": 1, "name": "dup", "qty": 2}, {"id": 2, "name": "b", "qty": 2}]
    assert res.counts["lake.orders"].collisions == 3

    ab = DeltaApplier(tmp_path / "ab", params(MAP))
    ab.apply_batch(0, seed, DEFS)
    with pytest.raises(CollisionError) as err:
        ab.apply_batch(1, clash, DEFS)
    msg = str(err.value)
    assert "lake.orders" in msg and "id = 1" in msg and "trail position 1:200" in msg
    assert DeltaTable(str(tmp_path / "ab" / "lake" / "orders")).transaction_version("REP1") == 0

    dsc = tmp_path / "rep1.dsc"
    di = DeltaApplier(tmp_path / "di", params(MAP, head="REPERROR (DEFAULT, DISCARD)\n"),
                      discard=DiscardWriter(dsc))
    di.apply_batch(0, seed, DEFS)
    res = di.apply_batch(1, clash, DEFS)
    assert res.counts["lake.orders"].discards == 3
    assert dsc.read_text().count("Discarded record") == 3
    assert content(tmp_path / "di" / "lake" / "orders") == [
        {"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": 2}]


def test_truncate_in_batch(tmp_path: Path) -> None:
    t = Trail()
    a = DeltaApplier(tmp_path, params(MAP, head="GETTRUNCATES\n"))
    a.apply_batch(0, [t(OpType.INSERT, {0: b"1", 1: b"a", 2: b"1"}),
                      t(OpType.INSERT, {0: b"2", 1: b"b", 2: b"2"})], DEFS)
    res = a.apply_batch(1, [t(OpType.FIELD_COMP, {0: b"1", 2: b"5"}),
                            t(OpType.TRUNCATE),
                            t(OpType.INSERT, {0: b"3", 1: b"c", 2: b"3"})], DEFS)
    assert content(tmp_path / "lake" / "orders") == [{"id": 3, "name": "c", "qty": 3}]
    assert res.counts["lake.orders"].truncates == 1


COURSES = tdef("us03.course", [("university", "character varying(30)"),
                               ("subject", "character varying(30)"), ("places", "integer")],
               ["university", "subject"])


def test_string_keys_across_batches(tmp_path: Path) -> None:
    """A merge writes string columns as string_view; later batches must still find their rows
    (the demo's COURSE table abended on its second batch before this was handled)."""
    t = Trail()
    a = DeltaApplier(tmp_path, params("MAP us03.course, TARGET lake.course;"))
    a.validate()
    defs = {"us03.course": COURSES}
    course = "us03.course"
    a.apply_batch(0, [t(OpType.INSERT, {0: b"Oxford", 1: b"Biology", 2: b"10"}, table=course),
                      t(OpType.INSERT, {0: b"Oxford", 1: b"Theology", 2: b"5"}, table=course)],
                  defs)
    for batch in range(1, 4):
        a.apply_batch(batch, [
            t(OpType.FIELD_COMP, {0: b"Oxford", 1: b"Biology", 2: str(10 + batch).encode()},
              table="us03.course"),
            t(OpType.INSERT, {0: b"Cambridge", 1: f"S{batch}".encode(), 2: b"1"},
              table="us03.course"),
        ], defs)
    a.apply_batch(4, [t(OpType.DELETE, before={0: b"Oxford", 1: b"Theology"},
                        table="us03.course")], defs)
    rows = sorted(DeltaTable(str(tmp_path / "lake" / "course")).to_pyarrow_table().to_pylist(),
                  key=lambda r: (r["university"], r["subject"]))
    assert rows == [{"university": "Cambridge", "subject": f"S{i}", "places": 1}
                    for i in (1, 2, 3)] + [
                   {"university": "Oxford", "subject": "Biology", "places": 13}]
