"""A Data Pump with RMTHOST over loopback, end to end on local Spark: a written trail pumped
to a collector (token, COMPRESS), the remote trail byte-equal to the Pump's own output and,
record for record, to a local Pump's, and a Replicat on the remote trail leaving its Delta
target equal to the source.  The trail is encrypted (ENCRYPTTRAIL): it travels and lands
encrypted, and the target's Replicat opens it with the key copied to its home."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest
from collector_support import running_collector, trail_bytes
from deltalake import DeltaTable
from replicat_support import Increments, replicat_home, write_trail
from spark_conftest import spark_session  # noqa: F401

from trailgate.collector.tokens import TOKEN_DOMAIN
from trailgate.db.connect import CredentialStore
from trailgate.errors import ConfigError
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.pump.config import load_pump_config
from trailgate.pump.group import run_pump
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.trail.keys import ENCKEYS_FILE, add_key
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import read_header

pytestmark = pytest.mark.spark

TOKEN = "s3cret-token"
#: what names the home or the file, or the time (and FileSize, which counts the header)
_VARYING = {"filename", "uri", "uri_history", "creation_time", "tokens", "offsets", "length",
            "file_size"}


def _pump_home(path: Path, rmthost: str, trail: str) -> Home:
    home = Home(path).create()
    home.add_group(GroupInfo("PUMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                             begin={"seqno": 0, "rba": 0}))
    home.add_trail("PUMP1", TrailInfo(trail, "RMTTRAIL", megabytes=1))
    home.param_file("PUMP1").write_text(
        f"EXTRACT pump1\n{rmthost}RMTTRAIL {trail}\nPASSTHRU\nTABLE public.*;\n")
    return home


def _args() -> argparse.Namespace:
    return argparse.Namespace(once=True, max_batches=None, trigger=None)


def _same_records(a: Path, b: Path) -> None:
    """Two trails with the same files, headers equal but for the homes' and files' names and
    the time, and the same bytes after each header."""
    ta, tb = TrailName(a), TrailName(b)
    assert ta.sequence_numbers() == tb.sequence_numbers()
    for seq in ta.sequence_numbers():
        ha, hb = read_header(ta.file(seq)), read_header(tb.file(seq))
        fa = {k: v for k, v in dataclasses.asdict(ha).items() if k not in _VARYING}
        fb = {k: v for k, v in dataclasses.asdict(hb).items() if k not in _VARYING}
        assert fa == fb
        assert (ha.file_size or 0) - ha.length == (hb.file_size or 0) - hb.length
        assert ta.file(seq).read_bytes()[ha.length:] == tb.file(seq).read_bytes()[hb.length:]


def test_remote_pump_to_collector_then_replicat(tmp_path: Path, spark: object) -> None:
    lake = tmp_path / "lake"
    target = replicat_home(tmp_path / "target", f"REPLICAT rep1\nTARGETDELTA {lake}\n"
                           "MAP public.*, TARGET lake.*;\n", checkpoint_table=None)
    CredentialStore(target.path).add("pumps", "collector", TOKEN, TOKEN_DOMAIN)
    work = Increments(seed=31)
    local = _pump_home(tmp_path / "local", "", str(tmp_path / "copy" / "rt"))
    key = add_key(local.path / ENCKEYS_FILE, "WIRE")
    keys = (local.path / ENCKEYS_FILE).read_bytes()
    for where in (target.path, tmp_path / "source", tmp_path / "copy"):
        where.mkdir(parents=True, exist_ok=True)
        (where / ENCKEYS_FILE).write_bytes(keys)
    with running_collector(target.path, token=TOKEN) as collector:
        home = _pump_home(tmp_path / "source", f"RMTHOST 127.0.0.1, PORT {collector.port}, "
                          f"TOKENALIAS pumps, COMPRESS\n", "./dirdat/rt")
        CredentialStore(home.path).add("pumps", "pump1", TOKEN, TOKEN_DOMAIN)
        txns = list(work.transactions(200))
        write_trail(home.dirdat / "aa", txns, encrypt="AES256", key_name="WIRE")
        write_trail(local.dirdat / "aa", txns, encrypt="AES256", key_name="WIRE")
        assert run_pump(home, "PUMP1", _args(), spark=spark) == 0
    assert run_pump(local, "PUMP1", _args(), spark=spark) == 0
    remote = target.dirdat / "rt"
    staging = home.path / "dirrmt" / "PUMP1" / "rt"
    assert trail_bytes(remote) == trail_bytes(staging)  # the Pump's output, byte for byte
    _same_records(remote, tmp_path / "copy" / "rt")  # what a local Pump writes
    header = read_header(TrailName(remote).file(0))
    assert header.filename == str(home.path / "dirdat" / "rt000000000")
    assert header.encryption is not None and header.encryption.key_name == "WIRE"
    assert not any(key.secret in data for data in trail_bytes(remote).values())
    ck = home.checkpoints.load("PUMP1", "EXTRACT")
    assert ck is not None and ck.write_trail == "./dirdat/rt"
    report = home.report_file("PUMP1").read_text()
    assert "RMTHOST:          127.0.0.1, PORT" in report and "token, COMPRESS zlib" in report
    assert run_replicat_group(target, "REP1", RunOptions(once=True), spark=spark) == 0
    rows = DeltaTable(str(lake / "lake" / "accounts")).to_pyarrow_table().to_pylist()
    assert {r["id"]: r["counter"] for r in rows} == work.expected_accounts()
    # the token is in no file of either side: not in a parameter file, report, ggserr.log,
    # checkpoint or trail, and the credential stores that hold it are sealed
    for path in [*home.path.rglob("*"), *target.path.rglob("*")]:
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_rmthost_options_are_checked_at_start(tmp_path: Path) -> None:
    cases = [("RMTHOST dr, MGRPORT 7809, PORT 7819\n", "not both"),
             ("RMTHOST dr\n", "give the collector's port"),
             ("RMTHOST dr, PORT 99999\n", "PORT 99999: expected a whole number"),
             ("RMTHOST dr, PORT 7819, CAFILE ca.pem\n", "are TLS files: add TLS"),
             ("RMTHOST dr, PORT 7819, TLS, CERTFILE c.pem\n", "CERTFILE and KEYFILE go"),
             ("RMTHOST dr, PORT 7819, ENCRYPT AES256\n", "unknown option ENCRYPT"),
             ("RMTHOST dr, PORT 7819, TOKENALIAS nope\n", "alias 'nope' does not exist")]
    for i, (rmthost, message) in enumerate(cases):
        home = _pump_home(tmp_path / str(i), rmthost, "./dirdat/rt")
        with pytest.raises(ConfigError, match=message):
            load_pump_config(home, "PUMP1")
