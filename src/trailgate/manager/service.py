"""``trailgate manager``: the Manager process in the foreground (``START MANAGER`` runs it
detached).

``mgr.prm`` is checked, the lock, pid file and report taken (one Manager per home) and the
port bound before anything touches a group, so bad input stops nothing.  Then AUTOSTART,
and each second: the supervisor's tick, lag samples, LAGREPORT, and PURGEOLDEXTRACTS every
CHECKMINUTES.  SIGTERM ends it; the groups keep running, as GoldenGate's do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

from trailgate.checkpoint import atomic_write_text
from trailgate.collector.server import Collector, CollectorSettings
from trailgate.collector.tls import TlsFiles
from trailgate.db.connect import CredentialStore
from trailgate.errors import ConfigError, TrailgateError
from trailgate.home import Home
from trailgate.manager.auth import ensure_token, token_file
from trailgate.manager.lag import LagMonitor
from trailgate.manager.params import ManagerParams, parse_manager_params
from trailgate.manager.purge import EVENT_NO_CHECKPOINTS, Log, matching_trails, purge_trail
from trailgate.manager.server import HttpService, bind
from trailgate.manager.state import ManagerState
from trailgate.manager.supervisor import Supervisor
from trailgate.process.runtime import GroupProcess

__all__ = ["MANAGER_NAME", "add_arguments", "info_file", "run", "run_manager"]

MANAGER_NAME = "MGR"
EVENT_MANAGER_STARTED = "OGG-00983"
EVENT_PARAMETER = "OGG-00959"
TICK = 1.0


def info_file(home: Home) -> Path:
    """``dirchk/MGR.mgr``: the running Manager's pid and port, written once it serves."""
    return home.dirchk / f"{MANAGER_NAME}.mgr"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", default=MANAGER_NAME, choices=[MANAGER_NAME],
                        help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help="serve on this port (default: PORT in "
                        "dirprm/mgr.prm, else 7809)")


def run(args: argparse.Namespace) -> int:
    return run_manager(Home.locate(getattr(args, "home", None)), port=args.port)


class _Purger:
    """PURGEOLDEXTRACTS every CHECKMINUTES; "no checkpoints" is said once per trail."""

    def __init__(self, home: Home, params: ManagerParams, state: ManagerState, log: Log):
        self.home, self.params, self.state, self.log = home, params, state, log
        self.quiet: set[str] = set()

    def run(self) -> None:
        for rule in self.params.purge:
            for trail in matching_trails(self.home, rule):
                outcome = purge_trail(self.home, trail, rule, self.log)
                self.state.purged += len(outcome.purged)
                if outcome.kept_because and str(trail) not in self.quiet:
                    self.quiet.add(str(trail))
                    self.log("WARNING", EVENT_NO_CHECKPOINTS,
                             f"Trail {str(trail)!r} not purged: {outcome.kept_because}.")
                elif not outcome.kept_because:
                    self.quiet.discard(str(trail))


def _start_collector(home: Home, params: ManagerParams, log: Log) -> Collector | None:
    """The collector mgr.prm's COLLECTOR asks for, serving in a thread of the Manager."""
    options = params.collector
    if options is None:
        return None
    settings = CollectorSettings.of(home.path, options.bind_address, options.port,
                                    TlsFiles(options.cert, options.key, options.ca),
                                    options.token_alias, options.allow,
                                    where=f"{params.path}: COLLECTOR")
    tls = settings.tls
    collector = Collector(settings, lambda level, message: log(
        level, "OGG-01229" if level == "INFO" else "OGG-01223", message)).start()
    log("INFO", "OGG-01229", f"Collector listening on {options.bind_address}:"
                             f"{collector.port}{' (TLS)' if tls else ''}.")
    return collector


def run_manager(home: Home, *, port: int | None = None) -> int:
    """Run the Manager of ``home`` until SIGTERM/SIGINT; 0 after a clean stop."""
    if not home.exists():
        raise ConfigError(f"{home.path} is not a trailgate home (no dirchk/): create it with "
                          "GGSCI (ADD EXTRACT …) or point --home at one")
    params = parse_manager_params(home)
    port = port or params.port
    with GroupProcess(home, "MANAGER", MANAGER_NAME, title="trailgate Manager") as proc:
        assert proc.report is not None
        if os.path.exists(params.path):
            proc.report.parameters([params.path])

        def log(level: str, code: str, message: str) -> None:
            proc.event(level, code, message)

        for warning in params.warnings:
            log("WARNING", EVENT_PARAMETER, warning)
        store = CredentialStore(home.path)
        if store.exists():  # console users: say now if the store cannot be opened
            try:
                store.list()
            except ConfigError as exc:
                log("WARNING", EVENT_PARAMETER, f"the credential store cannot be opened, so "
                                                f"its console users (domain Manager) cannot "
                                                f"log in; the token still works: {exc}")
        sock = bind(params.bind_address, port, params.path)
        supervisor = Supervisor(home, params, log)
        lag = LagMonitor(home, params, log)
        state = ManagerState(home, params, supervisor, lag, ensure_token(home), port)
        from trailgate.manager.api import create_app

        collector = _start_collector(home, params, log)
        if collector is not None:
            state.collector = {"port": collector.port,
                               "tls": collector.settings.tls is not None}
        http = HttpService(create_app(state), sock)
        http.start()
        atomic_write_text(info_file(home), json.dumps(
            {"pid": os.getpid(), "port": port, "address": params.bind_address,
             "token_file": str(token_file(home))}) + "\n")
        log("INFO", EVENT_MANAGER_STARTED, f"Manager started (port {port}).")
        proc.report.line(f"HTTP service:     http://{params.bind_address}:{port}/ (token "
                         f"in {token_file(home)})")
        proc.started()
        try:
            _loop(proc, params, supervisor, lag, _Purger(home, params, state, log), state,
                  http)
        finally:
            http.stop()
            if collector is not None:
                collector.stop()
            lag.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(info_file(home))
        proc.stopped(proc.stop_reason or "stop requested")
    return 0


def _loop(proc: GroupProcess, params: ManagerParams, supervisor: Supervisor,
          lag: LagMonitor, purger: _Purger, state: ManagerState, http: HttpService) -> None:
    supervisor.autostart()
    next_sample = next_report = next_purge = time.monotonic()
    while not proc.stop_requested:
        if not http.alive:
            raise TrailgateError(f"the HTTP service stopped: {http.error or 'unknown'}")
        supervisor.tick()
        now = time.monotonic()
        if now >= next_sample:
            statuses = state.statuses()
            lag.sample(statuses)
            next_sample = now + params.lag_sample_seconds
            if params.lag_report_seconds is not None and now >= next_report:
                lag.report(statuses)
                next_report = now + params.lag_report_seconds
        if params.purge and now >= next_purge:
            purger.run()
            next_purge = now + params.check_seconds
        proc.stop_event.wait(TICK)
