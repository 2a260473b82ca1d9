"""The typed result of reading a parameter file.

Every spec remembers the file and line it came from so that a later failure (a MAP whose
target does not exist, a COLMAP column the table lacks) can still point at the line to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trailgate.errors import ConfigError

__all__ = [
    "DEFAULT_EOF_DELAY_SECONDS",
    "DEFAULT_FLUSH_SECONDS",
    "DEFAULT_REPLICAT_EOF_DELAY_SECONDS",
    "PATIENT_WINDOW_SECONDS",
    "ColMapEntry",
    "ColumnRef",
    "Compare",
    "Condition",
    "DdlErrorRule",
    "DdlOptions",
    "DdlRule",
    "DiscardFileSpec",
    "Expr",
    "ExtractParams",
    "FunctionCall",
    "GlobalsParams",
    "GroupParams",
    "Literal",
    "Logical",
    "MapSpec",
    "ReportCount",
    "SparkOptions",
    "TableSpec",
    "TargetSpec",
    "TokenSpec",
    "TrailOptions",
    "TranlogOptions",
    "WhereClause",
]

#: ``FLUSHSECS``'s default (GoldenGate's): an Extract writing the trail as transactions
#: arrive makes it durable and checkpointed about once a second.
DEFAULT_FLUSH_SECONDS = 1.0
#: ``EOFDELAYCSECS``'s default for a PostgreSQL Extract's live stream: a busy stream is read
#: at most this many seconds after its data arrived (a trickle within 2 ms).  GoldenGate's
#: own default, 1 s, is how long its processes sleep at the end of their data.
DEFAULT_EOF_DELAY_SECONDS = 0.02
#: ``EOFDELAYCSECS``'s default for a Replicat's stream apply: transactions that reach the
#: trail while a step runs are applied at most this many seconds after that step began.
DEFAULT_REPLICAT_EOF_DELAY_SECONDS = 0.01
#: The batch window of a group whose batches only record how far its own thread got (the
#: streaming Extract and Replicat) when neither CHECKPOINTSECS nor SPARK TRIGGER is set:
#: GoldenGate's CHECKPOINTSECS default.
PATIENT_WINDOW_SECONDS = 10.0


# -- expressions (COLMAP / TOKENS / WHERE) ---------------------------------------------
@dataclass(frozen=True, slots=True)
class ColumnRef:
    """A source column (or a GoldenGate transaction element such as GGS_OP_TYPE)."""

    name: str
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Literal:
    """A string (``'text'``) or number literal; ``value`` is the text without quotes."""

    value: str
    is_number: bool = False


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A column-conversion function: ``@GETENV('GGHEADER', 'COMMITTIMESTAMP')``,
    ``@TOKEN('name')``, ``@DATENOW()``; in WHERE also ``@NULL``, ``@PRESENT``, ``@ABSENT``.
    ``name`` is upper case without the ``@``; ``args`` are upper-cased for GETENV."""

    name: str
    args: tuple[Expr, ...] = ()


Expr = ColumnRef | Literal | FunctionCall


@dataclass(frozen=True, slots=True)
class Compare:
    """``left op right`` with op one of ``= <> != < > <= >=``."""

    left: Expr
    op: str
    right: Expr


@dataclass(frozen=True, slots=True)
class Logical:
    """``AND`` / ``OR`` over two or more conditions."""

    op: str
    items: tuple[Condition, ...]


Condition = Compare | Logical


@dataclass(frozen=True, slots=True)
class WhereClause:
    """A WHERE filter: the text as written and its parsed condition."""

    text: str
    condition: Condition


@dataclass(frozen=True, slots=True)
class ColMapEntry:
    """One ``target_column = expression`` of a COLMAP."""

    target: str
    expr: Expr
    target_quoted: bool = False


@dataclass(frozen=True, slots=True)
class TokenSpec:
    """One user token of ``TABLE ..., TOKENS (name = expression)``."""

    name: str
    expr: Expr


# -- statements --------------------------------------------------------------------------
@dataclass(slots=True)
class TableSpec:
    """An Extract ``TABLE`` statement: what to capture and how to trim it.

    ``name`` is the pattern as written (``hr.*``, ``public."Orders"``); use
    :func:`trailgate.params.match_table` to test a table against it.
    """

    name: str
    cols: list[str] | None = None
    cols_except: list[str] | None = None
    tokens: list[TokenSpec] = field(default_factory=list)
    where: WhereClause | None = None
    target: str | None = None  # a pump may rename: TABLE src.t, TARGET tgt.t;
    get_truncates: bool = False
    path: str = ""
    line: int = 0


@dataclass(slots=True)
class MapSpec:
    """A Replicat ``MAP source, TARGET target`` statement with its options.

    ``handle_collisions``, ``reperror`` and ``get_truncates`` are the values in force at this
    MAP (GoldenGate lets HANDLECOLLISIONS/REPERROR/GETTRUNCATES toggle between MAPs) unless
    the MAP sets them itself.
    """

    source: str
    target: str
    colmap: list[ColMapEntry] | None = None
    usedefaults: bool = False
    keycols: list[str] | None = None
    where: WhereClause | None = None
    handle_collisions: bool = False
    reperror: dict[str, str] = field(default_factory=dict)
    get_truncates: bool = False
    #: ``SCD TYPE 2`` (Delta targets): keep each key's versions instead of the last one;
    #: ``TRACK HISTORY ON (cols)`` / ``ON * EXCEPT (cols)`` narrow which columns open a
    #: version (None: every column does)
    scd_type: int = 1
    track_history: list[str] | None = None
    track_history_except: list[str] | None = None
    path: str = ""
    line: int = 0


@dataclass(slots=True)
class DiscardFileSpec:
    """``DISCARDFILE path [, APPEND | PURGE] [, MEGABYTES n]``."""

    path: str
    append: bool = True
    megabytes: int | None = None


@dataclass(slots=True)
class DdlRule:
    """One ``INCLUDE`` or ``EXCLUDE`` clause of the DDL parameter.

    ``scope`` is MAPPED, UNMAPPED, OTHER or ALL (None when only OBJNAME/OPTYPE/… narrow it).
    """

    include: bool
    scope: str | None = None
    objnames: list[str] = field(default_factory=list)
    optypes: list[str] = field(default_factory=list)
    objtypes: list[str] = field(default_factory=list)
    instr: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The clause as a person writes it (report lines name the rule that decided)."""
        parts = ["INCLUDE" if self.include else "EXCLUDE"]
        if self.scope:
            parts.append(self.scope)
        parts += [f"OBJNAME {n}" for n in self.objnames]
        parts += [f"OPTYPE {o}" for o in self.optypes]
        parts += [f"OBJTYPE '{o}'" for o in self.objtypes]
        parts += [f"INSTR '{i}'" for i in self.instr]
        return " ".join(parts)


@dataclass(slots=True)
class DdlOptions:
    """``DDLOPTIONS``: ``REPORT`` puts each DDL into the report; the ``LAKE…`` options (a
    trailgate extension) say what a Delta or Parquet target does with CREATE, DROP and
    RENAME of a table (docs/ddl.md)."""

    report: bool = False
    lake_create: str = "ATDDL"  # ATDDL | ONFIRSTROW
    lake_drop: str = "ARCHIVE"  # ARCHIVE | PURGE | KEEP
    lake_rename: str = "MOVE"  # MOVE | NEWTABLE


@dataclass(slots=True)
class DdlErrorRule:
    """One ``DDLERROR {error | DEFAULT} {ABEND | DISCARD | IGNORE} [RETRYOP MAXRETRIES n
    [RETRYDELAY s]] [INCLUDE … | EXCLUDE …]``: ``error`` is a SQLSTATE or ``DEFAULT``;
    ``only`` narrows the rule to DDL its clause takes."""

    error: str
    response: str
    max_retries: int = 0
    retry_delay: float = 0.0
    only: DdlRule | None = None

    def text(self) -> str:
        out = f"DDLERROR {self.error} {self.response}"
        if self.max_retries:
            out += f" RETRYOP MAXRETRIES {self.max_retries} RETRYDELAY {self.retry_delay:g}"
        if self.only is not None:
            out += " " + self.only.text()
        return out


@dataclass(slots=True)
class TranlogOptions:
    """``TRANLOGOPTIONS``: where Oracle redo dumps are and how to treat unknown objects."""

    dumpdir: str | None = None
    dictionary: str | None = None
    on_unknown: str = "STOP"  # STOP | SKIP


@dataclass(slots=True)
class ReportCount:
    """``REPORTCOUNT EVERY n RECORDS|SECONDS|MINUTES|HOURS [, RATE]``."""

    every: int
    unit: str  # RECORDS | SECONDS | MINUTES | HOURS
    rate: bool = False


@dataclass(slots=True)
class SparkOptions:
    """The ``SPARK`` parameter (a trailgate extension): how the group runs on Spark."""

    master: str | None = None
    trigger_seconds: float | None = None
    conf: dict[str, str] = field(default_factory=dict)

    def flag(self, name: str) -> bool:
        """A ``SPARK CONF`` switch of trailgate's that is on unless set to false."""
        value = self.conf.get(name, "true").strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"SPARK CONF {name}: expected true or false, not {value!r}")
        return value == "true"

    def whole(self, name: str, *, minimum: int = 1, path: str | None = None) -> int | None:
        """A ``SPARK CONF`` whole number of trailgate's, at least ``minimum``; None when
        unset.  Only ASCII digits count: ``int()`` would also take ``+5``, ``1_000`` and
        other scripts' digits, which no reader of the file would take for a number."""
        text = self.conf.get(name)
        if text is None:
            return None
        digits = text.strip()
        if not (digits.isascii() and digits.isdigit()) or int(digits) < minimum:
            what = "a positive whole number" if minimum == 1 else f"a whole number ≥ {minimum}"
            raise ConfigError(f"SPARK CONF {name}={text}: expected {what}", path=path)
        return int(digits)


@dataclass(slots=True)
class TargetSpec:
    """Where a Replicat writes: ``POSTGRES`` (TARGETDB), ``DELTA`` (TARGETDELTA path) or
    ``PARQUET`` (TARGETPARQUET path)."""

    kind: str
    location: str


@dataclass(slots=True, kw_only=True)
class GroupParams:
    """What every group's parameter file can say."""

    name: str
    path: str
    useridalias: str | None = None
    domain: str | None = None
    userid: str | None = None
    password: str | None = None
    ddl: list[DdlRule] = field(default_factory=list)
    ddl_given: bool = False  # a DDL parameter is in the file (even one that includes all)
    ddl_options: DdlOptions = field(default_factory=DdlOptions)
    discardfile: DiscardFileSpec | None = None
    get_truncates: bool = False
    report_count: ReportCount | None = None
    checkpoint_secs: float | None = None  # CHECKPOINTSECS: see batch_seconds
    spark: SparkOptions = field(default_factory=SparkOptions)
    sourcedefs: str | None = None
    assume_targetdefs: bool = False
    decrypt: TrailCrypt | None = None  # DECRYPTTRAIL (a data pump's or Replicat's input)
    files: list[str] = field(default_factory=list)  # the file and every OBEY/INCLUDE read

    kind = "GROUP"

    def batch_seconds(self, trigger: float | None, *, patient: bool) -> float:
        """A group's batch window: ``trigger`` (a run's ``--trigger``) when given; for a
        *patient* group — its batches only record how far the trail or the target got
        (the streaming Extract and Replicat, whose own threads make their work durable
        and checkpointed about every second) — ``CHECKPOINTSECS`` when the file sets it,
        else ``SPARK TRIGGER``, else GoldenGate's 10 s; for any other group ``SPARK
        TRIGGER``, else 1 s (its batches carry the data)."""
        if trigger:
            return trigger
        if patient and self.checkpoint_secs:
            return self.checkpoint_secs
        if self.spark.trigger_seconds:
            return self.spark.trigger_seconds
        return PATIENT_WINDOW_SECONDS if patient else 1.0


@dataclass(slots=True)
class TrailOptions:
    """``EXTTRAIL|RMTTRAIL path, FORMAT RELEASE n.n [, TRAILBYTEORDER order]``: the format
    the trail is written in (checked against the releases trailgate writes when the group
    starts)."""

    release: str | None = None
    byte_order: str | None = None  # BIGENDIAN | LITTLEENDIAN | NATIVEENDIAN
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class TrailCrypt:
    """``ENCRYPTTRAIL|DECRYPTTRAIL [AES128|AES192|AES256] [, KEYNAME name]``: the cipher
    and the ENCKEYS key name (``None``: the master key, until a wallet: ENCKEYS ``DEFAULT``)."""

    cipher: str = "AES256"
    key_name: str | None = None


@dataclass(slots=True, kw_only=True)
class ExtractParams(GroupParams):
    """A primary Extract's or a data pump's parameters."""

    sourcedb: str | None = None
    exttrails: list[str] = field(default_factory=list)
    rmttrails: list[str] = field(default_factory=list)
    trail_options: dict[str, TrailOptions] = field(default_factory=dict)  # by trail path
    # ENCRYPTTRAIL in force before each EXTTRAIL/RMTTRAIL, by trail path
    encrypt: dict[str, TrailCrypt] = field(default_factory=dict)
    rmthost: dict[str, str] | None = None
    passthru: bool = False
    tables: list[TableSpec] = field(default_factory=list)
    table_excludes: list[str] = field(default_factory=list)
    tranlog: TranlogOptions | None = None
    # an initial-load Extract (SOURCEISTABLE): where its rows go
    sourceistable: bool = False
    extfiles: list[tuple[str, str]] = field(default_factory=list)  # (EXTFILE|RMTFILE, path)
    rmttask: str | None = None  # RMTTASK REPLICAT, GROUP name: that Replicat's targets
    instantiate: list[str] = field(default_factory=list)  # INSTANTIATE REPLICAT name
    create_targets: bool = False  # CREATETARGETS
    # FLUSHSECS: how often, at most, an Extract writing the trail as transactions arrive
    # makes it durable, checkpoints and confirms the slot (seconds; 0: after every write)
    flush_secs: float = DEFAULT_FLUSH_SECONDS
    # EOFDELAY / EOFDELAYCSECS: the longest a PostgreSQL Extract's stream reader lets a busy
    # stream gather before it reads (seconds; the pause grows with the stream's rate)
    eof_delay: float = DEFAULT_EOF_DELAY_SECONDS

    kind = "EXTRACT"


@dataclass(slots=True, kw_only=True)
class ReplicatParams(GroupParams):
    """A Replicat's parameters."""

    targetdb: str | None = None
    target: TargetSpec | None = None
    maps: list[MapSpec] = field(default_factory=list)
    map_excludes: list[str] = field(default_factory=list)
    handle_collisions: bool = False
    reperror: dict[str, str] = field(default_factory=lambda: {"DEFAULT": "ABEND"})
    batchsql: bool = False
    ddl_errors: list[DdlErrorRule] = field(default_factory=list)
    group_trans_ops: int = 1000
    max_trans_ops: int | None = None
    # the stream apply's steps commit without waiting for the target's WAL flush (the
    # checkpoint table makes that safe); DBOPTIONS DISABLECOMMITNOWAIT turns it off
    commit_nowait: bool = True
    # EOFDELAY / EOFDELAYCSECS: the longest the stream apply lets transactions gather at the
    # trail's end before its next step (seconds; steps closer when each is cheap)
    eof_delay: float = DEFAULT_REPLICAT_EOF_DELAY_SECONDS

    kind = "REPLICAT"


@dataclass(slots=True)
class GlobalsParams:
    """The ``GLOBALS`` file: settings shared by every group of the home."""

    path: str
    ggschema: str | None = None
    checkpoint_table: str | None = None
