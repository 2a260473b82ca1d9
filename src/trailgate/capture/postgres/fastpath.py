"""The Extract's fast row path: a pgoutput row change straight to a trail record, in C.

``_pgfast.encode_change`` does in one pass what pgoutput.py, capture.py (``_image``,
``_update``), types.py and trail/values.py do with Python objects, and gives the same bytes;
for anything unusual it returns ``None`` and the caller takes that Python path, which is the
reference (``tests/unit/test_pgfast.py``).  ``txns_encoder`` takes many whole small
transactions at once, ``scan_span`` finds where a stream's read stops.

Without the C module (``setup.py``), or with ``TRAILGATE_PURE_PYTHON=1``, ``available`` is
false and every change takes the Python path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from trailgate.capture.postgres.types import PgType
from trailgate.model import ColumnKind, OpType, TableDef
from trailgate.trail._accel import load_optional

__all__ = ["OPS", "Span", "available", "encode_change", "keep_mask", "next_mark",
           "relation_layout", "row_encoder", "rows_encoder", "scan_span", "txns_encoder"]

#: Part of a read-ahead buffer: ``(chunk, lo, hi)``, the ``(lsn, message)`` pairs
#: ``chunk[lo:hi]`` (a message ``None`` is a keepalive; ``lsn`` is then the server's WAL end).
Span: TypeAlias = tuple[list[tuple[int, Any]], int, int]

#: ``encode_change``'s operation codes.
OPS = (OpType.INSERT, OpType.DELETE, OpType.FIELD_COMP, OpType.PK_UPDATE)

_CONV_TEXT, _CONV_NUMBER, _CONV_BOOL, _CONV_CHAR, _CONV_DATE, _CONV_TIMESTAMP, _CONV_RAW = \
    range(7)
_FRAMES = {ColumnKind.CHAR: 1, ColumnKind.DATE: 2, ColumnKind.TIMESTAMP: 3}  # else variable


_module = load_optional("trailgate.capture.postgres._pgfast")
#: True when the C row path can be used.
available = _module is not None
#: The C function for a per-row loop (``None`` when not built):
#: ``(message, layout, keep, table, io_time, lsn) -> record | None``, the change's whole trail
#: record as ``records.encode_row_record`` makes it from ``encode_change``'s D area.
row_encoder = _module.encode_row if _module is not None else None
#: ``encode_row`` over a run of one relation's row changes in a span (``None`` when not
#: built): ``(chunk, start, stop, key, layout, keep, table, io_time, out, room, budget) ->
#: (next, nbytes)``, each record appended to ``out``; it stops at the first item that is
#: not a row change of relation ``key`` (the message's bytes 1-4) or that ``encode_row``
#: leaves to Python, after ``room`` records or once ``budget`` bytes are reached.
rows_encoder = _module.encode_rows if _module is not None else None


def _next_mark(chunk: list[tuple[int, Any]], start: int, stop: int) -> int:
    for i in range(start, min(stop, len(chunk))):
        data = chunk[i][1]
        if data is None or not data or data[0] in (0x42, 0x43):
            return i
    return min(stop, len(chunk))


#: The first index in ``chunk[start:stop]`` holding a keepalive, a Begin or a Commit, else
#: ``stop``: what a stream's batch boundaries look at inside a transaction.
next_mark = _module.next_mark if _module is not None else _next_mark

#: Whole small transactions of a span in one call (``None`` when not built): ``(chunk,
#: start, stop, rels, after, upto, max_txns, max_bytes, max_rows) -> (next, count, blob,
#: last_csn, last_end_lsn, last_commit_time)``, ``blob`` a ``trail.txn_batch`` (``None``
#: when no record was written); see ``_pgfast.c`` for what it leaves to the capture loop.
txns_encoder = _module.encode_txns if _module is not None else None


def _lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _scan_span(chunk: list[tuple[int, Any]], i: int, stop: int, end: int, bound: int,
               in_txn: bool) -> tuple[int, int, bool, int]:
    """``scan_span``'s reference (see there)."""
    stop = min(stop, len(chunk))
    i = max(i, 0)
    while i < stop:
        lsn, data = chunk[i]
        if data is None:  # a keepalive: the server has read the log up to lsn
            bound = max(bound, lsn)
            if not in_txn and bound >= end:
                return i, bound, in_txn, 1
            i += 1
            continue
        if not data:
            raise ValueError(f"empty pgoutput message at LSN {_lsn_text(lsn)}")
        kind = data[0]
        if in_txn:
            i += 1
            if kind == 0x43:  # Commit: flags, commit LSN, end LSN at offset 10
                if len(data) < 18:
                    raise ValueError(f"malformed pgoutput Commit message at LSN "
                                     f"{_lsn_text(lsn)}")
                in_txn = False
                bound = max(bound, int.from_bytes(data[10:18], "big"))
                if bound >= end:
                    return i, bound, in_txn, 3
            continue
        if kind == 0x42:  # Begin: its commit LSN at offset 1
            if len(data) < 9:
                raise ValueError(f"malformed pgoutput Begin message at LSN {_lsn_text(lsn)}")
            if int.from_bytes(data[1:9], "big") >= end:
                return i, max(bound, end), in_txn, 2
            in_txn = True
        elif lsn >= end:  # a message outside transactions, after end
            return i, max(bound, lsn), in_txn, 2
        else:
            bound = max(bound, lsn)
        i += 1
    return i, bound, in_txn, 0


#: Where a stream's read of the transactions committing before ``end`` stops, from
#: ``chunk[i]`` on: ``(chunk, i, stop, end, bound, in_txn) -> (i, bound, in_txn, action)``
#: (``bound``: every commit before it has been received).  ``action`` 0: ``stop`` reached;
#: 1: the keepalive at ``i`` ends the read (resume after it); 2: the read ends before
#: ``chunk[i]``; 3: the Commit before ``chunk[i]`` ends it.  A malformed Begin or Commit is
#: a ``ValueError`` naming its LSN.
scan_span = _module.scan_span if _module is not None else _scan_span


def _conv(pgtype: PgType) -> int:
    kind = pgtype.kind
    if kind is ColumnKind.NUMBER:
        return _CONV_BOOL if pgtype.is_bool else _CONV_NUMBER
    return {ColumnKind.CHAR: _CONV_CHAR, ColumnKind.DATE: _CONV_DATE,
            ColumnKind.TIMESTAMP: _CONV_TIMESTAMP, ColumnKind.RAW: _CONV_RAW
            }.get(kind, _CONV_TEXT)


def relation_layout(table: TableDef, types: Sequence[PgType], key: Sequence[int]) -> bytes:
    """A relation as the C code reads it (see ``_pgfast.c``): how each column converts and
    frames, and which columns are the key."""
    out = bytearray(len(types).to_bytes(2, "big") + len(key).to_bytes(2, "big"))
    for index in key:
        out += index.to_bytes(2, "big")
    for column, pgtype in zip(table.columns, types, strict=True):
        width = (column.length or 0) if column.kind is ColumnKind.CHAR else 0
        out += bytes((_conv(pgtype), _FRAMES.get(column.kind, 0))) + \
            min(width, 0xFFFF).to_bytes(2, "big")
    return bytes(out)


def keep_mask(columns: int, keep: frozenset[int] | None) -> bytes | None:
    """The COLS/COLSEXCEPT selection as one byte per column (``None``: every column)."""
    if keep is None:
        return None
    return bytes(1 if i in keep else 0 for i in range(columns))


def encode_change(message: bytes, layout: bytes, keep: bytes | None
                  ) -> tuple[OpType, bytes] | None:
    """(operation, D area) of an Insert/Update/Delete message, or ``None``: use Python."""
    if _module is None:
        return None
    result = _module.encode_change(message, layout, keep)
    if result is None:
        return None
    return OPS[result[0]], result[1]

