"""The initial load's other outputs and its bad input.

* ``EXTFILE``: the load written as a trail (one file per range, written in parallel),
  applied by a Replicat, equals the source;
* Parquet: the change log of each table gets the load as batch -1, INSERT rows at the cut;
* bad input: a missing source table, a target with other columns, a target that already
  holds rows, a MAP with a COLMAP expression — each a clear message naming the table and
  what to do, before anything is written; INFO shows an unfinished load as INCOMPLETE.
"""

from __future__ import annotations

import io
from pathlib import Path

import psycopg
import pyarrow.dataset as ds
import pytest
from load_support import differences, seed
from spark_conftest import spark_session  # noqa: F401  (fixture)

from trailgate.errors import ConfigError
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.load.group import LoadOptions, run_load
from trailgate.run import run_named_group
from trailgate.trail.naming import TrailName
from trailgate.wallet import CredentialStore

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def _ggsci(home: Home, script: str) -> str:
    out = io.StringIO()
    shell = Shell(home, out)
    try:
        shell.run_script(script, "t.oby")
    finally:
        shell.close()
    return out.getvalue()


def test_load_to_a_trail_file_then_a_replicat(pg_cluster, spark, tmp_path):
    src = pg_cluster.create_database("lo_src")
    tgt = pg_cluster.create_database("lo_tgt")
    seed(src, orders=4000, items=2500, events=300)
    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.orders (id bigint PRIMARY KEY, "
                     "customer integer NOT NULL, amount numeric(12,2), note text, "
                     "updated timestamptz); CREATE TABLE app.items (sku text PRIMARY KEY, "
                     "qty integer, price real); CREATE TABLE app.events (id integer PRIMARY "
                     "KEY, payload jsonb, blob bytea)")
    home = Home(tmp_path / "gg").create()
    # by credential alias: the load's Spark tasks open the sealed store for the password
    login = f"{pg_cluster.superuser}@127.0.0.1:{pg_cluster.port}"
    CredentialStore(home.path).add("src", f"{login}/lo_src", pg_cluster.password)
    CredentialStore(home.path).add("tgt", f"{login}/lo_tgt", pg_cluster.password)
    (home.dirprm / "efile.prm").write_text(
        "EXTRACT efile\nSOURCEISTABLE\nSOURCEDB lo_src, USERIDALIAS src\n"
        "EXTFILE ./dirdat/il, MEGABYTES 100\nTABLE app.orders;\nTABLE app.items;\n"
        "TABLE app.events;\n")
    (home.dirprm / "rload.prm").write_text("REPLICAT rload\nTARGETDB lo_tgt, USERIDALIAS tgt\n"
                                           "BATCHSQL\nMAP app.*, TARGET app.*;\n")
    _ggsci(home, "ADD EXTRACT efile, SOURCEISTABLE\n"
                 "ADD REPLICAT rload, EXTTRAIL ./dirdat/il, NODBCHECKPOINT\n")
    assert run_load(home, "EFILE", LoadOptions(out=io.StringIO(), rows_per_range=1000,
                                               spark=spark)) == 0
    files = TrailName(home.dirdat / "il").sequence_numbers()
    assert files == list(range(len(files))) and len(files) > 3  # one per range, no gap
    assert run_named_group(home, "RLOAD", once=True, spark=spark) == 0
    assert not differences(src, tgt, ("app.orders", "app.items", "app.events"))
    info = _ggsci(home, "INFO EXTRACT efile\nSTATS EXTRACT efile\n")
    assert "Initial load         complete" in info and "3 of 3 table(s) complete" in info
    assert "Total inserts" in info
    for path in home.path.rglob("*"):  # no password in any file the load and apply wrote
        if path.is_file():
            assert pg_cluster.password.encode() not in path.read_bytes(), path


def test_load_to_parquet_change_logs(pg_cluster, spark, tmp_path):
    src = pg_cluster.create_database("lp_src")
    seed(src, orders=3000, items=1200, events=200)
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "epq.prm").write_text(
        f"EXTRACT epq\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP reppq\n"
        "TABLE app.orders;\nTABLE app.events;\n")
    (home.dirprm / "reppq.prm").write_text("REPLICAT reppq\nTARGETPARQUET ./cdc\n"
                                           "MAP app.*, TARGET lake.*;\n")
    _ggsci(home, "ADD EXTRACT epq, SOURCEISTABLE\nADD REPLICAT reppq, EXTTRAIL ./dirdat/aa\n")
    assert run_load(home, "EPQ", LoadOptions(out=io.StringIO(), rows_per_range=1000,
                                             spark=spark)) == 0
    log = ds.dataset(str(home.path / "cdc/lake/orders"), partitioning="hive").to_table()
    assert log.num_rows == 3000
    assert set(log.column("op").to_pylist()) == {"INSERT"}
    assert set(log.column("batch_id").to_pylist()) == {-1}
    ids = sorted(r["id"] for r in log.column("after").to_pylist())
    assert ids == list(range(1, 3001))


def _bad_home(tmp_path: Path, src: str, tgt: str, tables: str, maps: str = "app.*") -> Home:
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "eb.prm").write_text(
        f"EXTRACT eb\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP rb\n{tables}")
    (home.dirprm / "rb.prm").write_text(f"REPLICAT rb\nTARGETDB {tgt}\n"
                                        f"MAP {maps}, TARGET app.*;\n")
    _ggsci(home, "ADD EXTRACT eb, SOURCEISTABLE\nADD REPLICAT rb, EXTTRAIL ./dirdat/aa, "
                 "NODBCHECKPOINT\n")
    return home


def test_bad_input_is_refused_with_the_table_and_what_to_do(pg_cluster, spark, tmp_path):
    src = pg_cluster.create_database("lb_src")
    tgt = pg_cluster.create_database("lb_tgt")
    seed(src, orders=500, items=100, events=50)
    opts = LoadOptions(out=io.StringIO(), spark=spark)

    home = _bad_home(tmp_path / "a", src, tgt, "TABLE app.orders;\nTABLE app.nothere;\n")
    with pytest.raises(ConfigError, match=r"TABLE app.nothere: no such table .*check the "
                                          r"name"):
        run_load(home, "EB", opts)

    home = _bad_home(tmp_path / "b", src, tgt, "TABLE app.orders;\n")
    with pytest.raises(ConfigError, match=r"app.orders .* does not exist .*CREATETARGETS"):
        run_load(home, "EB", opts)

    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.orders (id bigint PRIMARY KEY, "
                     "customer integer, amount numeric(12,2), remark text)")
    home = _bad_home(tmp_path / "c", src, tgt, "TABLE app.orders;\n")
    with pytest.raises(ConfigError, match=r"app.orders .* has no column for note, updated "
                                          r"of source table app.orders: add the column"):
        run_load(home, "EB", opts)

    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("ALTER TABLE app.orders DROP COLUMN remark, ADD COLUMN note text, "
                     "ADD COLUMN updated timestamptz")
        conn.execute("INSERT INTO app.orders VALUES (1, 1, 1, 'x', now())")
    home = _bad_home(tmp_path / "d", src, tgt, "TABLE app.orders;\n")
    with pytest.raises(ConfigError, match=r"app.orders .* already holds rows.*start empty "
                                          r"\(TRUNCATE it\)"):
        run_load(home, "EB", opts)
    info = _ggsci(home, "INFO EXTRACT eb\n")
    assert "INCOMPLETE" in info  # nothing half-loaded looks complete

    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("TRUNCATE app.orders")
    home = _bad_home(tmp_path / "e", src, tgt, "TABLE app.orders;\n")
    (home.dirprm / "rb.prm").write_text(
        f"REPLICAT rb\nTARGETDB {tgt}\nMAP app.orders, TARGET app.orders, "
        "COLMAP (USEDEFAULTS, note = @GETENV('GGHEADER', 'OPTYPE'));\n")
    with pytest.raises(ConfigError, match=r"COLMAP \(note = …\): an initial load maps "
                                          r"columns by name"):
        run_load(home, "EB", opts)


def _columns(conninfo: str, schema: str, name: str) -> list[tuple[str, str, bool]]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute(
            "SELECT attname::text, format_type(atttypid, atttypmod), attnotnull FROM "
            "pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum", (f'"{schema}"."{name}"',)).fetchall()


def _primary_key(conninfo: str, schema: str, name: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        return [r[0] for r in conn.execute(
            "SELECT a.attname::text FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) "
            "WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = k.attnum WHERE i.indrelid = %s::regclass AND i.indisprimary "
            "ORDER BY k.n", (f'"{schema}"."{name}"',)).fetchall()]


def test_createtargets_makes_the_mapped_tables_with_types_not_null_and_key(
        pg_cluster, spark, tmp_path):
    """CREATETARGETS with MAP … TARGET renaming schema and table: the created tables have
    the source's columns, types, NOT NULL and primary key, and hold the source's rows."""
    from load_support import rows

    src = pg_cluster.create_database("lc_src")
    tgt = pg_cluster.create_database("lc_tgt")
    seed(src, orders=300, items=10, events=30)
    with psycopg.connect(src, autocommit=True) as conn:  # a composite key, two NOT NULLs
        conn.execute("CREATE TABLE app.lines (order_id bigint NOT NULL, line smallint, "
                     "sku varchar(24) NOT NULL, qty numeric(8,3), at timestamp(3), "
                     "PRIMARY KEY (order_id, line))")
        conn.execute("INSERT INTO app.lines SELECT g / 3, g % 3, 'sku-' || g, g / 7.0, "
                     "timestamp '2024-05-01' + g * interval '1.2345 s' "
                     "FROM generate_series(1, 900) g")
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "ec.prm").write_text(
        f"EXTRACT ec\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP rc\n"
        "CREATETARGETS\nTABLE app.orders;\nTABLE app.lines;\nTABLE app.events;\n")
    (home.dirprm / "rc.prm").write_text(
        f"REPLICAT rc\nTARGETDB {tgt}\nMAP app.orders, TARGET sales.orders_copy;\n"
        "MAP app.lines, TARGET sales.order_lines;\nMAP app.events, TARGET app.events;\n")
    _ggsci(home, "ADD EXTRACT ec, SOURCEISTABLE\nADD REPLICAT rc, EXTTRAIL ./dirdat/aa, "
                 "NODBCHECKPOINT\n")
    assert run_load(home, "EC", LoadOptions(out=io.StringIO(), spark=spark)) == 0
    for (s_schema, s_name), (t_schema, t_name) in (
            (("app", "orders"), ("sales", "orders_copy")),
            (("app", "lines"), ("sales", "order_lines")),
            (("app", "events"), ("app", "events"))):
        assert _columns(tgt, t_schema, t_name) == _columns(src, s_schema, s_name)
        assert _primary_key(tgt, t_schema, t_name) == _primary_key(src, s_schema, s_name)
        assert rows(tgt, f"{t_schema}.{t_name}") == rows(src, f"{s_schema}.{s_name}")
    assert _columns(tgt, "sales", "order_lines") == [
        ("order_id", "bigint", True), ("line", "smallint", True),
        ("sku", "character varying(24)", True), ("qty", "numeric(8,3)", False),
        ("at", "timestamp(3) without time zone", False)]
    assert _primary_key(tgt, "sales", "orders_copy") == ["id"]
    with psycopg.connect(tgt) as conn:  # nothing created under the source's names
        assert conn.execute("SELECT to_regclass('app.orders'), to_regclass('app.lines')"
                            ).fetchone() == (None, None)


_ONE_RANGE_EACH = """
import sys
from trailgate.capture.postgres import copy_read
from trailgate.capture.postgres.catalog import describe_table
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.db.connect import connect
from trailgate.load.job import LoadJob, LoadTable, SinkSpec
from trailgate.load.pg_sink import ensure_progress_table, load_range

src, tgt, *names = sys.argv[1:]
with connect(tgt) as conn:
    ensure_progress_table(conn)
for number, qualified in enumerate(names):
    schema, name = qualified.split(".")
    with connect(src) as conn:
        oid = conn.execute("SELECT %s::regclass::oid", (qualified,)).fetchone()[0]
        t = describe_table(conn, oid, schema, name)
    cols = tuple(copy_read.ReadColumn(c.name, c.type_name, c.name, c.type_name)
                 for c in t.read_columns)
    table = LoadTable(number, schema, name, schema, name, cols, None, t.table_def())
    job = LoadJob("PUREPY", src, None, 0, SinkSpec("POSTGRES", tgt), {number: table}, (), "")
    rows = load_range(job, table, KeyRange(0, "all"), lambda n: None)
    print(qualified, rows, "python" if copy_read._c_pump() is None else "c")
"""


def test_load_range_through_pure_python_copy_equals_the_c_pump(pg_cluster, tmp_path):
    """The load's COPY of a range with ``TRAILGATE_PURE_PYTHON=1`` (Python's copy_out /
    copy_in loop, in a process of its own) and with the C pump (``_copypump``, when built)
    fill their targets with the same rows as the source: the Python code is the reference
    the C pump is checked against."""
    import os
    import subprocess
    import sys

    from load_support import SCHEMA_DDL, rows

    from trailgate.capture.postgres.copy_read import _c_pump

    src = pg_cluster.create_database("lpy_src")
    seed(src, orders=1500, items=700, events=300)
    with psycopg.connect(src, autocommit=True) as conn:  # rows larger than the pump's block
        conn.execute("UPDATE app.events SET payload = jsonb_build_object('big', "
                     "repeat(md5(id::text), 5000)) WHERE id IN (7, 8, 200)")
    targets = {}
    for how in ("python", "c"):
        targets[how] = pg_cluster.create_database(f"lpy_{how}")
        with psycopg.connect(targets[how], autocommit=True) as conn:
            conn.execute(SCHEMA_DDL)
    root = Path(__file__).resolve().parents[2]
    tables = [f"app.{n}" for n in ("orders", "items", "increments", "events")]
    ways = [("python", "1")] + ([("c", "0")] if _c_pump() is not None else [])
    for how, switch in ways:
        env = dict(os.environ, PYTHONPATH=str(root / "src"), TRAILGATE_PURE_PYTHON=switch)
        done = subprocess.run([sys.executable, "-c", _ONE_RANGE_EACH, src, targets[how],
                               *tables], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        for line, table in zip(done.stdout.splitlines(), tables, strict=True):
            name, count, path = line.split()
            assert (name, path) == (table, how), (how, done.stdout)
            assert int(count) == sum(rows(src, table).values())
    for how, _ in ways:  # without a compiler the C pump is not built: Python alone
        for name in ("orders", "items", "increments", "events"):
            assert rows(targets[how], f"app.{name}") == rows(src, f"app.{name}")
