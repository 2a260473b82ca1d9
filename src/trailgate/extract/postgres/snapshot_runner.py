"""The Extract's incremental snapshots: a thread that reads a table in chunks while the
Extract streams the log, each chunk handed to the trail through the WAL itself.

``SEND EXTRACT … SNAPSHOT TABLE t`` queues a request; the runner writes a *start* message,
publishes ``t``, then per chunk a *fence* and one REPEATABLE READ transaction that reads
rows by key and writes them as a *chunk* message, and ends with *done*.  Progress lives in
the Extract's checkpoint (docs/instantiation.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from trailgate.capture.postgres.catalog import describe_table
from trailgate.capture.postgres.pgoutput import quote_ident
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.changes.change_rows import tabledef_to_json
from trailgate.db.connect import connect
from trailgate.errors import SourceError, TrailgateError
from trailgate.extract.postgres.config import ExtractConfig
from trailgate.extract.postgres.snapshot_tracker import PREFIX, SnapshotTracker, TableSnapshot

__all__ = ["CHUNK_ROWS", "SnapshotRunner", "add_request", "request_dir"]

log = logging.getLogger("trailgate.extract")
CHUNK_ROWS = 2000
_POLL = 0.2


def request_dir(dirchk: Path, group: str) -> Path:
    return dirchk / f"{group.upper()}.snapshots"


def add_request(dirchk: Path, group: str, table: str, resync: bool = False) -> Path:
    """Queue a snapshot of ``table`` for EXTRACT ``group`` (GGSCI ``SEND … SNAPSHOT``)."""
    directory = request_dir(dirchk, group)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{time.time_ns()}-{uuid.uuid4().hex[:6]}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"table": table, "resync": resync}))
    tmp.replace(path)
    return path


class SnapshotRunner:
    """One Extract run's snapshots (module docstring).  ``report`` receives a line per
    event (started, finished, refused)."""

    def __init__(self, cfg: ExtractConfig, tracker: SnapshotTracker, *,
                 chunk_rows: int = CHUNK_ROWS,
                 report: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.tracker = tracker
        self.chunk_rows = chunk_rows
        self.report = report or (lambda line: None)
        self.dir = request_dir(Path(cfg.home) / "dirchk", cfg.group)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="snapshot runner", daemon=True)
        self._conn: psycopg.Connection[Any] | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()

    # -- the loop ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.wait(_POLL):
                if not self.tracker.attached:
                    continue  # the driver's stream is not up yet: nobody would see chunks
                self._take_requests()
                tables = list(self.tracker.tables)
                if tables:
                    self._step(tables[0])
        except Exception as exc:  # reported; the Extract itself keeps capturing
            self.error = exc
            text = str(exc) if isinstance(exc, TrailgateError) else \
                f"{type(exc).__name__}: {exc}"
            log.error("snapshot runner stopped: %s", text)
            self.report(f"Snapshot runner stopped: {text}; the Extract goes on capturing, "
                        f"and a restart resumes the snapshot")

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.cfg.conninfo, settings=SESSION_SETTINGS,
                                 application_name=f"trailgate {self.cfg.slot} snapshot")
        return self._conn

    # -- requests ------------------------------------------------------------------------
    def _take_requests(self) -> None:
        try:
            entries = sorted(p for p in self.dir.iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return
        for path in entries:
            try:
                data = json.loads(path.read_text())
                self._begin(str(data["table"]), bool(data.get("resync")))
            except (TrailgateError, ValueError, KeyError) as exc:
                self.report(f"Snapshot request {path.name} refused: {exc}")
                log.warning("snapshot request refused: %s", exc)
                path.rename(path.with_suffix(".refused"))
                continue
            path.unlink()

    def _begin(self, pattern: str, resync: bool) -> None:
        from trailgate.capture.postgres.trandata import resolve_tables

        conn = self._connection()
        found = resolve_tables(conn, pattern)
        if not found:
            raise SourceError(f"SNAPSHOT TABLE {pattern}: no such table in "
                              f"{conn.info.dbname}")
        for oid, schema, name in found:
            table = describe_table(conn, oid, schema, name)
            qualified = table.qualified_name
            if self.tracker.tracks(qualified):
                continue
            if not table.key:
                raise SourceError(
                    f"SNAPSHOT TABLE {qualified}: the table has no primary key and no unique "
                    f"key of NOT NULL columns, so its rows cannot be told apart between a "
                    f"chunk and the log; add a key, or load it with an initial load "
                    f"(ADD EXTRACT …, SOURCEISTABLE)")
            if self.cfg.rules.rule(qualified) is None:
                raise SourceError(f"SNAPSHOT TABLE {qualified}: EXTRACT {self.cfg.group} does "
                                  f"not capture it: add a TABLE statement and restart it")
            published = conn.execute(
                "SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s "
                "AND tablename = %s", (self.cfg.publication, schema, name)).fetchone()
            self._emit({"op": "start", "table": qualified,
                        "def": tabledef_to_json(table.table_def()), "key": table.key,
                        "resync": resync})
            self._wait(partial(self.tracker.tracks, qualified), f"the start of {qualified}")
            if published is None:  # captured from now on, every record of it marked
                from trailgate.capture.postgres.trandata import add_trandata

                add_trandata(conn, '"' + schema.replace('"', '""') + '"."'
                             + name.replace('"', '""') + '"', publication=self.cfg.publication)
            elif not resync:
                self.report(f"WARNING: {qualified} was captured before its snapshot began: "
                            f"its changes from then to now were written as they were; if the "
                            f"target lacks rows they touched, its Replicat meets missing "
                            f"rows (SEND … SNAPSHOT TABLE {qualified}, RESYNC empties the "
                            f"target table first)")
            self.report(f"Snapshot of {qualified} started (about "
                        f"{table.estimate if table.estimate is not None else '?'} rows; "
                        f"chunks of {self.chunk_rows})")

    # -- chunks --------------------------------------------------------------------------
    def _emit(self, payload: dict[str, Any]) -> None:
        conn = self._connection()
        body = json.dumps({**payload, "run": self.tracker.run})
        conn.execute("SELECT pg_logical_emit_message(true, %s, %s)", (PREFIX, body))

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        warned = time.monotonic() + 120
        while not self.tracker.wait(done, 1.0):
            if self._stop.is_set():
                raise _Stopped()
            if time.monotonic() > warned:
                log.warning("snapshot: still waiting for the Extract to read %s", what)
                warned = time.monotonic() + 120

    def _fence(self, conn: psycopg.Connection[Any]) -> int:
        """The WAL position after which every earlier commit is visible to new snapshots."""
        lsn = int(conn.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8"
                               ).fetchone()[0])  # type: ignore[index]
        snap = conn.execute("SELECT pg_current_snapshot()").fetchone()[0]  # type: ignore[index]
        while not self._stop.is_set():
            row = conn.execute("SELECT coalesce(bool_and(pg_visible_in_snapshot(x, "
                               "pg_current_snapshot())), true) FROM "
                               "pg_snapshot_xip(%s::pg_snapshot) x", (str(snap),)).fetchone()
            if row and row[0]:
                return lsn
            time.sleep(0.01)
        raise _Stopped()

    def _step(self, table: str) -> None:
        snap = self.tracker.snapshot(table)
        if snap is None:
            return
        try:
            if snap.exhausted and not snap.requeue:
                self._emit({"op": "done", "table": table})
                self._wait(lambda: not self.tracker.tracks(table) or bool(
                    (self.tracker.snapshot(table) or snap).requeue), f"the end of {table}")
                if self.tracker.tracks(table):
                    return  # keys were queued meanwhile: they are read first
                self.report(f"Snapshot of {table} done: {snap.rows} rows in {snap.chunks} "
                            f"chunk(s), {snap.reread} re-read because the log had moved on")
                return
            self._chunk(snap)
        except _Stopped:
            return

    def _chunk(self, snap: TableSnapshot) -> None:
        conn = self._connection()
        fence = self._fence(conn)
        cols = [c for c in snap.definition.columns]
        types = {c.name: c.source_type for c in cols}
        key = [quote_ident(k) for k in snap.key]
        key_sql = ", ".join(key)
        # outputs named c0, c1, …: ORDER BY the key then sorts the key, not its text
        select = ", ".join(f"{quote_ident(c.name)}::text AS c{i}" for i, c in enumerate(cols))
        name = ".".join(quote_ident(p) for p in snap.table.split(".", 1))
        n = snap.chunks + 1
        payload: dict[str, Any] = {"op": "chunk", "table": snap.table, "n": n,
                                   "fence": fence}
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        try:
            payload["snapshot"] = str(conn.execute("SELECT pg_current_snapshot()")
                                      .fetchone()[0])  # type: ignore[index]
            casts = [f"%s::{types[k]}" for k in snap.key]
            if snap.requeue and (snap.exhausted or len(snap.requeue) * 2 >= self.chunk_rows
                                 or n % 4 == 0):  # the ranges first, re-reads in between
                keys = snap.requeue[: self.chunk_rows]
                values = ", ".join(f"({', '.join(casts)})" for _ in keys)
                rows = conn.execute(f"SELECT {select} FROM {name} WHERE ({key_sql}) IN "
                                    f"({values})", [v for k in keys for v in k]).fetchall()
                payload.update(kind="requeue", keys=keys)
            else:
                maximum = snap.max
                if maximum is None:
                    texts = ", ".join(f"{k}::text AS m{i}" for i, k in enumerate(key))
                    row = conn.execute(f"SELECT {texts} FROM {name} ORDER BY {key_sql} DESC "
                                       f"LIMIT 1").fetchone()
                    maximum = list(row) if row else []
                    payload["max"] = maximum
                where, params = [], []
                if snap.last:
                    where.append(f"({key_sql}) > ({', '.join(casts)})")
                    params += snap.last
                if maximum:
                    where.append(f"({key_sql}) <= ({', '.join(casts)})")
                    params += maximum
                sql = (f"SELECT {select} FROM {name}"
                       + (f" WHERE {' AND '.join(where)}" if where else "")
                       + f" ORDER BY {key_sql} LIMIT {self.chunk_rows}")
                rows = conn.execute(sql, params).fetchall() if maximum else []
                index = [c.name for c in cols]
                payload.update(kind="range", exhausted=len(rows) < self.chunk_rows,
                               last=[rows[-1][index.index(k)] for k in snap.key]
                               if rows else snap.last)
            payload["rows"] = [list(r) for r in rows]
            self._emit(payload)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise
        self._wait(lambda: (self.tracker.snapshot(snap.table) or snap).chunks >= n,
                   f"chunk {n} of {snap.table}")


class _Stopped(Exception):
    """The Extract is stopping: leave the snapshot where it is."""
