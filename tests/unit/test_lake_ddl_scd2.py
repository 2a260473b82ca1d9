"""A DDL on the source of a ``SCD TYPE 2`` map keeps the Delta table's validity columns and
their values: schema evolution adds and drops only the source's own columns (before, the
validity columns counted as columns the source no longer had, and a rewrite dropped them)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from trailgate.apply.delta_history import HISTORY_FIELDS
from trailgate.apply.lake_ddl import LakeDdl
from trailgate.apply.parquet import table_directory
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.capture.postgres.types import classify
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text
from trailgate.trail.ddl import encode_marker

START = datetime(2026, 1, 1, tzinfo=UTC)
HISTORY = {"__start_csn": [100, 200], "__end_csn": [200, None], "__start_time": [START, START],
           "__end_time": [START, None], "__is_current": [False, True]}


def _tdef(cols: list[tuple[str, str]]) -> TableDef:
    columns = []
    for i, (name, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(name, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef("app", "t", columns, ["id"])


def _ddl(statement: str) -> TrailChange:
    env = [("C5", "7"), ("B3", "app"), ("B4", "t"), ("B5", "TABLE"), ("B6", "ALTER")]
    return TrailChange(Change(OpType.DDL, "app.t", text=encode_marker(statement, env)), 300,
                       "1.2.3", TrailPosition(1, 500))


def _history_table(tmp_path: Path) -> tuple[LakeDdl, Path]:
    params = parse_params_text("REPLICAT rep1\nTARGETDELTA x\n"
                               "MAP app.t, TARGET rep.t, SCD TYPE 2;", "dirprm/rep1.prm")
    assert isinstance(params, ReplicatParams)
    root = tmp_path / "lake"
    path = table_directory(root, "rep.t")
    schema = pa.schema([pa.field("id", pa.int32(), True), pa.field("v", pa.string(), True),
                        *HISTORY_FIELDS])
    write_deltalake(str(path), pa.table({"id": [1, 1], "v": ["a", "b"], **HISTORY},
                                        schema=schema))
    return LakeDdl(params, "DELTA", str(root), "REP1"), path


def _history(path: Path) -> dict[str, list[object]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().sort_by("__start_csn").to_pydict()
    return {name: rows[name] for name in HISTORY}


def test_add_column_keeps_the_validity_columns(tmp_path: Path):
    lake, path = _history_table(tmp_path)
    added = _tdef([("id", "integer"), ("v", "text"), ("w", "integer")])
    assert lake.apply(_ddl("ALTER TABLE app.t ADD COLUMN w integer"), added, ApplyResult())
    names = DeltaTable(str(path)).to_pyarrow_table().column_names
    assert "w" in names and _history(path) == HISTORY


def test_drop_column_rewrites_the_table_with_its_history(tmp_path: Path):
    lake, path = _history_table(tmp_path)
    dropped = _tdef([("id", "integer")])
    assert lake.apply(_ddl("ALTER TABLE app.t DROP COLUMN v"), dropped, ApplyResult())
    names = DeltaTable(str(path)).to_pyarrow_table().column_names
    assert "v" not in names and _history(path) == HISTORY
