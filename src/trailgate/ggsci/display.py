"""GGSCI's text layouts: INFO ALL, INFO group (SHOWCH, DETAIL), STATS, LAG, INFO EXTTRAIL.

Kept apart from the executor so the layouts (which people and scripts read) are pure
functions of the data, testable without a home or a process.  The layouts follow GGSCI's
so that runbooks and habits carry over; where trailgate knows more or less than GoldenGate
(no Manager, one checkpoint kept rather than a history) the text says so plainly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from trailgate.checkpoint import Checkpoint, TableStats, checkpoint_lag, parse_time
from trailgate.home import GroupInfo
from trailgate.wallet import MasterKeyWallet

__all__ = [
    "checkpoint_lag",
    "format_hms",
    "format_position",
    "info_all",
    "info_group",
    "info_trail",
    "lag_lines",
    "parse_time",
    "position_summary",
    "showch",
    "source_label",
    "stats_lines",
]


def format_hms(seconds: float | None) -> str:
    """``HH:MM:SS`` as GGSCI shows lags (hours may exceed 99)."""
    if seconds is None:
        return "00:00:00"
    total = max(0, int(seconds))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def _local(value: datetime | None, *, seconds: bool = True) -> str:
    if value is None:
        return "(unknown)"
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def _since(cp: Checkpoint | None, group: GroupInfo, now: datetime) -> float:
    stamp = parse_time(cp.updated) if cp is not None else parse_time(group.created)
    return 0.0 if stamp is None else max(0.0, (now - stamp).total_seconds())


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


def info_all(rows: Iterable[tuple[GroupInfo, str, Checkpoint | None]],
             now: datetime | None = None, manager: str | None = None) -> list[str]:
    """The ``INFO ALL`` table: the Manager's status (when given), then one line per
    (group, status, checkpoint)."""
    now = _now(now)
    out = [f"{'Program':<12}{'Status':<12}{'Group':<12}{'Lag at Chkpt':<14}Time Since Chkpt",
           ""]
    if manager is not None:
        out.append(f"{'MANAGER':<12}{manager}")
    for group, status, cp in rows:
        out.append(f"{group.kind:<12}{status:<12}{group.name:<12}"
                   f"{format_hms(checkpoint_lag(cp)):<14}"
                   f"{format_hms(_since(cp, group, now))}")
    return out


def source_label(group: GroupInfo) -> str:
    """What GGSCI calls the data source on the "Log Read Checkpoint" line."""
    if group.source == "TRANLOG":
        return "PostgreSQL WAL"
    if group.source == "DUMPDIR":
        return f"Oracle Redo Log dumps in {group.source_path}"
    if group.source == "SOURCEISTABLE":
        return "Source tables (initial load)"
    return f"File {group.source_path}"


def format_position(position: Mapping[str, Any] | None) -> list[str]:
    """A source or trail position as GGSCI's ``Label: value`` lines."""
    if not position:
        return ["(none yet)"]
    labels = {"lsn": "LSN", "scn": "SCN", "seqno": "Sequence #", "rba": "RBA",
              "file": "Redo File", "line": "Line", "thread": "Thread #", "xid": "XID",
              "csn": "CSN", "time": "Timestamp"}
    out = []
    for key, value in position.items():
        if key == "lsn" and isinstance(value, int):
            value = f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"
        out.append(f"{labels.get(key, key)}: {value}")
    return out


def position_summary(position: Mapping[str, Any] | None) -> str:
    return ", ".join(format_position(position)).replace(": ", " ")


def info_group(group: GroupInfo, status: str, pid: int | None, started: datetime | None,
               cp: Checkpoint | None, now: datetime | None = None) -> list[str]:
    """``INFO EXTRACT|REPLICAT name``: status, checkpoint lag and the log read checkpoint."""
    now = _now(now)
    if cp is None and started is None:
        when = f"Initialized   {_local(parse_time(group.created), seconds=False)}"
    else:
        when = f"Last Started {_local(started, seconds=False)}"
    out = [f"{group.kind:<11}{group.name:<10}{when}   Status {status}"]
    if group.description:
        out.append(f"Description          {group.description}")
    lag = checkpoint_lag(cp)
    out.append(f"Checkpoint Lag       {format_hms(lag)} (updated "
               f"{format_hms(_since(cp, group, now))} ago)")
    if pid is not None and status in ("RUNNING", "STARTING"):
        out.append(f"Process ID           {pid}")
    out.append(f"Log Read Checkpoint  {source_label(group)}")
    if cp is not None and cp.read_position:
        stamp = _local(parse_time(cp.read_time)) if cp.read_time else "(no record yet)"
        out.append(f"                     {stamp}  {position_summary(cp.read_position)}")
    else:
        begin = group.begin
        if isinstance(begin, dict):
            out.append(f"                     First Record  {position_summary(begin)}")
        else:
            out.append(f"                     First Record  BEGIN {begin or 'NOW'}")
    return out


def showch(group: GroupInfo, cp: Checkpoint | None, count: int | None = None) -> list[str]:
    """``INFO name, SHOWCH``: the read checkpoint (startup, recovery = oldest open
    transaction, current) and, for an Extract, the write checkpoint."""
    out = ["", "Current Checkpoint Detail:", "", "Read Checkpoint #1", "",
           f"  {source_label(group)}", "",
           "  Startup Checkpoint (starting position in the data source):"]
    begin = group.begin
    out += [f"    {line}" for line in (format_position(begin) if isinstance(begin, dict)
                                       else [f"BEGIN {begin or 'NOW'}",
                                             f"Timestamp: {_local(parse_time(group.created))}"])]
    out += ["", "  Recovery Checkpoint (position of oldest unprocessed transaction in the "
            "data source):"]
    recovery = cp.recovery_position if cp is not None else None
    if recovery is None and cp is not None:
        recovery = cp.read_position  # no transaction open: recovery is the read position
    out += [f"    {line}" for line in format_position(recovery)]
    out += ["", "  Current Checkpoint (position of last record read in the data source):"]
    out += [f"    {line}" for line in format_position(cp.read_position if cp else None)]
    if cp is not None and cp.read_time:
        out.append(f"    Timestamp: {_local(parse_time(cp.read_time))}")
    if group.kind == "EXTRACT":
        out += _write_checkpoints(group, cp)
    elif group.checkpoint_table:
        out += ["", f"  Checkpoint table: {group.checkpoint_table}"]
    if cp is not None:
        if cp.last_csn is not None or cp.last_xid is not None:
            out += ["", "Last Transaction:", f"  CSN: {cp.last_csn}", f"  XID: {cp.last_xid}"]
        out += ["", "Status:", f"  Created = {_local(parse_time(cp.created))}",
                f"  Last Update Time = {_local(parse_time(cp.updated))}"]
    else:
        out += ["", "Status:", "  No checkpoint yet: the group has not run."]
    if count is not None and count > 1:
        out += ["", f"(SHOWCH {count}: trailgate keeps only the current checkpoint)"]
    return out


def _write_checkpoints(group: GroupInfo, cp: Checkpoint | None) -> list[str]:
    out: list[str] = []
    trails = list(group.trails)
    if cp is not None and cp.write_trail and not any(t.path == cp.write_trail
                                                     for t in trails):
        from trailgate.home import TrailInfo
        trails.append(TrailInfo(cp.write_trail))
    if not trails:
        return ["", "Write Checkpoint: none (ADD EXTTRAIL or ADD RMTTRAIL names the trail)"]
    for n, trail in enumerate(trails, start=1):
        current = (cp is not None and cp.write_position is not None
                   and (cp.write_trail in (None, trail.path) or len(trails) == 1))
        seqno = cp.write_position.seqno if current and cp and cp.write_position else 0
        rba = cp.write_position.rba if current and cp and cp.write_position else 0
        out += ["", f"Write Checkpoint #{n}", "", "  GGS Log Trail", "",
                "  Current Checkpoint (current write position):",
                f"    Sequence #: {seqno}", f"    RBA: {rba}"]
        if current and cp is not None:
            out.append(f"    Timestamp: {_local(parse_time(cp.updated))}")
        out += [f"    Extract Trail: {trail.path}", f"    Trail Type: {trail.kind}"]
    return out


def info_trail(trail_path: str, kind: str, extract: str, megabytes: int,
               seqno: int, rba: int) -> list[str]:
    """``INFO EXTTRAIL``: one block per trail, GGSCI's right-aligned labels."""
    return [f"{'Extract Trail':>20}: {trail_path}", f"{'Trail Type':>20}: {kind}",
            f"{'Extract':>20}: {extract}", f"{'Seqno':>20}: {seqno}",
            f"{'RBA':>20}: {rba}", f"{'File Size':>20}: {megabytes}M", ""]


_STAT_LABELS = (("inserts", "Total inserts"), ("updates", "Total updates"),
                ("deletes", "Total deletes"), ("truncates", "Total truncates"),
                ("ddl", "Total DDL operations"), ("discards", "Total discards"))


def _stat_block(stats: TableStats, rate: tuple[str, float] | None) -> list[str]:
    out = [f"\t{label:<40}{getattr(stats, attr):>16.2f}" for attr, label in _STAT_LABELS]
    out.append(f"\t{'Total operations':<40}{stats.total:>16.2f}")
    if rate is not None:
        unit, seconds = rate
        per = stats.total / seconds if seconds > 0 else 0.0
        out.append(f"\t{'Rate (operations per ' + unit + ')':<40}{per:>16.2f}")
    return out


def stats_lines(group: GroupInfo, cp: Checkpoint | None, *, table_filter: Any = None,
                report_rate: str | None = None, now: datetime | None = None) -> list[str]:
    """``STATS name``: per-table counts and the totals, since the statistics began.

    ``table_filter`` is a predicate on table names (``STATS …, TABLE pattern``).
    """
    now = _now(now)
    verb = "Extracting" if group.kind == "EXTRACT" else "Replicating"
    out = [f"Statistics of {group.kind} {group.name} from its checkpoint"
           + (f" (updated {_local(parse_time(cp.updated))})." if cp else "."), ""]
    if cp is None:
        return [*out, "No records yet processed: the group has not written a checkpoint."]
    since = parse_time(cp.stats_since)
    rate = None
    if report_rate is not None and since is not None:
        seconds = max(0.0, (now - since).total_seconds())
        unit, div = {"SEC": ("second", 1), "MIN": ("minute", 60), "HR": ("hour", 3600)}[
            report_rate]
        rate = (unit, seconds / div)
    tables = {t: s for t, s in sorted(cp.stats.items())
              if table_filter is None or table_filter(t)}
    if group.kind == "EXTRACT":
        for trail in group.trails:
            out.append(f"Output to {trail.path}:")
        if group.trails:
            out.append("")
    if not tables:
        out.append("No database operations have been performed"
                   + (" on matching tables." if table_filter is not None else "."))
        return out
    total = TableStats()
    for table, stats in tables.items():
        total.add(stats)
        out += [f"{verb} from {table}:", "",
                f"*** Total statistics since {_local(since)} ***"]
        out += [*_stat_block(stats, rate), ""]
    out += [f"*** All tables ({len(tables)}): total statistics since {_local(since)} ***"]
    out += [*_stat_block(total, rate), "", "End of Statistics."]
    return out


def lag_lines(group: GroupInfo, cp: Checkpoint | None, running: bool,
              now: datetime | None = None) -> list[str]:
    """``LAG name``: the lag of the last record read, from the group's checkpoint."""
    now = _now(now)
    out = [f"Lag of {group.kind} {group.name} at its last checkpoint:"]
    if not running:
        out.append(f"({group.kind} {group.name} is not running: this is the lag when it "
                   f"last checkpointed.)")
    if cp is None or not cp.read_time:
        return [*out, "No records yet processed."]
    lag = checkpoint_lag(cp) or 0.0
    age = _since(cp, group, now)
    out.append(f"Last record lag {int(lag)} seconds.")
    out.append(f"Checkpoint written {format_hms(age)} ago "
               f"({_local(parse_time(cp.updated))}).")
    return out


def _wallet_date(text: str | None) -> str:
    """A wallet timestamp as GoldenGate prints it: ``Mon Aug 27 10:00:40 2012``."""
    if not text:
        return ""
    try:
        return datetime.fromisoformat(text).strftime("%a %b %d %H:%M:%S %Y")
    except ValueError:
        return text


def masterkey_info(wallet: MasterKeyWallet, version: int | None = None) -> list[str]:
    """``INFO MASTERKEY [VERSION n]``: the versions and their status, or one version with
    its key's hash (never the key)."""
    name, created = wallet.name(), wallet.created()
    versions = wallet.versions()
    if created is None and not versions:
        return [f"The wallet at location '{wallet.location}' has no master key; ADD "
                "MASTERKEY adds one."]
    lines = [f"{'Masterkey Name:':<32}{name}", f"{'Creation Date:':<32}{_wallet_date(created)}"]
    if version is None:
        lines.append(f"{'Version:':<16}{'Creation Date:':<32}Status:")
        lines += [f"{v.version:<16}{_wallet_date(v.created):<32}{v.status}" for v in versions]
        return lines
    found = [v for v in versions if v.version == version]
    if not found:
        return [*lines, f"Version {version} is not in the wallet (purged, or never made)."]
    v = found[0]
    return [*lines, f"{'Version:':<32}{v.version}",
            f"{'Renew Date:':<32}{_wallet_date(v.renewed)}",
            f"{'Status:':<32}{v.status}", f"{'Key Hash (SHA1):':<32}0x{v.key_hash}"]
