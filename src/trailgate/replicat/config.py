"""A Replicat group's registry entry and parameters turned into what its query needs.

Resolved once, on the driver, at start (GoldenGate reads parameters once, too): the trail,
the target, the checkpoint table, the discard file and the parallelism.  A problem stops the
group here, with the parameter file, line and object in the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from trailgate.changes.heartbeat import seed_name
from trailgate.db.connect import DEFAULT_DOMAIN, alias_conninfo, login_conninfo
from trailgate.errors import ConfigError, TrailgateError
from trailgate.home import GroupInfo, Home
from trailgate.params import MapSpec, ReplicatParams, parse_globals, parse_group_params
from trailgate.params.names import parse_name

__all__ = ["PARTITIONS_CONF", "SPLIT_MIN_CONF", "ReplicatConfig", "is_uri", "lake_location",
           "load_replicat_config", "target_conninfo"]

#: ``SPARK CONF trailgate.replicat.partitions=n``: how many key partitions a batch is split
#: into (default: Spark's default parallelism).
PARTITIONS_CONF = "trailgate.replicat.partitions"
#: ``SPARK CONF trailgate.replicat.maxRecordsPerTrigger=n``: bound a micro-batch (default
#: 100,000 change records: a batch is held in memory while it is applied).
MAX_RECORDS_CONF = "trailgate.replicat.maxRecordsPerTrigger"
MAX_RECORDS_DEFAULT = 100_000
#: ``SPARK CONF trailgate.replicat.splitMinRecords=n``: a PostgreSQL batch with fewer change
#: records is applied as one key partition, on the driver (``split.SPLIT_MIN_RECORDS``).
SPLIT_MIN_CONF = "trailgate.replicat.splitMinRecords"


@dataclass(frozen=True, slots=True)
class ReplicatConfig:
    """What one Replicat run needs (plain data: it pickles to Spark tasks)."""

    group: str
    home: str
    trail: str  # absolute dir/prefix
    trail_label: str  # as ADD REPLICAT registered it
    begin: dict[str, int]
    target_kind: str  # POSTGRES | DELTA | PARQUET
    target: str  # conninfo or directory
    checkpoint_table: str | None
    discard_file: str
    partitions: int | None
    max_records: int | None
    params: ReplicatParams
    info: GroupInfo
    split_min_records: int | None = None

    @property
    def plan_file(self) -> Path:
        """``dirchk/NAME/replicat.plan``: the last micro-batch's id."""
        return Home(self.home).spark_checkpoint_dir(self.group) / "replicat.plan"

    @property
    def split_file(self) -> Path:
        """``dirchk/NAME/replicat.split``: the last planned batch's range and key-partition
        count (:mod:`trailgate.spark.key_split`)."""
        return Home(self.home).spark_checkpoint_dir(self.group) / "replicat.split"

    @property
    def source_patterns(self) -> list[tuple[str, str | None]]:
        """The MAP sources: the stream reads only these tables."""
        return [(m.source, None) for m in self.params.maps]


def target_conninfo(home: Home, params: ReplicatParams) -> str:
    if params.useridalias:
        return alias_conninfo(home.path, params.useridalias, params.domain or DEFAULT_DOMAIN,
                              params.targetdb)
    return login_conninfo(sourcedb=params.targetdb, userid=params.userid,
                          password=params.password)


def is_uri(location: str) -> bool:
    """True for a location with a scheme other than ``file:`` (``s3://bucket/lake``)."""
    m = _URI.match(location)
    return m is not None and m.group(1).lower() != "file"


_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")


def lake_location(home: Home, kind: str, location: str, path: str | None) -> str:
    """Where a Delta or Parquet target lives: a local directory (relative to the home; a
    ``file://`` URI is one), or for Delta an object-store URI that ``deltalake`` opens with
    the credentials of its environment variables (docs/spark.md, "Running on a cluster")."""
    if location.lower().startswith("file:"):
        location = unquote(urlsplit(location).path)
    elif is_uri(location):
        if kind == "DELTA":
            return location
        raise ConfigError(f"TARGETPARQUET {location}: Parquet change logs are written as "
                          f"local files (written, fsynced and renamed), so give a directory "
                          f"every node mounts; an object store takes TARGETDELTA", path=path)
    return str(home.resolve(location))


def _begin(info: GroupInfo) -> dict[str, int]:
    begin = info.begin if isinstance(info.begin, dict) else {}
    try:
        return {"seqno": int(begin.get("seqno", 0)), "rba": int(begin.get("rba", 0))}
    except (TypeError, ValueError):
        raise ConfigError(f"REPLICAT {info.name}: its start position {begin!r} is not "
                          f"EXTSEQNO/EXTRBA; ALTER REPLICAT {info.name}, EXTSEQNO n, "
                          f"EXTRBA n") from None


def _heartbeat_map(home: Home, conninfo: str) -> MapSpec | None:
    """The implicit ``MAP GGSCHEMA.gg_heartbeat_seed, TARGET GGSCHEMA.gg_heartbeat_history``
    when the target has the heartbeat tables (ADD HEARTBEATTABLE): heartbeats then land in
    its history, whatever the MAPs say (:mod:`trailgate.db.heartbeat`)."""
    schema = parse_globals(home.globals_file).ggschema
    if not schema:
        return None
    from trailgate.db.connect import connect
    from trailgate.db.heartbeat import HISTORY, heartbeat_objects

    try:
        with connect(conninfo, application_name="trailgate replicat start") as conn:
            if not heartbeat_objects(conn, schema)[HISTORY]:
                return None
    except TrailgateError:
        return None  # the start-up checks report an unreachable target in their words
    return MapSpec(seed_name(schema), f"{schema}.{HISTORY}",
                   path="(heartbeat: ADD HEARTBEATTABLE)")


def load_replicat_config(home: Home, group: str) -> ReplicatConfig:
    """Read and check the registry entry and the parameter file."""
    info = home.require_group(group, "REPLICAT")
    if not info.source_path:
        raise ConfigError(f"REPLICAT {info.name} has no trail: DELETE it and ADD REPLICAT "
                          f"{info.name}, EXTTRAIL ./dirdat/rt")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ReplicatParams):
        raise ConfigError(f"{params.path}: the parameter file is not a Replicat's (it must "
                          f"start with REPLICAT {info.name})", path=params.path, line=1)
    target = params.target
    assert target is not None  # the parser requires one
    if target.kind == "POSTGRES":
        location = target_conninfo(home, params)
        implicit = _heartbeat_map(home, location)
        if implicit is not None:
            params.maps = [*params.maps, implicit]
    else:
        location = lake_location(home, target.kind, target.location, params.path)
    for spec in params.maps:
        try:
            parse_name(spec.target)
        except ValueError as exc:
            raise ConfigError(f"MAP {spec.source}, TARGET {spec.target}: {exc}",
                              path=spec.path, line=spec.line) from None
        if spec.scd_type == 2 and target.kind != "DELTA":
            raise ConfigError(f"MAP {spec.source}, TARGET {spec.target}: SCD TYPE 2 keeps "
                              f"history in Delta tables only (TARGETDELTA); this Replicat's "
                              f"target is {target.kind.lower()}: remove SCD TYPE 2, or "
                              f"replicate to TARGETDELTA", path=spec.path, line=spec.line)
    discard = (str(home.resolve(params.discardfile.path)) if params.discardfile
               else str(home.discard_file(info.name)))
    trail = home.resolve(info.source_path)
    return ReplicatConfig(
        group=info.name, home=str(home.path), trail=str(trail), trail_label=info.source_path,
        begin=_begin(info), target_kind=target.kind, target=location,
        checkpoint_table=info.checkpoint_table if target.kind == "POSTGRES" else None,
        discard_file=discard, partitions=params.spark.whole(PARTITIONS_CONF, path=params.path),
        max_records=params.spark.whole(MAX_RECORDS_CONF, path=params.path) or MAX_RECORDS_DEFAULT,
        params=params, info=info,
        split_min_records=params.spark.whole(SPLIT_MIN_CONF, path=params.path))


def spark_conf(params: ReplicatParams) -> dict[str, str]:
    """The SPARK CONF settings meant for Spark (trailgate's own keys taken out)."""
    return {k: v for k, v in params.spark.conf.items() if not k.startswith("trailgate.")}


def discard_path(cfg: ReplicatConfig) -> Path:
    return Path(cfg.discard_file)
