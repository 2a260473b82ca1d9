"""A Data Pump's registry entry and parameters: input trail, output trail, table rules.

``ADD EXTRACT pump, EXTTRAILSOURCE ./dirdat/aa`` then ``ADD RMTTRAIL ./dirdat/rt, EXTRACT
pump`` (or ``ADD EXTTRAIL``); the parameter file names the output with ``RMTTRAIL`` (or
``EXTTRAIL``) and the tables with ``TABLE`` (``TABLE src, TARGET tgt;`` renames).  With
``RMTHOST host, PORT n`` the output goes to a collector on that host (its staging copy in
``dirrmt/``: :mod:`trailgate.pump.remote`); without, ``RMTTRAIL`` is a path the Pump writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trailgate.changes.heartbeat import SEED_TABLE, seed_name
from trailgate.changes.routing import Router
from trailgate.collector.client import RemoteTarget
from trailgate.errors import ConfigError
from trailgate.home import GroupInfo, Home
from trailgate.params import ExtractParams, parse_globals, parse_group_params
from trailgate.pump.remote import remote_target, staging_trail
from trailgate.trail.keys import require_keys
from trailgate.trail.release import sink_format_options

__all__ = ["PumpConfig", "load_pump_config"]


@dataclass(frozen=True, slots=True)
class PumpConfig:
    """What one pump run needs (plain data)."""

    group: str
    home: str
    source: str  # the input trail, absolute
    source_label: str
    trail: str  # the output trail, absolute
    trail_label: str
    megabytes: int
    rules: list[tuple[str, str | None]]
    excludes: list[str]
    begin: dict[str, int]
    params: ExtractParams
    info: GroupInfo
    #: FORMAT RELEASE of the output trail as sink options; empty: write the input's format
    format_options: dict[str, str] = field(default_factory=dict)
    #: RMTHOST: the collector ``trail`` (then a staging trail) is mirrored to
    remote: RemoteTarget | None = None
    #: the file names the output's headers carry (a remote trail's, resolved as a local
    #: Pump would); None: ``trail``'s own
    named_as: str | None = None
    #: RMTHOST …, KEEPSTAGING: staging files stay (for PURGEOLDEXTRACTS) once sent
    keep_staging: bool = False

    def router(self) -> Router:
        """The pump's table rules as it reads through them (its heartbeat rule included,
        its name the hop it stamps on heartbeats)."""
        return Router.of(list(self.rules), list(self.excludes), self.group)


def _output(home: Home, info: GroupInfo, params: ExtractParams) -> tuple[str, str, int]:
    named = params.rmttrails + params.exttrails
    if len(named) != 1:
        raise ConfigError(f"a data pump writes exactly one trail (found {len(named)}): e.g. "
                          f"RMTTRAIL ./dirdat/rt", path=params.path)
    label = named[0]
    resolved = home.resolve(label)
    for trail in info.trails:
        if home.resolve(trail.path) == resolved:
            return str(resolved), trail.path, trail.megabytes
    kind = "RMTTRAIL" if params.rmttrails else "EXTTRAIL"
    raise ConfigError(f"{kind} {label} is not registered for EXTRACT {info.name}: run ADD "
                      f"{kind} {label}, EXTRACT {info.name}, MEGABYTES 500 in GGSCI",
                      path=params.path)


def load_pump_config(home: Home, name: str) -> PumpConfig:
    """Read and check everything at start; a ConfigError names the file, line and fix."""
    info = home.require_group(name, "EXTRACT")
    if info.source != "EXTTRAILSOURCE" or not info.source_path:
        raise ConfigError(f"EXTRACT {info.name} is not a data pump (ADD EXTRACT {info.name}, "
                          f"EXTTRAILSOURCE ./dirdat/aa)")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ExtractParams):
        raise ConfigError(f"{params.path}: the parameter file is not an Extract's (it must "
                          f"start with EXTRACT {info.name})", path=params.path, line=1)
    for spec in params.tables:
        unsupported = ("WHERE" if spec.where is not None else "COLS" if spec.cols else
                       "COLSEXCEPT" if spec.cols_except else "TOKENS" if spec.tokens else None)
        if unsupported:
            raise ConfigError(f"TABLE {spec.name}, {unsupported}: a trailgate data pump "
                              f"filters and renames whole tables only; filter rows in the "
                              f"Replicat's MAP … WHERE", path=spec.path, line=spec.line)
    trail, label, megabytes = _output(home, info, params)
    require_keys(home.path, params.encrypt.values())
    source = home.resolve(info.source_path)
    if source == home.resolve(trail):
        raise ConfigError(f"EXTRACT {info.name} would read and write the same trail "
                          f"{label}: give RMTTRAIL another path", path=params.path)
    remote = remote_target(home, params, label, info.name)
    named_as = None
    if remote is not None:
        named_as, trail = trail, str(staging_trail(home, info.name, label))
    begin = info.begin if isinstance(info.begin, dict) else {}
    schema = parse_globals(home.globals_file).ggschema  # heartbeats pass whatever TABLE says
    heartbeat = seed_name(schema) if schema else f"*.{SEED_TABLE}"
    return PumpConfig(
        group=info.name, home=str(home.path), source=str(source),
        source_label=info.source_path, trail=trail, trail_label=label, megabytes=megabytes,
        rules=[*((t.name, t.target) for t in params.tables), (heartbeat, None)],
        excludes=list(params.table_excludes),
        begin={"seqno": int(begin.get("seqno", 0)), "rba": int(begin.get("rba", 0))},
        params=params, info=info,
        format_options=sink_format_options(params.trail_options.get(label),
                                           params.encrypt.get(label)),
        remote=remote, named_as=named_as,
        keep_staging=bool(params.rmthost and "KEEPSTAGING" in params.rmthost))
