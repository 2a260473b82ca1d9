"""Driving a group's streaming query: watch it, stop it after a batch, report its errors.

Shared by Replicat and Data Pump.  A stop (SIGTERM/Ctrl-C, ``--max-batches``) touches the
stop file the ``trailchanges`` source checks, so no new batch is planned; the batch in flight
finishes and commits, then the query stops.  Errors are shown as trailgate's message (the
text :func:`trailgate.replicat.worker.marked` brackets, or a trailgate error class name in
the text), never a Java or Python stack.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.process.runtime import GroupProcess, stop_after_batch
from trailgate.replicat.worker import MARK

__all__ = ["query_error", "stop_after_batch", "watch"]

_ERROR = re.compile(r"(?:trailgate\.errors\.)?(SourceError|ConfigError|TrailFormatError|"
                    r"TargetError|CollisionError|MappingError|ValueError|OSError|"
                    r"PermissionError): (.+)")


def query_error(exc: Any) -> str:
    """The first trailgate-level message inside a Spark error."""
    text = str(getattr(exc, "desc", None) or exc)
    start = text.find(MARK)
    if start >= 0:
        end = text.find(MARK, start + len(MARK))
        if end > start:
            return text[start + len(MARK):end].strip()
    found = _ERROR.findall(text)
    if found:
        return found[-1][1].strip()
    first = next((line for line in text.splitlines() if line.strip()), text)
    return first.strip()[:2000]


def watch(proc: GroupProcess, query: Any, *, stop_file: Path, max_batches: int | None,
          stop_timeout: float, report_every: float, progress: Callable[[], str],
          idle: Callable[[], str | None] | None = None,
          batches: Callable[[], int] | None = None) -> str:
    """Follow the query until it ends or a stop is due; returns the stop reason.

    ``idle`` is asked between batches whether the query should end (a reason) — the pump
    uses it to roll its output file when the input's header changes.  ``batches`` counts
    the micro-batches with data for ``max_batches`` (default: Spark's progress, which
    misses the Replicat's batches applied on the driver, as Spark never reads them).
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
                if last.get("numInputRows", 0) > 0:
                    done += 1
        if report is not None and time.monotonic() >= next_report:
            report.line(progress())
            next_report = time.monotonic() + report_every
        reason = proc.stop_reason if proc.stop_requested else None
        if reason is None and max_batches is not None and done >= max_batches:
            reason = f"{done} micro-batches done (--max-batches)"
        if reason is None and idle is not None:
            reason = idle()
        if reason is not None:
            stop_after_batch(query, stop_file, stop_timeout)
            error = query.exception()
            if error is not None:
                raise _error(error)
            return reason
    error = query.exception()
    if error is not None:
        raise _error(error)
    return "the query ended"


def _error(exc: Any) -> Exception:
    from trailgate.errors import TargetError

    return TargetError(query_error(exc))
