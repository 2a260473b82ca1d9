"""DDL across trail files, through the real Extract and Replicat: a DDL record that is the
first record of a new file (a restarted Extract begins a new file), a DDL inside a run that
rolls over at MEGABYTES 1, and a table's new definition re-emitted at the start of a later
file are decoded and applied, with the Replicat restarted in each new file."""

from __future__ import annotations

import psycopg
import pytest
from extract_support import make_home
from replicat_support import CKPT, pg_target, query, replicat_home
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.capture.postgres.ddl_setup import add_ddlsupport
from trailgate.capture.postgres.trandata import add_schematrandata
from trailgate.db.connect import connect
from trailgate.extract.postgres.group import RunOptions as ExtractOptions
from trailgate.extract.postgres.group import run_extract_group
from trailgate.model import OpType
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.trail import TrailName, TrailReader

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.heavy]


def _first_records(path: object) -> list[int]:
    return [raw.io_type for _, raw in TrailReader(path, single_file=True).raw_records()][:2]


def test_ddl_at_the_start_of_new_files_and_across_rollover(spark, pg_cluster, pg_db, tmp_path):
    source_name = str(psycopg.conninfo.conninfo_to_dict(pg_db)["dbname"])
    target = pg_cluster.create_database(f"{source_name}_tgt"[:60])
    pg_target(target, "CREATE SCHEMA rep; CREATE TABLE rep.t (id int PRIMARY KEY, v text);")
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text)")
        add_ddlsupport(conn, "ggadmin")
        add_schematrandata(conn, "app")
    home = make_home(tmp_path / "src", pg_db, "EXTD", "TABLE app.*;", megabytes=1,
                     extra="DDL INCLUDE MAPPED\n")
    home.globals_file.write_text("GGSCHEMA ggadmin\n")
    trail = home.dirdat / "aa"
    rep = replicat_home(tmp_path / "tgt", f"REPLICAT rep1\nTARGETDB {target}\n"
                        "SPARK MASTER local[1]\nMAP app.*, TARGET rep.*;\n", trail=str(trail),
                        checkpoint_table=CKPT)

    def extract() -> None:
        assert run_extract_group(home, "EXTD", ExtractOptions(once=True), spark=spark) == 0

    def replicat() -> None:
        assert run_replicat_group(rep, "REP1", RunOptions(once=True), spark=spark) == 0

    def source(sql: str) -> None:
        with connect(pg_db) as conn:
            conn.execute(sql)

    source("INSERT INTO app.t SELECT g, 'row ' || g FROM generate_series(1, 3) g")
    extract()
    replicat()
    # the DDL is the first record of the next file: each Extract run begins a new file
    source("ALTER TABLE app.t ADD c int DEFAULT 9")
    source("INSERT INTO app.t VALUES (4, 'after', 40)")
    extract()
    seqs = TrailName(trail).sequence_numbers()
    assert len(seqs) == 2
    assert _first_records(TrailName(trail).file(seqs[-1])) == [OpType.DDL, OpType.METADATA]
    replicat()  # restarts at the end of the first file, then reads the DDL first
    assert query(target, "SELECT id, v, c FROM rep.t ORDER BY id") == [
        (1, "row 1", 9), (2, "row 2", 9), (3, "row 3", 9), (4, "after", 40)]
    # one run past MEGABYTES 1 with a DDL in it: rows of both shapes on both sides of it
    source("INSERT INTO app.t SELECT g, repeat('x', 900), g FROM generate_series(5, 1004) g")
    source("ALTER TABLE app.t ADD d text")
    source("INSERT INTO app.t SELECT g, repeat('y', 900), g, 'd' || g "
           "FROM generate_series(1005, 2004) g")
    extract()
    assert len(TrailName(trail).sequence_numbers()) >= 4
    # a later file with rows only: the table's new definition is written again before them
    source("UPDATE app.t SET d = 'late' WHERE id IN (1, 2004)")
    extract()
    last = TrailName(trail).file(TrailName(trail).sequence_numbers()[-1])
    assert _first_records(last)[0] == OpType.METADATA
    first_meta = next(r for r in TrailReader(last, single_file=True).records()
                      if r.table_def is not None)
    assert [c.name for c in first_meta.table_def.columns] == ["id", "v", "c", "d"]
    replicat()
    columns = "SELECT id, v, c, d FROM {} ORDER BY id"
    assert query(target, columns.format("rep.t")) == query(pg_db, columns.format("app.t"))
    assert len(query(target, "SELECT 1 FROM rep.t")) == 2004
