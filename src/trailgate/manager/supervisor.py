"""AUTOSTART and AUTORESTART: the Manager starts groups and restarts those that die.

Each tick looks at every group's process state.  A group that is newly ABENDED is
restarted after WAITMINUTES if its AUTORESTART allows another retry within RESETMINUTES —
unless the group recorded an abend a restart cannot cure (a data or configuration error,
:mod:`trailgate.process.abends`): restarting that only abends again, so it is reported
once and left for a person.  A group a person stopped (STOPPED) is never restarted, as
GoldenGate's Manager does not restart one whose last status was STOPPED.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from trailgate.errors import TrailgateError
from trailgate.home import GroupInfo, Home
from trailgate.manager.params import ManagerParams
from trailgate.process import lifecycle
from trailgate.process.abends import read_abend
from trailgate.process.lifecycle import Status

__all__ = ["GroupWatch", "Supervisor"]

EVENT_ABENDED = "OGG-00979"
EVENT_RESTARTING = "OGG-00967"
EVENT_NOT_RESTARTED = "OGG-00968"
EVENT_RETRIES_EXCEEDED = "OGG-00966"
EVENT_AUTOSTART = "OGG-00963"

Log = Callable[[str, str, str], None]


@dataclass(slots=True)
class GroupWatch:
    """What the Manager remembers of one group between ticks."""

    status: Status | None = None
    restarts: list[float] = field(default_factory=list)  # when, within the window
    due: float | None = None  # when the scheduled restart is due
    given_up: bool = False
    restarts_total: int = 0
    abends_total: int = 0
    last_abend: str | None = None


class Supervisor:
    """Starts (AUTOSTART) and restarts (AUTORESTART) the groups of a home."""

    def __init__(self, home: Home, params: ManagerParams, log: Log, *,
                 clock: Callable[[], float] = time.monotonic, start_wait: float = 0.5,
                 command: lifecycle.CommandFactory | None = None):
        self.home = home
        self.command = command
        self.params = params
        self.log = log
        self.clock = clock
        self.start_wait = start_wait
        self.watch: dict[str, GroupWatch] = {}

    def _start(self, group: GroupInfo) -> None:
        if self.command is None:
            lifecycle.start_group(self.home, group.kind, group.name, wait=self.start_wait)
        else:
            lifecycle.start_group(self.home, group.kind, group.name, wait=self.start_wait,
                                  command=self.command)

    def autostart(self) -> None:
        """Start every AUTOSTART group that is not running (once, as the Manager starts)."""
        for group in self.home.groups():
            if not self.params.autostarts(group.kind, group.name):
                continue
            state = lifecycle.process_state(self.home, group.name)
            if state.status in (Status.RUNNING, Status.STARTING):
                continue
            self.log("INFO", EVENT_AUTOSTART, f"Command received from Manager (AUTOSTART "
                     f"{group.kind} {group.name}).")
            try:
                self._start(group)
            except TrailgateError as exc:
                self.log("WARNING", EVENT_AUTOSTART, f"AUTOSTART {group.kind} {group.name} "
                         f"failed: {exc}")

    def tick(self) -> None:
        """Look at every group once: note abends, restart what is due."""
        now = self.clock()
        names = set()
        for group in self.home.groups():
            names.add(group.name)
            state = lifecycle.process_state(self.home, group.name)
            watch = self.watch.setdefault(group.name, GroupWatch())
            previous, watch.status = watch.status, state.status
            if state.status is not Status.ABENDED:
                watch.due = None
                if state.status is Status.RUNNING:
                    watch.given_up = False
                continue
            if previous is not Status.ABENDED:
                self._abended(group, state.pid, watch, now)
            if watch.due is not None and now >= watch.due:
                self._restart(group, watch, now)
        for gone in set(self.watch) - names:
            del self.watch[gone]

    def _abended(self, group: GroupInfo, pid: int | None, watch: GroupWatch,
                 now: float) -> None:
        watch.abends_total += 1
        abend = read_abend(self.home, group.name)
        if abend is not None and pid is not None and abend.pid != pid:
            abend = None  # another run's record: this one died without one (kill -9)
        watch.last_abend = abend.message if abend is not None else (
            "the process ended without a clean stop (killed, or it crashed)")
        self.log("WARNING", EVENT_ABENDED, f"{group.kind} {group.name} abended.")
        rule = self.params.restart_rule(group.kind, group.name)
        if rule is None or watch.given_up:
            return
        if abend is not None and not abend.retryable:
            watch.given_up = True
            self.log("WARNING", EVENT_NOT_RESTARTED,
                     f"{group.kind} {group.name} abended for an error a restart does not "
                     f"cure: {abend.message} Not restarted by AUTORESTART: fix the cause, "
                     f"then START {group.kind} {group.name}.")
            return
        self._schedule(group, watch, now)

    def _schedule(self, group: GroupInfo, watch: GroupWatch, now: float) -> None:
        rule = self.params.restart_rule(group.kind, group.name)
        assert rule is not None
        watch.restarts = [t for t in watch.restarts if now - t < rule.reset_seconds]
        if len(watch.restarts) >= rule.retries:
            watch.given_up = True
            self.log("WARNING", EVENT_RETRIES_EXCEEDED,
                     f"{group.kind} {group.name} abended {len(watch.restarts) + 1} times "
                     f"within RESETMINUTES {rule.reset_seconds / 60:g}: the maximum of "
                     f"RETRIES {rule.retries} restarts is reached; not restarted. VIEW "
                     f"REPORT {group.name} shows why it abends.")
            return
        watch.due = now + rule.wait_seconds

    def _restart(self, group: GroupInfo, watch: GroupWatch, now: float) -> None:
        rule = self.params.restart_rule(group.kind, group.name)
        assert rule is not None
        watch.due = None
        watch.restarts.append(now)
        watch.restarts_total += 1
        self.log("INFO", EVENT_RESTARTING, f"Manager restarting {group.kind} {group.name} "
                 f"(retry {len(watch.restarts)} of {rule.retries}).")
        try:
            self._start(group)
            watch.status = Status.STARTING
        except TrailgateError as exc:
            watch.last_abend = str(exc)
            self.log("WARNING", EVENT_ABENDED, f"{group.kind} {group.name} did not restart: "
                     f"{exc}")
            self._schedule(group, watch, self.clock())
