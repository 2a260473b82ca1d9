"""The stream apply's open trail file: each new byte read once, scanned, and planned from.

A :class:`TrailTail` keeps the file being applied open, its header read once, reads only
the bytes the last look saw appended, runs the C boundary scan over them, and keeps the
bytes from the step's start so the step plans from them without reading them again.  It
takes only the plain case (one 11.2 unencrypted file, a few new bytes, whole records, no
later file, no limit) and answers None otherwise: the caller then uses
:func:`~trailgate.spark.trail_offsets.scan_boundary` and the span's read, the reference.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from trailgate.model import TrailPosition
from trailgate.replicat.range_apply import Segment
from trailgate.spark.trail_offsets import ScanState
from trailgate.trail._accel import speedups
from trailgate.trail.header import read_file_header
from trailgate.trail.naming import trail_name

__all__ = ["TAIL_BYTES", "TrailTail"]

#: The most new bytes one scan of the tail reads; a larger growth (a backlog) is the
#: reference scan's, which reads in chunks and plans big steps.
TAIL_BYTES = 1 << 20


class TrailTail:
    """The open file of trail ``trail`` that the stream apply reads (module docstring).
    Used by one thread; :meth:`close` when done."""

    def __init__(self, trail: str):
        self.trail = trail
        self._seqno = -1
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None  # the open file's (device, inode)
        self._header = 0  # its header's length; 0: not a file the tail takes
        self._start = TrailPosition(-1, 0)  # where ``_data`` starts
        self._data = b""  # the bytes from ``_start`` to the last scan's end, as read

    def scan(self, at: TrailPosition, state: ScanState | None, seen: os.stat_result | None,
             later: bool, *, max_records: int, mark: Callable[[int, str], bool] | None
             ) -> tuple[TrailPosition, int, ScanState] | None:
        """``scan_boundary(trail, at, max_records=…, state=state, mark=mark)``'s result,
        reading only up to ``seen`` (the look's ``stat`` of the file the scan resumes in,
        taken before), or None when the tail does not take the case: the caller scans as
        usual.  ``later``: whether the look saw a next file (the scan would go on into
        it)."""
        if speedups is None or seen is None or later:
            return None
        resume, in_txn, pending, in_metadata, pending_marked = ScanState.carried(state, at)
        seq = at.seqno
        if resume.seqno != seq or not self._open(seq, seen) or at.rba < self._header:
            return None
        size = seen.st_size
        if size < resume.rba or size - resume.rba > TAIL_BYTES:
            return None
        assert self._fd is not None
        held = self._start.rba + len(self._data)
        if self._start.seqno != seq or not self._start.rba <= at.rba <= held:
            self._start, self._data = at, b""  # not what the last scans read: from ``at``
            held = at.rba
        if held > resume.rba:
            held = resume.rba
            self._data = self._data[:held - self._start.rba]
        if size - self._start.rba > TAIL_BYTES:  # a large transaction: the reference's
            self._start, self._data = TrailPosition(-1, 0), b""
            return None
        new = os.pread(self._fd, size - held, held) if size > held else b""
        if len(new) != size - held:
            return None  # shorter than its stat said: truncated meanwhile
        self._data += new
        data, base = self._data, self._start.rba
        out = speedups.scan_records(data, resume.rba - base, len(data),
                                    (in_txn, pending, in_metadata, pending_marked, 0, False),
                                    max_records, mark, getattr(mark, "io_types", None))
        if out is None or out[8]:
            return None  # a record the reader must look at
        pos, found, covered, left, txn, metadata, left_marked, marked, _ = out
        if pos != len(data) and covered < max_records:
            return None  # a record not whole yet: the reader's
        end = TrailPosition(seq, base + found) if found >= 0 else at
        after = TrailPosition(seq, base + pos)
        return end, covered, ScanState(end, after, bool(txn), left, bool(metadata),
                                       bool(left_marked), covered, bool(marked))

    def span(self, lower: TrailPosition, upper: TrailPosition
             ) -> tuple[bytes, list[Segment]] | None:
        """``read_span(trail, lower, upper)``'s result from the bytes the scans read, or
        None when they do not hold that range."""
        start, data = self._start, self._data
        if (lower != start or upper.seqno != start.seqno or upper <= lower
                or upper.rba - lower.rba > len(data)):
            return None
        return data[:upper.rba - lower.rba], [Segment(0, lower.seqno, lower.rba)]

    def applied(self, upper: TrailPosition) -> None:
        """Everything before ``upper`` is applied: its bytes are not needed again."""
        start = self._start
        if upper.seqno == start.seqno and start.rba <= upper.rba <= start.rba + len(self._data):
            self._data = self._data[upper.rba - start.rba:]
            self._start = upper
        else:
            self._start, self._data = TrailPosition(-1, 0), b""

    def _open(self, seq: int, seen: os.stat_result) -> bool:
        """Whether file ``seq``, the one ``seen`` describes, is open and one the tail
        takes (opening it, and reading its header, when it is not yet)."""
        ino = (seen.st_dev, seen.st_ino)
        if seq == self._seqno and ino == self._ino:
            return self._header > 0
        self.close()
        self._seqno, self._ino = seq, ino
        try:
            fd = os.open(trail_name(self.trail).file(seq), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.close()  # tried again at the next scan
            return False
        self._fd = fd
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                header = read_file_header(f)
            st = os.fstat(fd)
        except (OSError, ValueError):  # a header not written yet, maybe: tried again
            self.close()
            return False
        if (st.st_dev, st.st_ino) == ino and header.compatibility <= 3 \
                and header.encryption is None:
            self._header = header.length
        return self._header > 0

    def close(self) -> None:
        """Close the file (a later scan opens it again)."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._seqno, self._ino, self._header = None, -1, None, 0
        self._start, self._data = TrailPosition(-1, 0), b""
