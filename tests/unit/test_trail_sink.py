"""The trail sink's writer without Spark: change rows round trip, one file per run, resume
across micro-batches, and replayed batches after a crash skipped by (CSN, XID)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trailgate.changes.change_rows import (
    ChangeColumns,
    ChangeRowBuilder,
    ColumnRowBuilder,
    iter_change_rows,
    tabledef_from_json,
    tabledef_to_json,
)
from trailgate.checkpoint import CheckpointStore
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.spark.trail_sink import (
    SinkOptions,
    TrailCommitMessage,
    commit_checkpoint,
    finish_run,
    write_change_batches,
)
from trailgate.spark.trail_sink_state import LastWritten, find_last_transaction, load_state
from trailgate.trail import TrailReader, read_header
from trailgate.trail.naming import TrailName
from trailgate.trail.writer import TrailWriter

T = TableDef("public", "t", [
    Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
    Column("v", 1, ColumnKind.VARCHAR2, "text"),
    Column("b", 2, ColumnKind.RAW, "bytea"),
], key=["id"], object_id=42)


def _txn(n: int) -> Transaction:
    changes = [
        Change(OpType.INSERT, "public.t", after={0: str(n).encode(), 1: None, 2: b"\x00\xff"},
               io_time=1_000 + n, audit_seq=1, audit_pos=10 * n, tokens={"k": str(n)}),
        Change(OpType.PK_UPDATE, "public.t", before={0: str(n).encode()},
               after={0: str(n + 1000).encode(), 1: b"x" * n}, io_time=1_000 + n),
    ]
    if n % 3 == 0:
        changes.append(Change(OpType.DELETE, "public.t", before={0: str(n + 1000).encode()},
                              io_time=1_000 + n))
    return Transaction(f"x{n}", 100 + n, changes)


def _rows(txns: list[Transaction], position: dict | None = None, batch_rows: int = 3):
    builder = ChangeRowBuilder()
    builder.add_table(T)
    for t in txns:
        for i, c in enumerate(t.changes):
            builder.add_change(c, t.csn, t.xid, i == len(t.changes) - 1)
            if builder.full(batch_rows):
                yield builder.take()
    if position is not None:
        builder.add_position(position)
    yield builder.take()


def _opts(tmp_path: Path, run_id: str) -> SinkOptions:
    return SinkOptions.parse({"path": str(tmp_path / "home" / "dirdat" / "aa"),
                              "trailLabel": "./dirdat/aa", "megabytes": "1",
                              "home": str(tmp_path / "home"), "group": "ext1",
                              "runId": run_id}, "unused")


def _trail(tmp_path: Path) -> list[tuple]:
    return [(t.transaction.csn, t.transaction.xid, [(c.op, c.before, c.after, c.tokens)
                                                   for c in t.transaction.changes])
            for t in TrailReader(tmp_path / "home" / "dirdat" / "aa").transactions()]


def _expected(txns: list[Transaction]) -> list[tuple]:
    return [(t.csn, t.xid, [(c.op, c.before, c.after, c.tokens) for c in t.changes])
            for t in txns]


def test_change_rows_round_trip_exactly():
    txns = [_txn(1), _txn(3)]
    rows = [r for batch in _rows(txns, {"lsn": 7}) for r in iter_change_rows(batch)]
    assert rows[0].table_def == T
    changes = [r for r in rows if r.change is not None]
    assert [c.change for c in changes] == [c for t in txns for c in t.changes]
    assert [c.last for c in changes] == [False, True, False, False, True]
    assert rows[-1].position == {"lsn": 7}


def _every_kind(builder: ChangeRowBuilder) -> None:
    builder.add_table(T, 100, "x0")
    for t in (_txn(1), _txn(3)):
        for i, c in enumerate(t.changes):
            builder.add_change(c, t.csn, t.xid, i == len(t.changes) - 1)
    builder.add_note("a note", 104, "x4")
    builder.add_define(T, 104, "x4")
    builder.add_packed("public.t", 104, "x4", True, 1_004, b"\x47" * 30)
    builder.add_transactions(b"\x01\x02")
    builder.add_position({"lsn": 9})


def test_columns_without_arrow_are_the_batches_columns():
    """What the streamer hands the sink without Arrow reads as the batch would."""
    arrow, plain = ChangeRowBuilder(), ColumnRowBuilder()
    _every_kind(arrow)
    _every_kind(plain)
    a, b = ChangeColumns(arrow.take()), plain.take()
    assert type(b) is ChangeColumns and len(plain) == 0
    for name in ("ops", "tables", "csns", "xids", "lasts", "io_times", "texts", "records"):
        assert getattr(a, name) == getattr(b, name), name
    for i, op in enumerate(a.ops):
        if op >= 0:
            assert a.change(i) == b.change(i)
    assert b.position(len(b) - 1) == {"lsn": 9} and b.table_def(0) == T
    assert len(ColumnRowBuilder().take()) == 0


def test_columns_write_what_batches_write(tmp_path):
    """The sink writes the same trail from columns as from the same rows' batches."""
    txns = [_txn(n) for n in range(1, 8)]
    trails = []
    for name, builder in (("arrow", ChangeRowBuilder()), ("plain", ColumnRowBuilder())):
        home = tmp_path / name
        (home / "home" / "dirchk").mkdir(parents=True)
        builder.add_table(T)

        def batches(builder: ChangeRowBuilder = builder):
            for t in txns:
                for i, c in enumerate(t.changes):
                    builder.add_change(c, t.csn, t.xid, i == len(t.changes) - 1)
                yield builder.take()

        msg = write_change_batches(_opts(home, "r"), batches())
        assert msg.transactions == len(txns)
        trails.append([(pos, rec) for pos, rec in
                       TrailReader(home / "home" / "dirdat" / "aa").raw_records()])
    assert _trail(tmp_path / "plain") == _expected(txns)
    assert trails[0] == trails[1]


def test_table_definitions_survive_json():
    assert tabledef_from_json(tabledef_to_json(T)) == T


def test_batches_of_one_run_share_a_file_and_a_new_run_starts_another(tmp_path):
    (tmp_path / "home" / "dirchk").mkdir(parents=True)
    run1 = _opts(tmp_path, "run-1")
    first = write_change_batches(run1, _rows([_txn(1), _txn(2)], {"lsn": 500}))
    second = write_change_batches(run1, _rows([_txn(3)], {"lsn": 600}))
    assert first.position[0] == second.position[0] == 0
    assert second.position[1] > first.position[1]
    assert (first.transactions, second.transactions) == (2, 1)
    commit_checkpoint(run1, [first])
    commit_checkpoint(run1, [second])
    finish_run(run1)  # a clean stop completes the file's header
    header = read_header(TrailName(run1.trail).file(0))
    assert header.file_size == second.position[1] and header.last_csn == 103

    run2 = _opts(tmp_path, "run-2")
    third = write_change_batches(run2, _rows([_txn(4)], {"lsn": 700}))
    assert third.position[0] == 1  # append mode: a new run, a new file
    assert _trail(tmp_path) == _expected([_txn(1), _txn(2), _txn(3), _txn(4)])
    records = list(TrailReader(run1.trail).records())
    metadata = [r.position.seqno for r in records if r.change is None]
    assert metadata == [0, 1]  # the definition once per file

    ck = CheckpointStore(tmp_path / "home" / "dirchk").load("EXT1", "EXTRACT")
    assert ck.read_position == {"lsn": 600} and ck.write_trail == "./dirdat/aa"
    assert (tuple(ck.write_position), ck.last_csn, ck.last_xid) == (second.position, 103, "x3")
    assert ck.stats["public.t"].inserts == 3 and ck.stats["public.t"].updates == 3
    assert ck.stats["public.t"].deletes == 1


def test_a_replayed_batch_after_a_crash_writes_each_transaction_once(tmp_path):
    (tmp_path / "home" / "dirchk").mkdir(parents=True)
    txns = [_txn(n) for n in range(1, 9)]
    run1 = _opts(tmp_path, "run-1")
    write_change_batches(run1, _rows(txns[:2], {"lsn": 1}))
    # the crash: the next batch's task wrote three transactions and part of a fourth, then
    # died before its state and checkpoint were written
    state = load_state(Path(run1.state_file))
    writer = TrailWriter(run1.trail, megabytes=1)
    writer.resume(state.seqno, state.length, state.tables, last_csn=state.last.csn)
    for t in txns[2:5]:
        writer.write_transaction(t, {"public.t": T})
    writer.begin_transaction(txns[5].xid, txns[5].csn)
    for c in txns[5].changes:
        writer.add_change(c, T)
    writer.flush()
    os.close(writer._fd)

    # the restarted run replays the whole batch, then goes on
    run2 = _opts(tmp_path, "run-2")
    replay = write_change_batches(run2, _rows(txns[2:7], {"lsn": 2}))
    assert (replay.transactions, replay.skipped) == (2, 3)
    assert replay.position[0] == 1
    write_change_batches(run2, _rows(txns[7:], {"lsn": 3}))
    assert _trail(tmp_path) == _expected(txns)  # txn 6's cut-off copy is not complete

    last, end = find_last_transaction(run1.trail, None)
    assert last.csn == 108 and last.xids == {"x8"} and end.seqno == 1


def test_last_written_covers_by_csn_then_xid():
    last = LastWritten()
    assert not last.covers(5, "a")
    last.add(5, "a")
    last.add(5, "b")  # two transactions may share a CSN (Oracle SCN)
    assert last.covers(4, "z") and last.covers(5, "b") and not last.covers(5, "c")
    assert not last.covers(6, "a")
    last.add(6, "c")
    assert last.xids == {"c"}


def test_sink_refuses_input_that_ends_inside_a_transaction(tmp_path):
    (tmp_path / "home" / "dirchk").mkdir(parents=True)
    builder = ChangeRowBuilder()
    builder.add_table(T)
    builder.add_change(_txn(1).changes[0], 101, "x1", False)
    with pytest.raises(ValueError, match="inside transaction x1"):
        write_change_batches(_opts(tmp_path, "r"), iter([builder.take()]))


def test_options_are_checked():
    with pytest.raises(ValueError, match="needs a trail"):
        SinkOptions.parse({}, "r")
    with pytest.raises(ValueError, match="megabytes"):
        SinkOptions.parse({"path": "/x/aa", "megabytes": "0"}, "r")
    with pytest.raises(ValueError, match="go together"):
        SinkOptions.parse({"path": "/x/aa", "home": "/h"}, "r")
    for bad in ("mydb", '{"bogus": 1}', "[1]", '{"vendor": "x", "name": 1, "major": []}'):
        with pytest.raises(ValueError, match="option database="):
            SinkOptions.parse({"path": "/x/aa", "database": bad}, "r")
    assert SinkOptions.parse({"path": "/x/aa", "database": '{"name": "DB"}'}, "r").database
    assert isinstance(TrailCommitMessage("t", None, None, None, None, None), TrailCommitMessage)


def test_a_commit_behind_the_checkpoint_does_not_move_it_back(tmp_path):
    """A batch replayed after the Extract's streamer had checkpointed further (kill -9
    with Spark's offset log behind) keeps the checkpoint's read position, time and last
    CSN; its counts and write position still count."""
    (tmp_path / "home" / "dirchk").mkdir(parents=True)
    opts = _opts(tmp_path, "run-1")
    ahead = TrailCommitMessage("./dirdat/aa", (0, 900), 103, "x3", None,
                               {"lsn": 600, "read_time": 6}, {"public.t": {"insert": 2}})
    replay = TrailCommitMessage("./dirdat/aa", (0, 900), 101, "x1", None,
                                {"lsn": 500, "read_time": 5}, {"public.t": {"insert": 1}})
    commit_checkpoint(opts, [ahead])
    commit_checkpoint(opts, [replay])
    ck = CheckpointStore(tmp_path / "home" / "dirchk").load("EXT1", "EXTRACT")
    assert ck.read_position == {"lsn": 600} and ck.read_time == 6
    assert (ck.last_csn, ck.last_xid) == (103, "x3")
    assert ck.stats["public.t"].inserts == 3
    commit_checkpoint(opts, [TrailCommitMessage("./dirdat/aa", (0, 950), 104, "x4", None,
                                                {"lsn": 700}, {})])
    ck = CheckpointStore(tmp_path / "home" / "dirchk").load("EXT1", "EXTRACT")
    assert ck.read_position == {"lsn": 700} and ck.last_csn == 104
