"""Telling a record cut short by its writer from a record whose length field is damaged.

Both seem to run past the file's end; trusting the length, a reader would wait for bytes
that never come or drop the rest of the file as a crash's leftovers.  A record's
sub-records follow each other up to its ``Z`` trailer at exactly its G length, so bytes
whose sub-records reach a ``Z`` trailer, or run past the G length, are a whole record under
a wrong length, not a beginning.  Only the bytes present are walked: a genuine beginning,
however short, always passes.
"""

from __future__ import annotations

import mmap

__all__ = ["cut_record_problem"]

_G, _Z, _H = 0x47, 0x5A, 0x48


def cut_record_problem(buf: bytes | mmap.mmap, pos: int, end: int, order: str = "big", *,
                       release12: bool = False) -> str | None:
    """Why ``buf[pos:end]`` (a G record whose length runs past ``end``) cannot be the
    beginning of a record still being written or cut by a crash; ``None`` when it can.

    ``order`` is the byte order of the record's lengths (``big`` for 11.2 trails).  For a
    12c+ record (``release12``) the walk is checked less strictly (its areas are not pinned
    as 11.2's are): only a ``Z`` trailer whose own length says the record ends there counts.
    """
    if end - pos < 4 or buf[pos] != _G:
        return None
    length = int.from_bytes(buf[pos + 2 : pos + 4], order)  # type: ignore[arg-type]
    p = pos + 4
    first = True
    while end - p >= 4:
        stype = buf[p]
        size = int.from_bytes(buf[p + 2 : p + 4], order)  # type: ignore[arg-type]
        if stype == _Z:
            if release12 and size != p + 4 - pos:
                return None
            return (f"the record's length field says {length} bytes, which runs past the end "
                    f"of the file, but its Z trailer comes {p + 4 - pos} bytes in (at RBA "
                    f"+{p - pos}, saying {size}): the length field is damaged, and the records "
                    "after it would be lost")
        if release12:
            p += 4 + size
            continue
        if first and stype != _H:
            return (f"sub-record 0x{stype:02X} where the H header should be: the record's "
                    f"length field ({length}) runs past the end of the file over bytes that "
                    "are not a record's beginning")
        first = False
        p += 4 + size
        if p - pos > length - 4:
            return (f"its sub-records run past its length field ({length}) before reaching "
                    "the end of the file: the record is damaged, and the records after it "
                    "would be lost")
    return None
