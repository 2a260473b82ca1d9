"""Redo dump files to committed transactions, in commit-SCN order, restartable.

Dumps are grouped by redo thread, ordered by log sequence and merged by SCN (RAC); each redo
record's row operations are paired with their 5.1 undo, attributed to a transaction and
buffered until its commit.  ``DumpCapture.checkpoint()`` (JSON) holds each thread's read
position and oldest open transaction; given back as ``resume=``, capture re-reads from there
and skips commits already handed out.  docs/oracle-dumps.md, "Transactions".
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from trailgate.capture.oracle.assembly import (
    CHECKPOINT_FORMAT,
    Assembler,
    RecordEvents,
    merge_threads,
    record_events,
)
from trailgate.capture.oracle.dictionary import Dictionary
from trailgate.capture.oracle.dumpparser import parse_dump
from trailgate.capture.oracle.records import RBA, RedoRecord
from trailgate.capture.oracle.rowchanges import OnUnknown, RowBuilder
from trailgate.errors import SourceError
from trailgate.model import TableDef, Transaction

__all__ = ["CHECKPOINT_FORMAT", "DumpCapture", "capture_oracle_dumps", "files_by_thread",
           "first_record"]

log = logging.getLogger("trailgate.capture.oracle")

_PEEK = RBA(0xFFFFFF, 0, 0)  # parse no change bodies when only the first header is wanted


def capture_oracle_dumps(dictionary_path: str | Path, dump_paths: Iterable[str | Path], *,
                         on_unknown: OnUnknown = "stop", resume: dict[str, Any] | None = None,
                         spill_threshold: int = 16 << 20, memory_budget: int = 128 << 20,
                         spill_dir: str | None = None) -> DumpCapture:
    """Committed transactions of some ``ALTER SYSTEM DUMP LOGFILE`` traces.

    The result is an iterator of ``model.Transaction``; its ``tables`` attribute holds the
    TableDefs (``SCHEMA.TABLE`` -> TableDef) the trail writer needs.  ``on_unknown`` decides
    what redo for an object or column missing from the dictionary does: ``"stop"`` raises
    SourceError, ``"skip"`` warns and writes no record for that change.  ``resume`` is a
    :meth:`DumpCapture.checkpoint`; a transaction larger than ``spill_threshold`` bytes, or
    all open ones past ``memory_budget``, spill to files in ``spill_dir``.
    """
    return DumpCapture(Dictionary.load(dictionary_path), dump_paths, on_unknown=on_unknown,
                       resume=resume, spill_threshold=spill_threshold,
                       memory_budget=memory_budget, spill_dir=spill_dir)


class DumpCapture:
    """Iterator of committed transactions over a set of dump files."""

    def __init__(self, dictionary: Dictionary, dump_paths: Iterable[str | Path], *,
                 on_unknown: OnUnknown = "stop", resume: dict[str, Any] | None = None,
                 spill_threshold: int = 16 << 20, memory_budget: int = 128 << 20,
                 spill_dir: str | None = None):
        self.dictionary = dictionary
        self.tables: dict[str, TableDef] = dictionary.tabledefs()
        self.paths = [str(p) for p in dump_paths]
        if not self.paths:
            raise SourceError("no redo dump files given")
        self.warnings: list[str] = []
        self.builder = RowBuilder(dictionary, on_unknown, warn=self._warn)
        self.assembler = Assembler(resume=resume, warn=self._warn,
                                   spill_threshold=spill_threshold,
                                   memory_budget=memory_budget, spill_dir=spill_dir)
        self.buffer = self.assembler.buffer
        self._gen = self._run()

    def __iter__(self) -> DumpCapture:
        return self

    def __next__(self) -> Transaction:
        return next(self._gen)

    def close(self) -> None:
        """Stop early: remove spill files (``checkpoint()`` still answers)."""
        self._gen.close()
        self.assembler.close()

    def checkpoint(self) -> dict[str, Any]:
        """Restart state as of the last transaction handed out (JSON-serialisable)."""
        return self.assembler.checkpoint()

    @property
    def rolled_back(self) -> list[str]:
        """The XIDs of the transactions rolled back."""
        return self.assembler.rolled_back

    @property
    def open_at_end(self) -> list[str]:
        """The XIDs of the transactions still open at the end of the dumps (not emitted)."""
        return self.assembler.open_at_end

    @property
    def last_commit_scn(self) -> int | None:
        """The SCN of the last commit handed out."""
        return self.assembler.last_commit_scn

    @property
    def records(self) -> int:
        """Redo records read (with their changes), for summaries."""
        return self.assembler.records

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)

    def _run(self) -> Generator[Transaction, None, None]:
        try:
            threads = files_by_thread(self.paths)
            streams = {t: self._events(t, paths) for t, paths in threads.items()}
            for ev in merge_threads(streams):
                yield from self.assembler.feed(ev)
            self.assembler.finish()
        finally:
            self.assembler.close()

    def _events(self, thread: int, paths: list[str]) -> Iterator[RecordEvents]:
        start = self.assembler.start.get(thread)
        for path in paths:
            for rec in parse_dump(path, start=start):
                yield record_events(rec, self.builder)


def first_record(path: str) -> RedoRecord:
    """The first redo record's header of a dump (its thread and log sequence)."""
    gen = parse_dump(path, start=_PEEK)
    try:
        first = next(gen, None)
    finally:
        gen.close()
    if first is None:
        raise SourceError(f"{path}: no REDO RECORD found; is this an "
                          f"ALTER SYSTEM DUMP LOGFILE trace?")
    return first


def files_by_thread(paths: Iterable[str], firsts: dict[str, tuple[int, int]] | None = None
                    ) -> dict[int, list[str]]:
    """Dump files per redo thread, in log sequence order.  ``firsts`` may give a file's
    ``(thread, log sequence)`` already known (else its first record is read)."""
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        if firsts is not None and path in firsts:
            key = firsts[path]
        else:
            first = first_record(path)
            key = (first.thread, first.rba.seq)
        if key in seen:
            raise SourceError(f"{path} and {seen[key]} both start in log sequence "
                              f"{key[1]} of thread {key[0]}: give each log's dump once")
        seen[key] = path
    threads: dict[int, list[str]] = {}
    for (thread, _seq), path in sorted(seen.items()):
        threads.setdefault(thread, []).append(path)
    return threads
