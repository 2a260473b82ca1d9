"""Shared by the Replicat and Pump tests: a home with a registered Replicat, a trail written
with TrailWriter (an increments workload), and the target read back."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from trailgate.apply.checkpoint_table import add_checkpoint_table
from trailgate.capture.postgres.types import classify
from trailgate.home import GroupInfo, Home
from trailgate.model import (
    Change,
    Column,
    OpType,
    TableDef,
    Transaction,
    julian_from_unix_micros,
)
from trailgate.trail import TrailWriter
from trailgate.trail.release import resolve_format

ROOT = Path(__file__).resolve().parents[2]
CKPT = "gg.ckpt"
BASE_TIME = 1_700_000_000_000_000


def tdef(name: str, cols: list[tuple[str, str]], key: list[str]) -> TableDef:
    schema, _, table = name.rpartition(".")
    columns = []
    for i, (cname, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef(schema, table, columns, key)


ACCOUNTS = tdef("public.accounts", [("id", "integer"), ("counter", "integer"),
                                    ("name", "text")], ["id"])
EVENTS = tdef("public.events", [("id", "integer"), ("kind", "text")], ["id"])
TABLES = {t.qualified_name: t for t in (ACCOUNTS, EVENTS)}
TARGET_DDL = """
CREATE TABLE public.accounts (id integer PRIMARY KEY, counter integer NOT NULL, name text);
CREATE TABLE public.events (id integer PRIMARY KEY, kind text);
"""


@dataclass
class Increments:
    """Transactions whose updates each add 1 to an account's counter: the final counter of
    an account is the number of updates it got, so an update applied twice shows."""

    seed: int = 1
    accounts: int = 50
    csn: int = 1000
    tick: int = 0
    counters: dict[int, int] = field(default_factory=dict)
    events: set[int] = field(default_factory=set)
    next_event: int = 1

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _time(self) -> int:
        self.tick += 1
        return julian_from_unix_micros(BASE_TIME + self.tick * 1000)

    def transactions(self, n: int) -> Iterator[Transaction]:
        for _ in range(n):
            self.csn += 1
            changes = []
            for _ in range(self.rng.choice([1, 2, 3, 5])):
                changes.append(self._change())
            yield Transaction(f"0.{self.csn}.1", self.csn, changes,
                              commit_time=changes[-1].io_time)

    def _change(self) -> Change:
        rng = self.rng
        t = self._time()
        acc = rng.randrange(1, self.accounts + 1)
        if acc not in self.counters:
            self.counters[acc] = 0
            return Change(OpType.INSERT, "public.accounts", io_time=t, after={
                0: str(acc).encode(), 1: b"0", 2: f"acc {acc}".encode()})
        if rng.random() < 0.15:
            if self.events and rng.random() < 0.3:
                ev = rng.choice(sorted(self.events))
                self.events.discard(ev)
                return Change(OpType.DELETE, "public.events", io_time=t,
                              before={0: str(ev).encode()})
            ev = self.next_event
            self.next_event += 1
            self.events.add(ev)
            return Change(OpType.INSERT, "public.events", io_time=t,
                          after={0: str(ev).encode(), 1: b"k"})
        self.counters[acc] += 1
        return Change(OpType.FIELD_COMP, "public.accounts", io_time=t, after={
            0: str(acc).encode(), 1: str(self.counters[acc]).encode()})

    def expected_accounts(self) -> dict[int, int]:
        return dict(self.counters)


def write_trail(trail: Path, txns: Iterator[Transaction] | list[Transaction], *,
                megabytes: int = 1, producer: str = "TESTS",
                release: str | None = None, byte_order: str | None = None,
                encrypt: str | None = None, key_name: str | None = None) -> TrailWriter:
    """Write transactions to a new file of ``trail`` (fsync off: tests), closed after;
    ``release``/``byte_order``: FORMAT RELEASE and TRAILBYTEORDER (default the 11.2 format);
    ``encrypt``/``key_name``: ENCRYPTTRAIL (the key in the ENCKEYS of the trail's home)."""
    fmt = resolve_format(release, byte_order)
    writer = TrailWriter(trail, megabytes=megabytes, fsync=False, producer=producer,
                         format=fmt, encrypt=encrypt, key_name=key_name)
    for txn in txns:
        writer.write_transaction(txn, TABLES)
    writer.close()
    return writer


def replicat_home(path: Path, prm: str, *, name: str = "REP1", trail: str = "./dirdat/rt",
                  checkpoint_table: str | None = CKPT) -> Home:
    """A home with REPLICAT ``name`` reading ``trail`` and its parameter file."""
    home = Home(path).create()
    home.add_group(GroupInfo(name, "REPLICAT", "EXTTRAIL", trail,
                             checkpoint_table=checkpoint_table, begin={"seqno": 0, "rba": 0}))
    home.param_file(name).write_text(prm)
    return home


def pg_target(conninfo: str, ddl: str = TARGET_DDL) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(ddl)
        add_checkpoint_table(conn, CKPT)


def accounts(conninfo: str) -> dict[int, int]:
    with psycopg.connect(conninfo) as conn:
        return dict(conn.execute("SELECT id, counter FROM public.accounts").fetchall())


def events(conninfo: str) -> set[int]:
    with psycopg.connect(conninfo) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM public.events").fetchall()}


def query(conninfo: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute(sql).fetchall()


def run_command(home: Home, kind: str, group: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "run", kind,
            group, *args]


def run_group(home: Home, kind: str, group: str, *args: str,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``trailgate run replicat|extract`` as a separate process, to its end."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(run_command(home, kind, group, *args), capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=home.path)


def start_group(home: Home, kind: str, group: str, *args: str, log: Path
                ) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with open(log, "ab") as out:
        return subprocess.Popen(run_command(home, kind, group, *args), stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                cwd=home.path)


def forget_last_commit(home: Home, group: str = "REP1") -> None:
    """Remove Spark's record that the last batch committed, as a kill -9 between the apply
    and Spark's commit leaves it: the next run replays that batch."""
    commits = home.spark_checkpoint_dir(group) / "spark" / "commits"
    last = max((p for p in commits.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()
    (commits / f".{last.name}.crc").unlink(missing_ok=True)
