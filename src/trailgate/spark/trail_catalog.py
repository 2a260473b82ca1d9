"""The tables a trail holds: their definitions in trail order and their change counts.

A typed read needs a table's columns before Spark plans anything, and listing a trail's
tables needs the same pass, so both come from here.  Each file is read once, headers and
table definitions only (no column value is decoded; the C codec frames the records and
counts them without a Python object each, the reader takes what it leaves), and remembered
by path, size and modification time, so the planner's several calls and a growing trail's
older files cost nothing more.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

import pyarrow as pa

from trailgate.errors import TrailFormatError
from trailgate.model import OpType, TableDef, TrailPosition
from trailgate.params.names import match_table
from trailgate.trail._accel import speedups
from trailgate.trail.chunks import file_chunks
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.naming import TrailName
from trailgate.trail.reader import TrailReader
from trailgate.trail.records import decode_record

__all__ = ["LIST_SCHEMA_DDL", "TrailTable", "find_table", "list_batch", "tables_between",
           "trail_tables"]

_METADATA = int(OpType.METADATA)
_ROWS = frozenset(int(op) for op in OpType if op.is_row_change)


@dataclass(slots=True)
class TrailTable:
    """One table of a trail: its distinct definitions in the order they appear, where each
    change of definition lies, and how many row changes (inserts, updates, deletes,
    truncates) the trail holds for it."""

    name: str
    definitions: list[TableDef] = field(default_factory=list)
    history: list[tuple[TrailPosition, TableDef]] = field(default_factory=list)
    changes: int = 0

    def add_definition(self, position: TrailPosition, table: TableDef) -> None:
        if table not in self.definitions:
            self.definitions.append(table)
        if not self.history or self.history[-1][1] != table:
            self.history.append((position, table))


# by path: the size and modification time it was read at, and what it holds (a growing
# file's entry is replaced, not added to)
_cache: dict[str, tuple[int, int, list[TrailTable]]] = {}
_lock = threading.Lock()


def _file_tables(trail: str, seqno: int) -> list[TrailTable]:
    path = TrailName(trail).file(seqno)
    try:
        st = os.stat(path)
    except OSError:
        return []
    with _lock:
        hit = _cache.get(str(path))
    if hit is not None and hit[:2] == (st.st_size, st.st_mtime_ns):
        return hit[2]
    tables = tables_between(trail, seqno, 0, None)
    with _lock:
        _cache[str(path)] = (st.st_size, st.st_mtime_ns, tables)
    return tables


def tables_between(trail: str, seqno: int, start_rba: int, end_rba: int | None
                   ) -> list[TrailTable]:
    """The tables of file ``seqno`` from record boundary ``start_rba`` up to ``end_rba``
    (None: its end), read as :func:`trail_tables` reads a whole file."""
    found: dict[str, TrailTable] = {}
    resume = _tables_fast(trail, seqno, start_rba, end_rba, found)
    if resume is None:
        return list(found.values())
    # the reader goes on where the C pass stopped (something for it to judge), or does the
    # whole range (no C codec, a 12c+ or encrypted file)
    return _tables_slow(trail, seqno, resume, end_rba, found)


_ROW_FLAGS = bytes(1 if n in _ROWS else 0 for n in range(256))


def _tables_fast(trail: str, seqno: int, start_rba: int, end_rba: int | None,
                 found: dict[str, TrailTable]) -> int | None:
    """The C codec's pass (``scan_tables``) over the 11.2 records from ``start_rba``, a
    chunk at a time: no Python object per record.  Returns where Python's reader must go
    on (something for it to judge: a 12c+ file, fragments, damage, the file's growing end),
    or None when the range is done."""
    if speedups is None:
        return start_rba
    path = TrailName(trail).file(seqno)
    try:
        with file_chunks(path, start_rba, end_rba) as chunks:
            if chunks is None:
                return start_rba  # the reader decodes 12c+ and opens encrypted records
            while (buf := chunks.next()) is not None:
                pos = chunks.pos
                counts: dict[str, int] = {}
                first: dict[str, int] = {}
                out = speedups.scan_tables(buf, 0, len(buf), _ROW_FLAGS, counts, first)
                if out is None:
                    break
                n, metadata, stop = out
                events: list[tuple[int, str, TableDef | None]] = [
                    (at, name, None) for name, at in first.items()]
                for at, length in metadata:
                    table = _definition(buf, at, length, path, pos + at)
                    if table is not None:
                        events.append((at, table.qualified_name, table))
                for at, name, table in sorted(events, key=lambda e: e[0]):
                    entry = found.setdefault(name, TrailTable(name))
                    if table is not None:
                        entry.add_definition(TrailPosition(seqno, pos + at), table)
                for name, count in counts.items():
                    found[name].changes += count
                chunks.consumed(n)
                if stop:
                    return chunks.pos
            rest = chunks.pos if chunks.carry else None
    except OSError:
        return start_rba  # the reader says what is wrong with the file
    return rest


def _definition(buf: bytes, at: int, length: int, path: object, rba: int) -> TableDef | None:
    """The table definition in the metadata record at ``buf[at:]`` (None: a DDR or PNR
    record, or one without data)."""
    try:
        raw = decode_record(buf, at, at + length)
        if not raw.data or raw.orig_node in (1, 4):
            return None
        return decode_tabledef(raw.data)
    except ValueError as exc:
        raise TrailFormatError(f"metadata record: {exc}", path=str(path), rba=rba) from None


def _tables_slow(trail: str, seqno: int, start_rba: int, end_rba: int | None,
                 found: dict[str, TrailTable]) -> list[TrailTable]:
    """:func:`tables_between` read as logical records (metadata split into fragments, the
    12c+ formats' definitions), adding to what ``found`` holds before ``start_rba``: the
    reference the C pass is tested against."""
    reader = TrailReader(trail, start=TrailPosition(seqno, start_rba), values=False)
    for record in reader.records():
        position = record.position
        if position.seqno != seqno or (end_rba is not None and position.rba >= end_rba):
            break
        raw = record.raw
        if raw.io_type == _METADATA:
            if record.table_def is not None:
                name = record.table_def.qualified_name
                found.setdefault(name, TrailTable(name)).add_definition(position,
                                                                        record.table_def)
        elif raw.io_type in _ROWS and raw.table:
            found.setdefault(raw.table, TrailTable(raw.table)).changes += 1
    return list(found.values())


def trail_tables(trail: str, seqnos: tuple[int, ...] | None = None) -> list[TrailTable]:
    """The tables of ``trail`` (or of its files ``seqnos``), in the order they first
    appear, each with its definitions and change count."""
    seqs = seqnos if seqnos is not None else tuple(TrailName(trail).sequence_numbers())
    merged: dict[str, TrailTable] = {}
    for seq in seqs:
        for table in _file_tables(trail, seq):
            into = merged.setdefault(table.name, TrailTable(table.name))
            for position, definition in table.history:
                into.add_definition(position, definition)
            into.changes += table.changes
    return list(merged.values())


#: The rows of ``option("listTables", "true")``: one per table of the trail.
LIST_SCHEMA_DDL = ("table_name string, columns string, definitions int, changes long")


def list_batch(trail: str, seqnos: tuple[int, ...] | None = None) -> pa.RecordBatch:
    """The trail's tables as the rows of :data:`LIST_SCHEMA_DDL`: each table's name, its
    typed columns (the union of its definitions, as the ``table`` option reads them; empty
    when the trail has no definition of it), its number of definitions and of changes."""
    from trailgate.spark.typed_values import arrow_type, quote, spark_ddl

    rows: dict[str, list[object]] = {"table_name": [], "columns": [], "definitions": [],
                                     "changes": []}
    for table in trail_tables(trail, seqnos):
        types: dict[str, str] = {}
        for definition in table.definitions:
            for column in definition.columns:
                ddl = spark_ddl(arrow_type(column))
                types[column.name] = ddl if types.get(column.name, ddl) == ddl else "string"
        rows["table_name"].append(table.name)
        rows["columns"].append(", ".join(f"{quote(n)} {t}" for n, t in types.items()))
        rows["definitions"].append(len(table.definitions))
        rows["changes"].append(table.changes)
    schema = pa.schema([("table_name", pa.string()), ("columns", pa.string()),
                        ("definitions", pa.int32()), ("changes", pa.int64())])
    return pa.RecordBatch.from_arrays([pa.array(rows[n], schema.field(n).type)
                                       for n in schema.names], schema=schema)


def find_table(trail: str, pattern: str, seqnos: tuple[int, ...] | None = None) -> TrailTable:
    """The one table of the trail ``pattern`` names (``SCHEMA.TABLE``, case-insensitive
    unless quoted; a bare name matches any schema).  Raises ``ValueError`` naming the trail's
    tables when none or several match, or when the table has no definition in the trail."""
    spec = pattern.strip()
    full = spec if "." in spec else f"*.{spec}"
    tables = trail_tables(trail, seqnos)
    try:
        hits = [t for t in tables if match_table(full, t.name)]
    except ValueError as exc:
        raise ValueError(f"option table={pattern!r}: {exc}") from None
    there = ", ".join(t.name for t in tables) or "none"
    if not hits:
        raise ValueError(f"option table={pattern!r}: no such table in trail {trail} "
                         f"(its tables: {there})")
    if len(hits) > 1:
        raise ValueError(f"option table={pattern!r} matches {len(hits)} tables of trail "
                         f"{trail} ({', '.join(t.name for t in hits)}); name one")
    hit = hits[0]
    if not hit.definitions:
        raise ValueError(f"option table={pattern!r}: trail {trail} has no table definition "
                         f"(metadata record) for {hit.name}, so its column types are "
                         "unknown; read it without the table option")
    return hit
