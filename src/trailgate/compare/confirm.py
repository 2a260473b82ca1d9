"""Confirm out-of-sync rows (Veridata's COOS step): wait for the Replicat, then look again.

A row that differs may be a change not applied yet.  The wait is by position, not a guessed
latency: the source's WAL position after the first pass, the Extract's checkpoint passing
it, then the Replicat reaching that CSN.  The rows are read again: equal (in flight),
different with the source unchanged (out of sync), or changed again (another round, up to
``ROUNDS``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from trailgate.compare.sides import open_side
from trailgate.compare.spec import CompareJob
from trailgate.compare.task import Difference, classify, differing_columns
from trailgate.db.connect import connect
from trailgate.home import Home

__all__ = ["ROUNDS", "Confirmation", "confirm", "wait_for_pipeline"]

ROUNDS = 3


@dataclass(slots=True)
class Confirmation:
    """What the confirmation found: the persistent differences, the rows still moving,
    and a note when the pipeline did not catch up in time (nothing could be confirmed)."""

    persistent: list[Difference]
    in_flight: list[Difference]
    resolved: int
    note: str | None = None


def _lsn(conninfo: str) -> int:
    with connect(conninfo) as conn:
        row = conn.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8").fetchone()
    return int(row[0]) if row else 0


def wait_for_pipeline(home: Home, job: CompareJob, timeout: float) -> str | None:
    """Wait until the Replicat has applied everything committed at the source now; None
    once it has, else why not (after ``timeout`` seconds)."""
    target = _lsn(job.source)
    deadline = time.monotonic() + timeout
    ck = None
    while time.monotonic() < deadline:
        ck = home.checkpoints.load(job.extract, "EXTRACT")
        if ck is not None and ck.read_lsn >= target:
            break
        time.sleep(0.2)
    else:
        return (f"EXTRACT {job.extract} did not read the source up to its current position "
                f"within {timeout:.0f} s (is it running?)")
    if ck is None or ck.last_csn is None:
        return None
    csn = int(ck.last_csn)
    while time.monotonic() < deadline:
        rk = home.checkpoints.load(job.replicat, "REPLICAT")
        if rk is not None and rk.last_csn is not None and int(rk.last_csn) >= csn:
            return None
        time.sleep(0.2)
    return (f"REPLICAT {job.replicat} did not apply up to CSN {csn} within {timeout:.0f} s "
            f"(is it running, or lagging?)")


def _recheck(job: CompareJob, diffs: list[Difference], schemas: dict[int, object] | None
             ) -> list[Difference]:
    """The differences among ``diffs``' keys now (values filled in)."""
    source = open_side("POSTGRES", job.source, "source", schemas)
    target = open_side(job.target_kind, job.target, "target")
    try:
        by_range: dict[tuple[int, int], list[Difference]] = defaultdict(list)
        for d in diffs:
            by_range[(d.table, d.range)].append(d)
        out = []
        for (t, r), group in by_range.items():
            table = job.tables[t]
            rng = table.ranges[r]
            keys = [d.key for d in group]
            src = source.values(table, rng, keys)
            tgt = target.values(table, rng, keys)
            if not table.key:  # whole rows: count them again on both sides
                wanted = set(keys)
                found = [d for d in classify(table, r, source.range_rows(table, rng),
                                             target.range_rows(table, rng))
                         if d.key in wanted]
            else:
                found = []
                for k in keys:
                    a, b = src.get(k), tgt.get(k)
                    if a is None and b is None:
                        continue
                    kind = "missing" if b is None else "extra" if a is None else (
                        "different" if a != b else None)
                    if kind is not None:
                        found.append(Difference(t, r, kind, k))
            for d in found:
                d.src, d.tgt = src.get(d.key), tgt.get(d.key)
                if d.kind == "different" and d.src is not None and d.tgt is not None:
                    d.columns = differing_columns(table, d.src, d.tgt)
            out += found
        return out
    finally:
        source.close()
        target.close()


def confirm(home: Home, job: CompareJob, diffs: list[Difference], *, timeout: float,
            schemas: dict[int, object] | None = None) -> Confirmation:
    """Confirm ``diffs`` (module docstring)."""
    pending = diffs
    resolved = 0
    for _ in range(ROUNDS):
        note = wait_for_pipeline(home, job, timeout)
        if note is not None:
            return Confirmation(pending, [], resolved, note)
        before = {(d.table, d.key): d.src for d in pending}
        now = _recheck(job, pending, schemas)
        resolved += len({(d.table, d.key) for d in pending} - {(d.table, d.key) for d in now})
        moved = [d for d in now if before.get((d.table, d.key)) != d.src]
        stable = [d for d in now if before.get((d.table, d.key)) == d.src]
        if not moved:
            return Confirmation(stable, [], resolved)
        pending = now
    return Confirmation(stable, moved, resolved)
