"""Where a source table goes through a Replicat's MAPs, and which columns go where.

The initial load and the compare follow the Replicat's ``MAP``s — the same name translation,
and columns by name or ``COLMAP (tcol = scol)`` — so they find rows where the Replicat puts
them.  A target that exists is checked before anything is read: every source column needs a
target column and a target column without a source must accept NULL; otherwise a
ConfigError names the table and what to do.  COLMAP expressions and MAP WHERE are refused
(a whole-table copy or compare cannot honour them row by row here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trailgate.apply.mapping import TargetTable
from trailgate.capture.postgres.catalog import SourceTable
from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.errors import ConfigError
from trailgate.params.model import ColumnRef, MapSpec, ReplicatParams
from trailgate.params.names import find_map, parse_name, target_name

__all__ = ["Destination", "check_columns", "destination"]


@dataclass(frozen=True, slots=True)
class Destination:
    """A source table's target: schema and name (as the target's catalog spells them) and
    the MAP that sent it there (None: a load to a file keeps the source's names)."""

    schema: str
    name: str
    spec: MapSpec | None


def destination(table: SourceTable, params: ReplicatParams | None) -> Destination | None:
    """Where ``table`` goes through ``params``' MAPs (None: no MAP takes it)."""
    if params is None:
        return Destination(table.schema, table.name, None)
    source = f"{_part(table.schema)}.{_part(table.name)}"
    spec = find_map(params.maps, source, params.map_excludes)
    if spec is None:
        return None
    where: dict[str, Any] = {"path": spec.path or None, "line": spec.line or None}
    if spec.where is not None:
        raise ConfigError(f"MAP {spec.source}, WHERE: an initial load copies whole tables; "
                          f"load {table.qualified_name} without the WHERE (a MAP of its own) "
                          f"or filter its rows afterwards", **where)
    for entry in spec.colmap or []:
        if not isinstance(entry.expr, ColumnRef):
            raise ConfigError(f"MAP {spec.source}, COLMAP ({entry.target} = …): an initial "
                              f"load maps columns by name or as tcol = scol; load "
                              f"{table.qualified_name} into a table without the expression "
                              f"column, or fill it afterwards", **where)
    parts = [p.text if p.quoted else p.text.lower()
             for p in parse_name(target_name(spec, source))]
    return Destination(parts[-2], parts[-1], spec)


def _part(text: str) -> str:
    return text if text == text.lower() and text.replace("_", "").isalnum() else \
        '"' + text.replace('"', '""') + '"'


def _pairs(table: SourceTable, spec: MapSpec | None) -> list[tuple[str, str]]:
    """(source column, target column name as mapped) for every column the load reads."""
    explicit: dict[str, str] = {}
    for entry in (spec.colmap or []) if spec is not None else []:
        assert isinstance(entry.expr, ColumnRef)
        explicit[entry.expr.name if entry.expr.quoted else entry.expr.name.lower()] = (
            entry.target if entry.target_quoted else entry.target.lower())
    by_default = spec is None or spec.colmap is None or spec.usedefaults
    out = []
    for col in table.read_columns:
        target = explicit.get(col.name) or explicit.get(col.name.lower())
        if target is None and by_default:
            target = col.name
        if target is not None:
            out.append((col.name, target))
    return out


def check_columns(table: SourceTable, dest: Destination, target: TargetTable | None,
                  where: str) -> list[ReadColumn]:
    """The load's columns for ``table`` into ``target`` (None: a table to create, with the
    source's types); a ConfigError naming the table and what to do when they do not fit."""
    pairs = _pairs(table, dest.spec)
    what = f"{dest.schema}.{dest.name}"
    if target is None:
        return [ReadColumn(s, table.column(s).type_name, t, table.column(s).type_name)
                for s, t in pairs]
    out = []
    unmapped = []
    for s, t in pairs:
        col = target.find(t)
        if col is None:
            unmapped.append(s)
            continue
        out.append(ReadColumn(s, table.column(s).type_name, col.name, col.type_name))
    if unmapped:
        raise ConfigError(
            f"target table {what} in {where} has no column for "
            f"{', '.join(unmapped)} of source table {table.qualified_name}: add the "
            f"column(s) to the target, or map them with COLMAP in the MAP; the load copies "
            f"every column and leaves nothing out silently")
    filled = {c.target for c in out}
    required = [c.name for c in target.columns if c.name not in filled and not c.nullable]
    if required:
        raise ConfigError(
            f"target table {what} in {where} has NOT NULL column(s) {', '.join(required)} "
            f"that no column of source table {table.qualified_name} fills: map them with "
            f"COLMAP, allow NULL, or give them a default and drop NOT NULL for the load")
    return out
