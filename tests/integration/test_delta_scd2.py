"""SCD type 2 Delta tables (``MAP …, SCD TYPE 2``) against history computed here, from the
same changes, by replaying them transaction by transaction: in order, replayed under new
batch ids, with late batches, with TRACK HISTORY, and through the Replicat process."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from trailgate.apply import TrailChange
from trailgate.apply.delta import DeltaApplier
from trailgate.capture.postgres.types import classify
from trailgate.errors import ConfigError
from trailgate.model import (
    Change,
    Column,
    OpType,
    TableDef,
    TrailPosition,
    datetime_from_julian,
    julian_from_unix_micros,
)
from trailgate.params import ReplicatParams, parse_params_text


def tdef(name: str, cols: list[tuple[str, str]], key: list[str]) -> TableDef:
    schema, _, table = name.rpartition(".")
    columns = []
    for i, (cname, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef(schema, table, columns, key)


ITEMS = tdef("public.items", [("id", "integer"), ("status", "text"), ("qty", "integer"),
                              ("note", "text")], ["id"])
DEFS = {"public.items": ITEMS}
COLS = ("id", "status", "qty", "note")
BASE = 1_700_000_000_000_000


def params(options: str = "SCD TYPE 2") -> ReplicatParams:
    p = parse_params_text(f"REPLICAT rep1\nTARGETDELTA /x\n"
                          f"MAP public.items, TARGET lake.items_history, {options};\n",
                          "rep1.prm")
    assert isinstance(p, ReplicatParams)
    return p


Txn = tuple[int, list[TrailChange]]


class Workload:
    """Random transactions on ``items``; ``state`` is the source table as they leave it.

    ``full``: updates carry every column (else compressed: key and changed columns)."""

    def __init__(self, seed: int, keys: int = 12, full: bool = False):
        self.rng = random.Random(seed)
        self.keys = keys
        self.full = full
        self.state: dict[int, dict[str, Any]] = {}
        self.csn = 1000
        self.rba = 0
        self.fresh = 100

    def _rec(self, op: OpType, after: dict[str, Any] | None,
             before: dict[str, Any] | None) -> Change:
        def image(d: dict[str, Any] | None) -> dict[int, bytes | None] | None:
            if d is None:
                return None
            return {COLS.index(c): None if v is None else str(v).encode() for c, v in d.items()}
        return Change(op, "public.items", image(after), image(before))

    def txn(self, inserts_only: bool = False) -> Txn:
        self.csn += self.rng.choice([1, 7])
        changes = []
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            changes.append(self._change(inserts_only))
        out = []
        for ch in changes:
            self.rba += 100
            out.append(TrailChange(ch, self.csn, f"0.{self.csn}", TrailPosition(1, self.rba),
                                   julian_from_unix_micros(BASE + self.csn * 1000)))
        return self.csn, out

    def _change(self, inserts_only: bool) -> Change:
        rng = self.rng
        absent = [k for k in range(1, self.keys + 1) if k not in self.state]
        if inserts_only or not self.state or (absent and rng.random() < 0.25):
            k = rng.choice(absent) if absent else rng.choice(sorted(self.state))
            row = {"id": k, "status": rng.choice(["new", "paid"]), "qty": rng.randrange(5),
                   "note": rng.choice([None, "n1"])}
            if self.full:
                self.fresh += 1
                row["qty"] = self.fresh
            if k in self.state:  # all keys taken: update it instead
                return self._update(k)
            self.state[k] = row
            return self._rec(OpType.INSERT, row, None)
        k = rng.choice(sorted(self.state))
        r = rng.random()
        if r < 0.15:
            del self.state[k]
            return self._rec(OpType.DELETE, None, {"id": k})
        if r < 0.22 and not self.full and absent:
            new = rng.choice(absent)
            row = self.state.pop(k)
            row = {**row, "id": new, "qty": rng.randrange(5)}
            self.state[new] = row
            return self._rec(OpType.PK_UPDATE, {"id": new, "qty": row["qty"]}, {"id": k})
        return self._update(k)

    def _update(self, k: int) -> Change:
        rng = self.rng
        row = self.state[k]
        col = rng.choice(["status", "qty", "note", "note"])
        choices: list[Any] = {"status": ["new", "paid", "sent"], "qty": list(range(5)),
                              "note": [None, "n1", "n2", "n3"]}[col]
        value = rng.choice(choices)
        row[col] = value
        if self.full:
            # every version differs from every other: an update equal to the version it
            # finds leaves no trace, so a late change cannot split a version there
            # (docs/replicat.md, "SCD type 2")
            self.fresh += 1
            row["qty"] = self.fresh
        if self.full:
            return self._rec(OpType.UPDATE, dict(row), None)
        return self._rec(OpType.FIELD_COMP, {"id": k, col: value}, None)


def expected_history(snapshots: list[tuple[int, dict[int, dict[str, Any]]]],
                     tracked: tuple[str, ...] = ("id", "status", "qty", "note")
                     ) -> list[dict[str, Any]]:
    """Versions from the source table's state after each transaction: a key's version
    starts when a tracked value differs from the last version (or the key appears) and ends
    at the next one or when the key disappears; untracked values are the last ones seen
    while the version lasted."""
    open_: dict[int, dict[str, Any]] = {}
    done: list[dict[str, Any]] = []
    for csn, state in snapshots:
        when = datetime_from_julian(julian_from_unix_micros(BASE + csn * 1000))
        for k in list(open_):
            v = open_[k]
            row = state.get(k)
            if row is None or any(row[c] != v[c] for c in tracked):
                v.update(__end_csn=csn, __end_time=when, __is_current=False)
                done.append(open_.pop(k))
            else:
                v.update(row)
        for k, row in state.items():
            if k not in open_:
                open_[k] = {**row, "__start_csn": csn, "__end_csn": None,
                            "__start_time": when, "__end_time": None, "__is_current": True}
    return sorted(done + list(open_.values()), key=lambda r: (r["id"], r["__start_csn"]))


def table_rows(path: Path) -> list[dict[str, Any]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["id"], r["__start_csn"]))


def run(w: Workload, n: int, snapshots: list[tuple[int, dict[int, dict[str, Any]]]],
        inserts_only: bool = False) -> list[TrailChange]:
    out: list[TrailChange] = []
    for _ in range(n):
        csn, changes = w.txn(inserts_only)
        out += changes
        snapshots.append((csn, {k: dict(v) for k, v in w.state.items()}))
    return out


PATH = ("lake", "items_history")


def test_history_equals_versions_computed_from_the_changes(tmp_path: Path) -> None:
    w = Workload(seed=3)
    snaps: list[tuple[int, dict[int, dict[str, Any]]]] = []
    batches = [run(w, n, snaps) for n in (15, 40, 25)]
    a = DeltaApplier(tmp_path, params())
    for i, batch in enumerate(batches):
        res = a.apply_batch(i, batch, DEFS)
        assert not res.skipped
    got = table_rows(tmp_path.joinpath(*PATH))
    want = expected_history(snaps)
    assert got == want
    assert sum(r["__is_current"] for r in got) == len(w.state)
    assert {r["id"]: {c: r[c] for c in COLS} for r in got if r["__is_current"]} == w.state
    # the same batch again: skipped by the Delta log's application transaction
    version = DeltaTable(str(tmp_path.joinpath(*PATH))).version()
    assert a.apply_batch(2, batches[2], DEFS).skipped
    # every change again, cut into other batches, under batch ids the log has not seen (a
    # group re-added under the same name, a repositioned trail): each is known by its CSN
    every = [c for b in batches for c in b]
    fresh = DeltaApplier(tmp_path, params())
    for j, start in enumerate(range(0, len(every), 37)):
        fresh.apply_batch(10 + j, every[start:start + 37], DEFS)
    assert table_rows(tmp_path.joinpath(*PATH)) == want
    assert DeltaTable(str(tmp_path.joinpath(*PATH))).version() >= version


def test_late_batch_is_put_in_its_place(tmp_path: Path) -> None:
    """Batches applied out of order (full images, as REPLICA IDENTITY FULL or full
    supplemental logging write them) leave the history of the in-order run."""
    w = Workload(seed=11, full=True)
    snaps: list[tuple[int, dict[int, dict[str, Any]]]] = []
    first = run(w, 12, snaps, inserts_only=True)
    middle = run(w, 30, snaps)
    last = run(w, 30, snaps)
    a = DeltaApplier(tmp_path, params())
    a.apply_batch(0, first, DEFS)
    a.apply_batch(1, last, DEFS)
    a.apply_batch(2, middle, DEFS)
    assert table_rows(tmp_path.joinpath(*PATH)) == expected_history(snaps)


def test_track_history_updates_other_columns_in_place(tmp_path: Path) -> None:
    w = Workload(seed=5)
    snaps: list[tuple[int, dict[int, dict[str, Any]]]] = []
    batches = [run(w, 30, snaps), run(w, 30, snaps)]
    for options, tracked in (("SCD TYPE 2, TRACK HISTORY ON (status, qty)",
                              ("id", "status", "qty")),
                             ("SCD TYPE 2 TRACK HISTORY ON * EXCEPT (NOTE)",
                              ("id", "status", "qty"))):
        root = tmp_path / str(len(options))
        a = DeltaApplier(root, params(options))
        for i, b in enumerate(batches):
            a.apply_batch(i, b, DEFS)
        got = table_rows(root.joinpath(*PATH))
        assert got == expected_history(snaps, tracked)
        assert len(got) < len(expected_history(snaps))  # some note changes made no version


def test_errors_name_the_map(tmp_path: Path) -> None:
    w = Workload(seed=1)
    with pytest.raises(ConfigError, match=r"TRACK HISTORY column colour is not a column"):
        DeltaApplier(tmp_path, params("SCD TYPE 2, TRACK HISTORY ON (colour)")).apply_batch(
            0, run(w, 2, []), DEFS)
    keyless = {"public.items": tdef("public.items", [(c, "text") for c in COLS], [])}
    with pytest.raises(ConfigError, match=r"SCD TYPE 2: the source table public.items has no "
                                          r"key.*add KEYCOLS"):
        DeltaApplier(tmp_path / "k", params()).apply_batch(0, run(w, 2, []), keyless)
    with pytest.raises(ConfigError, match=r"line 3.*SCD TYPE takes 1"):
        params("SCD TYPE 3")


def test_truncate_closes_every_current_version(tmp_path: Path) -> None:
    p = parse_params_text("REPLICAT rep1\nTARGETDELTA /x\nGETTRUNCATES\n"
                          "MAP public.items, TARGET lake.items_history, SCD TYPE 2;\n",
                          "rep1.prm")
    assert isinstance(p, ReplicatParams)
    w = Workload(seed=2)
    snaps: list[tuple[int, dict[int, dict[str, Any]]]] = []
    a = DeltaApplier(tmp_path, p)
    a.apply_batch(0, run(w, 20, snaps), DEFS)
    w.csn += 1
    w.rba += 100
    truncate = TrailChange(Change(OpType.TRUNCATE, "public.items"), w.csn, "t",
                           TrailPosition(1, w.rba), julian_from_unix_micros(BASE + w.csn * 1000))
    w.state.clear()
    snaps.append((w.csn, {}))
    after = run(w, 10, snaps)
    res = a.apply_batch(1, [truncate, *after], DEFS)
    assert res.counts["lake.items_history"].truncates == 1
    got = table_rows(tmp_path.joinpath(*PATH))
    assert got == expected_history(snaps)
    assert any(r["__end_csn"] == truncate.csn for r in got)


def test_a_null_in_a_keycols_column_is_a_key_like_any_other(tmp_path: Path) -> None:
    """KEYCOLS (id, note) with note null: the key's later change closes its version (SCD
    type 2) or replaces its row (type 1) instead of adding a second current row."""
    def change(csn: int, op: OpType, after: dict[int, bytes | None]) -> TrailChange:
        return TrailChange(Change(op, "public.items", after, None), csn, f"0.{csn}",
                           TrailPosition(1, csn * 100),
                           julian_from_unix_micros(BASE + csn * 1000))
    first = [change(10, OpType.INSERT, {0: b"1", 1: b"new", 2: b"1", 3: None}),
             change(10, OpType.INSERT, {0: b"2", 1: b"new", 2: b"1", 3: b"n"})]
    second = [change(20, OpType.UPDATE, {0: b"1", 1: b"paid", 2: b"2", 3: None}),
              change(20, OpType.UPDATE, {0: b"2", 1: b"paid", 2: b"2", 3: b"n"})]
    for options, rows in (("KEYCOLS (id, note), SCD TYPE 2", 4), ("KEYCOLS (id, note)", 2)):
        root = tmp_path / str(rows)
        a = DeltaApplier(root, params(options))
        a.apply_batch(0, first, DEFS)
        a.apply_batch(1, second, DEFS)
        got = DeltaTable(str(root.joinpath(*PATH))).to_pyarrow_table().to_pylist()
        assert len(got) == rows
        current = [r for r in got if r.get("__is_current", True)]
        assert sorted((r["id"], r["status"], r["qty"]) for r in current) == [
            (1, "paid", 2), (2, "paid", 2)]
