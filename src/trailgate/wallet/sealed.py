"""A sealed file: a JSON document encrypted and authenticated with AES-256-GCM.

The file is JSON text of three parts: a clear header (format, kind, and how to find the key:
the key file's fingerprint, or the scrypt salt and costs of a passphrase), a fresh 96-bit
nonce, and the ciphertext.  The header is the cipher's associated data, so a changed header
fails authentication like a changed byte of ciphertext.  Writes go through a temporary file,
fsync and rename (``checkpoint.atomic_write_bytes``); read-modify-write cycles hold an
``flock`` on a lock file beside the sealed one, so two processes never lose each other's
change.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from trailgate.checkpoint import atomic_write_bytes, exclusive_lock
from trailgate.errors import ConfigError
from trailgate.wallet.keys import (
    KEY_FILE_ENV,
    PASSPHRASE_ENV,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    KeySpec,
    derive_passphrase_key,
    key_file_path,
    key_id,
    load_or_create_key_file,
    read_key_file,
)

__all__ = ["CIPHER", "FORMAT", "SealedFile"]

FORMAT = "trailgate-sealed"
CIPHER = "AES-256-GCM"
_VERSION = 1


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, where: Path) -> bytes:
    try:
        return base64.b64decode(str(text), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where} is damaged (a field is not base64): restore it from a "
                          "backup", path=str(where)) from None


class SealedFile:
    """One sealed JSON document of a home (``kind`` names it in the header and messages)."""

    def __init__(self, path: Path, kind: str, home: Path,
                 environ: Mapping[str, str] | None = None):
        self.path = path
        self.kind = kind
        self.home = home
        self.environ = os.environ if environ is None else environ
        self._spec: KeySpec | None = None
        self._derived_from: bytes | None = None  # which passphrase and salt gave the key

    # -- keys ---------------------------------------------------------------------------
    def _new_spec(self) -> KeySpec:
        passphrase = self.environ.get(PASSPHRASE_ENV)
        if passphrase is not None:
            salt = os.urandom(16)
            header: dict[str, object] = {"key": "passphrase", "kdf": "scrypt",
                                         "salt": _b64(salt), "n": SCRYPT_N, "r": SCRYPT_R,
                                         "p": SCRYPT_P}
            return KeySpec(header, derive_passphrase_key(passphrase, salt))
        key = load_or_create_key_file(key_file_path(self.home, self.environ))
        return KeySpec({"key": "file", "key_id": key_id(key)}, key)

    def _spec_for(self, header: Mapping[str, Any]) -> KeySpec:
        source = header.get("key")
        known = self._spec
        if source == "passphrase" and known is not None and self._derived_from is not None \
                and all(known.header.get(k) == header.get(k)
                        for k in ("key", "kdf", "salt", "n", "r", "p")) \
                and hmac.compare_digest(self._derived_from,
                                        self._passphrase_digest(header)):
            return known  # scrypt is slow by design: once per salt and passphrase
        if source == "passphrase":
            passphrase = self.environ.get(PASSPHRASE_ENV)
            if passphrase is None:
                raise ConfigError(f"the {self.kind} {self.path} is sealed with a passphrase: "
                                  f"set {PASSPHRASE_ENV} to it", path=str(self.path))
            try:
                n, r, p = int(header["n"]), int(header["r"]), int(header["p"])
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{self.path} is damaged (its scrypt costs are missing)",
                                  path=str(self.path)) from None
            salt = _unb64(header.get("salt"), self.path)
            key = derive_passphrase_key(passphrase, salt, n, r, p)
            self._derived_from = self._passphrase_digest(header)
            return KeySpec(dict(header), key)
        if source == "file":
            path = key_file_path(self.home, self.environ)
            key = read_key_file(path)
            if key_id(key) != header.get("key_id"):
                raise ConfigError(
                    f"the {self.kind} {self.path} was sealed with another wallet key than "
                    f"{path} (key id {header.get('key_id')}, that file's {key_id(key)}): set "
                    f"{KEY_FILE_ENV} to the key file it was made with", path=str(self.path))
            return KeySpec(dict(header), key)
        raise ConfigError(f"{self.path} names an unknown key source {source!r}",
                          path=str(self.path))

    def _passphrase_digest(self, header: Mapping[str, Any]) -> bytes:
        """What names the passphrase in the environment now, with the file's salt, without
        keeping the passphrase itself."""
        passphrase = self.environ.get(PASSPHRASE_ENV) or ""
        return hashlib.sha256(str(header.get("salt")).encode() + b"\0"
                              + passphrase.encode()).digest()

    # -- reading and writing ------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> dict[str, Any] | None:
        """The document, or None when the file does not exist."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read the {self.kind} {self.path}: {exc.strerror}",
                              path=str(self.path)) from None
        try:
            outer = json.loads(raw)
            header = outer["header"]
            nonce, data = outer["nonce"], outer["data"]
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"{self.path} is not a sealed {self.kind} (damaged?): restore "
                              "it from a backup", path=str(self.path)) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT \
                or header.get("kind") != self.kind:
            raise ConfigError(f"{self.path} is not a sealed {self.kind}", path=str(self.path))
        if header.get("version") != _VERSION or header.get("cipher") != CIPHER:
            raise ConfigError(f"{self.path} is sealed in a format this trailgate does not "
                              f"know (version {header.get('version')}, "
                              f"{header.get('cipher')})", path=str(self.path))
        spec = self._spec_for(header)
        try:
            plain = AESGCM(spec.key).decrypt(_unb64(nonce, self.path), _unb64(data, self.path),
                                             _aad(header))
        except InvalidTag:
            raise ConfigError(
                f"cannot open the {self.kind} {self.path}: the key does not open it (a wrong "
                f"passphrase in {PASSPHRASE_ENV}?) or the file was changed",
                path=str(self.path)) from None
        self._spec = spec
        document = json.loads(plain)
        if not isinstance(document, dict):
            raise ConfigError(f"{self.path} holds no {self.kind}", path=str(self.path))
        return document

    def write(self, document: Mapping[str, Any]) -> None:
        """Seal ``document`` over the file (its key as before; a new file takes the
        passphrase when ``TRAILGATE_WALLET_PASSPHRASE`` is set, else the key file)."""
        if self._spec is None and self.path.exists():
            self.read()
        spec = self._spec or self._new_spec()
        self._spec = spec
        header: dict[str, object] = {"format": FORMAT, "version": _VERSION, "kind": self.kind,
                                     "cipher": CIPHER, **spec.header}
        nonce = os.urandom(12)
        data = AESGCM(spec.key).encrypt(nonce, json.dumps(document).encode(), _aad(header))
        text = json.dumps({"header": header, "nonce": _b64(nonce), "data": _b64(data)},
                          indent=1)
        _private_directory(self.path.parent)
        atomic_write_bytes(self.path, text.encode() + b"\n")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the file's lock (a read-modify-write, a conversion)."""
        _private_directory(self.path.parent)
        with exclusive_lock(self.path.with_name("." + self.path.name + ".lock"), 0o600):
            yield


def _private_directory(directory: Path) -> None:
    """``directory``, made if missing, readable by its owner only (GoldenGate's dircrd)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o077:
        os.chmod(directory, 0o700)


def _aad(header: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(header), sort_keys=True, separators=(",", ":")).encode()
