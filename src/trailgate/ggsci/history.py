"""GGSCI command history: what ``HISTORY`` lists and what ``!`` repeats.

Kept beside the parser because ``!`` is resolved to a command line before parsing; the
executor only records each line it ran.
"""

from __future__ import annotations

from trailgate.ggsci.commands import Repeat
from trailgate.ggsci.parser import GgsciSyntaxError

__all__ = ["CommandHistory"]


class CommandHistory:
    """The numbered command lines of a session (numbers start at 1, as GGSCI's prompt)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> int:
        """Record a command line; returns its number."""
        self.lines.append(line.strip())
        return len(self.lines)

    def last(self, count: int | None = None) -> list[tuple[int, str]]:
        """The last ``count`` entries (all if None) as (number, line)."""
        start = 0 if count is None else max(0, len(self.lines) - count)
        return [(i + 1, line) for i, line in enumerate(self.lines) if i >= start]

    def resolve(self, repeat: Repeat) -> str:
        """The command line ``repeat`` refers to; an error if there is none."""
        if not self.lines:
            raise GgsciSyntaxError("ERROR: no command to repeat: the history is empty.")
        if repeat.number is not None:
            n = repeat.number
            index = n - 1 if n > 0 else len(self.lines) + n
            if not 0 <= index < len(self.lines):
                raise GgsciSyntaxError(f"ERROR: no command {n} in the history; HISTORY lists "
                                       f"commands 1 to {len(self.lines)}.")
            return self.lines[index]
        if repeat.prefix is not None:
            want = repeat.prefix.upper()
            for line in reversed(self.lines):
                if line.upper().startswith(want):
                    return line
            raise GgsciSyntaxError(f"ERROR: no command in the history starts with "
                                   f"{repeat.prefix!r}.")
        return self.lines[-1]
