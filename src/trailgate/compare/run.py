"""``trailgate compare EXTRACT REPLICAT`` (and GGSCI's ``COMPARE``): the whole compare.

Two Spark jobs over the tables' ranges — the hash pass on every range, the row pass on
those whose hashes differ — then, while replication runs, the confirmation of what differs
(:mod:`~.confirm`), the table on screen, the JSON report and, on request, the repair SQL
and its application.  Exit status 0 when every table is in sync, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trailgate.compare.confirm import confirm
from trailgate.compare.repair import apply_repair, repair_sql
from trailgate.compare.report import TableResult, render, to_json
from trailgate.compare.spec import ROWS_PER_RANGE, CompareJob, resolve_job
from trailgate.compare.task import CompareTask, Difference
from trailgate.errors import ConfigError, TargetError, TrailgateError
from trailgate.home import Home

__all__ = ["CompareOptions", "CompareOutcome", "add_arguments", "compare", "run"]


class TextOut(Protocol):
    """Where the compare prints: what it needs of a text stream (GGSCI's output is one)."""

    def write(self, text: str, /) -> int: ...
    def flush(self) -> None: ...


@dataclass(slots=True)
class CompareOptions:
    tables: list[str] = field(default_factory=list)
    report: Path | None = None
    repair: Path | None = None
    apply_repair: bool = False
    confirm: bool = True
    confirm_timeout: float = 120.0
    max_rows: int = 1000
    rows_per_range: int = ROWS_PER_RANGE
    master: str | None = None
    spark: Any = None
    out: TextOut | None = None


@dataclass(slots=True)
class CompareOutcome:
    results: list[TableResult]
    differences: list[Difference]
    job: CompareJob
    note: str | None = None

    @property
    def in_sync(self) -> bool:
        return all(r.status == "in sync" for r in self.results) and not self.job.missing


def _collect(spark: Any, tasks: list[CompareTask], mode: str) -> list[Any]:
    from trailgate.compare.spark_source import CompareDataSource
    from trailgate.process.query import query_error

    if not tasks:
        return []
    fd, name = tempfile.mkstemp(prefix="tgcompare-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as fh:  # 0600: the tasks hold connection strings
            pickle.dump(tasks, fh)
        spark.dataSource.register(CompareDataSource)
        try:
            return list(spark.read.format("tgcompare").option("tasks", name)
                        .option("mode", mode).load().collect())
        except Exception as exc:
            raise TargetError(query_error(exc)) from None
    finally:
        os.unlink(name)


def _schemas(job: CompareJob) -> dict[int, Any]:
    if job.target_kind != "DELTA":
        return {}
    from trailgate.compare.sides import DeltaSide

    side = DeltaSide(job.target)
    return {n: side.schema(t) for n, t in job.tables.items()}


def compare(home: Home, extract: str, replicat: str, opts: CompareOptions
            ) -> CompareOutcome:
    """Compare (module docstring); prints the table to ``opts.out``."""
    out = opts.out or sys.stdout
    started = time.monotonic()
    job = resolve_job(home, extract, replicat, opts.tables or None, opts.rows_per_range)
    spark = opts.spark
    if spark is None:
        from trailgate.spark import get_spark

        spark = get_spark("trailgate compare", master=opts.master)
    schemas = _schemas(job)
    ranges = [(t, i) for t in job.tables for i in range(len(job.tables[t].ranges))]
    out.write(f"Comparing {len(job.tables)} table(s) in {len(ranges)} range(s): hash pass\n")
    out.flush()
    hashes = _collect(spark, [CompareTask(job, "hash", t, i, schemas.get(t), opts.max_rows)
                              for t, i in ranges], "hash")
    results = {n: TableResult(t.source, t.target, ranges=len(t.ranges))
               for n, t in job.tables.items()}
    differing = []
    for t, i, sc, sh, tc, th in hashes:
        r = results[t]
        r.compared += sc
        r.target_rows += tc
        if (sc, sh) != (tc, th):
            r.ranges_differing += 1
            differing.append((t, i))
    if differing:
        out.write(f"Row pass on {len(differing)} range(s) whose hashes differ\n")
        out.flush()
    rows = _collect(spark, [CompareTask(job, "rows", t, i, schemas.get(t), opts.max_rows)
                            for t, i in differing], "rows")
    diffs = [Difference.of(r) for r in rows]
    note = None
    in_flight: list[Difference] = []
    resolved: dict[int, int] = defaultdict(int)
    if diffs and opts.confirm:
        out.write(f"Confirming {len(diffs)} out-of-sync row(s) once the Replicat has "
                  f"applied what the source committed\n")
        out.flush()
        found = confirm(home, job, diffs, timeout=opts.confirm_timeout,
                        schemas=schemas or None)
        note = found.note
        before: defaultdict[int, int] = defaultdict(int)
        for d in diffs:
            before[d.table] += 1
        diffs, in_flight = found.persistent, found.in_flight
        for t in before:
            resolved[t] = before[t] - sum(1 for d in diffs + in_flight if d.table == t)
    for d in diffs:
        results[d.table].add(d, [c.source for c in job.tables[d.table].columns])
    for d in in_flight:
        results[d.table].in_flight += d.n
    for n, r in results.items():
        r.resolved = resolved.get(n, 0)
        r.status = ("OUT OF SYNC" if r.out_of_sync else "in flight" if r.in_flight
                    else "in sync")
        if r.status == "OUT OF SYNC" and note is not None:
            r.status = "OUT OF SYNC?"  # not confirmed: the Replicat did not catch up
    ordered = [results[n] for n in sorted(results)]
    seconds = time.monotonic() - started
    lines = render(ordered, job, seconds, note)
    out.write("\n" + "\n".join(lines) + "\n")
    if opts.report is not None:
        to_json(ordered, job, seconds, note, opts.report)
        out.write(f"JSON report: {opts.report}\n")
    if opts.repair is not None:
        if job.target_kind != "POSTGRES":
            raise ConfigError("repair SQL is written for PostgreSQL targets only; this "
                              "Replicat writes Delta tables")
        text, count, skipped = repair_sql(job, diffs)
        opts.repair.parent.mkdir(parents=True, exist_ok=True)
        opts.repair.write_text(text, "utf-8")
        out.write(f"Repair SQL: {opts.repair} ({count} statement(s)"
                  + (f"; {skipped} row(s) without values left out, run the compare again"
                     if skipped else "") + ")\n")
        if opts.apply_repair:
            apply_repair(job, opts.repair)
            out.write("Repair applied.\n")
    out.flush()
    return CompareOutcome(ordered, diffs, job, note)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("extract", metavar="EXTRACT",
                        help="the Extract whose SOURCEDB and TABLEs are the source")
    parser.add_argument("replicat", metavar="REPLICAT",
                        help="the Replicat whose MAPs and target are the target")
    parser.add_argument("--table", action="append", default=[], metavar="PATTERN",
                        help="compare only tables matching (schema.table, wildcards); "
                        "repeatable")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write a JSON report")
    parser.add_argument("--repair", type=Path, metavar="FILE",
                        help="write SQL that brings the target in line (PostgreSQL)")
    parser.add_argument("--apply-repair", action="store_true",
                        help="run the repair SQL against the target (needs --repair)")
    parser.add_argument("--no-confirm", action="store_true",
                        help="report differences without waiting for the Replicat")
    parser.add_argument("--confirm-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="how long to wait for the pipeline to catch up (default 120)")
    parser.add_argument("--master", help="Spark master (default local[2])")


def run(args: argparse.Namespace) -> int:
    if args.apply_repair and args.repair is None:
        raise ConfigError("--apply-repair needs --repair FILE (the SQL that is run)")
    home = Home.locate(getattr(args, "home", None))
    try:
        outcome = compare(home, args.extract, args.replicat, CompareOptions(
            tables=args.table, report=args.report, repair=args.repair,
            apply_repair=args.apply_repair, confirm=not args.no_confirm,
            confirm_timeout=args.confirm_timeout, master=args.master))
    except TrailgateError:
        raise
    return 0 if outcome.in_sync else 1
