"""Encrypted trails (ENCRYPTTRAIL): the sealed records round-trip, every changed byte is
refused with file and RBA, a wrong or missing key is a clear error, keys rotate across
files, the plaintext never reaches the file, and Logdump shows records as encrypted unless
DECRYPT ON."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logdump_run import logdump_text
from test_logdump_trails import LONG_BODY, TABLES, WIDE_ROW, main_trail

from trailgate.cli import main as trailgate_main
from trailgate.errors import ConfigError, TrailFormatError, TrailKeyError
from trailgate.model import Change, OpType, Transaction
from trailgate.params.parser import parse_params_text
from trailgate.trail import TrailReader, TrailWriter, read_header, sealing
from trailgate.trail.header import decode_file_header
from trailgate.trail.keys import ENCKEYS_FILE, EncKeysFile, add_key
from trailgate.trail.naming import TrailName
from trailgate.trail.records import decode_record
from trailgate.trail.sealing import SEAL_OVERHEAD, RecordOpener, RecordSealer

SECRET = b"card-4111-1111-1111-1111"


def _txns(n: int = 3) -> list[Transaction]:
    return [Transaction(f"9.{i}.1", 500 + i, [Change(
        OpType.INSERT, "US03.COURSE", after={0: b"Oxford", 1: SECRET + b"-%d" % i, 2: b"1999"},
        io_time=212_000_000_000_000_000 + i, tokens={"TKN-HOST": "secret-host"})])
        for i in range(n)]


def _home(tmp: Path, name: str = "K1") -> Path:
    add_key(tmp / ENCKEYS_FILE, name)
    return tmp


def _write(home: Path, txns: list[Transaction], key: str | None = "K1",
           cipher: str = "AES256") -> Path:
    trail = home / "dirdat" / "ee"
    with TrailWriter(trail, encrypt=cipher, key_name=key, fsync=False) as w:
        for txn in txns:
            w.write_transaction(txn, TABLES)
    return trail


def _changes(trail: Path) -> list:
    return [(t.transaction.csn, t.transaction.xid, [(c.op, c.after, c.before, c.tokens)
                                                   for c in t.transaction.changes])
            for t in TrailReader(trail).transactions()]


@pytest.mark.parametrize("cipher", ["AES128", "AES192", "AES256"])
def test_round_trip_equals_the_plain_trail_and_no_value_is_in_the_file(tmp_path, cipher):
    home = _home(tmp_path)
    plain = main_trail(tmp_path / "plain")  # every kind of record: LOB, fragments, DDL
    txns = [t.transaction for t in TrailReader(plain).transactions()]
    enc = home / "dirdat" / "ee"
    with TrailWriter(enc, encrypt=cipher, key_name="K1", fsync=False) as w:
        for txn in [*txns, *_txns()]:
            w.write_transaction(txn, TABLES)
    expected = _changes(plain)
    got = _changes(enc)
    assert got[:len(expected)] == expected
    assert [c[2][0][1][1] for c in got[len(expected):]] == [SECRET + b"-%d" % i
                                                           for i in range(3)]
    data = enc.with_name("ee000000000").read_bytes()
    for value in (SECRET, b"secret-host", LONG_BODY[:40], WIDE_ROW[1][:40], b"Oxford"):
        assert value not in data
    assert b"US03.COURSE" in data  # table names stay readable, as GoldenGate's do
    header = decode_file_header(data)
    assert header.encryption is not None
    assert (header.encryption.cipher, header.encryption.key_name,
            header.encryption.key_version) == (cipher, "K1", 1)
    assert EncKeysFile(home / ENCKEYS_FILE).current("K1").secret not in data


def test_records_near_the_limit_are_split_to_make_room_for_the_seal(tmp_path):
    home = _home(tmp_path)
    row = {0: b"7", 1: b"a" * 32_000, 2: b"b" * 32_000, 3: b"c" * 1_400}  # one record, ~65.4k
    txn = Transaction("1.1.1", 9, [Change(OpType.INSERT, "US03.WIDE", after=row)])
    trail = _write(home, [txn])
    raws = list(TrailReader(trail).raw_records())
    assert all(r.length <= 0xFFFF for _, r in raws)
    assert [r.io_type for _, r in raws][-2:] == [OpType.INSERT, OpType.RECORD_FRAGMENT]
    assert _changes(trail)[0][2][0][1] == row


def test_sealing_is_deterministic_and_opening_keeps_the_length(tmp_path):
    key = add_key(tmp_path / ENCKEYS_FILE, "K")
    plain = main_trail(tmp_path / "p").with_name("aa000000000").read_bytes()
    header = decode_file_header(plain)
    sealer = RecordSealer("AES256", key)
    opener = RecordOpener(sealer.info, key)
    pos = header.length
    while pos < len(plain):
        length = (plain[pos + 2] << 8) | plain[pos + 3]
        record = plain[pos:pos + length]
        if length + SEAL_OVERHEAD <= 0xFFFF:
            sealed = sealer.seal(record)
            assert sealed == sealer.seal(record)  # a Pump passing it through: same bytes
            opened = opener.open(sealed, 0, len(sealed))
            assert opened is not None and len(opened) == len(sealed)
            a, b = decode_record(record, 0, length), decode_record(opened, 0, len(opened))
            assert (a.data, a.tokens, a.csn, a.xid, a.table) == (b.data, b.tokens, b.csn,
                                                                 b.xid, b.table)
            with pytest.raises(ValueError, match="encrypted"):
                decode_record(sealed, 0, len(sealed))  # never read as if it were plain
        pos += length


def test_every_changed_byte_of_an_encrypted_record_is_refused_with_file_and_rba(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(1))
    path = trail.with_name("ee000000000")
    good = path.read_bytes()
    records = list(TrailReader(trail).raw_records())
    data_rec = next(r for _, r in records if r.io_type == OpType.INSERT)
    rba, length = data_rec.rba, data_rec.length
    refused = 0
    for offset in range(length):
        bad = bytearray(good)
        bad[rba + offset] ^= 0x01
        path.write_bytes(bytes(bad))
        with pytest.raises(TrailFormatError) as info:
            _changes(trail)
        assert str(path) in str(info.value) and f"RBA {rba}" in str(info.value), offset
        refused += 1
    assert refused == length
    # the message says what happened (the tag region, the ciphertext, a header byte)
    bad = bytearray(good)
    bad[rba + length - 6] ^= 0x80  # inside the tag
    path.write_bytes(bytes(bad))
    with pytest.raises(TrailFormatError, match="authentication check"):
        _changes(trail)


def test_a_plain_record_slipped_into_an_encrypted_file_is_refused(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(1))
    path = trail.with_name("ee000000000")
    plain_trail = tmp_path / "p" / "pp"
    with TrailWriter(plain_trail, fsync=False) as w:
        w.write_transaction(_txns(1)[0], TABLES)
    plain = plain_trail.with_name("pp000000000").read_bytes()
    path.write_bytes(path.read_bytes() + plain[decode_file_header(plain).length:])
    with pytest.raises(TrailFormatError, match="in the clear"):
        _changes(trail)


def test_a_wrong_or_missing_key_is_a_clear_error(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(1))
    keys = home / ENCKEYS_FILE
    keys.write_text("K1 0x" + "11" * 32 + "\n")
    with pytest.raises(TrailKeyError) as info:
        _changes(trail)
    text = str(info.value)
    assert "K1 version 1" in text and "different key" in text and str(keys) in text
    assert "RBA 0" in text
    keys.unlink()
    with pytest.raises(TrailKeyError, match=r"not in the ENCKEYS file .*copy the writer's"):
        _changes(trail)
    with pytest.raises(ConfigError,
                       match=r"the key K9 of the ENCKEYS file .*trailgate keygen --name K9"):
        TrailWriter(home / "dirdat" / "ff", encrypt="AES256", key_name="K9")


def test_keys_rotate_new_files_use_the_new_key_old_files_keep_theirs(tmp_path):
    home = _home(tmp_path)
    trail = home / "dirdat" / "ee"
    txns = _txns(4)
    with TrailWriter(trail, encrypt="AES256", key_name="K1", fsync=False) as w:
        w.write_transaction(txns[0], TABLES)
        add_key(home / ENCKEYS_FILE, "K1")  # rotation while the writer runs
        w.write_transaction(txns[1], TABLES)  # same file: its own key
        w.start_file()
        w.write_transaction(txns[2], TABLES)  # a new file: the new key
    with TrailWriter(trail, encrypt="AES256", key_name="K1", fsync=False) as w:
        w.write_transaction(txns[3], TABLES)
    versions = [read_header(trail.with_name(f"ee00000000{i}")).encryption.key_version
                for i in range(3)]
    assert versions == [1, 2, 2]
    assert [c[0] for c in _changes(trail)] == [500, 501, 502, 503]
    assert EncKeysFile(home / ENCKEYS_FILE).names() == {"K1": 2}


def test_keygen_makes_an_owner_only_enckeys_file(tmp_path, capsys):
    assert trailgate_main(["--home", str(tmp_path), "keygen", "--name", "nightly"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / ENCKEYS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = EncKeysFile(path).current("NIGHTLY")
    assert key is not None and key.version == 1 and len(key.secret) == 32
    assert key.secret.hex().upper() not in out and key.fingerprint.hex() in out
    assert trailgate_main(["--home", str(tmp_path), "keygen", "--name", "NIGHTLY",
                           "--bits", "128"]) == 0
    assert EncKeysFile(path).names() == {"NIGHTLY": 2}


def test_enckeys_file_format_and_its_errors(tmp_path):
    path = tmp_path / ENCKEYS_FILE
    path.write_text("-- comment\n# another\nsuperkey 0x420E61BE7002D63560929CCA17A4E1FB\n"
                    'daily "Dailykey-long-enough!"\n')
    keys = EncKeysFile(path)
    assert keys.names() == {"SUPERKEY": 1, "DAILY": 1}
    assert keys.current("superkey").secret == bytes.fromhex("420E61BE7002D63560929CCA17A4E1FB")
    path.write_text("bad 0x1234\n")
    with pytest.raises(ConfigError, match=r"ENCKEYS, line 1: the value of key BAD"):
        EncKeysFile(path)


def test_encrypttrail_parameters(tmp_path):
    params = parse_params_text(
        "EXTRACT P1\nENCRYPTTRAIL AES192, KEYNAME mykey\nRMTHOST h, PORT 7809\n"
        "RMTTRAIL ./dirdat/bb\nNOENCRYPTTRAIL\nEXTTRAIL ./dirdat/cc\nENCRYPTTRAIL\n"
        "EXTTRAIL ./dirdat/dd\nDECRYPTTRAIL AES256\nTABLE a.*;\n", "p1.prm")
    assert {k: (v.cipher, v.key_name) for k, v in params.encrypt.items()} == {
        "./dirdat/bb": ("AES192", "MYKEY"), "./dirdat/dd": ("AES256", None)}
    assert params.decrypt is not None
    with pytest.raises(ConfigError, match="AES-GCM only"):
        parse_params_text("EXTRACT P\nENCRYPTTRAIL BLOWFISH\nEXTTRAIL ./dirdat/aa\n"
                          "TABLE a.*;\n", "p.prm")
    rep = parse_params_text("REPLICAT R\nDECRYPTTRAIL AES192, KEYNAME k\nTARGETDB x\n"
                            "MAP a.*, TARGET a.*;\n", "r.prm")
    assert rep.decrypt is not None and rep.decrypt.key_name == "K"


_logdump = logdump_text


def test_logdump_shows_encrypted_records_as_encrypted_unless_decrypt_on(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(2))
    path = trail.with_name("ee000000000")
    hidden = _logdump(path, "ghdr on", "detail data", "usertoken detail", "n", "n", "n")
    assert "Encrypted: data and user tokens (AES256-GCM, key K1 version 1" in hidden
    assert "Name: US03.COURSE" in hidden and "IOType     :     5" in hidden
    assert "card-4111" not in hidden and "secret-host" not in hidden
    shown = _logdump(path, "detail data", "usertoken detail", "decrypt on", "n", "n", "n")
    assert "card-4111-1111-1111-1111-0" in shown and "secret-host" in shown
    assert "Encrypted:" not in shown
    header = _logdump(path, "fileheader detail", "n")
    assert "KeyName" in header and "K1" in header
    # tampered: DECRYPT ON refuses it with the RBA, DECRYPT OFF still shows the header
    rec = next(r for _, r in TrailReader(trail).raw_records() if r.io_type == 5)
    rba = rec.rba
    bad = bytearray(path.read_bytes())
    bad[rba + rec.length - 30] ^= 0xFF  # in the ciphertext
    path.write_bytes(bytes(bad))
    refused = _logdump(path, "decrypt on", f"pos {rba}", "n")
    assert "authentication check" in refused and f"RBA {rba}" in refused
    assert "Encrypted:" in _logdump(path, "decrypt off", f"pos {rba}", "n")
    assert "this file is encrypted with key K1" in _logdump(
        path, "decrypt on keyname other", f"pos {rba}", "n")


def test_enckeys_readable_by_others_is_still_read(tmp_path):
    home = _home(tmp_path)
    os.chmod(home / ENCKEYS_FILE, 0o644)
    trail = _write(home, _txns(1))
    assert len(_changes(trail)) == 1


@pytest.mark.skipif(sealing._c is None, reason="the C sealer (_seal.c) was not compiled")
def test_c_sealer_and_opener_match_python_byte_for_byte(tmp_path, monkeypatch):
    key = add_key(tmp_path / ENCKEYS_FILE, "K")
    plain = main_trail(tmp_path / "p").with_name("aa000000000").read_bytes()
    start = decode_file_header(plain).length
    records, pos = [], start
    while pos < len(plain):
        length = (plain[pos + 2] << 8) | plain[pos + 3]
        if length + SEAL_OVERHEAD <= 0xFFFF:
            records.append(plain[pos:pos + length])
        pos += length
    for cipher in ("AES128", "AES192", "AES256"):
        sealer = RecordSealer(cipher, key)
        by_c = [sealer.seal(r) for r in records]
        blob = b"".join(by_c)
        opened_c = RecordOpener(sealer.info, key).open_run(blob, 0, len(blob))
        with monkeypatch.context() as m:
            m.setattr(sealing, "_c", None)
            assert [sealer.seal(r) for r in records] == by_c
            opened_py = RecordOpener(sealer.info, key).open_run(blob, 0, len(blob))
        assert opened_c == opened_py and opened_c[1:] == (len(blob), False)
        bad = bytearray(blob)
        bad[len(by_c[0]) + 40] ^= 1  # the second record
        opened, stop, failed = RecordOpener(sealer.info, key).open_run(bytes(bad), 0, len(bad))
        assert (stop, failed) == (len(by_c[0]), True) and opened == opened_c[0][:stop]


def test_trail_export_reads_an_encrypted_trail(tmp_path, capsys):
    home = _home(tmp_path)
    trail = _write(home, _txns(2))
    assert trailgate_main(["trail", "export", str(trail)]) == 0
    out = capsys.readouterr().out
    assert "card-4111-1111-1111-1111-1" in out and "secret-host" in out
    (home / ENCKEYS_FILE).unlink()
    assert trailgate_main(["trail", "export", str(trail)]) != 0
    err = capsys.readouterr().err
    assert "key K1 version 1" in err and "ee000000000 at RBA 0" in err


def test_a_trail_outside_the_home_is_read_with_the_running_groups_keys(tmp_path, monkeypatch):
    from trailgate.trail.keys import KEYS_HOME_ENV, use_home

    monkeypatch.setenv(KEYS_HOME_ENV, "")  # restored after the test
    group_home = _home(tmp_path / "home")
    trail = tmp_path / "mnt" / "dr" / "rt"  # its "home" /mnt has no ENCKEYS
    with TrailWriter(trail, encrypt="AES256", key_name="K1", home=group_home,
                     fsync=False) as w:
        w.write_transaction(_txns(1)[0], TABLES)
    with pytest.raises(TrailKeyError, match=str(tmp_path / "mnt" / ENCKEYS_FILE)):
        _changes(trail)
    use_home(group_home)
    assert len(_changes(trail)) == 1


def test_trail_dump_annotates_an_encrypted_record_without_opening_it(tmp_path, capsys):
    home = _home(tmp_path)
    trail = _write(home, _txns(1))
    assert trailgate_main(["trail", "dump", "--annotate",
                           str(trail.with_name("ee000000000"))]) == 0
    out = capsys.readouterr().out
    assert "Encrypted area" in out and "Nonce" in out and "Tag" in out
    assert "Object US03.COURSE" in out and "card-4111" not in out


@pytest.mark.heavy
@given(st.data())
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_encrypted_trails_give_only_trail_errors_and_never_other_values(tmp_path,
                                                                              data):
    """Random byte changes, insertions and cuts in an encrypted file: the reader either
    raises TrailFormatError or, when the change fell where nothing is read (a cut at a
    record boundary), gives a prefix of the original transactions — never changed values."""
    home = tmp_path / "fuzz"
    if not (home / ENCKEYS_FILE).exists():
        _home(home)
        _write(home, _txns(4))
    path = home / "dirdat" / "ee000000000"
    original = _ENC_BASE.setdefault(str(path), path.read_bytes())
    good = _changes_of(home, original)
    start = decode_file_header(original).length
    blob = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "insert", "cut"]))
        at = data.draw(st.integers(start, len(blob) - 1))
        if kind == "flip":
            blob[at] ^= data.draw(st.integers(1, 255))
        elif kind == "insert":
            blob[at:at] = data.draw(st.binary(min_size=1, max_size=40))
        else:
            del blob[at:]
            break
    try:
        got = _changes_of(home, bytes(blob))
    except TrailFormatError:
        return
    assert got == good[:len(got)]


_ENC_BASE: dict[str, bytes] = {}


def _changes_of(home: Path, data: bytes) -> list:
    path = home / "dirdat" / "ee000000000"
    path.write_bytes(data)
    return _changes(home / "dirdat" / "ee")


def test_a_master_key_source_plugs_in_for_encrypttrail_without_keyname(tmp_path):
    """The wallet's hook (trail.keys.set_master_key_source): ENCRYPTTRAIL without KEYNAME
    seals with the master key; readers find it by the name and version the header gives."""
    from trailgate.trail.keys import TrailKey, set_master_key_source

    versions = [TrailKey("OGG_DEFAULT_MASTERKEY", 1, b"m" * 32)]

    class Wallet:
        where = "the test wallet"

        def current(self, name):
            return versions[-1] if name in (None, "OGG_DEFAULT_MASTERKEY") else None

        def key_for(self, name, version):
            ok = name == "OGG_DEFAULT_MASTERKEY" and 0 < version <= len(versions)
            return versions[version - 1] if ok else None

    set_master_key_source(lambda home: Wallet())
    try:
        trail = _write(tmp_path, _txns(1), key=None)
        enc = read_header(trail.with_name("ee000000000")).encryption
        assert (enc.key_name, enc.key_version) == ("OGG_DEFAULT_MASTERKEY", 1)
        assert len(_changes(trail)) == 1
        versions.append(TrailKey("OGG_DEFAULT_MASTERKEY", 2, b"n" * 32))  # RENEW MASTERKEY
        _write(tmp_path, _txns(2)[1:], key=None)
        assert read_header(trail.with_name("ee000000001")).encryption.key_version == 2
        assert len(_changes(trail)) == 2  # the old file with version 1, the new with 2
    finally:
        set_master_key_source(None)
    with pytest.raises(TrailKeyError, match="OGG_DEFAULT_MASTERKEY version 1"):
        _changes(trail)


def fake_master_source(home):
    """A master-key factory named by TRAILGATE_MASTER_KEY_SOURCE (the test below)."""
    from trailgate.trail.keys import TrailKey

    class Source:
        where = "the environment's master key source"
        key = TrailKey("ENVMASTER", 1, b"e" * 32)

        def current(self, name):
            return self.key if name in (None, "ENVMASTER") else None

        def key_for(self, name, version):
            return self.key if (name, version) == ("ENVMASTER", 1) else None

    return Source()


def test_a_master_key_source_named_in_the_environment(tmp_path, monkeypatch):
    from trailgate.trail import keys

    monkeypatch.setenv(keys.MASTER_KEY_SOURCE_ENV, "test_trail_encryption:fake_master_source")
    keys._CACHE.clear()
    try:
        trail = _write(tmp_path, _txns(1), key=None)
        assert read_header(trail.with_name("ee000000000")).encryption.key_name == "ENVMASTER"
        assert len(_changes(trail)) == 1
        monkeypatch.setenv(keys.MASTER_KEY_SOURCE_ENV, "no_such_module:f")
        keys._CACHE.clear()
        with pytest.raises(ConfigError, match="TRAILGATE_MASTER_KEY_SOURCE=no_such_module"):
            _changes(trail)
    finally:
        keys._CACHE.clear()


def test_encrypttrail_without_keyname_uses_the_wallets_master_key(tmp_path, monkeypatch):
    """The home's master-key wallet (CREATE WALLET, ADD MASTERKEY, RENEW MASTERKEY): new
    files use the current version, each file names its own, all stay readable."""
    from trailgate.wallet import KEY_FILE_ENV, PASSPHRASE_ENV, MasterKeyWallet

    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)
    with pytest.raises(ConfigError, match=r"wallet's master key .*ADD MASTERKEY"):
        TrailWriter(tmp_path / "dirdat" / "ee", encrypt="AES256")
    wallet = MasterKeyWallet(tmp_path)
    wallet.create()
    wallet.add()
    trail = _write(tmp_path, _txns(1), key=None)
    wallet.renew()
    _write(tmp_path, _txns(2)[1:], key=None)
    names = [(e.key_name, e.key_version) for e in (
        read_header(trail.with_name(f"ee00000000{i}")).encryption for i in range(2))]
    assert names == [("OGG_DEFAULT_MASTERKEY", 1), ("OGG_DEFAULT_MASTERKEY", 2)]
    assert [c[0] for c in _changes(trail)] == [500, 501]
    data = trail.with_name("ee000000000").read_bytes()
    assert wallet.get(1).key not in data and SECRET not in data


def test_runs_of_encoded_records_are_sealed_once_across_a_rollover(tmp_path):
    """add_run (the Extract's packed rows): a run that fits is sealed as it is appended,
    one that crosses the file's size limit goes record by record — each sealed once."""
    from trailgate.trail.records import encode_row_record
    from trailgate.trail.values import encode_columns

    home = _home(tmp_path)
    table = TABLES["US03.COURSE"]
    records = [encode_row_record(OpType.INSERT, "US03.COURSE",
                                 encode_columns({0: b"U%d" % i, 1: b"s" * 200, 2: b"1"},
                                                None, None),
                                 212_000_000_000_000_000 + i, 0, 0, None, None)
               for i in range(9_000)]
    trail = home / "dirdat" / "ee"
    with TrailWriter(trail, encrypt="AES256", key_name="K1", megabytes=1, fsync=False) as w:
        for start in range(0, len(records), 3_000):
            w.begin_transaction(f"1.{start}.1", 700 + start)
            w.add_run(records[start:start + 3_000], table, "US03.COURSE", 0)
            w.commit_transaction()
    got = _changes(trail)
    assert [len(t[2]) for t in got] == [3_000] * 3
    assert got[2][2][-1][1][0] == b"U8999"
    assert len(TrailName(trail).sequence_numbers()) >= 2  # it rolled over


def test_logdump_save_of_an_encrypted_file_writes_the_records_opened(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(3))
    path = trail.with_name("ee000000000")
    saved = home / "dirdat" / "sv000000000"
    refused = _logdump(path, f"save {saved} 4 records")
    assert "DECRYPT ON first" in refused and not saved.exists()
    _logdump(path, "decrypt on", f"save {saved} 4 records")
    got = _changes(home / "dirdat" / "sv")
    inserts = [ch[1][1] for t in got for ch in t[2] if ch[0] == OpType.INSERT]
    assert inserts == [SECRET + b"-%d" % i for i in range(3)]
    assert read_header(saved).encryption is None


def test_an_encrypted_record_cut_by_a_crash_is_read_past_as_a_plain_one(tmp_path):
    home = _home(tmp_path)
    trail = _write(home, _txns(3))
    path = trail.with_name("ee000000000")
    last = [r for _, r in TrailReader(trail).raw_records()][-1]
    path.write_bytes(path.read_bytes()[:last.rba + last.length - 10])  # a crash mid-record
    assert [c[0] for c in _changes(trail)] == [500, 501]
    _write(home, _txns(4)[3:])  # the restarted writer's new file
    assert [c[0] for c in _changes(trail)] == [500, 501, 503]
