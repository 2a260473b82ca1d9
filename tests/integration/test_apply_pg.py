"""Applying trail changes to a real PostgreSQL target: rows by key, types, COLMAP, KEYCOLS."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from trailgate.apply import PgApplier, TrailChange
from trailgate.apply.checkpoint_table import add_checkpoint_table
from trailgate.capture.postgres.types import classify
from trailgate.errors import ConfigError
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text

pytestmark = pytest.mark.postgres

CKPT = "gg.ckpt"


def tdef(name: str, cols: list[tuple[str, str]], key: list[str],
         key_kind: str = "PRIMARY") -> TableDef:
    schema, _, table = name.rpartition(".")
    columns = []
    for i, (cname, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef(schema, table, columns, key, key_kind)


class Trail:
    """Builds TrailChanges with increasing positions and CSNs."""

    def __init__(self) -> None:
        self.rba = 0
        self.csn = 100

    def __call__(self, op: OpType, table: str, after: dict[int, bytes | None] | None = None,
                 before: dict[int, bytes | None] | None = None,
                 tokens: dict[str, str] | None = None) -> TrailChange:
        self.rba += 100
        self.csn += 1
        return TrailChange(Change(op, table, after, before, io_time=212_000_000_000_000_000,
                                  tokens=tokens),
                           self.csn, f"1.{self.csn}.1", TrailPosition(0, self.rba),
                           commit_time=212_000_000_000_000_000)


def params(body: str, head: str = "") -> ReplicatParams:
    p = parse_params_text(f"REPLICAT rep1\nTARGETDB x\n{head}{body}", "rep1.prm")
    assert isinstance(p, ReplicatParams)
    return p


def setup(conninfo: str, ddl: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(conninfo, autocommit=True)
    conn.execute(ddl)
    add_checkpoint_table(conn, CKPT)
    return conn


def rows(conn: psycopg.Connection[Any], query: str) -> list[tuple[Any, ...]]:
    return conn.execute(query).fetchall()


def applier(conninfo: str, p: ReplicatParams, **kw: Any) -> PgApplier:
    a = PgApplier(conninfo, p, checkpoint_table=CKPT, **kw)
    a.validate()
    return a


ORDERS = tdef("public.orders", [("id", "integer"), ("name", "text"), ("qty", "integer")],
              ["id"])
DEFS = {"public.orders": ORDERS}


@pytest.mark.parametrize("batchsql", [False, True])
def test_insert_update_delete_by_key(pg_db: str, batchsql: bool) -> None:
    conn = setup(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, name text, qty int)")
    t = Trail()
    changes = [
        t(OpType.INSERT, "public.orders", {0: b"1", 1: b"a", 2: b"10"}),
        t(OpType.INSERT, "public.orders", {0: b"2", 1: b"b", 2: b"20"}),
        t(OpType.INSERT, "public.orders", {0: b"3", 1: None, 2: b"30"}),
        # compressed update: key + changed column only; name must stay
        t(OpType.FIELD_COMP, "public.orders", {0: b"1", 2: b"11"}),
        t(OpType.FIELD_COMP, "public.orders", {0: b"2", 1: None}),
        t(OpType.DELETE, "public.orders", before={0: b"3"}),
        # PK update moves row 1 to 5 and sets qty
        t(OpType.PK_UPDATE, "public.orders", {0: b"5", 2: b"12"}, {0: b"1"}),
    ]
    with applier(pg_db, params("MAP public.orders, TARGET public.orders;"),
                 batchsql=batchsql) as a:
        res = a.apply_partition(1, 0, changes, DEFS)
    assert rows(conn, "SELECT * FROM orders ORDER BY id") == [(2, None, 20), (5, "a", 12)]
    c = res.counts["public.orders"]
    assert (c.inserts, c.updates, c.deletes, c.discards) == (3, 3, 1, 0)
    assert rows(conn, f"SELECT group_name, batch_id, partition, position FROM {CKPT}") == [
        ("REP1", 1, 0, "0:700")]


def test_keyless_table_matched_on_all_columns(pg_db: str) -> None:
    conn = setup(pg_db, "CREATE TABLE logs (a int, b text)")
    d = tdef("public.logs", [("a", "integer"), ("b", "text")], ["a", "b"], "ALL")
    t = Trail()
    changes = [
        t(OpType.INSERT, "public.logs", {0: b"1", 1: b"x"}),
        t(OpType.INSERT, "public.logs", {0: b"1", 1: b"x"}),  # a duplicate row
        t(OpType.INSERT, "public.logs", {0: b"2", 1: None}),
        # identity FULL: an update is a PK update whose before is the whole old row
        t(OpType.PK_UPDATE, "public.logs", {0: b"2", 1: b"y"}, {0: b"2", 1: None}),
        # delete one of the two identical rows only
        t(OpType.DELETE, "public.logs", before={0: b"1", 1: b"x"}),
    ]
    with applier(pg_db, params("MAP public.*, TARGET public.*;")) as a:
        res = a.apply_partition(1, 0, changes, {"public.logs": d})
    assert rows(conn, "SELECT * FROM logs ORDER BY a") == [(1, "x"), (2, "y")]
    assert res.counts["public.logs"].deletes == 1


PG_TYPES = [
    ("c_smallint", "smallint", b"-32768", -32768),
    ("c_int", "integer", b"2147483647", 2147483647),
    ("c_bigint", "bigint", b"-9223372036854775808", -9223372036854775808),
    ("c_numeric", "numeric(12,3)", b"-12345.678", None),
    ("c_real", "real", b"1.5", 1.5),
    ("c_double", "double precision", b"-0.125", -0.125),
    ("c_bool", "boolean", b"1", True),
    ("c_text", "text", "héllo 'quoted'".encode(), "héllo 'quoted'"),
    ("c_varchar", "character varying(10)", b"abc", "abc"),
    ("c_char", "character(4)", b"ab  ", "ab  "),
    ("c_date", "date", b"2013-03-14:00:00:00", None),
    ("c_ts", "timestamp without time zone", b"2013-03-14:22:39:56.123456000", None),
    ("c_tstz", "timestamp with time zone", b"2013-03-14:22:39:56.000001000", None),
    ("c_bytea", "bytea", b"\x00\x01\xff", b"\x00\x01\xff"),
    ("c_json", "jsonb", b'{"a": [1, 2]}', {"a": [1, 2]}),
    ("c_uuid", "uuid", b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", None),
    ("c_arr", "integer[]", b"{1,2,3}", [1, 2, 3]),
    ("c_interval", "interval", b"1 day 02:00:00", None),
]


def test_every_type_round_trips(pg_db: str) -> None:
    cols = ", ".join(f"{n} {t}" for n, t, _, _ in PG_TYPES)
    conn = setup(pg_db, f"CREATE TABLE typed (id int PRIMARY KEY, {cols})")
    d = tdef("public.typed", [("id", "integer")] + [(n, t) for n, t, _, _ in PG_TYPES], ["id"])
    t = Trail()
    after = {0: b"1"} | {i + 1: v for i, (_, _, v, _) in enumerate(PG_TYPES)}
    nulls = {0: b"2"} | {i + 1: None for i in range(len(PG_TYPES))}
    with applier(pg_db, params("MAP public.typed, TARGET public.typed;")) as a:
        a.apply_partition(1, 0, [t(OpType.INSERT, "public.typed", after),
                                 t(OpType.INSERT, "public.typed", nulls)],
                          {"public.typed": d})
    names = ", ".join(n for n, *_ in PG_TYPES)
    got = conn.execute(f"SELECT {names} FROM typed WHERE id = 1").fetchone()
    assert got is not None
    for (name, _, _, expected), value in zip(PG_TYPES, got, strict=True):
        if expected is not None:
            assert value == expected, name
    # text output under the capture session settings gives the same trail form back
    from trailgate.capture.postgres.types import SESSION_SETTINGS, trail_from_pg_text
    conn.execute("SET TimeZone = 'UTC'")
    conn.execute("SET DateStyle = 'ISO, YMD'")
    conn.execute("SET extra_float_digits = 1")
    texts = conn.execute(f"SELECT {', '.join(n + '::text' for n, *_ in PG_TYPES)} "
                         "FROM typed WHERE id = 1").fetchone()
    assert texts is not None and SESSION_SETTINGS
    for (name, ctype, trail, _), text in zip(PG_TYPES, texts, strict=True):
        if ctype in ("bytea",):
            continue
        assert trail_from_pg_text(text, classify(ctype)) == trail, name
    assert conn.execute(f"SELECT num_nulls({names}) FROM typed WHERE id = 2").fetchone() == (
        len(PG_TYPES),)


def test_oracle_trail_into_postgres(pg_db: str) -> None:
    """Seed 003's STUDENT (NUMBER, VARCHAR2, DATE) into a PostgreSQL table."""
    conn = setup(pg_db, """CREATE SCHEMA us03;
        CREATE TABLE us03.student (student_key bigint PRIMARY KEY, first_name varchar(30),
          surname text, enrolled timestamp, born date, tuition numeric(8,2), photo bytea,
          code char(3), active boolean)""")
    from trailgate.model import ColumnKind as K
    cols = [Column("STUDENT_KEY", 0, K.NUMBER, "NUMBER"),
            Column("FIRST_NAME", 1, K.VARCHAR2, "VARCHAR2(30)"),
            Column("SURNAME", 2, K.VARCHAR2, "VARCHAR2(30)"),
            Column("ENROLLED", 3, K.DATE, "DATE"),
            Column("BORN", 4, K.DATE, "DATE"),
            Column("TUITION", 5, K.NUMBER, "NUMBER(8,2)"),
            Column("PHOTO", 6, K.RAW, "RAW(4)"),
            Column("CODE", 7, K.CHAR, "CHAR(3)"),
            Column("ACTIVE", 8, K.NUMBER, "NUMBER(1)")]
    d = TableDef("US03", "STUDENT", cols, ["STUDENT_KEY"])
    t = Trail()
    changes = [
        t(OpType.INSERT, "US03.STUDENT", {0: b"1011", 1: b"Rebecca", 2: b"Brown",
                                          3: b"2013-03-14:22:39:56", 4: b"1995-01-02:00:00:00",
                                          5: b"9000.5", 6: b"\xde\xad", 7: b"AB ", 8: b"1"}),
        t(OpType.FIELD_COMP, "US03.STUDENT", {0: b"1011", 2: b"Harris"}),
    ]
    with applier(pg_db, params("MAP US03.*, TARGET us03.*;")) as a:
        a.apply_partition(1, 0, changes, {"US03.STUDENT": d})
    import datetime as dt
    from decimal import Decimal
    assert rows(conn, "SELECT * FROM us03.student") == [
        (1011, "Rebecca", "Harris", dt.datetime(2013, 3, 14, 22, 39, 56), dt.date(1995, 1, 2),
         Decimal("9000.50"), b"\xde\xad", "AB ", True)]


def test_colmap_literals_getenv_token_and_keycols(pg_db: str) -> None:
    conn = setup(pg_db, """CREATE SCHEMA replica;
        CREATE TABLE replica.orders_h (order_no int, label text, src text, op text,
          committed timestamptz, tk text, pos text, csn bigint, note text DEFAULT 'd')""")
    p = params("""MAP public.orders, TARGET replica.orders_h,
        COLMAP (order_no = id, label = name, src = 'trail',
                op = @GETENV('GGHEADER', 'OPTYPE'),
                committed = @GETENV('GGHEADER', 'COMMITTIMESTAMP'),
                tk = @TOKEN('who'), pos = @GETENV('RECORD', 'FILERBA'),
                csn = @GETENV('TRANSACTION', 'CSN')),
        KEYCOLS (order_no);""")
    t = Trail()
    changes = [
        t(OpType.INSERT, "public.orders", {0: b"7", 1: b"x", 2: b"1"}, tokens={"who": "me"}),
        t(OpType.FIELD_COMP, "public.orders", {0: b"7", 1: b"y"}),
        t(OpType.INSERT, "public.orders", {0: b"8", 1: b"z", 2: b"1"}),
        t(OpType.DELETE, "public.orders", before={0: b"8"}),
    ]
    with applier(pg_db, p) as a:
        res = a.apply_partition(1, 0, changes, DEFS)
    got = rows(conn, "SELECT order_no, label, src, op, committed::text, tk, pos, csn, note "
                     "FROM replica.orders_h")
    # the token was on the insert only: the update leaves tk alone, sets the rest again; the
    # commit time 212,000,000,000,000,000 is 2005-11-29 04:53:20 UTC (trail-format.md, Times)
    assert got == [(7, "y", "trail", "SQL COMPUPDATE", "2005-11-29 04:53:20+00", "me", "200",
                    102, "d")]
    assert res.counts["replica.orders_h"].deletes == 1


def test_usedefaults_with_renamed_column(pg_db: str) -> None:
    conn = setup(pg_db, "CREATE TABLE o2 (id int PRIMARY KEY, title text, qty int)")
    p = params("MAP public.orders, TARGET public.o2, COLMAP (USEDEFAULTS, title = name);")
    t = Trail()
    with applier(pg_db, p) as a:
        a.apply_partition(1, 0, [t(OpType.INSERT, "public.orders",
                                   {0: b"1", 1: b"n", 2: b"3"})], DEFS)
    assert rows(conn, "SELECT * FROM o2") == [(1, "n", 3)]


def test_where_filters_rows(pg_db: str) -> None:
    conn = setup(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, name text, qty int)")
    p = params("MAP public.orders, TARGET public.orders, WHERE (qty > 5 AND name <> 'skip');")
    t = Trail()
    changes = [t(OpType.INSERT, "public.orders", {0: b"1", 1: b"a", 2: b"10"}),
               t(OpType.INSERT, "public.orders", {0: b"2", 1: b"a", 2: b"3"}),
               t(OpType.INSERT, "public.orders", {0: b"3", 1: b"skip", 2: b"30"})]
    with applier(pg_db, p) as a:
        a.apply_partition(1, 0, changes, DEFS)
    assert rows(conn, "SELECT id FROM orders") == [(1,)]


def test_missing_target_table_stops_at_start(pg_db: str) -> None:
    setup(pg_db, "CREATE TABLE orders (id int PRIMARY KEY)")
    p = params("MAP public.orders, TARGET public.orders;\nMAP public.x, TARGET replica.nope;\n")
    with pytest.raises(ConfigError) as err:
        applier(pg_db, p)
    msg = str(err.value)
    assert "rep1.prm, line 4" in msg and "replica.nope" in msg and "does not exist" in msg


def test_missing_checkpoint_table_is_reported(pg_db: str) -> None:
    psycopg.connect(pg_db, autocommit=True).execute("CREATE TABLE orders (id int)")
    p = params("MAP public.orders, TARGET public.orders;")
    with pytest.raises(ConfigError, match=r"ADD CHECKPOINTTABLE gg\.ckpt"):
        PgApplier(pg_db, p, checkpoint_table=CKPT).validate()


def test_assumetargetdefs_without_trail_metadata(pg_db: str) -> None:
    conn = setup(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, name text, qty int)")
    p = params("MAP public.orders, TARGET public.orders;", head="ASSUMETARGETDEFS\n")
    t = Trail()
    with applier(pg_db, p) as a:
        a.apply_partition(1, 0, [t(OpType.INSERT, "public.orders",
                                   {0: b"1", 1: b"n", 2: b"3"})], {})
    assert rows(conn, "SELECT * FROM orders") == [(1, "n", 3)]
    with applier(pg_db, params("MAP public.orders, TARGET public.orders;")) as a, \
            pytest.raises(ConfigError, match="ASSUMETARGETDEFS"):
        a.apply_partition(2, 0, [t(OpType.INSERT, "public.orders", {0: b"2"})], {})


def test_truncate_with_gettruncates(pg_db: str) -> None:
    conn = setup(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, name text, qty int)")
    t = Trail()
    changes = [t(OpType.INSERT, "public.orders", {0: b"1", 1: b"a", 2: b"1"}),
               t(OpType.TRUNCATE, "public.orders"),
               t(OpType.INSERT, "public.orders", {0: b"2", 1: b"b", 2: b"2"})]
    with applier(pg_db, params("MAP public.orders, TARGET public.orders;",
                               head="GETTRUNCATES\n")) as a:
        res = a.apply_partition(1, 0, changes, DEFS)
    assert rows(conn, "SELECT id FROM orders") == [(2,)]
    assert res.counts["public.orders"].truncates == 1
    # IGNORETRUNCATES (the default): the truncate is not applied
    with applier(pg_db, params("MAP public.orders, TARGET public.orders;")) as a:
        a.apply_partition(2, 0, [t(OpType.TRUNCATE, "public.orders")], DEFS)
    assert rows(conn, "SELECT id FROM orders") == [(2,)]


def test_a_real_goldengate_12_2_trail_applies_by_its_tdrs(pg_db: str) -> None:
    """Oracle's GoldenGate for Big Data sample trail (tests/fixtures/goldengate, written by
    GoldenGate 12.2): the Replicat maps its tables by the names and keys of their binary TDRs
    (no ASSUMETARGETDEFS) and leaves the demo tables as GoldenGate's demo scripts do."""
    from pathlib import Path

    from trailgate.trail import TrailReader

    real = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr"
    conn = setup(pg_db, "CREATE TABLE tcustmer (cust_code varchar(4) PRIMARY KEY, "
                 "name varchar(30), city varchar(20), state char(2));"
                 "CREATE TABLE tcustord (cust_code varchar(4), order_date timestamp, "
                 "product_code varchar(8), order_id numeric, product_price numeric(8,2), "
                 "product_amount numeric(6), transaction_id numeric, "
                 "PRIMARY KEY (cust_code, order_date, product_code, order_id))")
    changes, defs = [], {}
    for rt in TrailReader(real).transactions():
        txn = rt.transaction
        for change, record in zip(txn.changes, rt.records, strict=True):
            if record.table_def is not None:
                defs[change.table] = record.table_def
            changes.append(TrailChange(change, txn.csn, txn.xid, record.position,
                                       commit_time=change.io_time))
    p = params("MAP QASOURCE.TCUSTMER, TARGET public.tcustmer;\n"
               "MAP QASOURCE.TCUSTORD, TARGET public.tcustord;")
    with applier(pg_db, p) as a:
        a.apply_partition(1, 0, changes, defs)
    assert rows(conn, "SELECT cust_code, city, state FROM tcustmer ORDER BY 1") == [
        ("ANN", "NEW YORK", "NY"), ("BILL", "DENVER", "CO"), ("DAVE", "TALLAHASSEE", "FL"),
        ("JANE", "DENVER", "CO"), ("WILL", "SEATTLE", "WA")]
    got = rows(conn, "SELECT cust_code, order_date::text, product_price::text, "
               "product_amount FROM tcustord ORDER BY 1, 2")
    assert got == [("BILL", "1995-12-31 15:00:00", "14000.00", 3),
                   ("BILL", "1996-01-01 00:00:00", "25000.00", 15),
                   ("WILL", "1994-09-30 15:33:00", "16520.00", 3)]
