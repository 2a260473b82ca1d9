"""The running Manager's state as its HTTP service reads it: groups, trails, lag, events.

One object the main loop updates (supervisor, lag monitor, purge counts) and the web
threads read; each read builds fresh data from the home's files, so the API answers what
GGSCI would answer at the same moment.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from trailgate.home import Home
from trailgate.manager.lag import LagMonitor
from trailgate.manager.params import ManagerParams
from trailgate.manager.status import group_status
from trailgate.manager.supervisor import Supervisor

__all__ = ["ManagerState", "read_events"]

_EVENT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s+(\w+)\s+(OGG-\d+)\s+(?:trailgate )?(.*)$")


def read_events(path: Path, lines: int) -> list[dict[str, str]]:
    """The last ``lines`` events of ``ggserr.log``, oldest first."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 512 * 1024))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    out: deque[dict[str, str]] = deque(maxlen=max(1, lines))
    for line in tail:
        m = _EVENT.match(line)
        if m:
            out.append({"time": m[1], "level": m[2], "code": m[3], "message": m[4]})
    return list(out)


@dataclass(slots=True)
class ManagerState:
    """What the HTTP service shows and acts on."""

    home: Home
    params: ManagerParams
    supervisor: Supervisor
    lag: LagMonitor
    token: str
    port: int
    started: str = field(default_factory=lambda: datetime.now().isoformat(timespec="seconds"))
    purged: int = 0
    start_wait: float = 10.0
    #: the collector the Manager runs: {"port", "tls"} (GET /collector), or None
    collector: dict[str, Any] | None = None

    def statuses(self) -> list[dict[str, Any]]:
        return [group_status(self.home, info, self.supervisor.watch.get(info.name))
                for info in self.home.groups()]

    def trails(self) -> dict[str, Path]:
        """Every trail a group writes or reads, by the label it was registered with."""
        out: dict[str, Path] = {}
        for info in self.home.groups():
            labels = [t.path for t in info.trails]
            if info.source in ("EXTTRAIL", "EXTTRAILSOURCE") and info.source_path:
                labels.append(info.source_path)
            for label in labels:
                out.setdefault(label, self.home.resolve(label))
        return out

    def snapshot(self) -> dict[str, Any]:
        """What ``/metrics`` reports."""
        return {"groups": self.statuses(), "trails": self.trails(), "purged": self.purged,
                "heartbeat": list(self.lag.heartbeat_rows)}

    def manager_info(self) -> dict[str, Any]:
        p = self.params
        return {"pid": os.getpid(), "port": self.port, "address": p.bind_address,
                "home": str(self.home.path), "started": self.started,
                "parameter_file": p.path,
                "autostart": [f"{g.kind} {g.pattern}" for g in p.autostart],
                "autorestart": [{"groups": f"{r.groups.kind} {r.groups.pattern}",
                                 "retries": r.retries, "wait_seconds": r.wait_seconds,
                                 "reset_seconds": r.reset_seconds} for r in p.autorestart],
                "purgeoldextracts": [r.describe() + f" ({r.trail})" for r in p.purge],
                "purged_files": self.purged}
