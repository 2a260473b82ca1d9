"""The Extract's driver alone on a backlog of small transactions: the streamed slot read and
the trail written, as the trail streamer does between micro-batches, without Spark.

    ./dev bench extract_txns [--txns 20000] [--txn-rows 1] [--kind update|insert]
                             [--repeat 3] [--profile N] [--keep DIR] [--live RATE]
                             [--eofdelay-csecs N] [--transport tcp|socket]

One embedded server; a table like ``apply_pg``'s ``bench.orders`` captured by an Extract
group's slot.  Each round commits ``--txns`` transactions of ``--txn-rows`` rows (updates of
rows inserted before the slot's start, or inserts), then times, in this process, the
reading of the whole backlog from the slot over the replication protocol
(``StreamedSlot``, the C row encoding) and its writing to the trail (``TrailAppender``,
fsynced once at the end, as a micro-batch's sync does): seconds, transactions and changes
per second, and this process's CPU seconds per transaction split into the stream's reader
thread and the rest.  Each round reads the same backlog twice, on the general path (one
object per transaction, ``TRAILGATE_TXN_BATCHES=0``) and in batches of whole transactions
(``PgCapture.read_batched``), each into its own trail, and checks the two trails hold the
same records, byte for byte.  ``--path`` runs one of them only; ``--path readers`` reads it
in batches twice instead, the stream's reader thread taking libpq's messages in C
(``_pgfast.drain``) and in its Python loop, and compares those two.  ``--profile N`` prints
cProfile's N most expensive functions of the main thread (what reads and writes; the socket
reader thread is apart) of the last round's last path.  Where a single-row transaction's
time goes is in docs/extract.md, "Performance".

``--live RATE`` measures the other case, transactions arriving live a few at a time: the
group's own ``TrailStreamer`` (FLUSHSECS 1) runs while a procedure in the server commits
``--txns`` one-row updates at RATE a second (0: as fast as it can), and the CPU of the
stream's reader thread and of the streamer's thread (``/proc``'s ``schedstat``, ns) is
reported per transaction, with the reads, chunks and status updates it took.  Where a live
transaction's time goes is in docs/performance.md, "Live one-row transactions: the
Extract's driver".
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from trailgate.capture.postgres import walstream  # noqa: E402
from trailgate.capture.postgres.slots import add_extract, slot_name  # noqa: E402
from trailgate.capture.postgres.stream_drain import drainer  # noqa: E402
from trailgate.capture.postgres.trandata import add_trandata  # noqa: E402
from trailgate.db.cluster import Cluster  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.extract.postgres.source import (  # noqa: E402
    SourceOptions,
    StreamedSlot,
    slot_state,
)
from trailgate.extract.postgres.trail_streamer import TrailStreamer  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402
from trailgate.spark.trail_sink import SinkOptions, TrailAppender  # noqa: E402
from trailgate.trail.header import decode_file_header  # noqa: E402

GROUP = "XB"
_PREFIX = {"general": "ga", "batched": "ba", "python-reader": "pa"}


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads, by name (Linux)."""
    out: dict[str, float] = {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        name = names.get(int(task.name), "other")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / 100
    return out


def process_cpu() -> float:
    """CPU seconds of this process, all threads (microsecond resolution)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def proc_cpu(pid: int | None) -> float:
    """CPU seconds of process ``pid`` (0 if it is gone)."""
    if pid is None:
        return 0.0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / 100


def walsender(conninfo: str) -> int | None:
    """The pid of the walsender streaming the group's slot."""
    with connect(conninfo) as conn:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                           (slot_name(GROUP),)).fetchone()
    return row[0] if row else None


def workload(conninfo: str, kind: str, txns: int, txn_rows: int, first: int) -> int:
    """The round's transactions; returns a WAL position after the last commit."""
    with connect(conninfo, autocommit=False) as conn:
        for n in range(txns):
            a = first + n * txn_rows
            if kind == "update":
                conn.execute("UPDATE bench.orders SET amount = amount + 1, note = 'upd' "
                             "WHERE id BETWEEN %s AND %s", (a, a + txn_rows - 1))
            else:
                conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                             "clock_timestamp(), md5(g::text) "
                             "FROM generate_series(%s::bigint, %s::bigint) g",
                             (a, a + txn_rows - 1))
            conn.commit()
        row = conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                           ).fetchone()
        conn.commit()
    return int(row[0]) if row else 0


#: The live workload: one-row updates, each its own transaction, committed by a procedure
#: in the server (a client's own CPU per transaction would share the cores with what is
#: measured), paced to ``rate`` a second every ten (0: as fast as it can).
_LIVE_PROCEDURE = """
CREATE OR REPLACE PROCEDURE bench.live_updates(first bigint, n int, rate float8)
LANGUAGE plpgsql AS $$
DECLARE t0 float8 := extract(epoch FROM clock_timestamp());
BEGIN
    FOR i IN 0 .. n - 1 LOOP
        UPDATE bench.orders SET amount = amount + 1, note = 'live' WHERE id = first + i;
        COMMIT;
        IF rate > 0 AND i % 10 = 9 THEN
            PERFORM pg_sleep(greatest(0, t0 + (i + 1) / rate
                                      - extract(epoch FROM clock_timestamp())));
        END IF;
    END LOOP;
END $$
"""


def live_workload(conninfo: str, txns: int, rate: float, first: int) -> tuple[int, float]:
    """Commit the live transactions; a WAL position after the last and the seconds taken."""
    with connect(conninfo, autocommit=True) as conn:
        t0 = time.monotonic()
        conn.execute("CALL bench.live_updates(%s, %s, %s)", (first, txns, rate))
        seconds = time.monotonic() - t0
        row = conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                           ).fetchone()
    return int(row[0]) if row else 0, seconds


def _profiled(run: Any, prof: cProfile.Profile) -> Any:
    """``run`` (a thread's target method) under ``prof``, once."""
    def wrapped(self: Any) -> None:
        prof.enable()
        try:
            run(self)
        finally:
            prof.disable()
    return wrapped


def thread_switches(native_id: int) -> int:
    """Voluntary context switches of a thread of this process (its waits: 0 once gone)."""
    try:
        for line in Path(f"/proc/self/task/{native_id}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def thread_ns(native_id: int) -> int:
    """CPU nanoseconds a thread of this process has used (``schedstat``; 0 once gone)."""
    try:
        return int(Path(f"/proc/self/task/{native_id}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def live_round(home: Home, source: SourceOptions, conninfo: str, r: int, start: int,
               first: int, args: argparse.Namespace) -> tuple[int, float]:
    """The trail streamer following ``--txns`` one-row updates committed at ``--live`` a
    second by another process; returns the WAL position it reached and the CPU µs per
    transaction of its two threads."""
    run = f"live-{r}"
    profilers = [cProfile.Profile(), cProfile.Profile()] if args.profile else []
    classes = (TrailStreamer, walstream.WalStream)
    originals = [cls._run for cls in classes]
    for cls, prof in zip(classes, profilers, strict=False):  # this round's own profilers
        cls._run = _profiled(cls._run, prof)  # type: ignore[method-assign]
    sink = SinkOptions.parse({"path": str(home.dirdat / "lv"), "home": str(home.path),
                              "group": GROUP, "runId": run}, run)
    slot = StreamedSlot(source)
    streamer = TrailStreamer(slot, sink, start, flush_seconds=1.0)
    try:
        streamer.sync(start)  # the stream open and the threads started before the clock
        stream = slot._stream  # a benchmark looks at its counters
        assert stream is not None
        threads = {"reader": stream._thread.native_id,
                   "streamer": streamer._thread.native_id}
        ns0 = {k: thread_ns(v) for k, v in threads.items() if v is not None}
        sw0 = {k: thread_switches(v) for k, v in threads.items() if v is not None}
        reads0, status0 = streamer.reads, stream.status_updates
        chunks0, flushes0 = stream.chunks, streamer.flushes
        t0 = time.monotonic()
        end, wrote = live_workload(conninfo, args.txns, args.live, first)
        while streamer.written < end:
            if (error := streamer.failure()) is not None:
                raise SystemExit(f"the trail streamer stopped: {error}")
            time.sleep(0.002)
        seconds = time.monotonic() - t0
        used = {k: (thread_ns(v) - ns0[k]) / 1e9 for k, v in threads.items()
                if v is not None}
        waits = {k: thread_switches(v) - sw0[k] for k, v in threads.items() if v is not None}
        reads, chunks = streamer.reads - reads0, stream.chunks - chunks0
        status, flushes = stream.status_updates - status0, streamer.flushes - flushes0
        streamer.sync(end)
    finally:
        streamer.close()
        slot.close()
        for cls, run in zip(classes, originals, strict=True):
            cls._run = run  # type: ignore[method-assign]
    total = sum(used.values())
    per_txn = total / args.txns * 1e6
    for name, prof in zip(("trail streamer", "stream reader"), profilers, strict=False):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(args.sort).print_stats(args.profile)
        say(f"  {name}'s thread, {reads:,} reads:\n{out.getvalue()}")
    say(f"  round {r + 1}, live at {args.live:g}/s: {args.txns:,} transactions written in "
        f"{wrote:.2f} s, in the trail after {seconds:.2f} s; CPU {total:.3f} s = "
        f"{per_txn:.1f} µs per transaction (stream reader {used.get('reader', 0):.3f} s, "
        f"streamer {used.get('streamer', 0):.3f} s); {reads:,} reads, {chunks:,} chunks, "
        f"{status:,} status updates, {flushes} flushes; waits (voluntary context switches): "
        f"reader {waits.get('reader', 0):,}, streamer {waits.get('streamer', 0):,}")
    return end, per_txn


def read_round(home: Home, source: SourceOptions, conninfo: str, mode: str, r: int,
               start: int, end: int, rows: int, profile: bool, args: argparse.Namespace
               ) -> float:
    """Read ``[start, end)`` into trail ``mode``'s on that path; returns the CPU µs per
    transaction (this process; the walsender apart)."""
    run = f"run-{r}"
    trail = home.dirdat / _PREFIX[mode]
    sink = SinkOptions.parse({"path": str(trail), "home": str(home.path), "group": GROUP,
                              "runId": run,
                              "stateFile": str(home.path / "dirchk" / f"{mode}.state")}, run)
    profiler = cProfile.Profile() if profile else None
    slot = StreamedSlot(source, batched=mode != "general")
    walstream.drainer = (lambda: None) if mode == "python-reader" else drainer
    cpu0, t0, rusage0 = thread_cpu(), time.monotonic(), process_cpu()
    if profiler is not None:
        profiler.enable()
    appender = TrailAppender(sink)
    slot.open_at(start)
    sender = walsender(conninfo)
    sender0 = proc_cpu(sender)
    appender.append(slot.read(start, end, position=False))
    msg = appender.sync(slot.position_row(end))
    if profiler is not None:
        profiler.disable()
    seconds = time.monotonic() - t0
    cpu1, rusage1 = thread_cpu(), process_cpu()
    sender_cpu = proc_cpu(sender) - sender0
    appender.close()
    slot.close()
    used = {k: v - cpu0.get(k, 0.0) for k, v in cpu1.items()}
    total = rusage1 - rusage0  # the threads' split below is in 10 ms ticks; this is finer
    reader = sum(v for k, v in used.items() if k != "MainThread")
    per_txn = total / max(msg.transactions, 1) * 1e6
    say(f"  round {r + 1}, {mode} path: {msg.transactions:,} transactions in {seconds:.2f} s: "
        f"{msg.transactions / seconds:,.0f} txns/s, {rows / seconds:,.0f} changes/s; CPU "
        f"{total:.2f} s = {per_txn:.1f} µs per transaction (main "
        f"{used.get('MainThread', 0.0):.2f} s, stream reader {reader:.2f} s); the walsender "
        f"{sender_cpu:.2f} s")
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.profile)
        say(out.getvalue())
    return per_txn


def trail_records(home: Home, mode: str) -> bytes:
    """The records of trail ``mode``'s files, end to end, without their file headers."""
    out = bytearray()
    for path in sorted(home.dirdat.glob(_PREFIX[mode] + "*")):
        data = path.read_bytes()
        out += data[decode_file_header(data).length:]
    return bytes(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--txns", type=int, default=20_000)
    parser.add_argument("--transport", choices=("tcp", "socket"), default="tcp",
                        help="how the Extract reaches the server: TCP on 127.0.0.1 (default) "
                             "or its Unix socket")
    parser.add_argument("--txn-rows", type=int, default=1)
    parser.add_argument("--kind", choices=("update", "insert"), default="update")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--sort", default="tottime", help="cProfile's order (cumulative, …)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--live", type=float, default=None, metavar="RATE",
                        help="transactions a second committed while the trail streamer "
                             "follows them (0: as fast as the server can); one-row updates")
    parser.add_argument("--eofdelay-csecs", type=int, default=None, metavar="N",
                        help="EOFDELAYCSECS for the group (0: every live read within 2 ms, "
                             "as before 2026-11-28 midday below 15,000 messages a second)")
    parser.add_argument("--path", choices=("both", "general", "batched", "readers"),
                        default="both")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tg-bench-xt-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # the server may run as another OS user
    cluster = Cluster(work / "pg")
    try:
        cluster.create()
        cluster.start()
        conninfo = cluster.create_database("bench")
        rows = args.txns * args.txn_rows
        with connect(conninfo) as conn:
            conn.execute("CREATE SCHEMA bench")
            conn.execute("CREATE TABLE bench.orders (id bigint PRIMARY KEY, customer text, "
                         "amount numeric(12,2), created timestamptz, note text)")
            add_trandata(conn, "bench.orders")
            if args.kind == "update":  # every round's rows, before the slot's start
                conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, "
                             "g * 1.25, clock_timestamp(), md5(g::text) "
                             "FROM generate_series(1, %s::bigint) g", (rows * args.repeat,))
        home = Home(work / "gg").create()
        home.add_group(GroupInfo(GROUP, "EXTRACT", "TRANLOG"))
        home.add_trail(GROUP, TrailInfo("./dirdat/aa", megabytes=500))
        with connect(conninfo) as conn:
            add_extract(conn, GROUP)
            _, start, _ = slot_state(conn, slot_name(GROUP))
        extract_conninfo = cluster.conninfo("bench", via_socket=args.transport == "socket")
        (home.dirprm / f"{GROUP.lower()}.prm").write_text(
            f"EXTRACT {GROUP}\nSOURCEDB {extract_conninfo}\nEXTTRAIL ./dirdat/aa\n"
            + ("" if args.eofdelay_csecs is None else f"EOFDELAYCSECS {args.eofdelay_csecs}\n")
            + "TABLE bench.*;\n")
        source = SourceOptions.parse({"home": str(home.path), "group": GROUP})
        if args.live is not None:
            with connect(conninfo) as conn:
                conn.execute(_LIVE_PROCEDURE)
            say(f"{args.txns:,} one-row update transactions per round, live")
            per = []
            for r in range(args.repeat):
                start, used = live_round(home, source, conninfo, r, start,
                                         1 + r * args.txns, args)
                per.append(used)
            say(f"best CPU per transaction, live: {min(per):.1f} µs (median "
                f"{sorted(per)[len(per) // 2]:.1f})")
            return 0
        say(f"{args.txns:,} transactions of {args.txn_rows} row(s), {args.kind}s, per round")
        paths = {"both": ("general", "batched"), "readers": ("python-reader", "batched")
                 }.get(args.path, (args.path,))
        best: dict[str, float] = {}
        for r in range(args.repeat):
            end = workload(conninfo, args.kind, args.txns, args.txn_rows, 1 + r * rows)
            for mode in paths:
                profile = bool(args.profile) and r == args.repeat - 1 and mode == paths[-1]
                used = read_round(home, source, conninfo, mode, r, start, end, rows, profile,
                                  args)
                best[mode] = min(best.get(mode, used), used)
            slot = StreamedSlot(source)
            slot.open_at(start)
            slot.confirm(end)
            slot.close()
            start = end
        if len(paths) == 2:
            a, b = paths
            same = trail_records(home, a) == trail_records(home, b)
            say(f"best CPU per transaction: {a} {best[a]:.1f} µs, {b} {best[b]:.1f} µs "
                f"({best[a] / best[b]:.2f}×); the two trails' records are "
                f"{'identical' if same else 'DIFFERENT'}")
            if not same:
                return 1
    finally:
        cluster.stop()
        if not args.keep:
            cluster.destroy()
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
