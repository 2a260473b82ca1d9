"""Shared by the Spark trail tests: one real local SparkSession and a trail-writing workload.

Import the fixture by its function name (``from spark_conftest import spark_session``); the
fixture itself is called ``spark``.  The session is stopped when the test run ends.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    Transaction,
    julian_from_unix_micros,
)
from trailgate.trail import TrailWriter
from trailgate.trail.records import encode_ddl_text
from trailgate.trail.release import TrailFormat

ORDERS = TableDef("PUBLIC", "ORDERS", [
    Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
    Column("customer", 1, ColumnKind.VARCHAR2, "text"),
    Column("amount", 2, ColumnKind.NUMBER, "numeric(10,2)"),
    Column("payload", 3, ColumnKind.RAW, "bytea"),
    Column("note", 4, ColumnKind.VARCHAR2, "text"),
], key=["id"])
CUSTOMERS = TableDef("PUBLIC", "CUSTOMERS", [
    Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
    Column("name", 1, ColumnKind.VARCHAR2, "varchar(40)"),
], key=["id"])
EMP = TableDef("HR", "EMP", [
    Column("empno", 0, ColumnKind.NUMBER, "NUMBER(6)", nullable=False),
    Column("ename", 1, ColumnKind.VARCHAR2, "VARCHAR2(30)"),
    Column("hired", 2, ColumnKind.DATE, "DATE"),
], key=["empno"])
TABLES = {t.qualified_name: t for t in (ORDERS, CUSTOMERS, EMP)}
BASE_TIME = 1_700_000_000_000_000  # unix microseconds


@pytest.fixture(scope="session", name="spark")
def spark_session() -> Iterator[object]:
    """The process's SparkSession (local[2]), stopped at the end of the run."""
    from trailgate.spark import get_spark, stop_spark

    spark = get_spark("trailgate-tests")
    yield spark
    stop_spark()


@dataclass
class Workload:
    """Transactions written to a trail, in order, with what a reader must see."""

    transactions: list[Transaction] = field(default_factory=list)
    ends: list[TrailPosition] = field(default_factory=list)

    def expected(self, change: Change) -> tuple:
        """(op, table, before, after, tokens) as the trail source shows a change."""
        table = TABLES.get(change.table)

        def image(values: dict[int, bytes | None] | None) -> dict[str, str | None] | None:
            if values is None:
                return None
            out = {}
            for index, value in values.items():
                col = next(c for c in table.columns if c.index == index)  # type: ignore[union-attr]
                out[col.name] = None if value is None else (
                    value.hex() if col.kind is ColumnKind.RAW else value.decode())
            return out

        if change.op is OpType.DDL:  # the marker text, and the fields read from it
            from trailgate.trail.ddl import ddl_fields

            return ("DDL", change.table, None,
                    {"text": change.text, **ddl_fields(change.text or "")}, change.tokens)
        return (change.op.label, change.table, image(change.before), image(change.after),
                change.tokens)


class ChangeMaker:
    """Deterministic, varied changes: every operation, NULLs, RAW bytes, tokens, big rows."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.next_id = 1
        self.tick = 0

    def _time(self) -> int:
        self.tick += 1
        return julian_from_unix_micros(BASE_TIME + self.tick * 1_000)

    def change(self) -> Change:
        rng = self.rng
        kind = rng.choices(["ins", "upd", "pk", "del", "cust", "emp"], [5, 3, 1, 2, 2, 1])[0]
        t = self._time()
        i = self.next_id
        self.next_id += 1
        if kind == "ins":
            return Change(OpType.INSERT, "PUBLIC.ORDERS", io_time=t, audit_pos=i * 7, after={
                0: str(i).encode(), 1: f"customer {i % 97} ünïcode".encode(),
                2: f"{i}.{i % 100:02d}".encode(), 3: bytes([i % 256, 0, 255, 16]),
                4: None if i % 3 else b"n" * rng.randint(2000, 6000),
            }, tokens={"TK-HOST": "db1", "TK-SEQ": str(i)})
        if kind == "upd":
            return Change(OpType.FIELD_COMP, "PUBLIC.ORDERS", io_time=t, after={
                0: str(i).encode(), 2: b"1.50", 4: None})
        if kind == "pk":
            return Change(OpType.PK_UPDATE, "PUBLIC.ORDERS", io_time=t,
                          before={0: str(i).encode()}, after={0: str(i + 1_000_000).encode(),
                                                               1: b"moved"})
        if kind == "del":
            return Change(OpType.DELETE, "PUBLIC.ORDERS", io_time=t, before={0: str(i).encode()})
        if kind == "cust":
            return Change(OpType.INSERT, "PUBLIC.CUSTOMERS", io_time=t,
                          after={0: str(i).encode(), 1: b"x" * rng.randint(2000, 8000)})
        return Change(OpType.INSERT, "HR.EMP", io_time=t, rowid="AAAR3sAAEAAAACXAAA",
                      after={0: str(i).encode(), 1: b"SCOTT", 2: b"2024-02-29:12:00:00"})

    def transaction(self, xid: str, csn: int, size: int | None = None) -> Transaction:
        n = size if size is not None else self.rng.choice([1, 1, 2, 3, 5, 8])
        return Transaction(xid, csn, [self.change() for _ in range(n)])


def special_transactions(maker: ChangeMaker, csn: int) -> list[Transaction]:
    """A DDL, a truncate, a LOB-sized value and a row too long for one record."""
    ddl = encode_ddl_text("ALTER TABLE hr.emp ADD (bonus NUMBER)", "HR", "EMP", "TABLE",
                          "ALTER")
    return [
        Transaction("ddl-1", csn, [Change(OpType.DDL, "HR.EMP", text=ddl)]),
        Transaction("trunc-1", csn + 1, [Change(OpType.TRUNCATE, "PUBLIC.CUSTOMERS")]),
        Transaction("lob-1", csn + 2, [Change(OpType.INSERT, "PUBLIC.ORDERS", after={
            0: b"900000001", 1: None, 2: b"0", 3: bytes(range(256)) * 300, 4: b"L" * 70_000})]),
        Transaction("wide-1", csn + 3, [Change(OpType.INSERT, "PUBLIC.CUSTOMERS", after={
            0: b"900000002", 1: "é".encode() * 20_000}), maker.change()]),
    ]


def write_workload(trail: Path, transactions: list[Transaction], workload: Workload,
                   *, megabytes: int = 1, format: TrailFormat | None = None,
                   encrypt: str | None = None, key_name: str | None = None) -> TrailWriter:
    """Write ``transactions`` to ``trail`` with a new writer (a new file), recording ends
    (``format``: a 12c+ release's instead of the 11.2 format; ``encrypt``: ENCRYPTTRAIL's
    cipher, the key in the ENCKEYS file of the trail directory's parent)."""
    writer = TrailWriter(trail, megabytes=megabytes, fsync=False, producer="TESTS",
                         format=format, encrypt=encrypt, key_name=key_name)
    for txn in transactions:
        workload.ends.append(writer.write_transaction(txn, TABLES))
        workload.transactions.append(txn)
    writer.flush()
    return writer


def crash_mid_transaction(trail: Path, txn: Transaction) -> None:
    """Write part of ``txn`` and stop as a crashed Extract would: no last record, file open."""
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="TESTS")
    writer.begin_transaction(txn.xid, txn.csn)
    for change in txn.changes:
        writer.add_change(change, TABLES.get(change.table))
    writer.flush()  # every record but the held-back last one reaches the file
    if writer._fd is not None:  # the process dies: the descriptor just goes away
        import os

        os.close(writer._fd)
