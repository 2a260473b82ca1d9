"""The Prometheus ``/metrics`` page, built with ``prometheus-client`` at each scrape.

A custom collector reads the Manager's state when Prometheus asks (nothing is counted in
the groups' hot paths): per group its status, records per table and operation, lag at the
checkpoint and per heartbeat hop, trail positions, the trail bytes on disk, the restarts
and abends the Manager saw.  Names follow Prometheus's conventions (``_total`` counters,
``_seconds``, ``_bytes``); docs/manager.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from trailgate.trail.naming import TrailName

__all__ = ["CONTENT_TYPE", "render_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_STATUSES = ("RUNNING", "STARTING", "STOPPED", "ABENDED")
_OPS = ("inserts", "updates", "deletes", "truncates", "ddl", "discards")


def _trail_files(path: Path) -> tuple[int, int]:
    """(files, bytes) of a trail on disk."""
    try:
        name = TrailName(path)
    except ValueError:
        return 0, 0
    files = size = 0
    for seqno in name.sequence_numbers():
        try:
            size += name.file(seqno).stat().st_size
            files += 1
        except OSError:
            continue
    return files, size


class _ManagerCollector(Collector):
    def __init__(self, snapshot: Callable[[], dict[str, Any]]):
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot()
        groups: list[dict[str, Any]] = snap["groups"]
        up = GaugeMetricFamily("trailgate_manager_up", "1 while the Manager runs")
        up.add_metric([], 1)
        yield up
        status = GaugeMetricFamily("trailgate_group_status",
                                   "1 for the group's current status (INFO ALL's Status)",
                                   labels=["group", "kind", "status"])
        running = GaugeMetricFamily("trailgate_group_running", "1 when the group runs",
                                    labels=["group", "kind"])
        lag = GaugeMetricFamily("trailgate_group_lag_seconds",
                                "Lag at the checkpoint: source commit to checkpoint",
                                labels=["group", "kind"])
        age = GaugeMetricFamily("trailgate_group_checkpoint_age_seconds",
                                "Seconds since the group's checkpoint was written",
                                labels=["group", "kind"])
        records = CounterMetricFamily(
            "trailgate_records", "Records per table and operation (Extract, pump: written "
            "to the trail; Replicat: applied to the target), since the statistics began",
            labels=["group", "kind", "table", "operation"])
        seqno = GaugeMetricFamily("trailgate_trail_seqno", "Trail file sequence number of a "
                                  "group's position", labels=["group", "kind", "trail",
                                                              "position"])
        rba = GaugeMetricFamily("trailgate_trail_rba", "Byte offset (RBA) in that file",
                                labels=["group", "kind", "trail", "position"])
        restarts = CounterMetricFamily("trailgate_group_restarts",
                                       "Restarts by AUTORESTART since the Manager started",
                                       labels=["group", "kind"])
        abends = CounterMetricFamily("trailgate_group_abends",
                                     "Abends the Manager saw since it started",
                                     labels=["group", "kind"])
        errors = GaugeMetricFamily("trailgate_group_checkpoint_errors",
                                   "1 when the group's checkpoint cannot be read",
                                   labels=["group", "kind"])
        for g in groups:
            key = [g["name"], g["kind"]]
            for s in _STATUSES:
                status.add_metric([*key, s], 1 if g["status"] == s else 0)
            running.add_metric(key, 1 if g["status"] == "RUNNING" else 0)
            if g["lag_seconds"] is not None:
                lag.add_metric(key, g["lag_seconds"])
            if g["checkpoint_age_seconds"] is not None:
                age.add_metric(key, g["checkpoint_age_seconds"])
            for table, counts in g["stats"].items():
                for op in _OPS:
                    records.add_metric([*key, table, op.rstrip("s")], counts.get(op, 0))
            read = g["read_position"] or {}
            if "seqno" in read:
                seqno.add_metric([*key, g["source_path"] or "", "read"], read["seqno"])
                rba.add_metric([*key, g["source_path"] or "", "read"], read.get("rba", 0))
            if g["write_position"]:
                trail = g["write_trail"] or (g["trails"][0]["path"] if g["trails"] else "")
                seqno.add_metric([*key, trail, "write"], g["write_position"]["seqno"])
                rba.add_metric([*key, trail, "write"], g["write_position"]["rba"])
            restarts.add_metric(key, g["restarts"])
            abends.add_metric(key, g["abends"])
            errors.add_metric(key, 1 if g["checkpoint_error"] else 0)
        yield from (status, running, lag, age, records, seqno, rba, restarts, abends, errors)
        yield from self._trails(snap)
        yield from self._heartbeat(snap)

    def _trails(self, snap: dict[str, Any]) -> Iterator[Metric]:
        size = GaugeMetricFamily("trailgate_trail_bytes", "Bytes of a trail's files on disk",
                                 labels=["trail"])
        files = GaugeMetricFamily("trailgate_trail_files", "Files of a trail on disk",
                                  labels=["trail"])
        for label, path in snap["trails"].items():
            n, b = _trail_files(path)
            size.add_metric([label], b)
            files.add_metric([label], n)
        purged = CounterMetricFamily("trailgate_trail_purged_files",
                                     "Trail files PURGEOLDEXTRACTS deleted", labels=[])
        purged.add_metric([], snap["purged"])
        yield from (size, files, purged)

    def _heartbeat(self, snap: dict[str, Any]) -> Iterator[Metric]:
        hop = GaugeMetricFamily("trailgate_heartbeat_lag_seconds",
                                "Heartbeat lag of the last heartbeat, per path and hop "
                                "(GG_LAG): total, extract, routing, replicat",
                                labels=["path", "hop"])
        age = GaugeMetricFamily("trailgate_heartbeat_age_seconds",
                                "Seconds since the last heartbeat left the source, per path",
                                labels=["path"])
        for row in snap["heartbeat"]:
            path = str(row.get("incoming_path"))
            for name, column in (("total", "incoming_lag"),
                                 ("extract", "incoming_extract_lag"),
                                 ("routing", "incoming_routing_lag"),
                                 ("replicat", "incoming_replicat_lag")):
                if row.get(column) is not None:
                    hop.add_metric([path, name], float(row[column]))
            if row.get("incoming_heartbeat_age") is not None:
                age.add_metric([path], float(row["incoming_heartbeat_age"]))
        yield from (hop, age)


def render_metrics(snapshot: Callable[[], dict[str, Any]]) -> bytes:
    """The text exposition of the Manager's metrics, from ``snapshot()``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ManagerCollector(snapshot))
    return generate_latest(registry)
