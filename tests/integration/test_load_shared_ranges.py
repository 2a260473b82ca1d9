"""The driver's threads and a Spark job loading the ranges of one run into PostgreSQL: every
row exactly once, whoever loads a range.

The Spark job normally takes the ranges the threads have not begun, last first.  Here it
is made to take every range while the threads take them too, each range begun by both (the
worst overlap): the target's range row lets one load it and the other skip it.  And a
range failing in a driver thread ends the load with that range's own message.
"""

from __future__ import annotations

import io
import re

import psycopg
import pytest
from load_support import differences, seed
from spark_conftest import spark_session  # noqa: F401  (fixture)

from trailgate.errors import TargetError
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.load import driver_threads
from trailgate.load.group import LoadOptions, run_load
from trailgate.load.manifest import Manifest, manifest_path

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def _load_home(tmp_path, src: str, tgt: str, params: str, tables: str) -> Home:
    """A home with the initial-load Extract ELOAD (one driver thread, ``params`` more, its
    TABLE ``tables``) for Replicat REP into ``tgt``, both added."""
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "eload.prm").write_text(
        f"EXTRACT eload\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP rep\n"
        f"{params}SPARK CONF trailgate.load.driverThreads=1\nTABLE {tables};\n")
    (home.dirprm / "rep.prm").write_text(f"REPLICAT rep\nTARGETDB {tgt}\n"
                                         "MAP app.*, TARGET app.*;\n")
    shell = Shell(home, io.StringIO())
    shell.run_script("ADD EXTRACT eload, SOURCEISTABLE\n"
                     "ADD REPLICAT rep, EXTTRAIL ./dirdat/aa, NODBCHECKPOINT\n", "t.oby")
    shell.close()
    return home


def test_threads_and_a_spark_job_on_the_same_ranges_load_each_once(pg_cluster, spark,
                                                                   tmp_path, monkeypatch):
    src = pg_cluster.create_database("shr_src")
    tgt = pg_cluster.create_database("shr_tgt")
    seed(src, orders=6000, items=2000, events=400)
    home = _load_home(tmp_path, src, tgt, "CREATETARGETS\nSPARK CONF "
                      "trailgate.load.sparkRanges=0\n", "app.*")
    real_init = driver_threads.RangeQueue.__init__

    def init(self, tasks):
        tasks = list(tasks)
        real_init(self, tasks)
        self.every = tasks

    monkeypatch.setattr(driver_threads.RangeQueue, "__init__", init)
    monkeypatch.setattr(driver_threads.RangeQueue, "rest",
                        lambda self: list(reversed(self.every)))
    assert run_load(home, "ELOAD", LoadOptions(out=io.StringIO(), rows_per_range=500,
                                               spark=spark)) == 0
    manifest = Manifest.load(manifest_path(home.dirchk, "ELOAD"))
    assert manifest is not None and manifest.complete
    total = sum(len(t.ranges) for t in manifest.tables)
    assert total > 10
    report = (home.dirrpt / "ELOAD.rpt").read_text()
    assert "Route:            PostgreSQL target" in report and "Spark job" in report
    found = re.search(r"Ranges: +(\d+) copied by the driver's threads, (\d+) by Spark", report)
    assert found is not None, report[-2000:]
    assert int(found[1]) + int(found[2]) == total  # each range loaded by exactly one of them
    diff = differences(src, tgt)
    assert not diff, diff


def test_a_range_failing_in_a_driver_thread_ends_the_load_with_its_message(pg_cluster,
                                                                            tmp_path):
    """A target that refuses some rows: the load stops taking ranges and ends with the
    failing range's own message; the ranges committed before stay done for the restart."""
    src = pg_cluster.create_database("shf_src")
    tgt = pg_cluster.create_database("shf_tgt")
    seed(src, orders=6000, items=200, events=50)
    with psycopg.connect(tgt, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.orders (id bigint PRIMARY KEY, "
                     "customer integer NOT NULL, amount numeric(12,2), note text, "
                     "updated timestamptz, CHECK (id < 5000))")
    home = _load_home(tmp_path, src, tgt, "", "app.orders")
    with pytest.raises(TargetError, match=r"(?s)loading app.orders into app.orders \(range \d+, "
                                          r".*check constraint.*nothing of this range was "
                                          r"committed"):
        run_load(home, "ELOAD", LoadOptions(out=io.StringIO(), rows_per_range=500))
    report = (home.dirrpt / "ELOAD.rpt").read_text()
    assert "driver's threads" in report and "no Spark session" in report
    with psycopg.connect(tgt) as conn:
        loaded = conn.execute("SELECT count(*), coalesce(sum(rows), 0) FROM "
                              "trailgate.load_ranges").fetchone()
        rows = conn.execute("SELECT count(*) FROM app.orders").fetchone()
    assert loaded is not None and rows is not None
    assert 0 < loaded[0] < 12 and loaded[1] == rows[0] < 5000  # whole ranges, before it
