"""The C set planner (``spanplan``) beside the Python path it stands in for: the same trail
range read with ``read_task_rows``, mapped with ``Mapper.map_all`` and planned with
``plan_table`` must give the same rows, keys and counts — and where the Python path would
do anything else (a key change, a collision inside a chain, a value a converter would not
take as is), the C planner must give the range back (None)."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import pytest

from trailgate.apply import Mapper, StaticCatalog, TargetColumn, TargetTable
from trailgate.apply.setplan import CopyRows, SetPlan, plan_table
from trailgate.apply.spanplan import available, table_spec
from trailgate.capture.postgres.types import classify, trail_from_pg_text
from trailgate.changes.routing import Router
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition, Transaction
from trailgate.params import ReplicatParams, parse_params_text
from trailgate.replicat.range_apply import plan_range, position_row
from trailgate.replicat.task_rows import read_task_rows
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail.header import decode_file_header
from trailgate.trail.writer import TrailWriter

pytestmark = pytest.mark.skipif(not available, reason="the C set planner is not built")

INS, UPD, CMP, DEL = OpType.INSERT, OpType.UPDATE, OpType.FIELD_COMP, OpType.DELETE
TYPES = [("id", "integer"), ("name", "text"), ("price", "numeric(12,2)"), ("flag", "boolean"),
         ("code", "character(4)"), ("blob", "bytea"), ("day", "date"),
         ("at", "timestamp without time zone"), ("atz", "timestamp with time zone"),
         ("doc", "jsonb")]


def tabledef(schema: str, name: str, types: list[tuple[str, str]] = TYPES,
             key: list[str] | None = None) -> TableDef:
    cols = []
    for i, (cname, ctype) in enumerate(types):
        t = classify(ctype)
        cols.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale, True))
    return TableDef(schema, name, cols, ["id"] if key is None else key, "PRIMARY")


ITEMS = tabledef("public", "items")
NOTES = tabledef("public", "notes", [("id", "bigint"), ("body", "text")])
SKIPPED = tabledef("other", "skipped", [("id", "integer")])
DEFS = {t.qualified_name: t for t in (ITEMS, NOTES, SKIPPED)}
INDEX = {c.name: c.index for c in ITEMS.columns}


def mapper(maps: str = "MAP public.*, TARGET r.*;") -> Mapper:
    p = parse_params_text(f"REPLICAT rep1\nTARGETDB x\nBATCHSQL\n{maps}\n", "rep1.prm")
    assert isinstance(p, ReplicatParams)
    targets = [TargetTable("r", t.name, [TargetColumn(c.name, c.source_type)
                                         for c in t.columns], ["id"])
               for t in (ITEMS, NOTES)]
    return Mapper(p, StaticCatalog(targets))


def text_value(rng: random.Random, ctype: str) -> str:
    if ctype in ("integer", "bigint"):
        return str(rng.randrange(-10**6, 10**6))
    if ctype.startswith("numeric"):
        return f"{rng.randrange(-10**8, 10**8) / 100:.2f}"
    if ctype == "boolean":
        return rng.choice(["t", "f"])
    if ctype.startswith("character"):
        return rng.choice(["ab", "wxyz", "é", ""])
    if ctype == "bytea":
        return "\\x" + bytes(rng.randrange(256) for _ in range(rng.randrange(6))).hex()
    if ctype == "date":
        return rng.choice(["2024-02-29", "0001-01-01", "9999-12-31"])
    if ctype.startswith("timestamp"):
        frac = rng.choice(["", ".5", ".123456", ".000001"])
        tz = "+00" if "with time" in ctype else ""
        return rng.choice([f"2024-02-29 23:59:58{frac}{tz}", f"1999-01-01 00:00:00{frac}{tz}"])
    pieces = ["plain", "tab\there", "new\nline", "back\\slash", "cr\r", "ünï", "\u2603",
              "{\"a\": [1, 2]}", "", "\b\f\v"]
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4)))


def image(rng: random.Random, table: TableDef, key: int, partial: bool = False
          ) -> dict[int, bytes | None]:
    out: dict[int, bytes | None] = {0: str(key).encode()}
    for col in table.columns[1:]:
        if partial and rng.random() < 0.5:
            continue
        if rng.random() < 0.15:
            out[col.index] = None
        else:
            out[col.index] = trail_from_pg_text(text_value(rng, col.source_type),
                                                classify(col.source_type))
    return out


def workload(rng: random.Random, txns: int, keys: int = 40) -> list[Transaction]:
    """Random inserts, updates (full and compressed) and deletes that never collide, over
    few keys (so chains are long), two mapped tables and one the router leaves out."""
    state: dict[tuple[str, int], bool] = {}
    out = []
    for n in range(txns):
        changes = []
        for _ in range(rng.randrange(1, 12)):
            table = rng.choice([ITEMS, ITEMS, NOTES, SKIPPED])
            k = rng.randrange(keys)
            name = table.qualified_name
            if not state.get((name, k)):
                changes.append(Change(INS, name, image(rng, table, k)))
                state[name, k] = True
            elif rng.random() < 0.6:
                op = rng.choice([UPD, CMP])
                changes.append(Change(op, name, image(rng, table, k, op is CMP)))
            else:
                changes.append(Change(DEL, name, None, {0: str(k).encode()}))
                state[name, k] = False
        out.append(Transaction(f"0.{n}.7", 1000 + n, changes, 2_460_000_000_000_000 + n))
    return out


def write(path: Path, txns: list[Transaction], defs: dict[str, TableDef] = DEFS) -> str:
    prefix = str(path / "aa")
    with TrailWriter(prefix, fsync=False) as w:
        for txn in txns:
            w.write_transaction(txn, defs)
    return prefix


def python_plans(trail: str, lower: TrailPosition, upper: TrailPosition, router: Router,
                 m: Mapper) -> tuple[list[SetPlan], str]:
    task = read_task_rows(trail, lower, upper, router)
    changes = task.changes.get(0, [])
    mapped = m.map_all(changes, task.definitions.for_changes(changes))
    by: dict[int, tuple[Any, list[Any]]] = {}
    for mc in mapped:
        by.setdefault(id(mc.mapping), (mc.mapping, []))[1].append(mc)
    plans = []
    for mapping, mcs in by.values():
        plan = plan_table(mapping, mcs)
        assert plan is not None
        plans.append(plan)
    return plans, task.positions[0]


_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "v": "\v"}


def copy_rows(rows: list[tuple[Any, ...]] | CopyRows) -> list[tuple[Any, ...]]:
    """Rows of a plan as tuples of text (None for NULL), whichever form they are in."""
    if not isinstance(rows, CopyRows):
        return list(rows)
    out = []
    for line in rows.data.decode("utf-8").split("\n")[:-1]:
        row: list[str | None] = []
        for field in line.split("\t"):
            if field == "\\N":
                row.append(None)
                continue
            text, i = [], 0
            while i < len(field):
                if field[i] == "\\":
                    text.append(_UNESCAPE[field[i + 1]])
                    i += 2
                else:
                    text.append(field[i])
                    i += 1
            row.append("".join(text))
        out.append(tuple(row))
    assert len(out) == len(rows)
    return out


def normal(plan: SetPlan) -> dict[str, Any]:
    """A plan's effect, independent of row order and column order within a group."""
    ordered = plan.ordered
    assert not ordered
    keys = plan.key_columns
    inserts = sorted((tuple(sorted(zip(cols, row, strict=True)))
                      for cols, rows in plan.inserts.items() for row in copy_rows(rows)),
                     key=repr)
    updates = sorted(((row[:len(keys)], tuple(sorted(zip(cols, row[len(keys):], strict=True))))
                      for cols, rows in plan.updates.items() for row in copy_rows(rows)),
                     key=repr)
    c = plan.counts
    return {"target": plan.mapping.target.qualified_name, "key": keys,
            "delete_first": sorted(copy_rows(plan.delete_first), key=repr),
            "delete_last": sorted(copy_rows(plan.delete_last), key=repr),
            "inserts": inserts, "updates": updates,
            "counts": (c.inserts, c.updates, c.deletes)}


def both(trail: str, lower: TrailPosition, upper: TrailPosition, router: Router,
         maps: str = "MAP public.*, TARGET r.*;") -> tuple[Any, Any]:
    want, position = python_plans(trail, lower, upper, router, mapper(maps))
    planned = plan_range(mapper(maps), trail, lower, upper, router)
    if planned is None:
        return [normal(p) for p in want], None
    span, _ = planned
    assert position_row(upper, span) == position
    return [normal(p) for p in want], [normal(p) for p in span.plans]


ROUTER = Router.of([("public.*", None)], [])


@pytest.mark.parametrize("seed", range(6))
def test_random_workloads_plan_the_same(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    trail = write(tmp_path, workload(rng, 300))
    lower = TrailPosition(0, 0)
    spans = 0
    while True:
        upper, _, _ = scan_boundary(trail, lower, max_records=rng.choice([50, 400, 5000]))
        if upper == lower:
            break
        want, got = both(trail, lower, upper, ROUTER)
        assert got is not None, "C gave a plain workload back to Python"
        assert got == want, (lower, upper)
        spans += 1
        lower = upper
    assert spans >= 1


@pytest.mark.parametrize("seed", range(2))
def test_many_keys_plan_the_same(tmp_path: Path, seed: int) -> None:
    """Thousands of keys in one span (the planner's key index grows many times over, its
    chains found again after each growth) and in spans of every size plan as the Python
    path does."""
    rng = random.Random(100 + seed)
    trail = write(tmp_path, workload(rng, 1500, keys=4000))
    lower, spans = TrailPosition(0, 0), 0
    while True:
        upper, _, _ = scan_boundary(trail, lower, max_records=rng.choice([300, 3000, 10**6]))
        if upper == lower:
            break
        want, got = both(trail, lower, upper, ROUTER)
        assert got is not None, "C gave a plain workload back to Python"
        assert got == want, (lower, upper)
        spans += 1
        lower = upper
    whole, _, _ = scan_boundary(trail, TrailPosition(0, 0), max_records=10**6)
    want, got = both(trail, TrailPosition(0, 0), whole, ROUTER)
    assert got == want and sum(p["counts"][0] for p in got) > 2000  # keys in one index


TAGS = tabledef("public", "tags", [("name", "text"), ("n", "integer")], key=["name"])


@pytest.mark.parametrize("seed", range(2))
def test_text_keys_plan_the_same(tmp_path: Path, seed: int) -> None:
    """Text keys the index must tell apart byte for byte: empty, escaped in COPY text
    (tab, newline, backslash), non-ASCII, long, and prefixes of each other, over many
    inserts, updates and deletes, plan as the Python path does."""
    rng = random.Random(200 + seed)
    names = ["", "a", "aa", "a\tb", "a\tb ", "tab\there", "new\nline", "back\\slash",
             "ünï", "\u2603", "x" * 300, "x" * 301] + [f"k{i}" for i in range(600)]
    state: dict[str, bool] = {}
    txns = []
    for n in range(400):
        changes = []
        for _ in range(rng.randrange(1, 10)):
            name = rng.choice(names) if n else ""  # a span's first key empty too
            key = trail_from_pg_text(name, classify("text"))
            value = trail_from_pg_text(str(rng.randrange(1000)), classify("integer"))
            if not state.get(name):
                changes.append(Change(INS, "public.tags", {0: key, 1: value}))
                state[name] = True
            elif rng.random() < 0.6:
                changes.append(Change(rng.choice([UPD, CMP]), "public.tags", {0: key, 1: value}))
            else:
                changes.append(Change(DEL, "public.tags", None, {0: key}))
                state[name] = False
        txns.append(Transaction(f"0.{n}.7", 1000 + n, changes, 2_460_000_000_000_000 + n))
    trail = write(tmp_path, txns, {"public.tags": TAGS})
    p = parse_params_text("REPLICAT rep1\nTARGETDB x\nBATCHSQL\nMAP public.*, TARGET r.*;\n",
                          "rep1.prm")
    assert isinstance(p, ReplicatParams)
    catalog = StaticCatalog([TargetTable("r", "tags", [TargetColumn("name", "text"),
                                                        TargetColumn("n", "integer")],
                                         ["name"])])
    lower = TrailPosition(0, 0)
    while True:
        upper, _, _ = scan_boundary(trail, lower, max_records=rng.choice([200, 5000]))
        if upper == lower:
            break
        want, _ = python_plans(trail, lower, upper, ROUTER, Mapper(p, catalog))
        planned = plan_range(Mapper(p, catalog), trail, lower, upper, ROUTER)
        assert planned is not None, "C gave text keys back to Python"
        assert [normal(x) for x in planned[0].plans] == [normal(x) for x in want]
        lower = upper


def test_last_kept_position_and_skipped_tables(tmp_path: Path) -> None:
    """The checkpoint row's position is the last change the router kept, as the Python
    path's ``max(position)``; a table the router leaves out is neither planned nor kept."""
    rng = random.Random(9)
    txns = [Transaction("0.1.1", 5, [Change(INS, "public.items", image(rng, ITEMS, k))
                                     for k in range(10)]
                        + [Change(INS, "other.skipped", {0: b"1"})], 2_460_000_000_000_001)]
    trail = write(tmp_path, txns)
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    planned = plan_range(mapper(), trail, TrailPosition(0, 0), upper, ROUTER)
    assert planned is not None
    span, segments = planned
    task = read_task_rows(trail, TrailPosition(0, 0), upper, ROUTER)
    last = max(tc.position for tc in task.changes[0])
    assert (span.kept, span.mapped) == (10, 10)
    assert TrailPosition(0, segments[0].rba + span.last_kept - segments[0].offset) == last
    assert [p.mapping.target.name for p in span.plans] == ["items"]


def test_renamed_tables_and_unmapped_ones(tmp_path: Path) -> None:
    """A router that renames (the Pump's MAP) and a table no MAP takes (kept, not mapped)."""
    rng = random.Random(3)
    trail = write(tmp_path, workload(rng, 60))
    router = Router.of([("public.items", "public.notes"), ("public.notes", "public.items")], [])
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    want, got = both(trail, TrailPosition(0, 0), upper, router, "MAP public.notes, TARGET r.notes;")
    assert got == want and got


def change_txn(*changes: Change) -> Transaction:
    return Transaction("0.9.9", 77, list(changes), 2_460_000_000_000_009)


def ins(k: int, **extra: bytes | None) -> Change:
    after: dict[int, bytes | None] = {0: str(k).encode(), 1: b"x"}
    after.update({INDEX[n]: v for n, v in extra.items()})
    return Change(INS, "public.items", after)


@pytest.mark.parametrize("case,changes", [
    ("PK update", [ins(1), Change(OpType.PK_UPDATE, "public.items", {0: b"2"}, {0: b"1"})]),
    ("collision in a chain", [ins(1), ins(1)]),
    ("update after delete", [ins(1), Change(DEL, "public.items", None, {0: b"1"}),
                             Change(CMP, "public.items", {0: b"1", 1: b"z"})]),
    ("NULL key", [Change(INS, "public.items", {0: None, 1: b"x"})]),
    ("key absent", [Change(CMP, "public.items", {1: b"x"})]),
    ("truncate", [ins(1), Change(OpType.TRUNCATE, "public.items")]),
    ("non-ASCII number", [ins(1, price=b"1\xc3\xa9")]),
    ("invalid UTF-8", [ins(1, name=b"\xff")]),
    ("NUL in text", [ins(1, name=b"a\x00b")]),
    ("timestamp text", [ins(1, at=b"infinity")]),
])
def test_what_c_gives_back_to_python(tmp_path: Path, case: str, changes: list[Change]) -> None:
    trail = write(tmp_path, [change_txn(*changes)])
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    assert plan_range(mapper(), trail, TrailPosition(0, 0), upper, ROUTER) is None, case


def test_table_definition_changing_inside_the_range(tmp_path: Path) -> None:
    """A second definition of a table already used in the range: Python keeps both."""
    prefix = str(tmp_path / "aa")
    wider = tabledef("public", "notes", [("id", "bigint"), ("body", "text"), ("n", "integer")])
    with TrailWriter(prefix, fsync=False) as w:
        w.write_transaction(change_txn(Change(INS, "public.notes", {0: b"1", 1: b"a"})), DEFS)
        w.write_transaction(change_txn(Change(INS, "public.notes", {0: b"2", 1: b"b", 2: b"3"})),
                            {"public.notes": wider})
    upper, _, _ = scan_boundary(prefix, TrailPosition(0, 0))
    assert plan_range(mapper(), prefix, TrailPosition(0, 0), upper, ROUTER) is None


def test_expressions_and_where_stay_in_python(tmp_path: Path) -> None:
    trail = write(tmp_path, workload(random.Random(1), 20))
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    for maps in ("MAP public.items, TARGET r.items, COLMAP (USEDEFAULTS, name = 'x');",
                 "MAP public.items, TARGET r.items, WHERE (id > 3);"):
        assert plan_range(mapper(maps), trail, TrailPosition(0, 0), upper, ROUTER) is None


def test_definitions_after_a_span_are_remembered(tmp_path: Path) -> None:
    """The next batch starts where a span ended: the definitions before it (including one
    met inside the span) are known without scanning the file again."""
    from trailgate.changes import ranges as rows_module

    prefix = str(tmp_path / "aa")
    wider = tabledef("public", "notes", [("id", "bigint"), ("body", "text"), ("n", "integer")])
    with TrailWriter(prefix, fsync=False) as w:
        w.write_transaction(change_txn(Change(INS, "public.items", {0: b"1", 1: b"a"})), DEFS)
        mid = w.position
        w.write_transaction(change_txn(Change(INS, "public.notes", {0: b"2", 1: b"b", 2: b"3"})),
                            {"public.notes": wider})
        w.write_transaction(change_txn(Change(INS, "public.notes", {0: b"3", 1: b"c", 2: b"4"})),
                            {"public.notes": wider})
    upper, _, _ = scan_boundary(prefix, mid, max_records=1)
    assert plan_range(mapper(), prefix, mid, upper, ROUTER) is not None
    remembered = rows_module._prefix_cache[(prefix, upper.seqno)][-1]
    assert remembered[0] == upper.rba
    assert remembered[1]["public.notes"] == wider
    assert remembered[1] == rows_module.definitions_before(prefix, upper)
    rows_module._prefix_cache.clear()
    assert rows_module.definitions_before(prefix, upper) == remembered[1]


def test_a_small_range_read_again_does_not_scan_its_file_again(tmp_path: Path) -> None:
    """A range too small for sets (a heartbeat's) is planned, which remembers its end, then
    read by the Python path from its start: that start stays known, so the file before
    it is not read again (here it is overwritten after the first look, so a second scan
    would find no definitions and the change would have none)."""
    from trailgate.changes import ranges as rows_module

    prefix = str(tmp_path / "aa")
    with TrailWriter(prefix, fsync=False) as w:
        w.write_transaction(change_txn(ins(1)), DEFS)
        w.write_transaction(change_txn(ins(2)), DEFS)
        mid = w.position
        w.write_transaction(change_txn(ins(3)), DEFS)
    upper, _, _ = scan_boundary(prefix, mid)
    assert rows_module.definitions_before(prefix, mid)["public.items"] == ITEMS
    assert plan_range(mapper(), prefix, mid, upper, ROUTER) is not None  # remembers upper
    path = tmp_path / "aa000000000"
    data = bytearray(path.read_bytes())
    header_end = decode_file_header(bytes(data)).length  # the definitions, the first changes
    data[header_end:mid.rba] = bytes(mid.rba - header_end)
    path.write_bytes(bytes(data))
    task = read_task_rows(prefix, mid, upper, ROUTER)
    changes = task.changes[0]
    assert [tc.change.after[0] for tc in changes] == [b"3"]
    assert task.definitions.for_changes(changes)["public.items"] == ITEMS


def test_a_range_across_trail_files(tmp_path: Path) -> None:
    """A batch whose range crosses into the next file (the writer rolled over): the files'
    records end to end, without the second file's header, plan as the Python path reads
    them, and the last change's position is in the second file."""
    rng = random.Random(12)
    prefix = str(tmp_path / "aa")
    with TrailWriter(prefix, megabytes=1, fsync=False) as w:
        for txn in workload(rng, 3000):
            w.write_transaction(txn, DEFS)
    upper, _, _ = scan_boundary(prefix, TrailPosition(0, 0), limit=TrailPosition(1, 200_000))
    assert upper.seqno == 1
    lower, _, _ = scan_boundary(prefix, TrailPosition(0, 0), max_records=2000)
    assert lower.seqno == 0
    want, got = both(prefix, lower, upper, ROUTER)
    assert got is not None and got == want
    planned = plan_range(mapper(), prefix, lower, upper, ROUTER)
    assert planned is not None
    span, segments = planned
    assert [s.seqno for s in segments] == [0, 1]
    task = read_task_rows(prefix, lower, upper, ROUTER)
    last = max(tc.position for tc in task.changes[0])
    from trailgate.replicat.range_apply import _position
    assert _position(segments, span.last_kept) == last


def test_a_file_cut_short_before_the_next_goes_to_python(tmp_path: Path) -> None:
    """A writer that crashed left half a record at the end of a file: the reader skips it
    with a warning; the span path leaves such a range to the reader."""
    rng = random.Random(13)
    prefix = str(tmp_path / "aa")
    with TrailWriter(prefix, megabytes=1, fsync=False) as w:
        for txn in workload(rng, 3000):
            w.write_transaction(txn, DEFS)
    first = Path(prefix + "000000000")
    # the crash's cut: the first half of a record (a copy of the file's last one), not bytes
    # that cannot begin a record (those are a damaged length: an error, test_trail_damaged_length)
    from trailgate.trail.reader import TrailReader
    last = [pos.rba for pos, _ in TrailReader(prefix).raw_records() if pos.seqno == 0][-1]
    data = first.read_bytes()
    first.write_bytes(data + data[last:last + (len(data) - last) // 2])
    upper, _, _ = scan_boundary(prefix, TrailPosition(0, 0), limit=TrailPosition(1, 200_000))
    lower, _, _ = scan_boundary(prefix, TrailPosition(0, 0), max_records=2000)
    assert plan_range(mapper(), prefix, lower, upper, ROUTER) is None


def test_a_transaction_left_open_by_a_crash_goes_to_python(tmp_path: Path) -> None:
    """A crashed writer's last transaction has no end; its rewrite starts anew after it.
    The C planner meets a start inside an open transaction and gives the span back."""
    from trailgate.apply.spanplan import plan_span
    from trailgate.trail.header import decode_file_header

    first, again = ([Change(INS, "public.notes", {0: str(k).encode(), 1: b"x"}) for k in keys]
                    for keys in (range(3), range(3, 6)))
    trail = write(tmp_path, [change_txn(*first), change_txn(*again)])
    data = Path(trail + "000000000").read_bytes()
    pos = decode_file_header(data[:0xFFFF]).length
    records = []
    while pos < len(data):
        length = (data[pos + 2] << 8) | data[pos + 3]
        records.append(data[pos:pos + length])
        pos += length
    assert len(records) == 1 + 3 + 3  # a definition, then two transactions of three
    cut = b"".join(records[:3] + records[4:])  # the first transaction loses its last record
    m = mapper()

    def resolve(name: str) -> object:
        mapping = m.mapping(name, DEFS[name])
        return (mapping, table_spec(0, mapping, DEFS[name]))

    assert plan_span(b"".join(records), 0, len(b"".join(records)), resolve,
                     lambda blob: True) is not None
    assert plan_span(cut, 0, len(cut), resolve, lambda blob: True) is None


@pytest.mark.parametrize("seed", range(3))
def test_damaged_spans_are_planned_or_given_back(tmp_path: Path, monkeypatch, seed: int
                                                 ) -> None:
    """Malformed trail bytes reach the planner whole (a range's span, read as the Replicat
    reads it, then damaged at record starts: bytes set, lengths made 0 or huge, cut,
    spliced): it plans them or gives them back (None), never raises; each span is a bytes
    object of its own size, so a read past its end is a read past the buffer (which the
    sanitizer run, tests/integration/test_sanitizers.py, reports)."""
    from trailgate.replicat import range_apply
    from trailgate.trail.records import decode_record

    rng = random.Random(seed)
    trail = write(tmp_path, workload(rng, 40))
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    read = range_apply.read_span(trail, TrailPosition(0, 0), upper)
    assert read is not None
    data, segments = read
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += decode_record(data, pos, len(data)).length
    planned_count = 0
    for _ in range(150):
        blob = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            at = min(len(blob) - 1, rng.choice(starts) + rng.randrange(-2, 40))
            how = rng.randrange(5)
            if how == 0:
                blob[at] = rng.randrange(256)
            elif how == 1:  # a length (sub-record or record) 0 or huge
                blob[at:at + 2] = rng.choice([b"\x00\x00", b"\xff\xff", b"\x7f\xff"])
            elif how == 2:
                del blob[at:at + rng.randrange(1, 60)]
            elif how == 3:
                blob[at:at] = data[rng.choice(starts):][:rng.randrange(1, 80)]
            else:
                del blob[at:]
                break
        damaged = bytes(blob)
        monkeypatch.setattr(range_apply, "read_span", lambda *_, d=damaged: (d, segments))
        planned = plan_range(mapper(), trail, TrailPosition(0, 0), upper, ROUTER)
        planned_count += planned is not None
    assert 0 < planned_count < 150  # the damage reaches both: planned spans and given back


def _read_text_array(data: bytes) -> list[str | None]:
    """A binary one-dimensional text[] (PostgreSQL's array_recv form) read back."""
    import struct

    ndim, _, oid, length, lower = struct.unpack_from("!iiiii", data)
    assert (ndim, oid, lower) == (1, 25, 1)
    out: list[str | None] = []
    pos = 20
    for _ in range(length):
        (n,) = struct.unpack_from("!i", data, pos)
        pos += 4
        if n < 0:
            out.append(None)
            continue
        out.append(data[pos:pos + n].decode("utf-8"))
        pos += n
    assert pos == len(data)
    return out


def test_copy_columns_give_back_what_copy_text_says() -> None:
    """COPY rows (written with the escaping COPY reads) become one text[]
    per column holding the same values, NULLs included; anything else in the buffer is a
    ValueError naming it, never a crash or a read past the end."""
    from trailgate.apply.spanplan import copy_columns

    rng = random.Random(7)
    pieces = ["a", "\t", "\n", "\\", "\\N", "N", "\r", "\b", "\f", "\v", "é", "☃", " ", ""]
    rows = [tuple(None if rng.random() < 0.2 else
                  "".join(rng.choice(pieces) for _ in range(rng.randrange(5)))
                  for _ in range(3)) for _ in range(300)]

    def escape(v: str | None) -> str:
        if v is None:
            return "\\N"
        table = {"\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
                 "\f": "\\f", "\r": "\\r"}
        return "".join(table.get(ch, ch) for ch in v)

    data = "".join("\t".join(escape(v) for v in row) + "\n" for row in rows).encode()
    columns = copy_columns(CopyRows(data, len(rows)), 3)
    assert [_read_text_array(c) for c in columns] == [list(c) for c in zip(*rows, strict=True)]
    from trailgate.apply import _spanplan  # type: ignore[attr-defined]

    for bad, width, n in [(b"1\n", 2, 1), (b"1\t2\t3\n", 2, 1), (b"1\t2", 2, 1),
                          (b"1\t2\\\n", 2, 1), (b"1\t\\x41\n", 2, 1), (b"1\t2\n", 2, 2),
                          (b"1\t2\n3\t4\n", 2, 1), (b"1\t\\N2\n", 2, 1), (b"", 0, 0),
                          (b"", 2, -1)]:
        with pytest.raises(ValueError):
            _spanplan.copy_columns(bad, width, n)
    for _ in range(300):  # random damage: a ValueError or columns, never a crash
        cut = bytearray(data[:rng.randrange(len(data))])
        for _ in range(3):
            if cut:
                cut[rng.randrange(len(cut))] = rng.choice(b"\t\n\\Nx0a")
        with contextlib.suppress(ValueError):
            _spanplan.copy_columns(bytes(cut), 3, rng.randrange(300))
