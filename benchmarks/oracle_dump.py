"""Oracle redo dump capture throughput.

Writes a dump file of single-row changes in seed 003's record layout (inserts, updates with
primary-key supplemental data, deletes; four per transaction, then a commit), then times, in
the same run: a plain line-by-line read of the file, the dump parser alone, and the whole
capture (parse + transaction assembly + trail-form values).  Times are CPU seconds of this
process (best of ``--repeat``): the machine is shared and noisy, so CPU time and the ratio to
the plain read are what to compare.

    .venv/bin/python benchmarks/oracle_dump.py [--records 200000] [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from trailgate.capture.oracle import Dictionary, DumpCapture
from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpparser import parse_dump
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid

DICTIONARY = (Path(__file__).parents[1] / "src" / "trailgate" / "capture" / "oracle"
              / "examples" / "us03_dictionary.json")


def write_dump(path: Path, records: int) -> int:
    """Write ``records`` row-change records (plus commits); return the row changes written."""
    names = [b"Jordan", b"Rebecca", b"Simon", b"Victoria", b"Katy", b"Shane"]
    with open(path, "w", encoding="latin-1") as f:
        w = DumpWriter(f, seq=0x60)
        n = 0
        txn = 0
        while n < records:
            txn += 1
            xid = Xid(1 + txn % 10, txn % 40, txn)
            for _ in range(min(4, records - n)):
                key = 10_000 + n
                slot = n % 200
                row = [encode_number(key), names[n % 6], b"Sherwood", b"M", b"Manchester",
                       b"Chemistry", encode_number(2013), encode_number(9000)]
                kind = n % 4
                if kind in (0, 1):
                    w.insert(xid, slot, row)
                elif kind == 2:
                    w.update(xid, slot, {7: encode_number(9000)}, {7: encode_number(7500)},
                             [(1, encode_number(key))])
                else:
                    w.delete(xid, slot, row)
                n += 1
            w.commit(xid, seconds=0)
        w.end()
    return n


def _time(fn, repeat: int = 1) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        count = fn()
        best = min(best, time.process_time() - start)
    return best, count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="row-change redo records")
    ap.add_argument("--keep", type=Path, help="write the dump here and keep it")
    ap.add_argument("--repeat", type=int, default=2, help="runs per step; the best counts")
    args = ap.parse_args()
    tmp = None
    if args.keep:
        path = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="trailgate-oracle-bench-")
        path = Path(tmp.name) / "bench.dmp"
    try:
        gen_s, changes = _time(lambda: write_dump(path, args.records))
        size_mb = os.path.getsize(path) / 1e6
        print(f"wrote {changes:,} row changes, {size_mb:,.1f} MB of dump text in {gen_s:.1f} s")

        def plain() -> int:
            lines = 0
            with open(path, encoding="latin-1") as f:
                for _ in f:
                    lines += 1
            return changes

        def parse_only() -> int:
            return sum(1 for rec in parse_dump(path) for c in rec.changes if c.layer == 11)

        def capture() -> int:
            cap = DumpCapture(Dictionary.load(DICTIONARY), [path])
            return sum(len(t.changes) for t in cap)

        rows = []
        for label, fn in (("plain line read", plain), ("parse dump", parse_only),
                          ("capture (transactions)", capture)):
            secs, count = _time(fn, args.repeat)
            if count != changes:
                raise SystemExit(f"{label}: counted {count} changes, expected {changes}")
            rows.append((label, secs, count / secs, size_mb / secs))
        base = rows[0][1]
        print(f"\n{'step':<24}{'CPU s':>10}{'changes/s':>14}{'MB/s':>10}{'x plain':>10}")
        for label, secs, cps, mbs in rows:
            print(f"{label:<24}{secs:>10.2f}{cps:>14,.0f}{mbs:>10.1f}{secs / base:>10.1f}")
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
