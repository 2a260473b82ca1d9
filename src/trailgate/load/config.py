"""An initial-load Extract's parameters resolved into what its run needs.

``ADD EXTRACT name, SOURCEISTABLE`` and a parameter file with ``SOURCEISTABLE``, the source
login, ``TABLE`` statements and one output: ``EXTFILE``/``RMTFILE`` (a trail a Replicat
applies) or ``RMTTASK REPLICAT, GROUP name`` (straight into that Replicat's targets, through
its MAPs).  Resolved once, at start, with the file and line of any problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trailgate.errors import ConfigError
from trailgate.extract.postgres.config import source_conninfo
from trailgate.home import GroupInfo, Home
from trailgate.params import ExtractParams, parse_group_params
from trailgate.replicat.config import ReplicatConfig, load_replicat_config

__all__ = ["LoadConfig", "load_load_config"]


@dataclass(frozen=True, slots=True)
class LoadConfig:
    """One initial load: its source, tables and output."""

    group: str
    home: str
    conninfo: str
    params: ExtractParams
    info: GroupInfo
    replicat: ReplicatConfig | None  # RMTTASK: the Replicat whose targets are loaded
    trail: str | None  # EXTFILE/RMTFILE: the trail written (absolute)
    trail_label: str | None
    instantiate: tuple[str, ...]  # Replicats that get the load's cuts

    @property
    def output(self) -> str:
        if self.replicat is not None:
            return f"REPLICAT {self.replicat.group}"
        return f"EXTFILE {self.trail_label}"

    @property
    def sink_kind(self) -> str:
        return "TRAIL" if self.replicat is None else self.replicat.target_kind

    @property
    def sink_location(self) -> str:
        if self.replicat is None:
            assert self.trail is not None
            return self.trail
        return self.replicat.target

    @property
    def work_dir(self) -> Path:
        return Home(self.home).dirtmp / f"load-{self.group.lower()}"


def load_load_config(home: Home, group: str) -> LoadConfig:
    """Read and check the registry entry and the parameter file of load ``group``."""
    info = home.require_group(group, "EXTRACT")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ExtractParams) or not params.sourceistable:
        raise ConfigError(f"EXTRACT {info.name} was added with SOURCEISTABLE, so its "
                          f"parameter file must say SOURCEISTABLE (an initial load)",
                          path=params.path)
    replicat = None
    if params.rmttask is not None:
        target = home.group(params.rmttask)
        if target is None or target.kind != "REPLICAT":
            raise ConfigError(f"RMTTASK REPLICAT, GROUP {params.rmttask}: there is no REPLICAT "
                              f"{params.rmttask}; ADD REPLICAT {params.rmttask}, EXTTRAIL … "
                              f"and give it a parameter file with its target and MAPs",
                              path=params.path)
        replicat = load_replicat_config(home, params.rmttask)
    trail = label = None
    if params.extfiles:
        label = params.extfiles[0][1]
        trail = str(home.resolve(label))
    instantiate = list(params.instantiate)
    if replicat is not None and replicat.group not in instantiate:
        instantiate.insert(0, replicat.group)
    for name in instantiate:
        other = home.group(name)
        if other is None or other.kind != "REPLICAT":
            raise ConfigError(f"INSTANTIATE REPLICAT {name}: there is no REPLICAT {name}",
                              path=params.path)
    return LoadConfig(info.name, str(home.path), source_conninfo(home, params), params, info,
                      replicat, trail, label, tuple(instantiate))
