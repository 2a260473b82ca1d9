"""PURGEOLDEXTRACTS: trail files every reader has finished with, deleted oldest first.

GoldenGate's rules: with USECHECKPOINTS a file goes only when every reader of the trail is
past it by its checkpoint (and only if one reads it); MINKEEPHOURS/MINKEEPFILES are minimums
on top, never a licence to purge what a checkpoint needs, so a reader stopped for days
keeps its files.  The newest file stays.  What may go is decided before the first unlink,
from positions that only move forward: a Manager killed midway leaves every reader its
data (docs/manager.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from trailgate.checkpoint import fsync_dir
from trailgate.home import Home
from trailgate.manager.params import PurgeRule
from trailgate.manager.readers import TrailUser, trail_users
from trailgate.trail.naming import TrailName, parse_trail_file

__all__ = ["PurgeOutcome", "matching_trails", "purge_trail"]

EVENT_PURGED = "OGG-00957"
EVENT_NO_CHECKPOINTS = "OGG-30424"
EVENT_PURGE_FAILED = "OGG-00950"

#: (level, code, message) -> None: where purge events go (ggserr.log in the Manager).
Log = Callable[[str, str, str], None]


@dataclass(slots=True)
class PurgeOutcome:
    """One trail's purge: the files deleted, and why nothing (more) was."""

    trail: str
    purged: list[str] = field(default_factory=list)
    kept_because: str | None = None
    users: list[TrailUser] = field(default_factory=list)


def matching_trails(home: Home, rule: PurgeRule) -> list[TrailName]:
    """The trails a rule's name covers: ``./dirdat/*`` every trail in ``dirdat``,
    ``./dirdat/aa`` (or ``./dirdat/aa*``) trail ``aa``."""
    path = home.resolve(rule.trail)
    directory, pattern = path.parent, path.name
    if not directory.is_dir():
        return []
    prefixes = set()
    for entry in directory.iterdir():
        parsed = parse_trail_file(entry.name)
        if parsed is not None and (fnmatchcase(parsed[0], pattern)
                                   or fnmatchcase(entry.name, pattern)):
            prefixes.add(parsed[0])
    return [TrailName(directory / p) for p in sorted(prefixes)]


def _purgeable(home: Home, trail: TrailName, rule: PurgeRule, seqnos: list[int],
               now: float, outcome: PurgeOutcome) -> list[int]:
    active = seqnos[-1]
    limit = active
    if rule.use_checkpoints:
        users = outcome.users = trail_users(home, trail)
        if not any(u.role == "READER" for u in users):
            outcome.kept_because = "no process reads it"
            return []
        unknown = [u for u in users if u.needs is None]
        if unknown:
            outcome.kept_because = "; ".join(f"{u.label}: {u.error or 'no position'}"
                                             for u in unknown)
            return []
        limit = min(limit, *(u.needs for u in users if u.needs is not None))
    candidates = [s for s in seqnos if s < limit]
    if rule.min_keep_files is not None:
        keep = set(seqnos[-rule.min_keep_files:])
        candidates = [s for s in candidates if s not in keep]
    if rule.min_keep_seconds is not None:
        old = []
        for s in candidates:
            try:
                if now - trail.file(s).stat().st_mtime >= rule.min_keep_seconds:
                    old.append(s)
            except FileNotFoundError:
                continue
        candidates = old
    return candidates


def purge_trail(home: Home, trail: TrailName, rule: PurgeRule, log: Log, *,
                now: float | None = None) -> PurgeOutcome:
    """Purge ``trail`` by ``rule``; every file deleted is logged (OGG-00957)."""
    outcome = PurgeOutcome(str(trail))
    seqnos = trail.sequence_numbers()
    if not seqnos:
        return outcome
    for seqno in _purgeable(home, trail, rule, seqnos, time.time() if now is None else now,
                            outcome):
        path = trail.file(seqno)
        try:
            path.unlink()
            fsync_dir(trail.directory)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log("WARNING", EVENT_PURGE_FAILED, f"Purge of old extract file {str(path)!r} "
                f"failed: {exc.strerror or exc}. Purge rule: {rule.describe()}.")
            break
        outcome.purged.append(str(path))
        log("INFO", EVENT_PURGED, f"Purged old extract file {str(path)!r}, applying "
            f"{rule.describe()}.")
    return outcome
