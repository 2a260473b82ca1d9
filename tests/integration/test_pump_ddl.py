"""The Data Pump's own DDL rules on a real trail: ``DDL INCLUDE MAPPED`` (MAPPED meaning its
TABLE statements) keeps the DDL of its tables and drops the rest, an EXCLUDE clause wins, and
a table renamed by ``TABLE src, TARGET tgt`` has its DDL and new definition written under
the target name, as its DML is."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import tdef
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)
from test_pump import args, pump_home

from trailgate.model import Change, OpType, TableDef
from trailgate.pump.group import run_pump
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.ddl import encode_marker, parse_marker

pytestmark = pytest.mark.spark

OLD = tdef("app.t", [("id", "integer"), ("v", "text")], ["id"])
NEW = tdef("app.t", [("id", "integer"), ("v", "text"), ("w", "integer")], ["id"])
OTHER = tdef("app.u", [("id", "integer")], ["id"])


def ddl(seq: int, statement: str, owner: str, name: str, objtype: str = "TABLE",
        optype: str = "ALTER", **extra: str) -> Change:
    env = [("C5", str(seq)), ("B3", owner), ("B4", name), ("B5", objtype), ("B6", optype),
           *extra.items()]
    return Change(OpType.DDL, f"{owner}.{name}" if owner else name,
                  text=encode_marker(statement, env, settings={"search_path": "app"}))


def write(trail: Path) -> None:
    w = TrailWriter(trail, megabytes=1, fsync=False)
    csn = 100

    def txn(*items: tuple[Change, TableDef | None], define: TableDef | None = None) -> None:
        nonlocal csn
        csn += 1
        w.begin_transaction(f"0.{csn}.1", csn)
        for change, table in items:
            w.add_change(change, table)
            if change.op is OpType.DDL and define is not None:
                w.add_definition(define)
        w.commit_transaction()

    txn((Change(OpType.INSERT, "app.t", after={0: b"1", 1: b"a"}), OLD))
    # mapped, unqualified (found through search_path): kept, renamed, its definition too
    txn((ddl(11, "ALTER TABLE t ADD w int", "app", "t"), None),
        (Change(OpType.INSERT, "app.t", after={0: b"2", 1: b"b", 2: b"5"}), NEW), define=NEW)
    # an index of a mapped table: MAPPED by its table; the index moves with it
    txn((ddl(12, "CREATE INDEX t_w ON app.t (w)", "app", "t_w", objtype="INDEX",
             optype="CREATE", C12="app", C13="t"), None))
    # a table the pump does not take (UNMAPPED): dropped
    txn((ddl(13, "ALTER TABLE app.u ADD x int", "app", "u"), None),
        (Change(OpType.INSERT, "app.u", after={0: b"9"}), OTHER))
    # mapped but excluded (EXCLUDE OPTYPE TRUNCATE … wins over INCLUDE MAPPED)
    txn((ddl(14, "COMMENT ON TABLE app.t IS 'x'", "app", "t", optype="COMMENT"), None))
    # OTHER (a schema): dropped under INCLUDE MAPPED
    txn((ddl(15, "CREATE SCHEMA app3", "", "app3", objtype="SCHEMA", optype="CREATE"),
         None))
    txn((Change(OpType.INSERT, "app.t", after={0: b"3", 1: b"c", 2: b"6"}), NEW))
    w.close()


def records(trail: Path) -> list[tuple[str, str, str | None]]:
    """(op, table, the statement of a DDL record) of every change, and ("DEF", name,
    column names) of every definition that follows a DDL record."""
    out: list[tuple[str, str, str | None]] = []
    after_ddl = False
    for rec in TrailReader(trail).records():
        if rec.change is not None:
            c = rec.change
            out.append((c.op.name, c.table, parse_marker(c.text or "").statement
                        if c.op is OpType.DDL else None))
            after_ddl = c.op is OpType.DDL
        elif rec.table_def is not None and after_ddl:
            out.append(("DEF", rec.table_def.qualified_name,
                        ",".join(col.name for col in rec.table_def.columns)))
            after_ddl = False
    return out


def test_pump_ddl_rules_keep_mapped_and_rename_with_target(tmp_path: Path,
                                                           spark: object) -> None:
    remote = tmp_path / "remote" / "dirdat"
    home = pump_home(tmp_path / "home", remote,
                     tables="DDL INCLUDE MAPPED EXCLUDE OPTYPE COMMENT\n"
                            "TABLE app.t, TARGET dr.t;", extra="NOPASSTHRU\n")
    write(home.dirdat / "aa")
    assert run_pump(home, "PUMP1", args(), spark=spark) == 0
    got = records(remote / "rt")
    assert got == [
        ("INSERT", "dr.t", None),
        ("DDL", "dr.t", "ALTER TABLE dr.t ADD w int"),
        ("DEF", "dr.t", "id,v,w"),
        ("INSERT", "dr.t", None),
        ("DDL", "dr.t_w", "CREATE INDEX t_w ON dr.t (w)"),
        ("INSERT", "dr.t", None),
    ], got
    ddls = [parse_marker(r.change.text or "") for r in TrailReader(remote / "rt").records()
            if r.change is not None and r.change.op is OpType.DDL]
    assert [(m.owner, m.name, m.master_qualified_name, m.get("C5")) for m in ddls] == [
        ("dr", "t", None, "11"), ("dr", "t_w", "dr.t", "12")]
    # every other key is as the source wrote it
    assert ddls[0].settings() == {"search_path": "app"} and ddls[0].ddl_type == "ALTER"

