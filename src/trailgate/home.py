"""The trailgate home: a GoldenGate-style directory tree and the registry of groups.

Everything a deployment owns lives under one directory so that a person who knows GoldenGate
finds it where they expect: parameter files in ``dirprm/``, trails in ``dirdat/``,
checkpoints in ``dirchk/``, reports in ``dirrpt/`` and the event log ``ggserr.log``.  The
group registry (what ``ADD EXTRACT`` / ``ADD REPLICAT`` / ``ADD EXTTRAIL`` created) is JSON
under ``dirchk/`` and, like checkpoints, is only ever replaced atomically.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from trailgate.checkpoint import CheckpointStore, atomic_write_text, exclusive_lock
from trailgate.errors import ConfigError
from trailgate.json_fields import check_fields, json_type

__all__ = [
    "HOME_ENV",
    "SUBDIRS",
    "GroupInfo",
    "Home",
    "TrailInfo",
    "validate_group_name",
]

HOME_ENV = "TRAILGATE_HOME"
SUBDIRS = ("dirprm", "dirdat", "dirchk", "dirrpt", "dirdef", "dirdsc", "dircrd", "dirtmp")
REGISTRY_FILE = "groups.json"
_GROUP_NAME = re.compile(r"[A-Za-z0-9_]{1,8}\Z")
_LEVELS = ("INFO", "WARNING", "ERROR")


def validate_group_name(name: str) -> str:
    """Return the stored (upper-case) form of a group name, or explain why it is invalid.

    GoldenGate group names are at most eight characters; trailgate also limits them to
    letters, digits and underscore so that they are safe as file names everywhere.
    """
    if not _GROUP_NAME.match(name):
        raise ConfigError(
            f"invalid group name {name!r}: use 1 to 8 letters, digits or underscores "
            f"(for example EXT1 or REP_HR)"
        )
    return name.upper()


@dataclass(slots=True)
class TrailInfo:
    """A trail a group writes: ``ADD EXTTRAIL|RMTTRAIL path, EXTRACT group, MEGABYTES n``."""

    path: str
    kind: str = "EXTTRAIL"  # EXTTRAIL | RMTTRAIL
    megabytes: int = 500


@dataclass(slots=True)
class GroupInfo:
    """One registered group.

    ``source`` says what an Extract reads: ``TRANLOG`` (a database log), ``EXTTRAILSOURCE``
    (a pump reading ``source_path``) or ``DUMPDIR`` (Oracle redo dumps in ``source_path``).
    A Replicat's source is ``EXTTRAIL`` with the trail in ``source_path``.  ``begin`` is
    ``NOW``, an ISO timestamp, or a source position (``{"scn": ..}``, ``{"seqno": .., "rba":
    ..}``) chosen at ADD time.
    """

    name: str
    kind: str  # EXTRACT | REPLICAT
    source: str  # TRANLOG | EXTTRAILSOURCE | DUMPDIR | EXTTRAIL
    source_path: str | None = None
    trails: list[TrailInfo] = field(default_factory=list)
    checkpoint_table: str | None = None
    begin: str | dict[str, Any] | None = None
    description: str | None = None
    created: str = field(default_factory=lambda: datetime.now().isoformat(timespec="seconds"))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GroupInfo:
        """The group a registry entry describes; ``ValueError`` names a field that is unknown
        or of the wrong JSON type (a registry edited by hand or damaged)."""
        values = dict(data)
        name = values.get("name")
        check_fields(cls, values, f"group {name!r}", skip=("trails",))
        trails = values.get("trails", [])
        if not isinstance(trails, list):
            raise ValueError(f"group {name!r}: 'trails' cannot be {json_type(trails)}")
        for trail in trails:
            if not isinstance(trail, dict):
                raise ValueError(f"group {name!r}: a trail cannot be {json_type(trail)}")
            check_fields(TrailInfo, trail, f"group {name!r}: trail")
        values["trails"] = [TrailInfo(**t) for t in trails]
        info = cls(**values)
        if info.kind not in ("EXTRACT", "REPLICAT"):
            raise ValueError(f"group {info.name!r}: kind {info.kind!r} is neither EXTRACT nor "
                             "REPLICAT")
        return info



class Home:
    """A trailgate home directory.

    ``Home.locate(option)`` picks the directory the way every command does: the ``--home``
    option, else ``$TRAILGATE_HOME``, else the current directory.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).absolute()

    def __repr__(self) -> str:
        return f"Home({str(self.path)!r})"

    @classmethod
    def locate(cls, option: str | None = None, *, environ: Mapping[str, str] | None = None,
               cwd: str | os.PathLike[str] | None = None) -> Home:
        """The home chosen by ``--home``, else ``TRAILGATE_HOME``, else the current directory."""
        env = os.environ if environ is None else environ
        chosen = option or env.get(HOME_ENV) or (cwd if cwd is not None else os.getcwd())
        return cls(chosen)

    # -- layout -------------------------------------------------------------------------
    @property
    def dirprm(self) -> Path:
        """Parameter files."""
        return self.path / "dirprm"

    @property
    def dirdat(self) -> Path:
        """Trails."""
        return self.path / "dirdat"

    @property
    def dirchk(self) -> Path:
        """Checkpoints and the registry."""
        return self.path / "dirchk"

    @property
    def dirrpt(self) -> Path:
        """Process reports."""
        return self.path / "dirrpt"

    @property
    def dirdef(self) -> Path:
        """Definitions files."""
        return self.path / "dirdef"

    @property
    def dirdsc(self) -> Path:
        """Discard files."""
        return self.path / "dirdsc"

    @property
    def dircrd(self) -> Path:
        """The credential store."""
        return self.path / "dircrd"

    @property
    def dirtmp(self) -> Path:
        """Spill files."""
        return self.path / "dirtmp"

    @property
    def ggserr_log(self) -> Path:
        """The event log."""
        return self.path / "ggserr.log"
    @property
    def globals_file(self) -> Path:
        """The GLOBALS parameter file."""
        return self.path / "dirprm" / "GLOBALS"

    def create(self) -> Home:
        """Create the home and every subdirectory (idempotent); returns ``self``.  The
        credential directory is its owner's alone (0700), as the secrets in it are."""
        for sub in SUBDIRS:
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        if self.dircrd.stat().st_mode & 0o077:
            os.chmod(self.dircrd, 0o700)
        return self

    def exists(self) -> bool:
        """True if the home has been created (its ``dirchk/`` exists)."""
        return self.dirchk.is_dir()

    def param_file(self, group: str) -> Path:
        """``dirprm/<group>.prm`` (GoldenGate's convention: lower-case file name)."""
        return self.dirprm / f"{validate_group_name(group).lower()}.prm"

    def report_file(self, group: str) -> Path:
        """``dirrpt/<GROUP>.rpt``."""
        return self.dirrpt / f"{validate_group_name(group)}.rpt"

    def discard_file(self, group: str) -> Path:
        """The default discard file ``dirdsc/<GROUP>.dsc``."""
        return self.dirdsc / f"{validate_group_name(group)}.dsc"

    def spark_checkpoint_dir(self, group: str) -> Path:
        """``dirchk/<GROUP>/``: the group's Spark streaming checkpoint location."""
        return self.dirchk / validate_group_name(group)

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """A path from a parameter file or command: relative paths are relative to the home,
        as GoldenGate resolves ``./dirdat/aa``."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.path / p

    @property
    def checkpoints(self) -> CheckpointStore:
        """The checkpoint files in ``dirchk/``."""
        return CheckpointStore(self.dirchk)

    # -- event log ----------------------------------------------------------------------
    def log_event(self, level: str, code: str, message: str, *,
                  when: datetime | None = None) -> str:
        """Append one line to ``ggserr.log`` and fsync it; returns the line written.

        The format follows GoldenGate's event log so existing log watchers keep working::

            2026-11-21 10:00:00  INFO    OGG-00975  trailgate EXTRACT EXT1 starting.
        """
        lvl = level.upper()
        if lvl not in _LEVELS:
            raise ValueError(f"event level must be one of {', '.join(_LEVELS)}, not {level!r}")
        stamp = (when or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
        text = " ".join(message.split())  # one event, one line
        line = f"{stamp}  {lvl:<8}{code}  trailgate {text}\n"
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.ggserr_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return line.rstrip("\n")

    # -- group registry -----------------------------------------------------------------
    @property
    def registry_file(self) -> Path:
        return self.dirchk / REGISTRY_FILE

    @contextmanager
    def _locked_registry(self) -> Iterator[dict[str, GroupInfo]]:
        """Read-modify-write the registry under an exclusive lock (GGSCI sessions and running
        groups may touch it concurrently), then replace it atomically."""
        with exclusive_lock(self.dirchk / (REGISTRY_FILE + ".lock")):
            groups = self._read_registry()
            yield groups
            payload = {"version": 1,
                       "groups": {n: g.to_json() for n, g in sorted(groups.items())}}
            atomic_write_text(self.registry_file, json.dumps(payload, indent=1) + "\n")

    def _read_registry(self) -> dict[str, GroupInfo]:
        try:
            raw = self.registry_file.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))  # not UTF-8: a ValueError, reported below
            if not isinstance(data, dict) or not isinstance(data.get("groups"), dict):
                raise TypeError('not a JSON object with a "groups" object')
            return {n: GroupInfo.from_json(g) for n, g in data["groups"].items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"the group registry is corrupt ({exc}); restore it from a backup or recreate "
                f"the groups with ADD EXTRACT / ADD REPLICAT after removing the file",
                path=str(self.registry_file),
            ) from None

    def groups(self) -> list[GroupInfo]:
        """Every registered group, by name."""
        return [g for _, g in sorted(self._read_registry().items())]

    def group(self, name: str) -> GroupInfo | None:
        """The group called ``name`` (case-insensitive), or ``None``."""
        return self._read_registry().get(validate_group_name(name))

    def require_group(self, name: str, kind: str | None = None) -> GroupInfo:
        """The group called ``name``; a ConfigError saying how to create it if missing."""
        group = self.group(name)
        if group is None or (kind is not None and group.kind != kind.upper()):
            what = (kind or "group").upper()
            raise ConfigError(f"{what} {name.upper()} does not exist; create it with "
                              f"ADD {kind.upper() if kind else 'EXTRACT|REPLICAT'} "
                              f"{name.upper()}, ...")
        return group

    def add_group(self, info: GroupInfo) -> GroupInfo:
        """Register a new group; an error if the name is already used (by either type)."""
        info.name = validate_group_name(info.name)
        info.kind = info.kind.upper()
        if info.kind not in ("EXTRACT", "REPLICAT"):
            raise ValueError(f"group kind must be EXTRACT or REPLICAT, not {info.kind!r}")
        with self._locked_registry() as groups:
            if info.name in groups:
                existing = groups[info.name]
                raise ConfigError(f"{existing.kind} {info.name} already exists; DELETE "
                                  f"{existing.kind} {info.name} first or choose another name")
            groups[info.name] = info
        return info

    def update_group(self, info: GroupInfo) -> None:
        """Replace the stored record of an existing group (ALTER, ADD EXTTRAIL)."""
        name = validate_group_name(info.name)
        with self._locked_registry() as groups:
            if name not in groups:
                raise ConfigError(f"group {name} does not exist")
            groups[name] = info

    def delete_group(self, name: str) -> GroupInfo:
        """Unregister a group and remove its checkpoint; returns what was removed."""
        key = validate_group_name(name)
        with self._locked_registry() as groups:
            if key not in groups:
                raise ConfigError(f"group {key} does not exist; INFO ALL lists the groups")
            removed = groups.pop(key)
        self.checkpoints.delete(key, removed.kind)
        return removed

    def add_trail(self, group: str, trail: TrailInfo) -> GroupInfo:
        """Attach a trail to an Extract (ADD EXTTRAIL / ADD RMTTRAIL)."""
        key = validate_group_name(group)
        with self._locked_registry() as groups:
            info = groups.get(key)
            if info is None or info.kind != "EXTRACT":
                raise ConfigError(f"EXTRACT {key} does not exist; ADD EXTRACT {key} first")
            for other in groups.values():
                for t in other.trails:
                    if t.path == trail.path and other.name != key:
                        raise ConfigError(f"trail {trail.path} is already written by "
                                          f"EXTRACT {other.name}")
            info.trails = [t for t in info.trails if t.path != trail.path] + [trail]
        return info

    def delete_trail(self, path: str) -> GroupInfo:
        """Detach a trail from whichever Extract writes it (DELETE EXTTRAIL / RMTTRAIL)."""
        with self._locked_registry() as groups:
            for info in groups.values():
                if any(t.path == path for t in info.trails):
                    info.trails = [t for t in info.trails if t.path != path]
                    return info
        raise ConfigError(f"no group writes trail {path}; INFO ALL lists the groups")
