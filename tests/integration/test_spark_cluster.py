"""trailgate on a real Spark cluster: a standalone master and worker as separate JVMs (from
the pyspark package), a batch trail query whose worker is killed mid-job and replaced, and
(heavy) Replicats with ``SPARK MASTER spark://…`` into Delta and Parquet: results exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cluster_support import QUICK_JVM, StandaloneCluster
from deltalake import DeltaTable
from replicat_support import ROOT, Increments, replicat_home, run_group, write_trail

from trailgate.model import OpType

pytestmark = pytest.mark.spark

OP_NAMES = {OpType.INSERT: "Insert", OpType.FIELD_COMP: "FieldComp", OpType.DELETE: "Delete"}


def write_files(trail: Path, work: Increments, files: int,
                per_file: int) -> Counter[tuple[str, str]]:
    """``files`` trail files of ``per_file`` transactions; the changes per (table, op)."""
    counts: Counter[tuple[str, str]] = Counter()
    for _ in range(files):
        txns = list(work.transactions(per_file))
        for t in txns:
            for c in t.changes:
                counts[(c.table, OP_NAMES[c.op])] += 1
        write_trail(trail, txns)
    return counts


def query_killing_the_worker(cluster: StandaloneCluster, trail: Path, *,
                             survivor_cores: int | None = None) -> list[list[object]]:
    """The batch query on the cluster; a worker is killed once some of the job's tasks are
    done, and a new one started — or, with ``survivor_cores`` (the cores of the cluster's
    workers, all of which the job waits for), the others finish the job.  Its result."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SPARK_LOCAL_IP="127.0.0.1")
    if cluster.quick:
        env.update(QUICK_JVM)
    extra = [] if survivor_cores is None else [str(survivor_cores)]
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("cluster_query.py")),
                             cluster.url, str(trail), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    killed = False
    result = None
    try:
        cluster.wait_workers()  # those still registering: the driver starts meanwhile
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("MIDBATCH") and not killed:
                cluster.kill_worker()
                if survivor_cores is None:
                    cluster.start_worker()
                killed = True
            elif line.startswith("{"):
                result = json.loads(line)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    errors = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0 and result is not None, errors
    assert killed, "the job ended before the test could kill its worker"
    # the driver saw the application's executor on that worker go (its work was redone)
    assert "Lost executor" in errors, errors[-3000:]
    return list(result["counts"])


def replicat_on_cluster(tmp_path: Path, cluster: StandaloneCluster, target: str, name: str,
                        work: Increments, trail_from: Path) -> Path:
    out = tmp_path / name
    home = replicat_home(tmp_path / f"home-{name}", (
        f"REPLICAT rep1\n{target} {out}\nSPARK MASTER {cluster.url}\n"
        "SPARK CONF spark.executor.memory=512m\nSPARK CONF spark.cores.max=1\n"
        "SPARK CONF spark.driver.host=127.0.0.1\n"
        "MAP public.*, TARGET lake.*;\n"), checkpoint_table=None)
    for f in sorted(trail_from.parent.glob(trail_from.name + "*")):
        (home.dirdat / f.name).write_bytes(f.read_bytes())
    done = run_group(home, "replicat", "REP1", "--once", timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = home.report_file("REP1").read_text()
    assert f"SPARK MASTER {cluster.url}" in report or cluster.url in report, report[-2000:]
    return out


def test_cluster_trail_query_survives_a_lost_worker(tmp_path: Path) -> None:
    # two one-core workers started with the driver; one is killed mid-job and the other
    # redoes its tasks (and the map outputs lost with it): no replacement JVMs to wait for
    work = Increments(seed=31, accounts=40)
    trail = tmp_path / "dirdat" / "rt"
    expected = write_files(trail, work, files=6, per_file=300)
    cluster = StandaloneCluster(tmp_path / "cluster", cores=1, workers=2, quick=True)
    try:
        cluster.start(wait=False)
        counts = query_killing_the_worker(cluster, trail, survivor_cores=2)
    finally:
        cluster.stop()
    assert {(t, op): n for t, op, n in counts} == dict(expected)


@pytest.mark.heavy
def test_cluster_replicat_into_delta_and_parquet_and_a_bigger_query(tmp_path: Path) -> None:
    work = Increments(seed=32, accounts=60)
    trail = tmp_path / "dirdat" / "rt"
    expected = write_files(trail, work, files=20, per_file=1500)
    with StandaloneCluster(tmp_path / "cluster") as cluster:
        counts = query_killing_the_worker(cluster, trail)
        assert {(t, op): n for t, op, n in counts} == dict(expected)
        lake = replicat_on_cluster(tmp_path, cluster, "TARGETDELTA", "lake", work, trail)
        logs = replicat_on_cluster(tmp_path, cluster, "TARGETPARQUET", "logs", work, trail)
    rows = DeltaTable(str(lake / "lake" / "accounts")).to_pyarrow_table().to_pylist()
    assert {r["id"]: r["counter"] for r in rows} == work.expected_accounts()
    events = DeltaTable(str(lake / "lake" / "events")).to_pyarrow_table().to_pylist()
    assert {r["id"] for r in events} == work.events
    changes = pq.read_table(logs / "lake" / "accounts").to_pylist()
    assert len({(r["seqno"], r["rba"]) for r in changes}) == len(changes), "a change twice"
    final: dict[int, int] = {}
    for r in sorted(changes, key=lambda r: (r["seqno"], r["rba"])):
        final[r["after"]["id"]] = r["after"]["counter"]
    assert final == work.expected_accounts()
