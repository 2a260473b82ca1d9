"""Trail codec throughput: write and decode a trail of 10-column changes.

Prints records/s and MB/s for writing and for decoding, beside reading the same file's bytes
with no decoding, measured in the same run (the machine is shared and noisy, so the ratio is
what to compare).  Aim: decoding at least 200,000 records/s on one core.

    .venv/bin/python benchmarks/trail_codec.py [--records 300000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import TrailReader, TrailWriter


def _table() -> TableDef:
    kinds = [ColumnKind.NUMBER, ColumnKind.VARCHAR2, ColumnKind.VARCHAR2, ColumnKind.NUMBER,
             ColumnKind.DATE, ColumnKind.VARCHAR2, ColumnKind.NUMBER, ColumnKind.CHAR,
             ColumnKind.TIMESTAMP, ColumnKind.VARCHAR2]
    cols = [Column(f"C{i}", i, k, k.value, length=8 if k is ColumnKind.CHAR else None)
            for i, k in enumerate(kinds)]
    return TableDef("BENCH", "ORDERS", cols, key=["C0"])


def _transactions(records: int, per_txn: int) -> list[Transaction]:
    txns = []
    for t in range(records // per_txn):
        changes = []
        for r in range(per_txn):
            n = t * per_txn + r
            changes.append(Change(OpType.INSERT, "BENCH.ORDERS", after={
                0: str(n).encode(), 1: b"customer-%d" % (n % 997), 2: b"Manchester",
                3: b"%d.%02d" % (n % 10000, n % 100), 4: b"2013-03-14:22:39:56",
                5: b"open", 6: b"42", 7: b"AB      ", 8: b"2013-03-14:22:39:56.236526000",
                9: None,
            }, io_time=212_000_000_000_000_000 + n))
        txns.append(Transaction(f"1.{t}.9", 10_000 + t, changes))
    return txns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--per-transaction", type=int, default=10)
    args = parser.parse_args()
    table = _table()
    tables = {table.qualified_name: table}
    txns = _transactions(args.records, args.per_transaction)
    n = sum(len(t.changes) for t in txns)
    with tempfile.TemporaryDirectory() as tmp:
        trail = Path(tmp) / "aa"
        start = time.perf_counter()
        with TrailWriter(trail, megabytes=2000) as writer:
            for txn in txns:
                writer.write_transaction(txn, tables)
            writer.flush()
        write_s = time.perf_counter() - start
        path = Path(tmp) / "aa000000000"
        size = path.stat().st_size

        os.sync()
        start = time.perf_counter()
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        raw_s = time.perf_counter() - start

        start = time.perf_counter()
        count = 0
        for record in TrailReader(trail).records():
            if record.change is not None:
                count += 1
        decode_s = time.perf_counter() - start
        assert count == n, (count, n)

        start = time.perf_counter()
        txn_count = sum(1 for _ in TrailReader(trail).transactions())
        txn_s = time.perf_counter() - start
        assert txn_count == len(txns)

    mb = size / 1e6
    rows = [
        ("read bytes, no decoding (reference)", n / raw_s, mb / raw_s),
        ("write (encode + fsync)", n / write_s, mb / write_s),
        ("decode records", n / decode_s, mb / decode_s),
        ("decode into transactions", n / txn_s, mb / txn_s),
    ]
    print(f"trail of {n:,} records ({args.per_transaction} per transaction, 10 columns), "
          f"{mb:.1f} MB")
    print(f"{'':38} {'records/s':>12} {'MB/s':>9} {'vs reference':>13}")
    for name, rps, mbps in rows:
        print(f"{name:38} {rps:12,.0f} {mbps:9.1f} {rps / rows[0][1]:12.3f}x")
    verdict = "meets" if n / decode_s >= 200_000 else "is below"
    print(f"decoding {verdict} the 200,000 records/s aim ({n / decode_s:,.0f}/s)")


if __name__ == "__main__":
    main()
