"""Walking a record's sub-records and a D area's columns without trusting them.

The codec's decoder stops at the first inconsistency, which is right for replication; the
inspection tools must instead show as much of a damaged or partial record as is readable,
so they walk the structure themselves and report where it stops making sense.
"""

from __future__ import annotations

from dataclasses import dataclass

from trailgate.model import ColumnKind
from trailgate.trail.values import unframe_value

__all__ = ["ColumnSlot", "Sub", "column_value_text", "split_columns", "subrecords"]


@dataclass(frozen=True, slots=True)
class Sub:
    """A type/flag/length sub-record at ``offset`` (its 4-byte header) in a buffer."""

    type: int
    flag: int
    offset: int
    length: int

    @property
    def start(self) -> int:
        return self.offset + 4

    @property
    def end(self) -> int:
        return self.offset + 4 + self.length


def subrecords(buf: bytes, start: int, end: int) -> tuple[list[Sub], str | None]:
    """The sub-records between ``start`` and ``end``, and a message if the walk stopped early
    (a header cut short or a length running past ``end``)."""
    subs: list[Sub] = []
    pos = start
    while pos < end:
        if pos + 4 > end:
            return subs, f"sub-record header cut short at offset {pos}"
        length = (buf[pos + 2] << 8) | buf[pos + 3]
        if pos + 4 + length > end:
            return subs, (f"sub-record 0x{buf[pos]:02X} at offset {pos} claims {length} bytes, "
                          f"more than the {end - pos - 4} left")
        subs.append(Sub(buf[pos], buf[pos + 1], pos, length))
        pos += 4 + length
    return subs, None


@dataclass(frozen=True, slots=True)
class ColumnSlot:
    """One column of a D area: its index, and where its framed value lies."""

    index: int
    offset: int  # of the 4-byte column header, relative to the data passed in
    length: int

    @property
    def value_start(self) -> int:
        return self.offset + 4

    @property
    def value_end(self) -> int:
        return self.offset + 4 + self.length


def split_columns(data: bytes, start: int = 0, end: int | None = None, order: str = "big"
                  ) -> tuple[list[ColumnSlot], str | None]:
    """The columns of a D area (lengths in ``order``: a 12c+ file's may be little-endian);
    a message when the list is cut short or inconsistent (normal for the first part of a
    fragmented record)."""
    end = len(data) if end is None else end
    hi, lo = (1, 0) if order == "little" else (0, 1)
    slots: list[ColumnSlot] = []
    pos = start
    while pos < end:
        if pos + 4 > end:
            return slots, f"column header cut short at data offset {pos}"
        index = (data[pos + hi] << 8) | data[pos + lo]
        length = (data[pos + 2 + hi] << 8) | data[pos + 2 + lo]
        if pos + 4 + length > end:
            return slots, (f"column {index} at data offset {pos} claims {length} bytes, more "
                           f"than the {end - pos - 4} left")
        slots.append(ColumnSlot(index, pos, length))
        pos += 4 + length
    return slots, None


def column_value_text(framed: bytes, kind: ColumnKind | None, limit: int = 200) -> str:
    """A column's value as a person reads it: text, ``NULL``, or hex for RAW.

    An inconsistent frame is shown as such rather than raising: the tools display damage.
    """
    try:
        value = unframe_value(framed, kind)
    except ValueError as exc:
        return f"<{exc}>"
    if value is None:
        return "NULL"
    if kind is ColumnKind.RAW:
        text = "0x" + value.hex().upper()
    else:
        text = value.decode("utf-8", "replace")
        if kind is ColumnKind.CHAR:
            text = text.rstrip(" ")
    if len(text) > limit:
        text = text[:limit] + f"... ({len(value)} bytes)"
    return text
