"""The 12c+ formats trailgate writes (FORMAT RELEASE 12.1-21.1, either byte order) read back
to the same changes as the 11.2 format; a trail converted 11.2 -> 21.1 -> 11.2 has the
original record bytes; readers start mid-file, writers resume; damage is reported cleanly."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_logdump_trails import TABLES, main_trail
from test_trail_roundtrip import _normalise, workloads

from trailgate.errors import TrailFormatError
from trailgate.model import Change, OpType, TableDef, TrailPosition, Transaction
from trailgate.sample import COURSE, STUDENT, seed_transactions
from trailgate.trail import DatabaseInfo, TrailReader, TrailWriter
from trailgate.trail.reader import record_bytes
from trailgate.trail.release import TrailFormat, parse_release, resolve_format
from trailgate.trail.release12 import encoder as encoder_module
from trailgate.trail.release12 import parse_record

FORMATS = [parse_release("12.1"), parse_release("12.2", "little"), parse_release("12.3"),
           parse_release("18.1"), parse_release("19.1"), parse_release("21.1", "little"),
           parse_release("21.1", "big")]
IDS = [f"{f.release}-{f.byte_order}" for f in FORMATS]


def changes_of(trail: Path) -> list[tuple[str, int, list[Change]]]:
    return [(rt.transaction.xid, rt.transaction.csn, list(rt.transaction.changes))
            for rt in TrailReader(trail).transactions()]


def copy_trail(source: Path, target: Path, fmt: TrailFormat | None, megabytes: int = 500,
               vendor: int = 7) -> None:
    """What a Data Pump does: every transaction read and written again, in ``fmt``."""
    with TrailWriter(target, format=fmt, megabytes=megabytes, fsync=False,
                     database=DatabaseInfo(vendor=vendor, name="NORTH"), producer="EX1") as w:
        for rt in TrailReader(source).transactions():
            txn = rt.transaction
            w.begin_transaction(txn.xid, txn.csn)
            for change, record in zip(txn.changes, rt.records, strict=True):
                w.add_change(change, record.table_def)
            w.commit_transaction()


def test_release_table_and_options():
    assert [(f.release, f.level, f.byte_order) for f in FORMATS[:2]] == [
        ("12.1", 4, "big"), ("12.2", 5, "little")]
    assert parse_release("21.3").release == "21.1" and parse_release("19.1.0").level == 7
    with pytest.raises(ValueError, match=r"trailgate writes releases 11\.2, 12\.1"):
        parse_release("23.4")
    with pytest.raises(ValueError, match=r"TRAILBYTEORDER needs FORMAT RELEASE 12\.1"):
        resolve_format(None, "LITTLEENDIAN")
    assert resolve_format("19.1", "LITTLEENDIAN") == TrailFormat("19.1", 7, "little")


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_every_kind_of_record_round_trips(tmp_path: Path, fmt: TrailFormat):
    """Seed 003's changes, user tokens, a PK update, LOB pieces, record fragments and DDL:
    the 12c+ trail reads back exactly what the 11.2 trail does."""
    original = main_trail(tmp_path / "seed")
    copy_trail(original.parent / "aa", tmp_path / "x" / "aa", fmt)
    assert changes_of(tmp_path / "x" / "aa") == changes_of(original.parent / "aa")
    header_level = TrailReader(tmp_path / "x" / "aa")
    list(header_level.raw_records())
    assert header_level.header is not None and header_level.header.compatibility == fmt.level


@pytest.mark.parametrize("fmt", [FORMATS[1], FORMATS[5]], ids=[IDS[1], IDS[5]])
@settings(max_examples=15, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(workload=workloads())
def test_random_workloads_round_trip(fmt: TrailFormat, workload):
    defs, txns = workload
    tables = {t.qualified_name: t for t in defs}
    with tempfile.TemporaryDirectory() as tmp:
        with TrailWriter(f"{tmp}/aa", megabytes=1, fsync=False, format=fmt) as writer:
            for txn in txns:
                writer.write_transaction(txn, tables)
        back = [rt.transaction for rt in TrailReader(f"{tmp}/aa").transactions()]
    assert [(t.xid, t.csn) for t in back] == [(t.xid, t.csn) for t in txns]
    for got, want in zip(back, txns, strict=True):
        assert list(got.changes) == [_normalise(c, tables[c.table]) for c in want.changes]


def test_converting_11_2_to_21_1_and_back_gives_the_original_record_bytes(tmp_path: Path):
    original = main_trail(tmp_path / "seed").parent / "aa"
    copy_trail(original, tmp_path / "r21" / "aa", parse_release("21.1", "little"))
    copy_trail(tmp_path / "r21" / "aa", tmp_path / "back" / "aa", None)
    assert record_bytes(tmp_path / "back" / "aa") == record_bytes(original)
    # and through a big-endian 12.2 trail as well
    copy_trail(original, tmp_path / "r12" / "aa", parse_release("12.2"))
    copy_trail(tmp_path / "r12" / "aa", tmp_path / "back2" / "aa", None)
    assert record_bytes(tmp_path / "back2" / "aa") == record_bytes(original)


def test_tables_with_the_same_definition_share_it_through_a_tdr_reference(tmp_path: Path):
    twin = dataclasses.replace(COURSE, name="COURSE2")
    tables = {t.qualified_name: t for t in (COURSE, twin)}
    row = {0: b"Oxford", 1: b"Law", 2: b"2013"}
    with TrailWriter(tmp_path / "aa", format=parse_release("21.1", "little"), fsync=False) as w:
        w.write_transaction(Transaction("1.1.1", 10, [
            Change(OpType.INSERT, "US03.COURSE", after=row),
            Change(OpType.INSERT, "US03.COURSE2", after=row)]), tables)
    data = (tmp_path / "aa000000000").read_bytes()
    kinds = []
    pos = data.index(b"G\x01")
    while pos < len(data):
        view = parse_record(data, pos, len(data))
        kinds.append((view.io_type, view.orig_node, view.tdr_index, view.name))
        pos += view.length
    assert kinds == [(170, 1, 0, None), (170, 2, 1, "US03.COURSE"), (5, 255, 1, None),
                     (170, 3, 1, "US03.COURSE2"),  # a reference to TDR 1, defining TDR 2
                     (5, 255, 2, None)]
    (txn,) = changes_of(tmp_path / "aa")
    assert [c.table for c in txn[2]] == ["US03.COURSE", "US03.COURSE2"]


def test_a_redefined_table_gets_a_new_tdr_index(tmp_path: Path):
    wider = dataclasses.replace(COURSE, columns=[*COURSE.columns, dataclasses.replace(
        COURSE.columns[0], name="NOTES", index=3)])
    with TrailWriter(tmp_path / "aa", format=parse_release("19.1"), fsync=False) as w:
        w.write_transaction(Transaction("1.1.1", 10, [
            Change(OpType.INSERT, "US03.COURSE", after={0: b"A", 1: b"B", 2: b"1"})]),
            {"US03.COURSE": COURSE})
        w.write_transaction(Transaction("1.1.2", 11, [
            Change(OpType.INSERT, "US03.COURSE", after={0: b"A", 1: b"C", 2: b"1", 3: b"x"})]),
            {"US03.COURSE": wider})
    records = [r for r in TrailReader(tmp_path / "aa").records() if r.change is not None]
    assert [len(r.table_def.columns) for r in records] == [3, 4]  # type: ignore[union-attr]


def test_postgresql_csn_is_written_as_an_lsn(tmp_path: Path):
    txn = Transaction("731", 0x0500BBF8, [Change(OpType.INSERT, "US03.COURSE",
                                                 after={0: b"A", 1: b"B", 2: b"1"})])
    with TrailWriter(tmp_path / "aa", format=parse_release("21.1", "little"), fsync=False,
                     database=DatabaseInfo(vendor=21)) as w:
        w.write_transaction(txn, {"US03.COURSE": COURSE})
    assert b"00000000/0500BBF8" in (tmp_path / "aa000000000").read_bytes()
    assert changes_of(tmp_path / "aa")[0][:2] == ("731", 0x0500BBF8)


def test_reading_from_the_middle_of_a_file_learns_the_tdrs_before(tmp_path: Path):
    fmt = parse_release("21.1", "little")
    with TrailWriter(tmp_path / "aa", format=fmt, fsync=False) as w:
        for txn in seed_transactions():
            w.write_transaction(txn, {STUDENT.qualified_name: STUDENT})
    whole = list(TrailReader(tmp_path / "aa").transactions())
    start = whole[3].start
    later = list(TrailReader(tmp_path / "aa", start=start).transactions())
    assert [t.transaction.changes for t in later] == [t.transaction.changes for t in whole[3:]]
    assert later[0].records[0].table_def == STUDENT


def test_a_resumed_writer_goes_on_with_the_files_tdr_indexes(tmp_path: Path):
    fmt = parse_release("12.2", "little")
    txns = seed_transactions()
    w = TrailWriter(tmp_path / "aa", format=fmt, fsync=False)
    w.write_transaction(txns[0], TABLES)
    w.write_transaction(Transaction("9.9.9", 99, [Change(OpType.INSERT, "US03.COURSE",
                                                         after={0: b"A", 1: b"B", 2: b"1"})]),
                        TABLES)
    position = w.suspend()
    encoder_module._remembered.clear()  # another process: the state is read from the file
    w2 = TrailWriter(tmp_path / "aa", format=fmt, fsync=False)
    w2.resume(position.seqno, position.rba, w.tables_in_file)
    for txn in txns[1:3]:
        w2.write_transaction(txn, TABLES)
    w2.close()
    got = changes_of(tmp_path / "aa")
    assert [x[0] for x in got] == [txns[0].xid, "9.9.9", txns[1].xid, txns[2].xid]
    data = (tmp_path / "aa000000000").read_bytes()
    assert data.count(b"US03.STUDENT\x00") == 1  # one TDR (its tail names the table): not twice


# -- damage: clean errors only ----------------------------------------------------------------

def _one_table_trail(tmp_path: Path, fmt: TrailFormat) -> Path:
    with TrailWriter(tmp_path / "aa", format=fmt, fsync=False) as w:
        for txn in seed_transactions()[:2]:
            w.write_transaction(txn, {STUDENT.qualified_name: STUDENT})
    return tmp_path / "aa000000000"


def test_an_unknown_tdr_index_names_the_file_and_rba(tmp_path: Path):
    path = _one_table_trail(tmp_path, parse_release("21.1", "little"))
    data = bytearray(path.read_bytes())
    first_row = next(pos for pos in _positions(bytes(data))
                     if parse_record(bytes(data), pos, len(data)).io_type == 5)
    data[first_row + 42 : first_row + 44] = (7).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=rf"at RBA {first_row}: .*TDR index 7"):
        list(TrailReader(tmp_path / "aa").records())


def test_an_insert_posing_as_a_unified_update_is_reported(tmp_path: Path):
    """An insert's columns where a unified update's two images belong (layout in
    docs/trail-format.md) do not add up: a clean error naming the file and RBA."""
    path = _one_table_trail(tmp_path, parse_release("19.1"))
    data = bytearray(path.read_bytes())
    row = next(p for p in _positions(bytes(data))
               if parse_record(bytes(data), p, len(data)).io_type == 5)
    data[row + 14] = 135
    path.write_bytes(bytes(data))
    with pytest.raises(TrailFormatError, match=r"aa000000000 at RBA \d+: column 0: "):
        list(TrailReader(tmp_path / "aa").records())


def _positions(data: bytes) -> list[int]:
    out, pos = [], data.index(b"G\x01")
    while pos < len(data):
        out.append(pos)
        pos += parse_record(data, pos, len(data)).length
    return out


def test_record_positions_are_those_of_the_file(tmp_path: Path):
    path = _one_table_trail(tmp_path, parse_release("21.1", "little"))
    reader = TrailReader(tmp_path / "aa")
    rbas = [pos.rba for pos, _raw in reader.raw_records()]
    assert rbas == _positions(path.read_bytes())
    assert reader.position == TrailPosition(0, path.stat().st_size)


def test_definitions_survive_in_the_tdr_exactly():
    from trailgate.trail.release12.definitions import decode_tdr, encode_tdr

    for table in (STUDENT, COURSE, *TABLES.values()):
        spec = decode_tdr(encode_tdr(table), table.qualified_name, "ORACLE")
        assert spec.definition == table
    with pytest.raises(ValueError, match="lists no columns"):  # a table trailgate knew nothing of
        decode_tdr(encode_tdr(TableDef("A", "B", []), exact=False), "A.B")


@pytest.mark.parametrize("fmt", [FORMATS[1], FORMATS[4], FORMATS[0]], ids=[IDS[1], IDS[4],
                                                                          IDS[0]])
def test_a_definition_longer_than_a_record_travels_in_fragments(tmp_path: Path,
                                                                fmt: TrailFormat):
    from trailgate.model import Column, ColumnKind

    cols = [Column(f"COLUMN_NUMBER_{i}", i, ColumnKind.VARCHAR2, "VARCHAR2(4000)", 4000)
            for i in range(700)]
    wide = TableDef("APP", "VERY_WIDE", cols, key=["COLUMN_NUMBER_0"])
    row = Change(OpType.INSERT, "APP.VERY_WIDE", after={0: b"1", 699: b"z"})
    with TrailWriter(tmp_path / "aa", format=fmt, fsync=False) as w:
        w.write_transaction(Transaction("1.1.1", 5, [row]), {"APP.VERY_WIDE": wide})
        w.write_transaction(Transaction("1.1.2", 6, [row]), {"APP.VERY_WIDE": wide})
    records = list(TrailReader(tmp_path / "aa").records())
    assert max(r.fragments for r in records) > 1  # the definition took several records
    assert [r.table_def for r in records if r.change is not None] == [wide, wide]
    second = list(TrailReader(tmp_path / "aa").transactions())[1]
    later = list(TrailReader(tmp_path / "aa", start=second.start).transactions())
    assert later[0].records[0].table_def == wide  # learnt from the fragments before
