"""The compare finds every injected difference and nothing on equal tables, and its repair
SQL fixes what it found (in-flight rows under a running pipeline: tests/e2e).

PostgreSQL to PostgreSQL: both databases seeded with the same rows, then the target is
changed: a missing row, an extra row, one changed column, NULL instead of an empty string,
a timestamp with another fraction, a key present with other values everywhere, and a
doubled row in the table without a key.  PostgreSQL to Delta: the target loaded by an
initial load, then changed the same way through deltalake (the same seven kinds).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from load_support import differences, seed
from spark_conftest import spark_session  # noqa: F401  (fixture)

from trailgate.compare.run import CompareOptions, compare
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.load.group import LoadOptions, run_load

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def _home(path: Path, src: str, target_line: str) -> Home:
    home = Home(path).create()
    home.add_group(GroupInfo("EXT1", "EXTRACT", "TRANLOG"))
    home.add_trail("EXT1", TrailInfo("./dirdat/aa"))
    home.add_group(GroupInfo("REP1", "REPLICAT", "EXTTRAIL", "./dirdat/aa"))
    (home.dirprm / "ext1.prm").write_text(f"EXTRACT ext1\nSOURCEDB {src}\n"
                                          "EXTTRAIL ./dirdat/aa\nTABLE app.*;\n")
    (home.dirprm / "rep1.prm").write_text(f"REPLICAT rep1\n{target_line}\n"
                                          "MAP app.*, TARGET app.*;\n")
    return home


def _by_table(outcome) -> dict:  # type: ignore[no-untyped-def]
    return {r.source: r for r in outcome.results}


def test_pg_to_pg_finds_every_difference_and_repairs_them(pg_cluster, spark, tmp_path):
    src = pg_cluster.create_database("cmp_src")
    tgt = pg_cluster.create_database("cmp_tgt")
    seed(src)
    seed(tgt)
    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("DELETE FROM app.orders WHERE id = 10")                          # missing
        conn.execute("INSERT INTO app.orders VALUES (999999, 1, 1, 'x', now())")      # extra
        conn.execute("UPDATE app.orders SET amount = amount + 1 WHERE id = 20")       # a column
        conn.execute("UPDATE app.orders SET note = NULL WHERE id = 21")   # '' (21 % 7 = 0)
        conn.execute("UPDATE app.orders SET updated = updated + interval '1 microsecond' "
                     "WHERE id = 30")                                          # a fraction
        conn.execute("UPDATE app.orders SET customer = 0, amount = 0, note = 'other', "
                     "updated = now() WHERE id = 40")                          # other values
        conn.execute("INSERT INTO app.increments (k, delta, seq) SELECT k, delta, seq FROM "
                     "app.increments WHERE seq = 5")                           # a double
    home = _home(tmp_path / "gg", src, f"TARGETDB {tgt}")
    report, repair = tmp_path / "report.json", tmp_path / "repair.sql"
    out = io.StringIO()
    outcome = compare(home, "EXT1", "REP1", CompareOptions(
        confirm=False, spark=spark, out=out, report=report, repair=repair,
        rows_per_range=1000))
    text = out.getvalue()
    got = _by_table(outcome)
    orders, inc = got["app.orders"], got["app.increments"]
    assert (orders.missing, orders.extra, orders.different) == (1, 1, 4), text
    assert orders.columns == {"amount": 2, "note": 2, "updated": 2, "customer": 1}, text
    assert orders.ranges_differing < orders.ranges  # rows were read only where hashes differ
    assert (inc.missing, inc.extra, inc.different) == (0, 1, 0)
    assert got["app.items"].status == got["app.events"].status == "in sync"
    assert orders.compared == 6000 and orders.in_sync == 6000 - 1 - 4
    assert "OUT OF SYNC" in text and "differing columns:" in text
    data = json.loads(report.read_text())
    entry = next(t for t in data["tables"] if t["source"] == "app.orders")
    assert entry["missing_on_target"] == 1 and entry["different"] == 4
    keys = {s["key"] for s in entry["samples"]["different"]}
    assert keys == {"(20)", "(21)", "(30)", "(40)"}
    null_vs_empty = next(s for s in entry["samples"]["different"] if s["key"] == "(21)")
    assert null_vs_empty["source"]["note"] == "" and null_vs_empty["target"]["note"] is None

    outcome = compare(home, "EXT1", "REP1", CompareOptions(
        confirm=False, spark=spark, out=io.StringIO(), repair=repair, apply_repair=True))
    again = compare(home, "EXT1", "REP1", CompareOptions(confirm=False, spark=spark,
                                                         out=io.StringIO()))
    assert again.in_sync, [(r.source, r.status) for r in again.results]


def test_pg_to_delta_finds_the_differences(pg_cluster, spark, tmp_path):
    from deltalake import DeltaTable, write_deltalake

    src = pg_cluster.create_database("cmpd_src")
    seed(src, orders=3000, items=800, events=200)
    home = _home(tmp_path / "gg", src, "TARGETDELTA ./delta")
    (home.dirprm / "el.prm").write_text(f"EXTRACT el\nSOURCEISTABLE\nSOURCEDB {src}\n"
                                        "RMTTASK REPLICAT, GROUP rep1\nTABLE app.*;\n")
    home.add_group(GroupInfo("EL", "EXTRACT", "SOURCEISTABLE"))
    assert run_load(home, "EL", LoadOptions(out=io.StringIO(), spark=spark,
                                            rows_per_range=1000)) == 0
    same = compare(home, "EXT1", "REP1", CompareOptions(confirm=False, spark=spark,
                                                        out=io.StringIO()))
    assert same.in_sync, [(r.source, r.status, r.out_of_sync) for r in same.results]

    path = str(home.path / "delta/app/orders")
    dt = DeltaTable(path)
    dt.delete("id = 10")
    dt.update(predicate="id = 20", updates={"amount": "amount + 1"})
    dt.update(predicate="id = 21", updates={"note": "NULL"})
    dt.update(predicate="id = 30", updates={"updated": "updated + INTERVAL '1 microsecond'"})
    extra = pa.table({"id": [999999], "customer": [1], "amount": [None], "note": ["x"],
                      "updated": [None]}).cast(pa.schema(dt.schema()))
    write_deltalake(dt, extra, mode="append")
    dt.update(predicate="id = 40", updates={"customer": "0", "amount": "0",
                                            "note": "'other'"})           # other values
    inc = DeltaTable(str(home.path / "delta/app/increments"))
    double = inc.to_pyarrow_table(filters=[("seq", "=", 5)])
    assert double.num_rows == 1
    write_deltalake(inc, double, mode="append")                        # a doubled row
    outcome = compare(home, "EXT1", "REP1", CompareOptions(
        confirm=False, spark=spark, out=io.StringIO(), rows_per_range=1000))
    got = _by_table(outcome)
    orders, increments = got["app.orders"], got["app.increments"]
    assert (orders.missing, orders.extra, orders.different) == (1, 1, 4)
    assert orders.columns == {"amount": 2, "note": 2, "updated": 1, "customer": 1}
    assert (increments.missing, increments.extra, increments.different) == (0, 1, 0)
    assert got["app.items"].status == got["app.events"].status == "in sync"


AWKWARD = ["two\nlines", "a\n-- not a comment\nb", "\nBEGIN;\n", "COMMIT;\nROLLBACK;",
           "it's \\ here", "--", "BEGIN;", "end;\n\n"]


def test_repair_keeps_values_with_newlines_comments_and_begin_ggsci_and_cli(
        pg_cluster, spark, tmp_path):
    """The repair file runs as one script: text values holding a newline, a line starting
    ``--`` or a ``BEGIN;`` line stay whole.  GGSCI's COMPARE writes and applies it, then
    ``trailgate compare`` (the CLI, in this process) finds the tables in sync."""
    from trailgate.cli import main
    from trailgate.ggsci.shell import Shell

    src = pg_cluster.create_database("cmpr_src")
    tgt = pg_cluster.create_database("cmpr_tgt")
    for db in (src, tgt):
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA app; CREATE TABLE app.notes (id int PRIMARY KEY, "
                         "body text, n int); CREATE TABLE app.loose (body text, n int)")
            for i, body in enumerate(AWKWARD):
                conn.execute("INSERT INTO app.notes VALUES (%s, %s, %s)", (i, body, i))
                conn.execute("INSERT INTO app.loose VALUES (%s, %s)", (body, i))
    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("DELETE FROM app.notes WHERE id IN (0, 2)")              # missing
        conn.execute("UPDATE app.notes SET body = 'plain' WHERE id IN (1, 3, 6)")  # different
        conn.execute("INSERT INTO app.notes VALUES (100, %s, 0)", (AWKWARD[1],))   # extra
        conn.execute("INSERT INTO app.loose SELECT * FROM app.loose WHERE n IN (1, 2)")  # doubles
        conn.execute("DELETE FROM app.loose WHERE n = 4")                     # missing, keyless
    home = _home(tmp_path / "gg", src, f"TARGETDB {tgt}")
    out = io.StringIO()
    shell = Shell(home, out)
    shell.run_interactive_line("COMPARE EXTRACT ext1, REPLICAT rep1, NOCONFIRM, "
                               "REPORT ./dirrpt/cmp.json, REPAIR ./dirrpt/repair.sql, "
                               "APPLYREPAIR")
    shell.close()
    text = out.getvalue()
    assert "OUT OF SYNC" in text and "Repair applied." in text, text
    assert "not in sync with the source" in text, text
    report = json.loads((home.path / "dirrpt/cmp.json").read_text())
    notes = next(t for t in report["tables"] if t["source"] == "app.notes")
    assert (notes["missing_on_target"], notes["extra_on_target"], notes["different"]) \
        == (2, 1, 3)
    assert differences(src, tgt, ("app.notes", "app.loose")) == {}
    assert main(["--home", str(home.path), "compare", "EXT1", "REP1", "--no-confirm"]) == 0
