"""Which range a micro-batch covers, from Spark's own offset log.

The groups run most micro-batches on the driver, which needs the batch's ``[start, end)``.
Spark writes each batch's end offset to ``<checkpoint>/offsets/<batch id>`` before running
it (a replay reads the same file), and a batch starts where the one before ended, or at the
source's initial offset.  The format (``v1``, a metadata line, an offset line per source)
is Spark's since 2.x; anything unexpected gives ``None`` and the batch goes through Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trailgate.model import TrailPosition
from trailgate.spark.trail_offsets import position_of

__all__ = ["batch_range", "logged_end", "logged_offset"]


def logged_offset(spark_dir: str | Path, batch_id: int) -> dict[str, Any] | None:
    """The end offset (one source's JSON) Spark's offset log holds for ``batch_id``, or
    None."""
    try:
        lines = (Path(spark_dir) / "offsets" / str(batch_id)).read_text("utf-8").splitlines()
    except OSError:
        return None
    if len(lines) != 3 or lines[0] != "v1" or lines[2].strip() in ("", "-"):
        return None
    try:
        offset = json.loads(lines[2])
    except ValueError:
        return None
    return offset if isinstance(offset, dict) else None


def logged_end(spark_dir: str | Path, batch_id: int) -> TrailPosition | None:
    """The trail position a trail source's batch ``batch_id`` ends at, or None."""
    offset = logged_offset(spark_dir, batch_id)
    try:
        return None if offset is None else position_of(offset)
    except ValueError:
        return None


def batch_range(spark_dir: str | Path, batch_id: int, initial: TrailPosition | None
                ) -> tuple[TrailPosition, TrailPosition] | None:
    """``(start, end)`` of a trail source's Spark batch ``batch_id``, or None if the log
    does not say."""
    end = logged_end(spark_dir, batch_id)
    start = initial if batch_id == 0 else logged_end(spark_dir, batch_id - 1)
    if end is None or start is None or start > end:
        return None
    return start, end
