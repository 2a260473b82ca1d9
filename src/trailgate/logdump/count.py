"""Logdump's COUNT: records, bytes and averages per operation type and per table.

Counting reads the whole current file without moving the position, honouring the filter,
so a person can size a trail file or check what a filter selects before stepping through it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from trailgate.logdump.formats import io_type_name
from trailgate.model import OpType, TransInd
from trailgate.trail.records import RawRecord

__all__ = ["Tally", "render_count"]

_NOT_TRANSACTIONS = {OpType.METADATA, OpType.COMMENT, OpType.RECORD_FRAGMENT, OpType.LOB}


@dataclass(slots=True)
class _Bucket:
    records: int = 0
    data_bytes: int = 0
    record_bytes: int = 0

    def add(self, rec: RawRecord) -> None:
        self.records += 1
        self.data_bytes += rec.rec_length
        self.record_bytes += rec.length


@dataclass(slots=True)
class Tally:
    """Counts gathered record by record."""

    total: _Bucket = field(default_factory=_Bucket)
    by_op: dict[int, _Bucket] = field(default_factory=lambda: defaultdict(_Bucket))
    by_table: dict[str, _Bucket] = field(default_factory=lambda: defaultdict(_Bucket))
    by_table_op: dict[tuple[str, int], _Bucket] = field(
        default_factory=lambda: defaultdict(_Bucket))
    images: Counter = field(default_factory=Counter)
    transactions: int = 0

    def add(self, rec: RawRecord) -> None:
        self.total.add(rec)
        self.by_op[rec.io_type].add(rec)
        self.by_table[rec.table].add(rec)
        self.by_table_op[(rec.table, rec.io_type)].add(rec)
        self.images["Before" if rec.before_after == 0x42 else "After"] += 1
        if rec.io_type not in _NOT_TRANSACTIONS and rec.trans_ind in (TransInd.FIRST,
                                                                      TransInd.ONLY):
            self.transactions += 1


def _avg(total: int, n: int) -> int:
    return round(total / n) if n else 0


def render_count(tally: Tally, path: str, detail: bool, header_bytes: int) -> list[str]:
    t = tally.total
    lines = [
        f"LogTrail {path} has {t.records} records",
        f"{'Total Data Bytes':<24}{t.data_bytes:>12}",
        f"{'  Avg Bytes/Record':<24}{_avg(t.data_bytes, t.records):>12}",
        f"{'Total Record Bytes':<24}{t.record_bytes:>12}   (plus a {header_bytes}-byte file "
        "header)",
    ]
    for io in sorted(tally.by_op, key=lambda k: io_type_name(k)):
        lines.append(f"{io_type_name(io):<24}{tally.by_op[io].records:>12}")
    lines.append(f"{'Before Images':<24}{tally.images['Before']:>12}")
    lines.append(f"{'After Images':<24}{tally.images['After']:>12}")
    n = tally.transactions
    lines += [
        "",
        f"Average of {n} Transactions",
        f"    Bytes/Trans .....  {_avg(t.record_bytes, n):>10}",
        f"    Records/Trans ...  {_avg(t.records, n):>10}",
        "",
    ]
    width = max([len(name) for name in tally.by_table] + [5]) + 2
    lines.append(f"{'Table':<{width}}{'Records':>10}{'Data Bytes':>14}{'Avg Bytes':>12}")
    for name in sorted(tally.by_table):
        b = tally.by_table[name]
        lines.append(f"{name:<{width}}{b.records:>10}{b.data_bytes:>14}"
                     f"{_avg(b.data_bytes, b.records):>12}")
    if detail:
        for name in sorted(tally.by_table):
            b = tally.by_table[name]
            lines += ["", f"{name}", f"  {'Total Data Bytes':<22}{b.data_bytes:>12}",
                      f"  {'Avg Bytes/Record':<22}{_avg(b.data_bytes, b.records):>12}"]
            ops = sorted((io for (tbl, io) in tally.by_table_op if tbl == name),
                         key=io_type_name)
            for io in ops:
                ob = tally.by_table_op[(name, io)]
                lines.append(f"  {io_type_name(io):<22}{ob.records:>12}   "
                             f"{ob.data_bytes:>10} bytes, avg {_avg(ob.data_bytes, ob.records)}")
    return lines
