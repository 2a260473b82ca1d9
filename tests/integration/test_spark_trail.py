"""spark.read.format("trail"): a real local Spark reading trails written by TrailWriter."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql.types import StructType
from spark_conftest import (  # noqa: F401  (spark_session is the ``spark`` fixture)
    ChangeMaker,
    Workload,
    crash_mid_transaction,
    spark_session,
    special_transactions,
    write_workload,
)

from trailgate.spark.trail_rows import SCHEMA_DDL
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import TrailReader

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Workload]:
    """A trail of ~400 transactions over four tables, rolled over into several files."""
    trail = tmp_path_factory.mktemp("batch") / "dirdat" / "aa"
    maker = ChangeMaker(seed=7)
    txns = [maker.transaction(f"7.{n}.{n * 3}", 10_000 + n) for n in range(400)]
    txns[350:350] = special_transactions(maker, 20_000)
    txns.append(maker.transaction("big-1", 30_000, size=800))  # crosses a file boundary
    workload = Workload()
    write_workload(trail, txns, workload).close()
    return trail, workload


@pytest.fixture(scope="module")
def rows(spark, written):
    trail, _ = written
    df = spark.read.format("trail").load(str(trail))
    return df.orderBy("seqno", "rba").collect()


def test_schema_and_one_partition_per_file(spark, written):
    trail, _ = written
    files = TrailName(trail).sequence_numbers()
    assert len(files) >= 3
    df = spark.read.format("trail").load(f"{trail}*")
    assert df.schema == StructType.fromDDL(SCHEMA_DDL)
    assert df.rdd.getNumPartitions() == len(files)


def test_every_change_once_in_order_with_its_values(written, rows):
    _, workload = written
    expected = [(txn.xid, txn.csn, i, len(txn.changes), workload.expected(change))
                for txn in workload.transactions for i, change in enumerate(txn.changes)]
    got = [(r.xid, r.csn, r.op, r.table_name, r.before, r.after, r.tokens) for r in rows]
    assert len(got) == len(expected)
    for (xid, csn, i, n, want), row, g in zip(expected, rows, got, strict=True):
        assert g == (xid, csn, *want), (xid, i)
        assert row.txn_first == (i == 0) and row.txn_last == (i == n - 1)
        assert row.trans_ind == (3 if n == 1 else 0 if i == 0 else 2 if i == n - 1 else 1)
    positions = [(r.seqno, r.rba) for r in rows]
    assert positions == sorted(set(positions))
    assert all(r.end_rba > r.rba for r in rows)


def test_a_21_1_trail_gives_the_same_rows(spark, tmp_path, written, rows):
    """The source reads every format the reader does: the same workload written as a
    little-endian FORMAT RELEASE 21.1 trail (self-describing, DDR/TDR records) gives the
    same changes, in the same order, as the 11.2 trail."""
    from trailgate.trail.release import parse_release

    _, workload = written
    trail = tmp_path / "dirdat" / "tw"
    write_workload(trail, workload.transactions, Workload(),
                   format=parse_release("21.1", "little")).close()
    got = spark.read.format("trail").load(str(trail)).orderBy("seqno", "rba").collect()
    columns = ["xid", "csn", "op", "io_type", "table_name", "before", "after", "tokens",
               "trans_ind", "txn_first", "txn_last", "io_time", "rowid", "audit_rba",
               "audit_pos"]
    assert [tuple(r[c] for c in columns) for r in got] == [
        tuple(r[c] for c in columns) for r in rows]


def test_an_encrypted_trail_gives_the_same_rows(spark, tmp_path, written, rows):
    """ENCRYPTTRAIL AES256: the source opens each file's records with the key its header
    names (the home's ENCKEYS) and gives the rows of the plain trail."""
    from trailgate.trail.keys import ENCKEYS_FILE, add_key

    _, workload = written
    add_key(tmp_path / ENCKEYS_FILE, "SPARK")
    trail = tmp_path / "dirdat" / "te"
    write_workload(trail, workload.transactions, Workload(), encrypt="AES256",
                   key_name="SPARK").close()
    got = spark.read.format("trail").load(str(trail)).orderBy("seqno", "rba").collect()
    columns = ["xid", "csn", "op", "table_name", "before", "after", "tokens", "trans_ind",
               "txn_first", "txn_last", "io_time"]
    assert [tuple(r[c] for c in columns) for r in got] == [
        tuple(r[c] for c in columns) for r in rows]
    # header columns only, and the table listing: their C passes leave encrypted files to
    # the reader, which opens and checks every record
    heads = (spark.read.format("trail").load(str(trail))
             .select("op", "table_name", "io_time", "seqno", "rba").orderBy("seqno", "rba"))
    assert [(r.op, r.table_name, r.io_time) for r in heads.collect()] == [
        (r.op, r.table_name, r.io_time) for r in rows]
    listed = spark.read.format("trail").option("listTables", "true").load(str(trail))
    plain = spark.read.format("trail").option("listTables", "true").load(str(written[0]))
    assert sorted(map(tuple, listed.collect())) == sorted(map(tuple, plain.collect()))


def test_transaction_spanning_files_is_whole(written, rows):
    big = [r for r in rows if r.xid == "big-1"]
    assert len(big) == 800
    assert len({r.seqno for r in big}) >= 2  # the writer rolled over inside it
    assert big[0].txn_first and big[-1].txn_last


def test_counts_per_table_and_op_with_sql(spark, written):
    trail, workload = written
    spark.read.format("trail").load(str(trail)).createOrReplaceTempView("trail_rows")
    got = {(r.table_name, r.op): r.n for r in spark.sql(
        "SELECT table_name, op, count(*) AS n FROM trail_rows GROUP BY table_name, op").collect()}
    want = Counter((c.table, c.op.label) for t in workload.transactions for c in t.changes)
    assert got == dict(want)
    assert {"Insert", "FieldComp", "PKUpdate", "Delete", "Truncate", "DDL"} <= {
        op for _, op in got}


def test_find_a_transaction_by_xid(spark, written):
    trail, workload = written
    spark.read.format("trail").load(str(trail)).createOrReplaceTempView("trail_rows")
    txn = next(t for t in workload.transactions if len(t.changes) == 5)
    found = spark.sql(f"""
        SELECT seqno, rba, op, table_name, after, csn FROM trail_rows
        WHERE xid = '{txn.xid}' ORDER BY seqno, rba""").collect()
    assert [(r.op, r.table_name, r.after) for r in found] == [
        (*workload.expected(c)[0:2], workload.expected(c)[3]) for c in txn.changes]
    assert {r.csn for r in found} == {txn.csn}


def test_values_nulls_raw_lob_ddl_and_time(rows):
    lob = next(r for r in rows if r.xid == "lob-1")
    assert lob.after["customer"] is None
    assert lob.after["payload"] == (bytes(range(256)) * 300).hex()
    assert lob.after["note"] == "L" * 70_000
    wide = next(r for r in rows if r.xid == "wide-1")
    assert wide.after["name"] == "é" * 20_000
    ddl = next(r for r in rows if r.xid == "ddl-1")
    assert ddl.op == "DDL" and "ALTER TABLE hr.emp" in ddl.after["text"]
    emp = next(r for r in rows if r.table_name == "HR.EMP" and r.op == "Insert")
    assert emp.rowid == "AAAR3sAAEAAAACXAAA" and emp.after["hired"] == "2024-02-29:12:00:00"
    first = rows[0]
    assert first.io_time.year == 2023 and first.io_time.tzinfo is None  # UTC session clock


def test_tables_filter_with_wildcards(spark, written):
    trail, workload = written
    df = spark.read.format("trail").option("tables", "public.ord*, emp").load(str(trail))
    got = Counter(r.table_name for r in df.select("table_name").collect())
    want = Counter(c.table for t in workload.transactions for c in t.changes
                   if c.table in ("PUBLIC.ORDERS", "HR.EMP"))
    assert got == want


def test_starting_position_glob_and_single_file(spark, written, rows):
    trail, workload = written
    k = 200
    start = workload.ends[k - 1]
    df = spark.read.format("trail").option("startingPosition", str(start)).load(str(trail))
    assert df.count() == sum(len(t.changes) for t in workload.transactions[k:])

    seqs = TrailName(trail).sequence_numbers()
    first_seq_of = {}
    for r in rows:
        first_seq_of.setdefault(r.xid, r.seqno)
    middle = seqs[1]
    one = spark.read.format("trail").load(str(TrailName(trail).file(middle)))
    want = sum(1 for r in rows if first_seq_of[r.xid] == middle)
    assert one.count() == want > 0
    tail = spark.read.format("trail").load(f"{trail.parent / 'aa'}00000000[{middle}-9]")
    assert tail.count() == sum(1 for r in rows if first_seq_of[r.xid] >= middle)


def test_include_metadata_shows_table_definitions(spark, written):
    trail, _ = written
    df = spark.read.format("trail").option("includeMetadata", "true").load(str(trail))
    meta = df.where("op = 'Metadata'").collect()
    files = TrailName(trail).sequence_numbers()
    assert {(r.seqno, r.table_name) for r in meta} >= {(files[0], "PUBLIC.ORDERS")}
    orders = next(r for r in meta if r.table_name == "PUBLIC.ORDERS")
    assert orders.after == {"id": "integer", "customer": "text", "amount": "numeric(10,2)",
                            "payload": "bytea", "note": "text"}
    assert spark.read.format("trail").load(str(trail)).where("op = 'Metadata'").count() == 0


def test_crashed_transaction_is_left_out_until_rewritten(spark, tmp_path):
    trail = tmp_path / "dirdat" / "cr"
    maker = ChangeMaker(seed=3)
    workload = Workload()
    write_workload(trail, [maker.transaction(f"c.{n}", n) for n in range(20)], workload).close()
    lost = maker.transaction("lost-1", 99, size=4)
    crash_mid_transaction(trail, lost)
    df = spark.read.format("trail").load(str(trail))
    assert df.where("xid = 'lost-1'").count() == 0
    before = df.count()
    assert before == sum(len(t.changes) for t in workload.transactions)
    # the restarted writer writes it again, whole, in a new file
    write_workload(trail, [lost], workload).close()
    assert spark.read.format("trail").load(str(trail)).where("xid = 'lost-1'").count() == 4


def test_errors_name_the_problem(spark, tmp_path, written):
    with pytest.raises(Exception, match="no trail files"):
        spark.read.format("trail").load(str(tmp_path / "nothing" / "zz")).count()
    with pytest.raises(Exception, match="no trail files match"):
        spark.read.format("trail").load(str(tmp_path / "zz*")).count()
    with pytest.raises(Exception, match="startingPosition"):
        spark.read.format("trail").option("startingPosition", "x:y").load(
            str(written[0])).count()
    trail = tmp_path / "dirdat" / "bd"
    maker = ChangeMaker(seed=5)
    write_workload(trail, [maker.transaction(f"b.{n}", n) for n in range(30)], Workload()).close()
    path = TrailName(trail).file(0)
    positions = [pos.rba for pos, _ in TrailReader(trail).raw_records()]
    rba = positions[len(positions) // 2]
    data = bytearray(path.read_bytes())
    data[rba] = ord("X")  # damage a record header in the middle of the file
    path.write_bytes(bytes(data))
    with pytest.raises(Exception, match=re.escape(f"{path} at RBA {rba}: record type 0x58")):
        spark.read.format("trail").load(str(trail)).count()



def test_a_real_goldengate_12_2_trail_gives_named_columns(spark, tmp_path):
    """Oracle's GoldenGate for Big Data sample trail (tests/fixtures/goldengate, written by
    GoldenGate 12.2): the source names each column from the file's binary TDRs and gives
    binary NUMBERs as digits with their scale, unified updates as compressed updates."""
    import shutil

    real = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"
    (tmp_path / "dirdat").mkdir()
    shutil.copy(real, tmp_path / "dirdat" / "tr000000000")
    got = spark.read.format("trail").load(str(tmp_path / "dirdat" / "tr")).orderBy(
        "rba").collect()
    assert [(r.op, r.table_name) for r in got].count(("Insert", "QASOURCE.TCUSTMER")) == 5
    assert len(got) == 16 and got[0].csn == 7824137832 and got[0].xid == "2.3.228025"
    assert got[0].after == {"CUST_CODE": "WILL", "NAME": "BG SOFTWARE CO.",
                            "CITY": "SEATTLE", "STATE": "WA"}
    assert got[2].after["PRODUCT_PRICE"] == "17520.00"
    assert got[2].after["ORDER_DATE"] == "1994-09-30:15:33:00"
    update = next(r for r in got if r.rba == 5100)
    assert update.io_type == 15 and update.after == {"CUST_CODE": "ANN", "CITY": "NEW YORK",
                                                     "STATE": "NY"}
