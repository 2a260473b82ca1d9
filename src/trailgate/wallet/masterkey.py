"""The master-key wallet: GoldenGate's ``OGG_DEFAULT_MASTERKEY``, versioned, sealed.

``<home>/dirwlt/cwallet.sealed`` holds the master key's versions, each a random 256-bit key
with its creation time and a deletion mark.  ``RENEW MASTERKEY`` adds a version and keeps
the old ones (trails written under an old version stay readable); ``DELETE MASTERKEY``
marks versions and ``PURGE WALLET`` removes the marked ones; a version number is never used
twice.  :func:`master_key` is what encryption code asks: the current version for new data,
or the version a trail names.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from trailgate.errors import ConfigError
from trailgate.wallet.keys import KEY_BYTES
from trailgate.wallet.sealed import SealedFile

__all__ = [
    "DEFAULT_MASTERKEY_NAME",
    "WALLET_DIR",
    "MasterKey",
    "MasterKeyVersion",
    "MasterKeyWallet",
    "master_key",
]

DEFAULT_MASTERKEY_NAME = "OGG_DEFAULT_MASTERKEY"
WALLET_DIR = "dirwlt"
WALLET_FILE = "cwallet.sealed"
_KIND = "master-key wallet"
CURRENT, AVAILABLE, DELETED = "Current", "Available", "Deleted"


@dataclass(frozen=True, slots=True)
class MasterKey:
    """One version of the master key: what encrypts (current) or decrypts (any kept)."""

    name: str
    version: int
    key: bytes = field(repr=False)
    created: str
    status: str  # Current, Available or Deleted (marked, still readable until purged)


@dataclass(frozen=True, slots=True)
class MasterKeyVersion:
    """What ``INFO MASTERKEY`` shows of a version: never the key, only its hash."""

    version: int
    created: str
    renewed: str
    status: str
    key_hash: str  # SHA-1 of the key, as GoldenGate prints it


class MasterKeyWallet:
    """``CREATE``/``OPEN``/``PURGE WALLET`` and the ``MASTERKEY`` commands on a home."""

    def __init__(self, home: str | os.PathLike[str], environ: Mapping[str, str] | None = None):
        self.home = Path(home)
        self.directory = self.home / WALLET_DIR
        self.path = self.directory / WALLET_FILE
        self._sealed = SealedFile(self.path, _KIND, self.home, environ)

    @property
    def location(self) -> str:
        """The wallet's directory as GGSCI names it (``./dirwlt``)."""
        return f"./{WALLET_DIR}"

    def exists(self) -> bool:
        return self.path.exists()

    def create(self) -> bool:
        """An empty wallet; False if there is one already."""
        with self._sealed.locked():
            if self.path.exists():
                return False
            self._sealed.write({"name": DEFAULT_MASTERKEY_NAME, "created": None,
                                "last_version": 0, "versions": {}})
            return True

    def open(self) -> None:
        """Check that the wallet opens with this process's key (``OPEN WALLET``)."""
        self._document()

    # -- versions -----------------------------------------------------------------------
    def add(self) -> int:
        """``ADD MASTERKEY``: version 1; an error if the wallet has a master key."""
        with self._sealed.locked():
            doc = self._document()
            if doc["versions"] or doc["last_version"]:
                raise ConfigError(f"Masterkey '{doc['name']}' already exists in the wallet at "
                                  f"location '{self.location}': RENEW MASTERKEY makes a new "
                                  "version", path=str(self.path))
            doc["created"] = _now()
            return self._new_version(doc)

    def renew(self) -> int:
        """``RENEW MASTERKEY``: a new version, the old ones kept."""
        with self._sealed.locked():
            doc = self._document()
            if not doc["last_version"]:
                raise ConfigError(f"the wallet at location '{self.location}' has no master "
                                  "key: ADD MASTERKEY adds one", path=str(self.path))
            return self._new_version(doc)

    def mark(self, versions: Iterable[int], deleted: bool) -> list[int]:
        """``DELETE``/``UNDELETE MASTERKEY``: set the deletion mark of ``versions``."""
        with self._sealed.locked():
            doc = self._document()
            wanted = list(versions)
            missing = [v for v in wanted if str(v) not in doc["versions"]]
            if missing:
                raise ConfigError(f"version {missing[0]} of Masterkey '{doc['name']}' is not "
                                  f"in the wallet at location '{self.location}'; INFO "
                                  "MASTERKEY lists the versions", path=str(self.path))
            for v in wanted:
                doc["versions"][str(v)]["deleted"] = deleted
                doc["versions"][str(v)]["renewed"] = _now()
            self._sealed.write(doc)
            return wanted

    def purge(self) -> list[int]:
        """``PURGE WALLET``: remove the versions marked for deletion, for good."""
        with self._sealed.locked():
            doc = self._document()
            gone = sorted(int(v) for v, e in doc["versions"].items() if e["deleted"])
            for v in gone:
                del doc["versions"][str(v)]
            self._sealed.write(doc)
            return gone

    def name(self) -> str:
        return str(self._document()["name"])

    def created(self) -> str | None:
        value = self._document()["created"]
        return None if value is None else str(value)

    def versions(self) -> list[MasterKeyVersion]:
        """Every version kept, oldest first, with its status."""
        doc = self._document()
        current = _current(doc)
        return [MasterKeyVersion(int(v), e["created"], e.get("renewed") or e["created"],
                                 _status(int(v), e, current),
                                 hashlib.sha1(_key(e)).hexdigest().upper())
                for v, e in sorted(doc["versions"].items(), key=lambda item: int(item[0]))]

    def get(self, version: int | None = None) -> MasterKey:
        """The current version, or ``version`` while the wallet keeps it."""
        doc = self._document()
        name = str(doc["name"])
        if not doc["versions"] and not doc["last_version"]:
            raise ConfigError(f"the wallet at {self.directory} has no master key: run OPEN "
                              "WALLET and ADD MASTERKEY in GGSCI", path=str(self.path))
        current = _current(doc)
        if version is None:
            if current is None:
                state = ("is marked for deletion" if doc["versions"] else
                         "was deleted and purged")
                raise ConfigError(f"every version of Masterkey '{name}' {state}: RENEW "
                                  "MASTERKEY makes a new current version",
                                  path=str(self.path))
            version = current
        entry = doc["versions"].get(str(version))
        if entry is None:
            raise ConfigError(f"version {version} of Masterkey '{name}' is not in the wallet at "
                              f"{self.directory} (purged, or never made): data sealed with it "
                              "cannot be read without a copy of the wallet that has it",
                              path=str(self.path))
        return MasterKey(name, version, _key(entry), entry["created"],
                         _status(version, entry, current))

    # -- plumbing -----------------------------------------------------------------------
    def _document(self) -> dict[str, Any]:
        doc = self._sealed.read()
        if doc is None:
            raise ConfigError(f"there is no master-key wallet in {self.directory}: create one "
                              "with CREATE WALLET in GGSCI", path=str(self.path))
        if not (isinstance(doc.get("versions"), dict) and isinstance(doc.get("last_version"),
                                                                     int)):
            raise ConfigError(f"{self.path} is damaged (no version list)", path=str(self.path))
        return doc

    def _new_version(self, doc: dict[str, Any]) -> int:
        version = int(doc["last_version"]) + 1
        now = _now()
        doc["versions"][str(version)] = {
            "created": now, "renewed": now, "deleted": False,
            "key": base64.b64encode(os.urandom(KEY_BYTES)).decode("ascii")}
        doc["last_version"] = version
        self._sealed.write(doc)
        return version


def master_key(home: str | os.PathLike[str], version: int | None = None, *,
               environ: Mapping[str, str] | None = None) -> MasterKey:
    """The master key of ``home``'s wallet: the current version (to encrypt), or
    ``version`` (to decrypt what was sealed with it; a version marked for deletion is still
    given until ``PURGE WALLET``).  A :class:`~trailgate.errors.ConfigError` saying what to
    do when there is no wallet, no master key or no such version."""
    return MasterKeyWallet(home, environ).get(version)


def _key(entry: Mapping[str, Any]) -> bytes:
    return base64.b64decode(str(entry["key"]))


def _current(doc: Mapping[str, Any]) -> int | None:
    live = [int(v) for v, e in doc["versions"].items() if not e["deleted"]]
    return max(live) if live else None


def _status(version: int, entry: Mapping[str, Any], current: int | None) -> str:
    if entry["deleted"]:
        return DELETED
    return CURRENT if version == current else AVAILABLE


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
