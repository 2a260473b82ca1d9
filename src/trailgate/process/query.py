"""Driving a group's streaming query: watch it, stop it after a batch, report its errors.

Every group (Extract, Data Pump, Replicat) runs one Spark streaming query and follows it the
same way: progress lines in the report, a clean stop between micro-batches once a stop is
due (the stop file keeps the source from planning another batch), and errors shown as
trailgate's own message — the text :func:`trailgate.errors.marked` brackets, or a trailgate
error class name in the text — never a Java or Python stack.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.errors import MARK, EngineError, TargetError, TrailgateError
from trailgate.params import ReportCount
from trailgate.process.runtime import GroupProcess, stop_after_batch

__all__ = ["query_error", "query_failure", "report_interval", "stop_after_batch", "watch"]

_ERROR = re.compile(r"(?:trailgate\.errors\.)?(SourceError|ConfigError|TrailFormatError|"
                    r"TargetError|NetworkError|CollisionError|MappingError|ValueError|OSError|"
                    r"PermissionError): (.+)")


def query_error(exc: Any) -> str:
    """The first trailgate-level message inside a Spark error."""
    return _message(exc)[0]


def query_failure(exc: Any, error: type[TrailgateError] = TargetError) -> TrailgateError:
    """A failed query as the error to raise: ``error`` with trailgate's own message when
    the failure holds one, else an :class:`EngineError` (Spark's own failure, which the
    Manager's AUTORESTART may retry)."""
    message, ours = _message(exc)
    if ours:
        return error(message)
    return EngineError(f"Spark failed: {message}")


def _message(exc: Any) -> tuple[str, bool]:
    text = str(getattr(exc, "desc", None) or exc)
    start = text.find(MARK)
    if start >= 0:
        end = text.find(MARK, start + len(MARK))
        if end > start:
            return text[start + len(MARK):end].strip(), True
    found = _ERROR.findall(text)
    if found:
        return found[-1][1].strip(), True
    first = next((line for line in text.splitlines() if line.strip()), text)
    return first.strip()[:2000], False


def report_interval(report_count: ReportCount | None) -> float:
    """Seconds between progress lines: ``REPORTCOUNT EVERY n SECONDS|MINUTES|HOURS``, else a
    minute (a count of records is not a time: a minute then too)."""
    if report_count is None or report_count.unit == "RECORDS":
        return 60.0
    return report_count.every * {"SECONDS": 1, "MINUTES": 60, "HOURS": 3600}.get(
        report_count.unit, 1)


def watch(proc: GroupProcess, query: Any, *, stop_file: Path, max_batches: int | None,
          stop_timeout: float, report_every: float, progress: Callable[[], str],
          idle: Callable[[], str | None] | None = None,
          batches: Callable[[], int] | None = None, count_empty: bool = False,
          error: type[TrailgateError] = TargetError,
          failed: Callable[[], TrailgateError | None] | None = None) -> str:
    """Follow the query until it ends or a stop is due; returns the stop reason.

    ``idle`` is asked between batches whether the query should end (a reason) — the pump
    uses it to roll its output file when the input's header changes.  ``batches`` counts
    the micro-batches for ``max_batches`` (default: Spark's progress, batches with input
    rows only unless ``count_empty``; it misses batches a group applies on the driver, as
    Spark never reads them).  A failure of the query is raised as ``error``.  ``failed``
    says whether a thread of the driver doing the group's work between batches has
    stopped (its error): the query is then stopped and the error raised at once, not at
    the next batch, which a long batch window (or no new data) may leave far off.
    """
    next_report = time.monotonic() + report_every
    seen: int | None = None
    done = 0
    report = proc.report
    while True:
        if query.awaitTermination(0.5):
            break
        if batches is not None:
            done = batches()
        else:
            last = query.lastProgress
            if last is not None and last.get("batchId") != seen:
                seen = last.get("batchId")
                if count_empty or last.get("numInputRows", 0) > 0:
                    done += 1
        if report is not None and time.monotonic() >= next_report:
            report.line(progress())
            next_report = time.monotonic() + report_every
        reason = proc.stop_reason if proc.stop_requested else None
        if reason is None and max_batches is not None and done >= max_batches:
            reason = f"{done} micro-batches done (--max-batches)"
        if reason is None and idle is not None:
            reason = idle()
        broken = failed() if failed is not None and reason is None else None
        if broken is not None:
            stop_after_batch(query, stop_file, stop_timeout)
            raise broken
        if reason is not None:
            stop_after_batch(query, stop_file, stop_timeout)
            failure = query.exception()
            if failure is not None:
                raise query_failure(failure, error)
            broken = failed() if failed is not None else None
            if broken is not None:  # e.g. the flush a stop asked for: not a clean stop
                raise broken
            return reason
    failure = query.exception()
    if failure is not None:
        raise query_failure(failure, error)
    return "the query ended"
