"""A GGS_DDL_HIST row's metadata text as the table definition the trail carries.

The DDL trigger writes a relation's definition as it stands right after the DDL (seed 004's
keys: ``W`` owner, ``X`` name, ``A2`` … per column, ``D`` the type as ``format_type`` names
it, ``T``/``V`` the key the log carries).  The Extract writes it as the metadata record that
follows the DDL record; the column kinds come from the type name by the same rule pgoutput's
Relation messages go through (:func:`~trailgate.capture.postgres.types.classify`), so the
definition equals the one the next row change of the table brings.
"""

from __future__ import annotations

from trailgate.capture.postgres.types import classify
from trailgate.model import Column, TableDef
from trailgate.trail.metadata import decode_kv

__all__ = ["tabledef_from_history"]


def tabledef_from_history(text: str) -> TableDef | None:
    """The definition in a history text, or None when it describes no columns (a dropped
    object, an index's own entry) or cannot be read."""
    try:
        items = decode_kv(text)
    except ValueError:
        return None
    plain: dict[str, str] = {}
    cols: dict[int, dict[str, str]] = {}
    for key, index, value in items:
        if index is None:
            plain[key] = value
        elif index.isdigit():
            cols.setdefault(int(index), {})[key] = value
    if plain.get("Y", "TABLE") != "TABLE" or not cols or "W" not in plain or "X" not in plain:
        return None
    columns = []
    for i, number in enumerate(sorted(cols)):
        attrs = cols[number]
        if "A2" not in attrs:
            return None
        pgtype = classify(attrs.get("D") or "text")
        columns.append(Column(name=attrs["A2"], index=i, kind=pgtype.kind,
                              source_type=pgtype.source_type, length=pgtype.length,
                              precision=pgtype.precision, scale=pgtype.scale,
                              nullable=attrs.get("A7", "1") != "0", segcol=i + 1))
    oid = plain.get("S", "")
    return TableDef(schema=plain["W"], name=plain["X"], columns=columns,
                    key=[k for k in plain.get("T", "").split(",") if k],
                    key_kind=plain.get("V") or "NONE",
                    object_id=int(oid) if oid.isdigit() else None)
