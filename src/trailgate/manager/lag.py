"""Lag as the Manager watches it: samples over time, heartbeat lag per path, LAGREPORT events.

Every LAGSAMPLESECONDS the Manager keeps each group's checkpoint lag and, for each
PostgreSQL Replicat whose target has the heartbeat tables, the GG_LAG rows (lag end to end
and per hop, per path): the console's plot and the metrics read these.  Every
LAGREPORTMINUTES it writes GoldenGate's lag events: OGG-00948 (INFO) above LAGINFO,
OGG-00947 (WARNING) above LAGCRITICAL.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.manager.params import ManagerParams

__all__ = ["LagMonitor", "format_hms"]

EVENT_LAG_INFO = "OGG-00948"
EVENT_LAG_CRITICAL = "OGG-00947"
TARGETS_EVERY = 60.0  # seconds between looks at which targets have heartbeat tables
RETRY_AFTER = 30.0  # seconds before a target that failed is asked again

Log = Callable[[str, str, str], None]


def format_hms(seconds: float | None) -> str:
    total = max(0, int(seconds or 0))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


class LagMonitor:
    """Lag samples (kept ``keep`` per series) and the heartbeat rows last read."""

    def __init__(self, home: Home, params: ManagerParams, log: Log, keep: int = 720, *,
                 purge: bool = True):
        """``purge``: also delete the heartbeat history older than RETENTION_TIME (the
        Manager's monitor; a GGSCI INFO or LAG only reads)."""
        self.purge = purge
        self.home = home
        self.params = params
        self.log = log
        self.keep = keep
        self.checkpoint: dict[str, deque[tuple[float, float]]] = {}
        self.heartbeat: dict[str, deque[tuple[float, float]]] = {}
        self.heartbeat_rows: list[dict[str, Any]] = []
        self._targets: list[tuple[str, str]] = []
        self._targets_at = -TARGETS_EVERY
        self._conns: dict[str, Any] = {}
        self._failed: dict[str, float] = {}
        self._purged_at: dict[str, float] = {}

    # -- heartbeat targets ------------------------------------------------------------
    def _find_targets(self) -> list[tuple[str, str]]:
        from trailgate.params import ReplicatParams, parse_globals, parse_group_params
        from trailgate.replicat.config import target_conninfo

        try:
            schema = parse_globals(self.home.globals_file).ggschema
        except TrailgateError:
            return []
        if not schema:
            return []
        found: list[tuple[str, str]] = []
        for info in self.home.groups():
            if info.kind != "REPLICAT":
                continue
            try:
                params = parse_group_params(self.home, info.name)
                if isinstance(params, ReplicatParams) and params.target is not None and \
                        params.target.kind == "POSTGRES":
                    conninfo = target_conninfo(self.home, params)
                    if (conninfo, schema) not in found:
                        found.append((conninfo, schema))
            except (TrailgateError, OSError):
                continue
        return found

    def _rows(self, conninfo: str, schema: str, now: float) -> list[dict[str, Any]]:
        from trailgate.db.connect import connect
        from trailgate.db.heartbeat import HISTORY, heartbeat_objects, lag_rows, settings

        if now < self._failed.get(conninfo, 0.0):
            return []
        try:
            conn = self._conns.get(conninfo)
            if conn is None or conn.closed:
                conn = self._conns[conninfo] = connect(
                    conninfo, application_name="trailgate manager", timeout=3)
            if not heartbeat_objects(conn, schema)[HISTORY]:
                return []
            rows = lag_rows(conn, schema)
            if self.purge and now >= self._purged_at.get(conninfo, 0.0):
                self._purge(conn, conninfo, schema, now, settings)
            return rows
        except Exception:  # a target that is down: asked again later
            self._failed[conninfo] = now + RETRY_AFTER
            conn = self._conns.pop(conninfo, None)
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            return []

    def _purge(self, conn: Any, conninfo: str, schema: str, now: float,
               settings: Callable[[Any, str], Any]) -> None:
        """The history older than RETENTION_TIME, every PURGE_FREQUENCY days."""
        from trailgate.db.heartbeat import purge_history

        values = settings(conn, schema)
        if values is None or now < self._purged_at.get(conninfo, 0.0):
            return
        purge_history(conn, schema, values.retention_days)
        self._purged_at[conninfo] = now + values.purge_frequency_days * 86400

    # -- sampling -----------------------------------------------------------------------
    def sample(self, statuses: list[dict[str, Any]]) -> None:
        now = time.time()
        mono = time.monotonic()
        for s in statuses:
            if s["lag_seconds"] is not None:
                series = self.checkpoint.setdefault(s["name"], deque(maxlen=self.keep))
                series.append((now, float(s["lag_seconds"])))
        if mono - self._targets_at >= TARGETS_EVERY:
            self._targets, self._targets_at = self._find_targets(), mono
        rows: list[dict[str, Any]] = []
        for conninfo, schema in self._targets:
            rows.extend(self._rows(conninfo, schema, mono))
        self.heartbeat_rows = rows
        for row in rows:
            if row.get("incoming_lag") is not None:
                series = self.heartbeat.setdefault(row["incoming_path"], deque(maxlen=self.keep))
                stamp = row.get("heartbeat_received_ts")
                when = stamp.timestamp() if stamp is not None else now
                if not series or series[-1][0] != when:
                    series.append((when, float(row["incoming_lag"])))

    def heartbeat_for(self, kind: str, name: str) -> list[dict[str, Any]]:
        """The GG_LAG rows of the paths a group is on."""
        out = []
        for row in self.heartbeat_rows:
            path = [p.strip() for p in str(row.get("incoming_path", "")).split("==>")]
            if name.upper() in (p.upper() for p in path):
                out.append(row)
        return out

    def close(self) -> None:
        for conn in self._conns.values():
            with contextlib.suppress(Exception):
                conn.close()
        self._conns.clear()

    # -- LAGREPORT ----------------------------------------------------------------------
    def report(self, statuses: list[dict[str, Any]]) -> None:
        info, critical = self.params.lag_info_seconds, self.params.lag_critical_seconds
        if info is None and critical is None:
            return
        for s in statuses:
            lag = s["lag_seconds"]
            if lag is None:
                continue
            text = (f"Lag for {s['kind']} {s['name']} is {format_hms(lag)} (checkpoint "
                    f"updated {format_hms(s['checkpoint_age_seconds'])} ago).")
            if critical is not None and lag > critical:
                self.log("WARNING", EVENT_LAG_CRITICAL, text)
            elif info is not None and (lag > info or info == 0):
                self.log("INFO", EVENT_LAG_INFO, text)
