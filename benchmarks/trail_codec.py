"""Trail codec throughput: write and decode a trail of 10-column changes.

Prints records/s and MB/s for writing and for decoding, beside reading the same file's bytes
with no decoding, measured in the same run (the machine is shared and noisy, so the ratio is
what to compare).  Each figure is given by wall clock and by CPU time of this process (the
codec is single-threaded, so CPU time is "on one core" even when other work shares the
machine).  Aim: decoding at least 200,000 records/s on one core.

    .venv/bin/python benchmarks/trail_codec.py [--records 300000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import TrailReader, TrailWriter, _accel


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


class _Timer:
    """Wall-clock and process CPU seconds of a block."""

    def __enter__(self) -> _Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


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
        with _Timer() as write, TrailWriter(trail, megabytes=2000) as writer:
            for txn in txns:
                writer.write_transaction(txn, tables)
            writer.flush()
        path = Path(tmp) / "aa000000000"
        size = path.stat().st_size
        os.sync()
        with _Timer() as raw, open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        with _Timer() as decode:
            count = sum(1 for r in TrailReader(trail).records() if r.change is not None)
        assert count == n, (count, n)
        with _Timer() as txn_timer:
            txn_count = sum(1 for _ in TrailReader(trail).transactions())
        assert txn_count == len(txns)

    mb = size / 1e6
    rows = [
        ("read bytes, no decoding (reference)", raw),
        ("write (encode + fsync)", write),
        ("decode records", decode),
        ("decode into transactions", txn_timer),
    ]
    print(f"trail of {n:,} records ({args.per_transaction} per transaction, 10 columns), "
          f"{mb:.1f} MB; accelerator: {'C' if _accel.speedups else 'pure Python'}")
    print(f"{'':38} {'records/s':>12} {'MB/s':>8} {'vs ref':>8} {'records/s (CPU)':>16}")
    ref = n / raw.wall
    for name, t in rows:
        print(f"{name:38} {n / t.wall:12,.0f} {mb / t.wall:8.1f} {n / t.wall / ref:7.4f}x "
              f"{n / max(t.cpu, 1e-9):16,.0f}")
    cpu_rate = n / decode.cpu
    verdict = "meets" if cpu_rate >= 200_000 else "is below"
    print(f"decoding on one core {verdict} the 200,000 records/s aim ({cpu_rate:,.0f}/s CPU time; "
          f"{n / decode.wall:,.0f}/s wall clock at load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
