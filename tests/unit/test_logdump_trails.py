"""Trails the Logdump and annotated-dump tests read: seed 003's STUDENT changes, a second
table with user tokens and a PK update, a LONG value that travels as LOB pieces, a row that
needs record fragments, a DDL record, and a trail rolled over several files."""

from __future__ import annotations

from pathlib import Path

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.sample import STUDENT, _ts, seed_transactions
from trailgate.trail import DatabaseInfo, TrailReader, TrailWriter
from trailgate.trail.records import encode_ddl_text

__all__ = ["COURSE", "DOCS", "WIDE", "main_trail", "rolled_trail"]

COURSE = TableDef("US03", "COURSE", [
    Column("UNIVERSITY", 0, ColumnKind.VARCHAR2, "VARCHAR2(30)", 30),
    Column("SUBJECT", 1, ColumnKind.VARCHAR2, "VARCHAR2(30)", 30),
    Column("ENTRY_YEAR", 2, ColumnKind.NUMBER, "NUMBER", 22),
], key=["UNIVERSITY", "SUBJECT"])
DOCS = TableDef("US03", "DOCS", [
    Column("ID", 0, ColumnKind.NUMBER, "NUMBER", 22),
    Column("BODY", 1, ColumnKind.LONG, "LONG"),
], key=["ID"])
WIDE = TableDef("US03", "WIDE", [
    Column("ID", 0, ColumnKind.NUMBER, "NUMBER", 22),
    *[Column(f"C{i}", i, ColumnKind.VARCHAR2, "VARCHAR2(32000)", 32000) for i in (1, 2, 3)],
], key=["ID"])
TABLES = {t.qualified_name: t for t in (STUDENT, COURSE, DOCS, WIDE)}
LONG_BODY = bytes(ord("a") + i % 26 for i in range(70_000))  # > 65,531: LOB pieces
WIDE_ROW = {0: b"1", 1: b"x" * 30_000, 2: b"y" * 30_000, 3: b"z" * 30_000}  # > 65,535


def _writer(trail: Path, vendor: int = 7) -> TrailWriter:
    return TrailWriter(trail, database=DatabaseInfo(vendor=vendor, name="NORTH"),
                       producer="EX1", fsync=False)


def main_trail(directory: Path, vendor: int = 7) -> Path:
    """One file: seed 003's insert, update and delete, then COURSE (tokens, PK update),
    DOCS (LOB pieces), WIDE (fragments) and a DDL record. Returns the file's path."""
    when = _ts("04/02/2013 10:00:00")
    w = _writer(directory / "aa", vendor)
    for txn in seed_transactions()[:3]:
        w.write_transaction(txn, TABLES)
    w.write_transaction(Transaction("5.1.100", 1700000, [
        Change(OpType.INSERT, "US03.COURSE", after={0: b"Oxford", 1: b"Theology", 2: b"2013"},
               io_time=when, tokens={"HOST": "syshq", "GROUP": "EXTORA"}),
        Change(OpType.PK_UPDATE, "US03.COURSE", before={0: b"Oxford", 1: b"Theology"},
               after={0: b"Oxford", 1: b"Divinity"}, io_time=when),
    ]), TABLES)
    w.write_transaction(Transaction("5.2.101", 1700001, [
        Change(OpType.INSERT, "US03.DOCS", after={0: b"7", 1: LONG_BODY}, io_time=when),
    ]), TABLES)
    w.write_transaction(Transaction("5.3.102", 1700002, [
        Change(OpType.INSERT, "US03.WIDE", after=dict(WIDE_ROW), io_time=when),
    ]), TABLES)
    ddl = encode_ddl_text("ALTER TABLE US03.STUDENT ADD (NOTES VARCHAR2(100))", "US03",
                          "STUDENT", "TABLE", "ALTER")
    w.write_transaction(Transaction("5.4.103", 1700003, [
        Change(OpType.DDL, "US03.STUDENT", text=ddl, io_time=when),
    ]), TABLES)
    w.close()
    return directory / "aa000000000"


def rolled_trail(directory: Path) -> list[Path]:
    """Seed 003's transactions in files of about 1,500 bytes: several files."""
    w = _writer(directory / "bb")
    w.max_bytes = 1500
    for txn in seed_transactions():
        w.write_transaction(txn, TABLES)
    w.close()
    return sorted(directory.glob("bb*"))


def raw_records(path: Path) -> list:
    """The physical records of one file, as the codec's reader sees them."""
    return [raw for _pos, raw in TrailReader(path, single_file=True).raw_records()]


def test_main_trail_has_every_kind_of_record(tmp_path):
    kinds = {raw.io_type for raw in raw_records(main_trail(tmp_path))}
    assert {OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE, OpType.PK_UPDATE, OpType.LOB,
            OpType.RECORD_FRAGMENT, OpType.METADATA, OpType.DDL} <= kinds


def test_rolled_trail_spans_files(tmp_path):
    assert len(rolled_trail(tmp_path)) >= 3
