"""spark.read.format("trail").option("table", …): one table's changes with typed columns.

A real Extract captures a PostgreSQL table holding every type the project maps, a column is
added mid-way (DDL INCLUDE MAPPED), and the typed rows Spark reads equal the table's values
as psycopg reads them, before and after the column came.  The same trail is read as a
stream, through Spark SQL's CREATE TABLE … USING trail, and its tables are listed.
"""

from __future__ import annotations

import json
import struct
import uuid
from datetime import UTC
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from extract_support import make_home
from spark_conftest import (  # noqa: F401  (spark_session is the ``spark`` fixture)
    ChangeMaker,
    Workload,
    spark_session,
    write_workload,
)

from trailgate.capture.postgres.ddl_setup import add_ddlsupport
from trailgate.capture.postgres.trandata import add_schematrandata
from trailgate.db.connect import connect
from trailgate.extract.postgres.group import RunOptions, run_extract_group

pytestmark = pytest.mark.spark

COLUMNS = """id integer PRIMARY KEY, s smallint, b bigint, n numeric(12,3), nn numeric,
    r real, d double precision, f boolean, t text, vc varchar(20), c char(5), dt date,
    ts timestamp, tz timestamptz, by bytea, j json, u uuid"""
ROWS = [
    (1, 7, 9_000_000_000, "123456789.125", "3.14159265358979323846", 0.1, 2.5e-300, True,
     "héllo wörld", "short", "ab", "2024-02-29", "2024-02-29 23:59:59.123456",
     "2024-02-29 12:00:00.5+02", b"\x00\x01\xff", '{"k": [1, 2]}',
     "6f1b5a4e-8b8e-4b8e-9a55-0c2f3c1c9d01"),
    (2, -32768, -9_223_372_036_854_775_808, "-0.001", "1e-20", -3.5, 1e308, False,
     "", "x" * 20, "abcde", "0001-01-01", "1970-01-01 00:00:00", "9999-12-31 23:59:59.999999+00",
     b"", "[]", "00000000-0000-0000-0000-000000000000"),
    (3, *[None] * 16),
]


def _source(conninfo: str, ids: list[int]) -> dict[int, dict[str, Any]]:
    """The rows ``ids`` as psycopg reads them (its own type conversions)."""
    with psycopg.connect(conninfo) as conn:
        cur = conn.execute("SELECT * FROM app.typed WHERE id = ANY(%s) ORDER BY id", (ids,))
        names = [d.name for d in cur.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}


def _same(name: str, want: Any, got: Any) -> bool:
    """A psycopg value and a Spark value of the same column agree."""
    if want is None or got is None:
        return want is None and got is None
    if name == "r":  # real: Spark has the float32, psycopg the text's nearest double
        return struct.pack("f", want) == struct.pack("f", got)
    if name == "nn":  # unconstrained numeric: exact, as PostgreSQL's text
        return Decimal(got) == want
    if name == "tz":  # Spark gives the instant in the Python process's local time
        return got.astimezone(UTC) == want.astimezone(UTC)
    if name == "by":
        return bytes(got) == bytes(want)
    if name == "j":
        return json.loads(got) == want
    if name == "u":
        return uuid.UUID(got) == want
    return bool(got == want)


def _check(rows: list[Any], source: dict[int, dict[str, Any]], columns: list[str]) -> None:
    assert sorted(r["id"] for r in rows) == sorted(source)
    for row in rows:
        want = source[row["id"]]
        for name in columns:
            assert _same(name, want.get(name), row[name]), (row["id"], name, want.get(name),
                                                           row[name])


@pytest.fixture(scope="module")
def captured(spark, pg_cluster, tmp_path_factory) -> dict[str, Any]:
    """The trail a real Extract wrote, and the source rows read before and after the DDL."""
    conninfo = pg_cluster.create_database("typed_reads")
    with connect(conninfo) as conn:
        conn.execute(f"CREATE SCHEMA app; CREATE TABLE app.typed ({COLUMNS});"
                     "CREATE TABLE app.other (k int PRIMARY KEY)")
        add_ddlsupport(conn, "ggadmin")
        add_schematrandata(conn, "app")
    home = make_home(tmp_path_factory.mktemp("typed") / "home", conninfo, "EXTT", "TABLE app.*;",
                     extra="DDL INCLUDE MAPPED\n")
    home.globals_file.write_text("GGSCHEMA ggadmin\n")
    with connect(conninfo) as conn:
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO app.typed VALUES ({', '.join(['%s'] * 17)})", ROWS)
        conn.execute("INSERT INTO app.other VALUES (1)")
    before = _source(conninfo, [1, 2, 3])
    with connect(conninfo) as conn:
        conn.execute("ALTER TABLE app.typed ADD added numeric(6,1)")
        conn.execute("INSERT INTO app.typed (id, t, added) VALUES (4, 'after', 12.5)")
        conn.execute("UPDATE app.typed SET added = 99.9, t = 'changed' WHERE id = 2")
        conn.execute("DELETE FROM app.typed WHERE id = 3")
    after = _source(conninfo, [2, 4])
    assert run_extract_group(home, "EXTT", RunOptions(once=True), spark=spark) == 0
    return {"trail": str(home.dirdat / "aa"), "before": before, "after": after}


def test_typed_rows_equal_the_source_before_and_after_a_column_is_added(spark, captured):
    df = spark.read.format("trail").option("table", "app.typed").load(captured["trail"])
    names = [f.name for f in df.schema.fields]
    columns = [c.strip().split()[0] for c in COLUMNS.split(",") if c.strip()[0].isalpha()]
    assert names == [*columns, "added", "before", "op", "csn", "xid", "io_time", "seqno", "rba"]
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {
        "id": "int", "s": "smallint", "b": "bigint", "n": "decimal(12,3)", "nn": "string",
        "r": "float", "d": "double", "f": "boolean", "t": "string", "vc": "string",
        "c": "string", "dt": "date", "ts": "timestamp_ntz", "tz": "timestamp",
        "by": "binary", "j": "string", "u": "string", "added": "decimal(6,1)",
        "before": "struct<" + ",".join(f"{c}:{types_of(c)}" for c in [*columns, "added"])
        + ">", "op": "string", "csn": "bigint", "xid": "string", "io_time": "timestamp",
        "seqno": "bigint", "rba": "bigint"}
    rows = df.orderBy("seqno", "rba").collect()
    assert [r["op"] for r in rows] == ["Insert"] * 4 + [rows[4]["op"], "Delete"]
    inserts = rows[:3]
    _check(inserts, captured["before"], columns)
    assert all(r["added"] is None and r["before"] is None for r in inserts)
    _check([rows[3], rows[4]], captured["after"], [*columns, "added"])
    delete = rows[5]
    assert delete["before"]["id"] == 3 and all(delete[c] is None for c in columns)
    assert all(r["csn"] and r["xid"] and r["io_time"] for r in rows)
    assert len({r["csn"] for r in rows}) == 4  # one transaction per statement


def types_of(column: str) -> str:
    return {"id": "int", "s": "smallint", "b": "bigint", "n": "decimal(12,3)",
            "nn": "string", "r": "float", "d": "double", "f": "boolean", "t": "string",
            "vc": "string", "c": "string", "dt": "date", "ts": "timestamp_ntz",
            "tz": "timestamp", "by": "binary", "j": "string", "u": "string",
            "added": "decimal(6,1)"}[column]


def test_a_typed_stream_sql_table_and_the_table_list(spark, captured, tmp_path):
    trail = captured["trail"]
    batch = spark.read.format("trail").option("table", "APP.TYPED").load(trail)
    got: list[Any] = []
    query = (spark.readStream.format("trail").option("table", "app.typed").load(trail)
             .writeStream.foreachBatch(lambda df, _id: got.extend(df.collect()))
             .option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert sorted(got, key=lambda r: (r.seqno, r.rba)) == batch.orderBy("seqno", "rba").collect()

    spark.sql(f"CREATE TEMPORARY VIEW typed_changes USING trail OPTIONS (path '{trail}', "
              "table 'app.typed')")
    spark.sql(f"CREATE TEMPORARY VIEW trail_tables USING trail OPTIONS (path '{trail}', "
              "listTables 'true')")
    counts = {r.op: r.n for r in spark.sql(
        "SELECT op, count(*) AS n FROM typed_changes GROUP BY op").collect()}
    assert counts["Insert"] == 4 and counts["Delete"] == 1 and sum(counts.values()) == 6
    assert spark.sql("SELECT t FROM typed_changes WHERE id = 4").first().t == "after"
    listed = {r.table_name: r for r in spark.sql("SELECT * FROM trail_tables").collect()}
    assert set(listed) == {"app.typed", "app.other"}
    assert listed["app.typed"].changes == 6 and listed["app.typed"].definitions == 2
    assert listed["app.typed"].columns.endswith("`added` decimal(6,1)")
    assert listed["app.other"].columns == "`k` int" and listed["app.other"].changes == 1
    # a catalog table gets its schema, but Spark hands its options to no Python source
    spark.sql(f"CREATE TABLE typed_table USING trail OPTIONS (path '{trail}', "
              "table 'app.typed')")
    try:
        with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
            spark.sql("SELECT count(*) FROM typed_table").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS typed_table")


def test_a_table_not_in_the_trail_is_named_with_those_that_are(spark, tmp_path):
    trail = tmp_path / "dirdat" / "aa"
    maker = ChangeMaker(seed=3)
    write_workload(trail, [maker.transaction(f"1.{n}", 100 + n) for n in range(20)],
                   Workload()).close()
    with pytest.raises(Exception) as info:
        spark.read.format("trail").option("table", "public.nope").load(str(trail))
    text = str(info.value)
    assert "public.nope" in text and "no such table" in text and "PUBLIC.ORDERS" in text


def test_pruned_and_filtered_generic_reads_agree_with_the_full_read(spark, tmp_path):
    trail = tmp_path / "dirdat" / "aa"
    maker = ChangeMaker(seed=5)
    write_workload(trail, [maker.transaction(f"2.{n}", 200 + n) for n in range(60)],
                   Workload()).close()
    full = spark.read.format("trail").load(str(trail))
    want = sorted((r.op, r.table_name, r.seqno, r.rba) for r in full.where(
        "op IN ('Delete', 'Insert') AND table_name = 'PUBLIC.ORDERS'").collect())
    narrow = (spark.read.format("trail").schema("rba long, op string, seqno long, "
                                                "table_name string").load(str(trail)))
    filtered = narrow.where("op IN ('Delete', 'Insert') AND table_name = 'PUBLIC.ORDERS'")
    plan = filtered._jdf.queryExecution().executedPlan().toString()
    assert "Delete" not in plan, "the op filter went to the source"
    assert sorted((r.op, r.table_name, r.seqno, r.rba) for r in filtered.collect()) == want
    assert len(want) > 10
    with pytest.raises(Exception, match="no column 'nope'"):
        spark.read.format("trail").schema("nope string").load(str(trail)).collect()

