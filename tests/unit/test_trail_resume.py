"""TrailWriter.resume: one writer run spread over several processes appends to one file."""

from __future__ import annotations

import os

import pytest

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import TrailReader, TrailWriter, read_header

T1 = TableDef("public", "t1", [Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
                               Column("v", 1, ColumnKind.VARCHAR2, "text")], key=["id"])
T2 = TableDef("public", "t2", [Column("k", 0, ColumnKind.VARCHAR2, "text", nullable=False)],
              key=["k"])
TABLES = {t.qualified_name: t for t in (T1, T2)}


def _txn(n: int, table: TableDef = T1) -> Transaction:
    if table is T1:
        changes = [Change(OpType.INSERT, "public.t1", after={0: str(n).encode(), 1: b"x" * n},
                          io_time=1_000 + n)]
    else:
        changes = [Change(OpType.INSERT, "public.t2", after={0: f"k{n}".encode()},
                          io_time=1_000 + n)]
    return Transaction(f"x{n}", 100 + n, changes)


def _abandon(writer: TrailWriter) -> None:
    """The process ends after a flush: the descriptor goes away, the file stays open-ended."""
    writer.flush()
    assert writer._fd is not None
    os.close(writer._fd)


def test_resume_appends_to_the_same_file_without_repeating_definitions(tmp_path):
    trail = tmp_path / "aa"
    first = TrailWriter(trail, fsync=False)
    for n in range(3):
        first.write_transaction(_txn(n), TABLES)
    end = first.flush()
    state = (end.seqno, end.rba, first.tables_in_file, first.last_csn, first.last_io_time)
    assert first.suspend() == end

    second = TrailWriter(trail, fsync=False)
    second.resume(state[0], state[1], state[2], last_csn=state[3], last_io_time=state[4])
    assert second.position == end
    second.write_transaction(_txn(3), TABLES)  # t1 already defined in this file
    second.write_transaction(_txn(4, T2), TABLES)  # t2 is new
    second.close()

    assert [p.name for p in tmp_path.iterdir()] == ["aa000000000"]
    reader = TrailReader(trail)
    records = list(reader.records())
    metadata = [r.table_def.qualified_name for r in records if r.change is None]
    assert metadata == ["public.t1", "public.t2"]
    assert [t.transaction.xid for t in TrailReader(trail).transactions()] == [
        "x0", "x1", "x2", "x3", "x4"]
    header = read_header(trail.parent / "aa000000000")
    assert header.file_size == os.path.getsize(trail.parent / "aa000000000")
    assert header.last_csn == 104


def test_resume_refuses_a_file_of_another_length(tmp_path):
    trail = tmp_path / "aa"
    first = TrailWriter(trail, fsync=False)
    first.write_transaction(_txn(1), TABLES)
    end = first.flush()
    first.begin_transaction("partial", 999)  # a crash mid-transaction leaves more bytes
    first.add_change(_txn(2).changes[0], T1)
    first.add_change(_txn(3).changes[0], T1)
    _abandon(first)
    writer = TrailWriter(trail, fsync=False)
    with pytest.raises(ValueError, match="expected"):
        writer.resume(end.seqno, end.rba, TABLES)
    assert writer.position.seqno == 1  # so it starts a new file, as append mode says
    writer.write_transaction(_txn(5), TABLES)
    writer.close()
    with pytest.raises(RuntimeError):
        writer.begin_transaction("open", 1)
        writer.suspend()
    assert [t.transaction.xid for t in TrailReader(trail).transactions()] == ["x1", "x5"]
