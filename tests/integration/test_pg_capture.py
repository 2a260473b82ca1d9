"""Capture from a real PostgreSQL: decoded transactions equal the committed history."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from trailgate.capture.postgres.capture import CapturedTransaction, PgCapture
from trailgate.capture.postgres.slots import add_extract, delete_extract
from trailgate.capture.postgres.trandata import add_trandata
from trailgate.db.connect import connect
from trailgate.errors import ConfigError, SourceError
from trailgate.model import ColumnKind, OpType

pytestmark = pytest.mark.postgres


@pytest.fixture
def src(pg_db: str) -> Iterator[psycopg.Connection[Any]]:
    with connect(pg_db) as conn:
        yield conn


def make_capture(pg_db: str, conn: psycopg.Connection[Any], tmp_path: Path,
                 **kw: Any) -> PgCapture:
    # slots are cluster-wide: name the group after the test's database
    source = add_extract(conn, conn.info.dbname.split("_")[0])
    return PgCapture(pg_db, source.slot, source.publication, spill_dir=tmp_path / "spill", **kw)


def read_all(cap: PgCapture, **kw: Any) -> list[CapturedTransaction]:
    out = []
    for t in cap.read(**kw):
        t.transaction.changes = list(t.transaction.changes)
        out.append(t)
    return out


def ops(txns: list[CapturedTransaction]) -> list[list[tuple[OpType, dict | None, dict | None]]]:
    return [[(c.op, c.before, c.after) for c in t.transaction.changes] for t in txns]


def test_insert_update_delete_truncate(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.t (id int PRIMARY KEY, name text, n numeric(10,2))")
    add_trandata(src, "public.t")
    cap = make_capture(pg_db, src, tmp_path)
    with src.transaction():
        src.execute("INSERT INTO t VALUES (1, 'a', 1.5), (2, NULL, NULL)")
    src.execute("UPDATE t SET name = 'b' WHERE id = 1")
    src.execute("UPDATE t SET id = 10 WHERE id = 1")
    src.execute("DELETE FROM t WHERE id = 2")
    src.execute("TRUNCATE t")
    txns = read_all(cap)
    assert [len(t.transaction.changes) for t in txns] == [2, 1, 1, 1, 1]
    assert ops(txns) == [
        [(OpType.INSERT, None, {0: b"1", 1: b"a", 2: b"1.50"}),
         (OpType.INSERT, None, {0: b"2", 1: None, 2: None})],
        # DEFAULT identity: no old image, so key plus every column the log gives
        [(OpType.FIELD_COMP, None, {0: b"1", 1: b"b", 2: b"1.50"})],
        [(OpType.PK_UPDATE, {0: b"1"}, {0: b"10", 1: b"b", 2: b"1.50"})],
        [(OpType.DELETE, {0: b"2"}, None)],
        [(OpType.TRUNCATE, None, None)],
    ]
    first = txns[0]
    assert first.transaction.csn == first.csn and first.end_lsn > first.csn
    assert int(first.transaction.xid) > 0
    assert [t.csn for t in txns] == sorted(t.csn for t in txns)
    assert all(c.table == "public.t" for t in txns for c in t.transaction.changes)
    assert all(c.audit_pos > 0 and c.audit_seq == c.audit_pos >> 24
               for t in txns for c in t.transaction.changes)
    (tdef,) = first.table_defs
    assert (tdef.qualified_name, tdef.key, tdef.key_kind) == ("public.t", ["id"], "PRIMARY")
    assert [c.source_type for c in tdef.columns] == ["integer", "text", "numeric(10,2)"]
    assert tdef.columns[0].nullable is False and tdef.columns[1].nullable is True
    assert all(not t.table_defs for t in txns[1:])  # same definition: not repeated
    cap.close()


def test_rollback_and_savepoint_never_appear(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.r (id int PRIMARY KEY, v text)")
    add_trandata(src, "public.r")
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("BEGIN")
    src.execute("INSERT INTO r VALUES (1, 'gone')")
    src.execute("ROLLBACK")
    with src.transaction():
        src.execute("INSERT INTO r VALUES (2, 'kept')")
        try:
            with src.transaction():  # a savepoint
                src.execute("INSERT INTO r VALUES (3, 'undone')")
                raise RuntimeError
        except RuntimeError:
            pass
        src.execute("UPDATE r SET v = 'kept2' WHERE id = 2")
    txns = read_all(cap)
    assert ops(txns) == [[(OpType.INSERT, None, {0: b"2", 1: b"kept"}),
                          (OpType.FIELD_COMP, None, {0: b"2", 1: b"kept2"})]]
    cap.close()


def test_interleaved_transactions_in_commit_order(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.i (id int PRIMARY KEY, who text)")
    add_trandata(src, "public.i")
    cap = make_capture(pg_db, src, tmp_path)
    with connect(pg_db, autocommit=False) as a, connect(pg_db, autocommit=False) as b:
        a.execute("INSERT INTO i VALUES (1, 'a')")
        b.execute("INSERT INTO i VALUES (2, 'b')")
        a.execute("INSERT INTO i VALUES (3, 'a')")
        b.execute("INSERT INTO i VALUES (4, 'b')")
        b.commit()
        a.commit()
    txns = read_all(cap)
    assert ops(txns) == [
        [(OpType.INSERT, None, {0: b"2", 1: b"b"}), (OpType.INSERT, None, {0: b"4", 1: b"b"})],
        [(OpType.INSERT, None, {0: b"1", 1: b"a"}), (OpType.INSERT, None, {0: b"3", 1: b"a"})],
    ]
    assert txns[0].xid != txns[1].xid
    cap.close()


def test_every_mapped_type(src, pg_db, tmp_path) -> None:
    src.execute("""CREATE TABLE public.ty (id int PRIMARY KEY, a smallint, b bigint,
        c numeric(12,3), d real, e double precision, f text, g varchar(30), h char(5),
        i boolean, j date, k timestamp, l timestamptz, m bytea, n json, o jsonb, p uuid)""")
    add_trandata(src, "public.ty")
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("SET TimeZone = 'Asia/Kolkata'")  # the source session's zone must not matter
    src.execute("""INSERT INTO ty VALUES (1, -32768, 9223372036854775807, -123456789.125,
        'Infinity', 'NaN', 'Zürich', 'vc', 'ab', true, '2024-02-29',
        '2024-02-29 13:14:15.123456', '2024-03-01 01:30:00+05:30', '\\x00ff10'::bytea,
        '{"a": [1, 2]}', '{"b": 1, "a": 2}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')""")
    src.execute("""INSERT INTO ty (id, i, j, k, l) VALUES (2, false, '-infinity',
        'infinity', '0044-03-15 12:00:00+00 BC')""")
    src.execute("INSERT INTO ty (id) VALUES (3)")
    txns = read_all(cap)
    row1, row2, row3 = (t.transaction.changes[0].after for t in txns)
    assert [row1[i] for i in range(17)] == [
        b"1", b"-32768", b"9223372036854775807", b"-123456789.125", b"Infinity", b"NaN",
        "Zürich".encode(), b"vc", b"ab   ", b"1", b"2024-02-29:00:00:00",
        b"2024-02-29:13:14:15.123456000", b"2024-02-29:20:00:00.000000000", b"\x00\xff\x10",
        b'{"a": [1, 2]}', b'{"a": 2, "b": 1}', b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]
    assert (row2[9], row2[10], row2[11], row2[12]) == (
        b"0", b"-infinity", b"infinity", b"0044-03-15 12:00:00+00 BC")
    assert all(row3[i] is None for i in range(1, 17))
    kinds = [c.kind for c in txns[0].table_defs[0].columns]
    assert kinds == [ColumnKind.NUMBER] * 6 + [ColumnKind.VARCHAR2] * 2 + [
        ColumnKind.CHAR, ColumnKind.NUMBER, ColumnKind.DATE, ColumnKind.TIMESTAMP,
        ColumnKind.TIMESTAMP, ColumnKind.RAW] + [ColumnKind.VARCHAR2] * 3
    types = [c.source_type for c in txns[0].table_defs[0].columns]
    assert types[3] == "numeric(12,3)" and types[7] == "character varying(30)"
    assert types[8] == "character(5)" and types[12] == "timestamp with time zone"
    cap.close()


def test_table_without_key_logs_full_row(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.nk (a int, b text, c text)")
    lines = add_trandata(src, "public.nk")
    assert "OGG-06439" in lines[0]
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("INSERT INTO nk VALUES (1, 'x', 'y')")
    src.execute("UPDATE nk SET b = 'z'")
    src.execute("UPDATE nk SET a = a")
    src.execute("DELETE FROM nk")
    txns = read_all(cap)
    tdef = txns[0].table_defs[0]
    assert (tdef.key, tdef.key_kind) == (["a", "b", "c"], "ALL")
    assert ops(txns)[1:] == [
        [(OpType.PK_UPDATE, {0: b"1", 1: b"x", 2: b"y"}, {0: b"1", 1: b"z", 2: b"y"})],
        [(OpType.FIELD_COMP, None, {0: b"1", 1: b"z", 2: b"y"})],
        [(OpType.DELETE, {0: b"1", 1: b"z", 2: b"y"}, None)],
    ]
    cap.close()


def test_unique_key_identity_and_compressed_update(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.uk (a int NOT NULL, b int NOT NULL, c text, d text, "
                "UNIQUE (a, b))")
    add_trandata(src, "public.uk")
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("INSERT INTO uk VALUES (1, 2, 'c', 'd')")
    src.execute("UPDATE uk SET b = 3, c = 'c2'")
    src.execute("DELETE FROM uk")
    txns = read_all(cap)
    assert (txns[0].table_defs[0].key, txns[0].table_defs[0].key_kind) == (["a", "b"], "UNIQUE")
    assert ops(txns)[1:] == [
        [(OpType.PK_UPDATE, {0: b"1", 1: b"2"}, {0: b"1", 1: b"3", 2: b"c2", 3: b"d"})],
        [(OpType.DELETE, {0: b"1", 1: b"3"}, None)],
    ]
    cap.close()


def test_unchanged_toast_is_omitted_not_null(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.big (id int PRIMARY KEY, doc text, small text)")
    src.execute("ALTER TABLE big ALTER COLUMN doc SET STORAGE EXTERNAL")
    add_trandata(src, "public.big")
    cap = make_capture(pg_db, src, tmp_path)
    doc = "x" * 100_000
    src.execute("INSERT INTO big VALUES (1, %s, 's')", (doc,))
    src.execute("UPDATE big SET small = 't'")
    src.execute("UPDATE big SET doc = NULL")
    txns = read_all(cap)
    assert txns[0].transaction.changes[0].after[1] == doc.encode()
    assert ops(txns)[1:] == [[(OpType.FIELD_COMP, None, {0: b"1", 2: b"t"})],
                             [(OpType.FIELD_COMP, None, {0: b"1", 1: None, 2: b"t"})]]
    cap.close()


def test_acknowledge_restart_and_start_after(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.a (id int PRIMARY KEY)")
    add_trandata(src, "public.a")
    cap = make_capture(pg_db, src, tmp_path)
    for i in range(3):
        src.execute("INSERT INTO a VALUES (%s)", (i,))
    first = read_all(cap, max_transactions=1)
    assert len(first) == 1
    rest = read_all(cap)  # same session: never the same transaction twice
    assert [t.transaction.changes[0].after for t in rest] == [{0: b"1"}, {0: b"2"}]
    cap.acknowledge(first[0].end_lsn)
    cap.close()
    again = PgCapture(pg_db, cap.slot, cap.publication, spill_dir=tmp_path / "s2")
    # a restarted reader sees everything not acknowledged, and drops what the trail has
    assert [t.csn for t in read_all(again)] == [t.csn for t in rest]
    assert [t.csn for t in read_all(again, start_after_lsn=rest[0].csn)] == []
    again.close()
    third = PgCapture(pg_db, cap.slot, cap.publication, spill_dir=tmp_path / "s3")
    assert [t.csn for t in read_all(third, start_after_lsn=rest[0].csn)] == [rest[1].csn]
    third.acknowledge(rest[1].csn)  # a CSN is mapped to its transaction's end
    assert third.slot_position()[1] == rest[1].end_lsn
    assert read_all(third) == []
    third.close()


def test_upto_lsn_bounds_the_read(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.u (id int PRIMARY KEY)")
    add_trandata(src, "public.u")
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("INSERT INTO u VALUES (1)")
    src.execute("INSERT INTO u VALUES (2)")
    first, second = read_all(cap)
    cap.close()
    bounded = PgCapture(pg_db, cap.slot, cap.publication, spill_dir=tmp_path / "b")
    # everything committed before upto_lsn comes; the server stops decoding soon after it
    assert [t.csn for t in read_all(bounded, upto_lsn=first.csn + 1)] == [first.csn]
    bounded.close()
    bounded = PgCapture(pg_db, cap.slot, cap.publication, spill_dir=tmp_path / "c")
    assert [t.csn for t in read_all(bounded, upto_lsn=second.end_lsn)] == [first.csn,
                                                                           second.csn]
    bounded.close()


def test_heartbeat_advances_idle_slot(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.h (id int PRIMARY KEY)")
    src.execute("CREATE TABLE public.other (id int)")
    add_trandata(src, "public.h")
    cap = make_capture(pg_db, src, tmp_path)
    src.execute("INSERT INTO h VALUES (1)")
    src.execute("INSERT INTO other SELECT generate_series(1, 1000)")
    (txn,) = read_all(cap)
    cap.heartbeat()
    assert read_all(cap) == []
    # the transaction is not acknowledged yet: the heartbeat must not move the slot past it
    assert cap.slot_position()[1] < txn.end_lsn
    beat = cap.heartbeat()
    assert read_all(cap) == []
    cap.acknowledge(txn.end_lsn)
    assert cap.slot_position()[1] >= beat > txn.end_lsn
    cap.close()


def test_big_transaction_spills_to_disk(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.s (id int PRIMARY KEY, pad text)")
    add_trandata(src, "public.s")
    cap = make_capture(pg_db, src, tmp_path, memory_limit_bytes=64 * 1024)
    src.execute("INSERT INTO s SELECT g, repeat('p', 50) FROM generate_series(1, 20000) g")
    src.execute("INSERT INTO s VALUES (0, 'small')")
    seen = []
    for t in cap.read():
        seen.append(t.spilled)
        if t.spilled:
            assert len(t.transaction.changes) == 20000
            ids = [c.after[0] for c in t.transaction.changes]
            assert ids == [str(i).encode() for i in range(1, 20001)]
            assert list((tmp_path / "spill").iterdir())
    assert seen == [True, False]
    assert not list((tmp_path / "spill").iterdir())  # spilled file removed afterwards
    cap.close()


def test_capture_while_another_session_writes(src, pg_db, tmp_path) -> None:
    src.execute("CREATE TABLE public.c (id int PRIMARY KEY)")
    add_trandata(src, "public.c")
    cap = make_capture(pg_db, src, tmp_path)

    def writer() -> None:
        with connect(pg_db) as w:
            for i in range(200):
                w.execute("INSERT INTO c VALUES (%s)", (i,))

    thread = threading.Thread(target=writer)
    thread.start()
    got: list[bytes] = []
    while thread.is_alive() or len(got) < 200:
        for t in cap.read():
            got += [c.after[0] for c in t.transaction.changes]
            cap.acknowledge(t.end_lsn)
        if not thread.is_alive() and len(got) < 200:
            thread.join()
    assert got == [str(i).encode() for i in range(200)]
    cap.close()


def test_add_extract_twice_and_missing_slot(src, pg_db, tmp_path) -> None:
    add_extract(src, "dup")
    with pytest.raises(ConfigError, match="already exists"):
        add_extract(src, "dup")
    assert delete_extract(src, "dup") is True
    assert delete_extract(src, "dup") is False
    cap = PgCapture(pg_db, "trailgate_nosuch", "trailgate", spill_dir=tmp_path)
    with pytest.raises(SourceError, match=r"does not exist.*ADD EXTRACT"):
        list(cap.read())
    cap.close()


def test_one_row_transactions_hand_out_each_new_definition_once(src, pg_db, tmp_path) -> None:
    """The capture loop keeps a table's relation and definition from one transaction to
    the next: a Relation message after ALTER TABLE, and a republish between reads, still
    put the definition before the first change that has it, once (C row path on)."""
    src.execute("CREATE TABLE public.o (id int PRIMARY KEY, v text)")
    add_trandata(src, "public.o")
    cap = make_capture(pg_db, src, tmp_path, encode_plan=lambda table: b"")
    for i in range(3):
        src.execute("INSERT INTO o VALUES (%s, 'a')", (i,))
    src.execute("ALTER TABLE o ADD COLUMN w int")
    for i in range(3, 6):
        src.execute("INSERT INTO o VALUES (%s, 'b', %s)", (i, i))
    txns = read_all(cap)
    assert [len(t.table_defs) for t in txns] == [1, 0, 0, 1, 0, 0]
    assert [len(t.table_defs[0].columns) for t in (txns[0], txns[3])] == [2, 3]
    assert ops(txns)[2:4] == [[(OpType.INSERT, None, {0: b"2", 1: b"a"})],
                              [(OpType.INSERT, None, {0: b"3", 1: b"b", 2: b"3"})]]
    cap.acknowledge(txns[-1].end_lsn)
    cap.republish_tables()
    for i in range(6, 8):
        src.execute("INSERT INTO o VALUES (%s, 'c', 0)", (i,))
    again = read_all(cap)
    assert [len(t.table_defs) for t in again] == [1, 0]
