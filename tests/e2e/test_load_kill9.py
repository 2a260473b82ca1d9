"""kill -9 an initial load at several points while a workload runs, start it again, and the
target ends equal to the source after change capture takes over.

Each restart reads its unfinished key ranges at a new cut (the first snapshot died with the
killed process), reloads a table split by ctid whole, and the Replicat applies every change
after the cut of the range a row was read in; until the load is complete it refuses to
start.  Run for a PostgreSQL target and a Delta target.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from load_support import Workload, differences, seed
from replicat_support import run_group, start_group

from trailgate.apply.instantiation import Instantiation
from trailgate.demo.compare import compare_tables
from trailgate.ggsci.shell import Shell
from trailgate.home import Home
from trailgate.load.manifest import Manifest, manifest_path

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.heavy]
TABLES = ["app.orders", "app.items", "app.increments", "app.events"]


def _setup(path: Path, src: str, tgt: str, target: str) -> Home:
    """A home whose Extract is EXTP or EXTD (slots are per server: the names differ)."""
    home = Home(path).create()
    ext = "extp" if target == "postgres" else "extd"
    p = home.dirprm
    (p / f"{ext}.prm").write_text(f"EXTRACT {ext}\nSOURCEDB {src}\nEXTTRAIL ./dirdat/aa\n"
                                "SPARK MASTER local[1]\nTABLE app.*;\n")
    (p / "eload.prm").write_text(
        f"EXTRACT eload\nSOURCEISTABLE\nSOURCEDB {src}\nRMTTASK REPLICAT, GROUP rep\n"
        "CREATETARGETS\nSPARK MASTER local[2]\nSPARK CONF trailgate.load.rowsPerRange=2500\n"
        "TABLE app.*;\n")
    where = f"TARGETDB {tgt}\nBATCHSQL" if target == "postgres" else "TARGETDELTA ./delta"
    (p / "rep.prm").write_text(f"REPLICAT rep\n{where}\nSPARK MASTER local[2]\n"
                               "MAP app.*, TARGET app.*;\n")
    checkpoint = ("CHECKPOINTTABLE gg.ckpt" if target == "postgres" else "NODBCHECKPOINT")
    shell = Shell(home, io.StringIO())
    shell.run_script(f"""
DBLOGIN SOURCEDB '{src}'
ADD TRANDATA app.*
ADD EXTRACT eload, SOURCEISTABLE
ADD EXTRACT {ext}, TRANLOG, INITIALLOAD eload
ADD EXTTRAIL ./dirdat/aa, EXTRACT {ext}
DBLOGIN SOURCEDB '{tgt}'
ADD CHECKPOINTTABLE gg.ckpt
ADD REPLICAT rep, EXTTRAIL ./dirdat/aa, {checkpoint}
""", "setup.oby")
    shell.close()
    return home


def _ranges_done(home: Home, table: int | None = None) -> int:
    """Ranges this run finished (of ``table``, or of every table)."""
    directory = home.dirtmp / "load-eload" / "progress"
    done = 0
    try:
        for entry in directory.iterdir():
            if entry.suffix == ".json" and not entry.name.startswith("."):
                if table is not None and not entry.name.startswith(f"{table}-"):
                    continue
                with contextlib.suppress(ValueError):
                    done += bool(json.loads(entry.read_text()).get("done"))
    except OSError:
        pass
    return done


def _table(home: Home, name: str, split: str) -> int:
    """The table's number in the load's plan, once the run has written it (a run killed
    during start-up may have left none)."""
    deadline = time.monotonic() + 120
    while (manifest := Manifest.load(manifest_path(home.dirchk, "ELOAD"))) is None:
        assert time.monotonic() < deadline, "the load wrote no plan"
        time.sleep(0.002)
    table = manifest.table(name)
    assert table is not None and table.split == split and len(table.ranges) > 2
    return table.number


def _ranges(home: Home, name: str) -> int:
    """The ranges of the table in the load's plan."""
    manifest = Manifest.load(manifest_path(home.dirchk, "ELOAD"))
    assert manifest is not None
    table = manifest.table(name)
    assert table is not None
    return len(table.ranges)


@pytest.mark.parametrize("target", ["postgres", "delta"])
def test_load_killed_at_several_points_then_cdc_is_exact(e2e_cluster, tmp_path, target):
    src = e2e_cluster.create_database(f"lk9_src_{target}")
    tgt = e2e_cluster.create_database(f"lk9_tgt_{target}")
    seed(src, orders=30_000, items=12_000, events=3_000)
    home = _setup(tmp_path / "gg", src, tgt, target)
    log = tmp_path / "load.log"
    rng = random.Random(9)
    work = Workload(src, seed=3, pause=0.005).start()
    try:
        # run 1 is killed during start-up; each later run as soon as the key table or the
        # ctid table is part loaded in it (whichever its route reaches first: the driver's
        # threads take the plan's ranges in order, Spark's Delta tasks finish them in
        # another), until each of the two has been killed half way once
        wanted = {"app.orders": ("key", 3), "app.items": ("ctid", 1)}
        for run in range(4):
            if run > 0 and not wanted:
                break
            # the last run's progress files would count as this run's (a run clears them
            # only once it has planned its ranges)
            shutil.rmtree(home.dirtmp / "load-eload" / "progress", ignore_errors=True)
            proc = start_group(home, "extract", "ELOAD", log=log)
            if run == 0:  # once the run has marked itself under way
                point = "during start-up"
                deadline = time.monotonic() + 120
                while not (home.dirchk / "REP.inst").exists():
                    assert time.monotonic() < deadline, log.read_text()[-3000:]
                    time.sleep(0.02)
                # a PostgreSQL target's ranges begin in the driver's threads at once (no
                # Spark session to wait for): the run is still starting within a moment
                time.sleep(rng.uniform(0, 0.2))
            else:
                plan = {name: _table(home, name, split) for name, (split, _) in wanted.items()}
                sizes = {name: _ranges(home, name) for name in plan}
                deadline, hit = time.monotonic() + 600, []
                while not hit and proc.poll() is None:
                    assert time.monotonic() < deadline, log.read_text()[-3000:]
                    hit = [name for name, number in plan.items()
                           if wanted[name][1] <= _ranges_done(home, number) < sizes[name]]
                    time.sleep(0.002)  # driver threads load a small range in milliseconds
                point = f"with {' and '.join(hit) or 'nothing'} part loaded"
            assert proc.poll() is None, f"the load ended before the kill ({point}):\n" + \
                log.read_text()[-3000:]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            if run > 0:
                for name in hit:
                    del wanted[name]
            refused = run_group(home, "replicat", "REP", "--once")
            assert refused.returncode == 1 and "cannot start yet" in refused.stderr, \
                refused.stderr[-2000:]
        assert not wanted, f"never killed with {', '.join(wanted)} part loaded"
        done = run_group(home, "extract", "ELOAD", timeout=900)
        assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-2000:]
        work.wait_for(work.committed + 100)
    finally:
        work.stop()
    manifest = Manifest.load(manifest_path(home.dirchk, "ELOAD"))
    assert manifest is not None and manifest.complete and manifest.runs >= 2
    registry = Instantiation.load(home.dirchk, "REP")
    assert registry is not None
    cuts = {t.source: [(r.range.index, r.cut) for r in t.ranges] for t in manifest.tables}
    assert "app.orders" in registry.tables, (manifest.extract_cut, cuts)
    orders = registry.tables["app.orders"]
    assert len({c.csn for c in orders.cuts}) >= 2, orders  # ranges read at several cuts
    items = manifest.table("app.items")
    assert items is not None and items.generation >= 1  # the ctid table reloaded whole
    ext = "EXTP" if target == "postgres" else "EXTD"
    for kind, group in (("extract", ext), ("replicat", "REP")):
        result = run_group(home, kind, group, "--once", timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
    if target == "postgres":
        diff = differences(src, tgt)
        assert not diff, diff
    else:
        results = compare_tables(src, TABLES, delta_root=home.path / "delta")
        bad = [line for r in results if not r.equal for line in r.differences["Delta"]]
        assert not bad, "\n".join(bad)
