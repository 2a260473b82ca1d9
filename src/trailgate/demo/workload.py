"""Workloads run against the source: a few threads, each with its own connection, committing
generated transactions, so capture sees concurrent, interleaved transactions.

A generator is a function ``(thread, rng) -> Txn``: the statements of one transaction and
what to remember once it committed.  Each thread owns its own rows (its keys), so threads
never wait on each other and a generator's memory of "what exists" is exact.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from trailgate.db.connect import connect
from trailgate.demo import seed003
from trailgate.errors import SourceError

__all__ = ["Progress", "Statement", "StudentWorkload", "Txn", "Workload", "run_statements"]

Statement = tuple[str, Sequence[Any] | None]


@dataclass(slots=True)
class Txn:
    """Statements of one transaction, and ``on_commit`` to run once it committed;
    ``rollback``: roll it back instead (a workload's DDL that must never appear)."""

    statements: list[Statement]
    on_commit: Callable[[], None] | None = None
    rollback: bool = False


@dataclass(slots=True)
class Progress:
    """Transactions committed and rows changed so far (all threads)."""

    transactions: int = 0
    rows: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, transactions: int, rows: int) -> None:
        with self._lock:
            self.transactions += transactions
            self.rows += rows


def run_statements(conn: psycopg.Connection[Any], statements: Sequence[Statement]) -> int:
    """Run statements in the connection's current transaction; rows they changed."""
    rows = 0
    with conn.cursor() as cur:
        for text, params in statements:
            cur.execute(text, params)
            rows += max(cur.rowcount, 0)
    return rows


class Workload:
    """``transactions`` generated transactions over ``threads`` connections, at ``rate``
    transactions per second in total (0: as fast as the source takes them).

    ``start()`` runs it in the background, ``wait()`` re-raises a thread's error as a
    :class:`SourceError`; ``stop()`` ends it early (Ctrl-C).
    """

    def __init__(self, conninfo: str, generator: Callable[[int, random.Random], Txn], *,
                 transactions: int, threads: int = 2, rate: float = 0.0, seed: int = 3):
        self.conninfo = conninfo
        self.generator = generator
        self.total = transactions
        self.threads = max(1, threads)
        self.rate = rate
        self.seed = seed
        self.progress = Progress()
        self._stop = threading.Event()
        self._errors: list[str] = []
        self._workers: list[threading.Thread] = []

    def start(self) -> None:
        share = [self.total // self.threads + (1 if i < self.total % self.threads else 0)
                 for i in range(self.threads)]
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i, share[i]), daemon=True,
                                 name=f"workload-{i}")
            t.start()
            self._workers.append(t)

    @property
    def done(self) -> bool:
        return not any(t.is_alive() for t in self._workers)

    def stop(self) -> None:
        self._stop.set()
        for t in self._workers:
            t.join(timeout=30)

    def wait(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._workers:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if self._errors:
            raise SourceError(f"the workload failed: {self._errors[0]}")

    def check(self) -> None:
        """Raise the first thread error now (while it runs)."""
        if self._errors:
            self._stop.set()
            raise SourceError(f"the workload failed: {self._errors[0]}")

    def _run(self, thread: int, count: int) -> None:
        rng = random.Random(self.seed * 1000 + thread)
        interval = self.threads / self.rate if self.rate > 0 else 0.0
        due = time.monotonic()
        try:
            with connect(self.conninfo, autocommit=False,
                         application_name=f"trailgate demo workload {thread}") as conn:
                for _ in range(count):
                    if self._stop.is_set():
                        return
                    if interval:
                        due += interval
                        pause = due - time.monotonic()
                        if pause > 0 and self._stop.wait(pause):
                            return
                    txn = self.generator(thread, rng)
                    rows = run_statements(conn, txn.statements)
                    if txn.rollback:
                        conn.rollback()
                        continue
                    conn.commit()
                    if txn.on_commit is not None:
                        txn.on_commit()
                    self.progress.add(1, rows)
        except Exception as exc:  # reported by wait()/check() in the main thread
            self._errors.append(f"thread {thread}: {exc}".strip())
            self._stop.set()


_FIRST = ["Amelia", "Oliver", "Isla", "George", "Ava", "Noah", "Mia", "Leo", "Grace", "Arthur",
          "Freya", "Oscar", "Lily", "Harry", "Ella", "Jack", "Ruby", "Theo", "Emily", "Alfie"]
_SURNAMES = ["Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies",
             "Patel", "Wright", "Walker", "Evans", "Roberts", "Green", "Hall", "Wood"]
_SUBJECTS = ["Mathematics", "History", "Law", "Medicine", "Geography", "Music", "Philosophy",
             "Engineering"]


class StudentWorkload:
    """Generated changes to seed 003's tables: students enrol (insert), change fees and
    courses (update, sometimes to NULL), get new student numbers (key change), leave (delete);
    new courses open and empty ones close; set-based fee rises change many rows at once.

    Thread ``i`` owns the student keys ``≡ i`` modulo the thread count, from 2000 up, and the
    courses it opened; names carry the key, so the seed's unique name stays unique.
    """

    def __init__(self, threads: int):
        self.threads = threads
        self._next = [2000 + i for i in range(threads)]
        self._students: list[dict[int, tuple[str, str, int]]] = [{} for _ in range(threads)]
        self._courses: list[list[tuple[str, str, int]]] = [[] for _ in range(threads)]
        self._lock = threading.Lock()

    def _key(self, thread: int) -> int:
        key = self._next[thread]
        self._next[thread] += self.threads
        return key

    def __call__(self, thread: int, rng: random.Random) -> Txn:
        students, courses = self._students[thread], self._courses[thread]
        statements: list[Statement] = []
        pending = dict(students)  # the rows as they will be once this transaction commits
        open_courses = list(courses)
        s = seed003.SCHEMA
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.05:
                course = (f"{rng.choice(['Leeds', 'York', 'Bristol', 'Durham'])} {thread}",
                          rng.choice(_SUBJECTS), rng.choice([2013, 2014, 2015]))
                if course in open_courses:
                    continue
                statements.append((f"INSERT INTO {s}.course VALUES (%s, %s, %s)", course))
                open_courses.append(course)
            elif roll < 0.08 and open_courses:
                course = rng.choice(open_courses)
                if any(v == course for v in pending.values()):
                    continue
                statements.append((f"DELETE FROM {s}.course WHERE university = %s AND "
                                   "subject = %s AND entry_year = %s", course))
                open_courses.remove(course)
            elif roll < 0.45 or not pending:
                key = self._key(thread)
                course = rng.choice(seed003.COURSES + open_courses)
                gender = rng.choice(["F", "M", None])
                fee = rng.choice([6000, 7500, 8000, 9000, 9250, None])
                statements.append((f"INSERT INTO {s}.student VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                                   (key, rng.choice(_FIRST),
                                    f"{rng.choice(_SURNAMES)}-{key}", gender, *course, fee)))
                pending[key] = course
            elif roll < 0.65:
                key = rng.choice(list(pending))
                fee = rng.choice([6000, 6500, 7500, 9000, 9250, None])
                statements.append((f"UPDATE {s}.student SET tuition_fee = %s "
                                   "WHERE student_key = %s", (fee, key)))
            elif roll < 0.73:
                key = rng.choice(list(pending))
                course = rng.choice(seed003.COURSES + open_courses)
                statements.append((f"UPDATE {s}.student SET university = %s, subject = %s, "
                                   "entry_year = %s WHERE student_key = %s", (*course, key)))
                pending[key] = course
            elif roll < 0.81:
                old, new = rng.choice(list(pending)), self._key(thread)
                statements.append((f"UPDATE {s}.student SET student_key = %s "
                                   "WHERE student_key = %s", (new, old)))
                pending[new] = pending.pop(old)
            elif roll < 0.95:
                key = rng.choice(list(pending))
                statements.append((f"DELETE FROM {s}.student WHERE student_key = %s", (key,)))
                del pending[key]
            else:
                uni = rng.choice(["Oxford", "Cambridge", "Manchester"])
                statements.append((f"UPDATE {s}.student SET tuition_fee = tuition_fee + 250 "
                                   "WHERE university = %s AND student_key %% %s = %s "
                                   "AND student_key >= 2000", (uni, self.threads, thread)))

        def commit() -> None:
            students.clear()
            students.update(pending)
            courses[:] = open_courses

        return Txn(statements, commit)
