"""MAP … TARGET: which target table a source table goes to, and how its columns map.

The :class:`Mapper` turns a :class:`TrailChange` into a :class:`MappedChange` (target table,
operation, the key that locates the row, the values as PostgreSQL input text), resolving
wildcards, COLMAP, KEYCOLS and WHERE against target definitions from a
:class:`TargetCatalog`.  A row is located by KEYCOLS, else the target's primary key, else
the source key, else every mapped column (seed 000).  docs/replicat.md, "Mapping".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from trailgate.apply.expressions import (
    ABSENT,
    Evaluator,
    Predicate,
    Value,
    compile_condition,
    compile_expr,
    find_source_column,
)
from trailgate.apply.records import TrailChange
from trailgate.apply.values import pg_type_for_source, text_converter
from trailgate.capture.postgres.types import classify
from trailgate.errors import ConfigError, TargetError
from trailgate.model import Column, OpType, TableDef, Values
from trailgate.params.model import ColumnRef, FunctionCall, Literal, MapSpec, ReplicatParams
from trailgate.params.names import find_map, parse_name, target_name

__all__ = [
    "SNAPSHOT_TOKEN",
    "ColumnAssignment",
    "MappedChange",
    "Mapper",
    "MappingError",
    "StaticCatalog",
    "TableMapping",
    "TargetCatalog",
    "TargetColumn",
    "TargetTable",
]

#: The user token an Extract puts on a table's records while an incremental snapshot of it
#: runs: they are applied with collision handling (a chunk row is an upsert, an update or
#: delete of a row not loaded yet does nothing); ``resync`` marks the truncate it starts with.
SNAPSHOT_TOKEN = "TG_SNAPSHOT"

#: Operations a mapped change can carry (FIELD_COMP and full UPDATE both become UPDATE).
APPLIED_OPS = frozenset({OpType.INSERT, OpType.UPDATE, OpType.DELETE, OpType.PK_UPDATE,
                         OpType.TRUNCATE})
_MAPPED_OPS = APPLIED_OPS | {OpType.FIELD_COMP}


class MappingError(TargetError):
    """A record cannot be mapped (e.g. its key columns are missing): names table and position."""


@dataclass(frozen=True, slots=True)
class TargetColumn:
    """A target column; ``type_name`` is in PostgreSQL's spelling (``format_type``)."""

    name: str
    type_name: str
    nullable: bool = True


@dataclass(slots=True)
class TargetTable:
    """A target table as its catalog describes it; ``exists`` False means "create on use"."""

    schema: str
    name: str
    columns: list[TargetColumn]
    key: list[str] = field(default_factory=list)
    exists: bool = True
    overriding: bool = False  # has GENERATED ALWAYS identity columns (PostgreSQL)
    triggers: bool = False  # has enabled triggers or rules: they see each change (PostgreSQL)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def find(self, name: str, quoted: bool = False) -> TargetColumn | None:
        """The column called ``name``: exact first, then (unless quoted) case-insensitive."""
        for col in self.columns:
            if col.name == name:
                return col
        if not quoted:
            lowered = name.lower()
            for col in self.columns:
                if col.name.lower() == lowered:
                    return col
        return None


class TargetCatalog(Protocol):
    """Where target definitions come from (PostgreSQL's catalog, Delta table logs)."""

    #: True if a missing table is created on first use (Delta); False: it must exist.
    creates_tables: bool

    def split(self, name: str) -> tuple[str, str]:
        """``schema.table`` as written in a MAP target -> the catalog's (schema, table)."""
        ...

    def describe(self, schema: str, table: str) -> TargetTable | None:
        """The table's definition, or None if it does not exist."""
        ...

    def where(self) -> str:
        """Where tables are looked up, for messages (``user@host:5432/db``, a path)."""
        ...


class StaticCatalog:
    """A catalog of given definitions (tests; targets described elsewhere)."""

    def __init__(self, tables: list[TargetTable], *, creates_tables: bool = False,
                 label: str = "the target catalog"):
        self.tables = {(t.schema, t.name): t for t in tables}
        self.creates_tables = creates_tables
        self.label = label

    def split(self, name: str) -> tuple[str, str]:
        parts = parse_name(name)
        schema, table = (p.text if p.quoted else p.text.lower() for p in parts[-2:])
        return schema, table

    def describe(self, schema: str, table: str) -> TargetTable | None:
        return self.tables.get((schema, table))

    def where(self) -> str:
        return self.label


@dataclass(slots=True)
class ColumnAssignment:
    """``target = expression``; ``source`` is the source column for a plain column mapping."""

    target: TargetColumn
    evaluate: Evaluator
    source: Column | None = None


_Field = tuple[str, int, Callable[[bytes], str] | None, Evaluator]


def _field(a: ColumnAssignment) -> _Field:
    if a.source is not None:
        return (a.target.name, a.source.index, text_converter(a.source), a.evaluate)
    return (a.target.name, -1, None, a.evaluate)


@dataclass(slots=True)
class TableMapping:
    """How one source table maps to its target; built once per source definition."""

    spec: MapSpec
    source: TableDef
    target: TargetTable
    assignments: list[ColumnAssignment]
    key: list[ColumnAssignment]
    key_kind: str  # KEYCOLS | PRIMARY | SOURCE | ALL
    where: Predicate | None = None
    # (target column, source index or -1, converter or None, evaluator): how map_change
    # reads each value; a plain column is read and converted without the evaluator's call
    fields: tuple[_Field, ...] = ()
    key_fields: tuple[_Field, ...] = ()
    # every field a plain column: (target column, source index, converter) for a
    # comprehension; None when a COLMAP expression is among them
    plain: tuple[tuple[str, int, Callable[[bytes], str]], ...] | None = None

    def __post_init__(self) -> None:
        self.fields = tuple(_field(a) for a in self.assignments)
        self.key_fields = tuple(_field(a) for a in self.key)
        plain = tuple((name, i, conv) for name, i, conv, _ in self.fields if conv is not None)
        if len(plain) == len(self.fields):
            self.plain = plain

    @property
    def handle_collisions(self) -> bool:
        return self.spec.handle_collisions

    @property
    def all_columns_key(self) -> bool:
        return self.key_kind == "ALL"

    def reperror_action(self, *codes: str) -> str:
        """The REPERROR response for an error known by ``codes`` (SQLSTATE, GoldenGate or
        Oracle number): the first exact rule, else DEFAULT, else DEFAULT2, else ABEND."""
        rules = self.spec.reperror
        for code in codes:
            if code in rules:
                return rules[code]
        return rules.get("DEFAULT") or rules.get("DEFAULT2") or "ABEND"


@dataclass(slots=True)
class MappedChange:
    """A change in target terms.

    ``key`` locates the row (for a PK update: the *old* key); ``values`` are the columns to
    set, only those the record carries (an update sets nothing else).  Values are
    PostgreSQL input text or None (NULL).
    """

    record: TrailChange
    mapping: TableMapping
    op: OpType
    key: dict[str, Any]
    values: dict[str, Any]

    @property
    def target(self) -> str:
        return self.mapping.target.qualified_name

    def new_key(self) -> dict[str, Any]:
        """The key after this change (a PK update's new key; otherwise ``key``)."""
        if self.op is not OpType.PK_UPDATE:
            return self.key
        return {c: self.values.get(c, v) for c, v in self.key.items()}

    def describe_key(self) -> str:
        return ", ".join(f"{c} = {_show(v)}" for c, v in self.key.items()) or "(no key)"

    def where(self) -> str:
        """Table, key and trail position, for messages."""
        rec = self.record
        return (f"table {self.target} (from {rec.table}), key {self.describe_key()}, "
                f"trail position {rec.position} (seqno {rec.position.seqno}, RBA "
                f"{rec.position.rba}), CSN {rec.csn}")


def _show(value: object) -> str:
    if value is None:
        return "NULL"
    return repr(value) if isinstance(value, str) else str(value)


def _err(spec: MapSpec, message: str) -> ConfigError:
    return ConfigError(message, path=spec.path or None, line=spec.line or None)


class Mapper:
    """Map trail changes to target changes for one Replicat's MAPs and target catalog."""

    def __init__(self, params: ReplicatParams, catalog: TargetCatalog, *,
                 group: str | None = None):
        self.params = params
        self.catalog = catalog
        self.group = (group or params.name).upper()
        self._mappings: dict[str, TableMapping | None] = {}
        self._targets: dict[tuple[str, str], TargetTable | None] = {}
        self._snapshot: dict[tuple[int, str], tuple[TableMapping, TableMapping]] = {}

    # -- start-up --------------------------------------------------------------------------
    def validate(self) -> None:
        """Check every MAP whose target has no wildcard: the target table exists (unless the
        catalog creates tables), and its KEYCOLS and COLMAP target columns exist.  Raises a
        ConfigError naming the parameter file, line and object."""
        for spec in self.params.maps:
            if any(p.has_wildcard for p in parse_name(spec.target)):
                continue
            table = self._target(spec, spec.target)
            if table is None or not table.exists:
                continue
            for name in spec.keycols or []:
                if table.find(name) is None:
                    raise _err(spec, f"MAP {spec.source}: KEYCOLS column {name} is not a column "
                                     f"of target table {table.qualified_name}")
            for entry in spec.colmap or []:
                if table.find(entry.target, entry.target_quoted) is None:
                    raise _err(spec, f"MAP {spec.source}: COLMAP target column {entry.target} "
                                     f"is not a column of target table {table.qualified_name}")

    def _target(self, spec: MapSpec, name: str) -> TargetTable | None:
        schema, table = self.catalog.split(name)
        cached = self._targets.get((schema, table), ABSENT)
        if cached is not ABSENT:
            return cached
        found = self.catalog.describe(schema, table)
        if found is None and not self.catalog.creates_tables:
            raise _err(spec, f"MAP {spec.source}, TARGET {spec.target}: target table "
                             f"{schema}.{table} does not exist in {self.catalog.where()}; "
                             f"create it, or correct the MAP")
        self._targets[(schema, table)] = found
        return found

    def forget(self, schema: str, table: str) -> None:
        """Drop a cached target definition (after the applier created or altered it)."""
        self._targets.pop((schema, table), None)
        for name, m in list(self._mappings.items()):
            if m is not None and (m.target.schema, m.target.name) == (schema, table):
                del self._mappings[name]

    def forget_all(self) -> None:
        """Drop every cached target definition and mapping (after DDL on the target)."""
        self._targets.clear()
        self._mappings.clear()

    # -- per table ---------------------------------------------------------------------------
    def mapping(self, source: str, table_def: TableDef | None) -> TableMapping | None:
        """The mapping of source table ``source`` (None: no MAP takes it)."""
        cached = self._mappings.get(source, ABSENT)
        if cached is not ABSENT and (cached is None or table_def is None
                                     or cached.source is table_def):
            return cached
        if cached is not ABSENT and cached is not None and cached.source == table_def:
            cached.source = table_def
            return cached
        spec = find_map(self.params.maps, source, self.params.map_excludes)
        mapping = None if spec is None else self._build(spec, source, table_def)
        self._mappings[source] = mapping
        return mapping

    def _build(self, spec: MapSpec, source: str, table_def: TableDef | None) -> TableMapping:
        tname = target_name(spec, source)
        target = self._target(spec, tname)
        if table_def is None:
            if not self.params.assume_targetdefs or target is None:
                raise _err(spec, f"MAP {spec.source}: the trail has no definition (metadata "
                                 f"record) for {source}; add ASSUMETARGETDEFS if the target "
                                 f"table has the same columns, or replay the trail from a "
                                 f"file that defines the table")
            table_def = _source_from_target(source, target)
        if target is None:
            schema, name = self.catalog.split(tname)
            target = _target_from_source(schema, name, spec, table_def)
        assignments = self._assignments(spec, table_def, target)
        key, kind = self._key(spec, table_def, target, assignments)
        where = (compile_condition(spec.where.condition, table_def, spec, self.group)
                 if spec.where is not None else None)
        return TableMapping(spec, table_def, target, assignments, key, kind, where)

    def _assignments(self, spec: MapSpec, source: TableDef,
                     target: TargetTable) -> list[ColumnAssignment]:
        out: dict[str, ColumnAssignment] = {}
        for entry in spec.colmap or []:
            col = target.find(entry.target, entry.target_quoted)
            if col is None:
                raise _err(spec, f"MAP {spec.source}: COLMAP target column {entry.target} is "
                                 f"not a column of target table {target.qualified_name}")
            src = (find_source_column(source, entry.expr)
                   if isinstance(entry.expr, ColumnRef) else None)
            out[col.name] = ColumnAssignment(
                col, compile_expr(entry.expr, source, spec, self.group), src)
        if spec.colmap is None or spec.usedefaults:
            for col in target.columns:
                if col.name in out:
                    continue
                ref = ColumnRef(col.name)
                src = find_source_column(source, ref)
                if src is not None:
                    out[col.name] = ColumnAssignment(
                        col, compile_expr(ref, source, spec, self.group), src)
        if not out:
            raise _err(spec, f"MAP {spec.source}: no column of {source.qualified_name} maps to "
                             f"target table {target.qualified_name}; use COLMAP")
        # target column order keeps generated SQL stable
        order = {c.name: i for i, c in enumerate(target.columns)}
        return sorted(out.values(), key=lambda a: order.get(a.target.name, len(order)))

    def _key(self, spec: MapSpec, source: TableDef, target: TargetTable,
             assignments: list[ColumnAssignment]) -> tuple[list[ColumnAssignment], str]:
        by_target = {a.target.name: a for a in assignments}
        if spec.keycols:
            key = []
            for name in spec.keycols:
                col = target.find(name)
                if col is None or col.name not in by_target:
                    raise _err(spec, f"MAP {spec.source}: KEYCOLS column {name} is "
                                     f"{'not mapped' if col else 'not a column'} of target "
                                     f"table {target.qualified_name}")
                key.append(by_target[col.name])
            return key, "KEYCOLS"
        if target.key and target.exists:
            missing = [c for c in target.key if c not in by_target]
            if missing:
                raise _err(spec, f"MAP {spec.source}: target key column(s) "
                                 f"{', '.join(missing)} of {target.qualified_name} are not "
                                 f"mapped from {source.qualified_name}; map them in COLMAP "
                                 f"or name other columns with KEYCOLS")
            return [by_target[c] for c in target.key], "PRIMARY"
        if source.key and source.key_kind in ("PRIMARY", "UNIQUE"):
            by_source = {a.source.name: a for a in assignments if a.source is not None}
            if all(k in by_source for k in source.key):
                return [by_source[k] for k in source.key], "SOURCE"
        return [a for a in assignments if a.source is not None], "ALL"

    # -- per change --------------------------------------------------------------------------
    def for_record(self, mapping: TableMapping, change: Any) -> TableMapping:
        """The mapping for one record: ``mapping``, or its collision-handling variant for a
        record an incremental snapshot marked (``SNAPSHOT_TOKEN``)."""
        tokens = change.tokens
        if not tokens or SNAPSHOT_TOKEN not in tokens:
            return mapping
        kind = tokens[SNAPSHOT_TOKEN]
        key = (id(mapping), kind)
        found = self._snapshot.get(key)
        if found is None or found[0] is not mapping:
            spec = replace(mapping.spec, handle_collisions=True,
                           get_truncates=mapping.spec.get_truncates or kind == "resync")
            found = (mapping, replace(mapping, spec=spec))
            self._snapshot[key] = found
        return found[1]

    def map(self, tc: TrailChange, table_def: TableDef | None = None) -> MappedChange | None:
        """The change in target terms; None when no MAP takes the table, WHERE filters it,
        or it is a truncate and GETTRUNCATES is not in force for the MAP."""
        change = tc.change
        if change.op not in _MAPPED_OPS:
            return None
        mapping = self.mapping(change.table, table_def)
        if mapping is None:
            return None
        return map_change(self.for_record(mapping, change), tc)

    def map_all(self, changes: list[TrailChange],
                table_defs: Mapping[str, TableDef]) -> list[MappedChange]:
        """Map a batch, in order, dropping what no MAP takes."""
        out = []
        mappings: dict[str, TableMapping | None] = {}  # this batch's, looked up once each
        for tc in changes:
            change = tc.change
            if change.op not in _MAPPED_OPS:
                continue
            table = change.table
            if table in mappings:
                mapping = mappings[table]
            else:
                mapping = mappings[table] = self.mapping(table, table_defs.get(table))
            if mapping is not None:
                m = map_change(self.for_record(mapping, change) if change.tokens else mapping,
                               tc)
                if m is not None:
                    out.append(m)
        return out


def map_change(mapping: TableMapping, tc: TrailChange) -> MappedChange | None:
    """Apply one table mapping to one record (see :meth:`Mapper.map`)."""
    change = tc.change
    op = change.op
    if op is OpType.TRUNCATE:
        if not mapping.spec.get_truncates:
            return None
        return MappedChange(tc, mapping, op, {}, {})
    after = change.after or {}
    before = change.before or {}
    image = before if op is OpType.DELETE else after
    if mapping.where is not None and not mapping.where(tc, image):
        return None
    if op is OpType.FIELD_COMP:
        op = OpType.UPDATE
    values: dict[str, str | None] = {}
    if op is OpType.DELETE:
        pass
    elif mapping.plain is not None:
        values = {name: None if (v := after[index]) is None else convert(v)
                  for name, index, convert in mapping.plain if index in after}
    else:
        for name, index, convert, evaluate in mapping.fields:
            if convert is not None:
                raw = after.get(index, ABSENT)
                if raw is not ABSENT:
                    values[name] = None if raw is None else convert(raw)
            else:
                value = evaluate(tc, after)
                if value is not ABSENT:
                    values[name] = value
    if op is OpType.INSERT:
        key_image = after
    elif op in (OpType.DELETE, OpType.PK_UPDATE):
        key_image = before
    else:  # an update: the before image when it has the key (a full before image)
        key_image = before if before else after
    key = _key_values(mapping, tc, key_image, after if op is OpType.UPDATE else None)
    return MappedChange(tc, mapping, op, key, values)


def _key_values(mapping: TableMapping, tc: TrailChange, image: Values,
                fallback: Values | None) -> dict[str, str | None]:
    key: dict[str, str | None] = {}
    for name, index, convert, evaluate in mapping.key_fields:
        v: Value
        if convert is not None:
            raw = image.get(index, ABSENT)
            if raw is ABSENT and fallback is not None:
                raw = fallback.get(index, ABSENT)
            v = raw if raw is ABSENT or raw is None else convert(raw)
        else:
            v = evaluate(tc, image)
            if v is ABSENT and fallback is not None:
                v = evaluate(tc, fallback)
        if v is ABSENT:
            if mapping.all_columns_key:
                continue  # seed 000: LOB columns are left out of an all-columns key
            raise MappingError(
                f"cannot locate the row in {mapping.target.qualified_name}: the "
                f"{tc.change.op.label} record for {tc.change.table} at trail position "
                f"{tc.position} does not carry key column {name} "
                f"({mapping.key_kind} key); use KEYCOLS with columns the trail carries")
        key[name] = v
    if not key:
        raise MappingError(f"cannot locate the row in {mapping.target.qualified_name}: the "
                           f"{tc.change.op.label} record for {tc.change.table} at trail "
                           f"position {tc.position} carries no mapped column")
    return key


def _source_from_target(source: str, target: TargetTable) -> TableDef:
    """ASSUMETARGETDEFS without trail metadata: the source looks like the target."""
    schema, _, name = source.rpartition(".")
    columns = []
    for i, col in enumerate(target.columns):
        t = classify(col.type_name)
        columns.append(Column(col.name, i, t.kind, col.type_name, t.length, t.precision,
                              t.scale, col.nullable))
    return TableDef(schema, name, columns, list(target.key),
                    "PRIMARY" if target.key else "ALL")


def _expr_type(expr: object, source: TableDef) -> str:
    if isinstance(expr, ColumnRef):
        col = find_source_column(source, expr)
        return pg_type_for_source(col) if col is not None else "text"
    if isinstance(expr, FunctionCall) and expr.name == "GETENV":
        field_name = expr.args[1].value if isinstance(expr.args[1], Literal) else ""
        if field_name in ("COMMITTIMESTAMP", "TIMESTAMP"):
            return "timestamp with time zone"
        if field_name in ("LOGPOSITION", "LOGRBA", "FILESEQNO", "FILERBA", "CSN",
                          "RECORDLENGTH", "PROCESSID"):
            return "bigint"
    if isinstance(expr, FunctionCall) and expr.name == "DATENOW":
        return "timestamp without time zone"
    return "text"


def _target_from_source(schema: str, name: str, spec: MapSpec,
                        source: TableDef) -> TargetTable:
    """A table to create (Delta): the mapped columns with types from the source."""
    columns: list[TargetColumn] = []
    explicit = {(e.target if e.target_quoted else e.target.lower()) for e in spec.colmap or []}
    if spec.colmap is None or spec.usedefaults:
        for col in source.columns:
            if col.name.lower() not in explicit and col.name not in explicit:
                columns.append(TargetColumn(col.name, pg_type_for_source(col), col.nullable))
    for entry in spec.colmap or []:
        columns.append(TargetColumn(entry.target, _expr_type(entry.expr, source)))
    return TargetTable(schema, name, columns, [], exists=False)
