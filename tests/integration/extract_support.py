"""Shared by the Extract tests: a home with a registered group, the trail read back, an
independent reference of the committed history, and a replay of the trail into table state.

Two independent oracles say what "the committed history" is:

* a second replication slot created before the workload, read once at the end with
  ``PgCapture`` itself: every committed transaction, in commit order, each once;
* the tables' final contents in the database, compared with the trail replayed from empty.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from trailgate.capture.postgres.capture import PgCapture
from trailgate.capture.postgres.slots import add_extract
from trailgate.capture.postgres.types import SESSION_SETTINGS, classify, trail_from_pg_text
from trailgate.db.connect import connect
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import Change, OpType, TableDef
from trailgate.trail import TrailReader

ROOT = Path(__file__).resolve().parents[2]
Txn = tuple[int, str, list[tuple]]


def make_home(path: Path, conninfo: str, group: str, tables: str, *,
              megabytes: int = 1, extra: str = "") -> Home:
    """A home with EXTRACT ``group`` (its slot created now: BEGIN NOW), trail ./dirdat/aa."""
    home = Home(path).create()
    home.add_group(GroupInfo(group.upper(), "EXTRACT", "TRANLOG"))
    home.add_trail(group, TrailInfo("./dirdat/aa", megabytes=megabytes))
    with connect(conninfo) as conn:
        add_extract(conn, group)
    (home.dirprm / f"{group.lower()}.prm").write_text(
        f"EXTRACT {group}\nSOURCEDB {conninfo}\nEXTTRAIL ./dirdat/aa\n{extra}{tables}\n")
    return home


def reference_slot(conninfo: str, name: str) -> str:
    """A second slot on the same publication, created before the workload."""
    with connect(conninfo) as conn:
        return add_extract(conn, name).slot


def change_tuple(change: Change, tokens: bool = False) -> tuple:
    base = (change.op, change.table, change.before, change.after)
    return (*base, change.tokens) if tokens else base


def trail_transactions(trail: Path, tokens: bool = False) -> list[Txn]:
    """Complete transactions of the trail (incomplete ones, cut by a crash, are dropped)."""
    return [(t.transaction.csn, t.transaction.xid,
             [change_tuple(c, tokens) for c in t.transaction.changes])
            for t in TrailReader(trail).transactions()]


def reference_transactions(conninfo: str, slot: str, spill: Path,
                           keep: Any = lambda change: True) -> list[Txn]:
    """What the reference slot holds, read by PgCapture (every committed transaction)."""
    out = []
    with PgCapture(conninfo, slot, "trailgate", spill_dir=spill) as cap:
        for t in cap.read():
            changes = [change_tuple(c) for c in t.transaction.changes if keep(c)]
            if changes:
                out.append((t.csn, t.transaction.xid, changes))
    return out


def _key(table: TableDef, row: dict[int, bytes | None]) -> tuple:
    indexes = table.key_indexes or [c.index for c in table.columns]
    return tuple(row.get(i) for i in indexes)


def replay(trail: Path, tables: Iterable[str] | None = None) -> dict[str, Counter]:
    """The trail applied to empty tables: rows as sorted (index, value) tuples."""
    state: dict[str, list[dict[int, bytes | None]]] = {}
    reader = TrailReader(trail)
    for t in reader.transactions():
        for change, record in zip(t.transaction.changes, t.records, strict=True):
            table = record.table_def
            assert table is not None, f"no definition for {change.table}"
            rows = state.setdefault(change.table, [])
            if change.op is OpType.TRUNCATE:
                rows.clear()
            elif change.op is OpType.INSERT:
                rows.append(dict(change.after or {}))
            else:
                image = change.before if change.op in (OpType.DELETE, OpType.PK_UPDATE) \
                    else change.after
                assert image is not None
                wanted = _key(table, image)
                found = next(i for i, r in enumerate(rows) if _key(table, r) == wanted)
                if change.op is OpType.DELETE:
                    rows.pop(found)
                else:
                    rows[found].update(change.after or {})
    return {name: Counter(tuple(sorted(r.items())) for r in rows)
            for name, rows in state.items() if tables is None or name in tables}


def database_state(conninfo: str, table: str) -> Counter:
    """The table's rows now, in trail form, comparable with :func:`replay`."""
    schema, name = table.split(".")
    with connect(conninfo, settings=SESSION_SETTINGS) as conn:
        cols = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
            "attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (f'"{schema}"."{name}"',)).fetchall()
        query = sql.SQL("SELECT {} FROM {}.{}").format(
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c, _ in cols),
            sql.Identifier(schema), sql.Identifier(name))
        rows = conn.execute(query).fetchall()
    types = [classify(t) for _, t in cols]
    return Counter(tuple((i, None if v is None else trail_from_pg_text(v, types[i]))
                         for i, v in enumerate(row)) for row in rows)


def slot_confirmed(conn: psycopg.Connection[Any], slot: str) -> int:
    row = conn.execute("SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM "
                       "pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return int(row[0]) if row else 0


def extract_command(home: Home, group: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "run", "extract",
            group, *args]


def start_extract(home: Home, group: str, *args: str, log: Path) -> subprocess.Popen:
    """``trailgate run extract`` as a separate process (its own process group, so a test can
    signal it as a terminal would)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with open(log, "ab") as out:
        return subprocess.Popen(extract_command(home, group, *args), stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
