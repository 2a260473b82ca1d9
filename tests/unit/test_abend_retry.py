"""Which abends AUTORESTART may retry (``trailgate.process.abends``): a real psycopg
OperationalError (a refused connection) and its subclasses anywhere in the cause chain are
retryable, as is a crash; the data and configuration errors trailgate reports are not."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from psycopg import errors as pg_errors

from trailgate.errors import ConfigError, EngineError, TargetError, TrailFormatError, marked
from trailgate.home import Home
from trailgate.process.abends import is_retryable, read_abend, write_abend
from trailgate.process.query import query_failure


def _refused() -> psycopg.OperationalError:
    """A real connection attempt to a port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        psycopg.connect(f"host=127.0.0.1 port={port} dbname=x user=x connect_timeout=3")
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("nothing should listen on a port just released")


def _wrapped(cause: BaseException, message: str = "applying batch 3 failed") -> TargetError:
    """What a group raises: its own error, from the driver's exception."""
    try:
        raise TargetError(message) from cause
    except TargetError as exc:
        return exc


def test_a_refused_connection_is_retryable_through_the_chain() -> None:
    exc = _refused()
    assert is_retryable(exc)
    assert is_retryable(_wrapped(exc))


@pytest.mark.parametrize("cls", [pg_errors.DeadlockDetected, pg_errors.AdminShutdown,
                                 pg_errors.QueryCanceled, psycopg.OperationalError])
def test_operational_error_subclasses_are_retryable_whatever_they_say(
        cls: type[psycopg.OperationalError]) -> None:
    # a message with none of the connection words: the type alone decides
    assert is_retryable(_wrapped(cls("the server did something")))


@pytest.mark.parametrize("exc", [
    _wrapped(pg_errors.UniqueViolation("duplicate key value violates unique constraint")),
    _wrapped(pg_errors.NumericValueOutOfRange("numeric field overflow")),
    TargetError("collision applying Insert: table public.t, key id = 1"),
    ConfigError("dirprm/rep1.prm, line 3: unknown parameter 'MAPP'"),
    TrailFormatError("dirdat/aa000000003: record at RBA 1234 is truncated"),
    KeyboardInterrupt(),
], ids=["unique", "overflow", "collision", "config", "trail", "second-stop"])
def test_data_and_configuration_errors_are_not(exc: BaseException) -> None:
    assert not is_retryable(exc)


@pytest.mark.parametrize("exc", [
    RuntimeError("a bug: list index out of range"),  # a crash: trailgate did not report it
    ConnectionResetError(104, "Connection reset by peer"),
    TargetError("lost the connection to u@db:5432/app while applying batch 3"),
], ids=["crash", "reset", "lost-words"])
def test_crashes_and_lost_connections_are(exc: BaseException) -> None:
    assert is_retryable(exc)


def test_the_record_the_manager_reads(tmp_path: Path) -> None:
    home = Home(tmp_path / "gg").create()
    write_abend(home, "REP1", _wrapped(_refused()), "REPLICAT REP1 abended: applying failed")
    abend = read_abend(home, "REP1")
    assert abend is not None and abend.retryable and "abended" in abend.message
    write_abend(home, "REP1", TargetError("collision"), "REPLICAT REP1 abended: collision")
    abend = read_abend(home, "REP1")
    assert abend is not None and not abend.retryable


SPARK_OWN = ("[STREAM_FAILED] Query [id = 98f3c0fe, runId = 78328628] terminated with "
             "exception: Python worker failed to connect back. SQLSTATE: XXKST")


def test_a_failure_of_spark_itself_is_retryable_and_says_so() -> None:
    # the text a streaming query failed with on a machine too loaded to start a worker
    failure = query_failure(RuntimeError(SPARK_OWN), TargetError)
    assert isinstance(failure, EngineError)
    assert str(failure).startswith("Spark failed: [STREAM_FAILED]")
    assert is_retryable(failure)


def test_trailgates_own_message_inside_a_spark_failure_keeps_its_kind() -> None:
    text = (f"[STREAM_FAILED] Query terminated with exception: Traceback ...\n"
            f"{marked('collision applying Insert: table public.t, key id = 1')}\n...")
    failure = query_failure(RuntimeError(text), TargetError)
    assert type(failure) is TargetError
    assert str(failure) == "collision applying Insert: table public.t, key id = 1"
    assert not is_retryable(failure)
