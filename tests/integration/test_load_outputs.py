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
    (home.dirprm / "efile.prm").write_text(
        f"EXTRACT efile\nSOURCEISTABLE\nSOURCEDB {src}\nEXTFILE ./dirdat/il, MEGABYTES 100\n"
        "TABLE app.orders;\nTABLE app.items;\nTABLE app.events;\n")
    (home.dirprm / "rload.prm").write_text(f"REPLICAT rload\nTARGETDB {tgt}\nBATCHSQL\n"
                                           "MAP app.*, TARGET app.*;\n")
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
