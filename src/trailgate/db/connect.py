"""Connecting to PostgreSQL: connection strings, credential aliases, clear failures.

Every connection trailgate opens goes through ``connect()``: it sets a connect timeout (an
unreachable server is an error in seconds, never a hang) and turns libpq's failures into a
``SourceError`` that names the server without its password.

Credential aliases (GoldenGate's credential store, ``USERIDALIAS``) are kept sealed by
:mod:`trailgate.wallet`; ``alias_conninfo`` names one in a connection string that holds no
password (looked up by ``session_conninfo`` as each connection opens), so what a group
hands to Spark carries none.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from trailgate.errors import ConfigError, SourceError
from trailgate.wallet import DEFAULT_DOMAIN, Credential, CredentialStore
from trailgate.wallet.masking import mask_secrets

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_DOMAIN",
    "Credential",
    "CredentialStore",
    "connect",
    "connect_failure",
    "credential_conninfo",
    "describe",
    "login_conninfo",
    "query_value",
    "session_conninfo",
]

DEFAULT_CONNECT_TIMEOUT = 5
#: TCP keepalives on every connection unless its string sets them: a server that vanished
#: without a reset (a network partition, a host that died) is seen within about a minute
#: while a connection waits for results, not after the system's two hours.
KEEPALIVES = {"keepalives": "1", "keepalives_idle": "30", "keepalives_interval": "10",
              "keepalives_count": "3"}
_ALIAS_REF = "trailgate-alias:"  # the password keyword of an alias_conninfo


def describe(conninfo: str) -> str:
    """``user@host:port/dbname`` for messages: never the password."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "(unparsable connection string)"
    user = str(params.get("user") or os.environ.get("PGUSER", ""))
    host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST", "localhost")
    port = params.get("port") or os.environ.get("PGPORT", "5432")
    db = params.get("dbname") or os.environ.get("PGDATABASE", user)
    return f"{user + '@' if user else ''}{host}:{port}/{db}"


def connect(conninfo: str, *, autocommit: bool = True,
            timeout: int = DEFAULT_CONNECT_TIMEOUT, application_name: str = "trailgate",
            settings: dict[str, str] | None = None) -> psycopg.Connection[Any]:
    """Open a connection, or raise a ``SourceError`` that says what to check."""
    full = session_conninfo(conninfo, timeout=timeout, application_name=application_name,
                            settings=settings)
    try:
        return psycopg.connect(full, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise connect_failure(conninfo, reason) from None


def session_conninfo(conninfo: str, *, timeout: int = DEFAULT_CONNECT_TIMEOUT,
                     application_name: str = "trailgate",
                     settings: dict[str, str] | None = None, **extra: str) -> str:
    """``conninfo`` with a connect timeout, an application name, TCP keepalives
    (``KEEPALIVES``) and server settings (``-c name=value`` options) unless it sets them
    itself; ``extra`` parameters override
    (``replication="database"``)."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        # libpq quotes the text around the fault, which may be a password: name it only
        reason = re.sub(r'"[^"]*"', '"…"', mask_secrets(str(exc)))
        raise ConfigError(f"invalid PostgreSQL connection string: {reason}") from None
    password = params.get("password")
    if isinstance(password, str) and password.startswith(_ALIAS_REF):
        params["password"] = _resolve_alias(password)
    params.setdefault("connect_timeout", timeout)
    params.setdefault("application_name", application_name)
    for name, value in KEEPALIVES.items():
        params.setdefault(name, value)
    if settings:
        options = " ".join(f"-c {k}={v.replace(' ', '')}" for k, v in settings.items())
        params["options"] = f"{params.get('options', '')} {options}".strip()
    params.update(extra)
    return make_conninfo("", **params)


def query_value(conn: psycopg.Connection[Any], query: str | sql.Composed,
                params: tuple[Any, ...] = ()) -> Any:
    """The one value a query gives (``SHOW``, ``SELECT f(…)``): its first row's first column;
    a ``SourceError`` naming the query if it gives no row."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        text = query if isinstance(query, str) else query.as_string(conn)
        raise SourceError(f"{text} returned no row")
    return row[0]


def connect_failure(conninfo: str, reason: str) -> SourceError:
    """The error for a connection that could not be opened: what to check."""
    return SourceError(
        f"cannot connect to PostgreSQL {describe(conninfo)}: {reason}. Check that the "
        "server is running and reachable, and the user, password and database "
        "(DBLOGIN SOURCEDB/USERID or USERIDALIAS)")


def login_conninfo(*, sourcedb: str | None = None, userid: str | None = None,
                   password: str | None = None) -> str:
    """Build a connection string from DBLOGIN's parts.

    ``sourcedb`` is a connection string or URI (``host=… dbname=…``) or a plain database
    name; ``userid`` may carry the server as ``user@host:port/dbname``, where the host may
    be a Unix socket's directory (``user@/var/run/postgresql:5432/dbname``).
    """
    params: dict[str, Any] = {}
    if sourcedb:
        params.update(conninfo_to_dict(sourcedb) if ("=" in sourcedb or "://" in sourcedb)
                      else {"dbname": sourcedb})
    if userid:
        if "=" in userid or "://" in userid:
            params.update(conninfo_to_dict(userid))
        else:
            user, _, server = userid.partition("@")
            params["user"] = user
            if server:
                params.update(_server_parts(server))
    if password is not None:
        params["password"] = password
    return make_conninfo(**params)


def _server_parts(server: str) -> dict[str, str]:
    """``host:port/dbname`` of a ``user@…`` login, each part optional; a host that is a
    Unix socket's directory (``/var/run/postgresql:5432/sales``) ends at its first colon,
    and names a database only after a port."""
    if server.startswith("/"):
        match = re.fullmatch(r"(/[^:]*)(?::([0-9]*)(?:/(.*))?)?", server)
        if match is None:
            raise ConfigError(f"cannot read the server of login {server!r}: write a socket "
                              "directory as /directory:port/dbname")
        host, port, db = match.groups()
    else:
        hostport, _, db = server.partition("/")
        host, _, port = hostport.partition(":")
    parts = {"host": host}
    if port:
        parts["port"] = port
    if db:
        parts["dbname"] = db
    return parts


def credential_conninfo(credential: Credential, sourcedb: str | None = None) -> str:
    """The connection string of a credential-store alias, on ``sourcedb`` if given, with the
    password in it (GGSCI's DBLOGIN; a group uses :func:`alias_conninfo`)."""
    return login_conninfo(sourcedb=sourcedb, userid=credential.userid,
                          password=credential.password)


def alias_conninfo(home: str | os.PathLike[str], alias: str, domain: str = DEFAULT_DOMAIN,
                   sourcedb: str | None = None) -> str:
    """The connection string of a credential-store alias whose password stays in the store:
    the ``password`` keyword names the alias, and :func:`session_conninfo` looks the password
    up as a connection opens.  A group's configuration, pickled into Spark tasks and plans,
    so carries no password; a task opens the store as the driver does (the home's wallet
    key, or the passphrase in its environment)."""
    cred = CredentialStore(home).get(alias, domain)
    ref = json.dumps([os.path.abspath(home), domain, alias]).encode()
    return login_conninfo(sourcedb=sourcedb, userid=cred.userid,
                          password=_ALIAS_REF + base64.urlsafe_b64encode(ref).decode())


def _resolve_alias(value: str) -> str:
    """The password an :func:`alias_conninfo` reference names."""
    try:
        home, domain, alias = json.loads(base64.urlsafe_b64decode(value[len(_ALIAS_REF):]))
    except (ValueError, TypeError):
        raise ConfigError("a connection string names a credential alias in a form this "
                          "trailgate does not read") from None
    return CredentialStore(str(home)).get(str(alias), str(domain)).password
