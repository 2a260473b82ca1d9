"""A captured relation and its row changes: pgoutput Insert/Update/Delete messages to
``Change`` objects (the Python path), and the records the fast path encoded back to them.

The Python path here is the reference the C row path (``fastpath``) must match byte for
byte: an update is compressed to the key plus the changed columns, an unchanged TOASTed
value is left out (never written as NULL), a key change is a PK update with its before key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trailgate.capture.postgres import pgoutput as pgo
from trailgate.capture.postgres.fastpath import relation_layout
from trailgate.capture.postgres.types import PgType, trail_from_pg_text
from trailgate.errors import SourceError
from trailgate.model import Change, Column, OpType, TableDef, julian_from_unix_micros
from trailgate.trail.records import decode_change, decode_record, table_fixed_indexes

__all__ = [
    "CapturedRelation",
    "EncodedRun",
    "RawRow",
    "build_relation",
    "decode_encoded",
    "decode_row",
    "julian_from_pg_micros",
]

_KEY_KINDS = {"d": "PRIMARY", "i": "UNIQUE", "f": "ALL", "n": "NONE"}


def julian_from_pg_micros(pg_micros: int) -> int:
    """PostgreSQL timestamp (microseconds since 2000-01-01 UTC) as Julian microseconds."""
    return julian_from_unix_micros(pg_micros + pgo.PG_EPOCH_UNIX_MICROS)


@dataclass(slots=True)
class CapturedRelation:
    """A relation as the current Relation message describes it (``layout``: the same for
    the C row path)."""

    table: TableDef
    types: list[PgType]
    key: list[int]
    layout: bytes = b""


RawRow = tuple[CapturedRelation, int, bytes]
"""A row change as pgoutput sent it: (relation, LSN, Insert/Update/Delete message).  Kept
raw so the Extract's fast path can encode it in one step (``fastpath``); ``decode_row``
gives the ``Change``."""


@dataclass(slots=True)
class EncodedRun:
    """Consecutive row changes of one table that the capture loop encoded itself (the fast
    path, see ``fastpath``): their trail records end to end, TransInd MIDDLE and no T area
    (the trail writer adds it to a transaction's first record)."""

    table: TableDef
    records: list[bytes]


def build_relation(msg: pgo.Relation, types: Sequence[PgType], notnull: set[str]
                   ) -> CapturedRelation:
    """A Relation message as a table definition, given its columns' types and which
    columns are NOT NULL (both looked up in the database)."""
    schema = msg.namespace or "pg_catalog"
    columns, key = [], []
    for i, (col, pgtype) in enumerate(zip(msg.columns, types, strict=True)):
        columns.append(Column(name=col.name, index=i, kind=pgtype.kind,
                              source_type=pgtype.source_type, length=pgtype.length,
                              precision=pgtype.precision, scale=pgtype.scale,
                              nullable=col.name not in notnull, segcol=i + 1))
        if col.is_key:
            key.append(i)
    key_kind = _KEY_KINDS.get(msg.replica_identity, "NONE")
    if key_kind == "PRIMARY" and not key:
        key_kind = "NONE"
    table = TableDef(schema=schema, name=msg.name, columns=columns,
                     key=[columns[i].name for i in key], key_kind=key_kind, object_id=msg.oid)
    return CapturedRelation(table, list(types), key, relation_layout(table, types, key))


def decode_encoded(table: TableDef, record: bytes) -> Change:
    """The ``Change`` of a record the capture loop encoded (values in trail form)."""
    return decode_change(decode_record(record, 0, len(record)), table_fixed_indexes(table))


def decode_row(row: RawRow, io_time: int) -> Change:
    """The ``Change`` of a row change kept raw (``io_time``: its transaction's commit)."""
    rel, lsn, data = row
    msg = pgo.decode(data, lsn=lsn)
    change = Change(OpType.INSERT, rel.table.qualified_name, io_time=io_time,
                    audit_seq=lsn >> 24, audit_pos=lsn)
    if isinstance(msg, pgo.Insert):
        change.after = _image(rel, msg.new, range(len(msg.new)))
    elif isinstance(msg, pgo.Delete):
        change.op = OpType.DELETE
        indexes = rel.key if msg.old_kind == "K" else range(len(msg.old))
        change.before = _image(rel, msg.old, indexes)
    elif isinstance(msg, pgo.Update):
        _update(rel, msg, change)
    else:  # the message type byte said I, U or D
        raise SourceError(f"pgoutput message at LSN {pgo.format_lsn(lsn)} is not a row change")
    return change


def _image(rel: CapturedRelation, values: list[pgo.TupleValue], indexes: Sequence[int] | range
           ) -> dict[int, bytes | None]:
    """Trail-form values of ``indexes``; unchanged TOAST values are left out, never NULL."""
    image: dict[int, bytes | None] = {}
    for i in indexes:
        v = values[i]
        if v is None:
            image[i] = None
        elif isinstance(v, str):
            image[i] = trail_from_pg_text(v, rel.types[i])
    return image


def _update(rel: CapturedRelation, msg: pgo.Update, change: Change) -> None:
    """Compressed update: key plus changed columns; a changed key makes a PK update."""
    new, old = msg.new, msg.old
    if old is None:  # no old image: every column the log gives, key included
        change.op = OpType.FIELD_COMP
        change.after = _image(rel, new, range(len(new)))
        return
    new = list(new)
    for i in rel.key:  # an unchanged TOASTed key value travels in the old key only
        if new[i] is pgo.UNCHANGED_TOAST and isinstance(old[i], str):
            new[i] = old[i]
    full = msg.old_kind == "O"
    changed = [i for i, v in enumerate(new)
               if v is not pgo.UNCHANGED_TOAST and (not full or v != old[i])]
    keyset = set(rel.key)
    change.after = _image(rel, new, sorted(keyset.union(changed)))
    if rel.key and any(old[i] != new[i] for i in rel.key
                       if old[i] is not pgo.UNCHANGED_TOAST):
        change.op = OpType.PK_UPDATE
        change.before = _image(rel, old, rel.key)
    else:
        change.op = OpType.FIELD_COMP
