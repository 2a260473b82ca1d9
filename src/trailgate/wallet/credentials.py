"""The credential store (``USERIDALIAS``): aliases of user ids and passwords, sealed.

``<home>/dircrd/credentials.sealed`` holds ``{domain: {alias: {userid, password}}}`` as a
sealed file (:mod:`trailgate.wallet.sealed`).  A store of an older trailgate, plain JSON in
``dircrd/credentials.json``, is converted on first use, under the store's lock: the sealed
copy is written and fsynced first, and only then is the plaintext removed, so a crash at any
step leaves the passwords in one readable place and the next use finishes the job.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.checkpoint import fsync_dir
from trailgate.errors import ConfigError
from trailgate.wallet.sealed import SealedFile

__all__ = ["DEFAULT_DOMAIN", "Credential", "CredentialStore"]

DEFAULT_DOMAIN = "OracleGoldenGate"
STORE_FILE = "credentials.sealed"
PLAINTEXT_FILE = "credentials.json"  # an older trailgate's store, converted on first use
_KIND = "credential store"

Entries = dict[str, dict[str, dict[str, str]]]


@dataclass(frozen=True, slots=True)
class Credential:
    """One alias: a user id (possibly with its server) and its password (never printed)."""

    alias: str
    domain: str
    userid: str
    password: str = field(repr=False)


class CredentialStore:
    """``ADD``/``ALTER``/``INFO``/``DELETE CREDENTIALSTORE`` on ``<home>/dircrd``."""

    def __init__(self, home: str | os.PathLike[str], environ: Mapping[str, str] | None = None):
        self.home = Path(home)
        self.directory = self.home / "dircrd"
        self.path = self.directory / STORE_FILE
        self.plaintext_path = self.directory / PLAINTEXT_FILE
        self._sealed = SealedFile(self.path, _KIND, self.home, environ)

    # -- the store itself ---------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists() or self.plaintext_path.exists()

    def create(self) -> bool:
        """Make an empty sealed store; False if one exists (a plaintext one is converted)."""
        with self._sealed.locked():
            self._convert_locked()
            if self.path.exists():
                return False
            self._sealed.write({"credentials": {}})
            return True

    def remove(self) -> None:
        """``DELETE CREDENTIALSTORE``: the store file (the wallet key stays)."""
        with self._sealed.locked():
            if not self.exists():
                raise ConfigError(f"the credential store in {self.directory}/ does not exist",
                                  path=str(self.path))
            for path in (self.path, self.plaintext_path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            fsync_dir(self.directory)

    # -- aliases ------------------------------------------------------------------------
    def add(self, alias: str, userid: str, password: str,
            domain: str = DEFAULT_DOMAIN) -> None:
        """Add or replace ``alias`` in ``domain``."""
        with self._sealed.locked():
            data = self._load_locked()
            data.setdefault(domain, {})[alias] = {"userid": userid, "password": password}
            self._sealed.write({"credentials": data})

    def delete(self, alias: str, domain: str = DEFAULT_DOMAIN) -> None:
        with self._sealed.locked():
            data = self._load_locked()
            if alias not in data.get(domain, {}):
                raise ConfigError(f"credential alias {alias!r} does not exist in domain "
                                  f"{domain!r}", path=str(self.path))
            del data[domain][alias]
            if not data[domain]:
                del data[domain]
            self._sealed.write({"credentials": data})

    def get(self, alias: str, domain: str = DEFAULT_DOMAIN) -> Credential:
        entry = self._load().get(domain, {}).get(alias)
        if entry is None:
            raise ConfigError(f"credential alias {alias!r} does not exist in domain {domain!r}: "
                              "add it with ALTER CREDENTIALSTORE ADD USER … ALIAS "
                              f"{alias}", path=str(self.path))
        return Credential(alias, domain, entry["userid"], entry["password"])

    def list(self) -> list[Credential]:
        """Every alias, by domain then alias (``INFO CREDENTIALSTORE`` shows the user ids)."""
        return [Credential(alias, domain, e["userid"], e["password"])
                for domain, aliases in sorted(self._load().items())
                for alias, e in sorted(aliases.items())]

    # -- loading and converting ---------------------------------------------------------
    def _load(self) -> Entries:
        if not self.directory.is_dir():
            return {}
        if self.plaintext_path.exists():
            with self._sealed.locked():
                return self._load_locked()
        return _entries(self._sealed.read(), self.path)

    def _load_locked(self) -> Entries:
        self._convert_locked()
        return _entries(self._sealed.read(), self.path)

    def _convert_locked(self) -> None:
        """Seal a plaintext store: sealed copy durable first, then the plaintext removed.

        If both exist (a crash after the sealed copy was renamed into place), the sealed one
        is authoritative and only aliases it lacks are taken from the plaintext."""
        try:
            raw = self.plaintext_path.read_text("utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(f"cannot read the plaintext credential store to convert it: "
                              f"{exc.strerror}", path=str(self.plaintext_path)) from None
        try:
            plain = _entries({"credentials": json.loads(raw)}, self.plaintext_path)
        except ValueError:
            raise ConfigError("the plaintext credential store is not JSON: fix or remove it, "
                              "then add the aliases again", path=str(self.plaintext_path)) \
                from None
        sealed = _entries(self._sealed.read(), self.path) if self.path.exists() else {}
        merged = {domain: dict(aliases) for domain, aliases in sealed.items()}
        for domain, aliases in plain.items():
            for alias, entry in aliases.items():
                merged.setdefault(domain, {}).setdefault(alias, entry)
        if merged != sealed or not self.path.exists():
            self._sealed.write({"credentials": merged})  # fsynced, renamed, directory fsynced
        os.unlink(self.plaintext_path)
        for leftover in self.directory.glob("credentials.tmp"):  # an old writer's temp file
            leftover.unlink()
        fsync_dir(self.directory)


def _entries(document: Mapping[str, Any] | None, where: Path) -> Entries:
    """The aliases of a store document, checked for shape."""
    if document is None:
        return {}
    data = document.get("credentials")
    if not isinstance(data, dict):
        raise ConfigError(f"{where} holds no credentials", path=str(where))
    out: Entries = {}
    for domain, aliases in data.items():
        if not isinstance(aliases, dict):
            raise ConfigError(f"{where}: domain {domain!r} is not a set of aliases",
                              path=str(where))
        for alias, entry in aliases.items():
            if not (isinstance(entry, dict) and isinstance(entry.get("userid"), str)
                    and isinstance(entry.get("password"), str)):
                raise ConfigError(f"{where}: alias {alias!r} of domain {domain!r} is damaged",
                                  path=str(where))
            out.setdefault(str(domain), {})[str(alias)] = {"userid": entry["userid"],
                                                           "password": entry["password"]}
    return out
