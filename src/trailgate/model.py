"""The data model every part of trailgate shares: operations, table definitions, changes.

Values travel through trailgate in their *trail form*: the bytes the trail stores for a
column, without the null indicator and length framing (ASCII digits for a NUMBER, the
``YYYY-MM-DD:HH24:MI:SS`` text for a DATE, raw bytes for a RAW).  ``None`` is SQL NULL.
Keeping the trail form end to end makes the codec fast and every value exact; conversion to
Python or database types happens at the edges (``trailgate.typemap``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import IntEnum, StrEnum
from typing import NamedTuple

__all__ = [
    "JULIAN_UNIX_EPOCH_MICROS",
    "Change",
    "Column",
    "ColumnKind",
    "DdlObject",
    "OpType",
    "TableDef",
    "TrailPosition",
    "TransInd",
    "Transaction",
    "datetime_from_julian",
    "julian_from_unix_micros",
    "unix_micros_from_julian",
]

#: The Unix epoch expressed as GoldenGate Julian microseconds: 1970-01-01 00:00:00 UTC is
#: Julian date 2,440,587.5, so GoldenGate's Julian microseconds count from noon of Julian day 0
#: (Logdump's own examples fix it: INTERPRETTIMESTAMP 211976584185800569 is 2005/03/03
#: 04:29:45.800.569 GMT; docs/trail-format.md, "Times").
JULIAN_UNIX_EPOCH_MICROS = 210_866_760_000_000_000


def julian_from_unix_micros(unix_micros: int) -> int:
    """Convert microseconds since 1970-01-01 UTC to GoldenGate Julian microseconds."""
    return unix_micros + JULIAN_UNIX_EPOCH_MICROS


def unix_micros_from_julian(julian_micros: int) -> int:
    """Convert GoldenGate Julian microseconds to microseconds since 1970-01-01 UTC."""
    return julian_micros - JULIAN_UNIX_EPOCH_MICROS


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def datetime_from_julian(julian_micros: int) -> datetime:
    """GoldenGate Julian microseconds as an aware UTC datetime, exact to the microsecond;
    ``OverflowError`` outside the years 1-9999."""
    return _UNIX_EPOCH + timedelta(microseconds=unix_micros_from_julian(julian_micros))


class OpType(IntEnum):
    """GoldenGate operation types (seed 002, table H-2); the value is the H record's IOType."""

    DELETE = 3
    INSERT = 5
    UPDATE = 10  # full-image update
    FIELD_COMP = 15  # compressed update: key plus changed columns (seed 001 flag 0x0F)
    TRUNCATE = 100  # (GGS)Purgedata: all rows removed
    PK_UPDATE = 115  # KeyFieldComp: before key, then after key and changed columns (0x73)
    LOB = 116  # a piece of a LONG/LOB column value (seed 001 flag 0x74)
    SEQUENCE = 132
    DDL = 160
    RECORD_FRAGMENT = 161  # continuation of a record too long for one (seed 001 flag 0xA1)
    METADATA = 170  # a table definition record (seed 002 Logdump example, IOTYPE 170)
    COMMENT = 205  # GGSComment, written by Logdump's SAVE

    @property
    def label(self) -> str:
        """The operation name Logdump prints."""
        return _OP_LABELS[self]

    @property
    def is_row_change(self) -> bool:
        """True for operations that change table rows (what Replicat applies)."""
        return self in _ROW_OPS


_OP_LABELS = {
    OpType.DELETE: "Delete",
    OpType.INSERT: "Insert",
    OpType.UPDATE: "Update",
    OpType.FIELD_COMP: "FieldComp",
    OpType.TRUNCATE: "Truncate",
    OpType.PK_UPDATE: "PKUpdate",
    OpType.LOB: "LargeObject",
    OpType.SEQUENCE: "SequenceOp",
    OpType.DDL: "DDL",
    OpType.RECORD_FRAGMENT: "RecordFragment",
    OpType.METADATA: "Metadata",
    OpType.COMMENT: "GGSComment",
}
_ROW_OPS = frozenset(
    {OpType.DELETE, OpType.INSERT, OpType.UPDATE, OpType.FIELD_COMP, OpType.PK_UPDATE,
     OpType.TRUNCATE}
)


class TransInd(IntEnum):
    """Where a record sits in its transaction (seed 002, TransInd)."""

    FIRST = 0
    MIDDLE = 1
    LAST = 2
    ONLY = 3


class ColumnKind(StrEnum):
    """How a column's value is framed in a D record (seed 001's column encodings)."""

    NUMBER = "NUMBER"  # null indicator, 2-byte length, ASCII digits
    VARCHAR2 = "VARCHAR2"  # null indicator, 2-byte length, characters
    CHAR = "CHAR"  # null indicator, value blank padded to the column width
    DATE = "DATE"  # null indicator, YYYY-MM-DD:HH24:MI:SS
    TIMESTAMP = "TIMESTAMP"  # null indicator, YYYY-MM-DD:HH24:MI:SS.NNNNNNNNN
    RAW = "RAW"  # null indicator, 2-byte length, bytes
    LONG = "LONG"  # as VARCHAR2; longer values travel as LOB pieces
    ROWID = "ROWID"  # null indicator, 2-byte length, the 18-character ROWID


@dataclass(slots=True)
class Column:
    """One column of a table definition.

    ``index`` is the ordinal written in D records (0-based); ``source_type`` is the type as
    the source database names it (``numeric(10,2)``, ``VARCHAR2(30)``) and decides how a value
    converts to and from native types.
    """

    name: str
    index: int
    kind: ColumnKind
    source_type: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    nullable: bool = True
    segcol: int | None = None


@dataclass(slots=True)
class TableDef:
    """A table definition as it travels in the trail's metadata records.

    ``key`` names the columns that identify a row (primary key, else a unique key of NOT NULL
    columns, else every column, as seed 000 describes); ``key_kind`` says which.
    ``source_tdr`` is the binary TDR the definition was read from (hex), so that a writer of
    a 12.2+ trail can give it back as read; it takes no part in comparing definitions.
    """

    schema: str
    name: str
    columns: list[Column]
    key: list[str] = field(default_factory=list)
    key_kind: str = "PRIMARY"  # PRIMARY | UNIQUE | ALL | NONE
    object_id: int | None = None
    source_tdr: str | None = field(default=None, compare=False, repr=False)

    @property
    def qualified_name(self) -> str:
        """``SCHEMA.TABLE`` as it appears in the H record."""
        return f"{self.schema}.{self.name}"

    def column(self, name: str) -> Column:
        """The column called ``name`` (exact match first, then case-insensitive)."""
        for col in self.columns:
            if col.name == name:
                return col
        lowered = name.lower()
        for col in self.columns:
            if col.name.lower() == lowered:
                return col
        raise KeyError(f"table {self.qualified_name} has no column {name!r}")

    @property
    def key_indexes(self) -> list[int]:
        """The D-record indexes of the key columns, in key order."""
        return [self.column(name).index for name in self.key]


Values = dict[int, bytes | None]
"""Column index to trail-form value (``None`` is NULL); only the columns present."""


@dataclass(slots=True)
class Change:
    """One row-level (or DDL/truncate) operation, as one trail record carries it.

    ``after`` holds the after image (insert, update, PK update); ``before`` the before image
    (the key of a delete, the old key of a PK update).  ``io_time`` is GoldenGate Julian
    microseconds of the operation at the source; ``audit_seq``/``audit_pos`` the source log
    position (AuditRBA/AuditPos).  ``text`` carries DDL text for DDL operations.
    """

    op: OpType
    table: str
    after: Values | None = None
    before: Values | None = None
    io_time: int = 0
    audit_seq: int = 0
    audit_pos: int = 0
    rowid: str | None = None
    tokens: dict[str, str] | None = None
    text: str | None = None


@dataclass(slots=True)
class Transaction:
    """A committed source transaction: its changes in order, its XID and commit CSN.

    ``changes`` may be a sequence spilled to disk for a large transaction: iterate it once,
    in order, rather than indexing it.
    """

    xid: str
    csn: int
    changes: Sequence[Change]
    commit_time: int = 0  # Julian microseconds of the commit


class TrailPosition(NamedTuple):
    """A place in a trail: file sequence number and relative byte address.

    A named tuple rather than a dataclass: readers create two per record, and a tuple is
    several times cheaper to build while ordering and comparing the same way.
    """

    seqno: int
    rba: int

    def __str__(self) -> str:
        return f"{self.seqno}:{self.rba}"

    @classmethod
    def parse(cls, text: str) -> TrailPosition:
        """Parse ``SEQNO:RBA`` (as ``--from`` takes it)."""
        seq, _, rba = text.partition(":")
        try:
            return cls(int(seq), int(rba or 0))
        except ValueError:
            raise ValueError(f"not a trail position {text!r}: expected SEQNO:RBA") from None


@dataclass(frozen=True, slots=True)
class DdlObject:
    """A DDL as ``DDL INCLUDE | EXCLUDE`` and ``DDLERROR`` judge it: the object
    (``owner.name``), its table for an index, its type and the operation, and the
    statement.  Made from a DDL record's marker text by ``trail.ddl.read_ddl``."""

    owner: str
    name: str
    object_type: str
    ddl_type: str
    statement: str
    master: str | None = None
    error: str = ""  # what the marker says went wrong (E1)

    @property
    def qualified_name(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name
