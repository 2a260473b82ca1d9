"""Who uses a trail, and from which file on: what a purge must never take away.

Readers are this home's pumps and Replicats on the trail, and any other home's that
registered in ``<dir>/<prefix>.readers.json`` (ADD REPLICAT and a pump's ADD EXTRACT write
it).  A reader needs the trail from the lowest of its checkpoint, the start of the newest
micro-batch in Spark's offset log (a replay starts there) and, before its first
checkpoint, its begin position; the writer its current file.  An unreadable position
protects the whole trail.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trailgate.checkpoint import atomic_write_text, exclusive_lock
from trailgate.errors import TrailgateError
from trailgate.home import Home
from trailgate.spark.offset_log import logged_end
from trailgate.trail.naming import TrailName

__all__ = ["TrailUser", "register_reader", "registered_readers", "trail_users",
           "unregister_reader"]


@dataclass(frozen=True, slots=True)
class TrailUser:
    """A group that reads or writes a trail: ``needs`` is the first file it needs (None:
    unknown, so every file), ``error`` why it is unknown."""

    home: str
    group: str
    kind: str
    role: str  # READER | WRITER
    needs: int | None
    error: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} {self.group}" + (f" ({self.home})" if self.home else "")


def _registry(trail: TrailName) -> Path:
    return trail.directory / f"{trail.prefix}.readers.json"


@contextmanager
def _locked(trail: TrailName) -> Iterator[list[dict[str, str]]]:
    with exclusive_lock(trail.directory / f".{trail.prefix}.readers.lock"):
        entries = _read(trail)
        before = list(entries)
        yield entries
        if entries != before:
            atomic_write_text(_registry(trail), json.dumps({"readers": entries}, indent=1)
                              + "\n")


def _read(trail: TrailName) -> list[dict[str, str]]:
    try:
        data = json.loads(_registry(trail).read_text("utf-8"))
        return [dict(e) for e in data.get("readers", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, AttributeError, TypeError):
        return [{"home": "", "group": "?", "kind": "unreadable"}]


def register_reader(home: Home, trail_path: str, group: str, kind: str) -> None:
    """Record that ``group`` of ``home`` reads the trail (ADD REPLICAT / a pump's ADD)."""
    trail = TrailName(home.resolve(trail_path))
    entry = {"home": str(home.path), "group": group.upper(), "kind": kind.upper()}
    with _locked(trail) as entries:
        if entry not in entries:
            entries.append(entry)


def unregister_reader(home: Home, trail_path: str, group: str) -> None:
    """Forget ``group`` of ``home`` as a reader (DELETE REPLICAT / DELETE EXTRACT)."""
    try:
        trail = TrailName(home.resolve(trail_path))
    except ValueError:
        return
    if not _registry(trail).exists():
        return
    with _locked(trail) as entries:
        entries[:] = [e for e in entries if not (e.get("home") == str(home.path)
                                                 and e.get("group") == group.upper())]


def registered_readers(trail: TrailName) -> list[dict[str, str]]:
    return _read(trail)


def _spark_start(home: Home, group: str) -> int | None:
    """The file the newest logged Spark batch starts in (the end of the batch before it),
    or None when Spark has logged fewer than two batches."""
    offsets = home.spark_checkpoint_dir(group) / "spark" / "offsets"
    try:
        ids = sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
    except OSError:
        return None
    ends = [logged_end(offsets.parent, i) for i in ids[-2:]]
    known = [e.seqno for e in ends if e is not None]
    return min(known) if known else None


def _reader_needs(home: Home, group: str, kind: str) -> int:
    """The first file ``group`` of ``home`` still needs; raises when it cannot tell."""
    info = home.group(group)
    if info is None:
        raise TrailgateError(f"{kind} {group} is not registered in {home.path} (DELETE it "
                             "there, or remove it from the trail's .readers.json)")
    candidates: list[int] = []
    cp = home.checkpoints.load(info.name, info.kind)
    if cp is not None:
        for pos in (cp.read_position, cp.recovery_position or {}):
            if "seqno" in pos:
                candidates.append(int(pos["seqno"]))
    spark = _spark_start(home, info.name)
    if spark is not None:
        candidates.append(spark)
    if cp is None and isinstance(info.begin, dict):
        candidates.append(int(info.begin.get("seqno", 0)))
    if not candidates:
        raise TrailgateError(f"{info.kind} {info.name} has no trail position yet")
    return min(candidates)


def _same(home: Home, path: str | None, trail: TrailName) -> bool:
    if not path:
        return False
    try:
        other = TrailName(home.resolve(path))
    except ValueError:
        return False
    return (other.prefix == trail.prefix
            and os.path.realpath(other.directory) == os.path.realpath(trail.directory))


def trail_users(local: Home, trail: TrailName) -> list[TrailUser]:
    """Every reader and writer of ``trail`` known to ``local`` and to the trail's registry,
    each with the first file it needs."""
    seen: set[tuple[str, str]] = set()
    users: list[TrailUser] = []

    def reader(home: Home, group: str, kind: str) -> None:
        key = (str(home.path), group.upper())
        if key in seen:
            return
        seen.add(key)
        try:
            needs: int | None = _reader_needs(home, group, kind)
            error = None
        except (TrailgateError, OSError, ValueError) as exc:
            needs, error = None, str(exc)
        users.append(TrailUser(str(home.path), group.upper(), kind, "READER", needs, error))

    for info in local.groups():
        if info.source in ("EXTTRAIL", "EXTTRAILSOURCE") and _same(local, info.source_path,
                                                                   trail):
            reader(local, info.name, info.kind)
        if any(_same(local, t.path, trail) for t in info.trails):
            try:  # the writer needs its current file; before its first write, nothing
                cp = local.checkpoints.load(info.name, info.kind)
            except TrailgateError as exc:
                users.append(TrailUser(str(local.path), info.name, info.kind, "WRITER",
                                       None, str(exc)))
                continue
            if cp is not None and cp.write_position is not None:
                users.append(TrailUser(str(local.path), info.name, info.kind, "WRITER",
                                       cp.write_position.seqno))
    for entry in registered_readers(trail):
        if entry.get("kind") == "unreadable":
            users.append(TrailUser("", "?", "?", "READER", None,
                                   f"{_registry(trail)} cannot be read"))
            continue
        where = entry.get("home") or ""
        if not where:
            users.append(TrailUser("", entry.get("group", "?"), "?", "READER", None,
                                   f"{_registry(trail)} names a reader without a home"))
            continue
        reader(Home(where), entry.get("group", "?"), entry.get("kind", "?"))
    return users
