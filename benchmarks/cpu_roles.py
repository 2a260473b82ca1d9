"""CPU seconds spent by each part of a replication setup, from ``/proc``: where the cores went
while a workload was replicated (on a shared 2-core machine, CPU one method spends is CPU
the source workload does not get).

``CpuMeter(roots)`` takes named root processes (a postmaster, a group's process); every
live descendant counts under its root's name and a role read from its executable and
command line (``driver``, ``JVM`` — its JIT compiler and GC threads apart —, ``Python
worker``, ``walsender``, ``backend``, ``background``).  ``sample()`` before and after a
phase; ``used(before, after)`` is the difference.  Processes that ended in between count
only up to the last sample that saw them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CpuMeter", "format_table", "role_of"]

_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    task = Path(f"/proc/{pid}/task")
    try:
        for t in task.iterdir():
            with open(t / "children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def _cpu(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def role_of(pid: int, root: int) -> str:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace")
    except OSError:
        return "other"
    if exe.startswith("python"):
        return "driver" if pid == root else "Python worker"
    if exe == "java":
        return "JVM"
    if exe == "postgres":
        if pid == root:
            return "postmaster"
        if "walsender" in cmd:
            return "walsender"
        if "logical replication" in cmd:
            return "apply worker"
        if any(w in cmd for w in ("checkpointer", "background writer", "walwriter",
                                  "autovacuum", "launcher", "logger", "io worker")):
            return "background"
        return "backend"
    return "other"


def _jvm_threads(pid: int) -> list[tuple[int, str, float]]:
    """(thread id, role, CPU seconds) of a JVM's threads: JIT compiler, GC, or the rest."""
    out = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if "CompilerThre" in name:
            role = "JVM JIT compiler"
        elif name.startswith(("GC Thread", "G1 ", "VM Thread")):
            role = "JVM GC"
        else:
            role = "JVM"
        out.append((int(task.name), role, (int(fields[11]) + int(fields[12])) / _TICK))
    return out


class CpuMeter:
    """CPU seconds by (root name, role); see the module docstring."""

    def __init__(self, roots: dict[str, int]):
        self.roots = roots
        self._last: dict[tuple[int, int], tuple[str, float]] = {}

    def sample(self) -> dict[tuple[int, int], tuple[str, float]]:
        seen: dict[tuple[int, int], tuple[str, float]] = {}
        for name, root in self.roots.items():
            stack = [root]
            while stack:
                pid = stack.pop()
                cpu = _cpu(pid)
                if cpu is None:
                    continue
                role = role_of(pid, root)
                if role == "JVM":  # its compiler and collector threads apart
                    for tid, thread_role, thread_cpu in _jvm_threads(pid):
                        seen[(pid, tid)] = (f"{name} {thread_role}", thread_cpu)
                else:
                    seen[(pid, 0)] = (f"{name} {role}", cpu)
                stack.extend(_children(pid))
        self._last.update(seen)
        return dict(self._last)

    @staticmethod
    def used(before: dict[tuple[int, int], tuple[str, float]],
             after: dict[tuple[int, int], tuple[str, float]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, (label, cpu) in after.items():
            start = before[pid][1] if pid in before else 0.0
            out[label] = out.get(label, 0.0) + max(0.0, cpu - start)
        return out


def format_table(title: str, columns: dict[str, dict[str, float]], seconds: dict[str, float]
                 ) -> list[str]:
    """Rows: every (part, role) seen; columns: one per method, CPU seconds; a total row and
    the wall-clock seconds of each."""
    labels = sorted({label for used in columns.values() for label in used})
    width = max([len(label) for label in labels] + [24])
    lines = [title, f"{'part':<{width}} " + " ".join(f"{m:>14}" for m in columns)]
    for label in labels:
        cells = [f"{columns[m].get(label, 0.0):>13.2f}s" for m in columns]
        if any(columns[m].get(label, 0.0) >= 0.005 for m in columns):
            lines.append(f"{label:<{width}} " + " ".join(cells))
    lines.append(f"{'total CPU':<{width}} "
                 + " ".join(f"{sum(columns[m].values()):>13.2f}s" for m in columns))
    lines.append(f"{'wall clock':<{width}} "
                 + " ".join(f"{seconds.get(m, float('nan')):>13.2f}s" for m in columns))
    return lines
