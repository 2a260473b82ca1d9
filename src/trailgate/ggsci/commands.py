"""GGSCI commands as plain objects: what was asked, fully parsed, with nothing executed.

Keeping parsing apart from execution lets an obey file be checked end to end before the
first command runs, and lets the executor be a simple dispatch on the command's type.
Group names are stored upper case (GoldenGate's convention); a name may be a wildcard
(``*``, ``EXT*``) where GGSCI allows one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "HELP_TOPICS",
    "AddCheckpointTable",
    "AddCredentialStore",
    "AddExtract",
    "AddReplicat",
    "AddTrail",
    "AlterCredentialStore",
    "AlterGroup",
    "Command",
    "CompareGroups",
    "DbLogin",
    "DdlSupport",
    "DeleteCheckpointTable",
    "DeleteCredentialStore",
    "DeleteGroup",
    "DeleteTrail",
    "EditParams",
    "Exit",
    "GroupCommand",
    "HeartbeatTable",
    "Help",
    "History",
    "InfoAll",
    "InfoCheckpointTable",
    "InfoCredentialStore",
    "InfoGroup",
    "InfoTrail",
    "KillGroup",
    "LagGroup",
    "ManagerCommand",
    "MasterKeyCommand",
    "Obey",
    "Repeat",
    "SchemaTranData",
    "SendSnapshot",
    "StartGroup",
    "StatsGroup",
    "StopGroup",
    "TranData",
    "ViewGgsevt",
    "ViewParams",
    "ViewReport",
    "WalletCommand",
]


@dataclass(frozen=True, slots=True)
class Command:
    """Base of every command."""


# -- database ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DbLogin(Command):
    """``DBLOGIN USERIDALIAS a [DOMAIN d] | USERID u[, PASSWORD p] | SOURCEDB conninfo [...]``"""

    sourcedb: str | None = None
    useridalias: str | None = None
    domain: str | None = None
    userid: str | None = None
    password: str | None = None


@dataclass(frozen=True, slots=True)
class TranData(Command):
    """``ADD|INFO|DELETE TRANDATA schema.table|schema.* [, COLS (c1, ...)] [, NOKEY]
    [, ALLCOLS]``: table-level supplemental logging."""

    action: str  # ADD | INFO | DELETE
    table: str
    cols: tuple[str, ...] | None = None
    nokey: bool = False
    allcols: bool = False


@dataclass(frozen=True, slots=True)
class SchemaTranData(Command):
    """``ADD|INFO|DELETE SCHEMATRANDATA schema [, ALLCOLS]``."""

    action: str
    schema: str
    allcols: bool = False


@dataclass(frozen=True, slots=True)
class DdlSupport(Command):
    """``ADD|INFO|DELETE DDLSUPPORT``: seed 004's DDL objects in GLOBALS GGSCHEMA."""

    action: str


@dataclass(frozen=True, slots=True)
class AddCheckpointTable(Command):
    """``ADD CHECKPOINTTABLE [schema.table]`` (default: GLOBALS CHECKPOINTTABLE)."""

    table: str | None = None


@dataclass(frozen=True, slots=True)
class InfoCheckpointTable(Command):
    """``INFO CHECKPOINTTABLE [schema.table]``."""

    table: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteCheckpointTable(Command):
    """``DELETE CHECKPOINTTABLE [schema.table]``."""

    table: str | None = None


# -- groups and trails -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AddExtract(Command):
    """``ADD EXTRACT name, TRANLOG [, DUMPDIR dir], BEGIN NOW|timestamp|SCN n|LSN x`` or
    ``ADD EXTRACT name, EXTTRAILSOURCE path [, EXTSEQNO n, EXTRBA n]`` (a pump).

    ``begin`` is ``"NOW"`` or a datetime; ``position`` a source position given instead
    (``{"scn": n}``, ``{"lsn": "0/16B3748"}``, ``{"seqno": n, "rba": n}``).
    """

    name: str
    source: str  # TRANLOG | EXTTRAILSOURCE | SOURCEISTABLE
    source_path: str | None = None  # the trail of a pump
    dumpdir: str | None = None  # trailgate: Oracle redo dumps for a TRANLOG Extract
    begin: str | datetime | None = None
    position: dict[str, Any] | None = None
    integrated: bool = False
    description: str | None = None
    initialload: str | None = None  # trailgate: the slot comes from this initial load


@dataclass(frozen=True, slots=True)
class AddReplicat(Command):
    """``ADD REPLICAT name, EXTTRAIL path [, EXTSEQNO n, EXTRBA n | BEGIN ...]
    [, CHECKPOINTTABLE schema.table | NODBCHECKPOINT]``."""

    name: str
    exttrail: str
    checkpoint_table: str | None = None
    nodbcheckpoint: bool = False
    begin: str | datetime | None = None
    position: dict[str, Any] | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class AlterGroup(Command):
    """``ALTER EXTRACT|REPLICAT name, BEGIN ... | EXTSEQNO n, EXTRBA n | SCN n | LSN x |
    ETROLLOVER``: reposition a stopped group."""

    kind: str | None
    name: str
    begin: str | datetime | None = None
    position: dict[str, Any] | None = None
    etrollover: bool = False


@dataclass(frozen=True, slots=True)
class AddTrail(Command):
    """``ADD EXTTRAIL|RMTTRAIL path, EXTRACT name [, MEGABYTES n]``."""

    kind: str  # EXTTRAIL | RMTTRAIL
    path: str
    extract: str
    megabytes: int | None = None


@dataclass(frozen=True, slots=True)
class DeleteTrail(Command):
    """``DELETE EXTTRAIL|RMTTRAIL path``."""

    kind: str
    path: str


@dataclass(frozen=True, slots=True)
class InfoTrail(Command):
    """``INFO EXTTRAIL|RMTTRAIL path|*``."""

    kind: str
    path: str


@dataclass(frozen=True, slots=True)
class DeleteGroup(Command):
    """``DELETE EXTRACT|REPLICAT name [!]``."""

    kind: str
    name: str
    force: bool = False


@dataclass(frozen=True, slots=True)
class GroupCommand(Command):
    """A command aimed at one group or a wildcard of groups.

    ``kind`` is EXTRACT, REPLICAT, or None when GGSCI should find the group by name (or
    ``ER``: both types).
    """

    kind: str | None
    name: str


@dataclass(frozen=True, slots=True)
class StartGroup(GroupCommand):
    """``START [EXTRACT|REPLICAT] name [, ATCSN n | AFTERCSN n]``."""

    atcsn: str | None = None
    aftercsn: str | None = None


@dataclass(frozen=True, slots=True)
class StopGroup(GroupCommand):
    """``STOP [EXTRACT|REPLICAT] name [!]`` (``!`` = do not wait)."""

    force: bool = False


@dataclass(frozen=True, slots=True)
class KillGroup(GroupCommand):
    """``KILL [EXTRACT|REPLICAT] name``."""


@dataclass(frozen=True, slots=True)
class InfoGroup(GroupCommand):
    """``INFO [EXTRACT|REPLICAT] name [, SHOWCH [n]] [, DETAIL]``."""

    showch: bool = False
    showch_count: int | None = None
    detail: bool = False


@dataclass(frozen=True, slots=True)
class StatsGroup(GroupCommand):
    """``STATS [EXTRACT|REPLICAT] name [, TOTAL] [, LATEST] [, TABLE pattern]
    [, RESET] [, REPORTRATE SEC|MIN|HR]``."""

    total: bool = False
    latest: bool = False
    table: str | None = None
    reset: bool = False
    report_rate: str | None = None


@dataclass(frozen=True, slots=True)
class LagGroup(GroupCommand):
    """``LAG [EXTRACT|REPLICAT] name``."""


@dataclass(frozen=True, slots=True)
class InfoAll(Command):
    """``INFO ALL``: a one-line status of every group."""


@dataclass(frozen=True, slots=True)
class ManagerCommand(Command):
    """``START | STOP [!] | INFO MANAGER`` (``MGR`` abbreviates MANAGER)."""

    action: str  # START | STOP | INFO
    force: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatTable(Command):
    """``ADD | ALTER | INFO | DELETE HEARTBEATTABLE [, FREQUENCY n] [, RETENTION_TIME n]
    [, PURGE_FREQUENCY n] [, TARGETONLY]``."""

    action: str
    frequency: int | None = None
    retention_time: int | None = None
    purge_frequency: int | None = None
    target_only: bool = False


@dataclass(frozen=True, slots=True)
class SendSnapshot(Command):
    """``SEND [EXTRACT] name, SNAPSHOT TABLE pattern [, RESYNC]``: an incremental snapshot
    of a table while the Extract runs (trailgate's one SEND request)."""

    name: str
    table: str
    resync: bool = False


@dataclass(frozen=True, slots=True)
class CompareGroups(Command):
    """``COMPARE [EXTRACT] ext, [REPLICAT] rep [, TABLE pattern] … [, REPORT file]
    [, REPAIR file [, APPLYREPAIR]] [, NOCONFIRM] [, CONFIRMWAIT seconds]``."""

    extract: str
    replicat: str
    tables: tuple[str, ...] = ()
    report: str | None = None
    repair: str | None = None
    apply_repair: bool = False
    confirm: bool = True
    confirm_wait: float = 120.0


# -- files -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ViewReport(Command):
    """``VIEW REPORT name``."""

    name: str


@dataclass(frozen=True, slots=True)
class ViewParams(Command):
    """``VIEW PARAMS name``."""

    name: str


@dataclass(frozen=True, slots=True)
class EditParams(Command):
    """``EDIT PARAMS name``: trailgate prints the file's path (edit it with any editor)."""

    name: str


@dataclass(frozen=True, slots=True)
class ViewGgsevt(Command):
    """``VIEW GGSEVT``: the event log ``ggserr.log``."""


# -- credential store --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AddCredentialStore(Command):
    """``ADD CREDENTIALSTORE``."""


@dataclass(frozen=True, slots=True)
class DeleteCredentialStore(Command):
    """``DELETE CREDENTIALSTORE``."""


@dataclass(frozen=True, slots=True)
class AlterCredentialStore(Command):
    """``ALTER CREDENTIALSTORE ADD|REPLACE USER user [PASSWORD p] ALIAS a [DOMAIN d]`` or
    ``ALTER CREDENTIALSTORE DELETE USER user|ALIAS a [DOMAIN d]``.  ``user`` may be a
    conninfo (``postgresql://gg@db:5432/app``)."""

    action: str  # ADD | REPLACE | DELETE
    user: str | None = None
    password: str | None = None
    alias: str | None = None
    domain: str | None = None


@dataclass(frozen=True, slots=True)
class InfoCredentialStore(Command):
    """``INFO CREDENTIALSTORE [DOMAIN d]``."""

    domain: str | None = None


# -- master-key wallet -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WalletCommand(Command):
    """``CREATE WALLET``, ``OPEN WALLET`` or ``PURGE WALLET``."""

    action: str  # CREATE | OPEN | PURGE


@dataclass(frozen=True, slots=True)
class MasterKeyCommand(Command):
    """``ADD MASTERKEY``, ``RENEW MASTERKEY``, ``INFO MASTERKEY [VERSION n]``,
    ``DELETE MASTERKEY {VERSION n | RANGE FROM a TO b | ALL}``, ``UNDELETE MASTERKEY
    VERSION n``.  ``versions`` is empty for ALL (and for ADD, RENEW, a plain INFO)."""

    action: str  # ADD | RENEW | INFO | DELETE | UNDELETE
    versions: tuple[int, ...] = ()
    all: bool = False


# -- session -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Obey(Command):
    """``OBEY file``: run the commands in a file."""

    path: str


@dataclass(frozen=True, slots=True)
class Help(Command):
    """``HELP [verb [object]]``; ``topic`` is a key of :data:`HELP_TOPICS` or None."""

    topic: str | None = None


@dataclass(frozen=True, slots=True)
class Exit(Command):
    """``EXIT`` / ``QUIT``."""


@dataclass(frozen=True, slots=True)
class History(Command):
    """``HISTORY [n]``: the last n commands."""

    count: int | None = None


@dataclass(frozen=True, slots=True)
class Repeat(Command):
    """``!`` (the last command), ``! n`` (command number n), ``! -n`` (n back) or
    ``! text`` (the last command starting with text)."""

    number: int | None = None
    prefix: str | None = None


#: One-line syntax summaries for HELP; the keys are the topics HELP accepts.
HELP_TOPICS: dict[str, str] = {
    "DBLOGIN": "DBLOGIN {USERIDALIAS alias [DOMAIN d] | USERID user[, PASSWORD pw] "
               "| SOURCEDB conninfo [, USERIDALIAS alias]}",
    "ADD TRANDATA": "ADD TRANDATA schema.table|schema.* [, COLS (c1, ...)] [, NOKEY] "
                    "[, ALLCOLS]",
    "INFO TRANDATA": "INFO TRANDATA schema.table|schema.*",
    "DELETE TRANDATA": "DELETE TRANDATA schema.table|schema.*",
    "ADD SCHEMATRANDATA": "ADD SCHEMATRANDATA schema [, ALLCOLS]",
    "INFO SCHEMATRANDATA": "INFO SCHEMATRANDATA schema",
    "DELETE SCHEMATRANDATA": "DELETE SCHEMATRANDATA schema",
    "ADD DDLSUPPORT": "ADD DDLSUPPORT  (after DBLOGIN; in GLOBALS GGSCHEMA: marker and "
                      "history tables, marker sequence, DDL event triggers)",
    "INFO DDLSUPPORT": "INFO DDLSUPPORT",
    "DELETE DDLSUPPORT": "DELETE DDLSUPPORT",
    "ADD CHECKPOINTTABLE": "ADD CHECKPOINTTABLE [schema.table]",
    "INFO CHECKPOINTTABLE": "INFO CHECKPOINTTABLE [schema.table]",
    "DELETE CHECKPOINTTABLE": "DELETE CHECKPOINTTABLE [schema.table]",
    "ADD EXTRACT": "ADD EXTRACT name, {TRANLOG [, DUMPDIR dir] | EXTTRAILSOURCE trail}, "
                   "{BEGIN {NOW | yyyy-mm-dd[ hh:mi[:ss]]} | SCN n | LSN x | "
                   "EXTSEQNO n, EXTRBA n | INITIALLOAD load} [, DESC 'text']  or  "
                   "ADD EXTRACT name, SOURCEISTABLE [, DESC 'text'] (an initial load)",
    "ADD REPLICAT": "ADD REPLICAT name, EXTTRAIL trail [, EXTSEQNO n, EXTRBA n] "
                    "[, CHECKPOINTTABLE schema.table | NODBCHECKPOINT] [, DESC 'text']",
    "ALTER EXTRACT": "ALTER EXTRACT name, {BEGIN {NOW | timestamp} | SCN n | LSN x | "
                     "EXTSEQNO n, EXTRBA n | ETROLLOVER}",
    "ALTER REPLICAT": "ALTER REPLICAT name, {BEGIN timestamp | EXTSEQNO n, EXTRBA n}",
    "ADD EXTTRAIL": "ADD EXTTRAIL trail, EXTRACT name [, MEGABYTES n]",
    "ADD RMTTRAIL": "ADD RMTTRAIL trail, EXTRACT name [, MEGABYTES n]",
    "DELETE EXTTRAIL": "DELETE EXTTRAIL trail",
    "DELETE RMTTRAIL": "DELETE RMTTRAIL trail",
    "INFO EXTTRAIL": "INFO EXTTRAIL trail|*",
    "INFO RMTTRAIL": "INFO RMTTRAIL trail|*",
    "DELETE EXTRACT": "DELETE EXTRACT name [!]",
    "DELETE REPLICAT": "DELETE REPLICAT name [!]",
    "START": "START [EXTRACT|REPLICAT|ER] name|wildcard [, ATCSN n | AFTERCSN n]",
    "STOP": "STOP [EXTRACT|REPLICAT|ER] name|wildcard [!]",
    "KILL": "KILL [EXTRACT|REPLICAT|ER] name|wildcard",
    "INFO": "INFO [EXTRACT|REPLICAT|ER] name|wildcard [, SHOWCH [n]] [, DETAIL]",
    "INFO ALL": "INFO ALL",
    "STATS": "STATS [EXTRACT|REPLICAT|ER] name|wildcard [, TOTAL] [, LATEST] "
             "[, TABLE schema.table] [, RESET] [, REPORTRATE SEC|MIN|HR]",
    "LAG": "LAG [EXTRACT|REPLICAT|ER] name|wildcard",
    "START MANAGER": "START MANAGER",
    "STOP MANAGER": "STOP MANAGER [!]",
    "INFO MANAGER": "INFO MANAGER",
    "ADD HEARTBEATTABLE": "ADD HEARTBEATTABLE [, FREQUENCY seconds] [, RETENTION_TIME days] "
                          "[, PURGE_FREQUENCY days] [, TARGETONLY]",
    "ALTER HEARTBEATTABLE": "ALTER HEARTBEATTABLE [, FREQUENCY seconds] [, RETENTION_TIME "
                            "days] [, PURGE_FREQUENCY days]",
    "INFO HEARTBEATTABLE": "INFO HEARTBEATTABLE",
    "DELETE HEARTBEATTABLE": "DELETE HEARTBEATTABLE",
    "SEND": "SEND [EXTRACT] name, SNAPSHOT TABLE schema.table [, RESYNC]",
    "COMPARE": "COMPARE [EXTRACT] ext, [REPLICAT] rep [, TABLE schema.table] "
               "[, REPORT file] [, REPAIR file [, APPLYREPAIR]] [, NOCONFIRM] "
               "[, CONFIRMWAIT seconds]",
    "VIEW REPORT": "VIEW REPORT name",
    "VIEW PARAMS": "VIEW PARAMS name",
    "VIEW GGSEVT": "VIEW GGSEVT",
    "EDIT PARAMS": "EDIT PARAMS name   (prints the parameter file's path)",
    "ADD CREDENTIALSTORE": "ADD CREDENTIALSTORE",
    "DELETE CREDENTIALSTORE": "DELETE CREDENTIALSTORE",
    "ALTER CREDENTIALSTORE": "ALTER CREDENTIALSTORE {ADD | REPLACE} USER user|conninfo "
                             "[PASSWORD pw] ALIAS alias [DOMAIN d] | DELETE USER user "
                             "[ALIAS alias] [DOMAIN d]",
    "INFO CREDENTIALSTORE": "INFO CREDENTIALSTORE [DOMAIN d]",
    "CREATE WALLET": "CREATE WALLET   (the master-key wallet in ./dirwlt; it stays open)",
    "OPEN WALLET": "OPEN WALLET   (before ADD, RENEW, DELETE, UNDELETE MASTERKEY, PURGE WALLET)",
    "PURGE WALLET": "PURGE WALLET   (removes the master-key versions marked for deletion)",
    "ADD MASTERKEY": "ADD MASTERKEY",
    "RENEW MASTERKEY": "RENEW MASTERKEY",
    "INFO MASTERKEY": "INFO MASTERKEY [VERSION n]",
    "DELETE MASTERKEY": "DELETE MASTERKEY {VERSION n | RANGE FROM a TO b | ALL}",
    "UNDELETE MASTERKEY": "UNDELETE MASTERKEY VERSION n",
    "OBEY": "OBEY file",
    "HELP": "HELP [command]",
    "HISTORY": "HISTORY [n]",
    "!": "! [n | -n | text]   (repeat a command from HISTORY)",
    "EXIT": "EXIT | QUIT",
}
