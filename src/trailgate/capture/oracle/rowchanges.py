"""Row operations of one redo record to ``model.Change`` records in trail form (seed 003).

IRP, every QMI row and a direct load become INSERTs with every column; DRP a DELETE keyed
from the supplemental data or the undo's image; URP a FIELD_COMP, or a PK_UPDATE when a key
column changes; LKR nothing.  A value that cannot be decoded, or a key the redo does not
carry, is an error: a record is written right or not at all.  docs/oracle-dumps.md, "What
becomes a trail record".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from trailgate.capture.oracle.changes import (
    FB_CLUSTER,
    FB_FIRST,
    WHOLE_ROW,
    DirectLoad,
    KdoRow,
    RowChange,
    UndoRecord,
)
from trailgate.capture.oracle.datatypes import CHARSETS, decoder, to_trail
from trailgate.capture.oracle.dictionary import Dictionary, OracleColumn, OracleTable
from trailgate.capture.oracle.records import RedoRecord, located
from trailgate.capture.oracle.recordscan import row_values
from trailgate.capture.oracle.rowid import dba_block, dba_file, encode_rowid
from trailgate.errors import SourceError
from trailgate.model import Change, ColumnKind, OpType

__all__ = ["OnUnknown", "RowBuilder"]

log = logging.getLogger("trailgate.capture.oracle")

OnUnknown = Literal["stop", "skip"]

#: Undo KDO operation that must accompany each redo operation.
_UNDO_OF = {"IRP": "DRP", "DRP": "IRP", "URP": "URP", "LKR": "LKR", "QMI": "QMD"}


class _Skip(Exception):
    """The change is dropped under the ``skip`` policy (already warned)."""


class RowBuilder:
    """Turns row operations into Changes using the dictionary; applies the unknown policy."""

    def __init__(self, dictionary: Dictionary, on_unknown: OnUnknown = "stop",
                 warn: Callable[[str], None] | None = None):
        if on_unknown not in ("stop", "skip"):
            raise ValueError(f"on_unknown must be 'stop' or 'skip', not {on_unknown!r}")
        self.dictionary = dictionary
        self.on_unknown = on_unknown
        self._warn = warn or log.warning
        #: per table (by id): its value layout, built at first use
        self._layouts: dict[int, _Layout] = {}

    # -- entry point -----------------------------------------------------------------------
    def build(self, record: RedoRecord, change: RowChange | DirectLoad,
              undo: UndoRecord | None) -> list[Change]:
        """The Changes one row operation yields (empty for LKR or a skipped object)."""
        try:
            if isinstance(change, DirectLoad):
                table = self._table(record, change, None)
                return [self._insert(record, change, table, row) for row in change.rows]
            kdo = change.kdo
            assert kdo is not None
            self._check_undo(record, change, undo)
            if kdo.op == "LKR":
                return []
            table = self._table(record, change, undo)
            if kdo.op == "IRP":
                return [self._insert_row(record, change, table, kdo.slot, kdo.fb,
                                         kdo.columns)]
            if kdo.op == "QMI":
                return [self._insert(record, change, table, row) for row in kdo.rows]
            assert undo is not None  # _check_undo raised for a DRP or URP without one
            if kdo.op == "DRP":
                return [self._delete(record, change, table, undo)]
            return [self._update(record, change, table, undo)]
        except _Skip:
            return []

    # -- helpers ---------------------------------------------------------------------------
    def _error(self, record: RedoRecord, change, message: str) -> SourceError:
        return located(record.path, change.line, record.rba, message)

    def _unknown(self, record: RedoRecord, change, message: str) -> _Skip:
        if self.on_unknown == "stop":
            raise self._error(record, change, message + " (capture stopped: add it to the "
                              "dictionary, or skip such changes: --on-unknown skip, "
                              "TRANLOGOPTIONS ONUNKNOWN SKIP, on_unknown='skip')")
        self._warn(f"{record.path}, line {change.line}, redo record RBA {record.rba}: "
                   f"{message}; change skipped, no record written")
        return _Skip()

    def _check_undo(self, record: RedoRecord, change: RowChange,
                    undo: UndoRecord | None) -> None:
        kdo = change.kdo
        assert kdo is not None
        if undo is None or undo.kdo is None:
            if kdo.op in ("DRP", "URP"):
                raise self._error(record, change, f"{change.op} {kdo.op} has no 5.1 undo "
                                  f"record before it in its redo record")
            return
        want = _UNDO_OF[kdo.op]
        if undo.kdo.op != want:
            raise self._error(record, change, f"{kdo.op} is paired with a {undo.kdo.op} undo "
                              f"(line {undo.line}); expected {want}")
        if kdo.op in ("IRP", "DRP", "URP", "LKR") and undo.kdo.slot != kdo.slot:
            raise self._error(record, change, f"{kdo.op} on slot {kdo.slot} but its undo "
                              f"(line {undo.line}) is for slot {undo.kdo.slot}")

    def _table(self, record: RedoRecord, change, undo: UndoRecord | None) -> OracleTable:
        if undo is not None and undo.objn >= 0:
            table = self.dictionary.by_object_id(undo.objn)
            if table is None:
                raise self._unknown(record, change, f"object {undo.objn} (data object "
                                    f"{change.obj}) is not in the dictionary")
            if table.data_object_id != change.obj:
                raise self._error(record, change, f"the dictionary gives {table.qualified_name}"
                                  f" data object id {table.data_object_id} but the redo "
                                  f"writes data object {change.obj}: the dictionary is stale "
                                  f"(the table was moved or truncated?)")
            return table
        tables = self.dictionary.by_data_object_id(change.obj)
        if not tables:
            raise self._unknown(record, change, f"data object {change.obj} is not in the "
                                "dictionary")
        if len(tables) > 1:
            raise self._error(record, change, f"data object {change.obj} holds several tables "
                              f"({', '.join(t.qualified_name for t in tables)}) and this change "
                              f"does not say which")
        return tables[0]

    def _value(self, record, change, col: OracleColumn, raw: bytes | None,
               table: OracleTable) -> bytes | None:
        try:
            return to_trail(raw, col.kind, col.charset)
        except ValueError as exc:
            raise self._error(record, change, f"{table.qualified_name}.{col.name} "
                              f"({col.type}): {exc}") from None

    def _layout(self, table: OracleTable) -> _Layout:
        layout = self._layouts.get(id(table))
        if layout is None or layout.table is not table:
            layout = self._layouts[id(table)] = _Layout(table)
        return layout

    def _piece(self, record, change, table, cols, offset) -> dict[OracleColumn, bytes | None]:
        layout = self._layout(table)
        if row_values is not None and layout.by_column is not None:
            done = row_values(layout.by_column, cols, offset, None)
            if done is not None:
                return done
        out: dict[OracleColumn, bytes | None] = {}
        segcols = layout.segcols
        for colno, raw in cols:
            entry = segcols.get(colno + offset)
            if entry is None:
                raise self._unknown(record, change, f"{table.qualified_name} has no column "
                                    f"with segment column number {colno + offset} in the "
                                    f"dictionary")
            col, decode = entry
            if raw is None:
                out[col] = None
                continue
            try:
                out[col] = decode(raw)
            except ValueError as exc:
                raise self._error(record, change, f"{table.qualified_name}.{col.name} "
                                  f"({col.type}): {exc}") from None
        return out

    def _rowid(self, change, dba: int, slot: int) -> str:
        return encode_rowid(change.obj, dba_file(dba), dba_block(dba), slot)

    def _make(self, op: OpType, record: RedoRecord, table: OracleTable, rowid: str,
              after=None, before=None) -> Change:
        rba = record.rba  # positional: a dataclass's keywords cost more, per change
        return Change(op, self._layout(table).name, after, before, record.julian_time,
                      rba.seq, rba.audit_pos, rowid)

    # -- operations ------------------------------------------------------------------------
    def _insert(self, record, change, table: OracleTable, row: KdoRow) -> Change:
        return self._insert_row(record, change, table, row.slot, row.fb, row.columns)

    def _insert_row(self, record, change, table: OracleTable, slot: int, fb: str,
                    columns: list[tuple[int, bytes | None]]) -> Change:
        if fb != WHOLE_ROW:
            raise self._error(record, change, f"insert of a row piece with flags {fb}: "
                              f"only whole rows ({WHOLE_ROW}) are supported")
        layout = self._layout(table)
        after = None
        if row_values is not None and layout.by_index is not None:
            after = row_values(layout.by_index, columns, 1, layout.template)
        if after is None:
            values = self._piece(record, change, table, columns, 1)
            after = {c.index: values.get(c) for c in table.columns}
        return self._make(OpType.INSERT, record, table, self._rowid(change, change.dba, slot),
                          after=after)

    def _supplemental(self, record, change, table: OracleTable,
                      undo: UndoRecord) -> dict[OracleColumn, bytes | None]:
        sup = undo.supplemental
        if sup is None:
            return {}
        layout = self._layout(table)
        if row_values is not None and layout.by_intcol is not None:
            done = row_values(layout.by_intcol, sup.columns, 0, None)
            if done is not None:
                return done
        out: dict[OracleColumn, bytes | None] = {}
        for intcol, raw in sup.columns:
            col = table.by_intcol.get(intcol)
            if col is None:
                raise self._unknown(record, change, f"{table.qualified_name} has no column "
                                    f"with INTCOL# {intcol} (named by supplemental data)")
            out[col] = self._value(record, change, col, raw, table)
        return out

    def _key(self, record, change, table, known: dict[OracleColumn, bytes | None],
             what: str) -> dict[OracleColumn, bytes | None]:
        layout = self._layout(table)
        keycols = layout.keys
        if keycols is None:
            keycols = layout.keys = table.key_columns
        missing = [c.name for c in keycols if c not in known]
        if missing:
            raise self._error(record, change, f"{what} of {table.qualified_name} does not "
                              f"carry key column(s) {', '.join(missing)}: log the key as "
                              f"supplemental data (ADD TRANDATA / ALTER TABLE … ADD "
                              f"SUPPLEMENTAL LOG DATA (PRIMARY KEY) COLUMNS)")
        return {c: known[c] for c in keycols}

    def _delete(self, record, change, table: OracleTable, undo: UndoRecord) -> Change:
        kdo = change.kdo
        known = {}
        assert undo.kdo is not None
        if undo.kdo.fb == WHOLE_ROW:
            known.update(self._piece(record, change, table, undo.kdo.columns, 1))
        sup = self._supplemental(record, change, table, undo)
        for col, value in sup.items():
            if col in known and known[col] != value:
                raise self._error(record, change, f"supplemental data gives "
                                  f"{table.qualified_name}.{col.name} a value other than the "
                                  f"deleted row's image")
            known[col] = value
        key = self._key(record, change, table, known, "delete")
        before = {c.index: v for c, v in sorted(key.items(), key=lambda kv: kv[0].index)}
        return self._make(OpType.DELETE, record, table,
                          self._rowid(change, change.dba, kdo.slot), before=before)

    def _update(self, record, change, table: OracleTable, undo: UndoRecord) -> Change:
        kdo = change.kdo
        sup = undo.supplemental
        first = kdo.columns[0][0] if kdo.columns else 0
        whole_start = bool(kdo.flag & FB_FIRST) and not kdo.flag & FB_CLUSTER
        if sup is not None and sup.first_modified > 0 and kdo.columns:
            offset = sup.first_modified - first
            if offset < 1 or (whole_start and offset != 1):
                raise self._error(record, change, f"supplemental data says the first modified "
                                  f"column is {sup.first_modified} but the URP's first column "
                                  f"is col {first} of a piece with flag 0x{kdo.flag:02x}")
        elif whole_start:
            offset = 1
        else:
            raise self._error(record, change, f"update of a row piece that does not start the "
                              f"row (flag 0x{kdo.flag:02x}) without supplemental data: its "
                              f"columns cannot be placed")
        new = self._piece(record, change, table, kdo.columns, offset)
        assert undo.kdo is not None  # _check_undo made sure
        old = self._piece(record, change, table, undo.kdo.columns, offset)
        logged = self._supplemental(record, change, table, undo)
        known = {**old, **logged}
        before_key = self._key(record, change, table, known, "update")
        key_changed = any(c in new and new[c] != v for c, v in before_key.items())
        after_cols = {c: new.get(c, v) for c, v in before_key.items()}
        for col, value in logged.items():
            after_cols.setdefault(col, value)
        after_cols.update(new)
        after = {c.index: v for c, v in sorted(after_cols.items(), key=lambda kv: kv[0].index)}
        if sup is not None and sup.head_dba is not None:
            rowid = self._rowid(change, sup.head_dba, sup.head_slot or 0)
        else:
            rowid = self._rowid(change, change.dba, kdo.slot)
        if key_changed:
            before = {c.index: v for c, v in sorted(before_key.items(),
                                                     key=lambda kv: kv[0].index)}
            return self._make(OpType.PK_UPDATE, record, table, rowid, after=after,
                              before=before)
        return self._make(OpType.FIELD_COMP, record, table, rowid, after=after)


#: ``recordscan.row_values`` codes of the decoders it has in C (others call the Python one)
_NUMBER, _UTF8, _DATE, _TIMESTAMP, _RAW, _PYTHON = range(6)
_MAX_SEGCOL = 4096  # past this (no Oracle table has it) the layout stays in Python


def _code(col: OracleColumn) -> int:
    kind = col.kind
    if kind is ColumnKind.NUMBER:
        return _NUMBER
    if kind in (ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.LONG):
        return _UTF8 if CHARSETS.get(col.charset.upper()) == "utf-8" else _PYTHON
    if kind is ColumnKind.DATE:
        return _DATE
    if kind is ColumnKind.TIMESTAMP:
        return _TIMESTAMP
    return _RAW if kind is ColumnKind.RAW else _PYTHON


_Entry = tuple[object, int, Callable[[bytes], bytes]]  # (dict key, value code, decoder)


def _values_layout(columns: dict[int, tuple[OracleColumn, Callable[[bytes], bytes]]],
                   by_index: bool) -> tuple[_Entry | None, ...] | None:
    """The ``row_values`` layout of ``columns`` (number -> column): a tuple indexed by the
    number, each column keyed by itself or by its index; ``None`` when a number is out of
    range (the Python code then reads those columns)."""
    if not columns or not all(0 <= n <= _MAX_SEGCOL for n in columns):
        return None
    layout: list[_Entry | None] = [None] * (max(columns) + 1)
    for n, (col, decode) in columns.items():
        layout[n] = (col.index if by_index else col, _code(col), decode)
    return tuple(layout)


class _Layout:
    """A table's columns as the row builder reads them: ``segcols`` for the Python code,
    and for the C ``row_values`` tuples indexed by segment column number, keyed by column
    (``by_column``) or by trail column index (``by_index``, with ``template``: every
    column NULL, in table order, the insert image it fills), and by INTCOL# for
    supplemental data (``by_intcol``).  ``by_index`` is ``None`` when its image could differ
    from the Python code's (columns outside ``table.columns``, indexes repeated)."""

    __slots__ = ("by_column", "by_index", "by_intcol", "keys", "name", "segcols", "table",
                 "template")

    def __init__(self, table: OracleTable):
        self.table = table
        self.name = table.qualified_name
        self.keys: list[OracleColumn] | None = None  # the key columns, at first need
        self.segcols: dict[int, tuple[OracleColumn, Callable[[bytes], bytes]]] = {
            segcol: (col, decoder(col.kind, col.charset))
            for segcol, col in table.by_segcol.items()}
        self.template: dict[int, bytes | None] = {c.index: None for c in table.columns}
        self.by_column = _values_layout(self.segcols, False)
        self.by_intcol = _values_layout({n: (c, decoder(c.kind, c.charset))
                                         for n, c in table.by_intcol.items()}, False)
        members = {id(c) for c in table.columns}
        self.by_index = _values_layout(self.segcols, True) if len(self.template) == len(
            table.columns) and all(id(c) in members for c, _ in self.segcols.values()) else None
