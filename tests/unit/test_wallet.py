"""The credential store and master-key wallet: sealed files, keys, conversion, versions."""

from __future__ import annotations

import json
import os
import pickle
import stat
from pathlib import Path

import pytest

from trailgate import checkpoint
from trailgate.errors import ConfigError
from trailgate.wallet import (
    KEY_FILE_ENV,
    PASSPHRASE_ENV,
    CredentialStore,
    MasterKeyWallet,
    key_file_path,
    master_key,
)
from trailgate.wallet import credentials as credentials_module

SECRET = "Sw0rdfish-7c1e"  # a password no other file of a test home could hold by chance


def _no_secret_in(directory: Path, secret: str = SECRET) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_store_is_sealed_with_an_owner_only_key_file(tmp_path: Path) -> None:
    from trailgate.home import Home

    assert stat.S_IMODE(Home(tmp_path).create().dircrd.stat().st_mode) == 0o700
    store = CredentialStore(tmp_path, environ={})
    assert store.create() and not store.create()
    store.add("src", "gg@db:5432/app", SECRET)
    store.add("console", "admin", "other", "Manager")
    assert store.get("src").password == SECRET
    assert [(c.domain, c.alias) for c in store.list()] == [("Manager", "console"),
                                                           ("OracleGoldenGate", "src")]
    assert SECRET not in repr(store.get("src"))
    key = key_file_path(tmp_path, {})
    assert key == tmp_path / "dircrd" / "wallet.key"
    for path in (key, store.path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    _no_secret_in(tmp_path)
    key.chmod(0o640)
    with pytest.raises(ConfigError, match=r"mode 0640: it must be readable only by its owner; "
                                          r"run chmod 600"):
        store.get("src")
    key.chmod(0o600)
    store.delete("src")
    with pytest.raises(ConfigError, match="alias 'src' does not exist"):
        store.get("src")


def test_a_key_file_elsewhere_a_wrong_key_and_a_changed_byte_are_refused(tmp_path: Path
                                                                         ) -> None:
    outside = tmp_path / "secrets" / "gg.key"
    env = {KEY_FILE_ENV: str(outside)}
    home = tmp_path / "gg"
    CredentialStore(home, env).add("src", "gg", SECRET)
    assert outside.exists() and not (home / "dircrd" / "wallet.key").exists()
    with pytest.raises(ConfigError, match=r"wallet key file .*wallet.key does not exist"):
        CredentialStore(home, {}).get("src")
    other = tmp_path / "other.key"
    CredentialStore(tmp_path / "gg2", {KEY_FILE_ENV: str(other)}).create()
    with pytest.raises(ConfigError, match="sealed with another wallet key than"):
        CredentialStore(home, {KEY_FILE_ENV: str(other)}).get("src")
    path = home / "dircrd" / "credentials.sealed"
    good = path.read_text()
    outer = json.loads(good)
    data = bytearray(outer["data"].encode())
    data[10] = ord("A") if data[10] != ord("A") else ord("B")
    path.write_text(json.dumps({**outer, "data": data.decode()}))
    with pytest.raises(ConfigError, match=r"the key does not open it .* or the file was changed"):
        CredentialStore(home, env).get("src")
    outer["header"]["kind"] = "master-key wallet"  # the header is authenticated too
    path.write_text(json.dumps(outer))
    with pytest.raises(ConfigError, match="is not a sealed credential store"):
        CredentialStore(home, env).get("src")
    path.write_text(good)
    assert CredentialStore(home, env).get("src").password == SECRET


def test_passphrase_store(tmp_path: Path) -> None:
    env = {PASSPHRASE_ENV: "correct horse battery staple"}
    store = CredentialStore(tmp_path, env)
    store.add("src", "gg", SECRET)
    assert not key_file_path(tmp_path, {}).exists()  # no key on disk at all
    header = json.loads(store.path.read_text())["header"]
    assert header["key"] == "passphrase" and header["kdf"] == "scrypt"
    assert CredentialStore(tmp_path, dict(env)).get("src").password == SECRET
    with pytest.raises(ConfigError, match=f"sealed with a passphrase: set {PASSPHRASE_ENV}"):
        CredentialStore(tmp_path, {}).get("src")
    with pytest.raises(ConfigError, match="the key does not open it"):
        CredentialStore(tmp_path, {PASSPHRASE_ENV: "wrong"}).get("src")
    _no_secret_in(tmp_path)


def _plaintext_home(tmp_path: Path) -> Path:
    """A credential store as an older trailgate wrote it (plain JSON, 0600)."""
    dircrd = tmp_path / "dircrd"
    dircrd.mkdir(mode=0o700)
    plain = dircrd / "credentials.json"
    plain.write_text(json.dumps({"OracleGoldenGate": {"src": {"userid": "gg",
                                                               "password": SECRET}},
                                 "Manager": {"console": {"userid": "admin",
                                                         "password": "adm1n"}}}))
    plain.chmod(0o600)
    return plain


def test_a_plaintext_store_is_converted_on_first_use(tmp_path: Path) -> None:
    plain = _plaintext_home(tmp_path)
    store = CredentialStore(tmp_path, {})
    assert store.get("src").password == SECRET
    assert not plain.exists() and store.path.exists()
    assert store.get("console", "Manager").password == "adm1n"
    _no_secret_in(tmp_path)


def test_a_crash_before_the_sealed_copy_is_in_place_keeps_the_plaintext(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _plaintext_home(tmp_path)

    def crash(*_args: object) -> None:
        raise KeyboardInterrupt("killed before the rename")

    monkeypatch.setattr(checkpoint.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        CredentialStore(tmp_path, {}).get("src")
    monkeypatch.undo()
    assert plain.exists() and not (tmp_path / "dircrd" / "credentials.sealed").exists()
    # a kill -9 would also leave the temporary (sealed, so secret-free) file behind
    (tmp_path / "dircrd" / ".tmp-credentials.sealed.x").write_text("partial")
    assert CredentialStore(tmp_path, {}).get("src").password == SECRET
    assert not plain.exists()


def test_a_crash_after_the_sealed_copy_is_durable_finishes_on_next_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _plaintext_home(tmp_path)
    real_unlink = os.unlink

    def crash(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith("credentials.json"):
            raise KeyboardInterrupt("killed before the plaintext was removed")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(credentials_module.os, "unlink", crash)
    with pytest.raises(KeyboardInterrupt):
        CredentialStore(tmp_path, {}).list()
    monkeypatch.undo()
    sealed = tmp_path / "dircrd" / "credentials.sealed"
    assert plain.exists() and sealed.exists()
    # an alias an older trailgate added meanwhile is kept; the sealed copy wins on a clash
    data = json.loads(plain.read_text())
    data["OracleGoldenGate"]["late"] = {"userid": "u", "password": "late-pw"}
    data["OracleGoldenGate"]["src"]["password"] = "stale"
    plain.write_text(json.dumps(data))
    store = CredentialStore(tmp_path, {})
    assert {c.alias: c.password for c in store.list()} == {"console": "adm1n",
                                                           "src": SECRET, "late": "late-pw"}
    assert not plain.exists()


def test_a_damaged_plaintext_store_is_a_clear_error(tmp_path: Path) -> None:
    plain = _plaintext_home(tmp_path)
    plain.write_text("{not json")
    with pytest.raises(ConfigError, match="plaintext credential store is not JSON"):
        CredentialStore(tmp_path, {}).list()
    assert plain.exists()


def test_master_key_versions(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no master-key wallet .*CREATE WALLET"):
        master_key(tmp_path, environ={})
    wallet = MasterKeyWallet(tmp_path, {})
    assert wallet.create() and not wallet.create()
    with pytest.raises(ConfigError, match="no master key: run OPEN WALLET and ADD MASTERKEY"):
        master_key(tmp_path, environ={})
    assert wallet.add() == 1
    with pytest.raises(ConfigError, match=r"already exists .*RENEW MASTERKEY"):
        wallet.add()
    first = master_key(tmp_path, environ={})
    assert (first.name, first.version, first.status, len(first.key)) == \
        ("OGG_DEFAULT_MASTERKEY", 1, "Current", 32)
    assert first.key.hex() not in repr(first)
    assert wallet.renew() == 2
    second = master_key(tmp_path, environ={})
    assert second.version == 2 and second.key != first.key
    assert master_key(tmp_path, 1, environ={}).key == first.key  # old trails stay readable
    wallet.mark([1], deleted=True)
    assert master_key(tmp_path, 1, environ={}).status == "Deleted"  # until PURGE WALLET
    assert [v.status for v in wallet.versions()] == ["Deleted", "Current"]
    assert wallet.purge() == [1]
    with pytest.raises(ConfigError, match="version 1 of Masterkey 'OGG_DEFAULT_MASTERKEY' is "
                                          "not in the wallet"):
        master_key(tmp_path, 1, environ={})
    wallet.mark([2], deleted=True)
    with pytest.raises(ConfigError, match=r"every version .* is marked for deletion: RENEW"):
        master_key(tmp_path, environ={})
    assert wallet.purge() == [2]
    with pytest.raises(ConfigError, match=r"every version .* was deleted and purged: RENEW"):
        master_key(tmp_path, environ={})
    assert wallet.renew() == 3  # a version number is never used twice
    assert master_key(tmp_path, environ={}).version == 3
    _no_secret_in(tmp_path, first.key.hex())


def test_a_passphrase_wallet_derives_its_key_once_per_command(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """scrypt is slow on purpose: a command that reads the wallet several times (DELETE
    MASTERKEY: the versions, the marks, the name) derives the key once, not per read."""
    from trailgate.wallet import sealed

    env = {PASSPHRASE_ENV: "correct horse battery staple"}
    MasterKeyWallet(tmp_path, env).create()
    MasterKeyWallet(tmp_path, env).add()
    MasterKeyWallet(tmp_path, env).renew()
    derived: list[bytes] = []
    real = sealed.derive_passphrase_key

    def counted(passphrase: str, salt: bytes, *costs: int) -> bytes:
        derived.append(salt)
        return real(passphrase, salt, *costs)

    monkeypatch.setattr(sealed, "derive_passphrase_key", counted)
    wallet = MasterKeyWallet(tmp_path, env)  # what one GGSCI command uses
    versions = [v.version for v in wallet.versions()]
    assert wallet.mark(versions[:1], deleted=True) == [1] and wallet.name()
    assert len(derived) == 1
    with pytest.raises(ConfigError, match="wrong passphrase"):
        MasterKeyWallet(tmp_path, {PASSPHRASE_ENV: "wrong"}).name()
    env[PASSPHRASE_ENV] = "wrong"  # the same object, asked with another passphrase
    with pytest.raises(ConfigError, match="wrong passphrase"):
        wallet.name()
    del env[PASSPHRASE_ENV]
    with pytest.raises(ConfigError, match="sealed with a passphrase"):
        wallet.name()


def test_a_groups_connection_string_names_the_alias_not_the_password(tmp_path: Path) -> None:
    """What a group pickles into Spark tasks holds no password: the connection opens it."""
    from psycopg.conninfo import conninfo_to_dict

    from trailgate.db.connect import alias_conninfo, describe, session_conninfo

    CredentialStore(tmp_path).add("src", "gg@db:5433/app", SECRET, "Prod")
    conninfo = alias_conninfo(tmp_path, "src", "Prod", "host=db2 sslmode=disable")
    assert SECRET not in conninfo and SECRET.encode() not in pickle.dumps(conninfo)
    assert describe(conninfo) == "gg@db:5433/app"
    opened = conninfo_to_dict(session_conninfo(conninfo))
    assert opened["password"] == SECRET and opened["sslmode"] == "disable"
    CredentialStore(tmp_path).add("src", "gg@db:5433/app", "rotated", "Prod")
    assert conninfo_to_dict(session_conninfo(conninfo))["password"] == "rotated"
    with pytest.raises(ConfigError, match="alias 'nope' does not exist in domain 'Prod'"):
        alias_conninfo(tmp_path, "nope", "Prod")


_CONVERT = """
import sys
from trailgate.wallet import CredentialStore
store = CredentialStore(sys.argv[1], {})
print("ready", flush=True)
sys.stdin.readline()
store.list()
print("done", flush=True)
"""


def test_kill9_during_conversion_never_loses_an_alias(tmp_path: Path) -> None:
    """A real kill -9 at random moments around the conversion: whatever is left, the
    aliases are readable in one place, and the next use finishes the job."""
    import random
    import signal
    import subprocess
    import sys
    import time

    rng = random.Random(22)
    expected = {"console": "adm1n", "src": SECRET}
    states = set()
    for attempt in range(12):
        home = tmp_path / f"h{attempt}"
        home.mkdir()
        plain = _plaintext_home(home)
        child = subprocess.Popen([sys.executable, "-c", _CONVERT, str(home)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(rng.uniform(0, 0.03))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        sealed = home / "dircrd" / "credentials.sealed"
        states.add((plain.exists(), sealed.exists()))
        assert plain.exists() or sealed.exists()
        if plain.exists():  # never half-written: the plaintext is only ever removed
            assert json.loads(plain.read_text())["OracleGoldenGate"]["src"]["password"] == SECRET
        store = CredentialStore(home, {})
        assert {c.alias: c.password for c in store.list()} == expected
        assert not plain.exists() and sealed.exists()
    assert (True, False) in states  # some kills came before the sealed copy was in place

