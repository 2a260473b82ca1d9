"""Per-thread scheduling of a replication setup, from ``/proc``: for each thread, the CPU it
ran, the time it spent runnable without a core (the run-queue wait) and how often it gave
the core up — voluntarily (it slept: each is a wakeup later) or not (it was preempted).

On a shared 2-core machine a process that wakes often costs the others more than its CPU
seconds say: every wakeup may take a core from a thread that was about to run, or make a
woken thread wait for one.  ``ThreadMeter(roots)`` takes named root processes (as
``cpu_roles.CpuMeter``) and, besides, threads of this process by name (the load
generator's client); ``sample()`` before and after a phase; ``used(before, after)`` gives
one row per thread (threads named alike in one process are summed), the system's context
switches and the disk's writes and flushes beside them.  Threads of a driver, JVM or
worker that end between the samples (a flush thread each) show as one "ended threads" row:
the process's CPU less its live threads'.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from cpu_roles import role_of

__all__ = ["ThreadMeter", "ThreadRow", "format_threads"]


@dataclass(slots=True)
class ThreadRow:
    """One thread's (or like-named threads') share of a phase: seconds and counts."""

    label: str
    run: float = 0.0
    wait: float = 0.0
    voluntary: int = 0
    involuntary: int = 0
    threads: int = 0
    system: float = 0.0  # of ``run``, in the kernel (clock ticks: coarse)

    def add(self, other: ThreadRow) -> None:
        self.run += other.run
        self.wait += other.wait
        self.voluntary += other.voluntary
        self.involuntary += other.involuntary
        self.threads += other.threads
        self.system += other.system


_Sample = dict[tuple[int, int], tuple[str, int, int, int, int, int]]
_TICK = os.sysconf("SC_CLK_TCK")


def _task(pid: int, tid: int) -> tuple[str, int, int, int, int, int] | None:
    """(name, run ns, wait ns, voluntary, involuntary switches, system ticks) of one
    thread."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/schedstat") as f:
            run, wait, _ = f.read().split()
        with open(f"{base}/status") as f:
            status = f.read()
        with open(f"{base}/comm") as f:
            name = f.read().strip()
        with open(f"{base}/stat") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    stime = int(stat[stat.rindex(")") + 2:].split()[12])
    vol = invol = 0
    for line in status.splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            vol = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches:"):
            invol = int(line.split()[1])
    return name, int(run), int(wait), vol, invol, stime


def _process_ns(pid: int) -> int | None:
    """CPU of process ``pid`` and all its threads, ended ones too (ns, clock-tick coarse)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // _TICK


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def _system() -> tuple[int, int, int, int]:
    """(context switches, disk writes completed, disk flushes completed, sectors written)
    of the machine: ``/proc/stat`` and the whole disks of ``/proc/diskstats``."""
    ctxt = 0
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("ctxt "):
            ctxt = int(line.split()[1])
    writes = flushes = sectors = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        name = f[2]
        if (name.startswith(("loop", "ram", "zram", "dm-"))
                or not Path("/sys/block", name).exists()):
            continue  # partitions and virtual devices: their whole disk counts them
        writes += int(f[7])
        sectors += int(f[9])
        if len(f) > 19:
            flushes += int(f[18])
    return ctxt, writes, flushes, sectors


class ThreadMeter:
    """Per-thread scheduling by (root name, role, thread name); see the module docstring.
    ``own``: labels of this process's threads by native thread id (the client)."""

    def __init__(self, roots: dict[str, int], own: dict[int, str] | None = None):
        self.roots = roots
        self.own = dict(own or {})

    def add_own(self, label: str) -> None:
        """Count the calling thread of this process under ``label``."""
        self.own[threading.get_native_id()] = label

    def sample(self) -> tuple[_Sample, tuple[int, int, int, int]]:
        seen: _Sample = {}
        me = os.getpid()
        if self.own:  # this process: the named threads, and the others together
            for tid in (int(t) for t in os.listdir(f"/proc/{me}/task")):
                got = _task(me, tid)
                if got is not None:
                    label = self.own.get(tid, "this process's other threads")
                    seen[(me, tid)] = (label, *got[1:])
        for name, root in self.roots.items():
            stack = [root]
            while stack:
                pid = stack.pop()
                role = role_of(pid, root)
                try:
                    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
                except OSError:
                    continue
                for tid in tids:
                    got = _task(pid, tid)
                    if got is None:
                        continue
                    thread = got[0]
                    if role in ("JVM", "Python worker", "other"):
                        label = f"{name} {role}"
                    elif role == "driver" and tid == pid:
                        label = f"{name} driver: main thread"
                    elif role == "driver":
                        label = f"{name} driver: {thread}"
                    elif role == "backend":
                        label = f"{name} backend {pid}"
                    else:
                        label = f"{name} {role}"
                    seen[(pid, tid)] = (label, *got[1:])
                total = _process_ns(pid) if role in ("driver", "JVM", "Python worker") else None
                if total is not None:
                    part = "driver:" if role == "driver" else f"{role}:"
                    seen[(pid, -1)] = (f"{name} {part} ended threads", total, 0, 0, 0, 0)
                stack.extend(_children(pid))
        return seen, _system()

    @staticmethod
    def used(before: tuple[_Sample, tuple[int, int, int, int]],
             after: tuple[_Sample, tuple[int, int, int, int]]
             ) -> tuple[dict[str, ThreadRow], tuple[int, int, int, int]]:
        """Rows by label (threads in both samples or born between them), and the system's
        (context switches, disk writes, disk flushes, sectors written) in between."""
        rows: dict[str, ThreadRow] = {}
        b, sb = before
        a, sa = after
        live: dict[int, int] = {}  # per process, its live threads' run in between (ns)
        for key, (label, run, wait, vol, invol, stime) in a.items():
            if key[1] < 0:
                continue
            _, run0, wait0, vol0, invol0, stime0 = b.get(key, (label, 0, 0, 0, 0, 0))
            live[key[0]] = live.get(key[0], 0) + run - run0
            row = ThreadRow(label, (run - run0) / 1e9, (wait - wait0) / 1e9,
                            vol - vol0, invol - invol0, 1, (stime - stime0) / _TICK)
            rows.setdefault(label, ThreadRow(label)).add(row)
        for (pid, tid), (label, total, *_) in a.items():
            if tid >= 0 or (pid, tid) not in b:
                continue
            ended = (total - b[(pid, tid)][1] - live.get(pid, 0)) / 1e9
            if ended > 1 / _TICK:  # below a clock tick it is the counters' rounding
                rows.setdefault(label, ThreadRow(label)).add(ThreadRow(label, ended))
        system = (sa[0] - sb[0], sa[1] - sb[1], sa[2] - sb[2], sa[3] - sb[3])
        return rows, system


def _backends(rows: dict[str, ThreadRow]) -> dict[str, ThreadRow]:
    """Backends of one server under one label each: the busiest as "backend (busiest)",
    the rest summed."""
    out: dict[str, ThreadRow] = {}
    by_server: dict[str, list[ThreadRow]] = {}
    for label, row in rows.items():
        parts = label.split()
        if len(parts) == 3 and parts[1] == "backend" and parts[2].isdigit():
            by_server.setdefault(parts[0], []).append(row)
        else:
            out[label] = row
    for server, group in by_server.items():
        group.sort(key=lambda r: r.run, reverse=True)
        first = ThreadRow(f"{server} backend (busiest)")
        first.add(group[0])
        out[first.label] = first
        if len(group) > 1:
            rest = ThreadRow(f"{server} backends, the others")
            for r in group[1:]:
                rest.add(r)
            out[rest.label] = rest
    return out


def format_threads(title: str, columns: dict[str, tuple[dict[str, ThreadRow],
                                                         tuple[int, int, int, int]]],
                   seconds: dict[str, float], min_run: float = 0.005) -> list[str]:
    """A table: one row per thread label seen in any column (those that ran at least
    ``min_run`` s or switched 20 times a second somewhere), per column its run and wait
    seconds and its voluntary and involuntary switches a second; the system's rows last."""
    merged = {m: _backends(rows) for m, (rows, _) in columns.items()}
    labels = sorted({label for rows in merged.values() for label in rows})

    def shown(label: str) -> bool:
        for m, rows in merged.items():
            r = rows.get(label)
            wall = max(seconds.get(m, 1.0), 1e-9)
            if r is not None and (r.run >= min_run or r.voluntary / wall >= 20):
                return True
        return False

    width = max([len(label) for label in labels] + [30])
    head = " ".join(f"{m[:34]:>34}" for m in columns)
    sub = " ".join(f"{'run':>6} {'(sys)':>6} {'wait':>6} {'vol/s':>6} {'inv/s':>6}"
                   for _ in columns)
    lines = [title, f"{'thread':<{width}} {head}", f"{'':<{width}} {sub}"]
    for label in labels:
        if not shown(label):
            continue
        cells = []
        for m in columns:
            r = merged[m].get(label)
            wall = max(seconds.get(m, 1.0), 1e-9)
            if r is None:
                cells.append(f"{'':>34}")
            else:
                cells.append(f"{r.run:>6.2f} {r.system:>6.2f} {r.wait:>6.2f} "
                             f"{r.voluntary / wall:>6.0f} {r.involuntary / wall:>6.0f}")
        lines.append(f"{label:<{width}} " + " ".join(cells))
    totals = []
    for m in columns:
        rows = merged[m]
        wall = max(seconds.get(m, 1.0), 1e-9)
        run = sum(r.run for r in rows.values())
        wait = sum(r.wait for r in rows.values())
        vol = sum(r.voluntary for r in rows.values())
        invol = sum(r.involuntary for r in rows.values())
        system = sum(r.system for r in rows.values())
        totals.append(f"{run:>6.2f} {system:>6.2f} {wait:>6.2f} {vol / wall:>6.0f} "
                      f"{invol / wall:>6.0f}")
    lines.append(f"{'all threads above and below':<{width}} " + " ".join(totals))
    sys_cells = []
    for m, (_, system) in columns.items():
        wall = max(seconds.get(m, 1.0), 1e-9)
        sys_cells.append(f"{system[0] / wall:>34,.0f}")
    lines.append(f"{'machine: context switches a second':<{width}} " + " ".join(sys_cells))
    disk = []
    for m, (_, (_ctxt, writes, flushes, sectors)) in columns.items():
        wall = max(seconds.get(m, 1.0), 1e-9)
        disk.append(f"{writes / wall:>9.0f} {flushes / wall:>7.1f} "
                    f"{sectors * 512 / wall / 1e6:>6.2f}MB/s".rjust(34))
    lines.append(f"{'machine disk: writes/s, flushes/s':<{width}} " + " ".join(disk))
    lines.append(f"({wall_note(seconds)}; run, of it in the kernel (sys, by clock ticks) "
                 "and run-queue wait in CPU seconds; vol/s and inv/s: voluntary and "
                 "involuntary context switches a second of the wall clock)")
    return lines


def wall_note(seconds: dict[str, float]) -> str:
    return "wall clock " + ", ".join(f"{m} {s:.2f} s" for m, s in seconds.items())
