"""What a compare compares: the source tables an Extract captures, mapped by a Replicat.

The tables are those the Extract's ``TABLE`` statements select, each sent where the
Replicat's ``MAP``s send it (the same rules as the Replicat and the initial load), with the
columns paired by name or ``COLMAP (tcol = scol)``.  A table is split into ranges of its
key's first column when that is an integer (both sides are read with the same bounds, as
literals), else compared whole.  Everything is plain data that pickles to Spark tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trailgate.apply.table_map import check_columns, destination
from trailgate.capture.postgres.catalog import find_tables, quote_name
from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.capture.postgres.ranges import KeyRange, plan_ranges
from trailgate.db.connect import connect, describe
from trailgate.errors import ConfigError
from trailgate.extract.postgres.config import source_conninfo
from trailgate.home import Home
from trailgate.params import ExtractParams, parse_group_params
from trailgate.replicat.config import ReplicatConfig, load_replicat_config

__all__ = ["CompareJob", "CompareTable", "resolve_job"]

#: Rows a compare range aims at.
ROWS_PER_RANGE = 250_000


@dataclass(frozen=True, slots=True)
class CompareTable:
    """One table pair.  ``key`` are source column names (empty: the table has no key and
    rows are compared as a multiset of whole rows)."""

    number: int
    source: str
    source_sql: str
    target_schema: str
    target_name: str
    columns: tuple[ReadColumn, ...]
    key: tuple[str, ...]
    key_column: str | None
    ranges: tuple[KeyRange, ...]

    @property
    def target(self) -> str:
        return f"{self.target_schema}.{self.target_name}"

    @property
    def target_sql(self) -> str:
        return quote_name(self.target_schema, self.target_name)

    def key_columns(self) -> list[ReadColumn]:
        by_source = {c.source: c for c in self.columns}
        return [by_source[k] for k in self.key] if self.key else list(self.columns)


@dataclass(frozen=True, slots=True)
class CompareJob:
    """A compare: the source, the target (``POSTGRES`` conninfo or ``DELTA`` root) and the
    tables; ``missing`` lists tables whose target does not exist (reported, not read)."""

    extract: str
    replicat: str
    source: str
    target_kind: str
    target: str
    tables: dict[int, CompareTable]
    missing: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def describe_source(self) -> str:
        return describe(self.source)

    def describe_target(self) -> str:
        return describe(self.target) if self.target_kind == "POSTGRES" else \
            f"Delta tables under {self.target}"


def _extract_params(home: Home, extract: str) -> ExtractParams:
    info = home.require_group(extract, "EXTRACT")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ExtractParams) or info.source not in ("TRANLOG",
                                                                      "SOURCEISTABLE"):
        raise ConfigError(f"EXTRACT {info.name} does not read a PostgreSQL database: compare "
                          f"names the Extract whose SOURCEDB and TABLEs give the source")
    return params


def _target_table(rcfg: ReplicatConfig, conn: Any, schema: str, name: str) -> Any:
    if rcfg.target_kind == "POSTGRES":
        from trailgate.apply.postgres import PgCatalog

        return PgCatalog(conn, rcfg.target).describe(schema, name)
    from trailgate.apply.delta import DeltaCatalog

    return DeltaCatalog(rcfg.target).describe(schema, name)


def resolve_job(home: Home, extract: str, replicat: str, patterns: list[str] | None = None,
                rows_per_range: int = ROWS_PER_RANGE) -> CompareJob:
    """The tables to compare and how (a ConfigError names what is wrong)."""
    from trailgate.params.names import match_table

    params = _extract_params(home, extract)
    rcfg = load_replicat_config(home, replicat)
    if rcfg.target_kind not in ("POSTGRES", "DELTA"):
        raise ConfigError(f"REPLICAT {rcfg.group} writes {rcfg.target_kind} change logs: "
                          f"compare reads PostgreSQL and Delta targets")
    source = source_conninfo(home, params)
    tables: dict[int, CompareTable] = {}
    missing: list[tuple[str, str]] = []
    notes: list[str] = []
    where = (f"PostgreSQL {describe(rcfg.target)}" if rcfg.target_kind == "POSTGRES"
             else f"Delta tables under {rcfg.target}")
    tconn = connect(rcfg.target) if rcfg.target_kind == "POSTGRES" else None
    try:
        with connect(source, application_name="trailgate compare") as conn:
            seen: set[int] = set()
            for spec in params.tables:
                found = find_tables(conn, spec.name, params.table_excludes)
                if not found:
                    raise ConfigError(f"TABLE {spec.name}: no such table in the source "
                                      f"database {conn.info.dbname}", path=spec.path,
                                      line=spec.line)
                for table in found:
                    if table.oid in seen or (patterns and not any(
                            match_table(p, table.qualified_name) for p in patterns)):
                        continue
                    seen.add(table.oid)
                    dest = destination(table, rcfg.params)
                    if dest is None:
                        notes.append(f"{table.qualified_name}: no MAP of REPLICAT "
                                     f"{rcfg.group} takes it; not compared")
                        continue
                    target = _target_table(rcfg, tconn, dest.schema, dest.name)
                    if target is None:
                        missing.append((table.qualified_name, f"{dest.schema}.{dest.name}"))
                        continue
                    cols = check_columns(table, dest, target, where)
                    ranges = plan_ranges(conn, table, rows_per_range=rows_per_range)
                    if ranges[0].kind == "ctid":  # not valid on the target: whole table
                        ranges = [KeyRange(0, "all")]
                    number = len(tables)
                    tables[number] = CompareTable(
                        number, table.qualified_name, table.sql_name, dest.schema, dest.name,
                        tuple(cols), tuple(table.key),
                        table.key[0] if ranges[0].kind == "key" else None, tuple(ranges))
    finally:
        if tconn is not None:
            tconn.close()
    if patterns and not tables and not missing:
        raise ConfigError(f"no table of EXTRACT {params.name} matches "
                          f"{', '.join(patterns)}")
    return CompareJob(params.name, rcfg.group, source, rcfg.target_kind, rcfg.target,
                      tables, tuple(missing), tuple(notes))
