"""Trail encryption keys: the ENCKEYS file, and the key ring writers and readers ask.

A writer asks for the *current* key of a name (new files use it); a reader asks for the key
a file's header names, by name and version, checked against the header's fingerprint, so
old files stay readable after a newer key is added.  ENCKEYS is GoldenGate's (``NAME
0x<hex>`` lines); a name repeated has versions, the last current.  A master-key source
(the home's wallet, by default) stands beside it: ``ENCRYPTTRAIL`` without ``KEYNAME`` uses
its master key.  Keys never reach a trail, a report or a message.
"""

from __future__ import annotations

import hmac
import importlib
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from trailgate.errors import ConfigError, TrailKeyError

__all__ = [
    "DEFAULT_KEY_NAME",
    "ENCKEYS_ENV",
    "ENCKEYS_FILE",
    "MASTER_KEY_SOURCE_ENV",
    "EncKeysFile",
    "KeyRing",
    "KeySource",
    "TrailKey",
    "WalletMasterKey",
    "add_key",
    "enckeys_path",
    "home_of_trail",
    "keyring_for",
    "reader_keyring",
    "require_keys",
    "set_master_key_source",
    "use_home",
]

log = logging.getLogger("trailgate.trail")

ENCKEYS_FILE = "ENCKEYS"
#: An ENCKEYS file to use instead of the home's.
ENCKEYS_ENV = "TRAILGATE_ENCKEYS"
DEFAULT_KEY_NAME = "DEFAULT"
_NAME = re.compile(r"[A-Za-z0-9_#$.-]{1,64}\Z")
_HEX = re.compile(r"0[xX]([0-9A-Fa-f]+)\Z")


@dataclass(frozen=True, slots=True)
class TrailKey:
    """One version of a named key.  ``secret`` never appears in ``repr``."""

    name: str
    version: int
    secret: bytes = field(repr=False)

    @property
    def fingerprint(self) -> bytes:
        """8 bytes that identify the key (an HMAC of a fixed label): a file header carries
        them so a reader can tell a wrong key from a damaged record."""
        return hmac.digest(self.secret, b"trailgate trail key fingerprint", "sha256")[:8]


class KeySource(Protocol):
    """Where keys come from (an ENCKEYS file, the wallet's master key)."""

    @property
    def where(self) -> str:
        """Where the keys are kept, for messages."""
        ...

    def current(self, name: str | None) -> TrailKey | None:
        """The newest version of ``name`` (``None``: the source's default key)."""
        ...

    def key_for(self, name: str, version: int) -> TrailKey | None:
        """Version ``version`` of ``name``, or ``None`` when the source has no such key."""
        ...


class EncKeysFile:
    """An ENCKEYS file: ``NAME 0x<hex>`` (or ``NAME "text"``) lines, ``--``/``#`` comments."""

    def __init__(self, path: Path):
        self.path = path
        self._keys: dict[str, list[TrailKey]] = {}
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the ENCKEYS file: {exc}", path=str(path)) from None
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith(("--", "#")):
                continue
            parts = stripped.split(None, 1)
            if len(parts) != 2 or not _NAME.match(parts[0]):
                raise ConfigError("expected a key name and its value (NAME 0x<hex>)",
                                  path=str(path), line=number)
            name, value = parts[0].upper(), parts[1].strip()
            secret = _key_value(value)
            if secret is None:
                raise ConfigError(
                    f"the value of key {name} is not 0x followed by 32 to 128 hex digits "
                    "or a quoted string of 16 to 64 characters ('trailgate keygen' makes one)",
                    path=str(path), line=number)
            versions = self._keys.setdefault(name, [])
            versions.append(TrailKey(name, len(versions) + 1, secret))

    @property
    def where(self) -> str:
        return f"the ENCKEYS file {self.path}"

    @property
    def exists(self) -> bool:
        return bool(self._keys) or self.path.exists()

    def names(self) -> dict[str, int]:
        """Each key name and its number of versions."""
        return {name: len(v) for name, v in self._keys.items()}

    def current(self, name: str | None) -> TrailKey | None:
        versions = self._keys.get((name or DEFAULT_KEY_NAME).upper())
        return versions[-1] if versions else None

    def key_for(self, name: str, version: int) -> TrailKey | None:
        versions = self._keys.get(name.upper(), [])
        return versions[version - 1] if 0 < version <= len(versions) else None


def _key_value(text: str) -> bytes | None:
    match = _HEX.match(text)
    if match:
        digits = match.group(1)
        if len(digits) % 2 or not 32 <= len(digits) <= 128:
            return None
        return bytes.fromhex(digits)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        raw = text[1:-1].encode("utf-8")
        return raw if 16 <= len(raw) <= 64 else None
    return None


class WalletMasterKey:
    """The home's master-key wallet (``trailgate.wallet``, ``ADD``/``RENEW MASTERKEY``) as a
    key source: ``ENCRYPTTRAIL`` without ``KEYNAME`` seals with its current version, and a
    file names the version a reader asks it for."""

    def __init__(self, home: Path):
        # imported here: the wallet needs the cryptography package, which a reader of
        # plain trails (Logdump, Spark's workers) never loads
        from trailgate.wallet import DEFAULT_MASTERKEY_NAME, MasterKeyWallet

        self.wallet = MasterKeyWallet(home)
        self.name = DEFAULT_MASTERKEY_NAME

    @property
    def where(self) -> str:
        return f"the master-key wallet {self.wallet.path}"

    def current(self, name: str | None) -> TrailKey | None:
        if (name is not None and name.upper() != self.name) or not self.wallet.exists():
            return None
        key = self.wallet.get()  # a ConfigError says what to run (no key, all deleted)
        return TrailKey(key.name, key.version, key.key)

    def key_for(self, name: str, version: int) -> TrailKey | None:
        if name.upper() != self.name or not self.wallet.exists():
            return None
        try:
            key = self.wallet.get(version)
        except ConfigError:
            return None  # purged, or never made: the reader names the file and the version
        return TrailKey(key.name, key.version, key.key)


#: A master-key source for ENCRYPTTRAIL without KEYNAME, made for a home (None: none there).
MasterKeyFactory = Callable[[Path | None], KeySource | None]


def _wallet_source(home: Path | None) -> KeySource | None:
    return WalletMasterKey(home) if home is not None else None


_master_factory: MasterKeyFactory | None = _wallet_source


#: ``module:function`` of a :data:`MasterKeyFactory`, for processes that cannot be handed
#: one (Spark's Python workers inherit the environment, not the driver's calls).
MASTER_KEY_SOURCE_ENV = "TRAILGATE_MASTER_KEY_SOURCE"


def _master_for(home: Path | None) -> KeySource | None:
    factory = _master_factory
    named = os.environ.get(MASTER_KEY_SOURCE_ENV)
    if named and factory is _wallet_source:
        module, _, function = named.partition(":")
        try:
            factory = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{MASTER_KEY_SOURCE_ENV}={named}: not a module:function "
                              f"trailgate can import ({exc})") from None
    return factory(home) if factory is not None else None


def set_master_key_source(factory: MasterKeyFactory | None) -> None:
    """Plug in another master-key source (the default is the home's wallet,
    :class:`WalletMasterKey`): called with the home (or ``None``), it returns a
    :class:`KeySource` whose ``current(None)`` is the master key, or ``None`` when the home
    has none; ``None`` puts the wallet back.  Without a master key, the ENCKEYS key
    ``DEFAULT`` stands in for it."""
    global _master_factory
    _master_factory = factory if factory is not None else _wallet_source
    _CACHE.clear()


class KeyRing:
    """The keys a process may use: the master-key source, if any, then the ENCKEYS file."""

    def __init__(self, enckeys: EncKeysFile, master: KeySource | None = None,
                 also: tuple[KeySource, ...] = ()):
        self.enckeys = enckeys
        self.master = master
        self.also = also  # where a reader looks next (the running group's home)

    def _sources(self) -> list[KeySource]:
        return [s for s in (self.master, self.enckeys, *self.also) if s is not None]

    def current(self, name: str | None) -> TrailKey:
        """The key new files are written with: ``name``'s newest version, or (``None``) the
        master key, else the ENCKEYS key ``DEFAULT``.  ``ConfigError`` when there is none."""
        if self.master is not None:  # the master key, or a key of the wallet by name
            key = self.master.current(name)
            if key is not None:
                return key
        key = self.enckeys.current(name)
        if key is None:
            wanted = (name or DEFAULT_KEY_NAME).upper()
            master = ("without KEYNAME it uses the wallet's master key (OPEN WALLET and ADD "
                      "MASTERKEY in GGSCI), else " if name is None else "")
            raise ConfigError(
                f"ENCRYPTTRAIL: {master}the key {wanted} of {self.enckeys.where}, which has "
                f"none: make one with 'trailgate keygen --name {wanted}' (or add a line "
                f"'{wanted} 0x<hex>'), or set {ENCKEYS_ENV} to the ENCKEYS file that has it")
        return key

    def key_for(self, name: str, version: int, fingerprint: bytes, *, path: str,
                rba: int = 0) -> TrailKey:
        """The key a file header names, checked against its fingerprint; else
        ``TrailKeyError`` naming the file, the key and where to put it."""
        found = None
        for source in self._sources():
            key = source.key_for(name, version)
            if key is not None:
                found = key
                if key.fingerprint == fingerprint:
                    return key
        places = " or ".join(s.where for s in self._sources()  # a wallet: its own name only
                             if getattr(s, "name", name.upper()) == name.upper())
        if found is not None:
            raise TrailKeyError(
                f"the file was encrypted with key {name} version {version} (fingerprint "
                f"{fingerprint.hex()}), but {places} has a different key under that name and "
                f"version (fingerprint {found.fingerprint.hex()}); copy the ENCKEYS file "
                "from the writer's home", path=path, rba=rba)
        raise TrailKeyError(
            f"the file is encrypted with key {name} version {version} (fingerprint "
            f"{fingerprint.hex()}), which is not in {places}; copy the writer's ENCKEYS "
            f"file to {self.enckeys.path} (or set {ENCKEYS_ENV} to it), keeping every "
            "version of the key", path=path, rba=rba)


def enckeys_path(home: Path | None) -> Path:
    """The ENCKEYS file a home uses: ``$TRAILGATE_ENCKEYS``, else ``HOME/ENCKEYS``."""
    env = os.environ.get(ENCKEYS_ENV)
    if env:
        return Path(env)
    if home is None:
        env_home = os.environ.get("TRAILGATE_HOME")
        home = Path(env_home) if env_home else Path.cwd()
    return home / ENCKEYS_FILE


_CACHE: dict[tuple[str, int, int, str], KeyRing] = {}


def keyring_for(home: Path | None) -> KeyRing:
    """The key ring of ``home`` (re-read when its ENCKEYS file changes)."""
    path = enckeys_path(home)
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        if st.st_mode & 0o077:
            log.warning("%s can be read by other users; 'chmod 600' it", path)
    except OSError:
        stamp = (0, -1)
    cache_key = (str(path), *stamp, str(home))
    ring = _CACHE.get(cache_key)
    if ring is None:
        master = _master_for(home)
        ring = KeyRing(EncKeysFile(path), master)
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[cache_key] = ring
    return ring


#: The home of the group this process runs (and its Spark workers, which inherit it).
KEYS_HOME_ENV = "TRAILGATE_KEYS_HOME"


def use_home(home: Path) -> None:
    """Make ``home``'s ENCKEYS a place this process's readers look for keys, after the
    trail's own home: a group reading a trail kept outside its home (RMTTRAIL /mnt/dr/…)
    reads it with its own keys, as GoldenGate's processes use their installation's."""
    os.environ[KEYS_HOME_ENV] = str(Path(home).absolute())


def reader_keyring(trail_dir: Path) -> KeyRing:
    """The keys a reader of a trail in ``trail_dir`` may use: those of the trail's home,
    then those of the running group's home (:func:`use_home`)."""
    ring = keyring_for(home_of_trail(trail_dir))
    other = os.environ.get(KEYS_HOME_ENV)
    if other:
        extra = keyring_for(Path(other))
        if extra.enckeys.path != ring.enckeys.path:
            return KeyRing(ring.enckeys, ring.master, (extra.enckeys,))
    return ring


def home_of_trail(trail_dir: Path) -> Path:
    """The home a trail directory belongs to: ``HOME/dirdat`` → ``HOME``; a directory
    elsewhere is its own parent's (GoldenGate keeps ENCKEYS in the installation)."""
    return trail_dir.absolute().parent


def require_keys(home: Path, crypts: Iterable[object]) -> None:
    """Check at a group's start that each ENCRYPTTRAIL's key is there (``crypts``: the
    parameter file's TrailCrypt values); a ConfigError says how to make a missing one."""
    for crypt in crypts:
        keyring_for(home).current(getattr(crypt, "key_name", None))


def add_key(path: Path, name: str, bits: int = 256) -> TrailKey:
    """Append a new random key (a new version of ``name`` when it exists) to the ENCKEYS
    file at ``path``, created readable only by its owner.  Returns the new key."""
    if not _NAME.match(name):
        raise ConfigError(f"invalid key name {name!r}: use letters, digits and _ # $ . -")
    if bits not in (128, 192, 256):
        raise ConfigError(f"key length {bits}: use 128, 192 or 256 bits")
    existing = EncKeysFile(path)  # refuses a damaged file before adding to it
    secret = secrets.token_bytes(bits // 8)
    line = f"{name.upper()} 0x{secret.hex().upper()}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_bytes() if path.exists() else (
        b"-- trailgate ENCKEYS: NAME 0x<hex>; a name repeated is a newer version of the key\n")
    if old and not old.endswith(b"\n"):
        old += b"\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, old + line.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    os.chmod(path, 0o600)
    _CACHE.clear()
    version = existing.names().get(name.upper(), 0) + 1
    return TrailKey(name.upper(), version, secret)
