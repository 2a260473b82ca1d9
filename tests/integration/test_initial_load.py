"""The initial load hands over to change capture exactly, while a workload runs.

One source, a randomised workload on four kinds of table (bigint key with key updates, text
key split by ctid, no key at all, jsonb/bytea) and two loads into two Replicats' targets:

* ``ELOAD`` into PostgreSQL (targets created by CREATETARGETS), the continuing Extract's
  slot created by the load with the snapshot it reads (``ADD EXTRACT ext1, TRANLOG,
  INITIALLOAD eload``): the Replicat needs no filter at all;
* ``ELDELTA`` into Delta, after the Extract's slot exists: its cut comes from a temporary
  slot and the Delta Replicat leaves out the changes before it (instantiation registry).

Then the Extract and both Replicats catch up, and every table must equal the source, row
for row: no row lost, none doubled (the keyless increments table would show a double).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from load_support import Workload, differences, seed
from spark_conftest import spark_session  # noqa: F401  (fixture)

from trailgate.apply.instantiation import Instantiation
from trailgate.demo.compare import compare_tables
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.load.group import LoadOptions, run_load
from trailgate.load.manifest import Manifest, manifest_path
from trailgate.run import run_named_group

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

TABLES = ["app.orders", "app.items", "app.increments", "app.events"]


def _home(path: Path, src: str, tgt: str) -> Home:
    home = Home(path).create()
    p = home.dirprm
    (p / "ext1.prm").write_text(f"EXTRACT ext1\nSOURCEDB {src}\nEXTTRAIL ./dirdat/aa\n"
                                "TABLE app.*;\n")
    (p / "eload.prm").write_text(f"EXTRACT eload\nSOURCEISTABLE\nSOURCEDB {src}\n"
                                 "RMTTASK REPLICAT, GROUP reppg\nCREATETARGETS\nTABLE app.*;\n")
    (p / "eldelta.prm").write_text(f"EXTRACT eldelta\nSOURCEISTABLE\nSOURCEDB {src}\n"
                                   "RMTTASK REPLICAT, GROUP repdl\nTABLE app.*;\n")
    (p / "reppg.prm").write_text(f"REPLICAT reppg\nTARGETDB {tgt}\nBATCHSQL\n"
                                 "MAP app.*, TARGET app.*;\n")
    (p / "repdl.prm").write_text("REPLICAT repdl\nTARGETDELTA ./delta\nMAP app.*, TARGET app.*;\n")
    shell = Shell(home, io.StringIO())
    shell.run_script(f"""
DBLOGIN SOURCEDB '{src}'
ADD TRANDATA app.*
ADD EXTRACT eload, SOURCEISTABLE
ADD EXTRACT eldelta, SOURCEISTABLE
ADD EXTRACT ext1, TRANLOG, INITIALLOAD eload
ADD EXTTRAIL ./dirdat/aa, EXTRACT ext1
DBLOGIN SOURCEDB '{tgt}'
ADD CHECKPOINTTABLE gg.ckpt
ADD REPLICAT reppg, EXTTRAIL ./dirdat/aa, CHECKPOINTTABLE gg.ckpt
ADD REPLICAT repdl, EXTTRAIL ./dirdat/aa, NODBCHECKPOINT
""", "setup.oby")
    shell.close()
    return home


def test_load_while_a_workload_runs_then_cdc_is_exact(pg_cluster, spark, tmp_path):
    src = pg_cluster.create_database("load_src")
    tgt = pg_cluster.create_database("load_tgt")
    seed(src)
    home = _home(tmp_path / "gg", src, tgt)
    out = io.StringIO()
    work = Workload(src, seed=7).start()
    try:
        work.wait_for(50)
        assert run_load(home, "ELOAD", LoadOptions(out=out, rows_per_range=1500,
                                                   spark=spark)) == 0
        ext1 = home.group("EXT1")
        assert ext1 is not None and "lsn" in ext1.begin  # the load created its slot
        work.wait_for(work.committed + 50)
        assert run_load(home, "ELDELTA", LoadOptions(out=out, rows_per_range=1500,
                                                     spark=spark)) == 0
        work.wait_for(work.committed + 50)
    finally:
        committed = work.stop()
    assert committed > 150
    manifest = Manifest.load(manifest_path(home.dirchk, "ELOAD"))
    assert manifest is not None and manifest.complete
    splits = {t.source: t.split for t in manifest.tables}
    assert splits["app.orders"] == "key" and splits["app.items"] == "ctid"
    assert sum(len(t.ranges) for t in manifest.tables) > 4
    # the PostgreSQL load began exactly at the Extract's start: no registry; the Delta one
    # at a later cut: its Replicat leaves out what came before
    assert Instantiation.load(home.dirchk, "REPPG") is None
    registry = Instantiation.load(home.dirchk, "REPDL")
    assert registry is not None and set(registry.tables) == set(TABLES)
    text = out.getvalue()
    assert "rows/s" in text and "4 of 4 table(s) complete" in text

    for group in ("EXT1", "REPPG", "REPDL"):
        assert run_named_group(home, group, once=True, spark=spark) == 0
    diff = differences(src, tgt)
    assert not diff, diff
    results = compare_tables(src, TABLES, delta_root=home.path / "delta")
    bad = [line for r in results if not r.equal for line in r.differences["Delta"]]
    assert not bad, "\n".join(bad)
    sys.stdout.write(text[-1500:])
