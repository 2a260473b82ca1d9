"""Compare while replication runs and lags: no false difference.

An Extract and a Replicat run as their own processes, the Replicat's batch window long
(5 s) so it lags the source; a workload changes rows while the compare's first pass reads
them.  The rows that differ then are only in flight: the confirmation waits until the
Replicat has applied what the source had committed, looks again, and the compare reports
every table in sync — with the rows it resolved that way counted.
"""

from __future__ import annotations

import io
import threading

import pytest
from load_support import Workload, seed
from replicat_support import start_group

from trailgate.compare.run import CompareOptions, compare
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.process import lifecycle

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.heavy]


def test_compare_under_a_lagging_pipeline_reports_no_false_difference(e2e_cluster, tmp_path):
    src = e2e_cluster.create_database("cmpl_src")
    tgt = e2e_cluster.create_database("cmpl_tgt")
    seed(src, orders=5000, items=2000, events=500)
    seed(tgt, orders=5000, items=2000, events=500)
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "extl.prm").write_text(f"EXTRACT extl\nSOURCEDB {src}\nEXTTRAIL ./dirdat/aa\n"
                                          "SPARK MASTER local[1]\nTABLE app.*;\n")
    (home.dirprm / "repl.prm").write_text(f"REPLICAT repl\nTARGETDB {tgt}\nBATCHSQL\n"
                                          "SPARK MASTER local[1]\nSPARK TRIGGER 5 SECONDS\n"
                                          "SPARK CONF trailgate.replicat.continuous=false\n"
                                          "MAP app.*, TARGET app.*;\n")
    shell = Shell(home, io.StringIO())
    shell.run_script(f"DBLOGIN SOURCEDB '{src}'\nADD TRANDATA app.*\n"
                     "ADD EXTRACT extl, TRANLOG, BEGIN NOW\nADD EXTTRAIL ./dirdat/aa, "
                     f"EXTRACT extl\nDBLOGIN SOURCEDB '{tgt}'\nADD CHECKPOINTTABLE gg.ck\n"
                     "ADD REPLICAT repl, EXTTRAIL ./dirdat/aa, CHECKPOINTTABLE gg.ck\n", "s")
    shell.close()
    from trailgate.spark import get_spark

    spark = get_spark("trailgate compare test", master="local[2]")
    log = tmp_path / "groups.log"
    procs = [start_group(home, "extract", "EXTL", log=log),
             start_group(home, "replicat", "REPL", log=log)]
    work = Workload(src, seed=5, pause=0.01,
                    tables=("app.orders", "app.items", "app.events")).start()
    try:
        work.wait_for(100)
        stopper = threading.Timer(10.0, work.stop)  # changes go on while the first pass reads
        stopper.start()
        out = io.StringIO()
        outcome = compare(home, "EXTL", "REPL", CompareOptions(
            spark=spark, out=out, confirm_timeout=300, rows_per_range=1500))
        stopper.join()
    finally:
        work.stop()
        for name in ("EXTL", "REPL"):
            kind = "EXTRACT" if name == "EXTL" else "REPLICAT"
            lifecycle.stop_group(home, kind, name, timeout=120)
        for p in procs:
            p.wait(timeout=60)
    text = out.getvalue()
    assert outcome.note is None, text
    assert outcome.in_sync, text
    assert sum(r.resolved for r in outcome.results) > 0, text  # it did see rows in flight
