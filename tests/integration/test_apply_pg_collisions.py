"""Collisions, REPERROR, the discard file and exactly-once replay against real PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_apply_pg import CKPT, DEFS, Trail, applier, params, rows, setup

from trailgate.apply import (
    CollisionError,
    DiscardWriter,
    PgApplier,
    partition_key,
    requires_single_partition,
    split_partitions,
)
from trailgate.errors import TargetError
from trailgate.model import OpType

pytestmark = pytest.mark.postgres

ORDERS_DDL = "CREATE TABLE orders (id int PRIMARY KEY, name text, qty int)"
MAP = "MAP public.orders, TARGET public.orders;"


def seed(conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO orders VALUES (1, 'a', 1), (2, 'b', 2)")


def collision_batch(t: Trail) -> list[Any]:
    return [
        t(OpType.INSERT, "public.orders", {0: b"1", 1: b"dup", 2: b"10"}),  # exists
        t(OpType.FIELD_COMP, "public.orders", {0: b"9", 2: b"90"}),  # missing
        t(OpType.DELETE, "public.orders", before={0: b"8"}),  # missing
        t(OpType.PK_UPDATE, "public.orders", {0: b"6", 2: b"60"}, {0: b"7"}),  # missing
        t(OpType.INSERT, "public.orders", {0: b"3", 1: b"c", 2: b"3"}),
        t(OpType.FIELD_COMP, "public.orders", {0: b"2", 2: b"22"}),
    ]


@pytest.mark.parametrize("batchsql", [False, True])
def test_handlecollisions(pg_db: str, batchsql: bool) -> None:
    conn = setup(pg_db, ORDERS_DDL)
    seed(conn)
    with applier(pg_db, params(MAP, head="HANDLECOLLISIONS\n"), batchsql=batchsql) as a:
        res = a.apply_partition(1, 0, collision_batch(Trail()), DEFS)
    assert rows(conn, "SELECT * FROM orders ORDER BY id") == [
        (1, "dup", 10), (2, "b", 22), (3, "c", 3)]
    c = res.counts["public.orders"]
    assert (c.inserts, c.updates, c.deletes, c.collisions, c.discards) == (2, 1, 0, 4, 0)


def test_handlecollisions_per_map_toggle(pg_db: str) -> None:
    conn = setup(pg_db, ORDERS_DDL + "; CREATE TABLE other (id int PRIMARY KEY)")
    seed(conn)
    conn.execute("INSERT INTO other VALUES (1)")
    p = params("HANDLECOLLISIONS\nMAP public.orders, TARGET public.orders;\n"
               "NOHANDLECOLLISIONS\nMAP public.other, TARGET public.other;\n")
    t = Trail()
    defs = DEFS | {"public.other": DEFS["public.orders"].__class__(
        "public", "other", DEFS["public.orders"].columns[:1], ["id"])}
    with applier(pg_db, p) as a:
        a.apply_partition(1, 0, [t(OpType.INSERT, "public.orders", {0: b"1", 1: b"x"})], defs)
        with pytest.raises(CollisionError) as err:
            a.apply_partition(2, 0, [t(OpType.INSERT, "public.other", {0: b"1"})], defs)
    assert "public.other" in str(err.value)


def test_abend_names_table_key_and_position(pg_db: str) -> None:
    conn = setup(pg_db, ORDERS_DDL)
    seed(conn)
    t = Trail()
    changes = [t(OpType.INSERT, "public.orders", {0: b"5", 1: b"e", 2: b"5"}),
               t(OpType.FIELD_COMP, "public.orders", {0: b"9", 2: b"90"})]
    with applier(pg_db, params(MAP)) as a, pytest.raises(CollisionError) as err:
        a.apply_partition(1, 0, changes, DEFS)
    msg = str(err.value)
    assert "public.orders" in msg and "id = '9'" in msg
    assert "trail position 0:200" in msg and "RBA 200" in msg and "does not exist" in msg
    assert "REPERROR ABEND" in msg
    # nothing of the partition was committed, not even its checkpoint row
    assert rows(conn, "SELECT id FROM orders ORDER BY id") == [(1,), (2,)]
    assert rows(conn, f"SELECT * FROM {CKPT}") == []


@pytest.mark.parametrize("batchsql", [False, True])
def test_duplicate_insert_abends_with_sqlstate(pg_db: str, batchsql: bool) -> None:
    conn = setup(pg_db, ORDERS_DDL)
    seed(conn)
    t = Trail()
    changes = [t(OpType.INSERT, "public.orders", {0: b"4", 1: b"d", 2: b"4"}),
               t(OpType.INSERT, "public.orders", {0: b"2", 1: b"dup", 2: b"0"}),
               t(OpType.INSERT, "public.orders", {0: b"5", 1: b"e", 2: b"5"})]
    with applier(pg_db, params(MAP), batchsql=batchsql) as a, \
            pytest.raises(CollisionError) as err:
        a.apply_partition(1, 0, changes, DEFS)
    assert "23505" in str(err.value) and "id = '2'" in str(err.value)
    assert "0:200" in str(err.value)
    assert rows(conn, "SELECT id FROM orders ORDER BY id") == [(1,), (2,)]


@pytest.mark.parametrize("batchsql", [False, True])
def test_reperror_discard_writes_discard_file(pg_db: str, tmp_path: Path,
                                              batchsql: bool) -> None:
    conn = setup(pg_db, ORDERS_DDL)
    seed(conn)
    dsc = tmp_path / "dirdsc" / "rep1.dsc"
    p = params(MAP, head="REPERROR (DEFAULT, DISCARD)\n")
    with applier(pg_db, p, batchsql=batchsql, discard=DiscardWriter(dsc)) as a:
        res = a.apply_partition(1, 0, collision_batch(Trail()), DEFS)
    assert rows(conn, "SELECT * FROM orders ORDER BY id") == [
        (1, "a", 1), (2, "b", 22), (3, "c", 3)]
    c = res.counts["public.orders"]
    assert (c.inserts, c.updates, c.discards) == (1, 1, 4)
    text = dsc.read_text()
    assert text.count("Discarded record from action DISCARD") == 4
    assert "on error 23505" in text and "on error -1403" in text
    assert "Problem replicating public.orders to public.orders" in text
    assert "Operation: Insert, trail position seqno 0, RBA 100" in text
    assert "  id = '9'" in text and "Operation: PKUpdate" in text
    assert text.rstrip().endswith("*")


def test_reperror_specific_error_and_ignore(pg_db: str, tmp_path: Path) -> None:
    conn = setup(pg_db, ORDERS_DDL + "; ALTER TABLE orders ADD CHECK (qty >= 0)")
    seed(conn)
    p = params(MAP, head="REPERROR (23514, DISCARD)\nREPERROR (-1403, IGNORE)\n")
    t = Trail()
    changes = [t(OpType.INSERT, "public.orders", {0: b"3", 1: b"neg", 2: b"-1"}),
               t(OpType.DELETE, "public.orders", before={0: b"42"}),
               t(OpType.INSERT, "public.orders", {0: b"4", 1: b"ok", 2: b"1"})]
    dsc = tmp_path / "x.dsc"
    with applier(pg_db, p, discard=DiscardWriter(dsc)) as a:
        res = a.apply_partition(1, 0, changes, DEFS)
    c = res.counts["public.orders"]
    assert (c.inserts, c.discards, c.ignores) == (1, 1, 1)
    assert "on error 23514" in dsc.read_text()
    assert rows(conn, "SELECT id FROM orders ORDER BY id") == [(1,), (2,), (4,)]
    # a type error the rules do not name: DEFAULT (ABEND)
    with applier(pg_db, p) as a, pytest.raises(CollisionError, match="22P02"):
        a.apply_partition(2, 0, [t(OpType.INSERT, "public.orders", {0: b"x"})], DEFS)


# -- exactly once ---------------------------------------------------------------------------

COUNTER_DDL = """
CREATE TABLE counter (id int PRIMARY KEY, name text, qty int);
CREATE TABLE hits (n int NOT NULL);
INSERT INTO hits VALUES (0);
CREATE TABLE history (id int, name text, qty int);
CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN UPDATE hits SET n = n + 1; RETURN NEW; END$$;
CREATE TRIGGER bump AFTER INSERT OR UPDATE OR DELETE ON counter
  FOR EACH ROW EXECUTE FUNCTION bump();
"""


def counter_batch(t: Trail, keys: int = 12, rounds: int = 5) -> list[Any]:
    out = [t(OpType.INSERT, "public.orders", {0: str(k).encode(), 1: b"n", 2: b"0"})
           for k in range(keys)]
    for r in range(1, rounds + 1):
        for k in range(keys):
            out.append(t(OpType.FIELD_COMP, "public.orders",
                         {0: str(k).encode(), 2: str(r).encode()}))
    return out


def test_replay_applies_nothing_twice(pg_db: str) -> None:
    """Every applied row change fires a counting trigger, and a keyless history table gets a
    row per insert: a second application of any partition would show in both."""
    conn = setup(pg_db, COUNTER_DDL)
    p = params("MAP public.orders, TARGET public.counter;\n", head="BATCHSQL\n")
    p2 = params("MAP public.orders, TARGET public.history;\n")
    t = Trail()
    batch = counter_batch(t)
    assert not requires_single_partition(batch)
    parts = split_partitions(batch, DEFS, 3)
    assert sum(map(len, parts)) == len(batch) and all(parts)
    for part in parts:  # every change of a key is in one partition, in order
        keys = {partition_key(tc, DEFS["public.orders"]) for tc in part}
        assert all(partition_key(tc, DEFS["public.orders"]) in keys for tc in part)

    def run_all(results: list[Any]) -> None:
        def worker(i: int, part: list[Any]) -> None:
            with PgApplier(pg_db, p, checkpoint_table=CKPT) as a1, \
                    PgApplier(pg_db, p2, checkpoint_table=CKPT, group="rep2") as a2:
                results.append(a1.apply_partition(7, i, part, DEFS))
                results.append(a2.apply_partition(7, i, part, DEFS))
        threads = [threading.Thread(target=worker, args=(i, part))
                   for i, part in enumerate(parts)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    first: list[Any] = []
    run_all(first)
    assert len(first) == 6 and not any(r.skipped for r in first)
    expected_hits = 12 + 12 * 5
    assert rows(conn, "SELECT n FROM hits") == [(expected_hits,)]
    assert rows(conn, "SELECT count(*), sum(qty) FROM counter") == [(12, 12 * 5)]
    history = rows(conn, "SELECT count(*) FROM history")
    # replay the whole batch (crash after commit, before Spark recorded it), twice
    for _ in range(2):
        again: list[Any] = []
        run_all(again)
        assert len(again) == 6 and all(r.skipped for r in again)
    assert rows(conn, "SELECT n FROM hits") == [(expected_hits,)]
    assert rows(conn, "SELECT count(*) FROM history") == history
    with PgApplier(pg_db, p, checkpoint_table=CKPT) as a:
        assert a.applied_partitions(7) == {0, 1, 2}
        assert a.applied_partitions(8) == set()


def test_concurrent_attempts_of_one_partition_apply_once(pg_db: str) -> None:
    """Two tasks applying the same partition at once (speculation): one waits, then skips."""
    conn = setup(pg_db, COUNTER_DDL)
    p = params("MAP public.orders, TARGET public.history;\n")
    batch = counter_batch(Trail(), keys=50, rounds=0)
    results: list[Any] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        with PgApplier(pg_db, p, checkpoint_table=CKPT) as a:
            barrier.wait()
            results.append(a.apply_partition(3, 0, batch, DEFS))
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(r.skipped for r in results) == [False, True, True, True]
    assert rows(conn, "SELECT count(*) FROM history") == [(50,)]


def test_failed_partition_is_applied_on_retry(pg_db: str) -> None:
    conn = setup(pg_db, ORDERS_DDL)
    t = Trail()
    bad = [t(OpType.INSERT, "public.orders", {0: b"1", 1: b"a", 2: b"1"}),
           t(OpType.FIELD_COMP, "public.orders", {0: b"2", 2: b"5"})]
    with applier(pg_db, params(MAP)) as a:
        with pytest.raises(CollisionError):
            a.apply_partition(1, 0, bad, DEFS)
        conn.execute("INSERT INTO orders VALUES (2, 'fixed', 0)")  # the operator fixes it
        res = a.apply_partition(1, 0, bad, DEFS)
    assert not res.skipped
    assert rows(conn, "SELECT * FROM orders ORDER BY id") == [(1, "a", 1), (2, "fixed", 5)]


def test_streamed_steps_begin_with_the_rows_move_and_fall_back_whole(pg_db: str,
                                                                     tmp_path: Path) -> None:
    """A streamed step's BEGIN and its checkpoint row's move are one round trip; a small
    step is tried without savepoints, and one that collides is rolled back whole and applied
    again change by change (REPERROR DISCARD), its row moved once; a step whose row another
    process moved commits nothing."""
    conn = setup(pg_db, ORDERS_DDL)
    seed(conn)
    dsc = tmp_path / "rep1.dsc"
    p = params(MAP, head="REPERROR (DEFAULT, DISCARD)\n")
    t = Trail()
    with applier(pg_db, p, discard=DiscardWriter(dsc)) as a:
        clean = [t(OpType.FIELD_COMP, "public.orders", {0: b"1", 2: b"11"})]
        trace = tmp_path / "libpq.trace"
        with trace.open("w") as fh:  # what the client sends: each Query or Sync waits
            a.conn.pgconn.trace(fh.fileno())
            a.conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            a.apply_partition(-1, 0, clean, DEFS, advance=("0:0", "0:150"))
            a.conn.pgconn.untrace()
        sent = [line.split("\t")[2] for line in trace.read_text().splitlines()
                if line.startswith("F\t")]
        # BEGIN with the row's move (here: made, the group's first step), the change, COMMIT
        assert [m for m in sent if m in ("Query", "Sync")] == ["Query", "Sync", "Query"], sent
        mixed = [t(OpType.FIELD_COMP, "public.orders", {0: b"9", 2: b"90"}),  # missing
                 t(OpType.FIELD_COMP, "public.orders", {0: b"2", 2: b"22"})]
        res = a.apply_partition(-1, 0, mixed, DEFS, advance=("0:150", "0:350"))
        assert (res.counts["public.orders"].updates, res.counts["public.orders"].discards
                ) == (1, 1)
        assert a.pipelined_fallbacks == 1
        with pytest.raises(TargetError, match="another process applies for this group"):
            a.apply_partition(-1, 0, [t(OpType.DELETE, "public.orders", before={0: b"1"})],
                              DEFS, advance=("0:150", "0:450"))
    assert rows(conn, "SELECT * FROM orders ORDER BY id") == [(1, "a", 11), (2, "b", 22)]
    assert rows(conn, f"SELECT position FROM {CKPT} WHERE batch_id = -1") == [("0:350",)]
    assert dsc.read_text().count("Discarded record from action DISCARD") == 1
