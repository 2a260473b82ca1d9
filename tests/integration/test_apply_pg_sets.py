"""BATCHSQL's set-based apply against real PostgreSQL: the same end state, counts, errors and
discard entries as applying one change at a time, for chains of changes to one key in a
batch, key changes, collisions (which fall back to one at a time) and tables without a key.

Each test applies one batch twice, into ``seq.orders`` one change at a time (no BATCHSQL) and
into ``sets.orders`` with BATCHSQL, and compares."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_apply_pg import CKPT, DEFS, Trail, applier, params, rows, setup

from trailgate.apply import CollisionError, DiscardWriter, TrailChange, pg_sets
from trailgate.model import OpType

pytestmark = pytest.mark.postgres

DDL = """CREATE SCHEMA seq; CREATE SCHEMA sets;
CREATE TABLE seq.orders (id int PRIMARY KEY, name text, qty int);
CREATE TABLE sets.orders (id int PRIMARY KEY, name text, qty int);"""
INS, U, D, PK = OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE, OpType.PK_UPDATE


def both(pg_db: str, changes: list[TrailChange], *, head: str = "",
         seed: str = "", dsc: Path | None = None) -> tuple[Any, Any, Any]:
    """Apply ``changes`` one at a time into seq.orders and set-based into sets.orders;
    returns (one-at-a-time result, set-based result, the set-based applier)."""
    conn = psycopg.connect(pg_db, autocommit=True)
    for schema in ("seq", "sets"):
        conn.execute(f"TRUNCATE {schema}.orders")
        if seed:
            conn.execute(seed.replace("{s}", schema))
    out = []
    for schema, batchsql in (("seq", False), ("sets", True)):
        p = params(f"MAP public.orders, TARGET {schema}.orders;", head=head)
        discard = DiscardWriter(dsc.with_suffix(f".{schema}")) if dsc else None
        with applier(pg_db, p, batchsql=batchsql, group=schema, discard=discard) as a:
            out.append(a.apply_partition(1, 0, changes, DEFS))
            out.append(a)
    return out[0], out[2], out[3]


def same_tables(pg_db: str) -> list[tuple[Any, ...]]:
    conn = psycopg.connect(pg_db, autocommit=True)
    a = rows(conn, "SELECT * FROM seq.orders ORDER BY id")
    b = rows(conn, "SELECT * FROM sets.orders ORDER BY id")
    assert a == b
    return a


def counts(result: Any) -> dict[str, tuple[int, ...]]:
    return {name.split(".")[1]: tuple(c.as_dict().values()) for name, c in result.counts.items()}


def test_key_chains_in_one_batch(pg_db: str) -> None:
    setup(pg_db, DDL)
    t = Trail()
    o = "public.orders"
    changes = [
        t(INS, o, {0: b"1", 1: b"a", 2: b"1"}), t(U, o, {0: b"1", 2: b"2"}),
        t(U, o, {0: b"1", 1: None}),  # I U U: inserted as it ends
        t(U, o, {0: b"10", 1: b"x"}), t(U, o, {0: b"10", 2: b"9"}),  # U U of a seeded row
        t(INS, o, {0: b"3", 1: b"c"}), t(D, o, before={0: b"3"}),  # I D: nothing left
        t(D, o, before={0: b"11"}), t(INS, o, {0: b"11", 1: b"new"}),  # D I: replaced
        t(U, o, {0: b"12", 2: b"5"}), t(D, o, before={0: b"12"}),  # U D
        t(D, o, before={0: b"13"}), t(INS, o, {0: b"13", 1: b"r"}), t(U, o, {0: b"13", 2: b"4"}),
        t(D, o, before={0: b"13"}), t(INS, o, {0: b"13", 1: b"s"}),  # D I U D I
        *[t(INS, o, {0: str(k).encode(), 1: b"n", 2: b"0"}) for k in range(20, 40)],
    ]
    seq, sets, a = both(pg_db, changes,
                        seed="INSERT INTO {s}.orders VALUES (10,'t',1),(11,'u',2),(12,'v',3),"
                             "(13,'w',4)")
    assert (a.set_attempts, a.set_fallbacks) == (1, 0)
    assert counts(seq) == counts(sets)
    got = same_tables(pg_db)
    assert got[:5] == [(1, None, 2), (10, "x", 9), (11, "new", None), (13, "s", None),
                       (20, "n", 0)]
    assert len(got) == 24


def test_pk_update_then_update_of_the_new_key(pg_db: str) -> None:
    setup(pg_db, DDL)
    t = Trail()
    o = "public.orders"
    changes = [
        t(PK, o, {0: b"2", 2: b"20"}, {0: b"1"}),  # the seeded row 1 moves to 2
        t(U, o, {0: b"2", 1: b"moved"}),  # ... and is updated under its new key
        t(INS, o, {0: b"1", 1: b"reused"}),  # the old key is free again
        t(PK, o, {0: b"4"}, {0: b"3"}), t(PK, o, {0: b"5"}, {0: b"4"}),  # 3 -> 4 -> 5
        *[t(INS, o, {0: str(k).encode(), 1: b"n"}) for k in range(100, 110)],
        t(U, o, {0: b"100", 2: b"1"}),
    ]
    seq, sets, a = both(pg_db, changes,
                        seed="INSERT INTO {s}.orders VALUES (1,'one',1),(3,'three',3)")
    assert (a.set_attempts, a.set_fallbacks) == (1, 0)
    assert counts(seq) == counts(sets) == {"orders": (11, 5, 0, 0, 0, 0, 0, 0)}
    got = same_tables(pg_db)
    assert got[:3] == [(1, "reused", None), (2, "moved", 20), (5, "three", 3)]


def collision_batch(t: Trail) -> list[TrailChange]:
    o = "public.orders"
    return [*[t(INS, o, {0: str(k).encode(), 1: b"n"}) for k in range(20, 30)],
            t(INS, o, {0: b"1", 1: b"dup", 2: b"10"}),  # exists
            t(U, o, {0: b"9", 2: b"90"}),  # missing
            t(D, o, before={0: b"8"}),  # missing
            t(U, o, {0: b"2", 2: b"22"})]


SEED = "INSERT INTO {s}.orders VALUES (1, 'a', 1), (2, 'b', 2)"


def test_collision_without_handlecollisions_abends_with_the_same_message(pg_db: str) -> None:
    setup(pg_db, DDL)
    conn = psycopg.connect(pg_db, autocommit=True)
    conn.execute(SEED.replace("{s}", "sets"))
    t = Trail()
    p = params("MAP public.orders, TARGET sets.orders;")
    with applier(pg_db, p, batchsql=True) as a, pytest.raises(CollisionError) as err:
        a.apply_partition(1, 0, collision_batch(t), DEFS)
    assert (a.set_attempts, a.set_fallbacks) == (1, 1)
    msg = str(err.value)
    assert "error 23505" in msg and "sets.orders" in msg and "id = '1'" in msg
    assert "trail position 0:1100" in msg and "REPERROR ABEND" in msg
    assert rows(conn, "SELECT * FROM sets.orders ORDER BY id") == [(1, "a", 1), (2, "b", 2)]
    assert rows(conn, f"SELECT * FROM {CKPT}") == []


def test_handlecollisions_falls_back_to_one_at_a_time(pg_db: str) -> None:
    setup(pg_db, DDL)
    seq, sets, a = both(pg_db, collision_batch(Trail()), head="HANDLECOLLISIONS\n",
                        seed=SEED)
    assert (a.set_attempts, a.set_fallbacks) == (1, 1)
    assert counts(seq) == counts(sets) == {"orders": (11, 1, 0, 0, 0, 0, 3, 0)}
    assert same_tables(pg_db)[:3] == [(1, "dup", 10), (2, "b", 22), (20, "n", None)]


def test_reperror_discard_writes_the_same_entries(pg_db: str, tmp_path: Path) -> None:
    setup(pg_db, DDL)
    dsc = tmp_path / "rep.dsc"
    seq, sets, a = both(pg_db, collision_batch(Trail()), head="REPERROR (DEFAULT, DISCARD)\n",
                        seed=SEED, dsc=dsc)
    assert (a.set_attempts, a.set_fallbacks) == (1, 1)
    assert counts(seq) == counts(sets)
    assert sets.counts["sets.orders"].discards == 3
    same_tables(pg_db)

    def entries(suffix: str) -> list[str]:
        text = dsc.with_suffix(suffix).read_text().replace(f"{suffix[1:]}.orders", "T")
        return [line for line in text.splitlines() if not line.startswith("Current time")]
    assert entries(".seq") == entries(".sets") and len(entries(".sets")) > 20


def test_collision_among_ordered_changes_falls_back(pg_db: str) -> None:
    """A key change onto a key that exists: met in the ordered part of the attempt."""
    setup(pg_db, DDL)
    o = "public.orders"
    t = Trail()
    changes = [*[t(INS, o, {0: str(k).encode()}) for k in range(20, 30)],
               t(PK, o, {0: b"2"}, {0: b"1"})]
    conn = psycopg.connect(pg_db, autocommit=True)
    conn.execute(SEED.replace("{s}", "sets"))
    with applier(pg_db, params("MAP public.orders, TARGET sets.orders;"), batchsql=True) as a, \
            pytest.raises(CollisionError, match=r"error 23505 .* key id = '1', trail position "
                                                r"0:1100"):
        a.apply_partition(1, 0, changes, DEFS)
    assert (a.set_attempts, a.set_fallbacks) == (1, 1)
    changes[-1] = t(PK, o, {0: b"3"}, {0: b"7"})  # the old key does not exist
    seq, sets, a = both(pg_db, changes, head="HANDLECOLLISIONS\n", seed=SEED)
    assert (a.set_attempts, a.set_fallbacks) == (1, 1)
    assert counts(seq) == counts(sets)
    same_tables(pg_db)


def test_table_without_key_beside_a_keyed_one(pg_db: str) -> None:
    setup(pg_db, DDL + """CREATE TABLE seq.logs (a int, b text);
                          CREATE TABLE sets.logs (a int, b text);""")
    from test_apply_pg import tdef
    defs = DEFS | {"public.logs": tdef("public.logs", [("a", "integer"), ("b", "text")],
                                       ["a", "b"], "ALL")}
    t = Trail()
    changes = [t(INS, "public.logs", {0: b"1", 1: b"x"}), t(INS, "public.logs", {0: b"1", 1: b"x"}),
               *[t(INS, "public.orders", {0: str(k).encode()}) for k in range(10)],
               t(PK, "public.logs", {0: b"1", 1: b"y"}, {0: b"1", 1: b"x"}),
               t(D, "public.orders", before={0: b"3"})]
    conn = psycopg.connect(pg_db, autocommit=True)
    results = []
    for schema, batchsql in (("seq", False), ("sets", True)):
        p = params(f"MAP public.*, TARGET {schema}.*;")
        with applier(pg_db, p, batchsql=batchsql, group=schema) as a:
            results.append(a.apply_partition(1, 0, changes, defs))
    assert (a.set_attempts, a.set_fallbacks) == (1, 0)
    assert counts(results[0]) == counts(results[1])
    assert rows(conn, "SELECT * FROM sets.logs ORDER BY b") == [(1, "x"), (1, "y")]
    assert rows(conn, "SELECT * FROM seq.logs ORDER BY b") == [(1, "x"), (1, "y")]
    same_tables(pg_db)


@pytest.mark.parametrize("copied", [False, True], ids=["insert-arrays", "copy"])
def test_random_batches_match_one_at_a_time(pg_db: str, copied: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Random inserts, compressed updates, deletes and key changes over a few keys (so
    chains are long), with and without collisions; inserts sent as arrays in the pipeline
    (a batch's few) and by COPY (as many would be)."""
    if copied:
        monkeypatch.setattr(pg_sets, "INSERT_ARRAY_ROWS", 0)
    setup(pg_db, DDL)
    conn = psycopg.connect(pg_db, autocommit=True)
    rng = random.Random(4)
    o = "public.orders"
    attempts = 0
    for batch in range(6):
        t = Trail()
        t.rba = batch * 100_000
        state = {k: True for k in rng.sample(range(30), 12)}
        for schema in ("seq", "sets"):
            conn.execute(f"TRUNCATE {schema}.orders")
            for k in state:
                conn.execute(f"INSERT INTO {schema}.orders VALUES (%s, 's', 0)", (k,))
        changes = []
        for _ in range(200):
            k = rng.randrange(30)
            present = state.get(k, False)
            if batch % 3 == 2 and rng.random() < 0.02:  # a collision now and then
                present = not present
            v = {0: str(k).encode()}
            if rng.random() < 0.5:
                v[1] = rng.choice([b"a", b"b", None])
            if rng.random() < 0.5:
                v[2] = str(rng.randrange(100)).encode()
            if not present:
                changes.append(t(INS, o, v))
                state[k] = True
            elif rng.random() < 0.6:
                changes.append(t(U, o, v))
            elif rng.random() < 0.7:
                changes.append(t(D, o, before={0: v[0]}))
                state[k] = False
            else:
                free = [n for n in range(30) if not state.get(n)]
                if free:
                    n = rng.choice(free)
                    changes.append(t(PK, o, {0: str(n).encode(), 2: b"1"}, {0: v[0]}))
                    state[k], state[n] = False, True
        results = []
        for schema, batchsql in (("seq", False), ("sets", True)):
            p = params(f"MAP public.orders, TARGET {schema}.orders;", head="HANDLECOLLISIONS\n")
            with applier(pg_db, p, batchsql=batchsql, group=schema) as a:
                results.append(a.apply_partition(batch, 0, changes, DEFS))
        assert counts(results[0]) == counts(results[1]), batch
        same_tables(pg_db)
        if batch % 3 == 2:  # collisions: in a chain (no attempt) or at its start (fallback)
            assert a.set_fallbacks <= a.set_attempts <= 1
        else:
            assert (a.set_attempts, a.set_fallbacks) == (1, 0)
        attempts += a.set_attempts - a.set_fallbacks
    assert attempts >= 4


def test_without_batchsql_pipelined_then_a_savepoint_per_change(pg_db: str) -> None:
    """Without BATCHSQL the statements are those of one change at a time, sent pipelined;
    a collision sends the partition back to a savepoint per change, with the same result."""
    setup(pg_db, DDL)
    conn = psycopg.connect(pg_db, autocommit=True)
    conn.execute(SEED.replace("{s}", "seq"))
    t = Trail()
    o = "public.orders"
    clean = [t(INS, o, {0: b"5", 1: b"e"}), t(U, o, {0: b"5", 2: b"1"}),
             t(U, o, {0: b"1", 2: b"7"}), t(D, o, before={0: b"2"})]
    p = params("MAP public.orders, TARGET seq.orders;", head="HANDLECOLLISIONS\n")
    with applier(pg_db, p, batchsql=False) as a:
        res = a.apply_partition(1, 0, clean, DEFS)
        assert (a.pipelined_attempts, a.pipelined_fallbacks) == (1, 0)
        assert counts(res) == {"orders": (1, 2, 1, 0, 0, 0, 0, 0)}
        res = a.apply_partition(2, 0, collision_batch(t), DEFS)
        assert (a.pipelined_attempts, a.pipelined_fallbacks) == (2, 1)
    assert counts(res) == {"orders": (11, 0, 0, 0, 0, 0, 4, 0)}  # row 2 is gone too
    assert rows(conn, "SELECT * FROM seq.orders WHERE id < 20 ORDER BY id") == [
        (1, "dup", 10), (5, "e", 1)]


def test_joins_probe_the_target_index_for_this_transaction_only(pg_db: str) -> None:
    """The joins run with random_page_cost lowered by SET LOCAL: a few thousand keys sent
    against a large table are looked up in its index (not a hash of the whole table), and
    the session keeps its own setting afterwards; a server set lower keeps its value."""
    from psycopg import sql

    from trailgate.apply.pg_sets import JOIN_RANDOM_PAGE_COST, SetRunner, _arrays, _update

    setup(pg_db, "CREATE SCHEMA big; CREATE TABLE big.t (id int PRIMARY KEY, v text);"
                 "INSERT INTO big.t SELECT g, 'x' FROM generate_series(1, 200000) g;"
                 "ANALYZE big.t")
    conn = psycopg.connect(pg_db, autocommit=True)
    runner = SetRunner(conn)
    runner.prepare()
    assert runner.join_setting is not None
    sent = [(str(k), "y") for k in range(1, 200000, 100)]
    update = _update(sql.Identifier("big", "t"), ("id",), ("v",),
                     {"id": "integer", "v": "text"}, True)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(runner.join_setting)
        assert float(cur.execute("SHOW random_page_cost").fetchone()[0]) == \
            JOIN_RANDOM_PAGE_COST
        plan = "\n".join(r[0] for r in cur.execute(sql.SQL("EXPLAIN ") + update,
                                                    _arrays(sent, 2)))
        assert "Nested Loop" in plan and "Index Scan using t_pkey" in plan, plan
    assert conn.execute("SHOW random_page_cost").fetchone()[0] == "4"
    conn.execute("SET random_page_cost = 1")
    lower = SetRunner(conn)
    lower.prepare()
    assert lower.join_setting is None
