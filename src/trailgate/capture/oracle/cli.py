"""``trailgate capture oracle-dump``: redo logfile dumps to a trail, in one go.

For people studying their own logs: no home, group or Spark, just dump files in and a trail
out, with a summary of what was read.  The run is all or nothing: when a dump cannot be read
the trail files this run created are removed (earlier files of the trail are never touched),
so a trail that exists after the command is the whole, correct answer.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from trailgate.errors import ConfigError, SourceError, TrailgateError
from trailgate.model import Transaction

if TYPE_CHECKING:
    from trailgate.capture.oracle.rowchanges import OnUnknown

__all__ = ["add_arguments", "capture_to_trail", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dictionary", required=True, metavar="FILE",
                        help="the object dictionary (JSON; see docs/oracle-dumps.md)")
    parser.add_argument("--trail", required=True, metavar="DIR/PREFIX",
                        help="trail to write: a directory and a two-character prefix, e.g. "
                             "./dirdat/ox (a new file is always started)")
    parser.add_argument("--on-unknown", choices=("stop", "skip"), default="stop",
                        help="redo for an object or column the dictionary lacks: stop with "
                             "an error (default) or skip it with a warning")
    parser.add_argument("--megabytes", type=int, default=500,
                        help="roll over to a new trail file at this size (default 500)")
    parser.add_argument("dumps", nargs="+", metavar="DUMPFILE",
                        help="ALTER SYSTEM DUMP LOGFILE traces, in any order")


class Summary:
    """What a capture run read and wrote, for the closing table."""

    def __init__(self) -> None:
        self.files = 0
        self.records = 0
        self.written = 0
        self.rolled_back = 0
        self.open_at_end = 0
        self.ops: Counter[tuple[str, str]] = Counter()
        self.warnings: list[str] = []
        self.trail_files: list[Path] = []

    def count(self, txn: Transaction) -> None:
        self.written += 1
        for change in txn.changes:
            self.ops[(change.table, change.op.label)] += 1

    def render(self, out: TextIO) -> None:
        rows = [("dump files read", self.files), ("redo records", self.records),
                ("transactions written", self.written),
                ("transactions rolled back", self.rolled_back),
                ("transactions open at end", self.open_at_end)]
        width = max(len(r[0]) for r in rows)
        for label, value in rows:
            print(f"{label:<{width}}  {value:>10,}", file=out)
        if self.ops:
            tw = max(len("table"), *(len(t) for t, _ in self.ops))
            ow = max(len("operation"), *(len(o) for _, o in self.ops))
            print(f"\n{'table':<{tw}}  {'operation':<{ow}}  {'changes':>10}", file=out)
            for (table, op), n in sorted(self.ops.items()):
                print(f"{table:<{tw}}  {op:<{ow}}  {n:>10,}", file=out)
        for path in self.trail_files:
            print(f"\nwrote {path}", file=out)
        if self.warnings:
            print(f"\n{len(self.warnings)} warning(s); the first: {self.warnings[0]}", file=out)


def capture_to_trail(dictionary: str | Path, dumps: list[str | Path], trail: str | Path, *,
                     on_unknown: OnUnknown = "stop", megabytes: int = 500,
                     home: str | Path | None = None) -> Summary:
    """Capture ``dumps`` into ``trail``; on any error remove this run's files and re-raise."""
    from trailgate.capture.oracle import capture_oracle_dumps
    from trailgate.trail import DatabaseInfo, ProducerInfo, TrailWriter
    from trailgate.trail.header import VENDOR_ORACLE

    try:
        writer = TrailWriter(trail, megabytes=megabytes, producer=ProducerInfo(name="CAPTURE"),
                             database=DatabaseInfo(vendor=VENDOR_ORACLE), home=home)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"--trail {trail}: {exc}") from None
    first_seq = writer.position.seqno
    summary = Summary()
    try:
        capture = capture_oracle_dumps(dictionary, dumps, on_unknown=on_unknown)
        try:
            for txn in capture:
                writer.write_transaction(txn, capture.tables)
                summary.count(txn)
        finally:
            capture.close()
        writer.close()
    except BaseException:
        writer.close()
        for seq in writer.trail.sequence_numbers():
            if seq >= first_seq:
                writer.trail.file(seq).unlink(missing_ok=True)
        raise
    summary.files = len(capture.paths)
    summary.records = capture.records
    summary.rolled_back = len(capture.rolled_back)
    summary.open_at_end = len(capture.open_at_end)
    summary.warnings = list(capture.warnings)
    summary.trail_files = [writer.trail.file(s) for s in writer.trail.sequence_numbers()
                           if s >= first_seq]
    return summary


def run(args: argparse.Namespace) -> int:
    """Capture the dumps named on the command line into the trail; print the summary."""
    for dump in args.dumps:
        if not Path(dump).is_file():
            raise SourceError(f"{dump}: no such dump file")
    try:
        summary = capture_to_trail(args.dictionary, args.dumps, args.trail,
                                   on_unknown=args.on_unknown, megabytes=args.megabytes,
                                   home=args.home)
    except TrailgateError as exc:
        raise type(exc)(f"{exc}\nNothing was written to the trail {args.trail}.") from None
    summary.render(sys.stdout)
    return 0
