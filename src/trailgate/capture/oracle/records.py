"""Redo record types and the token cursor the change parsers read with.

Dump text wraps lines wherever the trace writer's buffer ran out (``SEQ:1 OP:5.2`` on one
line or two, ``ktucf redo: uba:`` with the address on the next line), so change bodies are
parsed as a stream of whitespace-separated tokens, each remembering its line for errors.
"""

from __future__ import annotations

import builtins
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from trailgate.errors import SourceError
from trailgate.model import julian_from_unix_micros

__all__ = ["RBA", "Cursor", "RedoRecord", "located", "tokenize"]

_TOKEN = re.compile(r"\[\s*\d+\]|\S+")
_INT = re.compile(r"-?\d+")
_HEX = re.compile(r"0x([0-9a-f]+)")
_HEXBYTES = re.compile(r"[0-9a-f]{2}(?: [0-9a-f]{2})*")
_EPOCH = datetime(1970, 1, 1)
_JULIAN: dict[datetime, int] = {}
XID_RE = re.compile(r"0x([0-9a-f]{4})\.([0-9a-f]{3})\.([0-9a-f]{8})")


class RBA(NamedTuple):
    """Redo byte address: log sequence, block, offset in block (ordered as a tuple; a
    NamedTuple because one is built per redo record and a frozen dataclass costs more)."""

    seq: int
    block: int
    offset: int

    def __str__(self) -> str:
        return f"0x{self.seq:06x}.{self.block:08x}.{self.offset:04x}"

    @property
    def audit_pos(self) -> int:
        """The trail's AuditPos for this record: ``block << 9 | offset``."""
        return self.block << 9 | self.offset

    @classmethod
    def parse(cls, text: str) -> RBA:
        m = re.fullmatch(r"0x([0-9a-f]{6})\.([0-9a-f]{8})\.([0-9a-f]{4})", text)
        if not m:
            raise ValueError(f"not a redo byte address: {text!r}")
        return cls(int(m[1], 16), int(m[2], 16), int(m[3], 16))


def located(path: str, line: int, rba: RBA | None, message: str) -> SourceError:
    """A SourceError naming the dump file, line and redo record."""
    where = f"{path}, line {line}"
    if rba is not None:
        where += f", redo record RBA {rba}"
    return SourceError(f"{where}: {message}")


def xid_text(m: re.Match[str]) -> str:
    """``0x0004.00b.00000356`` (matched by XID_RE) -> ``4.11.854``."""
    return f"{int(m[1], 16)}.{int(m[2], 16)}.{int(m[3], 16)}"


@dataclass(slots=True)
class RedoRecord:
    """One ``REDO RECORD``: header fields and its change vectors, in dump order."""

    path: str
    line: int
    thread: int
    rba: RBA
    length: int
    vld: int
    scn: int
    subscn: int
    timestamp: datetime
    changes: list = field(default_factory=list)

    @property
    def julian_time(self) -> int:
        """The record's timestamp as GoldenGate Julian microseconds (taken as UTC: redo
        timestamps are database-local and carried unchanged, as GoldenGate does)."""
        julian = _JULIAN.get(self.timestamp)
        if julian is None:
            seconds = int((self.timestamp - _EPOCH).total_seconds())
            julian = julian_from_unix_micros(seconds * 1_000_000)
            if len(_JULIAN) >= 4096:
                _JULIAN.clear()
            _JULIAN[self.timestamp] = julian
        return julian


def tokenize(lines: list[tuple[int, str]]) -> tuple[list[str], list[tuple[int, int]]]:
    """Tokens of some dump lines, and ``(first token index, line number)`` per line so a
    token's line is found only when an error needs it.  ``[ 3]`` becomes one token."""
    toks: list[str] = []
    starts: list[tuple[int, int]] = []
    for lineno, text in lines:
        starts.append((len(toks), lineno))
        if "[ " in text:
            toks.extend(_TOKEN.findall(text))
        else:
            toks.extend(text.split())
    return toks, starts


class Cursor:
    """Sequential reader over a change body's tokens; every failure is a located SourceError."""

    __slots__ = ("end_line", "i", "path", "rba", "starts", "toks")

    def __init__(self, toks: list[str], starts: list[tuple[int, int]], path: str, rba: RBA,
                 end_line: int):
        self.toks, self.starts, self.i = toks, starts, 0
        self.path, self.rba, self.end_line = path, rba, end_line

    def line(self) -> int:
        """The line of the current token (the last line once past the end)."""
        if self.i >= len(self.toks):
            return self.end_line
        k = bisect_right(self.starts, (self.i, 1 << 62)) - 1
        return self.starts[k][1]

    def error(self, message: str) -> SourceError:
        return located(self.path, self.line(), self.rba, message)

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str = "more text") -> str:
        if self.i >= len(self.toks):
            raise self.error(f"change ends where {what} was expected (dump cut short?)")
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, *words: str) -> None:
        i, n = self.i, len(words)
        if self.toks[i : i + n] == list(words):
            self.i = i + n
            return
        for word in words:
            tok = self.next(repr(word))
            if tok != word:
                self.i -= 1
                raise self.error(f"expected {word!r} but found {tok!r}")

    def find(self, *words: str) -> bool:
        """Advance past the next occurrence of the token sequence ``words``."""
        toks, n = self.toks, len(words)
        for j in range(self.i, len(toks) - n + 1):
            if toks[j] == words[0] and toks[j : j + n] == list(words):
                self.i = j + n
                return True
        return False

    def int(self, label: str | None = None) -> int:
        if label is not None:
            self.expect(label)
        tok = self.next("a number")
        if not _INT.fullmatch(tok):
            self.i -= 1
            raise self.error(f"expected a number after {label or 'this'} but found {tok!r}")
        return int(tok)

    def hex(self, label: str | None = None, width: builtins.int | None = None) -> builtins.int:
        if label is not None:
            self.expect(label)
        tok = self.next("a hex number")
        m = _HEX.fullmatch(tok)
        if not m or (width is not None and len(m[1]) != width):
            self.i -= 1
            size = f"{width}-digit " if width else ""
            raise self.error(f"expected a {size}lower-case hex number 0x… after "
                             f"{label or 'this'} but found {tok!r}")
        return int(m[1], 16)

    def match(self, pattern: re.Pattern[str], what: str) -> re.Match[str]:
        tok = self.next(what)
        m = pattern.fullmatch(tok)
        if not m:
            self.i -= 1
            raise self.error(f"expected {what} but found {tok!r}")
        return m

    def hex_bytes(self, count: builtins.int) -> bytes:
        """``count`` two-digit lower-case hex byte tokens."""
        if count == 0:
            return b""
        if self.i + count > len(self.toks):
            self.i = len(self.toks)
            raise self.error(f"column value ends before its {count} bytes (dump cut short?)")
        joined = " ".join(self.toks[self.i : self.i + count])
        if not _HEXBYTES.fullmatch(joined):
            for k in range(count):
                if not re.fullmatch(r"[0-9a-f]{2}", self.toks[self.i + k]):
                    self.i += k
                    raise self.error(f"bad hex byte {self.toks[self.i]!r} in a column value "
                                     f"(expected {count} lower-case hex bytes)")
        self.i += count
        return bytes.fromhex(joined)
