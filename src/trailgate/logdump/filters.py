"""Logdump's FILTER: which records NEXT, COUNT, SCANFORTYPE and SAVE consider.

Each FILTER command adds one condition; a record passes when no EXCLUDE condition matches it
and the INCLUDE conditions match (all of them, or any with ``FILTER MATCH ANY``), as Logdump.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from trailgate.logdump.formats import io_type_name, parse_io_type
from trailgate.model import julian_from_unix_micros
from trailgate.trail.records import RawRecord

__all__ = ["Condition", "FilterError", "FilterSet", "parse_condition"]


class FilterError(ValueError):
    """A FILTER command that cannot be understood; the message says what is expected."""


@dataclass(slots=True)
class Condition:
    include: bool
    text: str
    test: Callable[[RawRecord], bool]

    def __str__(self) -> str:
        return f"{'Include' if self.include else 'Exclude'} {self.text}"


@dataclass(slots=True)
class FilterSet:
    conditions: list[Condition] = field(default_factory=list)
    match_all: bool = True
    enabled: bool = True

    @property
    def active(self) -> bool:
        return self.enabled and bool(self.conditions)

    def passes(self, record: RawRecord) -> bool:
        if not self.active:
            return True
        includes = []
        for cond in self.conditions:
            if cond.include:
                includes.append(cond)
            elif cond.test(record):
                return False
        if not includes:
            return True
        results = (c.test(record) for c in includes)
        return all(results) if self.match_all else any(results)

    def header_passes(self) -> bool:
        """The file header is shown unless an INCLUDE condition selects records."""
        return not self.active or not any(c.include for c in self.conditions)

    def describe(self) -> list[str]:
        if not self.conditions:
            return ["No filters defined"]
        lines = [f"Filtering is {'ON' if self.enabled else 'OFF'}, "
                 f"match {'ALL' if self.match_all else 'ANY'} include condition"]
        lines += [f"  {c}" for c in self.conditions]
        return lines


_COMPARE = {
    "=": lambda a, b: a == b, "==": lambda a, b: a == b, "<>": lambda a, b: a != b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}
_USAGE = ("FILTER [INCLUDE|EXCLUDE] {FILENAME pattern | IOTYPE type | RBA n [m] | "
          "RECLEN [op] n | TRANSIND n | STRING \"text\" | HEX \"hex\" | STARTTIME time | "
          "ENDTIME time}")


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise FilterError(f"{what} must be a number, not {text!r}") from None


def _time(words: list[str], tz: tzinfo = UTC) -> int:
    text = " ".join(words).replace("/", "-")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            when = datetime.strptime(text, fmt).replace(tzinfo=tz)
        except ValueError:
            continue
        return julian_from_unix_micros(int(when.timestamp() * 1_000_000))
    raise FilterError(f"not a time {text!r}: use YYYY/MM/DD [HH:MI[:SS[.FFFFFF]]] (in the "
                      "TIMEOFFSET zone, GMT unless set)")


def _numeric(words: list[str], what: str) -> tuple[Callable[[int], bool], str]:
    """``n`` / ``op n`` / ``n m`` (range) as a predicate on an integer."""
    if not words:
        raise FilterError(f"{what} needs a value")
    if words[0] in _COMPARE:
        if len(words) != 2:
            raise FilterError(f"{what} {words[0]} needs one number")
        op, n = _COMPARE[words[0]], _int(words[1], what)
        return (lambda v: op(v, n)), f"{what} {words[0]} {n}"
    if len(words) == 1:
        n = _int(words[0], what)
        return (lambda v: v == n), f"{what} {n}"
    if len(words) == 2:
        lo, hi = _int(words[0], what), _int(words[1], what)
        if lo > hi:
            raise FilterError(f"{what} range {lo} {hi}: the first number must not exceed the "
                              "second")
        return (lambda v: lo <= v <= hi), f"{what} {lo} to {hi}"
    raise FilterError(f"{what} takes a number, 'op number' or a range 'low high'")


def _data(r: RawRecord) -> bytes:
    """A record's data area as its file holds it (a 12c+ record's, not its 11.2 form)."""
    view = getattr(r, "view", None)
    return view.d if view is not None and view.d is not None else r.data


def parse_condition(words: list[str], tz: tzinfo = UTC) -> Condition:
    """One FILTER condition from the words after ``FILTER`` (times in ``tz``)."""
    include = True
    if words and words[0].upper() in ("INCLUDE", "INC", "EXCLUDE", "EXC"):
        include = words[0].upper().startswith("INC")
        words = words[1:]
    if not words:
        raise FilterError(f"what to filter on? {_USAGE}")
    what, args = words[0].upper(), words[1:]
    if what in ("FILENAME", "FILE", "TABLE", "ANSINAME"):
        if len(args) != 1:
            raise FilterError("FILENAME takes one name or pattern, e.g. US03.* or US03.STUDENT")
        pattern = args[0].upper()
        regex = re.compile(fnmatch.translate(pattern), re.IGNORECASE)
        return Condition(include, f"FILENAME {pattern}",
                         lambda r: regex.match(r.table) is not None)
    if what in ("IOTYPE", "RECTYPE"):
        if not args:
            raise FilterError("IOTYPE needs one or more types, e.g. IOTYPE INSERT or IOTYPE 15")
        try:
            codes = {parse_io_type(a) for a in args}
        except ValueError as exc:
            raise FilterError(str(exc)) from None
        names = ", ".join(f"{io_type_name(c)} ({c})" for c in sorted(codes))
        return Condition(include, f"IOTYPE {names}", lambda r: r.io_type in codes)
    if what == "RBA":
        test, text = _numeric(args, "RBA")
        return Condition(include, text, lambda r: test(r.rba))
    if what in ("RECLEN", "LEN"):
        test, text = _numeric(args, "RECLEN")
        return Condition(include, text, lambda r: test(r.rec_length))
    if what == "TRANSIND":
        test, text = _numeric(args, "TRANSIND")
        return Condition(include, text, lambda r: test(r.trans_ind))
    if what == "STRING":
        if len(args) != 1:
            raise FilterError('STRING takes one text; quote it if it has spaces: STRING "a b"')
        needle = args[0].encode("utf-8")
        return Condition(include, f'STRING "{args[0]}"', lambda r: needle in _data(r))
    if what == "HEX":
        if len(args) != 1:
            raise FilterError('HEX takes one hex string, e.g. HEX "31303131"')
        try:
            hexed = bytes.fromhex(args[0].replace("x", "").replace("X", ""))
        except ValueError:
            raise FilterError(f"not hex digits: {args[0]!r}") from None
        return Condition(include, f"HEX {hexed.hex()}", lambda r: hexed in _data(r))
    if what in ("STARTTIME", "ENDTIME"):
        if not args:
            raise FilterError(f"{what} needs a time, e.g. {what} 2013/03/31 23:59:58")
        limit = _time(args, tz)
        if what == "STARTTIME":
            return Condition(include, f"STARTTIME {' '.join(args)}",
                             lambda r: r.io_time >= limit)
        return Condition(include, f"ENDTIME {' '.join(args)}", lambda r: r.io_time <= limit)
    raise FilterError(f"unknown filter {words[0]!r}: {_USAGE}")
