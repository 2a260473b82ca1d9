"""The Extract driver's own work on a stream, without a server: a pgoutput stream shaped like
an ``apply_pg`` preset, replayed in this process through what the trail streamer's read does
with it — ``PgCapture.read_batched`` (the C batches and the general path), the change rows
as columns, ``TrailAppender`` writing the trail — timed by this thread's CPU.

    ./dev bench extract_replay [--shape mixed|update1|update1-live|update100-live] [--repeat 5]

* ``mixed``: 1,000 transactions of 100 inserts into ``bench.orders``, then 200 of 100
  updates and 100 of 100 key-only deletes (130,000 changes), read in one go in chunks of
  5,000 messages (the stream reader's largest);
* ``update1``: 20,000 one-row updates, read in one go;
* ``update1-live``: the same, 13 transactions a read (what a live stream at a few thousand
  transactions a second gives): the fixed cost of a read shows;
* ``update100-live``: 1,000 transactions of 100 updates, 10 transactions a read (a live
  ``update100`` round's reads).

It prints the CPU microseconds per change of each round and a digest of the trail's records
(the same for every code that writes the same bytes).  What it leaves out is the stream's
reader thread (libpq, the socket), the waits between the threads and the walsender:
``extract_txns`` measures those with a server.  Where the numbers are used:
docs/performance.md, "The Extract driver's CPU per change".
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:  # a PYTHONPATH given first (another checkout) wins
    sys.path.append(str(ROOT / "src"))

import trailgate  # noqa: E402
from trailgate.capture.postgres import pgoutput as pgo  # noqa: E402
from trailgate.capture.postgres.capture import PgCapture  # noqa: E402
from trailgate.capture.postgres.rows import build_relation  # noqa: E402
from trailgate.capture.postgres.types import classify  # noqa: E402
from trailgate.changes.change_rows import ColumnRowBuilder  # noqa: E402
from trailgate.extract.postgres.source import SourceOptions, _Emitter, _rows  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402
from trailgate.spark.trail_sink import SinkOptions, TrailAppender  # noqa: E402
from trailgate.trail.reader import record_bytes  # noqa: E402

OID = 16400
#: apply_pg's bench.orders: (name, type oid, type as format_type names it)
COLUMNS = [("id", 20, "bigint"), ("customer", 25, "text"), ("amount", 1700, "numeric(12,2)"),
           ("created", 1184, "timestamp with time zone"), ("note", 25, "text")]
Item = tuple[int, Any]


def _tuple(values: list[str | None]) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        else:
            raw = value.encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def _row(key: int, updated: bool = False) -> list[str | None]:
    note = "upd" if updated else hashlib.md5(str(key).encode()).hexdigest()
    return [str(key), f"customer {key}", f"{key * 1.25:.2f}", "2026-11-28 15:30:00.123456+00",
            note]


class _Stream:
    """The messages of whole transactions, with their LSNs, as a walsender sends them."""

    def __init__(self) -> None:
        self.lsn, self.xid, self.time = 0x1_0000_0000, 700, 817_000_000_000_000
        self.items: list[Item] = []

    def _next(self) -> int:
        self.lsn += 120
        return self.lsn

    def transaction(self, messages: list[bytes]) -> None:
        begin = self._next()
        body = [(self._next(), m) for m in messages]
        commit = self._next()
        end = commit + 40
        self.lsn, self.xid, self.time = end, self.xid + 1, self.time + 1000
        self.items.append((begin, b"B" + struct.pack(">qqI", commit, self.time, self.xid)))
        self.items.extend(body)
        self.items.append((commit, b"C" + struct.pack(">bqqq", 0, commit, end, self.time)))


def stream(shape: str) -> list[Item]:
    """The preset's messages (module docstring)."""
    out, head = _Stream(), struct.pack(">I", OID)
    if shape == "mixed":
        for t in range(1000):
            out.transaction([b"I" + head + b"N" + _tuple(_row(t * 100 + k + 1))
                             for k in range(100)])
        for t in range(200):
            out.transaction([b"U" + head + b"N" + _tuple(_row(t * 100 + k + 1, True))
                             for k in range(100)])
        for t in range(100):
            out.transaction([b"D" + head + b"K" + _tuple([str(t * 100 + k + 1), None, None,
                                                           None, None]) for k in range(100)])
    elif shape == "update100-live":
        for t in range(1000):
            out.transaction([b"U" + head + b"N" + _tuple(_row(t * 100 + k + 1, True))
                             for k in range(100)])
    else:
        for t in range(20_000):
            out.transaction([b"U" + head + b"N" + _tuple(_row(t + 1, True))])
    return out.items


class _Replay:
    """Hands the capture its chunks as a ``WalStream`` hands its buffer."""

    def __init__(self, parts: list[list[Item]]):
        self.parts = parts
        self.abandoned = False

    def abandon(self) -> None:
        self.abandoned = True

    def spans(self, end: int) -> Iterator[tuple[list[Item], int, int]]:
        for part in self.parts:
            yield part, 0, len(part)

    def confirm(self, lsn: int) -> None:
        pass


def _options(work: Path) -> SourceOptions:
    home = Home(work / "gg").create()
    home.add_group(GroupInfo("XR", "EXTRACT", "TRANLOG"))
    home.add_trail("XR", TrailInfo("./dirdat/aa", megabytes=500))
    (home.dirprm / "xr.prm").write_text("EXTRACT XR\nSOURCEDB host=/nonexistent dbname=none\n"
                                        "EXTTRAIL ./dirdat/aa\nTABLE bench.*;\n")
    return SourceOptions.parse({"home": str(home.path), "group": "XR"})


def one_round(opts: SourceOptions, items: list[Item], reads: list[list[Item]], work: Path,
              n: int) -> tuple[float, Path]:
    """CPU seconds of writing ``reads`` (each a read of whole transactions) to a new trail."""
    emitter = _Emitter(opts.config)
    cap = PgCapture("host=/nonexistent dbname=none", "s", "p",
                    encode_plan=emitter.encode_plan if emitter.fast else None,
                    stream=_Replay([]), watch=emitter.watch)  # type: ignore[arg-type]
    columns = [pgo.RelationColumn(name, oid, -1, i == 0)
               for i, (name, oid, _) in enumerate(COLUMNS)]
    cap._relations[OID] = build_relation(  # known already: no database to ask
        pgo.Relation(OID, "bench", "orders", "d", columns),
        [classify(type_name) for _, _, type_name in COLUMNS], {"id"})
    trail = work / f"t{n}" / "aa"
    sink = SinkOptions.parse({"path": str(trail), "home": str(work / "gg"), "group": "XR",
                              "runId": f"r{n}", "stateFile": str(work / f"s{n}.state")},
                             f"r{n}")
    appender = TrailAppender(sink)
    start = 1
    cpu = time.thread_time()
    for parts in reads:
        end = parts[-1][-1][0] + 1
        cap._stream = _Replay(parts)  # type: ignore[assignment]
        rows = ColumnRowBuilder()

        def batches(start: int = start, end: int = end, rows: ColumnRowBuilder = rows
                    ) -> Iterator[Any]:
            yield from _rows(opts, cap, emitter, start, end, rows, True, None)
            if len(rows):
                yield rows.take()

        appender.append(batches())
        start = end
    used = time.thread_time() - cpu
    appender.sync()
    appender.close()
    return used, trail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=("mixed", "update1", "update1-live",
                                            "update100-live"),
                        default="mixed")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    items = stream(args.shape)
    changes = sum(1 for _, data in items if data[:1] in (b"I", b"U", b"D"))
    if args.shape == "update1-live":  # 13 transactions (3 messages each) a read
        reads = [[items[i:i + 39]] for i in range(0, len(items), 39)]
    elif args.shape == "update100-live":  # 10 transactions (102 messages each) a read
        reads = [[items[i:i + 1020]] for i in range(0, len(items), 1020)]
    else:  # one read in chunks of 5,000 messages
        reads = [[items[i:i + 5000] for i in range(0, len(items), 5000)]]
    work = Path(tempfile.mkdtemp(prefix="tg-bench-xr-"))
    try:
        opts = _options(work)
        per: list[float] = []
        digest = ""
        for n in range(args.repeat):
            used, trail = one_round(opts, items, reads, work, n)
            per.append(used / changes * 1e6)
            digest = hashlib.sha256(record_bytes(trail)).hexdigest()[:16]
        print(f"{Path(trailgate.__file__).parents[1]}: {args.shape}, {changes:,} changes in "
              f"{len(reads):,} read(s): CPU µs a change {' '.join(f'{x:.3f}' for x in per)} "
              f"(best {min(per):.3f}); trail records sha256 {digest}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
