"""Why a group abended, kept where the Manager can read it: ``dirchk/GROUP.abend``.

AUTORESTART must tell an abend a restart can cure (a lost database connection, a server
that was restarting, a crash of the process) from one it cannot (a collision under
REPERROR ABEND, a value the target refuses, a malformed parameter file): restarting the
second kind only abends again, in a loop.  The group knows which it is when it abends, so
it records it; a process killed outright (kill -9) records nothing, and that is retryable.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from trailgate.checkpoint import atomic_write_text
from trailgate.errors import ConfigError, EngineError, TrailFormatError, TrailgateError
from trailgate.home import Home, validate_group_name

__all__ = ["Abend", "abend_file", "clear_abend", "is_retryable", "read_abend", "write_abend"]

#: Words of a message that mean the connection to a database was lost or refused: a
#: TargetError/SourceError that says so is cured by a restart once the server is back.
_CONNECTION_WORDS = ("lost the connection", "connection refused", "could not connect",
                     "cannot connect", "server closed the connection",
                     "terminating connection", "connection to server", "is not reachable",
                     "timeout expired", "the database system is starting up",
                     "the database system is shutting down")


@dataclass(frozen=True, slots=True)
class Abend:
    """One abend: the process, when, whether a restart can cure it, and the message."""

    pid: int
    time: str
    retryable: bool
    message: str


def abend_file(home: Home, group: str) -> Path:
    return home.dirchk / f"{validate_group_name(group)}.abend"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def is_retryable(exc: BaseException) -> bool:
    """True when a restart may cure what raised ``exc``: a lost or refused connection
    (psycopg's OperationalError anywhere in the chain, or a message that says so) or an
    error trailgate does not know (a crash); False for the errors of data and
    configuration trailgate reports (a collision, a refused value, a parameter file, a
    malformed trail), which need a person first."""
    if isinstance(exc, KeyboardInterrupt):  # a second stop signal: a person stopped it
        return False
    if isinstance(exc, EngineError):  # Spark's own failure: as a crash
        return True
    chain = _chain(exc)
    for item in chain:  # psycopg's OperationalError or a subclass (AdminShutdown, a deadlock)
        if any(cls.__name__ == "OperationalError" and cls.__module__.startswith("psycopg")
               for cls in type(item).__mro__):
            return True
        if isinstance(item, ConnectionError | TimeoutError):
            return True
    text = " ".join(str(item) for item in chain).lower()
    if any(word in text for word in _CONNECTION_WORDS):
        return True
    return not isinstance(exc, TrailgateError | ConfigError | TrailFormatError)


def write_abend(home: Home, group: str, exc: BaseException, message: str) -> None:
    """Record this process's abend (best effort: the abend itself must not fail)."""
    data = {"pid": os.getpid(), "time": datetime.now().isoformat(timespec="seconds"),
            "retryable": is_retryable(exc), "message": message[:2000]}
    with contextlib.suppress(OSError):
        atomic_write_text(abend_file(home, group), json.dumps(data) + "\n")


def clear_abend(home: Home, group: str) -> None:
    """A new run starts: an earlier run's abend no longer describes the group."""
    with contextlib.suppress(FileNotFoundError):
        abend_file(home, group).unlink()


def read_abend(home: Home, group: str) -> Abend | None:
    """The recorded abend, or None (none recorded, or unreadable: treated as a crash)."""
    try:
        data = json.loads(abend_file(home, group).read_text("utf-8"))
        return Abend(int(data["pid"]), str(data["time"]), bool(data["retryable"]),
                     str(data["message"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
