"""A 12c+ file's decoder primed with the metadata before a position, for a reader that starts
in the middle of the file.

A row record names its table only by a TDR index the file defined earlier, so a reader
starting at RBA n must know the file's TDRs before n.  Walking the records before n for each
micro-batch would read a file once per batch; the state after a walk is kept per file and
the next walk starts there.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from trailgate.trail.header import FileHeader
from trailgate.trail.release12.decoder import FileDecoder

__all__ = ["input_byte_order", "primed_decoder"]

_IO_TYPE_OFFSET = 4 + 4 + 6
_META = (170, 161)
_CHUNK = 4 << 20
_cache: dict[tuple[str, int, int], tuple[int, FileDecoder]] = {}
_lock = threading.Lock()


def primed_decoder(path: str | Path, header: FileHeader, upto: int) -> FileDecoder:
    """A decoder of ``path`` that has seen the metadata records before RBA ``upto``;
    ``ValueError`` when a record before it does not fit."""
    decoder = FileDecoder(header)
    if upto <= header.length:
        return decoder
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino)
    pos = header.length
    with _lock:
        known = _cache.get(key)
    if known is not None and header.length <= known[0] <= upto:
        pos, decoder = known[0], known[1].copy()
    with open(path, "rb") as f:
        f.seek(pos)
        carry = b""
        while pos < upto:
            chunk = f.read(min(_CHUNK, upto - pos - len(carry)))
            if not chunk:
                break
            buf = carry + chunk
            decoder.base = pos  # buf[0] is the file's byte at pos: messages name file RBAs
            p = 0
            while p < len(buf):
                length = decoder.length_at(buf, p, len(buf))
                if length is None:
                    break
                if buf[p + _IO_TYPE_OFFSET] in _META:
                    decoder.decode(buf, p, len(buf))
                p += length
            pos += p
            carry = buf[p:]
    decoder.base = 0
    with _lock:
        _cache[key] = (pos, decoder.copy())
        if len(_cache) > 64:
            _cache.pop(next(iter(_cache)))
    return decoder


def input_byte_order(trail: str | Path, seqno: int) -> str | None:
    """The byte order of the 12c+ records of file ``seqno`` of ``trail`` (its first record
    says), or ``None`` when it is an 11.2 file, has no record yet, or is not there."""
    from trailgate.trail.header import decode_file_header
    from trailgate.trail.naming import TrailName

    try:
        with open(TrailName(trail).file(seqno), "rb") as f:
            head = f.read(0xFFFF)
            header = decode_file_header(head, max_compatibility=255)
            if header.compatibility <= 3:
                return None
            f.seek(header.length)
            buf = f.read(0xFFFF)
        decoder = FileDecoder(header)
        return decoder.order if decoder.length_at(buf, 0, len(buf)) is not None else None
    except (OSError, ValueError):
        return None
