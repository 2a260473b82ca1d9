"""What the Manager tells about a group: registry, process, checkpoint, in one plain dict.

The REST API, the metrics and the console all read this one shape, so they never
disagree; it is built from the same files GGSCI's INFO, STATS and LAG read (the registry,
``dirchk/NAME.pid``, the checkpoint), plus what the Manager itself saw (restarts, abends).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from trailgate.checkpoint import Checkpoint, checkpoint_lag, parse_time
from trailgate.errors import TrailgateError
from trailgate.home import GroupInfo, Home
from trailgate.manager.supervisor import GroupWatch
from trailgate.process.lifecycle import process_state

__all__ = ["group_status", "position_text"]


def position_text(position: dict[str, Any] | None) -> str | None:
    """A checkpoint position as people write it: ``seqno:rba``, an LSN ``X/Y``, an SCN."""
    if not position:
        return None
    if "seqno" in position:
        return f"{position['seqno']}:{position.get('rba', 0)}"
    if "lsn" in position:
        lsn = position["lsn"]
        if isinstance(lsn, int):
            return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
        return str(lsn)
    return ", ".join(f"{k} {v}" for k, v in position.items())


def _stats(cp: Checkpoint | None) -> dict[str, dict[str, int]]:
    if cp is None:
        return {}
    return {table: {**s.to_json(), "total": s.total} for table, s in sorted(cp.stats.items())}


def group_status(home: Home, info: GroupInfo, watch: GroupWatch | None = None,
                 now: datetime | None = None) -> dict[str, Any]:
    """One group as JSON-ready data (see docs/manager.md, REST)."""
    now = now or datetime.now(UTC)
    state = process_state(home, info.name)
    error = None
    try:
        cp = home.checkpoints.load(info.name, info.kind)
    except TrailgateError as exc:
        cp, error = None, str(exc)
    updated = parse_time(cp.updated) if cp is not None else None
    wp = cp.write_position if cp is not None else None
    return {
        "name": info.name, "kind": info.kind, "source": info.source,
        "source_path": info.source_path, "description": info.description,
        "trails": [{"path": t.path, "kind": t.kind, "megabytes": t.megabytes}
                   for t in info.trails],
        "status": state.status.value, "pid": state.pid,
        "since": state.since.isoformat(timespec="seconds") if state.since else None,
        "lag_seconds": checkpoint_lag(cp),
        "checkpoint_age_seconds": (now - updated).total_seconds() if updated else None,
        "read_position": cp.read_position if cp is not None else None,
        "read_position_text": position_text(cp.read_position) if cp is not None else None,
        "read_time": cp.read_time if cp is not None else None,
        "write_trail": cp.write_trail if cp is not None else None,
        "write_position": {"seqno": wp.seqno, "rba": wp.rba} if wp is not None else None,
        "last_csn": cp.last_csn if cp is not None else None,
        "checkpoint_updated": cp.updated if cp is not None else None,
        "stats_since": cp.stats_since if cp is not None else None,
        "stats": _stats(cp),
        "checkpoint_error": error,
        "restarts": watch.restarts_total if watch else 0,
        "abends": watch.abends_total if watch else 0,
        "last_abend": watch.last_abend if watch else None,
    }
