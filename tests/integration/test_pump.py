"""The Data Pump on local Spark: input trail → output trail (another directory), exactly
once across runs, TABLE filtering and renaming, headers mirroring the input."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from replicat_support import TABLES, Increments, tdef, write_trail
from spark_conftest import spark_session  # noqa: F401

from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import Change, OpType, Transaction
from trailgate.pump.batch import PumpBatch
from trailgate.pump.group import run_pump
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import read_header

pytestmark = pytest.mark.spark


def pump_home(path: Path, remote: Path, tables: str = "TABLE public.*;",
              extra: str = "PASSTHRU\n") -> Home:
    home = Home(path).create()
    home.add_group(GroupInfo("PUMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                             begin={"seqno": 0, "rba": 0}))
    home.add_trail("PUMP1", TrailInfo(str(remote / "rt"), "RMTTRAIL", megabytes=1))
    home.param_file("PUMP1").write_text(
        f"EXTRACT pump1\nRMTTRAIL {remote / 'rt'}\n{extra}"
        f"{tables}\n")
    return home


def args(**kw: object) -> argparse.Namespace:
    base = {"once": True, "max_batches": None, "trigger": None}
    base.update(kw)
    return argparse.Namespace(**base)


def count_batches(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Where the pump's micro-batches run (driver or Spark task), counted across runs."""
    seen = {"driver": 0, "task": 0}
    original = PumpBatch.__call__

    def counting(self: PumpBatch, df: object, batch_id: int) -> None:
        before = (self.driver_batches, self.task_batches)
        original(self, df, batch_id)
        seen["driver"] += self.driver_batches - before[0]
        seen["task"] += self.task_batches - before[1]

    monkeypatch.setattr(PumpBatch, "__call__", counting)
    return seen


def transactions(trail: Path) -> list[tuple]:
    return [(t.transaction.csn, t.transaction.xid,
             [(c.op, c.table, c.before, c.after) for c in t.transaction.changes])
            for t in TrailReader(trail).transactions()]


def test_pump_copies_exactly_once_with_uri_history(tmp_path: Path, spark: object,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote)
    seen = count_batches(monkeypatch)
    work = Increments(seed=11)
    write_trail(home.dirdat / "aa", work.transactions(120))
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
    write_trail(home.dirdat / "aa", work.transactions(40))
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0  # nothing new
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
    assert seen == {"driver": 1, "task": 1}  # the query's first batch in a task, then driver
    source = read_header(TrailName(home.dirdat / "aa").file(0))
    for seq in TrailName(remote / "rt").sequence_numbers():
        header = read_header(TrailName(remote / "rt").file(seq))
        assert header.uri_history == [*source.uri_history, source.uri]
        assert header.compatibility == source.compatibility
    ck = home.checkpoints.load("PUMP1", "EXTRACT")
    assert ck is not None and ck.read_position["seqno"] == 1
    assert ck.stats["public.accounts"].updates == sum(work.counters.values())


@pytest.mark.parametrize("case, extra, expected", [
    ("passthru", "PASSTHRU\n", ("AES256", "NIGHTLY")),
    ("decrypt", "DECRYPTTRAIL AES256\nPASSTHRU\n", None),
    pytest.param("rekey", "DECRYPTTRAIL\nENCRYPTTRAIL AES128, KEYNAME other\n",
                 ("AES128", "OTHER"), marks=pytest.mark.heavy),
])
def test_an_encrypted_input_passes_through_encrypted_unless_decrypttrail(
        tmp_path: Path, spark: object, case: str, extra: str,
        expected: tuple[str, str] | None) -> None:
    """PASSTHRU of an ENCRYPTTRAIL input: the output is encrypted with the input's key, the
    same record bytes; with DECRYPTTRAIL it is in the clear; with DECRYPTTRAIL and its own
    ENCRYPTTRAIL … KEYNAME it is sealed with that key.  Each reads back as the input."""
    from trailgate.trail.keys import ENCKEYS_FILE, add_key
    from trailgate.trail.reader import record_bytes

    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote, extra="")
    prm = home.param_file("PUMP1")  # ENCRYPTTRAIL goes before the RMTTRAIL it applies to
    prm.write_text(prm.read_text().replace("RMTTRAIL", extra + "RMTTRAIL", 1))
    for name in ("NIGHTLY", "OTHER"):
        add_key(home.path / ENCKEYS_FILE, name)
    # the output lies outside the pump's home, which has no ENCKEYS: the pump's keys serve
    with TrailWriter(home.dirdat / "aa", encrypt="AES256", key_name="NIGHTLY",
                     fsync=False) as writer:
        for txn in Increments(seed=5).transactions(30):
            writer.write_transaction(txn, TABLES)
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
    enc = read_header(TrailName(remote / "rt").file(0)).encryption
    assert (enc.cipher, enc.key_name) == expected if enc is not None else expected is None
    if case == "passthru":  # sealing is deterministic: the bytes it read
        assert record_bytes(remote / "rt") == record_bytes(home.dirdat / "aa")
    report = home.report_file("PUMP1").read_text()
    assert {"passthru": "Encryption:       as the input (an encrypted input stays encrypted",
            "decrypt": "Encryption:       none (DECRYPTTRAIL: written in the clear)",
            "rekey": "Encryption:       ENCRYPTTRAIL AES128-GCM, key OTHER"}[case] in report


def test_pump_filters_and_renames_tables(tmp_path: Path, spark: object,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote, tables="TABLE public.accounts, TARGET "
                     "dr.accounts;", extra="NOPASSTHRU\n")
    seen = count_batches(monkeypatch)
    work = Increments(seed=5)
    write_trail(home.dirdat / "aa", work.transactions(60))
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0  # in a Spark task
    write_trail(home.dirdat / "aa", work.transactions(30))
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0  # on the driver
    assert seen == {"driver": 1, "task": 1}
    want = []
    for csn, xid, changes in transactions(home.dirdat / "aa"):
        kept = [(op, "dr.accounts", b, a) for op, t, b, a in changes
                if t == "public.accounts"]
        if kept:
            want.append((csn, xid, kept))
    assert transactions(remote / "rt") == want
    reader = TrailReader(remote / "rt")
    list(reader.transactions())
    assert set(reader.tables) == {"dr.accounts"}


def test_output_mirrors_input_compatibility_and_rolls_on_change(tmp_path: Path,
                                                                spark: object) -> None:
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote)
    work = Increments(seed=2)
    from replicat_support import TABLES

    old = TrailWriter(home.dirdat / "aa", megabytes=1, fsync=False, compatibility=2,
                      uri_history=["uri:origin::gg"])
    for txn in work.transactions(20):
        old.write_transaction(txn, TABLES)
    old.close()
    write_trail(home.dirdat / "aa", work.transactions(20))  # a newer writer: level 3
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
    out = [read_header(TrailName(remote / "rt").file(s))
           for s in TrailName(remote / "rt").sequence_numbers()]
    inp = [read_header(TrailName(home.dirdat / "aa").file(s)) for s in (0, 1)]
    assert [h.compatibility for h in out] == [2, 3]
    assert out[0].uri_history == ["uri:origin::gg", inp[0].uri]
    assert out[1].uri_history == [inp[1].uri]


def test_pump_converts_11_2_to_21_1_and_back_to_the_same_record_bytes(tmp_path: Path,
                                                                      spark: object) -> None:
    """``RMTTRAIL …, FORMAT RELEASE 21.1``: the pump reads the 11.2 trail and writes a
    self-describing little-endian 21.1 one; a second pump (``FORMAT RELEASE 11.2``) reads
    that and writes the 11.2 format again: the data records are the original bytes."""
    from trailgate.trail.reader import record_bytes

    remote, back = tmp_path / "remote" / "dirdat", tmp_path / "back" / "dirdat"
    home = pump_home(tmp_path / "home", remote)
    home.param_file("PUMP1").write_text(
        f"EXTRACT pump1\nRMTTRAIL {remote / 'rt'}, FORMAT RELEASE 21.1, TRAILBYTEORDER "
        "LITTLEENDIAN\nTABLE public.*;\n")
    home.add_group(GroupInfo("PUMP2", "EXTRACT", "EXTTRAILSOURCE", str(remote / "rt"),
                             begin={"seqno": 0, "rba": 0}))
    home.add_trail("PUMP2", TrailInfo(str(back / "bk"), "RMTTRAIL", megabytes=1))
    home.param_file("PUMP2").write_text(
        f"EXTRACT pump2\nRMTTRAIL {back / 'bk'}, FORMAT RELEASE 11.2\nTABLE public.*;\n")
    write_trail(home.dirdat / "aa", Increments(seed=3).transactions(150))
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    header = read_header(TrailName(remote / "rt").file(0))
    assert header.compatibility == 7
    first = TrailName(remote / "rt").file(0).read_bytes()
    assert b"public.accounts\x00" in first  # a TDR (its tail names the table), the 12c+ way
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
    assert run_pump(home, "PUMP2", args(), spark=spark) == 0
    assert read_header(TrailName(back / "bk").file(0)).compatibility == 3
    assert record_bytes(back / "bk") == record_bytes(home.dirdat / "aa")


SEED = tdef("ggadmin.gg_heartbeat_seed", [
    ("remote_database", "text"), ("incoming_extract", "text"),
    ("heartbeat_timestamp", "timestamp with time zone"),
    ("incoming_extract_ts", "timestamp with time zone"), ("incoming_routing_path", "text"),
    ("incoming_routing_ts", "timestamp with time zone")],
    ["incoming_extract", "heartbeat_timestamp"])


def _with_heartbeats(work: Increments, n: int, every: int) -> Iterator[Transaction]:
    """``n`` transactions of ``work`` with an Extract's heartbeat after each ``every``."""
    for i, txn in enumerate(work.transactions(n), 1):
        yield txn
        if i % every == 0:
            work.csn += 1
            stamp = f"2026-11-25:10:00:{i % 60:02d}.000000000".encode()
            yield Transaction(f"0.{work.csn}.1", work.csn, [Change(
                OpType.INSERT, SEED.qualified_name, after={
                    0: b"src", 1: b"EXT1", 2: stamp, 3: stamp})])


def test_pump_stamps_heartbeats_whatever_its_tables_say(tmp_path: Path, spark: object) -> None:
    """The pump's hop on a real run: its TABLE names one table, GLOBALS the GGSCHEMA; each
    heartbeat passes, stamped with the pump's name and time, in the query's first batch
    (a Spark task) and in the next (the driver)."""
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote, tables="TABLE public.events;",
                     extra="NOPASSTHRU\n")
    home.globals_file.write_text("GGSCHEMA ggadmin\n")
    work = Increments(seed=3)
    tables = {**TABLES, SEED.qualified_name: SEED}
    for _run in range(2):
        writer = TrailWriter(home.dirdat / "aa", megabytes=1, fsync=False, producer="TESTS")
        for txn in _with_heartbeats(work, 30, 10):
            writer.write_transaction(txn, tables)
        writer.close()
        assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    beats_in = [c for _csn, _xid, cs in transactions(home.dirdat / "aa") for c in cs
                if c[1] == SEED.qualified_name]
    out = [c for _csn, _xid, cs in transactions(remote / "rt") for c in cs]
    assert {c[1] for c in out} <= {"public.events", SEED.qualified_name}
    beats_out = [c for c in out if c[1] == SEED.qualified_name]
    assert len(beats_out) == len(beats_in) == 6
    for (_op, _t, _b, before), (_op2, _t2, _b2, after) in zip(beats_in, beats_out,
                                                              strict=True):
        assert after[4] == b"PUMP1" and after[5].startswith(b"20")
        assert {k: after[k] for k in range(4)} == {k: before[k] for k in range(4)}


@pytest.mark.parametrize(("release", "order"), [
    ("21.1", "LITTLEENDIAN"), pytest.param("19.1", None, marks=pytest.mark.heavy)])
def test_pump_without_format_release_keeps_a_12c_input_format(tmp_path: Path, spark: object,
                                                             release: str,
                                                             order: str | None) -> None:
    """A Pump whose RMTTRAIL names no FORMAT RELEASE writes the format it reads: a 21.1
    little-endian or 19.1 big-endian input gives an output of the same CompatibilityLevel
    and byte order, with the same changes."""
    from trailgate.trail.release12 import parse_record

    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote)
    write_trail(home.dirdat / "aa", Increments(seed=6).transactions(40), release=release,
                byte_order=order)
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    out = TrailName(remote / "rt").file(0)
    header = read_header(out)
    assert header.compatibility == read_header(TrailName(home.dirdat / "aa").file(0)
                                               ).compatibility == 7
    data = out.read_bytes()
    first = parse_record(data, header.length, len(data))
    assert first.order == ("little" if order else "big")
    assert b"public.accounts\x00" in data  # still self-describing: a TDR names the table
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")


def test_pump_passing_a_real_goldengate_trail_through_keeps_its_tdrs(tmp_path: Path,
                                                                     spark: object) -> None:
    """Oracle's GoldenGate 12.2 sample trail (tests/fixtures/goldengate) through a Pump that
    writes the format it reads and the input's database details: TCUSTMER's TDR comes out
    as GoldenGate wrote it, byte for byte; TCUSTORD's, whose two binary NUMBER columns the
    Pump sends as text, keeps every other field and token; the changes are the input's."""
    from gg_areas import tdr_areas  # tests/unit's, on the path by conftest

    from trailgate.trail.release12.metabin import parse_tdr

    real = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote, tables="TABLE QASOURCE.*;")
    TrailName(home.dirdat / "aa").file(0).write_bytes(real.read_bytes())
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0

    out = TrailName(remote / "rt").file(0)
    assert read_header(out).database == read_header(real).database  # Oracle's, mirrored
    given, written = tdr_areas(real), tdr_areas(out)
    assert written["QASOURCE.TCUSTMER"] == given["QASOURCE.TCUSTMER"]
    ours, theirs = (parse_tdr(written["QASOURCE.TCUSTORD"]),
                    parse_tdr(given["QASOURCE.TCUSTORD"]))
    assert ours.columns[:4] == theirs.columns[:4] and ours.unknown == theirs.unknown
    assert transactions(remote / "rt") == transactions(home.dirdat / "aa")
