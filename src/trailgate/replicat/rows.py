"""A trail range as *change rows* in trail form: what Replicat and Data Pump stream.

The ``trail`` source's rows (docs/spark.md) show values as text keyed by column name, which
is right for SQL but loses what a Replicat or a pump needs: the exact trail-form bytes, the
table definitions (keys, kinds, indexes) and the record positions.  These rows are the
``change_rows`` schema the ``trail`` sink already consumes, plus:

* ``seqno``/``rba``: the record's trail position (trail order; the apply layer names it);
* ``trans_ind``, ``commit_time`` (Julian micros of the transaction's last record);
* ``key_hash``: CRC-32 of the apply planner's :func:`partition_key` (the row's table and
  source key), so Spark can partition a batch by key without decoding anything;
* ``single``: the change is a PK update, truncate or DDL (the batch must stay whole).

Rows follow the trail source's range rule (a transaction belongs to the range holding its
first record; one cut off by a crashed writer yields nothing).  A table definition row comes
before each table's first change in a range (a range may start in the middle of a file, after
the file's definitions: those are found by scanning the file's start, cached per process).
A position row ends every range: the range's end, the last commit time and CSN/XID.

Pure pyarrow, no pyspark: runs in Spark's Python workers and in tests.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pyarrow as pa

from trailgate.apply.planner import partition_key
from trailgate.model import (
    Change,
    OpType,
    TableDef,
    TrailPosition,
    unix_micros_from_julian,
)
from trailgate.params.names import find_map, target_name
from trailgate.spark.change_rows import (
    CHANGE_ARROW_SCHEMA,
    CHANGE_SCHEMA_DDL,
    ChangeRowBuilder,
)
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.reader import TrailReader

__all__ = [
    "EXTRA_FIELDS",
    "ROW_ARROW_SCHEMA",
    "ROW_SCHEMA_DDL",
    "Router",
    "definitions_before",
    "julian_to_iso",
    "key_hash",
    "read_change_rows",
    "remember_definitions",
]

_SINGLE = frozenset({OpType.PK_UPDATE, OpType.TRUNCATE, OpType.DDL})
EXTRA_FIELDS = [
    pa.field("seqno", pa.int64()), pa.field("rba", pa.int64()),
    pa.field("trans_ind", pa.int32()), pa.field("commit_time", pa.int64()),
    pa.field("key_hash", pa.int64()), pa.field("single", pa.bool_()),
]
ROW_ARROW_SCHEMA = pa.schema(list(CHANGE_ARROW_SCHEMA) + EXTRA_FIELDS)
ROW_SCHEMA_DDL = (CHANGE_SCHEMA_DDL + ", seqno long, rba long, trans_ind int, "
                  "commit_time long, key_hash long, single boolean")


def key_hash(change: Change, table: TableDef | None) -> int:
    """The stable hash of the row a change touches (same key: same hash, in any process)."""
    return zlib.crc32(repr(partition_key(change, table)).encode("utf-8", "surrogatepass"))


def julian_to_iso(julian: int | None) -> str | None:
    """Julian microseconds as an ISO UTC timestamp (checkpoint ``read_time``)."""
    if not julian:
        return None
    try:
        micros = unix_micros_from_julian(julian)
        return datetime.fromtimestamp(micros / 1e6, UTC).isoformat(timespec="microseconds")
    except (ValueError, OverflowError, OSError):
        return None


@dataclass(frozen=True, slots=True)
class _Rule:
    source: str
    target: str | None


@dataclass(frozen=True, slots=True)
class Router:
    """Which tables a range yields and under which name: TABLE/MAP patterns (exact names
    win over wildcards), exclusions, and an optional TARGET rename (a pump's ``TABLE src,
    TARGET tgt``).  No rules: every table, unchanged."""

    rules: tuple[_Rule, ...] = ()
    excludes: tuple[str, ...] = ()
    _cache: dict[str, str | None] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, rules: list[tuple[str, str | None]], excludes: list[str]) -> Router:
        return cls(tuple(_Rule(s, t) for s, t in rules), tuple(excludes))

    def route(self, table: str) -> str | None:
        """The output name of ``table``, or None to leave it out."""
        if not self.rules:
            return table
        if table in self._cache:
            return self._cache[table]
        spec = find_map(self.rules, table, self.excludes)  # type: ignore[arg-type]
        out = None
        if spec is not None:
            out = table if not spec.target else target_name(spec, table)  # type: ignore[arg-type]
        self._cache[table] = out
        return out


# -- table definitions before a range's start ----------------------------------------------

_prefix_lock = threading.Lock()
_prefix_cache: dict[tuple[str, int], tuple[int, dict[str, TableDef]]] = {}


def definitions_before(trail: str, position: TrailPosition) -> dict[str, TableDef]:
    """Definitions in ``position``'s file before it (the writer puts each table's
    definition in every file before its first change).  Cached per process and file: a
    later range of the same file scans only from where the last scan stopped."""
    if position.rba == 0:
        return {}
    key = (trail, position.seqno)
    with _prefix_lock:
        done, tables = _prefix_cache.get(key, (0, {}))
        if done > position.rba:
            done, tables = 0, {}
        tables = dict(tables)
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
        with _prefix_lock:
            _prefix_cache[key] = (last, dict(tables))
            if len(_prefix_cache) > 64:
                _prefix_cache.pop(next(iter(_prefix_cache)))
    return tables


def remember_definitions(trail: str, position: TrailPosition,
                         tables: dict[str, TableDef]) -> None:
    """Record that ``tables`` are the definitions in ``position``'s file before it (a range
    read up to there): the next range, starting there, need not scan what was just read."""
    key = (trail, position.seqno)
    with _prefix_lock:
        done, _ = _prefix_cache.get(key, (0, {}))
        if position.rba >= done:
            _prefix_cache[key] = (position.rba, dict(tables))
            if len(_prefix_cache) > 64:
                _prefix_cache.pop(next(iter(_prefix_cache)))


# -- reading ------------------------------------------------------------------------------

class _Builder:
    """Change rows plus the extra columns, as Arrow batches."""

    def __init__(self) -> None:
        self.rows = ChangeRowBuilder()
        self.extra: dict[str, list[object]] = {f.name: [] for f in EXTRA_FIELDS}

    def __len__(self) -> int:
        return len(self.rows)

    def _extra(self, seqno: int, rba: int, ind: int, commit: int | None, khash: int | None,
               single: bool) -> None:
        e = self.extra
        e["seqno"].append(seqno)
        e["rba"].append(rba)
        e["trans_ind"].append(ind)
        e["commit_time"].append(commit)
        e["key_hash"].append(khash)
        e["single"].append(single)

    def table(self, table: TableDef, position: TrailPosition) -> None:
        self.rows.add_table(table)
        self._extra(position.seqno, position.rba, 3, None, None, False)

    def change(self, change: Change, csn: int, xid: str, last: bool, position: TrailPosition,
               ind: int, commit: int, khash: int | None) -> None:
        self.rows.add_change(change, csn, xid, last)
        self._extra(position.seqno, position.rba, ind, commit, khash, change.op in _SINGLE)

    def position(self, data: dict[str, object], position: TrailPosition) -> None:
        self.rows.add_position(data)
        self._extra(position.seqno, position.rba, 3, None, None, False)

    def take(self) -> pa.RecordBatch:
        batch = self.rows.take()
        arrays = list(batch.columns) + [pa.array(self.extra[f.name], f.type)
                                        for f in EXTRA_FIELDS]
        self.extra = {f.name: [] for f in EXTRA_FIELDS}
        return pa.RecordBatch.from_arrays(arrays, schema=ROW_ARROW_SCHEMA)


@dataclass(slots=True)
class Pending:
    """One transaction's kept changes, held until its last record proves it complete."""

    csn: int
    xid: str
    items: list[tuple[Change, TrailPosition, TableDef | None]] = field(default_factory=list)
    commit_time: int = 0


class TrailRange:
    """The complete transactions starting in ``[lower, upper)`` (the module docstring's
    rule), with the router's tables only, renamed as it says: what both row forms read.

    After :meth:`transactions` is exhausted, :meth:`position` gives the range's end and
    last commit (the position row)."""

    def __init__(self, trail: str, lower: TrailPosition, upper: TrailPosition | None,
                 router: Router | None = None):
        self.trail, self.lower, self.upper = trail, lower, upper
        self.router = router or Router()
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
        reader = TrailReader(self.trail, start=self.lower,
                             tables=definitions_before(self.trail, self.lower))
        txn: Pending | None = None
        for record in reader.records():
            raw = record.raw
            beyond = upper is not None and record.position >= upper
            if raw.io_type == OpType.METADATA:
                if beyond and txn is None:
                    break
                continue
            if record.starts_transaction:
                if beyond:
                    break
                txn = Pending(int(raw.csn or 0), raw.xid or "")
            elif txn is None:
                if beyond:
                    break
                continue  # the rest of a transaction that started before this range
            change = record.change
            if change is not None and raw.io_type != OpType.COMMENT:
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
                if txn.items:
                    yield txn
                txn = None
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


def read_change_rows(trail: str, lower: TrailPosition, upper: TrailPosition | None, *,
                     router: Router | None = None, hashes: bool = False,
                     batch_rows: int = 10_000) -> Iterator[pa.RecordBatch]:
    """Change rows of the transactions starting in ``[lower, upper)``; see the module
    docstring.  ``hashes`` fills ``key_hash`` (Replicat)."""
    span = TrailRange(trail, lower, upper, router)
    out = _Builder()
    emitted: dict[str, TableDef] = {}  # output name -> definition already sent
    for txn in span.transactions():
        n = len(txn.items)
        for i, (change, pos, tdef) in enumerate(txn.items):
            name = change.table
            if tdef is not None and emitted.get(name) != tdef:
                out.table(tdef, pos)
                emitted[name] = tdef
            khash = key_hash(change, tdef) if hashes else None
            out.change(change, txn.csn, txn.xid, i == n - 1, pos, trans_ind(i, n),
                       txn.commit_time, khash)
        if len(out) >= batch_rows:
            yield out.take()
    info, end = span.position(hashes)
    out.position(info, end)
    yield out.take()


def position_info(text: str) -> dict[str, object]:
    """A position row's JSON."""
    return json.loads(text)
