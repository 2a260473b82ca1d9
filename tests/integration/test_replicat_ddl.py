"""The Replicat applies DDL records to PostgreSQL in trail order, with MAP's names, and a DDL
that fails goes as DDLERROR says: a message naming the DDL sequence, the statement, the
trail position and the rule, and nothing applied before it lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from replicat_support import pg_target, query, replicat_home, tdef
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.errors import TrailgateError
from trailgate.model import Change, OpType, TableDef
from trailgate.replicat.group import RunOptions, run_replicat_group
from trailgate.trail import TrailWriter
from trailgate.trail.ddl import encode_marker

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

OLD = tdef("app.t", [("id", "integer"), ("v", "text")], ["id"])
NEW = tdef("app.t", [("id", "integer"), ("v", "text"), ("w", "integer")], ["id"])


def ddl(seq: int, statement: str, name: str = "t", optype: str = "ALTER", **extra: str
        ) -> Change:
    env = [("C5", str(seq)), ("B3", "app"), ("B4", name), ("B5", "TABLE"), ("B6", optype),
           *extra.items()]
    return Change(OpType.DDL, f"app.{name}", text=encode_marker(statement, env,
                                                               settings={"search_path": "app"}))


def insert(values: dict[int, bytes]) -> Change:
    return Change(OpType.INSERT, "app.t", after=values)


def write(trail: Path) -> None:
    w = TrailWriter(trail, megabytes=1, fsync=False)
    csn = 100

    def txn(*changes: Change, define: TableDef | None = None) -> None:
        nonlocal csn
        csn += 1
        w.begin_transaction(f"0.{csn}.1", csn)
        for change in changes:
            w.add_change(change, None if change.op is OpType.DDL else
                         (NEW if change.after and 2 in change.after else OLD))
            if change.op is OpType.DDL and define is not None:
                w.add_definition(define)
        w.commit_transaction()

    txn(insert({0: b"1", 1: b"a"}))
    # unqualified, found through the recorded search_path; MAP renames the schema
    txn(ddl(11, "ALTER TABLE t ADD w int"), insert({0: b"2", 1: b"b", 2: b"5"}), define=NEW)
    txn(ddl(12, "ALTER TABLE app.missing ADD x int", name="missing"))  # no such target table
    txn(insert({0: b"3", 1: b"c", 2: b"6"}))
    txn(Change(OpType.DDL, "app.t", text=encode_marker(
        ",C1=garbled by hand", [("C5", "13"), ("E1", "the marker text cannot be read")])))
    txn(ddl(14, "ALTER TABLE t ADD w int"))  # the target cannot run it: w exists
    txn(insert({0: b"4", 1: b"d", 2: b"7"}))
    w.close()


def run(home, spark, *, once: bool = False) -> str:  # type: ignore[no-untyped-def]
    """A run (streaming the apply, or ``--once``): its error message, or "" when it ends
    normally."""
    opts = RunOptions(once=True) if once else RunOptions(max_batches=30)
    try:
        assert run_replicat_group(home, "REP1", opts, spark=spark) == 0
    except TrailgateError as exc:
        return str(exc)
    return ""


def test_ddl_errors_stop_or_pass_as_ddlerror_says(pg_db, tmp_path, spark):
    pg_target(pg_db, "CREATE SCHEMA rep; CREATE TABLE rep.t (id int PRIMARY KEY, v text);")
    prm = ("REPLICAT rep1\nTARGETDB {db}\nSPARK MASTER local[1]\nDDLOPTIONS REPORT\n"
           "DISCARDFILE ./dirdsc/rep1.dsc\n{extra}MAP app.*, TARGET rep.*;\n")
    home = replicat_home(tmp_path / "home", prm.format(db=pg_db, extra=""))
    write(home.dirdat / "rt")

    error = run(home, spark)
    assert "DDL sequence 12 [ALTER TABLE app.missing ADD x int]" in error, error
    assert "error 42P01" in error and "trail position 0:" in error
    assert "DDLERROR DEFAULT ABEND" in error
    # everything before its transaction was applied: the DDL (under its MAP name), its row
    assert query(pg_db, "SELECT id, v, w FROM rep.t ORDER BY id") == [(1, "a", None),
                                                                     (2, "b", 5)]
    report = home.report_file("REP1").read_text()
    assert "Traceback" not in report
    assert "DDL is of mapped scope, after mapping new operation [ALTER TABLE rep.t ADD w " \
           "int]" in report

    home.param_file("REP1").write_text(prm.format(db=pg_db, extra="DDLERROR 42P01 IGNORE\n"))
    error = run(home, spark)
    assert "DDL sequence 13" in error and "the marker text cannot be read" in error
    assert query(pg_db, "SELECT id FROM rep.t ORDER BY id") == [(1,), (2,), (3,)]
    assert "ignored (DDLERROR 42P01 IGNORE)" in home.report_file("REP1").read_text()

    home.param_file("REP1").write_text(prm.format(
        db=pg_db, extra="DDLERROR 42P01 IGNORE\nDDLERROR DEFAULT DISCARD RETRYOP MAXRETRIES 1 "
                        "RETRYDELAY 0.1\n"))
    assert run(home, spark, once=True) == ""
    assert query(pg_db, "SELECT id, w FROM rep.t ORDER BY id") == [(1, None), (2, 5), (3, 6),
                                                                  (4, 7)]
    discards = (home.path / "dirdsc" / "rep1.dsc").read_text()
    assert "Discarded DDL from action DISCARD" in discards
    assert "ALTER TABLE rep.t ADD w int" in discards and "error 42701" in discards
    report = home.report_file("REP1").read_text()
    assert "DDL error ignored for next retry: error code [42701]" in report
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck.stats["rep.t"].ddl == 1 and ck.stats["rep.t"].inserts == 4


def test_replicat_ddl_rules_and_colmap_keycols_after_ddl(pg_db, tmp_path, spark):
    """``DDL INCLUDE MAPPED EXCLUDE OBJTYPE 'INDEX'`` on a real Replicat: the MAPPED ALTERs
    run under MAP's name, the index and an UNMAPPED table's DDL do not; COLMAP USEDEFAULTS
    and KEYCOLS see the columns the DDL added (the target's definitions are read again)."""
    pg_target(pg_db, "CREATE SCHEMA rep; CREATE TABLE rep.t (id int, v text, note text);"
                     "CREATE SCHEMA app; CREATE TABLE app.other (k int);")
    prm = ("REPLICAT rep1\nTARGETDB {db}\nSPARK MASTER local[1]\nDDLOPTIONS REPORT\n"
           "DDL INCLUDE MAPPED EXCLUDE OBJTYPE 'INDEX'\n"
           "MAP app.t, TARGET rep.t, KEYCOLS (id), "
           "COLMAP (USEDEFAULTS, note = @GETENV('GGHEADER', 'OPTYPE'));\n")
    home = replicat_home(tmp_path / "home", prm.format(db=pg_db))
    wider = tdef("app.t", [("id", "integer"), ("v", "text"), ("w", "integer"),
                           ("x", "text")], ["id"])
    w = TrailWriter(home.dirdat / "rt", megabytes=1, fsync=False)
    csn = 200

    def txn(*changes: tuple[Change, TableDef | None], define: TableDef | None = None) -> None:
        nonlocal csn
        csn += 1
        w.begin_transaction(f"0.{csn}.1", csn)
        for change, table in changes:
            w.add_change(change, table)
            if change.op is OpType.DDL and define is not None:
                w.add_definition(define)
        w.commit_transaction()

    txn((insert({0: b"1", 1: b"a"}), OLD))
    txn((ddl(21, "ALTER TABLE app.t ADD w int"), None),
        (insert({0: b"2", 1: b"b", 2: b"5"}), NEW), define=NEW)
    txn((Change(OpType.DDL, "app.t_v", text=encode_marker(
        "CREATE INDEX t_v ON app.t (v)", [("C5", "22"), ("B3", "app"), ("B4", "t_v"),
                                          ("B5", "INDEX"), ("B6", "CREATE"), ("C12", "app"),
                                          ("C13", "t")])), None))
    txn((ddl(23, "ALTER TABLE app.other ADD z int", name="other"), None))
    txn((ddl(24, "ALTER TABLE app.t ADD x text"), None),
        (insert({0: b"3", 1: b"c", 2: b"6", 3: b"q"}), wider), define=wider)
    txn((Change(OpType.UPDATE, "app.t", before={0: b"2", 1: b"b", 2: b"5", 3: None},
                after={0: b"2", 1: b"b", 2: b"50", 3: b"r"}), wider))
    w.close()

    assert run(home, spark, once=True) == ""
    assert query(pg_db, "SELECT id, v, w, x, note FROM rep.t ORDER BY id") == [
        (1, "a", None, None, "INSERT"), (2, "b", 50, "r", "UPDATE"),
        (3, "c", 6, "q", "INSERT")]
    assert query(pg_db, "SELECT indexname FROM pg_indexes WHERE schemaname = 'rep'") == []
    assert query(pg_db, "SELECT attname FROM pg_attribute WHERE attrelid = "
                        "'app.other'::regclass AND attnum > 0") == [("k",)]
    report = home.report_file("REP1").read_text()
    assert "DDL operation excluded [EXCLUDE OBJTYPE 'INDEX']" in report, report
    assert "DDL operation excluded [no INCLUDE clause takes it], optype [ALTER], objtype " \
           "[TABLE], objowner \"app\", objname \"other\"" in report
    ck = home.checkpoints.load("REP1", "REPLICAT")
    assert ck.stats["rep.t"].ddl == 2
