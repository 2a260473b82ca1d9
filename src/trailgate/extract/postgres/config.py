"""An Extract group's parameters turned into what its capture and its trail sink need.

Everything is resolved once, at start, on the driver: the connection (SOURCEDB with
USERIDALIAS or USERID), the slot and publication, the trail with its registered size, and
the table rules.  The result is plain data that pickles to Spark tasks, so a task never
reads the parameter file (GoldenGate reads parameters once, at start, too).
"""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from trailgate.capture.postgres.ddl_history import tabledef_from_history
from trailgate.capture.postgres.ddl_setup import ddl_schema
from trailgate.capture.postgres.slots import slot_name
from trailgate.capture.postgres.trandata import DEFAULT_PUBLICATION
from trailgate.changes.heartbeat import seed_name
from trailgate.db.connect import DEFAULT_DOMAIN, alias_conninfo, login_conninfo
from trailgate.errors import ConfigError
from trailgate.extract.ddl import ExtractDdl
from trailgate.extract.tables import TableRules
from trailgate.extract.tokens import GroupEnv, check_tokens
from trailgate.home import GroupInfo, Home
from trailgate.params import ExtractParams, parse_globals, parse_group_params
from trailgate.trail.keys import require_keys
from trailgate.trail.release import sink_format_options

__all__ = ["DEFAULT_MEMORY_LIMIT", "ExtractConfig", "extract_ddl", "load_extract_config",
           "source_conninfo"]

#: Bytes of one transaction's changes kept in memory before it is spilled to ``dirtmp/``.
DEFAULT_MEMORY_LIMIT = 64 << 20


@dataclass(frozen=True, slots=True)
class ExtractConfig:
    """What one Extract run needs, resolved from the home, the registry and its .prm."""

    group: str
    home: str
    conninfo: str
    slot: str
    publication: str
    trail: str  # absolute: dir/prefix
    trail_label: str  # as ADD EXTTRAIL registered it (./dirdat/aa): checkpoints name it so
    megabytes: int
    rules: TableRules
    spill_dir: str
    memory_limit_bytes: int
    params: ExtractParams
    info: GroupInfo
    heartbeat_schema: str | None = None  # GLOBALS GGSCHEMA: where the heartbeat table is
    format_options: dict[str, str] = field(default_factory=dict)  # FORMAT RELEASE, for the sink
    ggschema: str | None = None  # GLOBALS GGSCHEMA: where the DDL marker tables are

    @property
    def table_patterns(self) -> list[str]:
        return [t.name for t in self.params.tables]


def source_conninfo(home: Home, params: ExtractParams) -> str:
    if params.useridalias:
        return alias_conninfo(home.path, params.useridalias, params.domain or DEFAULT_DOMAIN,
                              params.sourcedb)
    if params.userid or params.sourcedb:
        return login_conninfo(sourcedb=params.sourcedb, userid=params.userid,
                              password=params.password)
    raise ConfigError("the Extract needs a source database: add SOURCEDB conninfo, "
                      "USERIDALIAS alias (or USERID user, PASSWORD pw)", path=params.path)


def _trail(home: Home, info: GroupInfo, params: ExtractParams) -> tuple[str, str, int]:
    if params.rmttrails:
        raise ConfigError("RMTTRAIL: a primary Extract on PostgreSQL writes a local trail; "
                          "use EXTTRAIL here and a data pump for the remote trail",
                          path=params.path)
    if len(params.exttrails) != 1:
        raise ConfigError(f"the Extract writes exactly one EXTTRAIL (found "
                          f"{len(params.exttrails)}); e.g. EXTTRAIL ./dirdat/aa",
                          path=params.path)
    label = params.exttrails[0]
    resolved = home.resolve(label)
    for trail in info.trails:
        if home.resolve(trail.path) == resolved:
            return str(resolved), trail.path, trail.megabytes
    raise ConfigError(f"EXTTRAIL {label} is not registered for EXTRACT {info.name}: run ADD "
                      f"EXTTRAIL {label}, EXTRACT {info.name}, MEGABYTES 500 in GGSCI",
                      path=params.path)


def load_extract_config(home: Home, group: str, *,
                        memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
                        process_id: int | None = None) -> ExtractConfig:
    """Read and check everything at start; a ConfigError names the file, line and fix."""
    info = home.require_group(group, "EXTRACT")
    if info.source != "TRANLOG" or info.source_path:
        raise ConfigError(f"EXTRACT {info.name} is a {info.source} group; `trailgate run "
                          "extract` runs a PostgreSQL TRANLOG Extract")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ExtractParams):
        raise ConfigError(f"{params.path}: the parameter file is not an Extract's "
                          "(it must start with EXTRACT)", path=params.path)
    if params.name.upper() != info.name:
        raise ConfigError(f"the parameter file says EXTRACT {params.name}, but it is the file "
                          f"of group {info.name}", path=params.path, line=1)
    if not params.tables:
        raise ConfigError("the Extract captures nothing: add TABLE schema.table; (or "
                          "schema.*)", path=params.path)
    for spec in params.tables:
        if spec.where is not None:
            raise ConfigError(f"TABLE {spec.name}, WHERE: row filtering in the Extract is not "
                              "supported yet; filter in the Replicat's MAP … WHERE",
                              path=spec.path, line=spec.line)
        if spec.target is not None:
            raise ConfigError(f"TABLE {spec.name}, TARGET: only a data pump renames tables",
                              path=spec.path, line=spec.line)
        check_tokens(spec)
    trail, label, megabytes = _trail(home, info, params)
    require_keys(home.path, params.encrypt.values())
    env = GroupEnv(group=info.name, description=info.description or "",
                   hostname=socket.gethostname(), os_user=getpass.getuser(),
                   process_id=process_id or os.getpid())
    schema = parse_globals(home.globals_file).ggschema
    return ExtractConfig(
        group=info.name, home=str(home.path), conninfo=source_conninfo(home, params),
        slot=slot_name(info.name), publication=DEFAULT_PUBLICATION, trail=trail,
        trail_label=label, megabytes=megabytes,
        rules=TableRules(params.tables, params.table_excludes, env,
                         heartbeat=seed_name(schema) if schema else None),
        spill_dir=str(Path(home.dirtmp) / info.name.lower()),
        memory_limit_bytes=memory_limit_bytes, params=params, info=info,
        heartbeat_schema=schema,
        format_options=sink_format_options(params.trail_options.get(label),
                                           params.encrypt.get(label)),
        ggschema=_ggschema(home, params))


def _ggschema(home: Home, params: ExtractParams) -> str | None:
    """GLOBALS GGSCHEMA (folded as PostgreSQL folds it); required by a DDL parameter."""
    schema = parse_globals(home.globals_file).ggschema
    if schema is None:
        if params.ddl_given:
            raise ConfigError("DDL: capturing DDL needs GGSCHEMA in dirprm/GLOBALS (the "
                              "schema of the DDL marker tables) and DDL support installed "
                              "there (GGSCI DBLOGIN, then ADD DDLSUPPORT)", path=params.path)
        return None
    return ddl_schema(schema)


def extract_ddl(cfg: ExtractConfig) -> ExtractDdl | None:
    """The DDL side of the Extract (None without GGSCHEMA: no marker tables to read)."""
    if cfg.ggschema is None:
        return None
    return ExtractDdl(cfg.ggschema, cfg.params.ddl, cfg.params.ddl_given, cfg.rules,
                      report=cfg.params.ddl_options.report, history=tabledef_from_history)
