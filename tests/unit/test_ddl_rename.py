"""A Data Pump's TABLE…TARGET rename applied to DDL records (changes/ddl_rename.py)."""

from __future__ import annotations

from trailgate.changes.ddl_rename import rename_ddl
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType
from trailgate.trail.ddl import encode_marker, parse_marker

ROUTE = Router.of([("app.*", "dr.*")], ["app.skip"]).route


def ddl(statement: str, name: str, objtype: str = "TABLE", **env: str) -> Change:
    items = [("C5", "7"), ("B3", "app"), ("B4", name), ("B5", objtype), ("B6", "ALTER"),
             *env.items()]
    return Change(OpType.DDL, f"app.{name}",
                  text=encode_marker(statement, items, settings={"search_path": "app"}))


def test_rename_to_keeps_the_new_name_unqualified_and_moves_the_object():
    out = rename_ddl(ddl("ALTER TABLE app.u RENAME TO u2", "u2"), ROUTE)
    m = parse_marker(out.text or "")
    assert (m.statement, m.qualified_name, out.table) == (
        "ALTER TABLE dr.u RENAME TO u2", "dr.u2", "dr.u2")
    assert m.get("C5") == "7" and m.settings() == {"search_path": "app"}


def test_referenced_tables_and_index_schema_follow_their_map():
    out = rename_ddl(ddl("CREATE TABLE t3 (id int REFERENCES app.t (id))", "t3"), ROUTE)
    assert parse_marker(out.text or "").statement == \
        "CREATE TABLE dr.t3 (id int REFERENCES dr.t (id))"
    index = rename_ddl(ddl("DROP INDEX app.t_i", "t_i", objtype="INDEX", C12="app",
                           C13="t"), ROUTE)
    m = parse_marker(index.text or "")
    assert (m.statement, m.qualified_name, m.master_qualified_name) == (
        "DROP INDEX dr.t_i", "dr.t_i", "dr.t")


def test_names_no_rule_renames_and_unreadable_markers_stay_as_they_are():
    same = ddl("ALTER TABLE app.skip ADD c int", "skip")
    assert rename_ddl(same, ROUTE) is same
    broken = Change(OpType.DDL, "app.t", text=",C1=not marker text")
    assert rename_ddl(broken, ROUTE) is broken
