"""The SCD type 2 history a Replicat should leave, computed from the trail itself: its
changes read with ``spark.read.format("trail")`` (not the Replicat's read path), replayed
transaction by transaction into the source table's state, a version opened whenever a key
appears or a value differs and closed when it differs again or the key goes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable

Row = dict[str, Any]


def history_from_trail(spark: Any, trail: Path, table: str, key: str,
                       types: dict[str, type]) -> list[Row]:
    """Versions of ``table`` (``SCHEMA.TABLE``) from every change in ``trail`` (a path to
    the trail's prefix); ``types`` converts the trail's text values per column."""
    df = (spark.read.format("trail").option("tables", table).load(str(trail))
          .select("seqno", "rba", "op", "csn", "before", "after"))
    rows = sorted(df.collect(), key=lambda r: (r["seqno"], r["rba"]))
    state: dict[Any, Row] = {}
    snapshots: list[tuple[int, dict[Any, Row]]] = []
    current_csn = None
    for r in rows:
        if r["csn"] != current_csn and current_csn is not None:
            snapshots.append((current_csn, {k: dict(v) for k, v in state.items()}))
        current_csn = r["csn"]
        after = {c: None if v is None else types[c](v) for c, v in (r["after"] or {}).items()}
        before = {c: None if v is None else types[c](v) for c, v in (r["before"] or {}).items()}
        op = r["op"]
        if op == "Insert":
            state[after[key]] = {c: after.get(c) for c in types}
        elif op in ("Update", "FieldComp"):
            state[after[key]].update(after)
        elif op == "PKUpdate":
            row = state.pop(before[key])
            state[after[key]] = {**row, **after}
        elif op == "Delete":
            state.pop(before[key], None)
    if current_csn is not None:
        snapshots.append((current_csn, state))
    return versions(snapshots, key, list(types))


def versions(snapshots: list[tuple[int, dict[Any, Row]]], key: str,
             columns: list[str]) -> list[Row]:
    """Versions from the table's state after each transaction (CSN, state)."""
    open_: dict[Any, Row] = {}
    done: list[Row] = []
    for csn, state in snapshots:
        for k in list(open_):
            row = state.get(k)
            if row is None or any(row[c] != open_[k][c] for c in columns):
                open_[k].update(__end_csn=csn, __is_current=False)
                done.append(open_.pop(k))
        for k, row in state.items():
            if k not in open_:
                open_[k] = {**row, "__start_csn": csn, "__end_csn": None, "__is_current": True}
    return sorted(done + list(open_.values()), key=lambda r: (r[key], r["__start_csn"]))


def delta_history(path: Path, key: str, columns: list[str]) -> list[Row]:
    """An SCD type 2 Delta table's rows, without the commit times, in (key, start) order."""
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    keep = [*columns, "__start_csn", "__end_csn", "__is_current"]
    for r in rows:
        assert r["__start_time"] is not None
        assert (r["__end_time"] is None) == (r["__end_csn"] is None)
    return sorted(({c: r[c] for c in keep} for r in rows),
                  key=lambda r: (r[key], r["__start_csn"]))
