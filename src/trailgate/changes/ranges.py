"""A trail range read as whole transactions of routed changes, with their positions.

Every reader of a range (the Replicat's apply, the Data Pump, the ``trailchanges`` source)
follows one rule: a transaction belongs to the range holding its first record, and one cut
off by a crashed writer yields nothing.  A range may start in the middle of a file, after the
file's table definitions; those are found by scanning the file's start, cached per process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from trailgate.changes.ddl_rename import rename_ddl
from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TableDef, TrailPosition, datetime_from_julian
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.reader import TrailReader

__all__ = ["Pending", "TrailRange", "definitions_before", "julian_to_iso",
           "remember_definitions", "trans_ind"]


def julian_to_iso(julian: int | None) -> str | None:
    """Julian microseconds as an ISO UTC timestamp (checkpoint ``read_time``)."""
    if not julian:
        return None
    try:
        return datetime_from_julian(julian).isoformat(timespec="microseconds")
    except (ValueError, OverflowError, OSError):
        return None


# -- table definitions before a range's start ----------------------------------------------

_prefix_lock = threading.Lock()
#: Per (trail, file): known points ``(rba, definitions before rba)``, the newest last.
_prefix_cache: dict[tuple[str, int], list[tuple[int, dict[str, TableDef]]]] = {}
#: Points kept per file: a range is often read twice (the set planner reads it and
#: remembers its end, then the Python path reads it from its start), so its start must
#: stay known beside its end.
_POINTS_PER_FILE = 4
_FILES_CACHED = 64


def _known_before(key: tuple[str, int], rba: int) -> tuple[int, dict[str, TableDef]]:
    """The nearest known point at or before ``rba`` (a copy), or the file's start."""
    with _prefix_lock:
        best: tuple[int, dict[str, TableDef]] = (0, {})
        for point in _prefix_cache.get(key, ()):
            if best[0] < point[0] <= rba:
                best = point
        return best[0], dict(best[1])


def _keep(key: tuple[str, int], rba: int, tables: dict[str, TableDef]) -> None:
    """Add a known point; the file's oldest point and the least recently used file go."""
    with _prefix_lock:
        points = [p for p in _prefix_cache.pop(key, []) if p[0] != rba]
        points.append((rba, dict(tables)))
        _prefix_cache[key] = points[-_POINTS_PER_FILE:]
        if len(_prefix_cache) > _FILES_CACHED:
            _prefix_cache.pop(next(iter(_prefix_cache)))


def definitions_before(trail: str, position: TrailPosition) -> dict[str, TableDef]:
    """Definitions in ``position``'s file before it (the writer puts each table's
    definition in every file before its first change).  Cached per process and file: a
    later range of the same file scans only from the latest known point before it."""
    if position.rba == 0:
        return {}
    key = (trail, position.seqno)
    done, tables = _known_before(key, position.rba)
    if done == position.rba:
        return tables
    reader = TrailReader(trail, start=TrailPosition(position.seqno, done), single_file=False)
    pieces: list[bytes] = []
    last = done
    for pos, raw in reader.raw_records():
        if pos.seqno != position.seqno or pos.rba >= position.rba:
            break
        last = reader.position.rba
        if raw.io_type == OpType.METADATA or (pieces and raw.io_type ==
                                             OpType.RECORD_FRAGMENT):
            pieces.append(raw.data)
            if raw.continued:
                continue
            try:
                table = decode_tabledef(b"".join(pieces))
                tables[table.qualified_name] = table
            except ValueError:
                pass  # the reader of the range reports damage where it matters
        pieces = []
    if not pieces:
        _keep(key, last, tables)
    return tables


def remember_definitions(trail: str, position: TrailPosition,
                         tables: dict[str, TableDef]) -> None:
    """Record that ``tables`` are the definitions in ``position``'s file before it (a range
    read up to there): the next range, starting there, need not scan what was just read."""
    _keep((trail, position.seqno), position.rba, tables)


@dataclass(slots=True)
class Pending:
    """One transaction's kept changes, held until its last record proves it complete."""

    csn: int
    xid: str
    items: list[tuple[Change, TrailPosition, TableDef | None]] = field(default_factory=list)
    commit_time: int = 0
    start: TrailPosition | None = None  # where its first record is


class TrailRange:
    """The complete transactions starting in ``[lower, upper)`` (the module docstring's
    rule), with the router's tables only, renamed as it says: what both row forms read.

    DDL records are kept whatever their object (the router is about DML; a Replicat's DDL
    rules decide on them), unless ``ddl`` says no (a Data Pump's rules), under their own
    name; the definition written right after a DDL record is its item's definition.

    After :meth:`transactions` is exhausted, :meth:`position` gives the range's end and
    last commit (the position row)."""

    def __init__(self, trail: str, lower: TrailPosition, upper: TrailPosition | None,
                 router: Router | None = None, ddl: Callable[[Change], bool] | None = None):
        self.trail, self.lower, self.upper = trail, lower, upper
        self.router = router or Router()
        self.ddl = ddl
        self.end: TrailPosition | None = None
        self.last_commit: tuple[int, int, str] | None = None  # (julian, csn, xid)
        self._renamed: dict[int, TableDef] = {}

    def _output_def(self, table: TableDef, name: str) -> TableDef:
        if name == table.qualified_name:
            return table
        cached = self._renamed.get(id(table))
        if cached is None:
            schema, _, tname = name.rpartition(".")
            cached = self._renamed[id(table)] = replace(table, schema=schema, name=tname)
        return cached

    def transactions(self) -> Iterator[Pending]:
        """Each complete transaction with at least one kept change, in trail order."""
        upper, route = self.upper, self.router.route
        renames = any(r.target for r in self.router.rules)
        reader = TrailReader(self.trail, start=self.lower,
                             tables=definitions_before(self.trail, self.lower))
        txn: Pending | None = None
        after_ddl: int | None = None  # the item of the DDL record just read
        done: Pending | None = None  # a transaction whose last record was a DDL record:
        # held until the next record shows whether the DDL's new definition follows
        for record in reader.records():
            raw = record.raw
            beyond = upper is not None and record.position >= upper
            if raw.io_type == OpType.METADATA:
                owner = txn if txn is not None else done
                if owner is not None and after_ddl is not None and record.table_def:
                    ddl_change, pos, _ = owner.items[after_ddl]
                    defined = record.table_def  # the new definition, under the output name
                    out_name = route(defined.qualified_name)
                    if out_name is not None and out_name != defined.qualified_name:
                        defined = self._output_def(defined, out_name)
                    owner.items[after_ddl] = (ddl_change, pos, defined)
                    after_ddl = None
                    continue
                if beyond and txn is None:
                    break
                continue
            after_ddl = None
            if done is not None:
                yield done
                done = None
            if record.starts_transaction:
                if beyond:
                    break
                txn = Pending(int(raw.csn or 0), raw.xid or "", start=record.position)
            elif txn is None:
                if beyond:
                    break
                continue  # the rest of a transaction that started before this range
            change = record.change
            if change is not None and raw.io_type == OpType.DDL:
                txn.commit_time = change.io_time or txn.commit_time
                if self.ddl is None or self.ddl(change):
                    if renames:  # TABLE … TARGET: the DDL follows its DML's name
                        change = rename_ddl(change, route)
                    after_ddl = len(txn.items)
                    txn.items.append((change, record.position, None))
            elif change is not None and raw.io_type != OpType.COMMENT:
                txn.commit_time = change.io_time or txn.commit_time
                name = route(change.table)
                if name is not None:
                    tdef = record.table_def
                    if name != change.table:
                        change = replace(change, table=name)
                        tdef = self._output_def(tdef, name) if tdef is not None else None
                    txn.items.append((change, record.position, tdef))
            if record.ends_transaction:
                self.last_commit = (txn.commit_time, txn.csn, txn.xid)
                if txn.items and after_ddl is not None:
                    done = txn
                elif txn.items:
                    yield txn
                txn = None
        if done is not None:
            yield done
        self.end = upper if upper is not None else reader.position

    def position(self, with_csn: bool) -> tuple[dict[str, object], TrailPosition]:
        """The position row's JSON (end, last commit time, and its CSN/XID if asked) and
        the end."""
        end = self.end
        assert end is not None, "read the transactions first"
        info: dict[str, object] = {"seqno": end.seqno, "rba": end.rba}
        if self.last_commit is not None:
            info["read_time"] = julian_to_iso(self.last_commit[0])
            if with_csn:
                info["csn"], info["xid"] = self.last_commit[1], self.last_commit[2]
        return info, end


def trans_ind(i: int, n: int) -> int:
    """The TransInd of change ``i`` of ``n`` kept in a transaction."""
    return 3 if n == 1 else 0 if i == 0 else 2 if i == n - 1 else 1
