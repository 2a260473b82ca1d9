"""Seed 003's COURSE and STUDENT tables and its worked examples, as trailgate transactions.

Used by ``trailgate sample`` (the README's first command before the end-to-end demo), by the
tests that check trail bytes against the seed, and by the demo workload.  The values, ROWIDs,
commit SCNs, XIDs, redo positions and timestamps are the seed's own.
"""

from __future__ import annotations

import argparse
import calendar
import time
from pathlib import Path

from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    Transaction,
    julian_from_unix_micros,
)

__all__ = ["COURSE", "STUDENT", "add_arguments", "redo_position", "run", "seed_transactions"]


def _cols(spec: list[tuple[str, ColumnKind, str, int | None]]) -> list[Column]:
    return [
        Column(name=name, index=i, kind=kind, source_type=src, length=length, segcol=i + 1)
        for i, (name, kind, src, length) in enumerate(spec)
    ]


_V, _N = ColumnKind.VARCHAR2, ColumnKind.NUMBER
STUDENT = TableDef(
    schema="US03",
    name="STUDENT",
    columns=_cols([
        ("STUDENT_KEY", _N, "NUMBER", 22), ("FIRST_NAME", _V, "VARCHAR2(30)", 30),
        ("SURNAME", _V, "VARCHAR2(30)", 30), ("GENDER", _V, "VARCHAR2(1)", 1),
        ("UNIVERSITY", _V, "VARCHAR2(30)", 30), ("SUBJECT", _V, "VARCHAR2(30)", 30),
        ("ENTRY_YEAR", _N, "NUMBER", 22), ("TUITION_FEE", _N, "NUMBER", 22),
    ]),
    key=["STUDENT_KEY"],
    object_id=76490,
)
COURSE = TableDef(
    schema="US03",
    name="COURSE",
    columns=_cols([
        ("UNIVERSITY", _V, "VARCHAR2(30)", 30), ("SUBJECT", _V, "VARCHAR2(30)", 30),
        ("ENTRY_YEAR", _N, "NUMBER", 22),
    ]),
    key=["UNIVERSITY", "SUBJECT", "ENTRY_YEAR"],
)


def redo_position(seq: int, block: int, offset: int) -> tuple[int, int]:
    """(AuditRBA, AuditPos) for a redo RBA ``seq.block.offset`` (seed 001: block << 9)."""
    return seq, (block << 9) | offset


def _ts(text: str) -> int:
    """Julian microseconds for a redo timestamp ``MM/DD/YYYY HH:MI:SS`` (taken as UTC)."""
    seconds = calendar.timegm(time.strptime(text, "%m/%d/%Y %H:%M:%S"))
    return julian_from_unix_micros(seconds * 1_000_000)


def _row(key: int, first: str, surname: str, gender: str, uni: str, subject: str,
         year: int, fee: int) -> dict[int, bytes | None]:
    values = [str(key), first, surname, gender, uni, subject, str(year), str(fee)]
    return {i: v.encode("ascii") for i, v in enumerate(values)}


def _change(op: OpType, when: str, rba: tuple[int, int, int], rowid: str, *,
            after: dict[int, bytes | None] | None = None,
            before: dict[int, bytes | None] | None = None) -> Change:
    seq, pos = redo_position(*rba)
    return Change(op=op, table=STUDENT.qualified_name, after=after, before=before,
                  io_time=_ts(when), audit_seq=seq, audit_pos=pos,
                  rowid=f"AAASrPAAEAAAA{rowid}")


def seed_transactions() -> list[Transaction]:
    """Seed 003's examples, in commit order: insert, update, delete, multi-row update,
    multi-row delete, array insert, direct-load insert."""
    ins, upd, dele = OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE
    victoria = _row(1007, "Victoria", "Evans", "F", "Oxford", "Theology", 2013, 9000)
    katy = _row(1008, "Katy", "Pierce", "F", "Oxford", "Theology", 2013, 9000)
    shane = _row(1009, "Shane", "Thomas", "M", "Manchester", "Media Studies", 2013, 9000)
    t1, t2, t3 = "04/01/2013 05:14:37", "04/01/2013 09:49:28", "04/01/2013 11:38:17"
    t4 = "04/01/2013 18:04:53"
    return [
        Transaction("4.11.854", 1621215, [
            _change(ins, "03/31/2013 23:59:58", (0x44, 5, 0x10), "Q2AAK", after=_row(
                1011, "Jordan", "Sherwood", "M", "Manchester", "Chemistry", 2013, 9000)),
        ]),
        Transaction("3.6.1012", 1622900, [
            _change(upd, "04/01/2013 00:55:00", (0x45, 6, 0x10), "Q2AAJ",
                    after={0: b"1010", 7: b"6000"}),
        ]),
        Transaction("1.33.830", 1625893, [
            _change(dele, "04/01/2013 02:35:47", (0x46, 6, 0x10), "Q2AAD", before={0: b"1004"}),
        ]),
        Transaction("6.27.1204", 1630607, [
            _change(upd, t1, (0x47, 6, 0x10), "Q2AAG", after={0: b"1007", 7: b"7500"}),
            _change(upd, t1, (0x47, 7, 0x64), "Q2AAH", after={0: b"1008", 7: b"7500"}),
            _change(upd, t1, (0x47, 7, 0x18C), "Q2AAI", after={0: b"1009", 7: b"7500"}),
        ]),
        Transaction("3.23.1016", 1638367, [
            _change(dele, t2, (0x49, 7, 0x10), "Q2AAD", before={0: b"1007"}),
            _change(dele, t2, (0x49, 9, 0x10C), "Q2AAL", before={0: b"1008"}),
            _change(dele, t2, (0x49, 0xB, 0x1C), "Q2AAM", before={0: b"1009"}),
        ]),
        Transaction("7.13.846", 1641683, [
            _change(ins, t3, (0x4B, 5, 0x10), "Q2AAG", after=victoria),
            _change(ins, t3, (0x4B, 5, 0x10), "Q2AAH", after=katy),
            _change(ins, t3, (0x4B, 5, 0x10), "Q2AAI", after=shane),
        ]),
        Transaction("4.21.865", 1652769, [
            _change(ins, t4, (0x4D, 0xB, 0xB4), "RgAAA", after=victoria),
            _change(ins, t4, (0x4D, 0xB, 0xB4), "RgAAB", after=katy),
            _change(ins, t4, (0x4D, 0xB, 0xB4), "RgAAC", after=shane),
        ]),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trail", default=None,
                        help="trail to write (default: HOME/dirdat/ex)")
    parser.add_argument("--no-logdump", action="store_true",
                        help="only write the trail; do not show it in Logdump")


def run(args: argparse.Namespace) -> int:
    """Write seed 003's workload to a trail and show it in Logdump."""
    from trailgate.trail import DatabaseInfo, ProducerInfo, TrailWriter
    from trailgate.trail.header import VENDOR_ORACLE

    home = Path(args.home or ".")
    trail = Path(args.trail) if args.trail else home / "dirdat" / "ex"
    database = DatabaseInfo(vendor=VENDOR_ORACLE, name="NORTH", instance="NORTH", major=11,
                            minor=2, version_string="Oracle Database 11g Enterprise Edition "
                            "Release 11.2.0.3.0 - 64bit Production", client_version="11.2.0.3.0")
    tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
    with TrailWriter(trail, producer=ProducerInfo(name="EX1"), database=database,
                     home=home) as writer:
        first = writer.position
        for txn in seed_transactions():
            writer.write_transaction(txn, tables)
        end = writer.flush()
    path = writer.trail.file(first.seqno)
    print(f"Wrote seed 003's workload: 7 transactions, 15 changes to {path} "
          f"({end.rba} bytes).")
    if args.no_logdump:
        return 0
    from trailgate.logdump.cli import execute
    from trailgate.logdump.session import Session

    session = Session()
    try:
        for number, command in enumerate((f"OPEN {path}", "FILEHEADER ON", "GHDR ON",
                                           "DETAIL DATA", "NEXT 4", "COUNT"), start=1):
            print(f"\nLogdump {number} >{command}")
            execute(session, command)
    finally:
        session.close()
    return 0
