"""Which way a load's ranges run: threads of the driver, a Spark job, or both at once.

A range into PostgreSQL is a binary COPY pumped between two libpq connections in C,
outside Python's lock: a driver thread runs it as fast as a Spark task, without a session
whose start and first job cost more than a small load.  Such ranges begin in the driver's
threads at once; a Spark job joins only when that pays (many ranges, or a cluster).  Lake
and trail targets parse rows in Python, as does the copy without the C pump: those stay
one Spark job.  ``docs/instantiation.md`` states the rule.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from trailgate.params.model import SparkOptions

__all__ = ["DRIVER_THREADS_CONF", "SPARK_RANGES_CONF", "SPARK_RANGES_DEFAULT", "Route",
           "choose_route", "local_cores"]

#: ``SPARK CONF trailgate.load.driverThreads=n``: ranges the driver copies at a time.
DRIVER_THREADS_CONF = "trailgate.load.driverThreads"
#: ``SPARK CONF trailgate.load.sparkRanges=n``: a PostgreSQL target's load starts Spark
#: beside the driver's threads only with more ranges than this (0: always).
SPARK_RANGES_CONF = "trailgate.load.sparkRanges"
#: About the ranges two threads copy while a local session starts and runs its first job.
SPARK_RANGES_DEFAULT = 64
#: Threads beside a cluster master (its executors do most of the work).
CLUSTER_DRIVER_THREADS = 2

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")


@dataclass(frozen=True, slots=True)
class Route:
    """``threads``: driver threads copying ranges (0: none); ``spark``: whether a Spark
    job runs ranges too; ``why``: one line for the report."""

    threads: int
    spark: bool
    why: str


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[n]``, ``local[*]`` or ``local[n,f]`` master; None
    for any other master (a cluster)."""
    m = _LOCAL.match(master.strip())
    if m is None:
        return None
    if m.group(1) is None:
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else max(1, int(m.group(1)))


def choose_route(kind: str, master: str, ranges: int, conf: dict[str, str], *,
                 pump: bool, path: str | None = None) -> Route:
    """The route of a run with ``ranges`` ranges to load into a ``kind`` target (the
    module docstring says why)."""
    if kind != "POSTGRES":
        return Route(0, True, f"{kind.lower()} target: rows are parsed in Python (Arrow), "
                              f"so every range is a Spark task")
    if not pump:
        return Route(0, True, "PostgreSQL target without the C copy pump (not built, or "
                              "TRAILGATE_PURE_PYTHON=1): the copy loop is Python, so every "
                              "range is a Spark task")
    cores = local_cores(master)
    spark = SparkOptions(conf=conf)
    threads = spark.whole(DRIVER_THREADS_CONF, minimum=0, path=path)
    if threads is None:
        threads = cores if cores is not None else CLUSTER_DRIVER_THREADS
    if threads <= 0:
        return Route(0, True, f"PostgreSQL target, {DRIVER_THREADS_CONF}=0: every range "
                              f"is a Spark task")
    limit = spark.whole(SPARK_RANGES_CONF, minimum=0, path=path)
    limit = SPARK_RANGES_DEFAULT if limit is None else limit
    lead = (f"PostgreSQL target: binary COPY pumped in C, {threads} range(s) at a time in "
            f"the driver's threads from the start")
    if cores is None:
        return Route(threads, True, f"{lead}; master {master} is a cluster, so a Spark job "
                                    f"takes the ranges not begun once its session is up")
    if ranges > limit:
        return Route(threads, True, f"{lead}; {ranges} ranges (over {SPARK_RANGES_CONF}="
                                    f"{limit}), so a Spark job takes the ranges not begun "
                                    f"once its session is up")
    return Route(threads, False, f"{lead}; {ranges} range(s), at most {SPARK_RANGES_CONF}="
                                 f"{limit}: no Spark session (its start-up would cost more "
                                 f"than it could take over)")
