"""Parquet change logs: one row per change, typed before and after images.

Only the rows, as Arrow tables (``apply.parquet`` writes the files), so the code runs in
Spark's workers and tests alike: the operation, the transaction, the trail position and
``before``/``after`` structs typed as a Delta target types them.  A compressed update
carries only some columns, so ``before_columns``/``after_columns`` say which fields the
record held and an absent column is not taken for a NULL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from trailgate.apply.arrow_types import column_arrow_type, converter
from trailgate.apply.records import TrailChange
from trailgate.apply.values import julian_to_text, text_from_trail
from trailgate.errors import TargetError
from trailgate.model import OpType, TableDef, unix_micros_from_julian

__all__ = ["change_log_rows", "change_log_schema", "change_log_tables"]

_TS = pa.timestamp("us", tz="UTC")


def _image_type(table: TableDef) -> pa.StructType:
    return pa.struct([pa.field(c.name, column_arrow_type(c))
                      for c in table.columns])


def change_log_schema(table: TableDef) -> pa.Schema:
    """The change-log schema for ``table`` (the images follow its columns)."""
    image = _image_type(table)
    return pa.schema([
        ("op", pa.string()), ("io_type", pa.int32()), ("table_name", pa.string()),
        ("csn", pa.int64()), ("xid", pa.string()), ("commit_time", _TS),
        ("io_time", _TS), ("seqno", pa.int64()), ("rba", pa.int64()),
        ("trans_ind", pa.int8()), ("audit_seq", pa.int64()), ("audit_pos", pa.int64()),
        ("rowid", pa.string()), ("tokens", pa.map_(pa.string(), pa.string())),
        ("before", image), ("before_columns", pa.list_(pa.string())),
        ("after", image), ("after_columns", pa.list_(pa.string())),
    ])


def _micros(julian: int) -> int | None:
    return unix_micros_from_julian(julian) if julian > 0 and julian_to_text(julian) else None


def change_log_rows(changes: Sequence[TrailChange],
                    table_defs: Mapping[str, TableDef] | TableDef) -> pa.Table:
    """The change-log rows of ``changes`` (all of one table), in the order given.

    ``table_defs`` is the table's definition, or the definitions by ``SCHEMA.TABLE`` (as the
    trail's metadata records give them).  Non-row records (DDL, metadata) are left out.
    """
    if isinstance(table_defs, TableDef):
        table = table_defs
    else:
        names = {tc.change.table for tc in changes}
        if len(names) > 1:
            raise ValueError(f"change_log_rows takes one table's changes, got {sorted(names)}")
        if not names:
            raise ValueError("change_log_rows needs a TableDef when there are no changes")
        name = names.pop()
        if name not in table_defs:
            raise TargetError(f"no definition of {name} for its change log: the trail has "
                              f"no metadata record for it before its first change")
        table = table_defs[name]
    schema = change_log_schema(table)
    convert = [(c.index, c.name, c, converter(column_arrow_type(c)))
               for c in table.columns]
    rows: list[dict[str, Any]] = []
    for tc in changes:
        ch = tc.change
        if not ch.op.is_row_change:
            continue
        before, before_cols = _image(ch.before, convert, tc)
        after, after_cols = _image(ch.after, convert, tc)
        rows.append({
            "op": ch.op.name, "io_type": int(ch.op), "table_name": ch.table, "csn": tc.csn,
            "xid": tc.xid, "commit_time": _micros(tc.commit_time or ch.io_time),
            "io_time": _micros(ch.io_time), "seqno": tc.position.seqno,
            "rba": tc.position.rba, "trans_ind": tc.trans_ind, "audit_seq": ch.audit_seq,
            "audit_pos": ch.audit_pos, "rowid": ch.rowid,
            "tokens": list(ch.tokens.items()) if ch.tokens else None,
            "before": before, "before_columns": before_cols,
            "after": after, "after_columns": after_cols,
        })
    return pa.Table.from_pylist(rows, schema=schema)


def _image(values: Mapping[int, bytes | None] | None, convert: list[Any],
           tc: TrailChange) -> tuple[dict[str, Any] | None, list[str] | None]:
    if values is None or (not values and tc.change.op is OpType.TRUNCATE):
        return None, None
    out: dict[str, Any] = {}
    present: list[str] = []
    for index, name, column, conv in convert:
        if index not in values:
            out[name] = None
            continue
        present.append(name)
        text = text_from_trail(values[index], column)
        try:
            out[name] = None if text is None else conv(text)
        except (ValueError, ArithmeticError) as exc:
            raise TargetError(f"{tc.change.table} column {name} at trail position "
                              f"{tc.position}: value {text!r} does not convert: {exc}") from None
    return out, present


def change_log_tables(changes: Sequence[TrailChange],
                      table_defs: Mapping[str, TableDef]) -> dict[str, pa.Table]:
    """Change-log rows for a batch, one table per source table (``SCHEMA.TABLE``)."""
    by_table: dict[str, list[TrailChange]] = {}
    for tc in changes:
        if tc.change.op.is_row_change:
            by_table.setdefault(tc.change.table, []).append(tc)
    return {name: change_log_rows(group, table_defs) for name, group in by_table.items()}
