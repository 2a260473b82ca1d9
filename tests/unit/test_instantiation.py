"""The rules that make the handover exact, checked change by change: a Replicat's
instantiation filter (per-range cuts), the incremental snapshot's visibility rule and
chunk handling, the compare's classification and its repair SQL."""

from __future__ import annotations

import json
import random

import pytest

from trailgate.apply.instantiation import Cut, Instantiation, TableCuts
from trailgate.apply.records import TrailChange
from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.changes.change_rows import tabledef_to_json
from trailgate.compare.repair import repair_sql
from trailgate.compare.spec import CompareJob, CompareTable
from trailgate.compare.task import Difference, classify
from trailgate.errors import TargetError
from trailgate.extract.postgres.snapshot_tracker import SnapshotTracker, visible
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.replicat.inst_filter import ChangeFilter
from trailgate.replicat.task_rows import Definitions, TaskRows

T = TableDef("app", "t", [Column("id", 0, ColumnKind.NUMBER, "bigint", nullable=False),
                          Column("v", 1, ColumnKind.VARCHAR2, "text")], ["id"])
CUTS = TableCuts("app.t", "ELOAD", [Cut(100, None, 10), Cut(200, 10, 20), Cut(300, 20, None)],
                 "id", True)


def _tc(op: OpType, csn: int, before: int | None = None, after: int | None = None,
        full: bool = True) -> TrailChange:
    b = None if before is None else {0: str(before).encode()}
    a = None if after is None else ({0: str(after).encode(), 1: b"x"} if full
                                    else {0: str(after).encode()})
    return TrailChange(Change(op, "app.t", after=a, before=b), csn, "1", TrailPosition(0, csn))


def _filter(changes: list[TrailChange]) -> list[TrailChange]:
    defs = Definitions()
    defs.add("app.t", TrailPosition(0, 0), T)
    task = TaskRows({0: changes}, defs)
    ChangeFilter(None, Instantiation("REP", {"app.t": CUTS})).task(task)
    return task.changes.get(0, [])


def test_a_change_applies_only_after_the_cut_of_its_keys_range() -> None:
    kept = _filter([_tc(OpType.INSERT, 150, after=5), _tc(OpType.INSERT, 150, after=15),
                    _tc(OpType.DELETE, 250, before=15), _tc(OpType.FIELD_COMP, 250, after=25),
                    _tc(OpType.FIELD_COMP, 50, after=1), _tc(OpType.INSERT, 300, after=99)])
    assert [(t.change.op, t.csn) for t in kept] == [
        (OpType.INSERT, 150), (OpType.DELETE, 250), (OpType.INSERT, 300)]


def test_a_key_update_across_ranges_is_half_applied_when_one_side_was_loaded_after() -> None:
    # 5 (cut 100) -> 25 (cut 300) at CSN 150: the old row is in the target, the new one
    # was loaded with its range later: only the delete applies
    out = _filter([_tc(OpType.PK_UPDATE, 150, before=5, after=25)])
    assert [t.change.op for t in out] == [OpType.DELETE]
    assert out[0].change.before == {0: b"5"}
    # 25 (cut 300) -> 5 (cut 100) at CSN 150: the old row was loaded without it, the new
    # row must be inserted from the full image
    out = _filter([_tc(OpType.PK_UPDATE, 150, before=25, after=5)])
    assert [t.change.op for t in out] == [OpType.INSERT] and out[0].change.after[1] == b"x"
    assert _filter([_tc(OpType.PK_UPDATE, 350, before=25, after=5)])[0].change.op is \
        OpType.PK_UPDATE
    assert _filter([_tc(OpType.PK_UPDATE, 120, before=15, after=25)]) == []
    with pytest.raises(TargetError, match="does not carry every column"):
        _filter([_tc(OpType.PK_UPDATE, 150, before=25, after=5, full=False)])


def test_a_truncate_between_cuts_is_an_error_naming_the_table() -> None:
    with pytest.raises(TargetError, match=r"TRUNCATE of app.t .* load app.t again"):
        _filter([TrailChange(Change(OpType.TRUNCATE, "app.t"), 150, "1",
                             TrailPosition(0, 1))])


def test_the_filter_against_a_replay_of_history() -> None:
    """Random histories: the target loaded range by range at random cuts, then the filtered
    trail applied, equals the source at the end."""
    rng = random.Random(5)
    for _ in range(200):
        source: dict[int, str] = {k: "v0" for k in range(30)}
        history = []  # (csn, change)
        next_key = 100
        for csn in range(1, 120):
            op = rng.random()
            k = rng.choice(list(source)) if source else None
            if op < 0.3 or k is None:
                key = rng.randrange(0, 200)
                if key in source:
                    continue
                source[key] = f"i{csn}"
                history.append((csn, Change(OpType.INSERT, "app.t",
                                            after={0: str(key).encode(), 1: f"i{csn}".encode()})))
            elif op < 0.6:
                source[k] = f"u{csn}"
                history.append((csn, Change(OpType.FIELD_COMP, "app.t", after={
                    0: str(k).encode(), 1: f"u{csn}".encode()})))
            elif op < 0.8:
                del source[k]
                history.append((csn, Change(OpType.DELETE, "app.t",
                                            before={0: str(k).encode()})))
            else:
                next_key += 1
                new = next_key if rng.random() < 0.5 else rng.randrange(-50, 0)
                if new in source:
                    continue
                source[new] = source.pop(k)
                history.append((csn, Change(OpType.PK_UPDATE, "app.t", before={
                    0: str(k).encode()}, after={0: str(new).encode(),
                                                1: source[new].encode()})))
        bounds = sorted(rng.sample(range(-40, 150), 3))
        edges = [None, *bounds, None]
        cuts = [Cut(rng.randint(1, 119), edges[i], edges[i + 1]) for i in range(4)]

        def at(csn: int, hist=history) -> dict[int, str]:
            state: dict[int, str] = {k: "v0" for k in range(30)}
            for c, ch in hist:
                if c >= csn:
                    break
                _apply(state, ch)
            return state

        target: dict[int, str] = {}
        for cut in cuts:
            target.update({k: v for k, v in at(cut.csn).items() if cut.contains(k)})
        defs = Definitions()
        defs.add("app.t", TrailPosition(0, 0), T)
        task = TaskRows({0: [TrailChange(ch, c, "1", TrailPosition(0, c))
                             for c, ch in history]}, defs)
        ChangeFilter(None, Instantiation("R", {"app.t": TableCuts("app.t", "L", cuts, "id",
                                                                  True)})).task(task)
        for tc in task.changes.get(0, []):
            _apply(target, tc.change)
        assert target == source


def _apply(state: dict[int, str], ch: Change) -> None:
    if ch.op is OpType.INSERT or ch.op is OpType.FIELD_COMP:
        state[int(ch.after[0])] = ch.after[1].decode()
    elif ch.op is OpType.DELETE:
        state.pop(int(ch.before[0]), None)
    else:
        state.pop(int(ch.before[0]), None)
        state[int(ch.after[0])] = ch.after[1].decode()


def test_visibility_follows_the_snapshot() -> None:
    snap = "100:110:103,107"
    assert visible(99, snap) and visible(105, snap)
    assert not visible(103, snap) and not visible(110, snap) and not visible(200, snap)
    # 32-bit xids from pgoutput against a 64-bit snapshot past the first wraparound
    big = (5 << 32) + 10
    assert visible(5, f"{big - 3}:{big}:") and not visible(12, f"{big - 3}:{big}:")
    assert visible(0xFFFFFFF0, f"{big - 100}:{big}:")  # the previous epoch's


def _tracker() -> SnapshotTracker:
    tracker = SnapshotTracker("run1")
    start = {"op": "start", "run": "run1", "table": "app.t", "def": tabledef_to_json(T),
             "key": ["id"]}
    tracker.message(json.dumps(start).encode(), "1", 1)
    return tracker


def _chunk(n: int, rows: list[list[str]], snapshot: str, **extra: object) -> bytes:
    return json.dumps({"op": "chunk", "run": "run1", "table": "app.t", "n": n,
                       "snapshot": snapshot, "kind": "range", "rows": rows,
                       **extra}).encode()


def test_a_chunk_row_touched_by_an_invisible_transaction_is_read_again() -> None:
    tracker = _tracker()
    upd = Change(OpType.FIELD_COMP, "app.t", after={0: b"2", 1: b"new"})
    tracker.observe(upd, "105", T)  # committed, but in the chunk's snapshot's xip
    assert upd.tokens == {"TG_SNAPSHOT": "log"}
    visible_upd = Change(OpType.FIELD_COMP, "app.t", after={0: b"3", 1: b"z"})
    tracker.observe(visible_upd, "90", T)  # visible to the chunk: its row has it
    out = tracker.message(_chunk(1, [["1", "a"], ["2", "old"], ["3", "z"]], "100:110:105",
                                 last=["3"], max=["9"]), "120", 500)
    assert [c.after[0] for c in out] == [b"1", b"3"]
    assert all(c.tokens == {"TG_SNAPSHOT": "chunk"} and c.op is OpType.INSERT for c in out)
    snap = tracker.snapshot("app.t")
    assert snap is not None and snap.requeue == [["2"]] and snap.last == ["3"]
    # an earlier run's chunk, or one seen already, changes nothing
    assert tracker.message(_chunk(1, [["4", "x"]], "1:2:"), "121", 501) == []
    stale = json.dumps({"op": "chunk", "run": "old", "table": "app.t", "n": 2,
                        "snapshot": "1:2:", "rows": [["5", "y"]]}).encode()
    assert tracker.message(stale, "122", 502) == []


def test_done_waits_for_keys_still_to_be_read_and_key_moves_queue_their_new_key() -> None:
    tracker = _tracker()
    tracker.message(_chunk(1, [["1", "a"], ["2", "b"]], "10:11:", last=["2"], max=["2"],
                           exhausted=True), "12", 5)
    moved_loaded = Change(OpType.PK_UPDATE, "app.t", before={0: b"1"},
                          after={0: b"50", 1: b"a"})
    tracker.observe(moved_loaded, "13", T)  # 1 was loaded: the move applies on the target
    assert tracker.snapshot("app.t").requeue == []
    moved_early = Change(OpType.PK_UPDATE, "app.t", before={0: b"7"},
                         after={0: b"60", 1: b"q"})
    tracker.observe(moved_early, "14", T)  # 7 is past the chunks read: 60 is read again
    assert tracker.snapshot("app.t").requeue == [["60"]]
    done = json.dumps({"op": "done", "run": "run1", "table": "app.t"}).encode()
    tracker.message(done, "15", 6)
    assert tracker.tracks("app.t")  # not done while a key waits
    again = _chunk(2, [["60", "q"]], "16:17:", kind="requeue", keys=[["60"]])
    assert [c.after[0] for c in tracker.message(again, "17", 7)] == [b"60"]
    tracker.message(done, "18", 8)
    assert not tracker.tracks("app.t") and tracker.state() == []


COLS = (ReadColumn("id", "bigint", "id", "bigint"), ReadColumn("v", "text", "val", "text"))


def _job(key: tuple[str, ...] = ("id",)) -> CompareJob:
    table = CompareTable(0, "app.t", '"app"."t"', "app", "t", COLS, key, None,
                         (KeyRange(0, "all"),))
    return CompareJob("EXT", "REP", "dbname=s", "POSTGRES", "dbname=t", {0: table})


def test_classify_missing_extra_different_and_doubles() -> None:
    table = _job().tables[0]
    diffs = classify(table, 0, {"(1)": (11, 1), "(2)": (22, 1), "(3)": (33, 1)},
                     {"(1)": (11, 1), "(2)": (99, 1), "(4)": (44, 1)})
    assert sorted((d.kind, d.key) for d in diffs) == [
        ("different", "(2)"), ("extra", "(4)"), ("missing", "(3)")]
    keyless = _job(()).tables[0]
    diffs = classify(keyless, 0, {"(1,a)": (0, 1)}, {"(1,a)": (0, 3)})
    assert [(d.kind, d.n) for d in diffs] == [("extra", 2)]


def test_repair_sql_sets_only_the_differing_columns() -> None:
    job = _job()
    diffs = [Difference(0, 0, "missing", "(1)", src=("1", "it's")),
             Difference(0, 0, "extra", "(2)", tgt=("2", None)),
             Difference(0, 0, "different", "(3)", columns=("v",), src=("3", ""),
                        tgt=("3", None))]
    text, count, skipped = repair_sql(job, diffs)
    assert (count, skipped) == (3, 0)
    assert """INSERT INTO "app"."t" ("id", "val") VALUES ('1'::bigint, 'it''s'::text);""" in text
    assert """DELETE FROM "app"."t" WHERE "id" = '2'::bigint;""" in text
    assert """UPDATE "app"."t" SET "val" = ''::text WHERE "id" = '3'::bigint;""" in text
    assert text.startswith("-- trailgate compare") and text.rstrip().endswith("COMMIT;")
