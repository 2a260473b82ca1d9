"""Object names and GoldenGate wildcard rules for TABLE, MAP and their EXCLUDE forms.

A name has two or three parts (``schema.table`` or ``catalog.schema.table``).  ``*`` matches
any run of characters and ``?`` one character, within one part.  Unquoted parts compare
case-insensitively; a part written in double quotes compares exactly.  In a MAP target, a
``*`` stands for the matching source part, so ``MAP public.*, TARGET replica.*;`` sends
``public.orders`` to ``replica.orders``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, TypeVar

from trailgate.params.model import MapSpec

__all__ = ["NamePart", "fill_target", "find_map", "match_table", "parse_name", "resolve_map",
           "split_name", "target_name"]


class _Sourced(Protocol):
    """A rule with a source table pattern (a MAP, a pump's TABLE)."""

    @property
    def source(self) -> str: ...


_Rule = TypeVar("_Rule", bound=_Sourced)


@dataclass(frozen=True, slots=True)
class NamePart:
    """One dot-separated part of an object name."""

    text: str
    quoted: bool = False

    @property
    def has_wildcard(self) -> bool:
        return "*" in self.text or "?" in self.text

    def __str__(self) -> str:
        return '"' + self.text.replace('"', '""') + '"' if self.quoted else self.text


@lru_cache(maxsize=4096)
def parse_name(name: str) -> tuple[NamePart, ...]:
    """Split ``schema.table`` (with optional ``"quoted"`` parts) into its parts."""
    parts: list[NamePart] = []
    buf: list[str] = []
    quoted = False
    i, n = 0, len(name)
    while i < n:
        c = name[i]
        if c == '"':
            j = i + 1
            while True:
                if j >= n:
                    raise ValueError(f"unterminated quoted identifier in {name!r}")
                if name[j] == '"':
                    if j + 1 < n and name[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(name[j])
                j += 1
            quoted = True
            i = j + 1
        elif c == ".":
            parts.append(NamePart("".join(buf), quoted))
            buf, quoted = [], False
            i += 1
        else:
            buf.append(c)
            i += 1
    parts.append(NamePart("".join(buf), quoted))
    if any(not p.text for p in parts):
        raise ValueError(f"empty part in object name {name!r}")
    return tuple(parts)


def split_name(name: str) -> tuple[str, ...]:
    """The parts of ``name`` without quotes (``'a."B"'`` -> ``('a', 'B')``)."""
    return tuple(p.text for p in parse_name(name))


@lru_cache(maxsize=4096)
def _part_regex(part: NamePart) -> re.Pattern[str]:
    pattern = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                      for c in part.text)
    return re.compile(pattern + r"\Z", 0 if part.quoted else re.IGNORECASE | re.DOTALL)


def _match_parts(pattern: Sequence[NamePart], name: Sequence[NamePart]) -> bool:
    if len(pattern) != len(name):
        # a two-part pattern matches the last two parts of a three-part name
        if len(pattern) == 2 and len(name) == 3:
            name = name[1:]
        else:
            return False
    return all(_part_regex(p).match(n.text) is not None for p, n in zip(pattern, name,
                                                                        strict=True))


def match_table(spec_pattern: str, table: str) -> bool:
    """True if ``table`` (``schema.table``, the real name) matches ``spec_pattern``."""
    return _match_parts(parse_name(spec_pattern), parse_name(table))


def _specificity(pattern: str) -> int:
    """0 for an exact name, 1 for a wildcard: exact names win, as in GoldenGate."""
    return int(any(p.has_wildcard for p in parse_name(pattern)))


def _excluded(table: str, excludes: Iterable[str]) -> bool:
    return any(match_table(x, table) for x in excludes)


def find_map(maps: Sequence[_Rule], source: str,
             excludes: Iterable[str] = ()) -> _Rule | None:
    """The MAP that applies to ``source``: an exact-name MAP first, else the first wildcard
    MAP in file order; ``None`` if none does or ``source`` matches a MAPEXCLUDE."""
    if _excluded(source, excludes):
        return None
    best: _Rule | None = None
    for spec in maps:
        if match_table(spec.source, source) and (
                best is None or _specificity(spec.source) < _specificity(best.source)):
            best = spec
            if _specificity(spec.source) == 0:
                break
    return best


def _substitute(target: NamePart, source: NamePart) -> str:
    if "*" not in target.text:
        return str(target)
    text = target.text.replace("*", source.text)
    return str(NamePart(text, target.quoted or source.quoted))


def target_name(spec: MapSpec, source: str) -> str:
    """The target of ``spec`` for ``source``, with target wildcards filled in."""
    return fill_target(spec.target, source)


def fill_target(target: str, source: str) -> str:
    """Target pattern ``target`` for table ``source``, its wildcards filled in."""
    tparts = parse_name(target)
    sparts = parse_name(source)
    if len(sparts) > len(tparts):
        sparts = sparts[len(sparts) - len(tparts):]
    elif len(sparts) < len(tparts):
        raise ValueError(f"source {source!r} has fewer name parts than target {target!r}")
    return ".".join(_substitute(t, s) for t, s in zip(tparts, sparts, strict=True))


def resolve_map(maps: Sequence[MapSpec], source: str,
                excludes: Iterable[str] = ()) -> str | None:
    """The target table for source table ``source``, or ``None`` if no MAP takes it.

    Parts that needed quotes keep them (``replica."Orders"``) so that the result can be
    parsed again with :func:`parse_name` without losing case.
    """
    spec = find_map(maps, source, excludes)
    return None if spec is None else target_name(spec, source)
