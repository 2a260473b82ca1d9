"""``TrailWriter.add_run`` (changes already encoded, as the PostgreSQL Extract's fast path
sends them) writes the very bytes ``add_change`` writes: T area on each transaction's first
record, metadata records, TransInd, rollover at the same record, and fragments when a first
record with its T area no longer fits in one record."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TransInd
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import record_bytes
from trailgate.trail.records import encode_change_records, split_records
from trailgate.trail.writer import TrailWriter

T = TableDef("public", "t", [
    Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
    Column("c", 1, ColumnKind.CHAR, "character(4)", length=4),
    Column("v", 2, ColumnKind.VARCHAR2, "text"),
    Column("d", 3, ColumnKind.TIMESTAMP, "timestamp without time zone"),
], key=["id"], object_id=7)
U = TableDef("public", "u", [Column("id", 0, ColumnKind.NUMBER, "integer")], key=["id"])


def _change(rng: random.Random, n: int, io_time: int) -> Change:
    """A change; a transaction's changes share their io_time (its commit time)."""
    table = rng.choice(["public.t", "public.t", "public.u"])
    if table == "public.u":
        return Change(OpType.INSERT, table, after={0: str(n).encode()}, io_time=io_time,
                      audit_seq=n >> 8, audit_pos=n)
    size = rng.choice([3, 40, 2_000, 65_400])  # the last: no room left for a T area
    after = {0: str(n).encode(), 1: b"ab  ", 2: b"x" * size,
             3: b"2024-01-02:03:04:05.000000000"}
    op = rng.choice([OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE])
    if op is OpType.DELETE:
        return Change(op, table, before={0: str(n).encode()}, io_time=io_time,
                      audit_seq=n >> 8, audit_pos=n)
    return Change(op, table, after=after, io_time=io_time, audit_seq=n >> 8, audit_pos=n)


def _records(change: Change) -> list[bytes] | None:
    """The change as one fast-path record (no T area), or None if it needs fragments."""
    records = encode_change_records(change, T if change.table == "public.t" else U,
                                    TransInd.MIDDLE)
    return records if len(records) == 1 else None


def test_runs_write_the_bytes_changes_do(tmp_path: Path) -> None:
    rng = random.Random(3)
    tables = {"public.t": T, "public.u": U}
    slow = TrailWriter(tmp_path / "a" / "aa", megabytes=1)
    fast = TrailWriter(tmp_path / "b" / "aa", megabytes=1)
    n = 0
    for txn in range(120):
        changes = [_change(rng, n + i, 5_000 + txn) for i in range(rng.randint(1, 12))]
        n += len(changes)
        xid, csn = f"x{txn}", 1_000 + txn
        slow.begin_transaction(xid, csn)
        for change in changes:
            slow.add_change(change, tables[change.table])
        slow.commit_transaction()
        fast.begin_transaction(xid, csn)
        run: list[bytes] = []
        run_table, run_io = "", 0
        for change in changes:  # runs of one table, as the capture loop builds them
            records = _records(change)
            if (records is None or change.table != run_table) and run:
                fast.add_run(run, tables[run_table], run_table, run_io)
                run = []
            if records is None:
                fast.add_change(change, tables[change.table])
                continue
            run_table, run_io = change.table, change.io_time
            run.append(records[0])
        if run:
            fast.add_run(run, tables[run_table], run_table, run_io)
        fast.commit_transaction()
    slow.close()
    fast.close()
    files = TrailName(tmp_path / "a" / "aa").sequence_numbers()
    assert len(files) > 3  # several rollovers happened
    assert TrailName(tmp_path / "b" / "aa").sequence_numbers() == files
    assert record_bytes(tmp_path / "b" / "aa") == record_bytes(tmp_path / "a" / "aa")


def test_split_records_rejects_a_bad_blob() -> None:
    record = encode_change_records(Change(OpType.INSERT, "public.u", after={0: b"1"}), U)[0]
    assert split_records(record * 3) == [record] * 3
    for bad in (record[:-1], b"X" + record[1:], record + b"G\x01"):
        try:
            split_records(bad)
        except ValueError as exc:
            assert "packed records" in str(exc)
        else:
            raise AssertionError(f"accepted {bad[:8]!r}")


def test_split_run_gives_the_records_and_their_io_types() -> None:
    from trailgate.trail import _accel
    from trailgate.trail.records import IO_TYPE_OFFSET, split_run

    records = [encode_change_records(Change(op=op, table="S.T", after={0: b"v" * n}),
                                     None, TransInd.MIDDLE)[0]
               for op, n in ((OpType.INSERT, 3), (OpType.DELETE, 0), (OpType.FIELD_COMP, 9))]
    blob = b"".join(records * 2)
    got, types = split_run(blob)
    assert got == records * 2 == split_records(blob)
    assert types == bytes(r[IO_TYPE_OFFSET] for r in records * 2) == bytes([5, 3, 15] * 2)
    assert split_run(b"") == ([], b"")
    if _accel.speedups is not None:  # C declines what does not add up; Python says where
        assert _accel.speedups.split_records(blob[:-1]) is None
    with pytest.raises(ValueError, match="does not fit"):
        split_run(blob[:-1])


def test_write_only_writes_the_bytes_of_a_one_change_transaction(tmp_path: Path) -> None:
    """``write_only`` (a transaction of one encoded change in one call) writes what
    ``begin_transaction``, ``add_run``, ``commit_transaction`` write, or declines (a new
    file, a table the file has no definition of, no room, a record too long for its T
    area) and leaves the writer as it was for the general path."""
    rng = random.Random(5)
    tables = {"public.t": T, "public.u": U}
    slow = TrailWriter(tmp_path / "a" / "aa", megabytes=1)
    fast = TrailWriter(tmp_path / "b" / "aa", megabytes=1)
    took = declined = 0
    for txn in range(400):
        change = _change(rng, txn, 7_000 + txn)
        records = _records(change)
        table = tables[change.table]
        xid, csn = f"x{txn}", 2_000 + txn
        slow.begin_transaction(xid, csn)
        slow.add_change(change, table)
        slow.commit_transaction()
        if records is not None and fast.write_only(xid, csn, records[0], table,
                                                   change.table, change.io_time):
            took += 1
            assert fast.last_csn == csn and fast.position == slow.position
            continue
        declined += 1
        fast.begin_transaction(xid, csn)
        if records is None:
            fast.add_change(change, table)
        else:
            fast.add_run(records, table, change.table, change.io_time)
        fast.commit_transaction()
    one = encode_change_records(Change(OpType.INSERT, "public.u", after={0: b"1"}), U)[0]
    fast.begin_transaction("y", 1)  # inside an open transaction: declined, nothing written
    assert not fast.write_only("z", 2, one, U, "public.u", 0)
    fast.commit_transaction()
    slow.close()
    fast.close()
    assert took > 200 and declined > 10
    files = TrailName(tmp_path / "a" / "aa").sequence_numbers()
    assert len(files) > 3
    assert TrailName(tmp_path / "b" / "aa").sequence_numbers() == files
    assert record_bytes(tmp_path / "b" / "aa") == record_bytes(tmp_path / "a" / "aa")
