"""Trail file names: a two-character prefix and a sequence number (``dirdat/aa000000000``).

trailgate writes nine digits; seed 001's six-digit form (``ex000016``) is read too.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["TrailName", "parse_trail_file", "trail_name"]

_FILE = re.compile(r"^(?P<prefix>[A-Za-z0-9_]{2})(?P<seq>\d{6}|\d{9})$")


def parse_trail_file(path: str | Path) -> tuple[str, int] | None:
    """(prefix, seqno) of a trail file name, or ``None`` if it is not one."""
    match = _FILE.match(Path(path).name)
    if match is None:
        return None
    return match["prefix"], int(match["seq"])


class TrailName:
    """A trail: a directory and a two-character prefix (``./dirdat/aa``)."""

    def __init__(self, trail: str | Path):
        path = Path(trail)
        parsed = parse_trail_file(path)
        if parsed is not None:
            path = path.with_name(parsed[0])
        if len(path.name) != 2 or not re.fullmatch(r"[A-Za-z0-9_]{2}", path.name):
            raise ValueError(
                f"trail {str(trail)!r} must end in a two-character prefix, e.g. ./dirdat/aa"
            )
        self.directory = path.parent
        self.prefix = path.name

    def __str__(self) -> str:
        return str(self.directory / self.prefix)

    def __repr__(self) -> str:
        return f"TrailName({str(self)!r})"

    def file(self, seqno: int, digits: int = 9) -> Path:
        """The path of file ``seqno``: the existing six-digit file if there is one."""
        nine = self.directory / f"{self.prefix}{seqno:09d}"
        if digits == 9 and not nine.exists() and seqno < 1_000_000:
            six = self.directory / f"{self.prefix}{seqno:06d}"
            if six.exists():
                return six
        return nine if digits == 9 else self.directory / f"{self.prefix}{seqno:0{digits}d}"

    def has_file_after(self, seqno: int) -> bool:
        """Whether a file of this trail with a sequence number above ``seqno`` exists (a
        reader at the end of ``seqno``'s file goes on to it): one listing, a ``stat`` only
        of names that are such files, stopping at the first."""
        return any(self._files_after(seqno))

    def sequence_numbers(self) -> list[int]:
        """The sequence numbers of this trail's existing files, ascending."""
        return sorted(set(self._files_after(-1)))

    def _files_after(self, seqno: int) -> Iterator[int]:
        """The sequence numbers above ``seqno`` of this trail's files, as listed."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            match = _FILE.match(name)
            if (match is not None and match["prefix"] == self.prefix
                    and int(match["seq"]) > seqno and (self.directory / name).is_file()):
                yield int(match["seq"])


@functools.lru_cache(maxsize=64)
def trail_name(trail: str) -> TrailName:
    """``TrailName(trail)``, made once per trail: a live apply names its files every few
    milliseconds."""
    return TrailName(trail)
