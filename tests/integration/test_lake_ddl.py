"""DDL on lake targets: Delta tables evolve (a column added with the value existing rows got
at the source, renamed, retyped, dropped; a table created at its CREATE, renamed, dropped as
DDLOPTIONS says), and a Parquet change log gets a new schema version that Spark reads with
``mergeSchema``."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import replicat_home, tdef
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.model import Change, OpType, TableDef
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.trail import TrailWriter
from trailgate.trail.ddl import encode_marker

pytestmark = pytest.mark.spark

V1 = tdef("app.t", [("id", "integer"), ("v", "text"), ("n", "integer")], ["id"])
V2 = tdef("app.t", [("id", "integer"), ("v", "text"), ("n", "integer"), ("d", "text")], ["id"])
V3 = tdef("app.t", [("id", "integer"), ("w", "text"), ("n", "bigint"), ("d", "text")], ["id"])
V4 = tdef("app.t", [("id", "integer"), ("w", "text"), ("d", "text")], ["id"])
U = tdef("app.u", [("k", "integer"), ("x", "text")], ["k"])


class Trail:
    def __init__(self, path: Path):
        self.w = TrailWriter(path, megabytes=1, fsync=False)
        self.csn = 10

    def txn(self, *changes: tuple[Change, TableDef | None], define: TableDef | None = None
            ) -> None:
        self.csn += 1
        self.w.begin_transaction(f"0.{self.csn}.1", self.csn)
        for change, table in changes:
            self.w.add_change(change, table)
            if change.op is OpType.DDL and define is not None:
                self.w.add_definition(define)
        self.w.commit_transaction()


def ddl(seq: int, statement: str, name: str, optype: str, **env: str) -> tuple[Change, None]:
    items = [("C5", str(seq)), ("B3", "app"), ("B4", name), ("B5", "TABLE"), ("B6", optype)]
    text = encode_marker(statement, items)
    if env:  # e.g. E3 for a column added with a default
        text += "".join(f",E3('{k}')='{v}'" for k, v in env.items())
    return Change(OpType.DDL, f"app.{name}", text=text), None


def ins(table: TableDef, values: dict[int, bytes | None]) -> tuple[Change, TableDef]:
    return Change(OpType.INSERT, table.qualified_name, after=values), table


def write(path: Path, *, retype: bool = True) -> None:
    """The trail; ``retype``: with the type change (a change log cannot merge it)."""
    t = Trail(path)
    t.txn(ins(V1, {0: b"1", 1: b"a", 2: b"10"}), ins(V1, {0: b"2", 1: b"b", 2: b"20"}))
    t.txn(ddl(1, "ALTER TABLE app.t ADD d text DEFAULT 'x'", "t", "ALTER", d="{x}"),
          ins(V2, {0: b"3", 1: b"c", 2: b"30", 3: b"y"}), define=V2)
    t.txn(ddl(2, "ALTER TABLE app.t RENAME COLUMN v TO w", "t", "ALTER"), define=tdef(
        "app.t", [("id", "integer"), ("w", "text"), ("n", "integer"), ("d", "text")], ["id"]))
    if retype:
        t.txn(ddl(3, "ALTER TABLE app.t ALTER COLUMN n TYPE bigint", "t", "ALTER"), define=V3)
        t.txn(ins(V3, {0: b"4", 1: b"e", 2: b"40000000000", 3: None}))
    else:
        renamed = tdef("app.t", [("id", "integer"), ("w", "text"), ("n", "integer"),
                                 ("d", "text")], ["id"])
        t.txn(ins(renamed, {0: b"4", 1: b"e", 2: b"400", 3: None}))
    t.txn(ddl(4, "ALTER TABLE app.t DROP COLUMN n", "t", "ALTER"), define=V4)
    t.txn(ins(V4, {0: b"5", 1: b"f", 2: b"z"}))
    t.txn(ddl(5, "CREATE TABLE app.u (k int PRIMARY KEY, x text)", "u", "CREATE"), define=U)
    t.txn(ins(U, {0: b"1", 1: b"before the rename"}))
    u2 = tdef("app.u2", [("k", "integer"), ("x", "text")], ["k"])
    t.txn(ddl(6, "ALTER TABLE app.u RENAME TO u2", "u2", "ALTER"), define=u2)
    t.txn(ins(u2, {0: b"2", 1: b"after the rename"}))
    t.txn(ddl(7, "DROP TABLE app.u2", "u2", "DROP"))
    t.w.close()


def test_delta_tables_follow_ddl(spark, tmp_path):
    home = replicat_home(tmp_path / "home", "REPLICAT rep1\nTARGETDELTA ./delta\n"
                                            "DDLOPTIONS REPORT\nMAP app.*, TARGET app.*;\n",
                         checkpoint_table=None)
    write(home.dirdat / "rt")
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    from deltalake import DeltaTable

    dt = DeltaTable(str(home.path / "delta" / "app" / "t"))
    rows = sorted(dt.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [f.name for f in dt.schema().fields] == ["id", "w", "d"]
    assert rows == [{"id": 1, "w": "a", "d": "x"}, {"id": 2, "w": "b", "d": "x"},
                    {"id": 3, "w": "c", "d": "y"}, {"id": 4, "w": "e", "d": None},
                    {"id": 5, "w": "f", "d": "z"}]
    # the dropped column's values are in the versions before its DROP (time travel)
    history = [DeltaTable(str(home.path / "delta" / "app" / "t"), version=v)
               for v in range(dt.version())]
    assert any("n" in [f.name for f in h.schema().fields] for h in history)
    # app.u: created at its CREATE, renamed with it, then archived at its DROP
    assert not (home.path / "delta" / "app" / "u").exists()
    assert not (home.path / "delta" / "app" / "u2").exists()
    archived = list((home.path / "delta" / ".dropped" / "app").iterdir())
    assert [p.name for p in archived] == ["u2.7"]
    assert [f.name for f in DeltaTable(str(archived[0])).schema().fields] == ["k", "x"]
    # its history went with the rename (MOVE) and the archive: rows from before and after
    assert sorted(r["k"] for r in DeltaTable(str(archived[0])).to_pyarrow_table()
                  .to_pylist()) == [1, 2]
    report = home.report_file("REP1").read_text()
    assert "Delta table app.t rewritten with its new columns" in report
    # a second run (a replay of nothing) changes nothing
    assert run_replicat_group(home, "REP1", RunOptions(once=True), spark=spark) == 0
    assert DeltaTable(str(home.path / "delta" / "app" / "t")).version() == dt.version()


def test_parquet_change_log_gets_a_new_schema_version(spark, tmp_path):
    home = replicat_home(tmp_path / "home", "REPLICAT rep2\nTARGETPARQUET ./cdc\n"
                                            "MAP app.*, TARGET app.*;\n",
                         name="REP2", checkpoint_table=None)
    write(home.dirdat / "rt", retype=False)  # Spark's mergeSchema does not widen types
    assert run_replicat_group(home, "REP2", RunOptions(once=True), spark=spark) == 0
    log = spark.read.option("mergeSchema", "true").parquet(str(home.path / "cdc" / "app" / "t"))
    after = log.select("after.*").columns
    assert {"id", "v", "w", "n", "d"} <= set(after)
    rows = {r["id"]: r.asDict() for r in log.select("after.*").collect()}
    assert rows[1]["v"] == "a" and rows[1]["d"] is None
    assert rows[3]["d"] == "y" and rows[5]["w"] == "f" and rows[5]["n"] is None
    assert rows[4]["n"] == 400 and rows[4]["w"] == "e" and rows[4]["v"] is None
    # LAKERENAME MOVE (default): app.u's log directory became app.u2's, rows and all;
    # LAKEDROP ARCHIVE (default): at the DROP it moved to .dropped/app/u2.<DDL sequence>
    assert not (home.path / "cdc" / "app" / "u").exists()
    assert not (home.path / "cdc" / "app" / "u2").exists()
    archived = home.path / "cdc" / ".dropped" / "app"
    assert [p.name for p in archived.iterdir()] == ["u2.7"]
    u_log = spark.read.option("mergeSchema", "true").parquet(str(archived / "u2.7"))
    assert sorted((r["k"], r["x"]) for r in u_log.select("after.*").collect()) == [
        (1, "before the rename"), (2, "after the rename")]
