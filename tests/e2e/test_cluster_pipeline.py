"""The whole pipeline on a real Spark cluster (heavy): a standalone master and worker as
separate JVMs, and the Extract, the Data Pump and both Replicats each a Spark application
on it (``SPARK MASTER spark://…``, one core each); a random concurrent workload leaves the
target PostgreSQL tables and the Delta tables equal to the source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cluster_support import StandaloneCluster
from test_end_to_end import _replicate

from trailgate.demo.databases import Databases

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.heavy]


def test_extract_pump_and_replicats_run_on_a_standalone_cluster(
        databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "cluster"
    with StandaloneCluster(work, cores=4, memory="3g") as cluster:
        conf = ["spark.cores.max=1", "spark.executor.memory=512m",
                "spark.driver.host=127.0.0.1"]
        pipeline = _replicate(databases, tmp_path, monkeypatch, name="rnd_cluster", tag="C",
                              transactions=200, threads=2, seed=20261127, rate=20,
                              extract_master=cluster.url, replicat_master=cluster.url,
                              spark_conf=conf)
        master_log = (work / "master.log").read_text(errors="replace")
    registered = set(re.findall(r"Registered app (.+?) with ID", master_log))
    for group in pipeline.groups:
        assert any(group.name.upper() in app.upper() for app in registered), (
            f"{group.name} did not run on the cluster: {sorted(registered)}")
