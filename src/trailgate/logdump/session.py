"""A Logdump session: the open file, the position, display settings, filters, tables seen.

Commands (``commands.py``) call these methods; every method writes lines to ``out`` and
turns trail damage into a message naming file and RBA, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from trailgate.errors import TrailFormatError
from trailgate.logdump.filters import FilterSet
from trailgate.logdump.render import (
    SEPARATOR,
    Settings,
    header_tokens,
    render_file_header,
    render_record,
)
from trailgate.logdump.render12 import render_record12
from trailgate.logdump.source import Eof, HeaderEntry, Record, TrailFile
from trailgate.model import OpType, TableDef
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.records import RawRecord

__all__ = ["Session"]

Entry = RawRecord | HeaderEntry


@dataclass(slots=True)
class _MetaState:
    """A metadata record being collected across its fragments."""

    table: str
    data: list[bytes] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)


class Session:
    """The state one Logdump run works on."""

    def __init__(self, out: TextIO | None = None):
        self.out = out if out is not None else sys.stdout
        self.settings = Settings()
        self.filters = FilterSet()
        self.file: TrailFile | None = None
        self.rba = 0
        self.tables: dict[str, TableDef] = {}
        self.table_records: dict[str, bytes] = {}  # raw metadata record(s) per table (SAVE)
        self.history: list[str] = []
        self._meta: _MetaState | None = None
        self._scanned_to = 0  # metadata has been collected from records before this RBA

    # -- output ---------------------------------------------------------------------------

    def say(self, *lines: str) -> None:
        for line in lines:
            self.out.write(line.rstrip() + "\n")

    def require_file(self) -> TrailFile | None:
        if self.file is None:
            self.say("No file is open: OPEN a trail file first (OPEN ./dirdat/aa000000000)")
        return self.file

    # -- files ----------------------------------------------------------------------------

    def open(self, path: str | Path) -> bool:
        try:
            trail_file = TrailFile(path)
        except TrailFormatError as exc:
            self.say(f"Error: {exc}")
            return False
        if self.file is not None:
            self.file.close()
        self.file = trail_file
        trail_file.set_decrypt(self.settings.decrypt, self.settings.key_name)
        self.rba = 0
        self._scanned_to = 0
        self._meta = None
        self.say(f"Current LogTrail is {trail_file.path}")
        if trail_file.header_error:
            self.say(f"Warning: {trail_file.path}: damaged file header: "
                     f"{trail_file.header_error}; SCANFORHEADER finds the first record")
        elif trail_file.header is not None and trail_file.header.compatibility > 8:
            self.say(f"Warning: CompatibilityLevel {trail_file.header.compatibility} is newer "
                     "than trailgate reads (8: GoldenGate 21c); records are shown as 12c+ "
                     "records and may not display correctly")
        return True

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    # -- reading ------------------------------------------------------------------------------

    def _observe(self, entry: Entry, raw: bytes | None = None) -> None:
        """Learn table definitions from metadata records as they pass (joined fragments)."""
        if isinstance(entry, HeaderEntry):
            return
        if raw is None and self.file is not None:
            raw = self.file.record_bytes(entry)
        io = entry.io_type
        if io == OpType.METADATA:
            self._meta = _MetaState(entry.table, [entry.data], [raw or b""])
        elif io == OpType.RECORD_FRAGMENT and self._meta is not None \
                and self._meta.table == entry.table:
            self._meta.data.append(entry.data)
            self._meta.raw.append(raw or b"")
        else:
            self._meta = None
            return
        if not entry.continued:
            meta, self._meta = self._meta, None
            try:
                table = decode_tabledef(b"".join(meta.data))
            except ValueError:
                return
            self.tables[table.qualified_name] = table
            self.table_records[table.qualified_name] = b"".join(meta.raw)

    def records_from(self, rba: int) -> Iterator[Entry | Eof]:
        """Entries from ``rba`` on, observing metadata; ends with an :class:`Eof`.

        Raises :class:`TrailFormatError` at a damaged record.
        """
        file = self.file
        assert file is not None
        while True:
            entry = file.read_at(rba)
            if isinstance(entry, Eof):
                yield entry
                return
            self._observe(entry)
            yield entry
            rba = file.next_rba(entry)

    def _learn_tables(self, upto: int) -> None:
        """Collect table definitions from records before ``upto`` (after POSITION)."""
        if self.file is None or upto <= self._scanned_to:
            return
        saved = self._meta
        self._meta = None
        rba = max(self._scanned_to, self.file.first_record_rba)
        try:
            for entry in self.records_from(rba):
                if isinstance(entry, Eof) or entry.rba >= upto:
                    break
        except TrailFormatError:
            pass
        self._meta = saved
        self._scanned_to = upto

    def table_for(self, record: RawRecord) -> TableDef | None:
        if record.table not in self.tables:
            self._learn_tables(record.rba)
        return self.tables.get(record.table)

    def display(self, entry: Entry) -> None:
        assert self.file is not None
        buf = self.file.record_bytes(entry)
        view = entry.view if isinstance(entry, Record) else None
        if self.settings.headertoken != "OFF" and not isinstance(entry, HeaderEntry):
            self.say(*header_tokens(buf, view.order if view is not None else "big",
                                    self.settings.headertoken == "DETAIL"))
        self.say(SEPARATOR)
        if isinstance(entry, HeaderEntry):
            self.say(*render_file_header(entry, buf, self.settings))
            return
        if isinstance(entry, Record) and view is not None:
            self.say(*render_record12(entry, self.table_for(entry), self.settings))
            return
        self.say(*render_record(entry, buf, self.table_for(entry), self.settings))

    def passes(self, entry: Entry) -> bool:
        if isinstance(entry, HeaderEntry):
            return self.filters.header_passes()
        return self.filters.passes(entry)

    def eof_message(self, eof: Eof) -> None:
        assert self.file is not None
        message = f"Eof reached at RBA {eof.rba} of {self.file.path}"
        if eof.partial:
            message += (f"; {eof.partial} bytes of an incomplete record follow (a writer is "
                        "still writing it, or stopped)")
        self.say(message)
        following = self.file.sibling(1)
        if following is not None:
            self.say(f"Next file of this trail: {following} (NEXTTRAIL opens it)")

    def damage_message(self, exc: TrailFormatError) -> None:
        self.say(f"Error: {exc}")
        if "SCANFORHEADER" not in str(exc):
            self.say("Use SCANFORHEADER (SFH) to find the next good record.")

    def next(self, count: int = 1, match=None) -> int:
        """Show the next ``count`` records passing the filter (and ``match``); returns how
        many were shown."""
        file = self.require_file()
        if file is None:
            return 0
        shown = suppressed = 0
        try:
            for entry in self.records_from(self.rba):
                if isinstance(entry, Eof):
                    self.rba = entry.rba
                    self._note_suppressed(suppressed)
                    suppressed = 0
                    self.eof_message(entry)
                    break
                self.rba = file.next_rba(entry)
                if not self.passes(entry) or (match is not None and not match(entry)):
                    suppressed += 1
                    continue
                self._note_suppressed(suppressed)
                suppressed = 0
                self.display(entry)
                shown += 1
                if shown >= count:
                    break
        except TrailFormatError as exc:
            self._note_suppressed(suppressed)
            self.rba = exc.rba if exc.rba is not None else self.rba
            self.damage_message(exc)
        return shown

    def _note_suppressed(self, n: int) -> None:
        if n and self.filters.active:
            self.say(f"Filtering suppressed {n:>6} records")
        elif n:
            self.say(f"Skipped {n} records")

    # -- positioning ----------------------------------------------------------------------

    def position(self, rba: int) -> None:
        file = self.require_file()
        if file is None:
            return
        self.rba = rba
        self.say(f"Reading forward from RBA {rba}")
        if rba == 0:
            return
        try:
            entry = file.read_at(rba)
        except TrailFormatError as exc:
            self.say(f"Warning: RBA {rba} is not the start of a good record: {exc}")
            return
        if isinstance(entry, Eof):
            self.say(f"Note: RBA {rba} is at or past the end of the file ({file.size} bytes)")

    def last_record_rba(self) -> int | None:
        """The RBA of the file's last whole record (walking record lengths)."""
        file = self.require_file()
        if file is None:
            return None
        last = None
        try:
            for entry in self.records_from(file.first_record_rba):
                if isinstance(entry, Eof):
                    break
                last = entry.rba
        except TrailFormatError as exc:
            self.say(f"Error: {exc}")
        return last

    def scan_for_header(self) -> None:
        file = self.require_file()
        if file is None:
            return
        start = self.rba + 1
        found = file.scan_for_header(start)
        if found is None:
            self.say(f"No record header found after RBA {self.rba} (file ends at RBA "
                     f"{file.size})")
            self.rba = file.size
            return
        self.say(f"Scanned {found - start + 1} bytes from RBA {self.rba}; next record header "
                 f"at RBA {found}")
        self.rba = found
        self.next(1)

    # -- housekeeping -------------------------------------------------------------------------

    def nexttrail(self) -> None:
        file = self.require_file()
        if file is None:
            return
        following = file.sibling(1)
        if following is None:
            self.say(f"No next file after {file.path} in this trail")
            return
        self.open(following)

    def cwd_relative(self, path: str) -> str:
        return os.path.expanduser(path)
