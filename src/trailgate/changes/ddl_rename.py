"""A DDL record under the names a Data Pump's ``TABLE src, TARGET tgt`` gives its tables.

The pump writes a renamed table's DML under the target name; its DDL must follow, or the
Replicat downstream would see ``ALTER TABLE app.t`` beside rows of ``dr.t`` and judge the DDL
UNMAPPED.  So the marker's object (``B3``/``B4``), an index's table (``C12``/``C13``) and the
names in the statement (``C1``, through the same SQL lexer as the Replicat's MAP) take the
target names; every other key and character stays as it was (docs/ddl.md, "Data Pump").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from trailgate.apply.ddl_names import translate
from trailgate.model import Change
from trailgate.trail.ddl import parse_marker
from trailgate.trail.metadata import decode_kv, encode_kv

__all__ = ["rename_ddl"]

_DEPENDENT = frozenset({"INDEX", "TRIGGER", "RULE", "POLICY"})


def _split(name: str) -> tuple[str, str]:
    schema, _, table = name.rpartition(".")
    return schema, table


def rename_ddl(change: Change, route: Callable[[str], str | None]) -> Change:
    """``change`` (a DDL record) with the names ``route`` renames; the change itself when
    nothing is renamed or its marker cannot be read (the Replicat's DDLERROR decides)."""
    text = change.text or ""
    try:
        marker = parse_marker(text)
        items = decode_kv(text)
    except ValueError:
        return change
    new: dict[str, str] = {}
    obj = marker.qualified_name if marker.owner else ""
    master = marker.master_qualified_name or ""
    master_target = route(master) if "." in master else None
    if master_target and master_target != master:
        new["C12"], new["C13"] = _split(master_target)
        if marker.object_type in _DEPENDENT and marker.owner == _split(master)[0]:
            new["B3"] = new["C12"]  # an index lives in its table's schema
    target = route(obj) if obj and marker.object_type not in _DEPENDENT else None
    if target and target != obj:
        new["B3"], new["B4"] = _split(target)

    def map_table(name: str) -> str | None:
        out = route(name.replace('"', ""))
        return None if out is None or out == name.replace('"', "") else out

    def map_schema(schema: str) -> str | None:
        if master_target and _split(master)[0] == schema:
            return _split(master_target)[0]
        return None

    path = marker.settings().get("search_path", "")
    statement = translate(marker.statement, owner=marker.owner, map_table=map_table,
                          map_schema=map_schema,
                          search_path=[p.strip() for p in path.split(",")]).statement
    if statement != marker.statement:
        new["C1"] = statement
    if not new:
        return change
    text = encode_kv([(k, i, new.get(k, v) if i is None else v) for k, i, v in items])
    table = f"{new['B3']}.{new['B4']}" if "B4" in new else (
        f"{new['B3']}.{marker.name}" if "B3" in new else change.table)
    return replace(change, text=text, table=table)
