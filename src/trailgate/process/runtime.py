"""The life of a group process: one at a time, a pid file, a report, events, clean stops.

Every group (Extract, Data Pump, Replicat) runs inside a :class:`GroupProcess`, so these
work alike for all: an exclusive lock on ``dirchk/GROUP.lock``, the pid file a clean stop
removes (a dead process leaves it: ABENDED), the report ``dirrpt/GROUP.rpt`` and its aged
copies, the ``ggserr.log`` events, and a stop signal that lets the micro-batch in flight
finish.  docs/processes.md, "The group runtime".
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import platform
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from trailgate import __version__
from trailgate.errors import ConfigError
from trailgate.home import Home, validate_group_name
from trailgate.process.abends import clear_abend, write_abend
from trailgate.process.lifecycle import Status, pid_file, process_state, read_pid
from trailgate.wallet.masking import has_secret, mask_secrets

__all__ = [
    "EVENT_ABENDING",
    "EVENT_NO_TRANDATA",
    "EVENT_STARTED",
    "EVENT_STARTING",
    "EVENT_STOPPED",
    "GroupProcess",
    "Report",
]

EVENT_STARTING = "OGG-00975"  # GGSCI's INFO finds the last start by this code
EVENT_STARTED = "OGG-00993"
EVENT_STOPPED = "OGG-00991"
EVENT_ABENDING = "OGG-01668"
EVENT_WARNING = "OGG-01738"  # generic warning carried over to the event log
EVENT_NO_TRANDATA = "OGG-06441"  # table captured without supplemental logging (TRANDATA)
REPORTS_KEPT = 10
#: How long a start waits for a killed run's Spark to let go of the group's lock.
LOCK_WAIT_SECONDS = 60.0
_RULE = "*" * 79


def _is_stdout(path: Path) -> bool:
    try:
        out, target = os.fstat(1), path.stat()
    except OSError:
        return False
    return (out.st_dev, out.st_ino) == (target.st_dev, target.st_ino)


def _stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


CLEAR_PASSWORD = ("a parameter file gives a password in clear text (USERID …, PASSWORD, or "
                  "password= in a connection string): keep it in the credential store with "
                  "ALTER CREDENTIALSTORE ADD USER user PASSWORD pw ALIAS a, and write "
                  "USERIDALIAS a instead")


def stop_after_batch(query: Any, stop_file: Path, timeout: float) -> None:
    """Stop a group's streaming query between batches: once the stop file exists its source
    plans no new batch; wait (up to ``timeout``) for the one in flight, then stop."""
    stop_file.touch()
    deadline = time.monotonic() + timeout
    quiet = 0
    while query.isActive and time.monotonic() < deadline:
        if not query.status.get("isTriggerActive", False):
            quiet += 1
            if quiet >= 2:  # two looks in a row: no batch is running
                break
        else:
            quiet = 0
        time.sleep(0.2)
    query.stop()


class Report:
    """The group's report file: written line by line, so a crash loses nothing before it."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if _is_stdout(path):
            # GGSCI START sends the process's output to this file: keep appending to it
            self._fh: IO[str] = path.open("a", encoding="utf-8", buffering=1)
        else:
            self._age()
            self._fh = path.open("w", encoding="utf-8", buffering=1)

    def _age(self) -> None:
        """GROUP.rpt -> GROUP0.rpt -> … -> GROUP9.rpt (the oldest falls off)."""
        stem, parent = self.path.stem, self.path.parent
        if not self.path.exists():
            return
        for n in range(REPORTS_KEPT - 1, 0, -1):
            older = parent / f"{stem}{n - 1}.rpt"
            if older.exists():
                older.replace(parent / f"{stem}{n}.rpt")
        self.path.replace(parent / f"{stem}0.rpt")

    def line(self, text: str = "") -> None:
        self._fh.write(text + "\n")

    def banner(self, title: str, lines: list[str]) -> None:
        self.line(_RULE)
        self.line(f"{title:^79}".rstrip())
        for text in lines:
            self.line(f"{text:^79}".rstrip())
        self.line(_RULE)

    def section(self, title: str) -> None:
        self.line()
        self.line(_RULE)
        self.line(f"**{title:^75}**")
        self.line(_RULE)
        self.line()

    def event(self, level: str, code: str, message: str) -> None:
        self.line(f"{_stamp()}  {level.upper():<8}{code}  {message}")

    def parameters(self, paths: list[Path] | list[str]) -> bool:
        """Echo the parameter files as read, passwords masked (GoldenGate's report does);
        True when one of them holds a password in clear text."""
        self.section("Running with the following parameters")
        clear = False
        for path in paths:
            self.line(f"-- {path}")
            try:
                text = Path(path).read_text("utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                code = line.split("--", 1)[0]
                clear = clear or has_secret(code)
                self.line(mask_secrets(line))
        return clear

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


class _ReportLines(logging.Handler):
    """A logger's lines into a group's report (see :meth:`GroupProcess.report_log`)."""

    def __init__(self, proc: GroupProcess):
        super().__init__(logging.INFO)
        self.proc = proc

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if self.proc.report is not None:
            self.proc.report.line(line)
        if "  WARNING " in line[:30]:  # trail.ddl.report_line: time (19), 2 spaces, level (8)
            self.proc.home.log_event("WARNING", "OGG-01738", line[29:].strip())


class GroupProcess:
    """Context manager around one run of a group: lock, pid file, report, signals, events.

    Leaving it normally (after :meth:`stopped`) removes the pid file; leaving it with an
    exception reports the abend and keeps the pid file, so INFO shows ABENDED.
    """

    def __init__(self, home: Home, kind: str, group: str, *, title: str):
        self.home = home
        self.kind = kind.upper()
        self.group = validate_group_name(group)
        self.title = title
        self.stop_event = threading.Event()
        self.stop_reason: str | None = None
        self.report: Report | None = None
        self._lock_fd: int | None = None
        self._clean = False
        self._previous: dict[int, Callable[..., object] | int | None] = {}

    # -- context -------------------------------------------------------------------------
    def __enter__(self) -> GroupProcess:
        self.home.dirchk.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            self._write_pid()
            clear_abend(self.home, self.group)
            self.report = Report(self.home.report_file(self.group))
            self._banner()
            self.event("INFO", EVENT_STARTING, f"{self.kind} {self.group} starting.")
            self._install_signals()
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._restore_signals()
        try:
            if exc is not None and not self._clean:
                message = str(exc) or type(exc).__name__
                write_abend(self.home, self.group, exc, message)
                self.abend(message)
            elif self._clean:
                pid_file(self.home, self.group).unlink(missing_ok=True)
        finally:
            if self.report is not None:
                self.report.close()
            self._unlock()

    # -- pieces --------------------------------------------------------------------------
    def _lock(self) -> None:
        """Take the group's lock.  Its holder may be a running group (an error), or the
        Spark JVM of a run that was killed and is still shutting down (it inherited the
        lock): then wait for it, so two runs never share Spark's checkpoint."""
        path = self.home.dirchk / f"{self.group}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pid = read_pid(pid_file(self.home, self.group))
                running = process_state(self.home, self.group).status is Status.RUNNING
                if running or time.monotonic() > deadline:
                    os.close(fd)
                    raise ConfigError(f"{self.kind} {self.group} is already running"
                                      f"{f' (pid {pid})' if pid else ''}: stop it first "
                                      f"(STOP {self.kind} {self.group})") from None
                time.sleep(0.2)
        self._lock_fd = fd

    @property
    def lock_fd(self) -> int | None:
        """The lock's descriptor: hand it to child processes that must hold it too."""
        return self._lock_fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _write_pid(self) -> None:
        from trailgate.checkpoint import atomic_write_text

        atomic_write_text(pid_file(self.home, self.group),
                          f"{os.getpid()} {datetime.now().isoformat(timespec='seconds')}\n")

    def _banner(self) -> None:
        assert self.report is not None
        uname = platform.uname()
        self.report.banner(self.title, [f"Version {__version__}",
                                        f"{uname.system} {uname.release} {uname.machine}"])
        self.report.line()
        self.report.line(f"Group:            {self.kind} {self.group}")
        self.report.line(f"Home:             {self.home.path}")
        self.report.line(f"Host:             {socket.gethostname()}")
        self.report.line(f"Process id:       {os.getpid()}")
        self.report.line(f"Started:          {_stamp()}")

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def start_spark(self, master: str | None, conf: dict[str, str]) -> Any:
        """The group's own Spark session. Its JVM inherits the group lock, so a restart after
        kill -9 waits for the old JVM instead of sharing Spark's checkpoint with it; and
        SIGINT/SIGTERM are taken back from the SparkContext so a stop finishes the batch."""
        from trailgate.spark.session import get_spark

        spark = get_spark(f"trailgate {self.kind} {self.group}", master=master, conf=conf,
                          own_session=True,
                          inherit_fds=(self.lock_fd,) if self.lock_fd is not None else ())
        self.reclaim_signals()
        return spark

    def reclaim_signals(self) -> None:
        """Take SIGINT/SIGTERM back after a library replaced the handlers (creating a
        SparkContext installs one that cancels every job and raises KeyboardInterrupt)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def _restore_signals(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stop_event.is_set():
            raise KeyboardInterrupt(f"second {name}: stopping at once")
        self.stop_reason = f"{name} received"
        self.stop_event.set()

    # -- what the group calls ------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self.stop_event.is_set()

    @contextlib.contextmanager
    def report_log(self, name: str = "trailgate.ddl") -> Iterator[None]:
        """While inside: lines the logger ``name`` gets at INFO go into the report (and
        only there), as they come; a WARNING line also goes to ggserr.log."""
        handler = _ReportLines(self)
        logger = logging.getLogger(name)
        level, propagate = logger.level, logger.propagate
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    def event(self, level: str, code: str, message: str, *, report: bool = True) -> None:
        """An event: one line in ggserr.log and, by default, in the report."""
        self.home.log_event(level, code, message)
        if report and self.report is not None:
            self.report.event(level, code, message)

    def echo_parameters(self, paths: list[Path] | list[str]) -> None:
        """The parameter files into the report, passwords masked; a clear-text password is
        warned about in the report and ggserr.log, as GoldenGate warns."""
        assert self.report is not None
        if self.report.parameters(paths):
            self.warn(CLEAR_PASSWORD)
        self.report.line()

    def warn(self, message: str, code: str = EVENT_WARNING) -> None:
        text = message.removeprefix("WARNING: ")
        self.event("WARNING", code, f"{self.kind} {self.group}: {text}")

    def started(self) -> None:
        self.event("INFO", EVENT_STARTED, f"{self.kind} {self.group} started.")

    def stopped(self, reason: str) -> None:
        """A clean stop: the report says why, the event log says so, the pid file goes."""
        if self.report is not None:
            self.report.section("Stop")
            self.report.line(f"{_stamp()}  {self.kind} {self.group} stopping: {reason}")
        self.event("INFO", EVENT_STOPPED, f"{self.kind} {self.group} stopped normally.")
        self._clean = True

    def abend(self, message: str) -> None:
        if self.report is not None:
            self.report.section("Abend")
            self.report.line(message)
        self.event("ERROR", EVENT_ABENDING, f"{self.kind} {self.group}: PROCESS ABENDING. "
                   f"{message}")
