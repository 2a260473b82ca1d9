"""An SCD type 2 Delta table (``MAP …, SCD TYPE 2``): one batch's changes as versions.

Per batch and table the stored versions of every key the batch touches (and, with a
truncate in the batch, every current row) are read, :class:`scd2.History` folds the changes
into them, and the new and changed versions are merged on (key, ``__start_csn``) in **one
commit** carrying the group's application transaction, as the type 1 target does
(``apply.delta``): a replayed batch is skipped by the Delta log, and a change applied
before under another batch id is recognised by its CSN.  docs/replicat.md, "SCD type 2".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction

from trailgate.apply.delta_scan import key_predicate, quote, rows_matching
from trailgate.apply.mapping import MappedChange, TableMapping
from trailgate.apply.records import TableCounts
from trailgate.apply.scd2 import (
    END_CSN,
    END_TIME,
    HISTORY_COLUMNS,
    IS_CURRENT,
    START_CSN,
    START_TIME,
    History,
)
from trailgate.errors import ConfigError, TargetError
from trailgate.model import OpType

__all__ = ["HISTORY_FIELDS", "apply_history"]

#: The validity columns of a table ``SCD TYPE 2`` creates.
HISTORY_FIELDS = (
    pa.field(START_CSN, pa.int64(), True),
    pa.field(END_CSN, pa.int64(), True),
    pa.field(START_TIME, pa.timestamp("us", tz="UTC"), True),
    pa.field(END_TIME, pa.timestamp("us", tz="UTC"), True),
    pa.field(IS_CURRENT, pa.bool_(), True),
)



def _config_error(mapping: TableMapping, message: str) -> ConfigError:
    spec = mapping.spec
    return ConfigError(f"MAP {spec.source}, TARGET {spec.target}, SCD TYPE 2: {message}",
                       path=spec.path or None, line=spec.line or None)


def tracked_columns(mapping: TableMapping, columns: Sequence[str]) -> frozenset[str] | None:
    """The columns whose change opens a version (None: all), from TRACK HISTORY ON."""
    spec = mapping.spec
    names = spec.track_history if spec.track_history is not None else spec.track_history_except
    if names is None:
        return None
    lowered = {c.lower(): c for c in columns}
    resolved = set()
    for name in names:
        found = name if name in columns else lowered.get(name.lower())
        if found is None:
            raise _config_error(mapping, f"TRACK HISTORY column {name} is not a column of "
                                         f"{mapping.target.qualified_name} "
                                         f"({', '.join(columns)})")
        resolved.add(found)
    if spec.track_history is not None:
        return frozenset(resolved)
    return frozenset(c for c in columns if c not in resolved)


def apply_history(dt: DeltaTable, mapping: TableMapping, changes: list[MappedChange],
                  batch_id: int, app: str) -> TableCounts:
    """Apply one batch's (converted) changes of one table; see the module docstring."""
    if mapping.all_columns_key:
        raise _config_error(mapping, f"the source table {mapping.source.qualified_name} has "
                                     f"no key, and SCD type 2 needs one to tell a row's "
                                     f"versions apart: add KEYCOLS (col, ...) to the MAP")
    schema = pa.schema(dt.schema())
    names = [f.name for f in schema]
    missing = [c for c in HISTORY_COLUMNS if c not in names]
    if missing:
        raise _config_error(mapping, f"Delta table {mapping.target.qualified_name} has no "
                                     f"{', '.join(missing)}: it was not made for SCD type 2; "
                                     f"point the MAP at a new table (it is created on first "
                                     f"use)")
    columns = [c for c in names if c not in HISTORY_COLUMNS]
    key_cols = [a.target.name for a in mapping.key]
    history = History(columns, key_cols, tracked_columns(mapping, columns))
    history.load(_stored(dt, history, changes))
    history.apply(changes)
    rows = history.changed_rows()
    if rows:
        _merge(dt, mapping, schema, rows, key_cols, batch_id, app)
    return history.counts


def _stored(dt: DeltaTable, history: History, changes: list[MappedChange]
            ) -> list[dict[str, Any]]:
    """Every stored version of the keys the changes touch (old and new keys), and every
    current row when a truncate is among them."""
    wanted: dict[str, set[Any]] = {c: set() for c in history.key_columns}
    truncate = False
    for m in changes:
        if m.op is OpType.TRUNCATE:
            truncate = True
            continue
        for image in (m.key, m.new_key()):
            for c in history.key_columns:
                if c in image:
                    wanted[c].add(image[c])
    filt = None
    for c, values in wanted.items():
        present = [v for v in values if v is not None]
        if not values:
            filt = None
            break
        expr = pc.field(c).isin(present) if present else None
        if None in values:  # a nullable KEYCOLS column: its null key is a key too
            expr = pc.field(c).is_null() if expr is None else expr | pc.field(c).is_null()
        filt = expr if filt is None else filt & expr
    if truncate:
        current = pc.field(IS_CURRENT) == True  # noqa: E712 (an expression, not a test)
        filt = current if filt is None else filt | current
    if filt is None:
        return []
    table = rows_matching(dt.to_pyarrow_dataset(), filt,
                          [*history.key_columns, IS_CURRENT])
    rows = table.to_pylist()
    keys = {history.key_of(m.key) for m in changes if m.op is not OpType.TRUNCATE}
    keys |= {history.key_of(m.new_key()) for m in changes if m.op is not OpType.TRUNCATE}
    return [r for r in rows if truncate or history.key_of(r) in keys]


def _merge(dt: DeltaTable, mapping: TableMapping, schema: pa.Schema, rows: list[dict[str, Any]],
           key_cols: list[str], batch_id: int, app: str) -> None:
    source = pa.Table.from_pylist(rows, schema=schema)
    predicate = key_predicate([*key_cols, START_CSN], source)
    sets = {quote(f.name): f"s.{quote(f.name)}" for f in schema}
    merger = dt.merge(source, predicate, source_alias="s", target_alias="t",
                      commit_properties=CommitProperties(
                          app_transactions=[Transaction(app, batch_id)]))
    merger = merger.when_matched_update(updates=sets).when_not_matched_insert(updates=sets)
    try:
        merger.execute()
    except Exception as exc:  # deltalake's errors: commit conflicts, I/O, schema
        raise TargetError(f"merge into Delta table {mapping.target.qualified_name} (SCD type "
                          f"2) failed for batch {batch_id}: {exc}; nothing of the batch was "
                          f"committed to this table, restarting applies it again") from None
