"""The Extract group on a real embedded PostgreSQL and a real local Spark: the trail read back
equals the committed history (see extract_support for the two oracles)."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from extract_support import (
    database_state,
    make_home,
    reference_slot,
    reference_transactions,
    replay,
    slot_confirmed,
    trail_transactions,
)
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.capture.postgres.trandata import add_trandata
from trailgate.cli import main as cli_main
from trailgate.db.connect import connect
from trailgate.extract.postgres.group import RunOptions, run_extract_group
from trailgate.ggsci import display
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import OpType
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import TrailReader

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

PARAMS = """GETTRUNCATES
TABLE public.orders, TOKENS (tk_csn = @GETENV('TRANSACTION', 'CSN'),
    tk_op = @GETENV('GGHEADER', 'OPTYPE'), tk_cust = customer);
TABLE public.cols_t, COLSEXCEPT (c);
TABLE public.*;
TABLEEXCLUDE public.skip_me
"""
CAPTURED = ["public.orders", "public.types", "public.nopk", "public.docs", "public.trunc_t",
            "public.nolog"]


def _schema(conn: psycopg.Connection) -> None:
    conn.execute("""CREATE TABLE orders (id int PRIMARY KEY, customer text,
                    amount numeric(10,2), note text)""")
    conn.execute("""CREATE TABLE types (id int PRIMARY KEY, a smallint, b bigint,
        c numeric(12,3), d real, e double precision, f text, g varchar(30), h char(5),
        i boolean, j date, k timestamp, l timestamptz, m bytea, n json, o jsonb, p uuid)""")
    conn.execute("CREATE TABLE nopk (a int, b text)")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, tag text)")
    conn.execute("CREATE TABLE trunc_t (id int PRIMARY KEY, v text)")
    conn.execute("CREATE TABLE nolog (id int PRIMARY KEY, v text)")  # no ADD TRANDATA
    conn.execute("CREATE TABLE skip_me (id int PRIMARY KEY)")
    conn.execute("CREATE TABLE cols_t (id int PRIMARY KEY, a text, b text, c text)")
    for t in ("orders", "types", "nopk", "docs", "trunc_t", "skip_me", "cols_t"):
        add_trandata(conn, f"public.{t}")


def _workload_one(conninfo: str) -> None:
    with connect(conninfo) as c:
        c.execute("INSERT INTO orders VALUES (1, 'ann', 10.50, NULL), (2, 'bob', NULL, 'n')")
        c.execute("UPDATE orders SET amount = 11.25, note = NULL WHERE id = 1")
        c.execute("UPDATE orders SET id = 20, customer = 'bobby' WHERE id = 2")  # key change
        c.execute("DELETE FROM orders WHERE id = 1")
        c.execute("""INSERT INTO types VALUES (1, -32768, 9223372036854775807, -123456789.125,
            'Infinity', 'NaN', 'Zürich', 'vc', 'ab', true, '2024-02-29',
            '2024-02-29 13:14:15.123456', '2024-03-01 01:30:00+05:30', '\\x00ff10'::bytea,
            '{"a": [1, 2]}', '{"b": 1, "a": 2}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')""")
        c.execute("INSERT INTO types (id, i, j, k) VALUES (2, false, '-infinity', 'infinity')")
        c.execute("INSERT INTO types (id) VALUES (3)")
        c.execute("INSERT INTO nopk VALUES (1, 'x'), (1, 'x'), (2, NULL)")
        c.execute("UPDATE nopk SET b = 'y' WHERE a = 2")
        c.execute("DELETE FROM nopk WHERE ctid = (SELECT min(ctid) FROM nopk WHERE a = 1)")
        c.execute("""INSERT INTO docs SELECT 1, string_agg(md5(g::text), ''), 't0'
                     FROM generate_series(1, 1500) g""")  # ~48 kB: TOASTed
        c.execute("UPDATE docs SET tag = 't1' WHERE id = 1")  # body unchanged: omitted
        c.execute("INSERT INTO trunc_t VALUES (1, 'a'), (2, 'b')")
        c.execute("TRUNCATE trunc_t")
        c.execute("INSERT INTO trunc_t VALUES (3, 'after truncate')")
        c.execute("INSERT INTO skip_me VALUES (1)")
        c.execute("INSERT INTO cols_t VALUES (1, 'a', 'b', 'secret')")
        c.execute("UPDATE cols_t SET c = 'secret2', a = 'a2' WHERE id = 1")
    # interleaved transactions: b commits first although a began first
    a = psycopg.connect(conninfo, autocommit=False)
    b = psycopg.connect(conninfo, autocommit=False)
    try:
        a.execute("INSERT INTO orders VALUES (100, 'a-first', 1, NULL)")
        b.execute("INSERT INTO orders VALUES (200, 'b-first', 2, NULL)")
        a.execute("INSERT INTO orders VALUES (101, 'a-second', 1, NULL)")
        b.execute("UPDATE orders SET note = 'b touched' WHERE id = 20")
        b.commit()
        a.commit()
        a.execute("INSERT INTO orders VALUES (300, 'rolled back', 0, NULL)")
        a.rollback()
        a.execute("INSERT INTO orders VALUES (400, 'kept-1', 0, NULL)")
        a.execute("SAVEPOINT s")
        a.execute("INSERT INTO orders VALUES (401, 'savepoint rolled back', 0, NULL)")
        a.execute("ROLLBACK TO SAVEPOINT s")
        a.execute("INSERT INTO orders VALUES (402, 'kept-2', 0, NULL)")
        a.commit()
    finally:
        a.close()
        b.close()


def _workload_two(conninfo: str) -> None:
    with connect(conninfo) as c:
        c.execute("INSERT INTO nolog VALUES (1, 'published at start'), (2, 'x')")
        c.execute("UPDATE nolog SET v = 'y' WHERE id = 2")
        c.execute("INSERT INTO orders SELECT g, 'bulk', g, NULL FROM generate_series(1000, "
                  "1999) g")
        c.execute("DELETE FROM orders WHERE id BETWEEN 1000 AND 1499")
        c.execute("UPDATE docs SET body = 'short now' WHERE id = 1")


def _expected(conninfo: str, slot: str, spill: Path) -> list:
    """The reference slot's history as this Extract's parameters shape it."""
    txns = reference_transactions(conninfo, slot, spill,
                                  keep=lambda ch: ch.table != "public.skip_me")
    out = []
    for csn, xid, changes in txns:
        shaped = []
        for op, table, before, after in changes:
            if table == "public.cols_t":  # COLSEXCEPT (c): column 3 never travels
                before = None if before is None else {i: v for i, v in before.items() if i != 3}
                after = None if after is None else {i: v for i, v in after.items() if i != 3}
            shaped.append((op, table, before, after))
        out.append((csn, xid, shaped))
    return out


def test_trail_equals_committed_history(spark, pg_db, tmp_path):
    with connect(pg_db) as conn:
        _schema(conn)
    home = make_home(tmp_path / "home", pg_db, "EXT1", PARAMS)
    ref = reference_slot(pg_db, "REF1")
    _workload_one(pg_db)

    t0 = time.monotonic()
    assert run_extract_group(home, "EXT1", RunOptions(once=True), spark=spark) == 0
    first_run = time.monotonic() - t0
    _workload_two(pg_db)
    assert run_extract_group(home, "EXT1", RunOptions(once=True), spark=spark) == 0
    print(f"\nfirst --once run {first_run:.1f} s")

    trail = home.dirdat / "aa"
    got = trail_transactions(trail)
    expected = _expected(pg_db, ref, tmp_path / "spill")
    assert [(csn, xid) for csn, xid, _ in got] == [(csn, xid) for csn, xid, _ in expected]
    assert got == expected
    assert len(got) >= 20

    # the final table contents equal the trail replayed from empty
    state = replay(trail)
    for table in CAPTURED:
        assert state.get(table, {}) == database_state(pg_db, table), table
    cols = _without_column(database_state(pg_db, "public.cols_t"), 3)
    assert state["public.cols_t"] == cols
    assert "public.skip_me" not in state

    # what the workload's special cases must look like
    flat = [ch for _, _, changes in got for ch in changes]
    customers = {ch[3].get(1) for ch in flat if ch[1] == "public.orders" and ch[3]}
    assert b"rolled back" not in customers and b"savepoint rolled back" not in customers
    assert {b"kept-1", b"kept-2", b"a-first", b"b-first"} <= customers
    pk = [ch for ch in flat if ch[0] is OpType.PK_UPDATE and ch[1] == "public.orders"]
    assert pk[0][2] == {0: b"2"} and pk[0][3][0] == b"20"
    toast = [ch for ch in flat if ch[1] == "public.docs" and ch[0] is OpType.FIELD_COMP]
    assert toast[0][3] == {0: b"1", 2: b"t1"}  # unchanged TOAST value omitted, not NULL
    assert [ch[0] for ch in flat if ch[1] == "public.trunc_t"].count(OpType.TRUNCATE) == 1
    b_first = next(i for i, t in enumerate(got) if any(c[3] and c[3].get(1) == b"b-first"
                                                       for c in t[2]))
    a_first = next(i for i, t in enumerate(got) if any(c[3] and c[3].get(1) == b"a-first"
                                                       for c in t[2]))
    assert b_first < a_first  # commit order, not start order

    # user tokens on the table that asks for them, and only there
    with_tokens = trail_transactions(trail, tokens=True)
    for csn, _, changes in with_tokens:
        for op, table, _b, after, tokens in changes:
            if table == "public.orders":
                assert tokens["tk_csn"] == str(csn)
                assert tokens["tk_op"] in ("INSERT", "SQL COMPUPDATE", "PK FIELD COMP",
                                           "DELETE")
                if op is OpType.INSERT:
                    assert tokens["tk_cust"] == after[1].decode()
            else:
                assert not tokens

    # each run wrote its own file (append mode); the checkpoint says where the trail ends
    seqs = TrailName(trail).sequence_numbers()
    assert seqs == [0, 1]
    ck = home.checkpoints.load("EXT1", "EXTRACT")
    end = (trail.parent / "aa000000001").stat().st_size
    assert (ck.write_position.seqno, ck.write_position.rba) == (1, end)
    assert ck.last_csn == got[-1][0] and ck.read_position["lsn"] > got[-1][0]
    assert ck.stats["public.orders"].inserts == sum(
        1 for ch in flat if ch[1] == "public.orders" and ch[0] is OpType.INSERT)
    showch = "\n".join(display.showch(home.require_group("EXT1"), ck))
    assert "Sequence #: 1" in showch and f"RBA: {end}" in showch and "LSN:" in showch
    with connect(pg_db) as conn:
        assert slot_confirmed(conn, "trailgate_ext1") >= ck.read_position["lsn"]

    # the table without supplemental logging was reported, in the report and ggserr.log
    events = home.ggserr_log.read_text()
    assert "WARNING OGG-06441" in events and "public.nolog has no supplemental logging" in events
    report = (home.dirrpt / "EXT1.rpt").read_text()
    assert "public.nolog" in report and "stopped normally" in report
    assert not (home.dirchk / "EXT1.pid").exists()


def _without_column(rows: Counter, drop: int) -> Counter:
    return Counter(tuple((i, v) for i, v in row if i != drop) for row in rows.elements())


def test_idle_captured_tables_still_move_the_slot(spark, pg_db, tmp_path):
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE quiet (id int PRIMARY KEY)")
        conn.execute("CREATE TABLE busy (id serial PRIMARY KEY, v text)")  # not captured
        add_trandata(conn, "public.quiet")
    home = make_home(tmp_path / "home", pg_db, "EXT2", "TABLE public.quiet;")
    stop_file = home.dirchk / "EXT2.stop"
    with connect(pg_db) as conn:
        start = slot_confirmed(conn, "trailgate_ext2")
    samples: list[tuple[int, bool]] = []
    done = threading.Event()

    def churn() -> None:
        with connect(pg_db) as conn:
            while not done.is_set():
                conn.execute("INSERT INTO busy (v) VALUES (repeat('x', 500))")
                samples.append((slot_confirmed(conn, "trailgate_ext2"), stop_file.exists()))
                time.sleep(0.1)

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        run_extract_group(home, "EXT2", RunOptions(max_batches=4, trigger_seconds=0.5),
                          spark=spark)
    finally:
        done.set()
        worker.join()
    moved_while_running = [lsn for lsn, stopping in samples if not stopping and lsn > start]
    assert moved_while_running, "the slot stayed put while only uncaptured tables changed"
    assert trail_transactions(home.dirdat / "aa") == []


def test_unreachable_database_is_a_clear_message(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    home = Home(tmp_path / "home").create()
    home.add_group(GroupInfo("EXT3", "EXTRACT", "TRANLOG"))
    home.add_trail("EXT3", TrailInfo("./dirdat/aa"))
    (home.dirprm / "ext3.prm").write_text(
        f"EXTRACT ext3\nSOURCEDB host=127.0.0.1 port={port} dbname=app user=gg\n"
        "EXTTRAIL ./dirdat/aa\nTABLE public.*;\n")
    t0 = time.monotonic()
    code = cli_main(["--home", str(home.path), "run", "extract", "ext3"])
    err = capsys.readouterr().err
    assert code == 1 and time.monotonic() - t0 < 30
    assert "cannot connect to PostgreSQL gg@127.0.0.1" in err and "Traceback" not in err
    assert "ABENDING" in (home.dirrpt / "EXT3.rpt").read_text()
    assert "ERROR   OGG-01668" in home.ggserr_log.read_text()
    assert (home.dirchk / "EXT3.pid").exists()  # left behind: INFO shows ABENDED


def test_parameter_mistakes_name_the_file_and_line(tmp_path, pg_db, capsys):
    home = make_home(tmp_path / "home", pg_db, "EXT4",
                     "TABLE public.t, WHERE (id > 1);")
    assert cli_main(["--home", str(home.path), "run", "extract", "ext4"]) == 1
    err = capsys.readouterr().err
    assert "ext4.prm, line 4" in err and "WHERE" in err


def test_source_offsets_bounded_and_stopped(pg_db, tmp_path):
    """latestOffset: the flushed WAL end, at most maxWalBytesPerTrigger past the start, and
    no new data while the stop file exists (a clean stop lets the batch in flight finish)."""
    from trailgate.extract.postgres.source import (
        PgCapturePartition,
        PgCaptureStreamReader,
        SourceOptions,
    )

    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE o (id int PRIMARY KEY)")
        add_trandata(conn, "public.o")
    home = make_home(tmp_path / "home", pg_db, "EXT5", "TABLE public.o;")
    stop = home.dirchk / "EXT5.stop"
    options = {"home": str(home.path), "group": "EXT5", "maxWalBytesPerTrigger": "1000",
               "stopFile": str(stop)}
    reader = PgCaptureStreamReader(SourceOptions.parse(options))
    start = reader.initialOffset()
    with connect(pg_db) as conn:
        assert start["lsn"] == slot_confirmed(conn, "trailgate_ext5")
        conn.execute("INSERT INTO o SELECT generate_series(1, 1000)")
    end = reader.latestOffset(start, None)
    assert end["lsn"] == start["lsn"] + 1000
    assert reader.partitions(start, end) == [PgCapturePartition(start["lsn"], end["lsn"])]
    assert reader.partitions(end, end) == []
    stop.touch()
    assert reader.latestOffset(end, None) == end
    reader.stop()


def test_commit_lets_the_restart_point_follow(pg_db, tmp_path):
    """After a batch of lots of WAL, the slot's restart point (where every read starts
    decoding) follows its confirmed point at the next commit instead of waiting up to 15 s
    for the server's own snapshot."""
    from trailgate.extract.postgres.source import (
        RESTART_LAG_BYTES,
        PgCaptureStreamReader,
        SourceOptions,
    )

    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE r (id int PRIMARY KEY, pad text)")
        add_trandata(conn, "public.r")
    home = make_home(tmp_path / "home", pg_db, "EXT6", "TABLE public.r;")
    reader = PgCaptureStreamReader(SourceOptions.parse({"home": str(home.path),
                                                        "group": "EXT6"}))
    start = reader.initialOffset()["lsn"]

    def slot() -> tuple[int, int]:
        with connect(pg_db) as conn:
            row = conn.execute("SELECT (restart_lsn - '0/0'::pg_lsn)::int8, "
                               "(confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM "
                               "pg_replication_slots WHERE slot_name = 'trailgate_ext6'"
                               ).fetchone()
            return int(row[0]), int(row[1])

    with connect(pg_db) as conn:
        conn.execute("INSERT INTO r SELECT g, repeat('x', 200) FROM generate_series(1, 80000) g")
    first = reader.latestOffset({"lsn": start}, None)
    assert first["lsn"] - start > RESTART_LAG_BYTES
    reader.commit(first)
    end = first
    for n in range(2):  # the advance past the snapshot notes it; the next one moves to it
        with connect(pg_db) as conn:
            conn.execute("INSERT INTO r VALUES (%s, 'x')", (-1 - n,))
        end, before = reader.latestOffset(end, None), end
        assert end["lsn"] > before["lsn"]
        reader.commit(end)
    restart, confirmed = slot()
    assert confirmed == end["lsn"]
    assert restart >= first["lsn"], "the restart point stayed behind the first batch"
    reader.stop()


def test_a_change_before_an_alter_in_its_transaction_keeps_the_old_definition(
        spark, pg_db, tmp_path):
    """Without DDL support a mid-transaction ALTER reaches the trail only as a new
    definition: it goes after the changes made before it, which keep the old columns."""
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE shifty (id int PRIMARY KEY, b text, c text)")
        conn.execute("INSERT INTO shifty VALUES (1, 'b1', 'c1')")
        add_trandata(conn, "public.shifty")
    home = make_home(tmp_path / "home", pg_db, "EXT3", "TABLE public.shifty;")
    with connect(pg_db) as conn, conn.transaction():
        conn.execute("UPDATE shifty SET c = 'c2' WHERE id = 1")
        conn.execute("ALTER TABLE shifty DROP COLUMN b")
        conn.execute("UPDATE shifty SET c = 'c3' WHERE id = 1")
    run_extract_group(home, "EXT3", RunOptions(once=True), spark=spark)
    updates = []
    for record in TrailReader(home.dirdat / "aa").records():
        change = record.change
        if change is not None and change.table == "public.shifty" and record.table_def:
            names = {c.index: c.name for c in record.table_def.columns}
            updates.append({names[i]: v for i, v in (change.after or {}).items()})
    assert updates == [{"id": b"1", "b": b"b1", "c": b"c2"}, {"id": b"1", "c": b"c3"}], updates
