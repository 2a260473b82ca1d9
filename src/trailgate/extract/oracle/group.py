"""One run of an Oracle redo dump Extract: start-up report, the run, clean stop.

``--once`` parses every ready dump in parallel, then assembles on the driver and appends to
the trail through the sink's writer (the same append mode, dedupe and checkpoint as the
query); otherwise a streaming query (``oracledump`` → ``trail``) picks up new dump files as
they appear, until the group is stopped.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from trailgate.errors import SourceError, TrailgateError
from trailgate.extract.oracle.dumps import (
    TITLE,
    AssemblyResult,
    OracleDumpConfig,
    assemble_rows,
    is_cached,
    load_oracle_config,
    ready_dumps,
)
from trailgate.extract.oracle.source import (
    PARALLEL_BACKLOG,
    OracleDumpDataSource,
    parse_in_parallel,
    resume_position,
)
from trailgate.extract.running import SPARK_DEFAULTS, ExtractStats, echo_parameters
from trailgate.home import Home
from trailgate.process.query import query_failure, report_interval, watch
from trailgate.process.runtime import GroupProcess

__all__ = ["run_oracle_extract"]


def _sink_options(cfg: OracleDumpConfig, run_id: str) -> Any:
    from trailgate.spark.trail_sink import SinkOptions

    return SinkOptions.parse({"path": cfg.trail, "trailLabel": cfg.trail_label,
                              "megabytes": str(cfg.megabytes), "home": cfg.home,
                              "group": cfg.group, "producer": cfg.group,
                              **cfg.format_options}, run_id)


def _report_startup(proc: GroupProcess, cfg: OracleDumpConfig, files: list[str]) -> None:
    report = proc.report
    assert report is not None
    report.section("Source and trail")
    report.line(f"Dump directory:   {cfg.dumpdir} ({len(files)} dump file(s) ready)")
    report.line(f"Dictionary:       {cfg.dictionary} (ONUNKNOWN {cfg.on_unknown.upper()})")
    report.line(f"Trail:            {cfg.trail_label} ({cfg.megabytes} MB files)")
    report.line(f"Tables:           {', '.join(t.name for t in cfg.params.tables)}")
    report.line()


def _run_once(spark: Any, cfg: OracleDumpConfig, run_id: str, proc: GroupProcess) -> str:
    """Parse every ready dump in parallel, assemble on the driver, append to the trail."""
    from trailgate.spark.trail_sink import commit_checkpoint, write_change_batches

    files = ready_dumps(cfg.dumpdir, wait=False)
    summaries = parse_in_parallel(spark, cfg, files)
    resume = resume_position(cfg)
    result = AssemblyResult()
    opts = _sink_options(cfg, run_id)
    msg = write_change_batches(opts, assemble_rows(cfg, summaries, resume, result=result))
    commit_checkpoint(opts, [msg])
    for warning in result.warnings:
        proc.warn(warning)
    return (f"all ready dumps captured (--once): {len(files)} file(s), {result.records} redo "
            f"record(s), {msg.transactions} transaction(s) written, {msg.skipped} already in "
            f"the trail, {result.rolled_back} rolled back")


def _start_query(spark: Any, cfg: OracleDumpConfig, opts: Any, run_id: str,
                 stop_file: Path) -> Any:
    spark.dataSource.register(OracleDumpDataSource)
    reader = (spark.readStream.format("oracledump").option("home", cfg.home)
              .option("group", cfg.group).option("processId", str(os.getpid()))
              .option("stopFile", str(stop_file)))
    home = Home(cfg.home)
    writer = (reader.load().writeStream.format("trail").option("path", cfg.trail)
              .option("trailLabel", cfg.trail_label).option("megabytes", str(cfg.megabytes))
              .option("home", cfg.home).option("group", cfg.group).option("runId", run_id)
              .option("producer", cfg.group)
              .option("checkpointLocation",
                      str(home.spark_checkpoint_dir(cfg.group) / "spark"))
              .queryName(f"extract_{cfg.group.lower()}"))
    seconds = cfg.params.batch_seconds(opts.trigger_seconds, patient=False)
    writer = writer.trigger(processingTime=f"{int(seconds * 1000)} milliseconds")
    return writer.start()


def run_oracle_extract(home: Home, name: str, opts: Any, *, spark: Any = None) -> int:
    """Run the Oracle dump EXTRACT ``name`` in the foreground (``trailgate run extract
    NAME``); returns the exit code."""
    from trailgate.spark import stop_spark
    from trailgate.spark.trail_sink import finish_run

    with GroupProcess(home, "EXTRACT", name, title=TITLE) as proc, proc.report_log():
        cfg = load_oracle_config(home, name, process_id=os.getpid())
        echo_parameters(proc, cfg.params)
        _report_startup(proc, cfg, ready_dumps(cfg.dumpdir, wait=not opts.once))
        stop_file = home.dirchk / f"{cfg.group}.stop"
        stop_file.unlink(missing_ok=True)
        run_id = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        stats = ExtractStats(home, cfg.group)
        own = spark is None
        if own:
            spark = proc.start_spark(cfg.params.spark.master,
                                     {**SPARK_DEFAULTS, **cfg.params.spark.conf})
        try:
            if proc.stop_requested:
                reason = proc.stop_reason or "stop requested"
            elif opts.once:
                proc.started()
                reason = _run_once(spark, cfg, run_id, proc)
            else:
                # a backlog is parsed in parallel first; new files in the micro-batches
                backlog = [p for p in ready_dumps(cfg.dumpdir) if not is_cached(cfg, p)]
                if len(backlog) >= PARALLEL_BACKLOG:
                    parse_in_parallel(spark, cfg, backlog)
                query = _start_query(spark, cfg, opts, run_id, stop_file)
                proc.started()
                reason = watch(proc, query, stop_file=stop_file,
                               max_batches=opts.max_batches, stop_timeout=opts.stop_timeout,
                               report_every=report_interval(cfg.params.report_count),
                               progress=stats.progress_line, count_empty=True,
                               error=SourceError)
        except TrailgateError:
            raise
        except Exception as exc:  # py4j/Spark errors: a message, not a Java stack
            raise query_failure(exc, SourceError) from None
        finally:
            stop_file.unlink(missing_ok=True)
            if own:
                stop_spark()
        finish_run(_sink_options(cfg, run_id))
        assert proc.report is not None
        proc.report.section("Run Time Statistics")
        for line in stats.final_lines():
            proc.report.line(line)
        proc.stopped(reason)
    return 0
