"""Supplemental data blocks written beneath a 5.1 undo change.

``ALTER SYSTEM DUMP LOGFILE`` leaves supplemental data out (seed 000), so trailgate accepts
it in the layout seed 000's RedoAnalyzer prints (a 20- or 28-byte header, the column list,
the size list and the values, as hex groups) right after the 5.1 change it belongs to.  The
header gives the logged column count and the first modified column; a 28-byte one also the
row's head piece.  docs/oracle-dumps.md, "Input: supplemental data".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from trailgate.errors import SourceError

__all__ = ["HEADER_LINE", "SupplementalData", "parse_supplemental"]

HEADER_LINE = re.compile(r"Header \((\d+) bytes\)")
_LIST = re.compile(r"Column List Header \((\d+) bytes?\)")
_SIZES = re.compile(r"Column Size List \((\d+) bytes?\)")
_VALUE = re.compile(r"Column (\d+) Value \((\d+) bytes?\)")
_ANY_LABEL = re.compile("|".join(p.pattern for p in (HEADER_LINE, _LIST, _SIZES, _VALUE)))


@dataclass(slots=True)
class SupplementalData:
    """A decoded supplemental block: logged ``(intcol, value)`` pairs and header facts."""

    header: bytes
    first_modified: int
    columns: list[tuple[int, bytes | None]] = field(default_factory=list)
    head_dba: int | None = None
    head_tabn: int | None = None
    head_slot: int | None = None
    line: int = 0

    @property
    def values(self) -> dict[int, bytes | None]:
        """Logged values by INTCOL#; a zero-length value is NULL."""
        return dict(self.columns)


_HEX_GROUPS = {w: re.compile(rf"[0-9A-Fa-f]{{{w}}}(?:\s+[0-9A-Fa-f]{{{w}}})*") for w in (2, 4, 8)}
_HEX_TOKEN = re.compile(r"[0-9A-Fa-f]+")


def _hex(lines: list[tuple[int, str]], width: int, fail) -> bytes:
    out = bytearray()
    groups = _HEX_GROUPS[width]
    for lineno, text in lines:
        if not groups.fullmatch(text):
            for tok in text.split():
                if len(tok) != width or not _HEX_TOKEN.fullmatch(tok):
                    raise fail(lineno, f"expected {width}-digit hex groups but found {tok!r}")
        try:
            out += bytes.fromhex(text)
        except ValueError:  # groups split by a character fromhex does not skip (e.g. \x1c)
            raise fail(lineno, f"expected {width}-digit hex groups separated by spaces but "
                               f"found {text!r}") from None
    return bytes(out)


def parse_supplemental(lines: list[tuple[int, str]],
                       error: Callable[[int, str], SourceError]) -> SupplementalData:
    """Parse a supplemental block; ``error(line, message)`` builds the SourceError to raise."""

    def fail(lineno: int, msg: str) -> SourceError:
        return error(lineno, f"supplemental data: {msg}")

    # Split into (label line, data lines) sections.
    sections: list[tuple[int, str, list[tuple[int, str]]]] = []
    for lineno, text in lines:
        if not _ANY_LABEL.fullmatch(text):
            if not sections:
                raise fail(lineno, "hex data before the 'Header (N bytes)' line")
            sections[-1][2].append((lineno, text))
        else:
            sections.append((lineno, text, []))
    first_line, label, data = sections[0]
    m = HEADER_LINE.fullmatch(label)
    if not m or m[1] not in ("20", "28"):
        raise fail(first_line, f"expected 'Header (20 bytes)' or 'Header (28 bytes)', "
                               f"found {label!r}")
    header = _hex(data, 8, fail)
    if len(header) != int(m[1]):
        raise fail(first_line, f"header holds {len(header)} bytes, its label says {m[1]}")
    ncols = int.from_bytes(header[0:2], "big")
    sup = SupplementalData(header=header, first_modified=int.from_bytes(header[4:6], "big"),
                           line=first_line)
    if len(header) == 28:
        sup.head_dba = int.from_bytes(header[20:24], "big")
        sup.head_tabn = int.from_bytes(header[24:26], "big")
        sup.head_slot = int.from_bytes(header[26:28], "big")
    rest = sections[1:]
    if ncols == 0:
        if rest:
            raise fail(rest[0][0], f"header logs no columns but {rest[0][1]!r} follows")
        return sup
    if len(rest) != 2 + ncols:
        where = rest[-1][2][-1][0] if rest and rest[-1][2] else (rest[-1][0] if rest
                                                                  else first_line)
        raise fail(where, f"header logs {ncols} column(s): expected a column list, a size "
                          f"list and {ncols} value(s), found {len(rest)} section(s) "
                          f"(dump cut short?)")
    intcols = _list(rest[0], _LIST, "Column List Header", ncols, fail)
    sizes = _list(rest[1], _SIZES, "Column Size List", ncols, fail)
    for k, (lineno, vlabel, vdata) in enumerate(rest[2:], start=1):
        vm = _VALUE.fullmatch(vlabel)
        if not vm:
            raise fail(lineno, f"expected 'Column {k} Value (n bytes)', found {vlabel!r}")
        if int(vm[1]) != k:
            raise fail(lineno, f"expected the value of column {k}, found column {vm[1]}")
        size = int(vm[2])
        if size != sizes[k - 1]:
            raise fail(lineno, f"column {k} value is labelled {size} bytes but the size list "
                               f"says {sizes[k - 1]}")
        value = _hex(vdata, 2, fail)
        if len(value) != size:
            raise fail(lineno, f"column {k} value has {len(value)} bytes, expected {size}")
        sup.columns.append((intcols[k - 1], value if size else None))
    return sup


def _list(section, pattern: re.Pattern[str], name: str, ncols: int, fail) -> list[int]:
    lineno, label, data = section
    m = pattern.fullmatch(label)
    if not m:
        raise fail(lineno, f"expected '{name} (n bytes)', found {label!r}")
    raw = _hex(data, 4, fail)
    if int(m[1]) != 2 * ncols or len(raw) != 2 * ncols:
        raise fail(lineno, f"{name} should hold {2 * ncols} bytes for {ncols} column(s); "
                           f"label says {m[1]}, data has {len(raw)}")
    return [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]


def fast_supplemental(text: str, start: int, line: int) -> SupplementalData | None:
    """The block at ``text[start:]`` in its usual shape, or ``None`` (then
    :func:`parse_supplemental` decides, with its exact messages)."""
    m = _FAST.match(text, start)
    if m is None:
        return None
    try:
        return _fast_block(m, line)
    except ValueError:  # a separator fromhex does not skip: the reference names it
        return None


def _fast_block(m: re.Match[str], line: int) -> SupplementalData | None:
    header = bytes.fromhex(m[2])
    if len(header) != int(m[1]):
        return None
    ncols = int.from_bytes(header[0:2], "big")
    sup = SupplementalData(header, int.from_bytes(header[4:6], "big"), [], None, None, None, line)
    if len(header) == 28:
        sup.head_dba = int.from_bytes(header[20:24], "big")
        sup.head_tabn = int.from_bytes(header[24:26], "big")
        sup.head_slot = int.from_bytes(header[26:28], "big")
    if m[3] is None:
        return sup if ncols == 0 else None
    intcols, sizes = bytes.fromhex(m[4]), bytes.fromhex(m[6])
    if ncols == 0 or not int(m[3]) == int(m[5]) == len(intcols) == len(sizes) == 2 * ncols:
        return None
    values = _FAST_VALUE.findall(m[7])
    if len(values) != ncols:
        return None
    for k, (number, size, data) in enumerate(values):
        value = bytes.fromhex(data)
        want = int.from_bytes(sizes[2 * k : 2 * k + 2], "big")
        if int(number) != k + 1 or int(size) != want or len(value) != want:
            return None
        sup.columns.append((int.from_bytes(intcols[2 * k : 2 * k + 2], "big"),
                            value if want else None))
    return sup


def _groups(width: int) -> str:
    """Lines of ``width``-digit hex groups (each line: groups separated by blanks)."""
    return (rf"(?:\n[^\S\n]*[0-9A-Fa-f]{{{width}}}(?:[^\S\n]+[0-9A-Fa-f]{{{width}}})*"
            rf"[^\S\n]*)+")


_FAST = re.compile(
    rf"[^\S\n]*Header \((20|28) bytes\)[^\S\n]*({_groups(8)})"
    rf"(?:\n[^\S\n]*Column List Header \((\d+) bytes?\)[^\S\n]*({_groups(4)})"
    rf"\n[^\S\n]*Column Size List \((\d+) bytes?\)[^\S\n]*({_groups(4)})"
    rf"((?:\n[^\S\n]*Column \d+ Value \(\d+ bytes?\)[^\S\n]*(?:{_groups(2)})?)+))?\s*\Z")
_FAST_VALUE = re.compile(
    rf"\n[^\S\n]*Column (\d+) Value \((\d+) bytes?\)[^\S\n]*((?:{_groups(2)})?)")
