"""Oracle extended ROWIDs and data block addresses.

The trail carries the source ROWID of every row change (``T`` → ``R``), so the capture
builds it from what the redo names: the data object id, and the block address (DBA) and
slot of the row's head piece.
"""

from __future__ import annotations

__all__ = ["dba_block", "dba_file", "encode_rowid", "split_dba"]

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def split_dba(dba: int) -> tuple[int, int]:
    """``(relative file number, block number)`` of a 32-bit DBA (10 + 22 bits)."""
    return dba >> 22, dba & 0x3FFFFF


def dba_file(dba: int) -> int:
    """The relative file number of a DBA."""
    return dba >> 22


def dba_block(dba: int) -> int:
    """The block number of a DBA."""
    return dba & 0x3FFFFF


def _b64(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_B64[value & 63])
        value >>= 6
    if value:
        raise ValueError("value too large for its ROWID field")
    return "".join(reversed(chars))


_PREFIXES: dict[tuple[int, int, int], str] = {}  # rows of one block share 15 characters
_SLOTS = [_b64(slot, 3) for slot in range(4096)]


def encode_rowid(data_object_id: int, rel_file: int, block: int, slot: int) -> str:
    """The 18-character extended ROWID ``OOOOOOFFFBBBBBBRRR``.

    >>> encode_rowid(76495, 4, 0x436, 10)
    'AAASrPAAEAAAAQ2AAK'
    """
    key = (data_object_id, rel_file, block)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        prefix = _b64(data_object_id, 6) + _b64(rel_file, 3) + _b64(block, 6)
        if len(_PREFIXES) >= 1 << 14:
            _PREFIXES.clear()
        _PREFIXES[key] = prefix
    return prefix + (_SLOTS[slot] if 0 <= slot < len(_SLOTS) else _b64(slot, 3))
