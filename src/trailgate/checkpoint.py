"""Group checkpoints: where a group read, where it wrote, and what it counted.

A checkpoint is the only thing a restarted group trusts, so it is written atomically: the new
content goes to a temporary file in the same directory, is flushed and fsynced, renamed over
the old file, and the directory is fsynced.  A crash at any step leaves either the old or the
new checkpoint, never a mixture.  Checkpoints are JSON so a person can read them in an
emergency; ``INFO <group>, SHOWCH`` shows them formatted.  The atomic write and the lock a
read-modify-write holds serve every other small state file too (registries, stores).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trailgate.errors import ConfigError
from trailgate.model import TrailPosition

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointStore",
    "TableStats",
    "atomic_write_bytes",
    "atomic_write_text",
    "checkpoint_lag",
    "fsync_dir",
    "load_checkpoint",
    "parse_time",
    "save_checkpoint",
]

CHECKPOINT_VERSION = 1
_TEMP_PREFIX = ".tmp-"


def fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry lives in the directory's own blocks."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file, whole.

    The temporary file is created in the target's directory because ``rename`` is atomic only
    within one file system.
    """
    target = Path(path)
    directory = target.parent
    fd, tmp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX + target.name + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(directory)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def exclusive_lock(path: Path, mode: int = 0o644) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created with ``mode`` if missing, its
    directory too) while a read-modify-write of the file it guards runs; processes that
    share the file wait their turn, and a killed holder's lock goes with its process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(slots=True)
class TableStats:
    """Operation counts for one table, as ``STATS <group>`` reports them."""

    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    discards: int = 0
    truncates: int = 0
    ddl: int = 0

    @property
    def total(self) -> int:
        """All operations applied or written (discards are not operations done)."""
        return self.inserts + self.updates + self.deletes + self.truncates + self.ddl

    def add(self, other: TableStats) -> None:
        """Accumulate ``other`` into this one (a batch's counts into the running totals)."""
        self.inserts += other.inserts
        self.updates += other.updates
        self.deletes += other.deletes
        self.discards += other.discards
        self.truncates += other.truncates
        self.ddl += other.ddl

    def to_json(self) -> dict[str, int]:
        return {
            "inserts": self.inserts, "updates": self.updates, "deletes": self.deletes,
            "discards": self.discards, "truncates": self.truncates, "ddl": self.ddl,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableStats:
        return cls(**{f.name: int(data.get(f.name, 0)) for f in fields(cls)})


_STAT_FIELDS = {
    "insert": "inserts", "update": "updates", "delete": "deletes", "discard": "discards",
    "truncate": "truncates", "ddl": "ddl",
}


@dataclass(slots=True)
class Checkpoint:
    """Everything a group needs to resume without gaps or duplicates.

    ``read_position`` is the current read checkpoint in the source's own terms
    (``{"lsn": ...}`` for PostgreSQL, ``{"scn": .., "file": .., "line": ..}`` for an Oracle
    dump, ``{"seqno": .., "rba": ..}`` for a trail).  ``recovery_position`` is where the oldest
    transaction still open at the read position began: a restart re-reads from there.
    ``write_position`` is the end of the last complete transaction written to ``write_trail``,
    and ``last_csn``/``last_xid`` identify that transaction so that a writer in append mode
    can tell whether a transaction already reached the trail.
    """

    group: str
    kind: str  # EXTRACT | REPLICAT
    read_position: dict[str, Any] = field(default_factory=dict)
    recovery_position: dict[str, Any] | None = None
    read_time: str | None = None  # source commit time of the last transaction read
    write_trail: str | None = None
    write_position: TrailPosition | None = None
    last_csn: int | str | None = None
    last_xid: str | None = None
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    stats_since: str = field(default_factory=_now)
    stats: dict[str, TableStats] = field(default_factory=dict)

    @property
    def read_lsn(self) -> int:
        """A PostgreSQL Extract's read position as a number (0 when it holds none)."""
        return int(self.read_position.get("lsn", 0) or 0)

    def count(self, table: str, op: str, n: int = 1) -> None:
        """Add ``n`` operations of kind ``op`` (insert, update, delete, discard, truncate,
        ddl) on ``table`` to the running statistics."""
        try:
            attr = _STAT_FIELDS[op.lower()]
        except KeyError:
            raise ValueError(f"unknown statistics kind {op!r}; use one of "
                             f"{', '.join(_STAT_FIELDS)}") from None
        stats = self.stats.setdefault(table, TableStats())
        setattr(stats, attr, getattr(stats, attr) + n)

    def reset_stats(self) -> None:
        """Start counting afresh (``STATS <group>, RESET``)."""
        self.stats.clear()
        self.stats_since = _now()

    def to_json(self) -> dict[str, Any]:
        wp = self.write_position
        return {
            "version": CHECKPOINT_VERSION,
            "group": self.group,
            "kind": self.kind,
            "read_position": self.read_position,
            "recovery_position": self.recovery_position,
            "read_time": self.read_time,
            "write_trail": self.write_trail,
            "write_position": None if wp is None else {"seqno": wp.seqno, "rba": wp.rba},
            "last_csn": self.last_csn,
            "last_xid": self.last_xid,
            "created": self.created,
            "updated": self.updated,
            "stats_since": self.stats_since,
            "stats": {t: s.to_json() for t, s in sorted(self.stats.items())},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        """Build from the stored form; raises KeyError/TypeError/ValueError if malformed."""
        if data.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"unsupported checkpoint version {data.get('version')!r}")
        wp = data.get("write_position")
        return cls(
            group=str(data["group"]),
            kind=str(data["kind"]),
            read_position=dict(data.get("read_position") or {}),
            recovery_position=data.get("recovery_position"),
            read_time=data.get("read_time"),
            write_trail=data.get("write_trail"),
            write_position=None if wp is None else TrailPosition(int(wp["seqno"]),
                                                                  int(wp["rba"])),
            last_csn=data.get("last_csn"),
            last_xid=data.get("last_xid"),
            created=str(data["created"]),
            updated=str(data["updated"]),
            stats_since=str(data.get("stats_since") or data["created"]),
            stats={t: TableStats.from_json(s) for t, s in (data.get("stats") or {}).items()},
        )


def save_checkpoint(path: str | os.PathLike[str], checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` atomically, stamping ``updated``."""
    checkpoint.updated = _now()
    text = json.dumps(checkpoint.to_json(), indent=1, sort_keys=False) + "\n"
    atomic_write_text(path, text)


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint | None:
    """Read the checkpoint at ``path``; ``None`` if the group has never checkpointed.

    A file that cannot be read as a checkpoint is a :class:`ConfigError` that names the file
    and says how to recover, rather than a silent restart from the beginning.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Checkpoint.from_json(data)
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        group = p.name.split(".")[0]
        raise ConfigError(
            f"checkpoint file is corrupt ({exc}). The group cannot resume safely. Restore the "
            f"file from a backup, or delete it and reposition the group (ALTER EXTRACT "
            f"{group}, BEGIN ... / ALTER REPLICAT {group}, EXTSEQNO n, EXTRBA n, or DELETE "
            f"and ADD the group) before starting it again.",
            path=str(p),
        ) from None


def parse_time(text: str | None) -> datetime | None:
    """An ISO timestamp from a checkpoint or registry as an aware datetime (naive = local)."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.astimezone()


def checkpoint_lag(cp: Checkpoint | None) -> float | None:
    """Seconds between the source commit time of the last record read and the checkpoint
    that recorded it (GGSCI's "Lag at Chkpt"); None when unknown."""
    if cp is None:
        return None
    read, updated = parse_time(cp.read_time), parse_time(cp.updated)
    if read is None or updated is None:
        return 0.0
    return max(0.0, (updated - read).total_seconds())


_SUFFIX = {"EXTRACT": ".cpe", "REPLICAT": ".cpr"}


class CheckpointStore:
    """The checkpoint files of a home's ``dirchk/``: ``<GROUP>.cpe`` for an Extract (or
    pump), ``<GROUP>.cpr`` for a Replicat, as GoldenGate names them."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)

    def path(self, group: str, kind: str) -> Path:
        """The checkpoint file of ``group`` of type ``kind`` (EXTRACT or REPLICAT)."""
        try:
            suffix = _SUFFIX[kind.upper()]
        except KeyError:
            raise ValueError(f"group kind must be EXTRACT or REPLICAT, not {kind!r}") from None
        return self.directory / f"{group.upper()}{suffix}"

    def load(self, group: str, kind: str) -> Checkpoint | None:
        """The group's checkpoint, or ``None`` if it has none yet."""
        return load_checkpoint(self.path(group, kind))

    def save(self, checkpoint: Checkpoint) -> None:
        """Write the checkpoint atomically."""
        self.directory.mkdir(parents=True, exist_ok=True)
        save_checkpoint(self.path(checkpoint.group, checkpoint.kind), checkpoint)

    def delete(self, group: str, kind: str) -> bool:
        """Remove the group's checkpoint (DELETE EXTRACT/REPLICAT); True if one existed."""
        try:
            self.path(group, kind).unlink()
        except FileNotFoundError:
            return False
        fsync_dir(self.directory)
        return True

    def clean_temporaries(self) -> list[Path]:
        """Remove temporary files a crash left behind mid-write; returns what was removed."""
        removed = []
        for tmp in self.directory.glob(_TEMP_PREFIX + "*"):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
        return removed
