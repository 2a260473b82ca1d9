"""Trail codec throughput per format: write and decode a trail of 10-column changes in the
11.2 format, the 11.2 format encrypted (ENCRYPTTRAIL AES256) and the 12c+ formats (FORMAT
RELEASE 12.1, 19.1 big-endian, 21.1 little-endian).

Prints records/s for encoding (write + fsync) and decoding (records, and whole transactions)
for each format, beside reading the same file's bytes with no decoding, all measured in the
same run (the machine is shared and noisy, so the ratios are what to compare).  Each figure
is given by wall clock and by CPU time of this process (the codec is single-threaded).
Aims: decoding the 11.2 format at 200,000 records/s on one core; each 12c+ format's decoder
within 20% of the 11.2 decoder's rate; encrypted writing and decoding at 0.7x the plain
11.2 rates or better.

    .venv/bin/python benchmarks/trail_codec.py [--records 200000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import TrailReader, TrailWriter, _accel
from trailgate.trail.keys import ENCKEYS_FILE, add_key
from trailgate.trail.release import DEFAULT_FORMAT, TrailFormat, parse_release
from trailgate.trail.release12 import decoder as release12_decoder

FORMATS = [DEFAULT_FORMAT, parse_release("12.1"), parse_release("19.1"),
           parse_release("21.1", "little")]


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


def _measure(fmt: TrailFormat, txns: list[Transaction], tables: dict[str, TableDef],
             n: int, tmp: str, encrypt: str | None = None) -> dict[str, _Timer | float]:
    trail = (Path(tmp) / (fmt.release.replace(".", "_") + (encrypt or ""))
             / f"a{fmt.byte_order[0]}")
    with _Timer() as write, TrailWriter(trail, megabytes=2000, format=fmt, encrypt=encrypt,
                                        key_name="BENCH" if encrypt else None) as writer:
        for txn in txns:
            writer.write_transaction(txn, tables)
        writer.flush()
    path = trail.parent / f"{trail.name}000000000"
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
    return {"write": write, "raw": raw, "decode": decode, "transactions": txn_timer,
            "mb": path.stat().st_size / 1e6}


def _best(runs: list[dict[str, _Timer | float]]) -> dict[str, _Timer | float]:
    """Per measure, the run with the least CPU time (its wall time with it)."""
    out: dict[str, _Timer | float] = dict(runs[0])
    for key in ("write", "raw", "decode", "transactions"):
        out[key] = min((r[key] for r in runs), key=lambda t: t.cpu)  # type: ignore[union-attr]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--per-transaction", type=int, default=10)
    args = parser.parse_args()
    table = _table()
    tables = {table.qualified_name: table}
    txns = _transactions(args.records, args.per_transaction)
    n = sum(len(t.changes) for t in txns)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(2):  # the homes of the encrypted trails below
            add_key(Path(tmp) / f"s{i}" / ENCKEYS_FILE, "BENCH")
        # plain and encrypted 11.2 side by side, twice, the better of each kept: the
        # machine is shared, and the ratio is what is compared
        pairs = [(_measure(DEFAULT_FORMAT, txns, tables, n, f"{tmp}/p{i}"),
                  _measure(DEFAULT_FORMAT, txns, tables, n, f"{tmp}/s{i}", encrypt="AES256"))
                 for i in range(2)]
        plain_best, sealed = (_best([p[k] for p in pairs]) for k in (0, 1))
        results = {fmt: plain_best if fmt == DEFAULT_FORMAT else
                   _measure(fmt, txns, tables, n, tmp) for fmt in FORMATS}
    c12 = "C" if release12_decoder._c is not None else "pure Python"
    print(f"trail of {n:,} records ({args.per_transaction} per transaction, 10 columns); "
          f"accelerators: 11.2 {'C' if _accel.speedups else 'pure Python'}, 12c+ {c12}")
    print(f"{'format':<28} {'MB':>6} {'encode/s':>10} {'decode/s':>10} {'txns: rec/s':>12} "
          f"{'decode/s CPU':>13} {'vs 11.2 CPU':>12}")
    base = n / results[DEFAULT_FORMAT]["decode"].cpu  # type: ignore[union-attr]
    for fmt, r in results.items():
        write, decode, txn_t = r["write"], r["decode"], r["transactions"]
        cpu_rate = n / max(decode.cpu, 1e-9)  # type: ignore[union-attr]
        label = f"{fmt.release} {fmt.byte_order}-endian (level {fmt.level})"
        print(f"{label:<28} {r['mb']:6.1f} {n / write.wall:10,.0f} "  # type: ignore[union-attr]
              f"{n / decode.wall:10,.0f} {n / txn_t.wall:12,.0f} {cpu_rate:13,.0f} "  # type: ignore[union-attr]
              f"{cpu_rate / base:11.2f}x")
    plain = results[DEFAULT_FORMAT]
    write, decode, txn_t = sealed["write"], sealed["decode"], sealed["transactions"]
    label = "11.2 encrypted (AES256-GCM)"
    print(f"{label:<28} {sealed['mb']:6.1f} {n / write.wall:10,.0f} "  # type: ignore[union-attr]
          f"{n / decode.wall:10,.0f} {n / txn_t.wall:12,.0f} "  # type: ignore[union-attr]
          f"{n / decode.cpu:13,.0f} "  # type: ignore[union-attr]
          f"{plain['decode'].cpu / decode.cpu:11.2f}x")  # type: ignore[union-attr]
    ratios = {
        "write (wall)": plain["write"].wall / write.wall,  # type: ignore[union-attr]
        "write (CPU)": plain["write"].cpu / write.cpu,  # type: ignore[union-attr]
        "decode (wall)": plain["decode"].wall / decode.wall,  # type: ignore[union-attr]
        "decode (CPU)": plain["decode"].cpu / decode.cpu,  # type: ignore[union-attr]
        "transactions (CPU)": plain["transactions"].cpu / txn_t.cpu,  # type: ignore[union-attr]
    }
    cpu = [v for k, v in ratios.items() if "CPU" in k]
    print("encrypted / plain 11.2 rates: " + ", ".join(f"{k} {v:.2f}x"
                                                      for k, v in ratios.items())
          + f"; aim 0.70x (CPU, the codec's own cost; wall time follows the machine's load): "
          f"{'met' if min(cpu) >= 0.7 else 'missed'}")
    raw = results[DEFAULT_FORMAT]["raw"]
    print(f"reading the 11.2 file's bytes with no decoding (reference): "
          f"{n / raw.wall:,.0f} records/s")  # type: ignore[union-attr]
    worst = min(n / results[f]["decode"].cpu / base for f in FORMATS[1:])  # type: ignore[union-attr]
    verdict = "meets" if worst >= 0.8 else "misses"
    print(f"the slowest 12c+ decoder runs at {worst:.2f}x the 11.2 decoder's CPU rate: it "
          f"{verdict} the aim (within 20%); 11.2 decoding {base:,.0f} records/s on one core "
          f"(aim 200,000; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
