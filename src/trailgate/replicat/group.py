"""One run of a Replicat group: start-up checks, the streaming query, reports, clean stop.

The query (docs/replicat.md, "The Replicat process")::

    spark.readStream.format("trailchanges")      offsets {seqno, rba}, whole transactions
       └─ writeStream.foreachBatch(BatchApplier)  plan → apply (by key) → checkpoint

Start-up stops the group, before Spark starts, on a malformed parameter file, a MAP whose
target table does not exist, or a missing checkpoint table, with the file, line and object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from trailgate.apply.records import TableCounts
from trailgate.errors import TargetError, TrailgateError
from trailgate.home import Home
from trailgate.model import TrailPosition
from trailgate.params.model import DEFAULT_REPLICAT_EOF_DELAY_SECONDS
from trailgate.process.query import query_failure, report_interval, watch
from trailgate.process.runtime import GroupProcess
from trailgate.replicat.config import ReplicatConfig, is_uri, load_replicat_config, spark_conf
from trailgate.replicat.csn_filter import CsnFilter
from trailgate.replicat.inst_filter import ChangeFilter

__all__ = ["RunOptions", "run_replicat_group"]

TITLE = "trailgate Replicat on Spark"


@dataclass(slots=True)
class RunOptions:
    """How this run goes: ``once`` applies what the trail holds now and stops;
    ``max_batches`` stops after that many micro-batches with data (tests)."""

    once: bool = False
    max_batches: int | None = None
    trigger_seconds: float | None = None
    atcsn: int | None = None
    aftercsn: int | None = None
    stop_timeout: float = 600.0


def _echo_parameters(proc: GroupProcess, cfg: ReplicatConfig) -> None:
    proc.echo_parameters(cfg.params.files or [cfg.params.path])


def _validate_target(proc: GroupProcess, cfg: ReplicatConfig) -> list[str]:
    """Check the target before Spark starts; returns report lines describing it."""
    from trailgate.apply.discard import prepare_discard_file

    if cfg.params.discardfile is not None:
        prepare_discard_file(cfg.params.discardfile, cfg.discard_file)
    if cfg.target_kind == "POSTGRES":
        from trailgate.apply.postgres import PgApplier
        from trailgate.db.connect import describe

        with PgApplier(cfg.target, cfg.params, checkpoint_table=cfg.checkpoint_table,
                       group=cfg.group) as applier:
            applier.validate()
        if cfg.checkpoint_table is None:
            proc.warn(f"REPLICAT {cfg.group} has no checkpoint table (NODBCHECKPOINT): a "
                      f"batch replayed after a crash is applied again; ADD REPLICAT … "
                      f"CHECKPOINTTABLE schema.table gives exactly-once apply")
        return [f"Target:           PostgreSQL {describe(cfg.target)}",
                f"Checkpoint table: {cfg.checkpoint_table or '(none: NODBCHECKPOINT)'}"]
    if not is_uri(cfg.target):
        Path(cfg.target).mkdir(parents=True, exist_ok=True)
    if cfg.target_kind == "DELTA":
        from trailgate.apply.delta import DeltaApplier

        DeltaApplier(cfg.target, cfg.params, group=cfg.group).validate()
        return [f"Target:           Delta Lake tables under {cfg.target}"]
    return [f"Target:           Parquet change logs under {cfg.target}"]


class _Stats:
    """This run's counts per target table, for the report."""

    def __init__(self) -> None:
        self.tables: dict[str, TableCounts] = {}
        self.started = time.monotonic()
        self.batches = 0

    def add(self, batch_id: int, counts: dict[str, TableCounts]) -> None:
        self.batches += 1
        self.add_rest(counts)

    def add_rest(self, counts: dict[str, TableCounts]) -> None:
        """Counts applied outside a batch (the stream apply's after the last one)."""
        for name, c in counts.items():
            self.tables.setdefault(name, TableCounts()).add(c)

    def progress_line(self) -> str:
        total = sum(c.operations for c in self.tables.values())
        rate = total / max(time.monotonic() - self.started, 1e-9)
        return (f"{total} operations applied in {self.batches} batches as of "
                f"{datetime.now():%Y-%m-%d %H:%M:%S} (rate {rate:.0f}/s)")

    def final_lines(self) -> list[str]:
        if not self.tables:
            return ["No operations applied in this run."]
        out: list[str] = []
        for name, c in sorted(self.tables.items()):
            out += ["", f"Replicating to {name}:",
                    f"       #                   inserts:  {c.inserts:>10}",
                    f"       #                   updates:  {c.updates:>10}",
                    f"       #                   deletes:  {c.deletes:>10}",
                    f"       #                 truncates:  {c.truncates:>10}",
                    f"       #                  discards:  {c.discards:>10}",
                    f"       #                   ignores:  {c.ignores:>10}",
                    f"       #  collisions (handled/ign.):  {c.collisions:>10}"]
            if c.ddl:
                out.append(f"       #                       ddl:  {c.ddl:>10}")
        return out


def _instantiation(proc: GroupProcess, home: Home, cfg: ReplicatConfig) -> Any:
    """The instantiation registry an initial load left for this Replicat, checked: None
    when there is none, or when the Replicat has passed every cut (then it goes)."""
    from trailgate.apply.instantiation import Instantiation, registry_path
    from trailgate.errors import ConfigError

    registry = Instantiation.load(home.dirchk, cfg.group)
    if registry is None:
        return None
    if registry.pending and not registry.incomplete():
        load = registry.pending[0]
        raise ConfigError(
            f"REPLICAT {cfg.group} cannot start yet: the initial load {load} into its "
            f"targets has not finished; START EXTRACT {load} to finish it, or remove "
            f"{registry_path(home.dirchk, cfg.group)} to apply without the load's cuts")
    waiting = registry.incomplete()
    if waiting:
        t = waiting[0]
        raise ConfigError(
            f"REPLICAT {cfg.group} cannot start yet: the initial load {t.load} into its "
            f"targets has not finished ({len(waiting)} table(s), e.g. {t.table}); START "
            f"EXTRACT {t.load} to finish it (it redoes only what is not done), or remove "
            f"{registry_path(home.dirchk, cfg.group)} to apply without the load's cuts")
    ck = home.checkpoints.load(cfg.group, "REPLICAT")
    report = proc.report
    assert report is not None
    if ck is not None and ck.last_csn is not None and int(ck.last_csn) >= registry.high:
        registry_path(home.dirchk, cfg.group).unlink(missing_ok=True)
        report.line(f"Instantiation:    every cut of the initial load passed (CSN "
                    f"{registry.high}); its registry removed")
        return None
    report.line(f"Instantiation:    {len(registry.tables)} table(s) loaded by an initial "
                f"load: their changes before each table's cut are left out")
    for t in sorted(registry.tables.values(), key=lambda t: t.table):
        cuts = ", ".join(str(c.csn) for c in t.cuts) if len(t.cuts) < 4 else \
            f"{t.low} … {t.high} ({len(t.cuts)} ranges)"
        report.line(f"  {t.table}: CSN {cuts}")
    return registry


def _start_position(home: Home, cfg: ReplicatConfig) -> str:
    """Where a fresh Spark query starts: the group checkpoint, else ADD REPLICAT's."""
    ck = home.checkpoints.load(cfg.group, "REPLICAT")
    pos = ck.read_position if ck is not None and ck.read_position else cfg.begin
    return f"{int(pos.get('seqno', 0))}:{int(pos.get('rba', 0))}"


def _partitions(cfg: ReplicatConfig, spark: Any) -> int:
    if cfg.partitions:
        return cfg.partitions
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # a remote session without a context
        return 2


def _start_query(spark: Any, cfg: ReplicatConfig, opts: RunOptions, stop_file: Path,
                 applier: Any, spark_dir: Path, start: str) -> Any:
    from trailgate.spark.batch_window import (
        PATIENT_OPTION,
        WINDOW_OPTION,
        ZERO_TRIGGER,
        window_ms,
    )
    from trailgate.spark.trail_changes import (
        APPLIED_OPTION,
        TrailChangesDataSource,
        router_option,
    )

    spark.dataSource.register(TrailChangesDataSource)
    reader = (spark.readStream.format("trailchanges").option("path", cfg.trail)
              .option("startingPosition", start).option("rows", "apply")
              .option("stopFile", str(stop_file))
              .option("tables", router_option(cfg.source_patterns,
                                              list(cfg.params.map_excludes))))
    if cfg.target_kind == "POSTGRES":  # each batch read as key partitions (no shuffle)
        reader = (reader.option("keyPartitions", str(applier.partitions))
                  .option("splitFile", str(cfg.split_file)))
        if cfg.split_min_records:
            reader = reader.option("splitMinRecords", str(cfg.split_min_records))
    if cfg.max_records:
        reader = reader.option("maxRecordsPerTrigger", str(cfg.max_records))
    if not opts.once:  # the source keeps the batch window (spark.batch_window)
        seconds = cfg.params.batch_seconds(opts.trigger_seconds, patient=applier.continuous)
        reader = reader.option(WINDOW_OPTION, window_ms(seconds))
        if applier.continuous:  # applied as the trail grows: no hurry to batch, and
            # batches that only record how far the stream apply durably got
            reader = (reader.option(PATIENT_OPTION, "true")
                      .option(APPLIED_OPTION, str(applier.home.checkpoints.path(
                          cfg.group, "REPLICAT"))))
    writer = (reader.load().writeStream.foreachBatch(applier)
              .option("checkpointLocation", str(spark_dir))
              .queryName(f"replicat_{cfg.group.lower()}"))
    if opts.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=ZERO_TRIGGER)
    return writer.start()


def run_replicat_group(home: Home, name: str, opts: RunOptions, *, spark: Any = None) -> int:
    """Run REPLICAT ``name`` in the foreground until it is stopped; returns the exit code.

    ``spark``: a session to run in (tests); by default the process starts its own, in its
    own process session, and stops it at the end.
    """
    from trailgate.replicat.micro_batch import CONTINUOUS_CONF, BatchApplier, batch_base
    from trailgate.spark import stop_spark
    from trailgate.trail.keys import use_home

    use_home(home.path)  # an encrypted trail outside the home is read with its keys

    with GroupProcess(home, "REPLICAT", name, title=TITLE) as proc, proc.report_log():
        cfg = load_replicat_config(home, name)
        _echo_parameters(proc, cfg)
        lines = _validate_target(proc, cfg)
        report = proc.report
        assert report is not None
        report.section("Trail and target")
        report.line(f"Trail:            {cfg.trail_label} ({cfg.trail})")
        for line in lines:
            report.line(line)
        if not Path(cfg.trail).parent.is_dir():
            proc.warn(f"the trail directory {Path(cfg.trail).parent} does not exist yet; "
                      f"REPLICAT {cfg.group} waits for its first file")
        stop_file = home.dirchk / f"{cfg.group}.stop"
        stop_file.unlink(missing_ok=True)
        spark_dir = home.spark_checkpoint_dir(cfg.group) / "spark"
        stats = _Stats()
        registry = _instantiation(proc, home, cfg)
        csn_filter = ChangeFilter.of(CsnFilter.of(opts.atcsn, opts.aftercsn), registry)
        own = spark is None
        if own:
            spark = proc.start_spark(cfg.params.spark.master, spark_conf(cfg.params))
        try:
            n = 1 if registry is not None else _partitions(cfg, spark)
            base = batch_base(cfg, spark_dir)
            report.line(f"Partitions:       {n} (changes to one key stay in one, in trail "
                        f"order)")
            report.line()
            start = _start_position(home, cfg)
            applier = BatchApplier(cfg, n, base=base, csn_filter=csn_filter,
                                   on_batch=stats.add, spark_dir=spark_dir,
                                   start=TrailPosition.parse(start),
                                   continuous=(not opts.once
                                               and cfg.params.spark.flag(CONTINUOUS_CONF)),
                                   stop_file=stop_file)
            applier.on_rest = stats.add_rest
            if applier.continuous:
                report.line("Apply:            as the trail grows (each micro-batch records "
                            "how far it got)")
                report.line()
            elif cfg.params.eof_delay != DEFAULT_REPLICAT_EOF_DELAY_SECONDS:
                report.line("Note:             EOFDELAY is not used: it paces the stream "
                            "apply, which this run does not use (a PostgreSQL target with a "
                            "checkpoint table, not --once)")
                report.line()
            if proc.stop_requested:
                reason = proc.stop_reason or "stop requested"
            else:
                query = _start_query(spark, cfg, opts, stop_file, applier, spark_dir, start)
                proc.started()
                try:
                    reason = watch(proc, query, stop_file=stop_file,
                                   max_batches=opts.max_batches,
                                   stop_timeout=opts.stop_timeout,
                                   report_every=report_interval(cfg.params.report_count),
                                   progress=stats.progress_line,
                                   batches=lambda: stats.batches,
                                   failed=applier.failure)
                finally:
                    applier.close()
                if opts.once and reason == "the query ended":
                    reason = "everything in the trail applied (--once)"
        except TrailgateError:
            raise
        except Exception as exc:  # py4j/Spark errors: a message, not a Java stack
            raise query_failure(exc, TargetError) from None
        finally:
            stop_file.unlink(missing_ok=True)
            if own:
                stop_spark()
        report.section("Run Time Statistics")
        for line in stats.final_lines():
            report.line(line)
        proc.stopped(reason)
    return 0

