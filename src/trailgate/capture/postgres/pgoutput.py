"""Decode the ``pgoutput`` logical replication messages (protocol version 1), one class each.

The formats are PostgreSQL's "Logical Replication Message Formats".  Decoding is pure Python
and stateless: ``decode(data)`` turns one message (one row of
``pg_logical_slot_peek_binary_changes``) into one of the message classes below.  Tuple values
stay as PostgreSQL's text output; ``types.py`` turns them into trail form.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from trailgate.errors import SourceError

__all__ = [
    "PG_EPOCH_UNIX_MICROS",
    "UNCHANGED_TOAST",
    "Begin",
    "Commit",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Message",
    "Origin",
    "Relation",
    "RelationColumn",
    "Truncate",
    "TupleValue",
    "TypeMessage",
    "Update",
    "decode",
    "format_lsn",
    "parse_lsn",
    "quote_ident",
]

#: 2000-01-01 00:00:00 UTC (PostgreSQL's timestamp epoch) in Unix microseconds.
PG_EPOCH_UNIX_MICROS = 946_684_800_000_000


class _UnchangedToast:
    """Marks a TOASTed value that did not change and was not sent ('u' in TupleData)."""

    _instance: ClassVar[_UnchangedToast | None] = None

    def __new__(cls) -> _UnchangedToast:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST = _UnchangedToast()

TupleValue = str | None | _UnchangedToast
"""A column value in a tuple: its text, ``None`` for NULL, or ``UNCHANGED_TOAST``."""


def quote_ident(name: str) -> str:
    """A quoted identifier: ``publication_names`` and replication commands take
    identifiers, and quoting keeps case and commas."""
    return '"' + name.replace('"', '""') + '"'


def format_lsn(lsn: int) -> str:
    """``X/Y`` text of an LSN, as PostgreSQL writes it."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """The integer value of an ``X/Y`` LSN."""
    hi, _, lo = text.partition("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class _Reader:
    """A cursor over one message's bytes."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 1  # byte 0 is the message type

    def _unpack(self, fmt: struct.Struct) -> int:
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def int8(self) -> int:
        return self._unpack(_I8)

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def uint32(self) -> int:
        return self._unpack(_U32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def byte1(self) -> str:
        ch = chr(self.data[self.pos])
        self.pos += 1
        return ch

    def string(self) -> str:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return text

    def raw(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        if len(chunk) != n:
            raise struct.error("message ends inside a value")
        self.pos += n
        return bytes(chunk)

    def tuple_data(self) -> list[TupleValue]:
        values: list[TupleValue] = []
        for _ in range(self.int16()):
            kind = self.byte1()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind == "t":
                values.append(self.raw(self.int32()).decode("utf-8"))
            else:  # 'b' needs the binary option, which trailgate never asks for
                raise SourceError(f"pgoutput tuple column of kind {kind!r} is not supported "
                                  "(trailgate reads text output: do not set 'binary')")
        return values


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
#: The two messages every transaction has, read in one unpack (proto_version 1 sizes).
_BEGIN = struct.Struct(">qqI")
_COMMIT = struct.Struct(">bqqq")
_BEGIN_SIZE, _COMMIT_SIZE = 1 + _BEGIN.size, 1 + _COMMIT.size


@dataclass(slots=True)
class Begin:
    """'B': a transaction starts; ``final_lsn`` is its commit LSN."""

    final_lsn: int
    commit_time: int  # microseconds since 2000-01-01 UTC
    xid: int


@dataclass(slots=True)
class Commit:
    """'C': the transaction ends; ``end_lsn`` is where the next one begins."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int


@dataclass(slots=True)
class Origin:
    """'O': the transaction was replicated from elsewhere (a replication origin)."""

    commit_lsn: int
    name: str


@dataclass(slots=True)
class RelationColumn:
    """One column of a Relation message."""

    name: str
    type_oid: int
    typmod: int
    is_key: bool


@dataclass(slots=True)
class Relation:
    """'R': a table's shape as the following changes use it."""

    oid: int
    namespace: str  # "" means pg_catalog
    name: str
    replica_identity: str  # d(efault), n(othing), f(ull), i(ndex)
    columns: list[RelationColumn]


@dataclass(slots=True)
class TypeMessage:
    """'Y': a non-built-in data type used by a following Relation."""

    oid: int
    namespace: str
    name: str


@dataclass(slots=True)
class Insert:
    """'I': a new row."""

    relation_oid: int
    new: list[TupleValue]


@dataclass(slots=True)
class Update:
    """'U': a changed row; ``old`` is the key ('K') or whole old row ('O'), when sent."""

    relation_oid: int
    old_kind: str | None  # 'K', 'O' or None
    old: list[TupleValue] | None
    new: list[TupleValue]


@dataclass(slots=True)
class Delete:
    """'D': a removed row; ``old`` is its key ('K') or whole row ('O')."""

    relation_oid: int
    old_kind: str
    old: list[TupleValue]


@dataclass(slots=True)
class Truncate:
    """'T': the listed tables were truncated."""

    options: int  # 1 CASCADE, 2 RESTART IDENTITY
    relation_oids: list[int]


@dataclass(slots=True)
class LogicalMessage:
    """'M': a ``pg_logical_emit_message`` message (only with the ``messages`` option)."""

    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Message = (Begin | Commit | Origin | Relation | TypeMessage | Insert | Update | Delete
           | Truncate | LogicalMessage)


def _begin(r: _Reader) -> Begin:
    return Begin(final_lsn=r.int64(), commit_time=r.int64(), xid=r.uint32())


def _commit(r: _Reader) -> Commit:
    return Commit(flags=r.int8(), commit_lsn=r.int64(), end_lsn=r.int64(),
                  commit_time=r.int64())


def _origin(r: _Reader) -> Origin:
    return Origin(commit_lsn=r.int64(), name=r.string())


def _relation(r: _Reader) -> Relation:
    oid, namespace, name, ident = r.uint32(), r.string(), r.string(), r.byte1()
    columns = []
    for _ in range(r.int16()):
        flags = r.int8()
        columns.append(RelationColumn(name=r.string(), type_oid=r.uint32(), typmod=r.int32(),
                                      is_key=bool(flags & 1)))
    return Relation(oid, namespace, name, ident, columns)


def _type(r: _Reader) -> TypeMessage:
    return TypeMessage(oid=r.uint32(), namespace=r.string(), name=r.string())


def _insert(r: _Reader) -> Insert:
    oid = r.uint32()
    marker = r.byte1()
    if marker != "N":
        raise struct.error(f"Insert expects 'N', found {marker!r}")
    return Insert(oid, r.tuple_data())


def _update(r: _Reader) -> Update:
    oid = r.uint32()
    marker = r.byte1()
    old_kind = old = None
    if marker in ("K", "O"):
        old_kind, old = marker, r.tuple_data()
        marker = r.byte1()
    if marker != "N":
        raise struct.error(f"Update expects 'N', found {marker!r}")
    return Update(oid, old_kind, old, r.tuple_data())


def _delete(r: _Reader) -> Delete:
    oid = r.uint32()
    marker = r.byte1()
    if marker not in ("K", "O"):
        raise struct.error(f"Delete expects 'K' or 'O', found {marker!r}")
    return Delete(oid, marker, r.tuple_data())


def _truncate(r: _Reader) -> Truncate:
    count = r.int32()
    options = r.int8()
    return Truncate(options, [r.uint32() for _ in range(count)])


def _message(r: _Reader) -> LogicalMessage:
    flags = r.int8()
    lsn = r.int64()
    prefix = r.string()
    return LogicalMessage(bool(flags & 1), lsn, prefix, r.raw(r.int32()))


_DECODERS: dict[str, Callable[[_Reader], Message]] = {
    "B": _begin, "C": _commit, "O": _origin, "R": _relation, "Y": _type, "I": _insert,
    "U": _update, "D": _delete, "T": _truncate, "M": _message,
}


def decode(data: bytes | memoryview, *, lsn: int | None = None) -> Message:
    """Decode one pgoutput message; ``lsn`` only serves the error message."""
    size = len(data)
    if size == _BEGIN_SIZE and data[0] == 0x42:  # 'B', as _begin reads it
        return Begin(*_BEGIN.unpack_from(data, 1))
    if size == _COMMIT_SIZE and data[0] == 0x43:  # 'C', as _commit reads it
        return Commit(*_COMMIT.unpack_from(data, 1))
    data = bytes(data)
    where = f" at LSN {format_lsn(lsn)}" if lsn is not None else ""
    if not data:
        raise SourceError(f"empty pgoutput message{where}")
    decoder = _DECODERS.get(chr(data[0]))
    if decoder is None:
        raise SourceError(
            f"unknown pgoutput message type {chr(data[0])!r}{where}: trailgate reads "
            "proto_version 1 without streaming; check the slot uses the pgoutput plugin")
    try:
        return decoder(_Reader(data))
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise SourceError(f"malformed pgoutput {chr(data[0])!r} message{where}: {exc} "
                          f"(first bytes {data[:32].hex()})") from None
