"""One local SparkSession per process, sized for a small machine and quiet on stdout.

Every trailgate process (Extract, Replicat, ad hoc SQL over trails) runs on Spark; starting a
JVM costs seconds, so the session is built once and reused, and the trail data source is
registered on it so ``spark.read.format("trail")`` works everywhere.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LOCAL_JIT", "SPARK_DIR_ENV", "default_master", "get_spark", "stop_spark"]

#: Directory for Spark's warehouse, scratch space and log configuration (default: a temp dir).
SPARK_DIR_ENV = "TRAILGATE_SPARK_DIR"

# Spark's own INFO/WARN chatter (native-hadoop warnings, "Setting default log level") would
# drown a command's output; errors still reach stderr.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""

#: The JVM of a local master compiles with C1 only.  Why: a group's JVM does bookkeeping
#: (offset and commit logs, planning, the Python workers' traffic) while the data goes
#: through Python; with C2 as well, the JIT compiler threads took about a third of the
#: JVM's CPU under load, and on a small machine that CPU is the source database's.  A user's
#: ``SPARK CONF spark.driver.extraJavaOptions`` replaces it.
LOCAL_JIT = "-XX:TieredStopAtLevel=1"

_registered: set[int] = set()
_CLASS_PATH = "spark.driver.extraClassPath"


def default_master() -> str:
    """The master of a group or run that names none: ``$TRAILGATE_SPARK_MASTER``, else
    ``local[2]``."""
    return os.environ.get("TRAILGATE_SPARK_MASTER", "local[2]")


def _spark_dir(work_dir: str | Path | None) -> Path:
    base = work_dir or os.environ.get(SPARK_DIR_ENV)
    path = Path(base) if base else Path(tempfile.gettempdir()) / f"trailgate-spark-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path.absolute()


def _defaults(work: Path, local: bool) -> dict[str, str]:
    log_conf = work / "log4j2.properties"
    if not log_conf.exists() or log_conf.read_text() != _LOG4J2:
        log_conf.write_text(_LOG4J2)
    (work / "tmp").mkdir(exist_ok=True)
    java_opts = f"-Dlog4j2.configurationFile=file:{log_conf} -Djava.io.tmpdir={work / 'tmp'}"
    if local:
        java_opts += f" {LOCAL_JIT}"
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.local.dir": str(work / "tmp"),
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.python.worker.reuse": "true",
        # Batches into Python writers (the trail sink, Replicat) are cut at 1 MB rather than
        # only at 10,000 rows: a writer then works while its source still reads, instead of
        # receiving a micro-batch of few large rows only once it has all been read.
        "spark.sql.execution.arrow.maxBytesPerBatch": str(1 << 20),
        # the trail source takes op and table filters (docs/spark.md); Spark refuses a
        # Python source that implements pushFilters while this is off
        "spark.sql.python.filterPushdown.enabled": "true",
    }


def get_spark(
    app_name: str = "trailgate",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    work_dir: str | Path | None = None,
    own_session: bool = False,
    inherit_fds: tuple[int, ...] = (),
) -> SparkSession:
    """The process's SparkSession (created on first call) with the ``trail`` source registered.

    ``master`` defaults to ``local[2]`` (or ``$TRAILGATE_SPARK_MASTER``); ``conf`` overrides
    the defaults (a local master also gets :mod:`~trailgate.spark.local_fs`'s filesystem
    and ``LOCAL_JIT``);
    ``work_dir`` (or ``$TRAILGATE_SPARK_DIR``) holds the warehouse and scratch files.
    Settings only take effect when the session is first created.

    ``own_session`` starts the JVM in its own process session (a foreground group process):
    Ctrl-C in the terminal then reaches only the group, which stops cleanly, rather than
    also interrupting Spark's Python workers in the middle of a micro-batch.
    ``inherit_fds`` are passed to the JVM (with ``own_session``): a group hands it the fd of
    its lock, so the lock is held until the JVM too has exited, even after a kill -9.
    """
    # Python workers must run this interpreter, so they import the same trailgate.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # pyspark warns about the pandas version on import; trailgate does not use pandas here.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession

    from trailgate.spark.local_fs import local_fs_settings
    from trailgate.spark.trail_sink import TrailDataSource  # the trail source, plus the sink

    master = master or default_master()
    settings = _defaults(_spark_dir(work_dir), master.startswith("local"))
    fs = local_fs_settings(master)
    settings.update(fs)
    for key, value in (conf or {}).items():
        if key == _CLASS_PATH and key in fs:  # the user's entries, and the classes' jar
            value = os.pathsep.join([value, fs[key]])
        settings[key] = value
    if own_session:
        _launch_own_session(app_name, master, settings, inherit_fds)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark_id = id(spark)
    if spark_id not in _registered:
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(TrailDataSource)
        _registered.add(spark_id)
    return spark


def _launch_own_session(app_name: str, master: str, settings: Mapping[str, str],
                        inherit_fds: tuple[int, ...] = ()) -> None:
    """Start the JVM (as getOrCreate would, with the same settings) in a new session."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf().setAppName(app_name).setMaster(master)
    for key, value in settings.items():
        conf.set(key, value)
    gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True,
                                                 "pass_fds": tuple(inherit_fds)})
    SparkContext._ensure_initialized(gateway=gateway)


def stop_spark() -> None:
    """Stop the process's session if one is running (tests, CLI exit)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is not None:
        _registered.discard(id(spark))
        spark.stop()
