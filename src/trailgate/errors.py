"""Errors a person can act on: each says what failed, where, and what to do.

The CLI prints ``str(error)`` and exits non-zero; nothing in trailgate lets another exception
reach a user as a traceback.
"""

from __future__ import annotations

__all__ = ["MARK", "ConfigError", "EngineError", "NetworkError", "SourceError", "TargetError",
           "TrailFormatError", "TrailKeyError", "TrailgateError", "marked"]

#: Brackets a trailgate message raised in a Spark task, so the driver finds it inside the
#: Java exception text Spark wraps it in (:func:`marked`).
MARK = "@@TRAILGATE@@"


class TrailgateError(Exception):
    """Base class of every error trailgate reports to a person."""


class TrailFormatError(TrailgateError):
    """A trail file is malformed: names the file and the RBA of the bad record."""

    def __init__(self, message: str, *, path: str | None = None, rba: int | None = None):
        self.path = path
        self.rba = rba
        where = ""
        if path is not None:
            where = f"{path}" + (f" at RBA {rba}" if rba is not None else "")
            where += ": "
        super().__init__(f"{where}{message}")


class TrailKeyError(TrailFormatError):
    """An encrypted trail file cannot be read: its key is not where trailgate looks, or is
    not the key the file was written with.  Names the file, the key and where to put it."""


class ConfigError(TrailgateError):
    """A parameter file, obey file or command is wrong: names the file and line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(f"{where}{message}")


class SourceError(TrailgateError):
    """A capture source (database, redo dump) cannot be read as configured."""


class TargetError(TrailgateError):
    """A Replicat target cannot be written as configured."""


class NetworkError(TrailgateError):
    """The network path between a Data Pump and a collector failed (unreachable host,
    refused connection, TLS, authentication, a peer that broke the protocol): names the peer
    and what to check."""


class EngineError(TrailgateError):
    """Spark failed for a reason of its own, not one trailgate reports (a Python worker
    that did not start in time, a lost executor): a restart may cure it."""


def marked(message: str) -> str:
    """``message`` bracketed by :data:`MARK`: what a Spark task raises so the driver can show
    trailgate's own words instead of a Java or Python stack."""
    return f"{MARK}{message}{MARK}"
