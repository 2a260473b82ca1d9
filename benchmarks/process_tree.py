"""Pause and resume a process with all its descendants (a group's JVM and Spark's Python
workers run under it), for the benchmarks' backlog rounds: the changes wait in the source
while the reader is stopped, then it is timed reading them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def descendants(root: int) -> list[int]:
    """``root`` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def signal_tree(root: int, sig: int) -> None:
    """Send ``sig`` to ``root`` and its descendants (those gone meanwhile are skipped)."""
    for pid in descendants(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
