"""Parquet change-log rows: operation, transaction, position, typed before/after images."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trailgate.apply import TrailChange
from trailgate.apply.changelog import change_log_rows, change_log_tables
from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    julian_from_unix_micros,
)

K = ColumnKind
STUDENT = TableDef("US03", "STUDENT", [
    Column("STUDENT_KEY", 0, K.NUMBER, "NUMBER(10)"),
    Column("NAME", 1, K.VARCHAR2, "VARCHAR2(30)"),
    Column("ENROLLED", 2, K.DATE, "DATE"),
    Column("FEE", 3, K.NUMBER, "NUMBER(8,2)"),
], ["STUDENT_KEY"])
T0 = julian_from_unix_micros(1_363_300_796_000_000)  # 2013-03-14 22:39:56 UTC


def tc(op: OpType, after=None, before=None, rba: int = 100, tokens=None) -> TrailChange:
    return TrailChange(Change(op, "US03.STUDENT", after, before, io_time=T0, audit_seq=6,
                              audit_pos=11498044, rowid="AAASrPAAEAAAAIPAAA", tokens=tokens),
                       5_000_001, "4.11.854", TrailPosition(3, rba), commit_time=T0,
                       trans_ind=0)


def test_rows_carry_operation_transaction_position_and_images() -> None:
    changes = [
        tc(OpType.INSERT, {0: b"1011", 1: b"Rebecca", 2: b"2013-03-14:22:39:56", 3: b"9000.5"},
           tokens={"who": "me"}),
        tc(OpType.FIELD_COMP, {0: b"1011", 1: None}, rba=300),
        tc(OpType.PK_UPDATE, {0: b"1012"}, {0: b"1011"}, rba=400),
        tc(OpType.DELETE, before={0: b"1012"}, rba=500),
    ]
    table = change_log_rows(changes, {"US03.STUDENT": STUDENT})
    rows = table.to_pylist()
    assert [r["op"] for r in rows] == ["INSERT", "FIELD_COMP", "PK_UPDATE", "DELETE"]
    first = rows[0]
    assert (first["csn"], first["xid"], first["seqno"], first["rba"]) == (5_000_001,
                                                                          "4.11.854", 3, 100)
    assert first["commit_time"] == dt.datetime(2013, 3, 14, 22, 39, 56, tzinfo=dt.UTC)
    assert first["after"] == {"STUDENT_KEY": 1011, "NAME": "Rebecca",
                              "ENROLLED": dt.datetime(2013, 3, 14, 22, 39, 56),
                              "FEE": Decimal("9000.50")}
    assert first["before"] is None and first["tokens"] == [("who", "me")]
    assert first["rowid"] == "AAASrPAAEAAAAIPAAA" and first["audit_pos"] == 11498044
    # a compressed update: NAME set to NULL, FEE absent (not NULL)
    assert rows[1]["after_columns"] == ["STUDENT_KEY", "NAME"]
    assert rows[1]["after"]["NAME"] is None and rows[1]["after"]["FEE"] is None
    assert rows[2]["before"]["STUDENT_KEY"] == 1011 and rows[2]["after"]["STUDENT_KEY"] == 1012
    assert rows[3]["after"] is None and rows[3]["before_columns"] == ["STUDENT_KEY"]
    assert table.schema.field("after").type == pa.struct([
        ("STUDENT_KEY", pa.int64()), ("NAME", pa.string()), ("ENROLLED", pa.timestamp("us")),
        ("FEE", pa.decimal128(8, 2))])


def test_rows_write_to_parquet(tmp_path) -> None:
    table = change_log_rows([tc(OpType.INSERT, {0: b"1", 1: b"x"})], STUDENT)
    pq.write_table(table, tmp_path / "part.parquet")
    back = pq.read_table(tmp_path / "part.parquet")
    assert back.to_pylist()[0]["after"]["NAME"] == "x"


def test_tables_per_source_table_and_errors() -> None:
    other = TrailChange(Change(OpType.TRUNCATE, "US03.COURSE"), 1, "x", TrailPosition(0, 1))
    defs = {"US03.STUDENT": STUDENT,
            "US03.COURSE": TableDef("US03", "COURSE", [Column("C", 0, K.NUMBER, "NUMBER")])}
    out = change_log_tables([tc(OpType.INSERT, {0: b"1"}), other], defs)
    assert set(out) == {"US03.STUDENT", "US03.COURSE"}
    assert out["US03.COURSE"].to_pylist()[0]["op"] == "TRUNCATE"
    with pytest.raises(ValueError, match="one table"):
        change_log_rows([tc(OpType.INSERT, {0: b"1"}), other], defs)
    with pytest.raises(Exception, match=r"no definition of US03\.STUDENT"):
        change_log_rows([tc(OpType.INSERT, {0: b"1"})], {})
