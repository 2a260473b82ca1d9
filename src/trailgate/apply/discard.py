"""The discard file: operations REPERROR (…, DISCARD) set aside, one readable entry each.

Entries follow GoldenGate's discard file: the time, the error, the table, the operation and
its trail position, then the key and values.  Several Spark tasks may write one file, so each
entry is one ``write`` on a file opened with ``O_APPEND`` (no interleaving), fsynced.  When
entries are written relative to the target's commit, per target, is in docs/replicat.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from trailgate.apply.mapping import MappedChange
from trailgate.apply.records import TrailChange
from trailgate.errors import TargetError
from trailgate.params.model import DiscardFileSpec

__all__ = ["DdlDiscard", "Discard", "DiscardWriter", "format_discard", "prepare_discard_file"]


@dataclass(slots=True)
class Discard:
    """A change REPERROR discarded, and why (``codes``: the error's SQLSTATE / numbers)."""

    change: MappedChange
    error: str
    codes: tuple[str, ...]


@dataclass(slots=True)
class DdlDiscard:
    """A DDL that DDLERROR (…, DISCARD) set aside: the record, the statement as the target
    was to run it, and why."""

    record: TrailChange
    statement: str
    error: str
    codes: tuple[str, ...]


def _show(value: object) -> str:
    if value is None:
        return "NULL"
    return repr(value) if isinstance(value, str) else str(value)


def format_discard(d: Discard | DdlDiscard, now: datetime | None = None) -> str:
    """One discard entry as text (ends with a ``*`` line)."""
    if isinstance(d, DdlDiscard):
        return _format_ddl(d, now)
    m = d.change
    rec = m.record
    when = (now or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    lines = [
        f"Current time: {when}",
        f"Discarded record from action DISCARD on error {d.codes[0] if d.codes else '?'}",
        f"Problem replicating {rec.table} to {m.target}",
        f"Error: {d.error}",
        f"Operation: {rec.change.op.label}, trail position seqno {rec.position.seqno}, "
        f"RBA {rec.position.rba}, CSN {rec.csn}, XID {rec.xid}",
        "Key:",
        *(f"  {c} = {_show(v)}" for c, v in m.key.items()),
    ]
    if m.values:
        lines.append("Values:")
        lines.extend(f"  {c} = {_show(v)}" for c, v in m.values.items())
    lines.append("*")
    return "\n".join(lines) + "\n"


def _format_ddl(d: DdlDiscard, now: datetime | None) -> str:
    rec = d.record
    when = (now or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    return "\n".join([
        f"Current time: {when}",
        f"Discarded DDL from action DISCARD on error {d.codes[0] if d.codes else '?'}",
        f"Problem replicating DDL on {rec.table}",
        f"Error: {d.error}",
        _ddl_operation_line(rec),
        "Statement:",
        *(f"  {line}" for line in d.statement.splitlines() or [""]),
        "*"]) + "\n"


def _ddl_operation_line(rec: TrailChange) -> str:
    return (f"Operation: DDL, trail position seqno {rec.position.seqno}, RBA "
            f"{rec.position.rba}, CSN {rec.csn}, XID {rec.xid}")


_DDL_PREFIX = b"Operation: DDL, "
#: per discard file: (device and inode, bytes scanned, the last of them, the DDL operation
#: lines in them)
_ddl_seen: dict[Path, tuple[tuple[int, int], int, bytes, set[bytes]]] = {}
_ddl_lock = threading.Lock()
_TAIL = 256


def _ddl_lines(path: Path) -> set[bytes]:
    """The DDL operation lines of the discard file at ``path``, reading only what was
    appended since the last look (the whole file again after a PURGE or a move)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return set()
    ident = (st.st_dev, st.st_ino)
    with _ddl_lock, open(path, "rb") as fh:
        known, done, last, lines = _ddl_seen.get(path, (ident, 0, b"", set()))
        if done:  # the same file still? (a PURGE empties it in place, a new one may reuse
            # the inode): the last bytes read (a time stamp among them) must be as they were
            fh.seek(done - len(last))
            if known != ident or fh.read(len(last)) != last:
                done, last, lines = 0, b"", set()
        fh.seek(done)
        data = fh.read(st.st_size - done)
        whole = data.rfind(b"\n") + 1  # a line still being appended is read next time
        if whole:
            lines.update(x for x in data[:whole].split(b"\n") if x.startswith(_DDL_PREFIX))
            last = (last + data[:whole])[-_TAIL:]
        _ddl_seen[path] = (ident, done + whole, last, lines)
        return lines


def prepare_discard_file(spec: DiscardFileSpec, path: str | os.PathLike[str]) -> Path:
    """At Replicat start: create the directory; empty the file for ``PURGE``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not spec.append:
        with open(target, "w"):
            pass
        with _ddl_lock:
            _ddl_seen.pop(target, None)
    return target


class DiscardWriter:
    """Appends entries to a discard file; stops at ``MEGABYTES`` with a clear error."""

    def __init__(self, path: str | os.PathLike[str], megabytes: int | None = None):
        self.path = Path(path)
        self.limit = megabytes << 20 if megabytes else None

    @classmethod
    def from_spec(cls, spec: DiscardFileSpec | None,
                  default: str | os.PathLike[str]) -> DiscardWriter:
        if spec is None:
            return cls(default)
        return cls(spec.path, spec.megabytes)

    def write_ddl_once(self, discard: DdlDiscard) -> bool:
        """Write ``discard`` unless the file already has an entry for its trail position
        (a replayed batch); True when it was written."""
        line = _ddl_operation_line(discard.record).encode("utf-8")
        if line in _ddl_lines(self.path):
            return False
        self.write([discard])
        return True

    def write(self, discards: Sequence[Discard | DdlDiscard]) -> None:
        if not discards:
            return
        data = "".join(format_discard(d) for d in discards).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise TargetError(f"cannot open discard file {self.path}: {exc.strerror}; "
                              f"check DISCARDFILE") from None
        try:
            if self.limit is not None and os.fstat(fd).st_size + len(data) > self.limit:
                raise TargetError(f"discard file {self.path} would exceed its MEGABYTES "
                                  f"limit ({self.limit >> 20} MB); move it away or raise "
                                  f"DISCARDFILE ... MEGABYTES")
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
