"""Shared by the initial-load, handover and compare tests: a schema of varied tables, a
randomised workload that runs while a load reads, and a row-by-row comparison that knows
nothing of trailgate (every row's text form, sorted, on both sides).

Tables:

* ``app.orders``: bigint key, numeric, text, timestamptz, NULLs; inserts, updates, deletes
  and key updates (the key moves far away, across any key range a load made);
* ``app.items``: a text key (a table split by ctid, not by key);
* ``app.increments``: no key at all; insert-only rows made distinct by a sequence, so a
  change applied twice shows up as a duplicate row (the doubles check);
* ``app.events``: int key, jsonb and bytea, inserts and deletes.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg

SCHEMA_DDL = """
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE app.orders (id bigint PRIMARY KEY, customer integer NOT NULL,
    amount numeric(12,2), note text, updated timestamptz);
CREATE TABLE app.items (sku text PRIMARY KEY, qty integer, price real);
CREATE SEQUENCE app.inc_seq;
CREATE TABLE app.increments (k integer, delta integer,
    seq bigint NOT NULL DEFAULT nextval('app.inc_seq'));
CREATE TABLE app.events (id integer PRIMARY KEY, payload jsonb, blob bytea);
"""
TABLES = ("app.orders", "app.items", "app.increments", "app.events")


def seed(conninfo: str, orders: int = 6000, items: int = 4000, events: int = 800) -> None:
    """Create the schema and its first rows."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(SCHEMA_DDL)
        conn.execute("INSERT INTO app.orders SELECT g, g %% 97, (g %% 1000) / 7.0, "
                     "CASE WHEN g %% 5 = 0 THEN NULL WHEN g %% 7 = 0 THEN '' ELSE 'n' || g END, "
                     "timestamptz '2024-01-01 00:00:00+00' + g * interval '1.5 second' "
                     "FROM generate_series(1, %s) g", (orders,))
        conn.execute("INSERT INTO app.items SELECT 'sku-' || g, g %% 50, g / 3.0 "
                     "FROM generate_series(1, %s) g", (items,))
        conn.execute("INSERT INTO app.increments SELECT g % 10, 1 FROM generate_series(1, 500) g")
        conn.execute("INSERT INTO app.events SELECT g, jsonb_build_object('g', g), "
                     "decode(md5(g::text), 'hex') FROM generate_series(1, %s) g", (events,))
        conn.execute("ANALYZE")


@dataclass
class Workload:
    """Random transactions on the app tables from a thread, until :meth:`stop`."""

    conninfo: str
    seed: int = 1
    pause: float = 0.002
    tables: tuple[str, ...] = TABLES
    committed: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Workload:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        assert not self.errors, self.errors[:3]
        return self.committed

    def wait_for(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.committed < n and time.monotonic() < deadline:
            time.sleep(0.05)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        next_order = 10_000_000 + self.seed * 1_000_000
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self._stop.is_set():
                    with conn.transaction():
                        for _ in range(rng.randint(1, 4)):
                            next_order = self._one(conn, rng, next_order)
                    self.committed += 1
                    if self.pause:
                        time.sleep(self.pause * rng.random())
        except Exception as exc:  # reported by stop()
            self.errors.append(repr(exc))

    def _one(self, conn: psycopg.Connection[Any], rng: random.Random, nxt: int) -> int:
        table = rng.choice(self.tables)
        op = rng.random()
        if table == "app.orders":
            oid = rng.randint(1, 6000)
            if op < 0.3:
                nxt += 1
                conn.execute("INSERT INTO app.orders VALUES (%s, %s, %s, %s, now())",
                             (nxt, rng.randint(1, 90), rng.randint(0, 99999) / 100,
                              rng.choice([None, "", "x" * rng.randint(1, 40)])))
            elif op < 0.7:
                conn.execute("UPDATE app.orders SET amount = %s, note = %s, updated = now() "
                             "WHERE id = %s", (rng.randint(0, 99999) / 100,
                                               rng.choice([None, "", "u"]), oid))
            elif op < 0.85:
                conn.execute("DELETE FROM app.orders WHERE id = %s", (oid,))
            else:  # the key moves (from the first ranges to beyond the last, or back)
                nxt += 1
                conn.execute("UPDATE app.orders SET id = %s WHERE id = %s", (nxt, oid))
        elif table == "app.items":
            sku = f"sku-{rng.randint(1, 4500)}"
            if op < 0.5:
                conn.execute("INSERT INTO app.items VALUES (%s, %s, %s) ON CONFLICT (sku) DO "
                             "UPDATE SET qty = app.items.qty + 1", (sku, rng.randint(0, 9),
                                                                    rng.random()))
            elif op < 0.8:
                conn.execute("UPDATE app.items SET qty = qty + 1 WHERE sku = %s", (sku,))
            else:
                conn.execute("DELETE FROM app.items WHERE sku = %s", (sku,))
        elif table == "app.increments":
            conn.execute("INSERT INTO app.increments VALUES (%s, 1)", (rng.randint(0, 9),))
        else:
            eid = rng.randint(1, 1200)
            if op < 0.6:
                conn.execute("INSERT INTO app.events VALUES (%s, %s, %s) ON CONFLICT (id) "
                             "DO UPDATE SET payload = excluded.payload",
                             (eid, f'{{"r": {rng.random()}}}', rng.randbytes(8)))
            else:
                conn.execute("DELETE FROM app.events WHERE id = %s", (eid,))
        return nxt


def rows(conninfo: str, table: str, columns: str = "*") -> Counter[str]:
    """The table's rows as their text forms, with multiplicity."""
    with psycopg.connect(conninfo) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        got = conn.execute(f"SELECT t::text FROM (SELECT {columns} FROM {table}) t").fetchall()
    return Counter(r[0] for r in got)


def differences(source: str, target: str, tables: tuple[str, ...] = TABLES) -> dict[str, Any]:
    """Per table, rows only in the source and only in the target (empty when equal)."""
    out = {}
    for table in tables:
        a, b = rows(source, table), rows(target, table)
        if a != b:
            out[table] = {"missing": list((a - b).items())[:5],
                          "extra": list((b - a).items())[:5],
                          "counts": (sum(a.values()), sum(b.values()))}
    return out
