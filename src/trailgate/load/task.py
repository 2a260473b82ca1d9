"""One range of one table into the load's target: a Spark task's or a driver thread's work.

The range reports as it goes in a small file per range (bytes read so far, then the rows
once done) that the driver's progress display reads: Spark only tells the driver about a
task when it ends.  A range another loader of the same run took first (the target says so)
is skipped and writes no file: the one that loads it does.  It returns one summary row;
the rows themselves never enter the JVM.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trailgate.errors import TrailgateError, marked
from trailgate.load.job import LoadJob, Task

__all__ = ["SUMMARY_SCHEMA", "Summary", "load_one", "progress_file", "run_task"]

SUMMARY_SCHEMA = "table int, range int, rows long, skipped boolean, seconds double"
_EVERY = 0.5  # seconds between progress writes
#: (table, range, rows, skipped, seconds): what a range returns.
Summary = tuple[int, int, int, bool, float]


def progress_file(directory: str, table: int, index: int) -> Path:
    return Path(directory) / f"{table}-{index}.json"


def _writer(path: Path) -> Callable[[int], None]:
    last = [0.0]

    def report(done_bytes: int) -> None:
        now = time.monotonic()
        if now - last[0] < _EVERY:
            return
        last[0] = now
        _write(path, {"bytes": done_bytes})

    return report


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _loader(kind: str) -> Callable[..., int | None]:
    if kind == "POSTGRES":
        from trailgate.load.pg_sink import load_range
        return load_range
    if kind == "DELTA":
        from trailgate.load.lake_sink import load_delta_range
        return load_delta_range
    if kind == "PARQUET":
        from trailgate.load.lake_sink import load_parquet_range
        return load_parquet_range
    from trailgate.load.trail_sink import load_trail_range
    return load_trail_range


def load_one(job: LoadJob, task: Task) -> Summary:
    """Load ``task``'s range (a ``TrailgateError`` saying what failed)."""
    table = job.tables[task.table]
    path = progress_file(job.progress_dir, task.table, task.range.index)
    started = time.monotonic()
    rows = _loader(job.sink.kind)(job, table, task.range, _writer(path))
    seconds = time.monotonic() - started
    if rows is not None:
        _write(path, {"rows": rows, "done": True})
    return task.table, task.range.index, rows or 0, rows is None, seconds


def run_task(job: LoadJob, task: Task) -> Summary:
    """:func:`load_one` in a Spark task: the driver shows a failure's text, not a stack."""
    try:
        return load_one(job, task)
    except TrailgateError as exc:
        raise RuntimeError(marked(str(exc))) from None
