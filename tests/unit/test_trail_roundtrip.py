"""Any sequence of transactions written and read back is identical, across rollovers."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import TrailReader, TrailWriter

KINDS = [ColumnKind.NUMBER, ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.DATE,
         ColumnKind.TIMESTAMP, ColumnKind.RAW, ColumnKind.LONG, ColumnKind.ROWID]

_text = st.binary(max_size=40)
_VALUE = {
    ColumnKind.NUMBER: st.integers(-10**30, 10**30).map(lambda n: str(n).encode()),
    ColumnKind.VARCHAR2: st.text(max_size=30).map(lambda s: s.encode("utf-8")),
    ColumnKind.CHAR: st.text(alphabet="abcXYZ ", min_size=6, max_size=6).map(str.encode),
    ColumnKind.DATE: st.datetimes().map(lambda d: d.strftime("%Y-%m-%d:%H:%M:%S").encode()),
    ColumnKind.TIMESTAMP: st.datetimes().map(
        lambda d: (d.strftime("%Y-%m-%d:%H:%M:%S.") + f"{d.microsecond:06d}000").encode()),
    ColumnKind.RAW: _text,
    ColumnKind.LONG: st.one_of(_text, st.binary(min_size=65_600, max_size=70_000)),
    ColumnKind.ROWID: st.text(alphabet="ABCabc0123+/", min_size=18, max_size=18).map(str.encode),
}


@st.composite
def tables(draw) -> TableDef:
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6))
    name = draw(st.sampled_from(["T1", "T2", "ORDERS"]))
    cols = [Column(f"C{i}", i, k, k.value, length=6 if k is ColumnKind.CHAR else None)
            for i, k in enumerate(kinds)]
    return TableDef("APP", name, cols, key=["C0"])


def _values(draw, table: TableDef, indexes) -> dict[int, bytes | None]:
    out = {}
    for i in indexes:
        kind = table.columns[i].kind
        out[i] = draw(st.one_of(st.none(), _VALUE[kind]))
    return out


@st.composite
def changes(draw, table: TableDef) -> Change:
    op = draw(st.sampled_from([OpType.INSERT, OpType.FIELD_COMP, OpType.DELETE,
                               OpType.PK_UPDATE, OpType.TRUNCATE]))
    n = len(table.columns)
    all_cols = range(n)
    some = draw(st.sets(st.integers(0, n - 1), min_size=1))
    tokens = draw(st.one_of(st.none(), st.dictionaries(
        st.text("ABCDEFGH_", min_size=1, max_size=8), st.text(max_size=12), min_size=1,
        max_size=3)))
    change = Change(op=op, table=table.qualified_name, io_time=draw(st.integers(0, 2**62)),
                    audit_seq=draw(st.integers(0, 2**32 - 1)),
                    audit_pos=draw(st.integers(0, 2**64 - 1)), tokens=tokens)
    if op is OpType.INSERT:
        change.after = _values(draw, table, all_cols)
    elif op is OpType.FIELD_COMP:
        change.after = _values(draw, table, some)
    elif op is OpType.DELETE:
        change.before = _values(draw, table, [0])
    elif op is OpType.PK_UPDATE:
        change.before = _values(draw, table, [0])
        change.after = _values(draw, table, some | {0})
    return change


@st.composite
def workloads(draw):
    defs = draw(st.lists(tables(), min_size=1, max_size=3, unique_by=lambda t: t.name))
    txns = []
    for i in range(draw(st.integers(1, 6))):
        changes_ = [draw(changes(draw(st.sampled_from(defs)))) for _ in range(
            draw(st.integers(1, 5)))]
        txns.append(Transaction(xid=f"{i}.{draw(st.integers(0, 99))}.1",
                                csn=draw(st.integers(1, 10**15)), changes=changes_))
    return defs, txns


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(workloads())
def test_written_transactions_read_back_identical(workload):
    defs, txns = workload
    tables_by_name = {t.qualified_name: t for t in defs}
    with tempfile.TemporaryDirectory() as tmp:
        # 1 MiB files: the LONG values (> 65,531 bytes) and fragments force rollovers
        with TrailWriter(f"{tmp}/aa", megabytes=1, fsync=False) as writer:
            for txn in txns:
                writer.write_transaction(txn, tables_by_name)
        reader = TrailReader(f"{tmp}/aa")
        back = [rt.transaction for rt in reader.transactions()]
    assert len(back) == len(txns)
    for got, want in zip(back, txns, strict=True):
        assert (got.xid, got.csn) == (want.xid, want.csn)
        assert len(got.changes) == len(want.changes)
        for g, w in zip(got.changes, want.changes, strict=True):
            assert g == _normalise(w, tables_by_name[w.table])


def _normalise(change: Change, table: TableDef) -> Change:
    """CHAR values come back blank padded to their width."""
    def pad(values):
        if values is None:
            return None
        out = {}
        for i, v in values.items():
            col = table.columns[i]
            if v is not None and col.kind is ColumnKind.CHAR and col.length:
                v = v.ljust(col.length, b" ")
            out[i] = v
        return out

    return Change(op=change.op, table=change.table, after=pad(change.after),
                  before=pad(change.before), io_time=change.io_time,
                  audit_seq=change.audit_seq, audit_pos=change.audit_pos, rowid=change.rowid,
                  tokens=change.tokens or None, text=change.text)
