"""A batch applied from its trail bytes (``span_apply``, the C set planner) against real
PostgreSQL: the same end state and counts as the Python path, a replay skipped, and a
collision handing the batch back with nothing committed."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from test_apply_pg import CKPT, applier, params, rows, setup, tdef

from trailgate.apply import pg_sets
from trailgate.apply.spanplan import available
from trailgate.capture.postgres.types import classify, trail_from_pg_text
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.replicat.range_apply import apply_span
from trailgate.replicat.task_rows import read_task_rows
from trailgate.spark.trail_offsets import scan_boundary
from trailgate.trail.writer import TrailWriter

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not available, reason="the C set planner is not built")]

TYPES = [("id", "integer"), ("name", "text"), ("price", "numeric(12,2)"), ("flag", "boolean"),
         ("code", "character(4)"), ("blob", "bytea"), ("day", "date"),
         ("at", "timestamp without time zone"), ("atz", "timestamp with time zone"),
         ("doc", "jsonb")]
ITEMS = tdef("public.items", TYPES, ["id"])
COLS = ", ".join(f"{n} {t}" for n, t in TYPES[1:])
DDL = f"""CREATE SCHEMA fast; CREATE SCHEMA slow;
CREATE TABLE fast.items (id int PRIMARY KEY, {COLS});
CREATE TABLE slow.items (id int PRIMARY KEY, {COLS});"""
ROUTER = Router.of([("public.*", None)], [])
TEXTS = {"name": ["plain", "tab\there", "new\nline", "back\\slash", "ünï ☃", ""],
         "price": ["0.00", "-12.50", "99999.99"], "flag": ["t", "f"],
         "code": ["ab", "wxyz", "é"], "blob": ["\\x", "\\x00ff10", "\\x5c09"],
         "day": ["2024-02-29", "0001-01-01"],
         "at": ["2024-02-29 23:59:58.123456", "1999-01-01 00:00:00"],
         "atz": ["2024-02-29 23:59:58.5+00", "1999-01-01 00:00:00+00"],
         "doc": ['{"a": [1, 2]}', '"x"', "null"]}


def image(rng: random.Random, key: int, partial: bool = False) -> dict[int, bytes | None]:
    out: dict[int, bytes | None] = {0: str(key).encode()}
    for col in ITEMS.columns[1:]:
        if partial and rng.random() < 0.5:
            continue
        text = None if rng.random() < 0.15 else rng.choice(TEXTS[col.name])
        out[col.index] = (None if text is None
                          else trail_from_pg_text(text, classify(col.source_type)))
    return out


def workload(seed: int, txns: int, keys: int = 60) -> list[Transaction]:
    rng = random.Random(seed)
    present: dict[int, bool] = {}
    out = []
    for n in range(txns):
        changes = []
        for _ in range(rng.randrange(1, 10)):
            k = rng.randrange(keys)
            if not present.get(k):
                changes.append(Change(OpType.INSERT, "public.items", image(rng, k)))
                present[k] = True
            elif rng.random() < 0.6:
                op = rng.choice([OpType.UPDATE, OpType.FIELD_COMP])
                changes.append(Change(op, "public.items", image(rng, k, op is OpType.FIELD_COMP)))
            else:
                changes.append(Change(OpType.DELETE, "public.items", None, {0: str(k).encode()}))
                present[k] = False
        out.append(Transaction(f"0.{n}.3", 500 + n, changes, 2_460_000_000_000_000 + n))
    return out


def write(path: Path, txns: list[Transaction]) -> str:
    prefix = str(path / "it")
    with TrailWriter(prefix, fsync=False) as w:
        for txn in txns:
            w.write_transaction(txn, {"public.items": ITEMS})
    return prefix


def both_ways(pg_db: str, trail: str, lower: TrailPosition, upper: TrailPosition,
              batch: int, head: str = "") -> tuple[Any, Any]:
    """The range applied from its bytes into fast.items and the Python way into slow.items."""
    with applier(pg_db, params("MAP public.items, TARGET fast.items;", "BATCHSQL\n" + head),
                 group="fast") as a:
        done = apply_span(a, batch, trail, lower, upper, ROUTER)
    task = read_task_rows(trail, lower, upper, ROUTER)
    changes = task.changes.get(0, [])
    with applier(pg_db, params("MAP public.items, TARGET slow.items;", "BATCHSQL\n" + head),
                 group="slow") as a:
        want = a.apply_partition(batch, 0, changes, task.definitions.for_changes(changes))
    return done, (want, task.positions[0])


def counts(result: Any) -> dict[str, tuple[int, ...]]:
    return {name.split(".")[1]: tuple(c.as_dict().values()) for name, c in result.counts.items()}


def _every_batch_both_ways(pg_db: str, conn: Any, trail: str, what: str) -> int:
    """Each batch of up to 300 records of ``trail`` applied both ways (``both_ways``): the
    C planner takes it, with the Python path's counts, position and rows; the batches."""
    lower, batch = TrailPosition(0, 0), 0
    while True:
        upper, _, _ = scan_boundary(trail, lower, max_records=300)
        if upper == lower:
            return batch
        done, (want, position) = both_ways(pg_db, trail, lower, upper, batch)
        assert done is not None, f"{what} went the Python way"
        result, got_position = done
        assert got_position == position
        assert result is not None and counts(result) == counts(want)
        assert (rows(conn, "SELECT * FROM fast.items ORDER BY id")
                == rows(conn, "SELECT * FROM slow.items ORDER BY id"))
        lower, batch = upper, batch + 1


@pytest.mark.parametrize("copied", [False, True], ids=["insert-arrays", "copy"])
def test_random_batches_equal_the_python_path(pg_db: str, tmp_path: Path, copied: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Inserts sent as arrays in the step's pipeline (a few) and by COPY (many)."""
    if copied:
        monkeypatch.setattr(pg_sets, "INSERT_ARRAY_ROWS", 0)
    conn = setup(pg_db, DDL)
    trail = write(tmp_path, workload(11, 400))
    batch = _every_batch_both_ways(pg_db, conn, trail, "a plain batch")
    assert batch >= 3
    n = rows(conn, f"SELECT count(*) FROM {CKPT} WHERE group_name = 'FAST'")[0][0]
    assert n == batch


def test_an_encrypted_trail_is_applied_from_its_opened_bytes(pg_db: str,
                                                             tmp_path: Path) -> None:
    """ENCRYPTTRAIL: the range's records are opened (same length, same offsets) and the C
    planner applies them: the same end state as the Python path, no batch handed back."""
    from trailgate.trail.keys import ENCKEYS_FILE, add_key

    conn = setup(pg_db, DDL)
    add_key(tmp_path / ENCKEYS_FILE, "SPAN")
    prefix = tmp_path / "dirdat" / "it"
    with TrailWriter(prefix, fsync=False, encrypt="AES256", key_name="SPAN") as w:
        for txn in workload(13, 120):
            w.write_transaction(txn, {"public.items": ITEMS})
    batch = _every_batch_both_ways(pg_db, conn, str(prefix), "an encrypted batch")
    assert batch >= 2


def test_replay_is_skipped(pg_db: str, tmp_path: Path) -> None:
    conn = setup(pg_db, DDL)
    trail = write(tmp_path, workload(5, 50))
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    p = params("MAP public.items, TARGET fast.items;", "BATCHSQL\n")
    with applier(pg_db, p, group="fast") as a:
        first = apply_span(a, 7, trail, TrailPosition(0, 0), upper, ROUTER)
        before = rows(conn, "SELECT * FROM fast.items ORDER BY id")
        again = apply_span(a, 7, trail, TrailPosition(0, 0), upper, ROUTER)
    assert first is not None and first[0] is not None and not first[0].skipped
    assert again is not None and again[0] is not None and again[0].skipped
    assert rows(conn, "SELECT * FROM fast.items ORDER BY id") == before


def test_a_collision_hands_the_batch_back_with_nothing_committed(pg_db: str,
                                                                 tmp_path: Path) -> None:
    conn = setup(pg_db, DDL)
    txns = [Transaction("0.1.1", 9, [Change(OpType.INSERT, "public.items",
                                            {0: str(k).encode(), 1: b"new"}) for k in range(20)],
                        2_460_000_000_000_001)]
    trail = write(tmp_path, txns)
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    conn.execute("INSERT INTO fast.items (id, name) VALUES (13, 'old')")
    p = params("MAP public.items, TARGET fast.items;", "BATCHSQL\nHANDLECOLLISIONS\n")
    with applier(pg_db, p, group="fast") as a:
        assert apply_span(a, 1, trail, TrailPosition(0, 0), upper, ROUTER) is None
        assert rows(conn, "SELECT id, name FROM fast.items") == [(13, "old")]
        assert rows(conn, f"SELECT count(*) FROM {CKPT}") == [(0,)]
        # the Python path then applies it, HANDLECOLLISIONS turning the insert into an update
        task = read_task_rows(trail, TrailPosition(0, 0), upper, ROUTER)
        result = a.apply_partition(1, 0, task.changes[0],
                                   task.definitions.for_changes(task.changes[0]))
    assert result.counts["fast.items"].collisions == 1
    assert rows(conn, "SELECT count(*), count(*) FILTER (WHERE name = 'new') FROM fast.items"
                ) == [(20, 20)]


def test_without_batchsql_the_python_path_applies(pg_db: str, tmp_path: Path) -> None:
    setup(pg_db, DDL)
    trail = write(tmp_path, workload(2, 30))
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    with applier(pg_db, params("MAP public.items, TARGET fast.items;"), group="fast") as a:
        assert apply_span(a, 1, trail, TrailPosition(0, 0), upper, ROUTER) is None


ROWS_DDL = """CREATE SCHEMA live;
CREATE TABLE live.rows (id int PRIMARY KEY, name text, qty int, price numeric(8,2));
CREATE TABLE live.loose (n int, label text, v int);"""
ROWS = tdef("public.rows", [("id", "integer"), ("name", "text"), ("qty", "integer"),
                            ("price", "numeric(8,2)")], ["id"])
LOOSE = tdef("public.loose", [("n", "integer"), ("label", "text"), ("v", "integer")], ["n"])


def mixed_steps(rng: random.Random, txns: int, keys: int
                ) -> tuple[list[Transaction], list[dict[str, dict[int, tuple[Any, ...]]]]]:
    """Random transactions of inserts, full and partial updates (NULLs among the values,
    the same key changed several times), deletes and now and then a key change, over two
    tables; and after each transaction what the source holds (the model)."""
    model: dict[str, dict[int, tuple[Any, ...]]] = {"rows": {}, "loose": {}}
    out, states = [], []
    for n in range(txns):
        changes = []
        for _ in range(rng.randrange(1, 12)):
            table = "rows" if rng.random() < 0.75 else "loose"
            rows_ = model[table]
            k = rng.randrange(keys)
            width = 4 if table == "rows" else 3
            new = tuple([k] + [rng.choice([None, "a", "b\tc", "ü"]) if i == 1 else
                               rng.choice([None, 1, 7, 42]) if i == 2 else
                               rng.choice([None, "1.50", "-2.25"])
                               for i in range(1, width)])
            name = f"public.{table}"
            if k not in rows_:
                changes.append(Change(OpType.INSERT, name, _image(new)))
                rows_[k] = new
            elif table == "rows" and n % 25 == 24 and rng.random() < 0.2:  # a key change
                free = [m for m in range(keys) if m not in rows_]
                if not free:
                    continue
                m = rng.choice(free)
                changes.append(Change(OpType.PK_UPDATE, name, {0: str(m).encode(), 2: b"9"},
                                      {0: str(k).encode()}))
                old = rows_.pop(k)
                rows_[m] = (m, old[1], 9, old[3])
            elif rng.random() < 0.7:
                partial = rng.random() < 0.5
                image = {i: v for i, v in _image(new).items()
                         if i == 0 or not partial or rng.random() < 0.5}
                changes.append(Change(OpType.FIELD_COMP, name, image))
                rows_[k] = tuple(new[i] if i in image else rows_[k][i] for i in range(width))
            else:
                changes.append(Change(OpType.DELETE, name, None, {0: str(k).encode()}))
                del rows_[k]
        out.append(Transaction(f"0.{n}.5", 900 + n, changes, 2_460_000_000_000_000 + n))
        states.append({t: dict(r) for t, r in model.items()})
    return out, states


def _image(row: tuple[Any, ...]) -> dict[int, bytes | None]:
    return {i: None if v is None else str(v).encode() for i, v in enumerate(row)}


@pytest.mark.parametrize("way", ["one-sync", "begin-commit", "copying"])
def test_streamed_steps_of_random_changes_leave_the_source_state(
        pg_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str) -> None:
    """The stream apply's steps (``apply_range`` with the checkpoint row moved) over random
    inserts, full and partial updates, NULLs, deletes, repeated changes of one key within a
    step and key changes, into a table with a primary key and one located by KEYCOLS
    without one (each statement's rows then counted one by one): after every step the
    target holds what the source held at that point, and the row says where the step
    ended — sent as one synced pipeline whose statements check their rows in the server,
    or (steps too large for that) between BEGIN and COMMIT with the client's checks, or
    (every insert by COPY) as simple queries holding the COPYs and pipelines holding the
    other statements, checked in the server too."""
    from trailgate.apply import postgres
    from trailgate.apply.checkpoint_table import STREAM_BATCH
    from trailgate.replicat.range_apply import apply_range

    synced = way == "one-sync"
    if way == "begin-commit":
        monkeypatch.setattr(postgres, "SYNCED_ROWS", 0)
    if way == "copying":
        monkeypatch.setattr(pg_sets, "INSERT_ARRAY_ROWS", 0)
    synced_runs, copying_runs = [], []
    run_synced, run_copying = pg_sets.SetRunner.run_synced, pg_sets.SetRunner.run_copying

    def counted(self: pg_sets.SetRunner, *args: Any) -> None:
        synced_runs.append(1)
        run_synced(self, *args)

    def copying(self: pg_sets.SetRunner, *args: Any) -> None:
        copying_runs.append(1)
        run_copying(self, *args)

    monkeypatch.setattr(pg_sets.SetRunner, "run_synced", counted)
    monkeypatch.setattr(pg_sets.SetRunner, "run_copying", copying)
    conn = setup(pg_db, ROWS_DDL)
    rng = random.Random(19)
    txns, states = mixed_steps(rng, 200, 25)
    prefix = str(tmp_path / "mx")
    with TrailWriter(prefix, fsync=False) as w:
        ends = [w.write_transaction(txn, {"public.rows": ROWS, "public.loose": LOOSE})
                for txn in txns]
    router = Router.of([("public.*", None)], [])
    p = params("MAP public.rows, TARGET live.rows;\n"
               "MAP public.loose, TARGET live.loose, KEYCOLS (n);", "BATCHSQL\n")
    lower, recorded, steps, from_bytes = TrailPosition(0, 0), "", 0, 0
    with applier(pg_db, p, group="live") as a:
        while True:
            upper, _, _ = scan_boundary(prefix, lower, max_records=rng.choice([12, 40, 150]))
            if upper == lower:
                break
            done = apply_span(a, STREAM_BATCH, prefix, lower, upper, router,
                              advance=(recorded, str(upper)))
            if done is None:
                apply_range(a, STREAM_BATCH, prefix, lower, upper, router,
                            advance=(recorded, str(upper)))
            else:
                from_bytes += 1
            recorded, lower, steps = str(upper), upper, steps + 1
            want = states[ends.index(upper)]  # steps end where transactions do
            got_rows = {r[0]: (r[0], r[1], r[2], None if r[3] is None else str(r[3]))
                        for r in rows(conn, "SELECT * FROM live.rows")}
            got_loose = {r[0]: r for r in rows(conn, "SELECT * FROM live.loose")}
            assert got_rows == want["rows"], steps
            assert got_loose == want["loose"], steps
            assert rows(conn, f"SELECT position FROM {CKPT} WHERE group_name = 'LIVE'") == [
                (recorded,)]
    assert steps >= 10 and from_bytes >= steps // 2, (steps, from_bytes)
    if way == "copying":
        assert len(copying_runs) >= from_bytes // 2 and len(synced_runs) + len(
            copying_runs) >= from_bytes, (copying_runs, synced_runs, from_bytes)
    else:
        assert (len(synced_runs) >= from_bytes) if synced else not synced_runs
    assert a.set_fallbacks == 0
    assert rows(conn, f"SELECT position FROM {CKPT} WHERE group_name = 'LIVE'") == [
        (recorded,)]


def test_a_step_of_updates_goes_out_pipelined_and_a_replay_is_skipped(pg_db: str,
                                                                    tmp_path: Path) -> None:
    """Updates only (no COPY): the whole attempt is one pipeline — the checkpoint row, the
    set statement, one Sync — and still exactly once: the same batch again is skipped and
    changes nothing; a row that fails to match, or a statement that fails, rolls back
    everything, the checkpoint row included, and the session goes on."""
    conn = setup(pg_db, DDL)
    conn.execute("INSERT INTO fast.items (id, name) SELECT g, 'old' FROM generate_series(0, 39) g")
    txns = [Transaction("0.1.1", 9, [Change(OpType.FIELD_COMP, "public.items",
                                            {0: str(k).encode(), 1: b"new"})
                                     for k in range(40)], 2_460_000_000_000_001)]
    trail = write(tmp_path, txns)
    upper, _, _ = scan_boundary(trail, TrailPosition(0, 0))
    p = params("MAP public.items, TARGET fast.items;", "BATCHSQL\n")
    with applier(pg_db, p, group="fast") as a:
        first = apply_span(a, 3, trail, TrailPosition(0, 0), upper, ROUTER)
        conn.execute("UPDATE fast.items SET name = 'later' WHERE id = 5")
        again = apply_span(a, 3, trail, TrailPosition(0, 0), upper, ROUTER)
        assert (a.set_attempts, a.set_fallbacks) == (2, 0)
        conn.execute("DELETE FROM fast.items WHERE id = 7")
        assert apply_span(a, 4, trail, TrailPosition(0, 0), upper, ROUTER) is None
        conn.execute("INSERT INTO fast.items (id, name) VALUES (7, 'back')")
        conn.execute("ALTER TABLE fast.items ADD CONSTRAINT not_new "
                     "CHECK (id <> 7 OR name <> 'new')")
        assert apply_span(a, 5, trail, TrailPosition(0, 0), upper, ROUTER) is None  # an error
        conn.execute("ALTER TABLE fast.items DROP CONSTRAINT not_new")
        done = apply_span(a, 6, trail, TrailPosition(0, 0), upper, ROUTER)  # the same session
        assert (a.set_attempts, a.set_fallbacks) == (5, 2)
    assert done is not None and done[0] is not None and not done[0].skipped
    assert first is not None and first[0] is not None and not first[0].skipped
    assert first[0].counts["fast.items"].updates == 40
    assert again is not None and again[0] is not None and again[0].skipped
    assert rows(conn, "SELECT name, count(*) FROM fast.items GROUP BY name ORDER BY name") == [
        ("new", 40)]
    assert rows(conn, f"SELECT batch_id FROM {CKPT} ORDER BY 1") == [(3,), (6,)]


def test_a_synced_step_that_fails_anywhere_commits_nothing(pg_db: str, tmp_path: Path) -> None:
    """A streamed step sent as one synced pipeline (its row's move first, the set statement
    after it): a row the step does not find, a statement the target refuses, or the row
    moved by another process each leave the target and the row as they were, though the
    row's move ran before the failure; the same session then applies the step."""
    from trailgate.apply.checkpoint_table import STREAM_BATCH
    from trailgate.errors import TargetError

    conn = setup(pg_db, DDL)
    conn.execute("INSERT INTO fast.items (id, name) SELECT g, 'old' FROM generate_series(0, 9) g")
    txns = [Transaction(f"0.{n}.1", 9 + n, [Change(OpType.FIELD_COMP, "public.items",
                                                   {0: str(k).encode(), 1: f"v{n}".encode()})
                                            for k in range(10)], 2_460_000_000_000_001 + n)
            for n in range(2)]
    trail = write(tmp_path, txns)
    first, _, _ = scan_boundary(trail, TrailPosition(0, 0), max_records=1)
    second, _, _ = scan_boundary(trail, first, max_records=1)
    p = params("MAP public.items, TARGET fast.items;", "BATCHSQL\n")

    def state() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        return (rows(conn, "SELECT name, count(*) FROM fast.items GROUP BY name"),
                rows(conn, f"SELECT position FROM {CKPT}"))

    with applier(pg_db, p, group="fast") as a:
        done = apply_span(a, STREAM_BATCH, trail, TrailPosition(0, 0), first, ROUTER,
                          advance=("", str(first)))
        assert done is not None and done[0] is not None
        step = (a, STREAM_BATCH, trail, first, second, ROUTER)
        advance = (str(first), str(second))
        applied = state()
        assert applied == ([("v0", 10)], [(str(first),)])
        conn.execute("DELETE FROM fast.items WHERE id = 4")  # a row the step updates
        assert apply_span(*step, advance=advance) is None
        assert state() == ([("v0", 9)], [(str(first),)])
        conn.execute("INSERT INTO fast.items (id, name) VALUES (4, 'v0')")
        conn.execute("ALTER TABLE fast.items ADD CONSTRAINT no_v1 CHECK (name <> 'v1')")
        assert apply_span(*step, advance=advance) is None  # the target refuses it
        assert state() == applied
        conn.execute("ALTER TABLE fast.items DROP CONSTRAINT no_v1")
        conn.execute(f"UPDATE {CKPT} SET position = 'elsewhere'")
        with pytest.raises(TargetError, match="another process applies for this group"):
            apply_span(*step, advance=advance)
        assert state() == ([("v0", 10)], [("elsewhere",)])
        conn.execute(f"UPDATE {CKPT} SET position = %s", (str(first),))
        done = apply_span(*step, advance=advance)
        assert (a.set_attempts, a.set_fallbacks) == (5, 2)
    assert done is not None and done[0] is not None
    assert done[0].counts["fast.items"].updates == 10
    assert state() == ([("v1", 10)], [(str(second),)])


def test_a_copying_step_that_fails_anywhere_commits_nothing(
        pg_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A streamed step whose inserts go by COPY (the row's move and the COPY in one simple
    query, the updates after it in a pipeline with the COMMIT): a key the COPY meets, a row
    an update does not find, or the row moved by another process each leave the target
    and the row as they were; the same session then applies the step, and a batch of only
    inserts (one simple query) applied again is skipped."""
    from trailgate.apply.checkpoint_table import STREAM_BATCH
    from trailgate.errors import TargetError

    monkeypatch.setattr(pg_sets, "INSERT_ARRAY_ROWS", 0)
    queries = []
    run_query = pg_sets.run_query

    def counted(conn: Any, parts: Any) -> None:
        queries.append(len(parts))
        run_query(conn, parts)

    monkeypatch.setattr(pg_sets, "run_query", counted)
    conn = setup(pg_db, DDL)
    conn.execute("INSERT INTO fast.items (id, name) SELECT g, 'old' FROM generate_series(0, 9) g")
    inserts = [Change(OpType.INSERT, "public.items", {0: str(k).encode(), 1: b"new"})
               for k in range(100, 120)]
    updates = [Change(OpType.FIELD_COMP, "public.items", {0: str(k).encode(), 1: b"v1"})
               for k in range(10)]
    trail = write(tmp_path, [
        Transaction("0.1.1", 9, inserts[:10], 2_460_000_000_000_001),
        Transaction("0.2.1", 10, inserts[10:] + updates, 2_460_000_000_000_002)])
    first, _, _ = scan_boundary(trail, TrailPosition(0, 0), max_records=1)
    second, _, _ = scan_boundary(trail, first, max_records=1)
    p = params("MAP public.items, TARGET fast.items;", "BATCHSQL\n")

    def state() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        return (rows(conn, "SELECT name, count(*) FROM fast.items GROUP BY name ORDER BY 1"),
                rows(conn, f"SELECT position FROM {CKPT} WHERE batch_id = {STREAM_BATCH}"))

    with applier(pg_db, p, group="fast") as a:
        done = apply_span(a, STREAM_BATCH, trail, TrailPosition(0, 0), first, ROUTER,
                          advance=("", str(first)))
        assert done is not None and done[0] is not None
        assert done[0].counts["fast.items"].inserts == 10
        assert queries == [4]  # BEGIN, the row, the COPY, COMMIT: one round trip
        applied = state()
        assert applied == ([("new", 10), ("old", 10)], [(str(first),)])
        step = (a, STREAM_BATCH, trail, first, second, ROUTER)
        advance = (str(first), str(second))
        conn.execute("INSERT INTO fast.items (id, name) VALUES (115, 'there')")
        assert apply_span(*step, advance=advance) is None  # the COPY meets a key
        conn.execute("DELETE FROM fast.items WHERE id = 115")
        assert state() == applied
        conn.execute("DELETE FROM fast.items WHERE id = 4")  # a row the step updates
        assert apply_span(*step, advance=advance) is None
        assert state() == ([("new", 10), ("old", 9)], [(str(first),)])
        conn.execute("INSERT INTO fast.items (id, name) VALUES (4, 'old')")
        conn.execute(f"UPDATE {CKPT} SET position = 'elsewhere'")
        with pytest.raises(TargetError, match="another process applies for this group"):
            apply_span(*step, advance=advance)
        assert state() == ([("new", 10), ("old", 10)], [("elsewhere",)])
        conn.execute(f"UPDATE {CKPT} SET position = %s", (str(first),))
        done = apply_span(*step, advance=advance)
        assert (a.set_attempts, a.set_fallbacks) == (5, 2)
        assert done is not None and done[0] is not None
        assert done[0].counts["fast.items"].inserts == 10
        assert done[0].counts["fast.items"].updates == 10
        assert state() == ([("new", 20), ("v1", 10)], [(str(second),)])
    with applier(pg_db, params("MAP public.items, TARGET slow.items;", "BATCHSQL\n"),
                 group="slow") as a:
        again = [apply_span(a, 8, trail, TrailPosition(0, 0), first, ROUTER) for _ in "ab"]
    assert again[0] is not None and again[0][0] is not None and not again[0][0].skipped
    assert again[1] is not None and again[1][0] is not None and again[1][0].skipped
    assert rows(conn, "SELECT count(*) FROM slow.items") == [(10,)]
