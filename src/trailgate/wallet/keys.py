"""Where the key that seals a home's credential store and master-key wallet comes from.

Two sources, chosen when a sealed file is first written and recorded in its header: a
random 256-bit key in a file only its owner may read (``dircrd/wallet.key``, or the file
``TRAILGATE_WALLET_KEY_FILE`` names), or a passphrase in the environment variable
``TRAILGATE_WALLET_PASSPHRASE``, stretched with scrypt.  A key file with a looser mode than
0600, or owned by someone else, is refused rather than trusted.  docs/security.md gives each
choice's threat model.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from trailgate.checkpoint import fsync_dir
from trailgate.errors import ConfigError

__all__ = [
    "KEY_BYTES",
    "KEY_FILE_ENV",
    "PASSPHRASE_ENV",
    "SCRYPT_N",
    "KeySpec",
    "derive_passphrase_key",
    "key_file_path",
    "key_id",
    "load_or_create_key_file",
    "read_key_file",
]

KEY_FILE_ENV = "TRAILGATE_WALLET_KEY_FILE"
PASSPHRASE_ENV = "TRAILGATE_WALLET_PASSPHRASE"
KEY_FILE_NAME = "wallet.key"
KEY_BYTES = 32  # AES-256
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 15, 8, 1  # 32 MiB and ~0.1 s per derivation
_KEY_FILE_HEADER = "trailgate-wallet-key-v1"
_derived: dict[tuple[bytes, bytes, int, int, int], bytes] = {}


@dataclass(frozen=True, slots=True)
class KeySpec:
    """A sealing key and how to find it again (what a sealed file's header records)."""

    header: dict[str, object]
    key: bytes = field(repr=False)


def key_file_path(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The wallet key file: ``$TRAILGATE_WALLET_KEY_FILE`` or ``<home>/dircrd/wallet.key``."""
    env = os.environ if environ is None else environ
    named = env.get(KEY_FILE_ENV)
    return Path(named).expanduser() if named else home / "dircrd" / KEY_FILE_NAME


def key_id(key: bytes) -> str:
    """A short fingerprint naming a key in headers and messages (never the key)."""
    return hashlib.sha256(b"trailgate wallet key id\0" + key).hexdigest()[:16]


def read_key_file(path: Path) -> bytes:
    """The key in ``path``, after checking that only its owner can read it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"the wallet key file {path} does not exist: restore it from your "
                          f"backup, or set {KEY_FILE_ENV} to where it is", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the wallet key file {path}: {exc.strerror}",
                          path=str(path)) from None
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise ConfigError(f"the wallet key file {path} has mode {mode:04o}: it must be readable "
                          f"only by its owner; run chmod 600 {path}", path=str(path))
    if info.st_uid != os.geteuid():
        raise ConfigError(f"the wallet key file {path} belongs to uid {info.st_uid}, not to "
                          f"this user (uid {os.geteuid()}): run trailgate as its owner",
                          path=str(path))
    try:
        text = path.read_text("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the wallet key file {path}: {exc}",
                          path=str(path)) from None
    head, _, body = text.strip().partition(" ")
    try:
        key = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if head != _KEY_FILE_HEADER or len(key) != KEY_BYTES:
        raise ConfigError(f"{path} is not a trailgate wallet key file (expected one line "
                          f"'{_KEY_FILE_HEADER} <base64 of {KEY_BYTES} bytes>')", path=str(path))
    return key


def load_or_create_key_file(path: Path) -> bytes:
    """The key in ``path``, made if the file does not exist: written whole (random, mode
    0600, fsynced) under a temporary name and linked into place, so a crash never leaves a
    partial key file and two processes starting at once end up with the same key."""
    if path.exists():
        return read_key_file(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = os.urandom(KEY_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(f"{_KEY_FILE_HEADER} {base64.b64encode(key).decode()}\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic, and never replaces a key another process made
        except FileExistsError:
            return read_key_file(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return key


def derive_passphrase_key(passphrase: str, salt: bytes, n: int = SCRYPT_N, r: int = SCRYPT_R,
                          p: int = SCRYPT_P) -> bytes:
    """scrypt(passphrase, salt): derived once per process for each salt."""
    if not passphrase:
        raise ConfigError(f"{PASSPHRASE_ENV} is set but empty: give it the wallet's passphrase")
    cache_key = (hashlib.sha256(passphrase.encode()).digest(), salt, n, r, p)
    key = _derived.get(cache_key)
    if key is None:
        key = Scrypt(salt=salt, length=KEY_BYTES, n=n, r=r, p=p).derive(passphrase.encode())
        _derived[cache_key] = key
    return key
