"""Connecting to PostgreSQL: connection strings, credential aliases, clear failures.

Every connection trailgate opens goes through ``connect()``: it sets a connect timeout (an
unreachable server is an error in seconds, never a hang) and turns libpq's failures into a
``SourceError`` that names the server without its password.

Credential aliases (GoldenGate's credential store, ``USERIDALIAS``) live in
``<home>/dircrd/credentials.json``, mode 0600 in a 0700 directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from trailgate.errors import ConfigError, SourceError

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "Credential",
    "CredentialStore",
    "connect",
    "connect_failure",
    "describe",
    "login_conninfo",
    "query_value",
    "session_conninfo",
]

DEFAULT_CONNECT_TIMEOUT = 5
DEFAULT_DOMAIN = "OracleGoldenGate"


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
    """``conninfo`` with a connect timeout, an application name and server settings
    (``-c name=value`` options) unless it sets them itself; ``extra`` parameters override
    (``replication="database"``)."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"invalid PostgreSQL connection string: {exc}") from None
    params.setdefault("connect_timeout", timeout)
    params.setdefault("application_name", application_name)
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
    name; ``userid`` may carry the server as ``user@host:port/dbname``.
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
                hostport, _, db = server.partition("/")
                host, _, port = hostport.partition(":")
                params["host"] = host
                if port:
                    params["port"] = port
                if db:
                    params["dbname"] = db
    if password is not None:
        params["password"] = password
    return make_conninfo(**params)


@dataclass(frozen=True, slots=True)
class Credential:
    """One alias: a user id (possibly with its server) and password."""

    alias: str
    domain: str
    userid: str
    password: str

    def conninfo(self, sourcedb: str | None = None) -> str:
        return login_conninfo(sourcedb=sourcedb, userid=self.userid, password=self.password)


class CredentialStore:
    """``ALTER CREDENTIALSTORE ADD USER … ALIAS …`` kept as JSON under ``<home>/dircrd``."""

    def __init__(self, home: str | os.PathLike[str]):
        self.directory = Path(home) / "dircrd"
        self.path = self.directory / "credentials.json"

    def _load(self) -> dict[str, dict[str, dict[str, str]]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read credential store: {exc}", path=str(self.path)) from None
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, dict[str, dict[str, str]]]) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def add(self, alias: str, userid: str, password: str,
            domain: str = DEFAULT_DOMAIN) -> None:
        """Add or replace ``alias`` in ``domain``."""
        data = self._load()
        data.setdefault(domain, {})[alias] = {"userid": userid, "password": password}
        self._save(data)

    def delete(self, alias: str, domain: str = DEFAULT_DOMAIN) -> None:
        data = self._load()
        if alias not in data.get(domain, {}):
            raise ConfigError(f"credential alias {alias!r} does not exist in domain {domain!r}",
                              path=str(self.path))
        del data[domain][alias]
        self._save(data)

    def get(self, alias: str, domain: str = DEFAULT_DOMAIN) -> Credential:
        entry = self._load().get(domain, {}).get(alias)
        if entry is None:
            raise ConfigError(f"credential alias {alias!r} does not exist in domain {domain!r}: "
                              "add it with ALTER CREDENTIALSTORE ADD USER … ALIAS "
                              f"{alias}", path=str(self.path))
        return Credential(alias, domain, entry["userid"], entry["password"])

    def list(self) -> list[Credential]:
        """Every alias (``INFO CREDENTIALSTORE``); show ``userid``, never the password."""
        return [Credential(alias, domain, e["userid"], e["password"])
                for domain, aliases in sorted(self._load().items())
                for alias, e in sorted(aliases.items())]
