"""Which way a load's ranges run: the driver's threads for a PostgreSQL target (the copy is
C, outside Python's lock), a Spark job beside them when the ranges are many or the master
is a cluster, a Spark job alone for lakes, trails and the pure-Python copy."""

from __future__ import annotations

import os

import pytest

from trailgate.errors import ConfigError
from trailgate.load.route import SPARK_RANGES_DEFAULT, choose_route, local_cores


def test_local_cores_of_each_master_spelling():
    assert local_cores("local") == 1
    assert local_cores("local[2]") == 2
    assert local_cores("local[3, 4]") == 3
    assert local_cores("local[*]") == (os.cpu_count() or 1)
    assert local_cores("spark://host:7077") is None
    assert local_cores("local-cluster[2,1,1024]") is None
    assert local_cores("yarn") is None


def test_postgres_target_runs_in_the_driver_and_spark_joins_only_when_it_pays():
    few = choose_route("POSTGRES", "local[2]", 20, {}, pump=True)
    assert (few.threads, few.spark) == (2, False) and "no Spark session" in few.why
    many = choose_route("POSTGRES", "local[2]", SPARK_RANGES_DEFAULT + 1, {}, pump=True)
    assert (many.threads, many.spark) == (2, True)
    always = choose_route("POSTGRES", "local[4]", 1, {"trailgate.load.sparkRanges": "0"},
                          pump=True)
    assert (always.threads, always.spark) == (4, True)
    cluster = choose_route("POSTGRES", "spark://h:7077", 3, {}, pump=True)
    assert (cluster.threads, cluster.spark) == (2, True) and "cluster" in cluster.why
    one = choose_route("POSTGRES", "local[2]", 3, {"trailgate.load.driverThreads": "1"},
                       pump=True)
    assert (one.threads, one.spark) == (1, False)


def test_lakes_trails_and_the_python_copy_stay_one_spark_job():
    for kind in ("DELTA", "PARQUET", "TRAIL"):
        route = choose_route(kind, "local[2]", 3, {}, pump=True)
        assert (route.threads, route.spark) == (0, True)
    python = choose_route("POSTGRES", "local[2]", 3, {}, pump=False)
    assert (python.threads, python.spark) == (0, True) and "C copy pump" in python.why
    off = choose_route("POSTGRES", "local[2]", 3, {"trailgate.load.driverThreads": "0"},
                       pump=True)
    assert (off.threads, off.spark) == (0, True)


def test_a_bad_setting_names_itself():
    with pytest.raises(ConfigError, match=r"trailgate.load.sparkRanges=many"):
        choose_route("POSTGRES", "local[2]", 3, {"trailgate.load.sparkRanges": "many"},
                     pump=True, path="eload.prm")
