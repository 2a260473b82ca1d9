"""Random pgoutput streams for the Extract's batched path and its general path side by side.

``random_stream`` makes what a walsender would send for a random mix of transactions: mostly
one to three row changes (inserts, updates with and without old images, key changes,
deletes, NULLs, unchanged TOAST values) over several tables, with Relation messages
interleaved (some changing a table's columns), empty transactions, big ones, TRUNCATEs,
logical messages, rows of a table the rules leave out or give TOKENS, and keepalives; then
``chunks`` cuts it where a read-ahead buffer might.  ``ReplayStream`` hands the chunks to
``PgCapture`` as a ``WalStream`` hands its buffer.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PG_TYPES = {"int4": 23, "text": 25, "numeric": 1700, "bool": 16, "timestamp": 1114,
            "bytea": 17, "date": 1082}

#: oid -> (schema, name, [(column, type)], key column count); columns may grow (ALTER)
TABLES: dict[int, tuple[str, str, list[tuple[str, str]], int]] = {
    90001: ("s", "t1", [("id", "int4"), ("name", "text"), ("amount", "numeric"),
                        ("flag", "bool"), ("ts", "timestamp")], 1),
    90002: ("s", "t2", [("k1", "int4"), ("k2", "text"), ("v", "text")], 2),
    90003: ("s", "t3", [("id", "int4"), ("c2", "text"), ("c3", "bytea"), ("d", "date")], 1),
    90004: ("s", "t4", [("id", "int4"), ("v", "text")], 1),  # TOKENS: the general path
    90005: ("s", "skip", [("id", "int4"), ("v", "text")], 1),  # excluded: rows dropped
}
PARAMS = """GETTRUNCATES
TABLE s.t3, COLSEXCEPT (c2);
TABLE s.t4, TOKENS (tk_op = @GETENV('GGHEADER', 'OPTYPE'));
TABLE s.*;
TABLEEXCLUDE s.skip
"""


def _s(text: str) -> bytes:
    return text.encode() + b"\0"


def relation(oid: int, columns: list[tuple[str, str]], nkey: int) -> bytes:
    schema, name, _, _ = TABLES[oid]
    out = b"R" + struct.pack(">I", oid) + _s(schema) + _s(name) + b"d"
    out += struct.pack(">h", len(columns))
    for i, (col, typ) in enumerate(columns):
        out += bytes((1 if i < nkey else 0,)) + _s(col) + struct.pack(">Ii", PG_TYPES[typ], -1)
    return out


def _value(rng: random.Random, typ: str) -> str:
    if typ == "int4":
        return str(rng.randint(-2**31, 2**31 - 1))
    if typ == "text":
        return "".join(rng.choice("ab Z9é中😀'\\") for _ in range(rng.randint(0, 40)))
    if typ == "numeric":
        return f"{rng.randint(-10**8, 10**8)}.{rng.randint(0, 99):02d}"
    if typ == "bool":
        return rng.choice("tf")
    if typ == "timestamp":
        return (f"20{rng.randint(10, 30)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} "
                f"0{rng.randint(0, 9)}:3{rng.randint(0, 9)}:1{rng.randint(0, 9)}"
                + rng.choice(["", ".5", ".123456"]))
    if typ == "bytea":
        return "\\x" + rng.randbytes(rng.randint(0, 12)).hex()
    return f"20{rng.randint(10, 30)}-0{rng.randint(1, 9)}-2{rng.randint(0, 8)}"


def _tuple(values: list[str | bool | None]) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v is True:  # unchanged TOAST
            out += b"u"
        else:
            raw = v.encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


@dataclass
class _Gen:
    rng: random.Random
    big: tuple[int, int] = (17, 30)  # rows of a big transaction
    big_share: float = 0.03  # of the transactions
    relations: float = 0.05  # the chance of a Relation message before a row
    lsn: int = 0x1_0000_0000
    xid: int = 700
    time: int = 800_000_000_000_000
    columns: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    out: list[tuple[int, bytes | None]] = field(default_factory=list)

    def next_lsn(self) -> int:
        self.lsn += self.rng.randint(24, 400)
        return self.lsn

    def row(self, oid: int) -> bytes:
        rng, cols = self.rng, self.columns[oid]
        nkey = TABLES[oid][3]

        def image(old: bool = False) -> list[str | bool | None]:
            vals: list[str | bool | None] = []
            for i, (_, typ) in enumerate(cols):
                if i < nkey:
                    vals.append(str(rng.randint(1, 30)) if typ == "int4" else rng.choice("xy"))
                elif old and rng.random() < 0.5:
                    vals.append(None)
                else:
                    vals.append(rng.choice([None, _value(rng, typ), _value(rng, typ)]))
            return vals

        kind = rng.choice("IIUUUUD")
        head = struct.pack(">I", oid)
        if kind == "I":
            return b"I" + head + b"N" + _tuple(image())
        if kind == "D":
            old = image()
            return b"D" + head + b"K" + _tuple([v if i < nkey else None
                                                 for i, v in enumerate(old)])
        new = image()
        if rng.random() < 0.3:  # unchanged TOAST values
            new = [True if i >= nkey and rng.random() < 0.4 else v for i, v in enumerate(new)]
        old_part = b""
        choice = rng.random()
        if choice < 0.25:  # a key change: the old key
            old_part = b"K" + _tuple([v if i < nkey else None for i, v in enumerate(image())])
        elif choice < 0.35:  # REPLICA IDENTITY FULL's old row
            old_part = b"O" + _tuple(image(old=True))
        return b"U" + head + old_part + b"N" + _tuple(new)

    def transaction(self) -> None:
        rng = self.rng
        body: list[tuple[int, bytes | None]] = []
        shape = rng.random()
        big = shape < 0.04 + self.big_share
        nrows = (0 if shape < 0.04 else rng.randint(*self.big) if big
                 else rng.choice([1, 1, 1, 2, 3]))
        oids = [rng.choice([90001, 90001, 90002, 90003, 90003, 90004, 90005])
                for _ in range(nrows)]
        if rng.random() < 0.5:  # most transactions change one table
            oids = [oids[0]] * nrows if oids else []
        for oid in oids:
            if rng.random() < self.relations or oid not in self.columns:
                if oid == 90002 and oid in self.columns and rng.random() < 0.5:
                    self.columns[oid] = [*self.columns[oid], (f"x{len(self.columns[oid])}",
                                                              "text")]  # ALTER TABLE
                self.columns.setdefault(oid, list(TABLES[oid][2]))
                body.append((self.next_lsn(), relation(oid, self.columns[oid], TABLES[oid][3])))
            if rng.random() < 0.03:
                body.append((self.next_lsn(), None))  # a keepalive inside
            body.append((self.next_lsn(), self.row(oid)))
        if rng.random() < 0.03 and 90001 in self.columns:
            body.append((self.next_lsn(), b"T" + struct.pack(">ibI", 1, 0, 90001)))
        if rng.random() < 0.03:
            content = b"hello"
            body.append((self.next_lsn(), b"M" + struct.pack(">bQ", 1, self.lsn) + _s("other")
                         + struct.pack(">i", len(content)) + content))
        begin_lsn = self.next_lsn()
        commit = self.next_lsn()
        end = commit + rng.randint(8, 64)
        self.lsn = end
        self.xid += rng.randint(1, 3)
        self.time += rng.randint(1, 5000)
        ctime = self.time + (rng.randint(1, 9) if rng.random() < 0.1 else 0)
        self.out.append((begin_lsn, b"B" + struct.pack(">qqI", commit, self.time, self.xid)))
        self.out.extend(body)
        self.out.append((commit, b"C" + struct.pack(">bqqq", 0, commit, end, ctime)))
        if rng.random() < 0.05:
            self.out.append((self.lsn, None))  # a keepalive between transactions


def random_stream(seed: int, transactions: int, big: tuple[int, int] = (17, 30),
                  big_share: float = 0.03, relations: float = 0.05
                  ) -> list[tuple[int, bytes | None]]:
    """The messages of ``transactions`` random transactions, as ``(lsn, message)`` pairs
    (``None``: a keepalive); ``big_share`` of them have ``big`` rows (from, to), and a row
    comes after its table's Relation message with the chance ``relations`` (always the
    table's first)."""
    gen = _Gen(random.Random(seed), big, big_share, relations)
    for _ in range(transactions):
        gen.transaction()
    return gen.out


def chunks(items: list[tuple[int, bytes | None]], seed: int, most: int = 400
           ) -> list[list[tuple[int, bytes | None]]]:
    """``items`` cut into chunks of random sizes (one to ``most`` items)."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(items):
        n = rng.randint(1, most)
        out.append(items[i:i + n])
        i += n
    return out


class ReplayStream:
    """Hands ``PgCapture`` a list of chunks as a ``WalStream`` hands its buffer: each chunk
    one span."""

    def __init__(self, parts: list[list[tuple[int, Any]]]):
        self.parts = parts
        self.abandoned = False

    def abandon(self) -> None:
        self.abandoned = True

    def spans(self, end: int) -> Iterator[tuple[list[tuple[int, Any]], int, int]]:
        for part in self.parts:
            yield part, 0, len(part)

    def confirm(self, lsn: int) -> None:
        pass
