"""Rows with values built by the C codec a chunk at a time, the Python reader taking the rest.

``change_rows`` applies :func:`trail_rows.drive`'s transaction rule to one chunk of an 11.2
file and returns the Arrow buffers of its rows, no Python object per value.  It learns each
table's definition as a compact spec built here, and stops where the Python code does what
it does not (DDL rows, fragments, LOB pieces, damage).  From a stop, and for a file it
cannot read (12c+, encrypted), the caller's ``fallback`` (drive) reads the transactions
that start before it and says where it stopped, so the rows are drive's in every case.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trailgate.model import TableDef, TrailPosition
from trailgate.trail._accel import speedups
from trailgate.trail.chunks import file_chunks
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.naming import TrailName
from trailgate.trail.records import decode_record

__all__ = ["SPEC_KEEP", "SPEC_KNOWN", "SPEC_STOP", "Assemble", "Fallback", "Stopped",
           "change_batches", "spec_bytes"]

SPEC_KNOWN, SPEC_KEEP, SPEC_STOP = 1, 2, 4
_HEAD = struct.Struct("=BxxxI")
_ENTRY = struct.Struct("=BBHi")


def spec_bytes(flags: int, entries: dict[int, tuple[int, int, bytes | int]]) -> bytes:
    """A table spec for ``change_rows``: ``entries`` maps a column index to (kind: 1
    variable, 2 fixed width; hex: 1 for the value as hex text; the map key's name, or the
    typed slot, -1 for none)."""
    wide = [i for i in entries if 0 <= i <= 0xFFFF]
    ncols = max(wide) + 1 if wide else 0
    parts = [_HEAD.pack(flags, ncols)]
    names = bytearray()
    for i in range(ncols):
        entry = entries.get(i)
        if entry is None:
            parts.append(_ENTRY.pack(0, 0, 0, -1))
            continue
        kind, hexed, target = entry
        if isinstance(target, int):
            parts.append(_ENTRY.pack(kind, hexed, 0, target))
        else:
            name = target[:0xFFFF]
            parts.append(_ENTRY.pack(kind, hexed, len(name), len(names)))
            names += name
    parts.append(bytes(names))
    return b"".join(parts)


@dataclass(slots=True)
class Stopped:
    """Where a fallback read stopped (the record it did not take) and the definitions in
    force there."""

    position: TrailPosition
    tables: dict[str, TableDef]


#: drive over ``[lower, upper)`` with the definitions in force at ``lower``.
Fallback = Callable[[TrailPosition, TrailPosition, dict[str, TableDef]],
                    Generator[pa.RecordBatch, None, "Stopped | None"]]
#: The batch of ``rows`` rows of file ``seq`` (record offsets from ``base``) from
#: ``change_rows``'s buffers, with the table names by index.
Assemble = Callable[[int, int, int, list[Any], list[str]], pa.RecordBatch]
#: A table's spec from its name and the definition in force (None: none in the trail yet).
SpecOf = Callable[[str, "TableDef | None"], bytes]


class _Tables:
    """The definitions in force as the C pass goes, its name index and specs, and a journal
    of the definitions it applied since the last boundary (to give the fallback those in
    force at that boundary)."""

    def __init__(self, tables: dict[str, TableDef], spec_of: SpecOf):
        self.tables = dict(tables)
        self.spec_of = spec_of
        self.names: dict[bytes, int] = {}
        self.texts: list[str] = []
        self.specs: list[bytes] = []
        self.journal: list[tuple[int, str, TableDef | None]] = []
        self.buf = b""
        self.base = 0

    def lookup(self, name: bytes) -> int | None:
        try:
            text = name.decode("utf-8")
        except UnicodeDecodeError:
            return None
        index = self.names[name] = len(self.specs)
        self.texts.append(text)
        self.specs.append(self.spec_of(text, self.tables.get(text)))
        return index

    def define(self, pos: int, length: int) -> int:
        """A metadata record at ``pos`` of the chunk: 0 nothing to apply, 1 applied, -1
        left to the reader (which raises)."""
        try:
            raw = decode_record(self.buf, pos, pos + length)
        except (ValueError, UnicodeDecodeError):
            return -1
        if not raw.data or raw.orig_node in (1, 4):
            return 0  # a database or partition record, as the reader skips them
        try:
            defined = decode_tabledef(raw.data)
        except ValueError:
            return -1
        name = defined.qualified_name
        self.journal.append((self.base + pos, name, self.tables.get(name)))
        self._set(name, defined)
        return 1

    def _set(self, name: str, table: TableDef | None) -> None:
        if table is None:
            self.tables.pop(name, None)
        else:
            self.tables[name] = table
        index = self.names.get(name.encode("utf-8"))
        if index is not None:
            self.specs[index] = self.spec_of(name, table)

    def at(self, offset: int) -> dict[str, TableDef]:
        """The definitions in force at ``offset`` of the current file."""
        tables = dict(self.tables)
        for at, name, before in reversed(self.journal):
            if at >= offset:
                if before is None:
                    tables.pop(name, None)
                else:
                    tables[name] = before
        return tables

    def forget(self, offset: int) -> None:
        self.journal = [entry for entry in self.journal if entry[0] >= offset]

    def reset(self, tables: dict[str, TableDef]) -> None:
        self.tables = dict(tables)
        self.journal.clear()
        for index, text in enumerate(self.texts):
            self.specs[index] = self.spec_of(text, self.tables.get(text))


def change_batches(trail: str, lower: TrailPosition, upper: TrailPosition | None, *,
                   keep: bytes, shape: tuple[bool, int, int, bytes], batch_rows: int,
                   tables: dict[str, TableDef] | None, spec_of: SpecOf,
                   assemble: Assemble, fallback: Fallback) -> Iterator[pa.RecordBatch]:
    """The rows of the transactions that start in ``[lower, upper)``, built by
    ``change_rows`` (``keep``: the IO types that are rows; ``shape``: what to build) and
    ``assemble``, the spans it leaves read by ``fallback``."""
    assert speedups is not None
    name = TrailName(trail)
    state = _Tables(tables or {}, spec_of)
    seq, pos = lower.seqno, lower.rba

    def clip(span_end: TrailPosition) -> TrailPosition:
        return span_end if upper is None or span_end < upper else upper

    while True:
        if upper is not None and TrailPosition(seq, pos) >= upper:
            return
        path = name.file(seq)
        handoff: tuple[TrailPosition, TrailPosition, dict[str, TableDef]] | None = None
        if not path.exists():
            if not any(s > seq for s in name.sequence_numbers()):
                return  # the end of the trail: drive would find nothing more either
            handoff = (TrailPosition(seq, pos), clip(TrailPosition(seq + 1, 0)), state.tables)
        else:
            try:
                handoff = yield from _file(path, seq, pos, upper, keep, shape, batch_rows,
                                           state, assemble, clip)
            except OSError:  # the reader says what is wrong with the file
                handoff = (TrailPosition(seq, pos), clip(TrailPosition(seq + 1, 0)),
                           state.at(pos))
            if handoff is None:
                return
        at, span_end, in_force = handoff
        if at >= span_end:
            seq, pos = span_end.seqno, span_end.rba
            continue
        stopped = yield from fallback(at, span_end, in_force)
        if stopped is None:
            return
        state.reset(stopped.tables)
        seq, pos = stopped.position.seqno, stopped.position.rba


_Handoff = tuple[TrailPosition, TrailPosition, dict[str, TableDef]]


def _file(path: Any, seq: int, pos: int, upper: TrailPosition | None, keep: bytes,
          shape: tuple[bool, int, int, bytes], batch_rows: int, state: _Tables,
          assemble: Assemble, clip: Callable[[TrailPosition], TrailPosition]
          ) -> Generator[pa.RecordBatch, None, _Handoff | None]:
    """One file's rows: returns where the fallback takes over (from, to, definitions),
    or None when the range is done; reaching the file's end at a boundary hands over an
    empty span to the next file."""
    assert speedups is not None
    with file_chunks(path, pos) as chunks:
        if chunks is None:  # 12c+ or encrypted: the reader's
            return TrailPosition(seq, pos), clip(TrailPosition(seq + 1, 0)), state.tables
        while (buf := chunks.next()) is not None:
            base = chunks.pos
            state.buf, state.base = buf, base
            stop_at = upper.rba - base if upper is not None and upper.seqno == seq else -1
            start = 0
            while True:
                boundary, rows, done, stop, stop_pos, columns = speedups.change_rows(
                    buf, start, len(buf), keep, max(stop_at, 0) if stop_at >= 0 else -1,
                    batch_rows, state.names, state.specs, state.lookup, state.define, shape)
                if rows:
                    yield assemble(seq, base, rows, columns, state.texts)
                state.forget(base + boundary)
                if done:
                    return None
                if stop:
                    at = base + boundary
                    return (TrailPosition(seq, at), clip(TrailPosition(seq, base + stop_pos + 1)),
                            state.at(at))
                if boundary == start:
                    break
                start = boundary
            if start == 0:  # no transaction ended in a whole buffer: a big one, the reader's
                return (TrailPosition(seq, base), clip(TrailPosition(seq, base + 1)),
                        state.at(base))
            chunks.consumed(start)
        if chunks.carry:  # a transaction going on into the next file, or a cut record
            return (TrailPosition(seq, chunks.pos), clip(TrailPosition(seq + 1, 0)),
                    state.at(chunks.pos))
        return TrailPosition(seq + 1, 0), TrailPosition(seq + 1, 0), state.tables
