"""Apply changes to Delta Lake tables (``deltalake``), one merge commit per table per batch.

Per batch and target table: skip it if the table's log holds the group's application
transaction at that batch id; otherwise read the target rows of the keys the batch touches,
:func:`planner.fold` the changes over them (the last change of a key wins, collisions found
as sequential apply would find them) and merge the end state in one commit carrying
``Transaction(group, batch_id)``; a ``SCD TYPE 2`` MAP keeps every version instead
(``apply.delta_history``).  A missing table is created from the mapping.
docs/replicat.md, "Delta Lake target".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from decimal import InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import TableNotFoundError

from trailgate.apply.arrow_types import arrow_type, converter, pg_type_of_arrow
from trailgate.apply.delta_history import HISTORY_FIELDS, apply_history
from trailgate.apply.delta_scan import key_predicate, quote, rows_matching
from trailgate.apply.discard import DiscardWriter
from trailgate.apply.mapping import MappedChange, Mapper, TableMapping, TargetColumn, TargetTable
from trailgate.apply.planner import Folded, KeyT, fold
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.errors import TargetError
from trailgate.model import TableDef
from trailgate.params.model import ReplicatParams
from trailgate.params.names import parse_name

__all__ = ["DeltaApplier", "DeltaCatalog"]

ACTION = "__trailgate_action"


class DeltaCatalog:
    """Delta tables under one directory: ``<root>/<schema>/<table>`` (unquoted names in
    lower case).  A missing table is created on first use."""

    creates_tables = True

    def __init__(self, root: str | os.PathLike[str],
                 storage_options: dict[str, str] | None = None):
        self.root = str(root).rstrip("/")
        self.storage_options = storage_options

    def split(self, name: str) -> tuple[str, str]:
        parts = parse_name(name)
        schema, table = (p.text if p.quoted else p.text.lower() for p in parts[-2:])
        return schema, table

    def path(self, schema: str, table: str) -> str:
        return f"{self.root}/{schema}/{table}"

    def open(self, schema: str, table: str) -> DeltaTable | None:
        try:
            return DeltaTable(self.path(schema, table), storage_options=self.storage_options)
        except TableNotFoundError:
            return None

    def describe(self, schema: str, table: str) -> TargetTable | None:
        dt = self.open(schema, table)
        if dt is None:
            return None
        arrow = pa.schema(dt.schema())
        columns = [TargetColumn(f.name, pg_type_of_arrow(f.type), f.nullable) for f in arrow]
        return TargetTable(schema, table, columns, [], exists=True)

    def where(self) -> str:
        return f"Delta tables under {self.root}"


class DeltaApplier:
    """Applies whole Replicat batches to Delta tables; see the module docstring."""

    def __init__(self, location: str | os.PathLike[str], params: ReplicatParams, *,
                 group: str | None = None, discard: DiscardWriter | None = None,
                 storage_options: dict[str, str] | None = None):
        self.params = params
        self.group = (group or params.name).upper()
        self.catalog = DeltaCatalog(location, storage_options)
        self.mapper = Mapper(params, self.catalog, group=self.group)
        self.discard = discard

    def validate(self) -> None:
        """At Replicat start: KEYCOLS/COLMAP columns of existing named targets exist."""
        self.mapper.validate()

    def applied_version(self, target: str) -> int | None:
        """The last batch id applied to ``target`` (``schema.table``), from its Delta log."""
        dt = self.catalog.open(*self.catalog.split(target))
        return None if dt is None else dt.transaction_version(self.group)

    def apply_batch(self, batch_id: int, changes: Sequence[TrailChange],
                    table_defs: Mapping[str, TableDef], *, part: int = 0) -> ApplyResult:
        """Apply one micro-batch (``part``: the batch's part after its ``part``-th DDL
        record, committed under its own application id).  Tables whose log shows this
        batch (part) are skipped (listed in ``skipped_tables``; ``skipped`` is True when
        every table was)."""
        mapped = self.mapper.map_all(list(changes), table_defs)
        by_table: dict[str, list[MappedChange]] = {}
        for m in mapped:
            by_table.setdefault(m.target, []).append(m)
        result = ApplyResult()
        for group in by_table.values():
            group.sort(key=lambda m: m.record.order)
            self._apply_table(batch_id, group[0].mapping, group, result, self.app_id(part))
        result.skipped = bool(by_table) and len(result.skipped_tables) == len(by_table)
        return result

    def app_id(self, part: int) -> str:
        """The application id of a batch's part: the group, then ``GROUP.n`` for the part
        after the n-th DDL record (each commit of a table in a batch has its own id, so a
        replay skips exactly the parts that were committed)."""
        return self.group if part == 0 else f"{self.group}.{part}"

    def _apply_table(self, batch_id: int, mapping: TableMapping,
                     changes: list[MappedChange], result: ApplyResult, app: str) -> None:
        target = mapping.target
        dt = self.catalog.open(target.schema, target.name)
        if dt is not None:
            done = dt.transaction_version(app)
            if done is not None and done >= batch_id:
                result.skipped_tables.append(target.qualified_name)
                return
        else:
            dt = self._create(mapping)
        schema = pa.schema(dt.schema())
        converters = {f.name: converter(f.type) for f in schema}
        columns = [f.name for f in schema]
        for m in changes:
            self._convert(m, converters)
        if mapping.spec.scd_type == 2:
            counts = apply_history(dt, mapping, changes, batch_id, app)
            result.table(target.qualified_name).add(counts)
            return
        existing = self._existing(dt, mapping, changes)
        folded = fold(mapping, changes, lambda key: existing.get(key), columns)
        self._merge(dt, mapping, folded, schema, existing, batch_id, app)
        result.table(target.qualified_name).add(folded.counts)
        if self.discard is not None:
            self.discard.write(folded.discards)

    def _create(self, mapping: TableMapping) -> DeltaTable:
        target = mapping.target
        fields = [pa.field(c.name, arrow_type(c.type_name), True) for c in target.columns]
        if mapping.spec.scd_type == 2:
            fields += HISTORY_FIELDS
        schema = pa.schema(fields)
        try:
            dt = DeltaTable.create(self.catalog.path(target.schema, target.name), schema,
                                   mode="ignore", name=target.name,
                                   description=f"replicated by trailgate group {self.group} "
                                               f"from {mapping.source.qualified_name}",
                                   storage_options=self.catalog.storage_options)
        except Exception as exc:  # deltalake raises several unrelated types here
            raise TargetError(f"cannot create Delta table {target.qualified_name} at "
                              f"{self.catalog.path(target.schema, target.name)}: {exc}") from None
        target.exists = True
        return dt

    @staticmethod
    def _convert(m: MappedChange, converters: Mapping[str, Callable[[str], Any]]) -> None:
        def conv(column: str, value: Any) -> Any:
            if value is None or not isinstance(value, str):
                return value
            try:
                return converters[column](value)
            except (ValueError, InvalidOperation, OverflowError) as exc:
                raise TargetError(f"value {value!r} does not fit column {column}: {exc}; "
                                  f"{m.where()}") from None
        m.key = {c: conv(c, v) for c, v in m.key.items()}
        m.values = {c: conv(c, v) for c, v in m.values.items()}

    @staticmethod
    def _existing(dt: DeltaTable, mapping: TableMapping,
                  changes: list[MappedChange]) -> dict[KeyT, dict[str, Any]]:
        """Target rows for every key the changes touch (old and new keys), by key."""
        key_cols = [a.target.name for a in mapping.key]
        wanted: dict[str, set[Any]] = {c: set() for c in key_cols}
        for m in changes:
            for image in (m.key, m.values):
                for c in key_cols:
                    if c in image:
                        wanted[c].add(image[c])
        if not any(wanted.values()):
            return {}
        filt = pushed = None
        for c, values in wanted.items():
            present = [v for v in values if v is not None]
            expr = pc.field(c).isin(present) if present else None
            if None in values:
                expr = pc.field(c).is_null() if expr is None else expr | pc.field(c).is_null()
            elif expr is not None:
                # only a test without IS NULL is handed to the scan: a file written before
                # the column was added (schema evolution) has no statistics for it, and the
                # scan would wrongly skip it for IS NULL
                pushed = expr if pushed is None else pushed & expr
            if expr is not None:
                filt = expr if filt is None else filt & expr
        table = rows_matching(dt.to_pyarrow_dataset(), pushed, key_cols)
        if filt is not None and table.num_rows:
            table = table.filter(filt)
        out: dict[KeyT, dict[str, Any]] = {}
        for row in table.to_pylist():
            out[tuple((c, row[c]) for c in key_cols)] = row
        return out

    def _merge(self, dt: DeltaTable, mapping: TableMapping, folded: Folded, schema: pa.Schema,
               existing: Mapping[KeyT, Any], batch_id: int, app: str) -> None:
        rows = []
        for key, row in folded.rows.items():
            if row is not None:
                rows.append({**row, ACTION: "U"})
            elif key in existing and not folded.truncated:
                rows.append({**dict(key), ACTION: "D"})
            elif folded.truncated and key in existing:
                continue  # the truncate deletes it
        if not rows and not folded.truncated and not folded.counts.operations:
            return
        source = pa.Table.from_pylist(rows, schema=schema.append(pa.field(ACTION, pa.string())))
        key_cols = [a.target.name for a in mapping.key]
        predicate = key_predicate(key_cols, source)
        sets = {quote(f.name): f"s.{quote(f.name)}" for f in schema}
        merger = dt.merge(source, predicate, source_alias="s", target_alias="t",
                          commit_properties=CommitProperties(
                              app_transactions=[Transaction(app, batch_id)]))
        merger = (merger.when_matched_delete(predicate=f"s.{ACTION} = 'D'")
                  .when_matched_update(updates=sets, predicate=f"s.{ACTION} = 'U'")
                  .when_not_matched_insert(updates=sets, predicate=f"s.{ACTION} = 'U'"))
        if folded.truncated:
            merger = merger.when_not_matched_by_source_delete()
        try:
            merger.execute()
        except Exception as exc:  # deltalake's errors: commit conflicts, I/O, schema
            raise TargetError(f"merge into Delta table {mapping.target.qualified_name} failed "
                              f"for batch {batch_id}: {exc}; nothing of the batch was "
                              f"committed to this table, restarting applies it again") from None
