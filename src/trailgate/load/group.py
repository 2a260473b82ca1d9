"""One run of an initial load (``START EXTRACT name`` of a SOURCEISTABLE group).

The driver resolves tables and targets, plans or reuses the ranges, learns from the targets
which are done, takes the cut (a slot created with an exported snapshot) and runs the
unfinished ranges, each reader importing that snapshot, along the route ``route`` chooses:
the driver's threads, a Spark job, or both sharing one queue; then the manifest, the
Replicats' instantiation registries, STATS and the summary.  A kill -9 leaves committed
ranges done and nothing else.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from trailgate.apply.instantiation import Cut, Instantiation, TableCuts
from trailgate.apply.table_map import destination
from trailgate.capture.postgres.catalog import SourceTable, find_tables
from trailgate.capture.postgres.exported_slot import ExportedSlot
from trailgate.capture.postgres.pgoutput import format_lsn
from trailgate.capture.postgres.ranges import plan_ranges
from trailgate.capture.postgres.slots import slot_name
from trailgate.checkpoint import Checkpoint, TableStats
from trailgate.db.connect import connect
from trailgate.errors import ConfigError, SourceError
from trailgate.home import Home
from trailgate.load.config import LoadConfig, load_load_config
from trailgate.load.job import LoadJob, SinkSpec, Task
from trailgate.load.manifest import Manifest, RangeState, TableState, manifest_path
from trailgate.load.progress import Progress, summary_lines
from trailgate.load.range_runner import RangeRunner
from trailgate.load.route import Route, choose_route
from trailgate.load.sink_driver import SinkDriver
from trailgate.load.task import Summary
from trailgate.model import julian_from_unix_micros
from trailgate.process.runtime import GroupProcess
from trailgate.spark.session import default_master

__all__ = ["LoadOptions", "run_load"]

TITLE = "trailgate Initial Load (SOURCEISTABLE)"
#: ``SPARK CONF trailgate.load.rowsPerRange=n``: rows a range aims at (plan.ROWS_PER_RANGE).
ROWS_PER_RANGE_CONF = "trailgate.load.rowsPerRange"
SLOT_RETRY_SECONDS = 30.0


@dataclass(slots=True)
class LoadOptions:
    """``out``: where progress goes (default stdout); ``rows_per_range`` (tests)."""

    out: TextIO | None = None
    rows_per_range: int | None = None
    spark: Any = None


def _resolve(conn: Any, cfg: LoadConfig) -> list[tuple[SourceTable, Any]]:
    """The source tables of the TABLE statements with their destinations, in file order."""
    params = cfg.params
    out: list[tuple[SourceTable, Any]] = []
    seen: set[int] = set()
    maps = cfg.replicat.params if cfg.replicat is not None else None
    for spec in params.tables:
        found = find_tables(conn, spec.name, params.table_excludes)
        if not found:
            raise ConfigError(f"TABLE {spec.name}: no such table in database "
                              f"{conn.info.dbname}; check the name (unquoted names are "
                              f"folded to lower case), or remove the TABLE statement",
                              path=spec.path, line=spec.line)
        for table in found:
            if table.oid in seen:
                continue
            seen.add(table.oid)
            dest = destination(table, maps)
            if dest is None:
                assert cfg.replicat is not None
                raise ConfigError(f"TABLE {spec.name}: no MAP of REPLICAT "
                                  f"{cfg.replicat.group} takes {table.qualified_name}, so the "
                                  f"load has nowhere to put it; add a MAP for it or leave it "
                                  f"out (TABLEEXCLUDE)", path=spec.path, line=spec.line)
            out.append((table, dest))
    return out


def _manifest(conn: Any, cfg: LoadConfig, tables: list[tuple[SourceTable, Any]],
              path: Path, rows_per_range: int | None) -> Manifest:
    found = Manifest.load(path)
    names = [t.qualified_name for t, _ in tables]
    if found is not None:
        had = [t.source for t in found.tables]
        if had != names:
            raise ConfigError(
                f"the TABLE statements select other tables than when this load started "
                f"(now {', '.join(names)}; then {', '.join(had)}): restore them to finish "
                f"the load, or remove {path} and empty its targets to load afresh",
                path=cfg.params.path)
        return found
    manifest = Manifest(cfg.group, cfg.output)
    for number, (table, dest) in enumerate(tables):
        kwargs = {"rows_per_range": rows_per_range} if rows_per_range else {}
        ranges = plan_ranges(conn, table, **kwargs)
        manifest.tables.append(TableState(
            number, table.qualified_name, f"{dest.schema}.{dest.name}", ranges[0].kind,
            table.key[0] if ranges[0].kind == "key" else None, table.estimate,
            [RangeState(r) for r in ranges]))
    return manifest


def _cut(cfg: LoadConfig, home: Home, manifest: Manifest, proc: GroupProcess
         ) -> ExportedSlot:
    """The exported snapshot of this run: the continuing Extract's new slot, else a
    temporary slot's (retried while a killed run's temporary slot is still going away)."""
    for group in home.groups():
        begin = group.begin if isinstance(group.begin, dict) else {}
        if group.kind == "EXTRACT" and begin.get("initialload") == cfg.group:
            slot = slot_name(group.name)
            with connect(cfg.conninfo) as conn:
                exists = conn.execute("SELECT database, current_database() FROM "
                                      "pg_replication_slots WHERE slot_name = %s",
                                      (slot,)).fetchone()
            if exists is not None and exists[0] != exists[1]:
                raise ConfigError(f"EXTRACT {group.name}'s replication slot {slot} belongs "
                                  f"to database {exists[0]} (slots are per server): DELETE "
                                  f"EXTRACT {group.name} and add it under another name")
            if exists is None:
                from trailgate.capture.postgres.trandata import ensure_catalog

                with connect(cfg.conninfo) as conn:
                    ensure_catalog(conn)
                exported = ExportedSlot.create(cfg.conninfo, slot, temporary=False)
                group.begin = {"lsn": format_lsn(exported.consistent_point),
                               "initialload": cfg.group}
                home.update_group(group)
                manifest.extract, manifest.extract_cut = group.name, exported.consistent_point
                proc.report.line(  # type: ignore[union-attr]
                    f"Extract slot:     {slot} of EXTRACT {group.name} created at "
                    f"{format_lsn(exported.consistent_point)} with the snapshot this run "
                    f"reads: the Extract captures exactly what commits after it")
                return exported
    deadline = time.monotonic() + SLOT_RETRY_SECONDS
    while True:
        try:
            return ExportedSlot.create(cfg.conninfo, slot_name(cfg.group), temporary=True)
        except ConfigError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _pending(cfg: LoadConfig, home: Home, pending: bool) -> None:
    """Mark (or unmark) this load as under way in each continuing Replicat's registry, the
    first thing a run does: a Replicat does not start on half-loaded targets."""
    from trailgate.apply.instantiation import registry_path

    for name in cfg.instantiate:
        reg = Instantiation.load(home.dirchk, name) or Instantiation(name)
        had = cfg.group in reg.pending
        reg.pending = [p for p in reg.pending if p != cfg.group] + ([cfg.group] if pending
                                                                     else [])
        if reg.pending or reg.tables:
            if had != pending or not registry_path(home.dirchk, name).exists():
                reg.save(home.dirchk)
        else:
            registry_path(home.dirchk, name).unlink(missing_ok=True)


def _registries(cfg: LoadConfig, home: Home, manifest: Manifest) -> None:
    """Record the load's cuts for each Replicat that continues after it; a table read
    entirely at the continuing Extract's start needs none (its trail starts there)."""
    for name in cfg.instantiate:
        reg = Instantiation.load(home.dirchk, name) or Instantiation(name)
        for t in manifest.tables:
            cuts = _cuts(t)
            if t.complete and manifest.extract_cut is not None and all(
                    c.csn == manifest.extract_cut for c in cuts):
                reg.tables.pop(t.source, None)
                continue
            reg.tables[t.source] = TableCuts(
                t.source, cfg.group, cuts or [Cut(0)],
                t.key_column if t.split == "key" else None, t.complete)
        if reg.tables or reg.pending:
            reg.save(home.dirchk)
        else:
            from trailgate.apply.instantiation import registry_path

            registry_path(home.dirchk, name).unlink(missing_ok=True)


def _cuts(t: TableState) -> list[Cut]:
    """The table's cuts, neighbouring key ranges of one cut merged; one cut for a table
    not split by key."""
    done = [r for r in t.ranges if r.done and r.cut is not None]
    if t.split != "key":
        return [Cut(max(r.cut for r in done if r.cut is not None))] if done else []
    out: list[Cut] = []
    for r in sorted(done, key=lambda r: r.range.index):
        assert r.cut is not None
        if out and out[-1].csn == r.cut and out[-1].upper == r.range.lower:
            out[-1] = Cut(r.cut, out[-1].lower, r.range.upper)
        else:
            out.append(Cut(r.cut, r.range.lower, r.range.upper))
    return out


def _checkpoint(home: Home, cfg: LoadConfig, manifest: Manifest) -> None:
    """A checkpoint with rows per target table, for STATS and INFO."""
    ck = home.checkpoints.load(cfg.group, "EXTRACT") or Checkpoint(cfg.group, "EXTRACT")
    ck.stats = {t.target: TableStats(inserts=t.rows) for t in manifest.tables}
    cuts = {r.cut for t in manifest.tables for r in t.ranges if r.cut is not None}
    ck.read_position = {"load": "complete" if manifest.complete else "incomplete",
                        "tables": len(manifest.tables),
                        "complete": sum(1 for t in manifest.tables if t.complete)}
    if cuts:
        ck.last_csn = max(cuts)
    home.checkpoints.save(ck)


def _job(cfg: LoadConfig, manifest: Manifest, sink: SinkDriver, exported: ExportedSlot,
         tasks: list[Task], progress_dir: Path) -> LoadJob:
    tables = {t.number: sink.load_table(t) for t in manifest.tables}
    return LoadJob(cfg.group, cfg.conninfo, exported.snapshot, exported.consistent_point,
                   SinkSpec(cfg.sink_kind, cfg.sink_location, sink.seqnos()), tables,
                   tuple(tasks), str(progress_dir),
                   julian_from_unix_micros(int(time.time() * 1_000_000)))


def _run_job(spark: Any, job: LoadJob, work: Path) -> list[Summary]:
    from trailgate.load.spark_source import PgTableDataSource

    path = work / "job.pkl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        pickle.dump(job, fh)
    try:
        spark.dataSource.register(PgTableDataSource)
        rows = spark.read.format("pgtable").option("job", str(path)).load().collect()
        return [tuple(r) for r in rows]
    finally:
        path.unlink(missing_ok=True)


def run_load(home: Home, name: str, opts: LoadOptions | None = None) -> int:
    """Run initial load ``name`` to its end (or a stop); returns the exit code."""
    opts = opts or LoadOptions()
    out = opts.out or sys.stdout
    with GroupProcess(home, "EXTRACT", name, title=TITLE) as proc:
        report = proc.report
        assert report is not None
        cfg = load_load_config(home, name)
        _pending(cfg, home, True)
        proc.echo_parameters(cfg.params.files or [cfg.params.path])
        path = manifest_path(home.dirchk, cfg.group)
        sink = SinkDriver(cfg)
        per_range = (opts.rows_per_range
                     or cfg.params.spark.whole(ROWS_PER_RANGE_CONF, path=cfg.params.path))
        with connect(cfg.conninfo, application_name=f"trailgate load {cfg.group}") as conn:
            tables = _resolve(conn, cfg)
            manifest = _manifest(conn, cfg, tables, path, per_range)
        manifest.save(path)
        if not manifest.complete:  # from now on the Replicats wait for the load to finish
            _registries(cfg, home, manifest)
        sink.prepare([t for t, _ in tables], [d for _, d in tables], manifest, report)
        manifest.runs += 1
        manifest.save(path)
        report.section("Initial load")
        report.line(f"Source:           {len(manifest.tables)} table(s); output "
                    f"{cfg.output} ({cfg.sink_kind})")
        todo = [Task(t.number, r.range) for t in manifest.tables for r in t.ranges
                if not r.done]
        reason, started_spark = "the initial load is complete", False
        if todo and not proc.stop_requested:
            reason, started_spark = _load(proc, home, cfg, manifest, sink, todo, path, opts,
                                          out)
        if manifest.complete and manifest.finished is None:
            manifest.finished = time.strftime("%Y-%m-%dT%H:%M:%S")
        manifest.save(path)
        _registries(cfg, home, manifest)
        if manifest.complete:
            _pending(cfg, home, False)
        _checkpoint(home, cfg, manifest)
        lines = summary_lines(manifest)
        report.section("Summary")
        for line in lines:
            report.line(line)
        out.write("\n" + "\n".join(lines) + "\n")
        out.flush()
        if not manifest.complete and not proc.stop_requested:
            raise SourceError(f"the initial load did not finish ({reason}); start it again: "
                              f"only unfinished ranges are redone")
        if started_spark:
            from trailgate.spark import stop_spark

            stop_spark()
        proc.stopped(reason)
    return 0


def _spark_conf(cfg: LoadConfig) -> dict[str, str]:
    return {k: v for k, v in cfg.params.spark.conf.items() if not k.startswith("trailgate.")}


def _route(cfg: LoadConfig, spark: Any, ranges: int) -> Route:
    from trailgate.capture.postgres.copy_read import pump_available

    master = (spark.sparkContext.master if spark is not None else
              cfg.params.spark.master or default_master())
    return choose_route(cfg.sink_kind, master, ranges, cfg.params.spark.conf,
                        pump=pump_available(), path=cfg.params.path)


def _load(proc: GroupProcess, home: Home, cfg: LoadConfig, manifest: Manifest,
          sink: SinkDriver, todo: list[Task], path: Path, opts: LoadOptions,
          out: TextIO) -> tuple[str, bool]:
    """Take the cut and run the unfinished ranges: the reason the run ended, and whether
    it started a Spark session."""
    report = proc.report
    assert report is not None
    work = cfg.work_dir
    progress_dir = work / "progress"
    shutil.rmtree(progress_dir, ignore_errors=True)
    progress_dir.mkdir(parents=True, exist_ok=True)
    spark = opts.spark
    route = _route(cfg, spark, len(todo))
    started_spark = False
    if spark is None and not route.threads:  # Spark alone: up before the cut is taken
        spark = proc.start_spark(cfg.params.spark.master, _spark_conf(cfg))
        started_spark = True
    exported = _cut(cfg, home, manifest, proc)
    try:
        report.line(f"Cut:              LSN {format_lsn(exported.consistent_point)} "
                    f"(snapshot {exported.snapshot}); {len(todo)} range(s) to load")
        report.line(f"Route:            {route.why}")
        for t in manifest.tables:
            for r in t.ranges:
                if not r.done:
                    r.cut = exported.consistent_point
        manifest.save(path)
        _registries(cfg, home, manifest)  # a Replicat started meanwhile waits for the load
        proc.started()
        job = _job(cfg, manifest, sink, exported, todo, progress_dir)
        tty = hasattr(out, "isatty") and out.isatty()
        runner = RangeRunner(job, route, spark,
                             lambda: proc.start_spark(cfg.params.spark.master,
                                                      _spark_conf(cfg)),
                             lambda: proc.stop_requested,
                             lambda session, part: _run_job(session, part, work))
        progress = Progress(manifest, progress_dir, out, tty=tty, on_tick=runner.tick)
        progress.start()
        try:
            results = runner.run()
        finally:
            progress.stop()
        started_spark = started_spark or runner.started_spark
        reason = (proc.stop_reason or "stop requested") if runner.stopped else \
            "the initial load is complete"
        if route.threads and route.spark:
            by_driver, by_spark = runner.counts()
            report.line(f"Ranges:           {by_driver} copied by the driver's threads, "
                        f"{by_spark} by Spark tasks")
        longest: dict[int, float] = {}
        for table, index, rows, skipped, seconds in results:
            state = manifest.tables[table].ranges[index]
            if skipped and state.done:
                continue  # the other loader's summary has its rows
            state.done, state.rows = True, rows
            longest[table] = max(longest.get(table, 0.0), seconds)
        for t in manifest.tables:
            t.seconds += max(progress.wall_seconds(t.number), longest.get(t.number, 0.0))
        if proc.stop_requested and reason == "the initial load is complete":
            reason = proc.stop_reason or "stop requested"
        sink.refresh(manifest)
        return reason, started_spark
    finally:
        exported.close()
