"""Transaction assembly across records, files and threads: commit order, rollbacks, long
transactions (spilled to disk), restart from a checkpoint, the unknown-object policy.

Inputs are written with DumpWriter in seed 003's record layout.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from trailgate.capture.oracle import Dictionary, DumpCapture, capture_oracle_dumps
from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.errors import SourceError
from trailgate.model import OpType

ROOT = Path(__file__).parents[3]
US03 = ROOT / "src" / "trailgate" / "capture" / "oracle" / "examples" / "us03_dictionary.json"
US01 = ROOT / "tests" / "fixtures" / "oracle" / "us01_dictionary.json"

X, Y, Z = Xid(4, 5, 100), Xid(5, 6, 200), Xid(6, 7, 300)


def row(key: int, fee: int = 9000) -> list[bytes | None]:
    return [encode_number(key), b"Ann", b"Lee", b"F", b"Oxford", b"Biology",
            encode_number(2013), encode_number(fee)]


def key(k: int) -> list[tuple[int, bytes]]:
    return [(1, encode_number(k))]


@pytest.fixture
def two_logs(tmp_path) -> list[Path]:
    """Log 0x50: X inserts and updates, Y inserts and commits, Z inserts (X, Z stay open).
    Log 0x51: X deletes, Z rolls back, X commits."""
    a, b = io.StringIO(), io.StringIO()
    w = DumpWriter(a, seq=0x50)
    w.insert(X, 1, row(2001))
    w.insert(Y, 2, row(2002))
    w.update(X, 1, {7: encode_number(9000)}, {7: encode_number(5000)}, key(2001))
    w.insert(Z, 3, row(2003))
    w.commit(Y)
    w.switch(b, 0x51)
    w.delete(X, 4, row(1004))
    w.commit(Z, rollback=True)
    w.commit(X)
    w.end()
    paths = [tmp_path / "arch_0x50.dmp", tmp_path / "online_0x51.dmp"]
    for p, buf in zip(paths, (a, b), strict=True):
        p.write_text(buf.getvalue())
    return paths


def test_interleaved_transactions_across_two_logs(two_logs):
    cap = capture_oracle_dumps(US03, reversed(two_logs))  # order is taken from log sequence
    txns = list(cap)
    assert [t.xid for t in txns] == [str(Y), str(X)]
    y, x = txns
    assert [c.op for c in y.changes] == [OpType.INSERT]
    assert [c.op for c in x.changes] == [OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE]
    assert x.changes[1].after == {0: b"2001", 7: b"5000"}
    assert x.changes[2].before == {0: b"1004"}
    # X's changes come from log 0x50 and 0x51, its commit from 0x51
    assert [c.audit_seq for c in x.changes] == [0x50, 0x50, 0x51]
    assert x.csn > y.csn
    assert cap.rolled_back == [str(Z)]
    assert cap.open_at_end == []


def test_rolled_back_transaction_is_dropped(two_logs):
    txns = list(capture_oracle_dumps(US03, two_logs))
    assert str(Z) not in [t.xid for t in txns]
    assert not any(c.after and c.after.get(0) == b"2003" for t in txns for c in t.changes)


def test_transaction_open_at_end_of_input_is_not_emitted(two_logs):
    cap = capture_oracle_dumps(US03, two_logs[:1])
    assert [t.xid for t in cap] == [str(Y)]
    assert sorted(cap.open_at_end) == sorted([str(X), str(Z)])


def test_commit_without_its_start_is_not_emitted(two_logs):
    cap = capture_oracle_dumps(US03, two_logs[1:])
    assert list(cap) == []
    assert any(str(X) in w and "began before the first dump" in w for w in cap.warnings)


def test_restart_from_checkpoint_neither_loses_nor_repeats(two_logs):
    cap = capture_oracle_dumps(US03, two_logs)
    first = next(cap)
    assert first.xid == str(Y)
    state = json.loads(json.dumps(cap.checkpoint()))  # plain data
    cap.close()
    thread = state["threads"]["1"]
    assert thread["recovery"]["rba"] < thread["read"]["rba"]  # X began before Y committed
    assert [o["xid"] for o in state["open_transactions"]] == [str(X), str(Z)]
    resumed = list(capture_oracle_dumps(US03, two_logs, resume=state))
    assert [t.xid for t in resumed] == [str(X)]
    assert len(resumed[0].changes) == 3


def test_restart_after_first_log_picks_up_the_long_transaction(two_logs):
    cap = capture_oracle_dumps(US03, two_logs[:1])
    assert [t.xid for t in cap] == [str(Y)]
    state = cap.checkpoint()
    resumed = list(capture_oracle_dumps(US03, two_logs, resume=state))
    assert [(t.xid, len(t.changes)) for t in resumed] == [(str(X), 3)]
    # and a checkpoint at the very end resumes to nothing
    cap2 = capture_oracle_dumps(US03, two_logs)
    list(cap2)
    assert list(capture_oracle_dumps(US03, two_logs, resume=cap2.checkpoint())) == []


def test_large_transaction_spills_to_disk_and_comes_back_whole(two_logs, tmp_path):
    plain = list(capture_oracle_dumps(US03, two_logs))
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    cap = DumpCapture(Dictionary.load(US03), two_logs, spill_threshold=1, spill_dir=str(spill_dir))
    spilled = list(cap)
    assert cap.buffer.spills >= 3
    assert spilled == plain
    assert list(spill_dir.iterdir()) == []  # spill files removed


def test_memory_budget_spills_the_largest_open_transaction(two_logs):
    cap = DumpCapture(Dictionary.load(US03), two_logs, memory_budget=200)
    assert [t.xid for t in cap] == [str(Y), str(X)]
    assert cap.buffer.spills >= 1


def test_rac_threads_merge_by_commit_scn(tmp_path):
    t1, t2 = io.StringIO(), io.StringIO()
    w1 = DumpWriter(t1, thread=1, seq=0x30, scn=1000)
    w2 = DumpWriter(t2, thread=2, seq=0x12, scn=1000)
    w1.insert(X, 1, row(3001))  # scn 1000
    w2.insert(Y, 2, row(3002))  # scn 1000
    w2.commit(Y)  # scn 1002
    w1.scn = 1005
    w1.commit(X)  # scn 1006
    w2.scn = 1003
    w2.insert(Z, 3, row(3003))
    w2.commit(Z)  # scn 1005
    for w in (w1, w2):
        w.end()
    paths = [tmp_path / "thread1.dmp", tmp_path / "thread2.dmp"]
    paths[0].write_text(t1.getvalue())
    paths[1].write_text(t2.getvalue())
    cap = capture_oracle_dumps(US03, paths)
    txns = list(cap)
    assert [(t.xid, t.csn) for t in txns] == [(str(Y), 1002), (str(Z), 1005), (str(X), 1006)]
    assert set(cap.checkpoint()["threads"]) == {"1", "2"}


def test_unknown_object_stops_with_location(two_logs):
    with pytest.raises(SourceError) as err:
        list(capture_oracle_dumps(US01, two_logs))
    msg = str(err.value)
    assert "arch_0x50.dmp, line" in msg and "redo record RBA 0x000050." in msg
    assert "object 76490" in msg and "not in the dictionary" in msg


def test_unknown_object_skip_policy_writes_nothing_for_it(two_logs):
    cap = capture_oracle_dumps(US01, two_logs, on_unknown="skip")
    assert list(cap) == []  # every change was to the unknown table: no empty transactions
    assert len(cap.warnings) == 5 and all("skipped" in w for w in cap.warnings)


def test_unknown_column_policy(tmp_path, two_logs):
    doc = json.loads(US03.read_text())
    student = doc["tables"][1]
    student["columns"] = student["columns"][:7]  # the dictionary lacks TUITION_FEE
    short = tmp_path / "short.json"
    short.write_text(json.dumps(doc))
    with pytest.raises(SourceError, match="no column with segment column number 8"):
        list(capture_oracle_dumps(short, two_logs))
    cap = capture_oracle_dumps(short, two_logs, on_unknown="skip")
    assert list(cap) == []  # every change (even the delete's undo image) names column 8
    assert len(cap.warnings) == 5
    assert all("segment column number 8" in w for w in cap.warnings)


def test_damaged_checkpoint_is_refused(two_logs):
    with pytest.raises(SourceError, match="checkpoint"):
        capture_oracle_dumps(US03, two_logs, resume={"format": "something else"})
    with pytest.raises(SourceError, match="damaged"):
        capture_oracle_dumps(US03, two_logs, resume={
            "format": "trailgate-oracle-dump-checkpoint",
            "threads": {"1": {"read": {"thread": 1}}}})
