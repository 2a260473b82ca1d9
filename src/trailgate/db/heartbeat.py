"""Heartbeat tables as GoldenGate names them (GG_HEARTBEAT_SEED, GG_HEARTBEAT_HISTORY,
GG_HEARTBEAT, GG_LAG, GG_LAG_HISTORY), fitted to PostgreSQL, and the Extract's writer.

With no scheduler jobs, each Extract inserts its heartbeat row every FREQUENCY seconds;
it travels like data, each hop stamping its time, and the Replicat applies it by an
implicit MAP into the target's history, whose defaults record it and when.  The views
give lag per path and hop.  Settings: the tables' comment, as JSON.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "DEFAULT_FREQUENCY",
    "HISTORY",
    "SEED",
    "HeartbeatSettings",
    "HeartbeatWriter",
    "add_heartbeat_table",
    "alter_heartbeat_table",
    "delete_heartbeat_table",
    "heartbeat_objects",
    "info_heartbeat_table",
    "lag_rows",
    "purge_history",
    "settings",
]

SEED = "gg_heartbeat_seed"
HISTORY = "gg_heartbeat_history"
HEARTBEAT_VIEW = "gg_heartbeat"
LAG_VIEW = "gg_lag"
LAG_HISTORY_VIEW = "gg_lag_history"
DEFAULT_FREQUENCY = 60  # seconds, GoldenGate's default
DEFAULT_RETENTION = 30  # days of history
DEFAULT_PURGE_FREQUENCY = 1  # days between purges of the history
#: Seed rows older than this are deleted by the writer (its deletes are not replicated).
SEED_KEEP_SECONDS = 3600

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    """ADD/ALTER HEARTBEATTABLE's options, from the table comment."""

    frequency: int = DEFAULT_FREQUENCY
    retention_days: int = DEFAULT_RETENTION
    purge_frequency_days: int = DEFAULT_PURGE_FREQUENCY
    created: str = ""

    def to_json(self) -> str:
        return json.dumps({"frequency": self.frequency, "retention_time": self.retention_days,
                           "purge_frequency": self.purge_frequency_days,
                           "created": self.created})

    @classmethod
    def from_json(cls, text: str | None) -> HeartbeatSettings:
        try:
            data = json.loads(text or "{}")
            return cls(int(data.get("frequency", DEFAULT_FREQUENCY)),
                       int(data.get("retention_time", DEFAULT_RETENTION)),
                       int(data.get("purge_frequency", DEFAULT_PURGE_FREQUENCY)),
                       str(data.get("created", "")))
        except (ValueError, TypeError, AttributeError):
            return cls()


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _path_sql() -> str:
    return ("incoming_extract || coalesce(' ==> ' || incoming_routing_path, '') || ' ==> ' "
            "|| coalesce(nullif(incoming_replicat, ''), '?')")


def _lags_sql(received: str) -> str:
    return (f"extract(epoch FROM {received} - heartbeat_timestamp)::float8 AS incoming_lag, "
            "extract(epoch FROM incoming_extract_ts - heartbeat_timestamp)::float8 "
            "AS incoming_extract_lag, "
            "extract(epoch FROM incoming_routing_ts - incoming_extract_ts)::float8 "
            "AS incoming_routing_lag, "
            f"extract(epoch FROM {received} - coalesce(incoming_routing_ts, "
            "incoming_extract_ts))::float8 AS incoming_replicat_lag")


def _ddl(schema: str, target_only: bool) -> list[str]:
    s = _q(schema)
    out = [f"CREATE SCHEMA IF NOT EXISTS {s}"]
    if not target_only:
        out.append(
            f"CREATE TABLE {s}.{SEED} (remote_database text NOT NULL, incoming_extract text "
            "NOT NULL, heartbeat_timestamp timestamptz NOT NULL, incoming_extract_ts "
            "timestamptz, incoming_routing_path text, incoming_routing_ts timestamptz, "
            "PRIMARY KEY (incoming_extract, heartbeat_timestamp))")
    out += [
        f"CREATE TABLE {s}.{HISTORY} (local_database text NOT NULL DEFAULT "
        "current_database(), remote_database text, incoming_extract text, "
        "heartbeat_timestamp timestamptz, incoming_extract_ts timestamptz, "
        "incoming_routing_path text, incoming_routing_ts timestamptz, incoming_replicat text "
        "DEFAULT split_part(current_setting('application_name'), ' ', 3), "
        "incoming_replicat_ts timestamptz DEFAULT clock_timestamp())",
        f"CREATE INDEX ON {s}.{HISTORY} (incoming_replicat_ts)",
        f"CREATE VIEW {s}.{HEARTBEAT_VIEW} AS SELECT DISTINCT ON (remote_database, "
        "incoming_extract, coalesce(incoming_routing_path, ''), incoming_replicat) "
        "local_database, remote_database, incoming_extract, incoming_routing_path, "
        "incoming_replicat, heartbeat_timestamp AS incoming_heartbeat_ts, "
        "incoming_extract_ts, incoming_routing_ts, incoming_replicat_ts, "
        f"incoming_replicat_ts AS last_update_ts FROM {s}.{HISTORY} ORDER BY "
        "remote_database, incoming_extract, coalesce(incoming_routing_path, ''), "
        "incoming_replicat, heartbeat_timestamp DESC",
        f"CREATE VIEW {s}.{LAG_HISTORY_VIEW} AS SELECT local_database, incoming_replicat_ts "
        f"AS heartbeat_received_ts, remote_database, {_path_sql()} AS incoming_path, "
        f"heartbeat_timestamp AS incoming_heartbeat_ts, {_lags_sql('incoming_replicat_ts')} "
        f"FROM {s}.{HISTORY}",
        f"CREATE VIEW {s}.{LAG_VIEW} AS SELECT local_database, clock_timestamp() AS "
        f"current_local_ts, remote_database, {_path_sql()} AS incoming_path, "
        "extract(epoch FROM clock_timestamp() - incoming_heartbeat_ts)::float8 AS "
        "incoming_heartbeat_age, incoming_heartbeat_ts AS heartbeat_timestamp, "
        "incoming_replicat_ts AS heartbeat_received_ts, "
        + _lags_sql("incoming_replicat_ts").replace("heartbeat_timestamp",
                                                     "incoming_heartbeat_ts")
        + f" FROM {s}.{HEARTBEAT_VIEW}",
    ]
    return out


def heartbeat_objects(conn: Any, schema: str) -> dict[str, bool]:
    """Which of the heartbeat tables exist in ``schema`` of the connected database."""
    names = (SEED, HISTORY)
    rows = conn.execute(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = "
        "c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s)",
        (schema, list(names))).fetchall()
    found = {r[0] for r in rows}
    return {name: name in found for name in names}


def settings(conn: Any, schema: str) -> HeartbeatSettings | None:
    """The settings ADD HEARTBEATTABLE stored, or None when there is no heartbeat table."""
    objects = heartbeat_objects(conn, schema)
    table = SEED if objects[SEED] else HISTORY if objects[HISTORY] else None
    if table is None:
        return None
    row = conn.execute("SELECT obj_description(%s::regclass, 'pg_class')",
                       (f"{_q(schema)}.{_q(table)}",)).fetchone()
    return HeartbeatSettings.from_json(row[0] if row else None)


def _comment(conn: Any, schema: str, values: HeartbeatSettings) -> None:
    objects = heartbeat_objects(conn, schema)
    for table in (SEED, HISTORY):
        if objects[table]:
            conn.execute(f"COMMENT ON TABLE {_q(schema)}.{_q(table)} IS "
                         + "'" + values.to_json().replace("'", "''") + "'")


def add_heartbeat_table(conn: Any, schema: str, *, frequency: int | None = None,
                        retention_days: int | None = None,
                        purge_frequency_days: int | None = None,
                        target_only: bool = False) -> list[str]:
    """Create the heartbeat tables and views (GGSCI ``ADD HEARTBEATTABLE``)."""
    if any(heartbeat_objects(conn, schema).values()):
        return [f"ERROR: Heartbeat table {schema}.{SEED if not target_only else HISTORY} "
                "already exists; INFO HEARTBEATTABLE shows it, DELETE HEARTBEATTABLE "
                "removes it."]
    values = HeartbeatSettings(frequency or DEFAULT_FREQUENCY,
                               retention_days or DEFAULT_RETENTION,
                               purge_frequency_days or DEFAULT_PURGE_FREQUENCY,
                               datetime.now().isoformat(timespec="seconds"))
    with conn.transaction():
        for statement in _ddl(schema, target_only):
            conn.execute(statement)
        _comment(conn, schema, values)
    made = ([] if target_only else [f"{schema}.{SEED}"]) + [f"{schema}.{HISTORY}"]
    return [f"Successfully created heartbeat table {name}." for name in made] + [
        f"Successfully created views {schema}.{HEARTBEAT_VIEW}, {schema}.{LAG_VIEW} and "
        f"{schema}.{LAG_HISTORY_VIEW}.",
        f"Heartbeat frequency {values.frequency} seconds, retention {values.retention_days} "
        f"days, purge every {values.purge_frequency_days} days."]


def alter_heartbeat_table(conn: Any, schema: str, *, frequency: int | None = None,
                          retention_days: int | None = None,
                          purge_frequency_days: int | None = None) -> list[str]:
    """Change the settings (``ALTER HEARTBEATTABLE``); running Extracts pick up a new
    frequency at their next heartbeat."""
    current = settings(conn, schema)
    if current is None:
        return [f"ERROR: No heartbeat table in schema {schema}; ADD HEARTBEATTABLE creates "
                "it."]
    values = HeartbeatSettings(frequency or current.frequency,
                               retention_days or current.retention_days,
                               purge_frequency_days or current.purge_frequency_days,
                               current.created)
    _comment(conn, schema, values)
    return [f"Successfully altered heartbeat table {schema}: frequency {values.frequency} "
            f"seconds, retention {values.retention_days} days, purge every "
            f"{values.purge_frequency_days} days."]


def delete_heartbeat_table(conn: Any, schema: str) -> list[str]:
    """Drop the views and tables (``DELETE HEARTBEATTABLE``)."""
    objects = heartbeat_objects(conn, schema)
    if not any(objects.values()):
        return [f"ERROR: No heartbeat table in schema {schema}."]
    s = _q(schema)
    with conn.transaction():
        for view in (LAG_VIEW, LAG_HISTORY_VIEW, HEARTBEAT_VIEW):
            conn.execute(f"DROP VIEW IF EXISTS {s}.{view}")
        for table in (SEED, HISTORY):
            conn.execute(f"DROP TABLE IF EXISTS {s}.{table}")
    return [f"Successfully deleted heartbeat table {schema}.{name}."
            for name, present in objects.items() if present]


def info_heartbeat_table(conn: Any, schema: str) -> list[str]:
    """GGSCI ``INFO HEARTBEATTABLE``: the tables, the settings and the lag per path."""
    values = settings(conn, schema)
    if values is None:
        return [f"No heartbeat table in schema {schema} of database {conn.info.dbname}; ADD "
                "HEARTBEATTABLE creates it."]
    objects = heartbeat_objects(conn, schema)
    out = [f"HEARTBEAT table {schema}.{name} exists." for name, present in objects.items()
           if present]
    out += [f"HEARTBEAT table frequency interval: {values.frequency} seconds.",
            f"HEARTBEAT table purge frequency interval: {values.purge_frequency_days} days.",
            f"HEARTBEAT table retention time: {values.retention_days} days.",
            f"Created: {values.created or '(unknown)'}."]
    if objects[HISTORY]:
        rows = lag_rows(conn, schema)
        if not rows:
            out.append("No heartbeat received yet.")
        for row in rows:
            out.append(f"Path {row['incoming_path']}: lag {_secs(row['incoming_lag'])}, "
                       f"last heartbeat {_secs(row['incoming_heartbeat_age'])} ago.")
    return out


def _secs(value: Any) -> str:
    return "unknown" if value is None else f"{float(value):.3f} s"


def lag_rows(conn: Any, schema: str) -> list[dict[str, Any]]:
    """The rows of GG_LAG: one per path, with lag end to end and per hop (seconds)."""
    cur = conn.execute(f"SELECT * FROM {_q(schema)}.{LAG_VIEW} ORDER BY incoming_path")
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def purge_history(conn: Any, schema: str, retention_days: int) -> int:
    """Delete history older than the retention; returns the rows deleted."""
    cur = conn.execute(f"DELETE FROM {_q(schema)}.{HISTORY} WHERE incoming_replicat_ts < "
                       "now() - make_interval(days => %s)", (retention_days,))
    return int(cur.rowcount or 0)


class HeartbeatWriter(threading.Thread):
    """Inserts the Extract's heartbeat row every FREQUENCY seconds and deletes its own
    rows older than an hour.  Each row reads FREQUENCY from the table's comment, so ALTER
    HEARTBEATTABLE takes effect at the next heartbeat: the wait under way (the old
    frequency) ends first, and the wait after that row is the new one.  Errors are
    logged and retried at the next heartbeat: the Extract, not its heartbeat, decides
    whether the source is usable."""

    def __init__(self, conninfo: str, schema: str, extract: str, *,
                 on_error: Any = None):
        super().__init__(name=f"heartbeat {extract}", daemon=True)
        self.conninfo = conninfo
        self.schema = schema
        self.extract = extract
        self.on_error = on_error
        self.stop_event = threading.Event()
        self.beats = 0

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)

    def run(self) -> None:
        from trailgate.db.connect import connect

        seed = f"{_q(self.schema)}.{_q(SEED)}"
        insert = (f"INSERT INTO {seed} (remote_database, incoming_extract, "
                  "heartbeat_timestamp) VALUES (current_database(), %s, clock_timestamp()) "
                  "RETURNING obj_description(%s::regclass, 'pg_class')")
        conn = None
        reported = False
        while not self.stop_event.is_set():
            wait = float(DEFAULT_FREQUENCY)
            try:
                if conn is None or conn.closed:
                    conn = connect(self.conninfo,
                                   application_name=f"trailgate heartbeat {self.extract}")
                row = conn.execute(insert, (self.extract, seed)).fetchone()
                wait = float(HeartbeatSettings.from_json(row[0] if row else None).frequency)
                self.beats += 1
                if self.beats % 100 == 1:
                    conn.execute(f"DELETE FROM {seed} WHERE incoming_extract = %s AND "
                                 "heartbeat_timestamp < now() - make_interval(secs => %s)",
                                 (self.extract, SEED_KEEP_SECONDS))
                reported = False
            except Exception as exc:  # logged, retried at the next heartbeat
                if not reported and self.on_error is not None:
                    self.on_error(f"heartbeat row not written: {exc}".strip())
                reported = True
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                conn = None
                wait = min(wait, 10.0)
            self.stop_event.wait(max(0.2, wait))
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
