"""One run of an Extract group: start-up checks, the streaming query, reports, clean stop.

The query is ``pgcapture`` → each micro-batch appended to the trail by
:class:`~.micro_batch.ExtractBatch` (see docs/processes.md).  This module is the driver around
it: it checks the source, writes the report, watches the query's progress, and on a
stop request lets the micro-batch in flight finish (no new batch starts once the stop file
exists), stops the query, completes the trail file, and moves the slot to the checkpoint.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trailgate.db.connect import connect
from trailgate.errors import ConfigError, SourceError, TrailgateError
from trailgate.extract.postgres.config import (
    DEFAULT_MEMORY_LIMIT,
    ExtractConfig,
    load_extract_config,
)
from trailgate.extract.postgres.startup import StartupReport, check_source
from trailgate.extract.running import SPARK_DEFAULTS, ExtractStats, echo_parameters
from trailgate.home import Home
from trailgate.process.query import query_failure, report_interval, watch
from trailgate.process.runtime import EVENT_NO_TRANDATA, GroupProcess
from trailgate.trail.release import encryption_line

__all__ = ["RunOptions", "run_extract_group"]

TITLE = "trailgate Capture for PostgreSQL"


@dataclass(slots=True)
class RunOptions:
    """How this run goes: ``once`` captures what is committed now and stops;
    ``max_batches`` stops after that many micro-batches (tests)."""

    once: bool = False
    max_batches: int | None = None
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT
    trigger_seconds: float | None = None
    max_wal_bytes: int | None = None
    stop_timeout: float = 600.0


def _report_startup(proc: GroupProcess, cfg: ExtractConfig, info: StartupReport) -> None:
    from trailgate.capture.postgres.pgoutput import format_lsn

    report = proc.report
    assert report is not None
    report.section("Source and trail")
    report.line(f"Database:         PostgreSQL {info.server_version}")
    report.line(f"Slot:             {cfg.slot} (restart {format_lsn(info.restart_lsn)}, "
                f"confirmed {format_lsn(info.confirmed_lsn)})")
    report.line(f"Publication:      {cfg.publication}")
    report.line(f"DDL:              {info.ddl}")
    report.line(f"Trail:            {cfg.trail_label} ({cfg.megabytes} MB files)")
    report.line(f"Encryption:       {encryption_line(cfg.params, cfg.trail_label)}")
    report.line(f"Tables:           {len(info.tables)}")
    for name in info.tables:
        report.line(f"  {name}")
    report.line()
    for warning in info.warnings:
        code = EVENT_NO_TRANDATA if "supplemental logging" in warning else None
        if code:
            proc.warn(warning, code)
        else:
            proc.warn(warning)


def _start_query(spark: Any, cfg: ExtractConfig, opts: RunOptions, run_id: str,
                 stop_file: Path) -> tuple[Any, Any]:
    """The started query and its ``ExtractBatch`` (close it once the query stopped)."""
    from trailgate.extract.postgres.micro_batch import (
        CONTINUOUS_CONF,
        DRIVER_MAX_BYTES,
        DRIVER_MAX_BYTES_CONF,
        STREAMING_CONF,
        ExtractBatch,
    )
    from trailgate.extract.postgres.source import PgCaptureDataSource
    from trailgate.spark.batch_window import (
        PATIENT_OPTION,
        WINDOW_OPTION,
        ZERO_TRIGGER,
        window_ms,
    )
    from trailgate.spark.trail_sink import SinkOptions

    spark.dataSource.register(PgCaptureDataSource)
    source = {"home": cfg.home, "group": cfg.group,
              "memoryLimitBytes": str(opts.memory_limit_bytes), "processId": str(os.getpid()),
              "stopFile": str(stop_file)}
    if opts.max_wal_bytes:
        source["maxWalBytesPerTrigger"] = str(opts.max_wal_bytes)
    sink = SinkOptions.parse({"path": cfg.trail, "trailLabel": cfg.trail_label,
                              "megabytes": str(cfg.megabytes), "home": cfg.home,
                              "group": cfg.group, "runId": run_id, **cfg.format_options},
                             run_id)
    spark_dir = Home(cfg.home).spark_checkpoint_dir(cfg.group) / "spark"
    try:
        driver_max = int(cfg.params.spark.conf.get(DRIVER_MAX_BYTES_CONF, DRIVER_MAX_BYTES))
    except ValueError:
        raise ConfigError(f"SPARK CONF {DRIVER_MAX_BYTES_CONF}: expected a number of bytes"
                          ) from None
    streaming, continuous = (cfg.params.spark.flag(name)
                             for name in (STREAMING_CONF, CONTINUOUS_CONF))
    batch = ExtractBatch(source, sink, spark_dir, driver_max, streaming=streaming,
                         continuous=continuous and not opts.once,
                         flush_seconds=cfg.params.flush_secs)
    if batch.continuous:  # the trail has each transaction already: no hurry to batch
        source[PATIENT_OPTION] = "true"
    if not opts.once:  # the source keeps the batch window (spark.batch_window)
        source[WINDOW_OPTION] = window_ms(cfg.params.batch_seconds(
            opts.trigger_seconds, patient=batch.continuous))
    reader = spark.readStream.format("pgcapture").options(**source)
    writer = (reader.load().writeStream
              .foreachBatch(batch)
              .option("checkpointLocation", str(spark_dir))
              .queryName(f"extract_{cfg.group.lower()}"))
    if opts.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=ZERO_TRIGGER)
    return writer.start(), batch


def _heartbeat(proc: GroupProcess, cfg: ExtractConfig) -> Any:
    """The heartbeat writer, started when the source has the heartbeat table (ADD
    HEARTBEATTABLE in the GLOBALS GGSCHEMA), else None."""
    if not cfg.heartbeat_schema:
        return None
    from trailgate.db.heartbeat import SEED, HeartbeatWriter, heartbeat_objects

    with connect(cfg.conninfo, application_name=f"trailgate {cfg.slot} start") as conn:
        if not heartbeat_objects(conn, cfg.heartbeat_schema)[SEED]:
            return None
    writer = HeartbeatWriter(cfg.conninfo, cfg.heartbeat_schema, cfg.group,
                             on_error=proc.warn)
    writer.start()
    assert proc.report is not None
    proc.report.line(f"Heartbeat:        {cfg.heartbeat_schema}.{SEED}")
    return writer
#: ``SPARK CONF trailgate.extract.snapshotChunkRows=n``: rows per incremental-snapshot chunk.
SNAPSHOT_CHUNK_CONF = "trailgate.extract.snapshotChunkRows"


def _tracker(cfg: ExtractConfig, ck: Any, run_id: str) -> Any:
    """This run's snapshot tracker, with the snapshots the checkpoint has under way; the
    driver's stream uses it."""
    from trailgate.extract.postgres.snapshot_tracker import SnapshotTracker, register

    state = (ck.read_position.get("snapshots") if ck is not None else None) or []
    tracker = SnapshotTracker(run_id, state)
    register(cfg.home, cfg.group, tracker)
    return tracker


def _runner(proc: GroupProcess, cfg: ExtractConfig, tracker: Any, batch: Any) -> Any:
    """The incremental-snapshot thread, for a run that writes the trail as it streams."""
    from trailgate.extract.postgres.snapshot_runner import (
        CHUNK_ROWS,
        SnapshotRunner,
        request_dir,
    )

    if not batch.continuous:
        if tracker.tables or any(request_dir(Path(cfg.home) / "dirchk", cfg.group).glob(
                "*.json")):
            proc.warn("incremental snapshots wait for a run that streams the log (not "
                      "--once, not SPARK CONF trailgate.extract.continuous=false)")
        return None
    try:
        rows = int(cfg.params.spark.conf.get(SNAPSHOT_CHUNK_CONF, CHUNK_ROWS))
    except ValueError:
        raise ConfigError(f"SPARK CONF {SNAPSHOT_CHUNK_CONF}: expected a number of rows"
                          ) from None

    def report(line: str) -> None:
        if "refused" in line or "stopped" in line or line.startswith("WARNING"):
            proc.warn(line)  # the report and ggserr.log
        elif proc.report is not None:
            proc.report.line(line)

    runner = SnapshotRunner(cfg, tracker, chunk_rows=rows, report=report)
    runner.start()
    return runner


def _finish(cfg: ExtractConfig, run_id: str) -> None:
    """Complete the trail file and tell the slot what the trail now holds."""
    from trailgate.extract.postgres.source import advance_slot
    from trailgate.spark.trail_sink import SinkOptions, finish_run

    opts = SinkOptions.parse({"path": cfg.trail, "trailLabel": cfg.trail_label,
                              "megabytes": str(cfg.megabytes), "home": cfg.home,
                              "group": cfg.group, **cfg.format_options}, run_id)
    finish_run(opts)
    ck = Home(cfg.home).checkpoints.load(cfg.group, "EXTRACT")
    lsn = ck.read_lsn if ck else 0
    if lsn:
        with connect(cfg.conninfo, application_name=f"trailgate {cfg.slot} stop") as conn:
            advance_slot(conn, cfg.slot, lsn, patience=5.0)


def run_extract_group(home: Home, name: str, opts: RunOptions, *, spark: Any = None) -> int:
    """Run EXTRACT ``name`` in the foreground until it is stopped; returns the exit code.

    ``spark``: a session to run in (tests, notebooks); by default the process starts its
    own, in its own process session, and stops it at the end.
    """
    from trailgate.spark import stop_spark

    with GroupProcess(home, "EXTRACT", name, title=TITLE) as proc, proc.report_log():
        cfg = load_extract_config(home, name, memory_limit_bytes=opts.memory_limit_bytes,
                                  process_id=os.getpid())
        echo_parameters(proc, cfg.params)
        ck = home.checkpoints.load(cfg.group, "EXTRACT")
        resume = ck.read_lsn if ck and ck.read_position else None
        _report_startup(proc, cfg, check_source(cfg, resume))
        stop_file = home.dirchk / f"{cfg.group}.stop"
        stop_file.unlink(missing_ok=True)
        run_id = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        stats = ExtractStats(home, cfg.group)
        own = spark is None
        if own:
            spark = proc.start_spark(cfg.params.spark.master,
                                     {**SPARK_DEFAULTS, **cfg.params.spark.conf})
        batch = heartbeat = None
        clean = False  # the run ended without an error in flight
        runner = None
        tracker = _tracker(cfg, ck, run_id)
        try:
            if proc.stop_requested:
                reason = proc.stop_reason or "stop requested"
            else:
                query, batch = _start_query(spark, cfg, opts, run_id, stop_file)
                runner = _runner(proc, cfg, tracker, batch)
                proc.started()
                if not opts.once:
                    heartbeat = _heartbeat(proc, cfg)
                reason = watch(proc, query, stop_file=stop_file,
                               max_batches=opts.max_batches, stop_timeout=opts.stop_timeout,
                               report_every=report_interval(cfg.params.report_count),
                               progress=stats.progress_line, count_empty=True,
                               error=SourceError, failed=batch.failure)
                if opts.once and reason == "the query ended":
                    reason = "all committed data captured (--once)"
            clean = True
        except TrailgateError:
            raise
        except Exception as exc:  # py4j/Spark errors: a message, not a Java stack
            raise query_failure(exc, SourceError) from None
        finally:
            if heartbeat is not None:
                heartbeat.stop()
            if runner is not None:
                runner.stop()
            try:  # after the query, before the stop file goes: the stream stays released
                if batch is not None:
                    batch.close()
            except TrailgateError:
                if clean:  # else the error in flight is the one to report (this is logged)
                    raise
            finally:
                stop_file.unlink(missing_ok=True)
                if own:
                    stop_spark()
                from trailgate.extract.postgres.snapshot_tracker import register

                register(cfg.home, cfg.group, None)
        _finish(cfg, run_id)
        assert proc.report is not None
        proc.report.section("Run Time Statistics")
        for line in stats.final_lines():
            proc.report.line(line)
        proc.stopped(reason)
    return 0
