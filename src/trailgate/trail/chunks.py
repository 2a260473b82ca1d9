"""An 11.2 trail file read a chunk at a time, for the C codec's whole-file passes.

The C passes (the boundary scan, the catalog's, header-only rows) each walk the complete
records of a buffer and say how many bytes they used; the rest, a record cut by the
chunk's edge, is carried into the next buffer.  A file whose header cannot be read yet, in
a 12c+ format, or (for passes that need more than headers) encrypted, is left to the
reader, which decodes it or says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from trailgate.trail.header import read_file_header

__all__ = ["CHUNK", "FileChunks", "file_chunks"]

#: Bytes read at a time.
CHUNK = 4 << 20


class FileChunks:
    """Buffers of one file's records from :attr:`pos` up to ``stop_at`` (None: the end):
    :meth:`next` is the bytes carried over and the next chunk, beginning at :attr:`pos`;
    :meth:`consumed` says how many of them a pass used."""

    def __init__(self, f: BinaryIO, pos: int, stop_at: int | None):
        self._f = f
        self._buf = b""
        self.pos = pos
        self.stop_at = stop_at
        self.carry = b""
        f.seek(pos)

    def next(self) -> bytes | None:
        """The next buffer; None at the file's end or at ``stop_at``.  It asks for no more
        than the file holds (a read's buffer is allocated at the size asked for: a live
        trail's few new bytes must not cost a whole chunk's allocation each time)."""
        end = os.fstat(self._f.fileno()).st_size
        if self.stop_at is not None:
            end = min(end, self.stop_at)
        want = min(CHUNK, end - self.pos - len(self.carry))
        chunk = self._f.read(want) if want > 0 else b""
        if not chunk:
            return None
        self._buf = self.carry + chunk if self.carry else chunk
        return self._buf

    def consumed(self, n: int) -> None:
        """The pass used the buffer's first ``n`` bytes; the rest is carried over."""
        self.pos += n
        self.carry = self._buf[n:]


@contextmanager
def file_chunks(path: str | Path, start: int, stop_at: int | None = None, *,
                encrypted: bool = False) -> Iterator[FileChunks | None]:
    """:class:`FileChunks` of the 11.2 file ``path`` from ``start`` (the end of its header
    when ``start`` lies before it), or None when the reader must take the file: a header
    that cannot be read (still being written, or damaged), a 12c+ format, or encrypted
    records unless ``encrypted`` (a pass that reads only their readable headers).  Opening
    the file may raise ``OSError``."""
    with open(path, "rb") as f:
        try:
            header = read_file_header(f)
        except ValueError:
            yield None
            return
        if header.compatibility > 3 or (header.encryption is not None and not encrypted):
            yield None
            return
        yield FileChunks(f, max(start, header.length), stop_at)
