"""The source's walsender: its CPU per change when it feeds native logical replication, a C
client and trailgate's stream reader the same workload, in one run.

    ./dev bench walsender_cpu [--rows 100000] [--txn-rows 100] [--kind mixed|update|insert]
                              [--readers native,recvlogical,walstream,extract]
                              [--mode live|backlog] [--repeat 3] [--perf DIR] [--keep DIR]

Two embedded servers (the target only for native replication).  Each reader has its own
slot on the source, moved to the WAL's end before its round, so every walsender decodes
only its round's workload:

* ``native``: a subscription (``CREATE SUBSCRIPTION``; its apply worker on the target);
* ``recvlogical``: ``pg_recvlogical`` into ``/dev/null`` with the options trailgate asks
  (``proto_version 1``, ``messages``); ``recvnative``: the same with the options a native
  subscription asks on this server (``proto_version 4``, ``streaming parallel``,
  ``origin any``);
* ``walstream``: trailgate's stream reader alone (``WalStream``) in a child process, taking
  every span as it arrives and confirming once a second, as the Extract's batches do;
* ``extract``: the Extract's driver without Spark in a child process: the trail streamer
  (``TrailStreamer``: the stream read and written to a trail as it arrives), made durable
  and confirmed once a second by its own thread (``FLUSHSECS``), as in the Extract.

``--mode live``: the workload (``apply_pg``'s ``mixed`` by default: inserts, then updates of
a fifth and deletes of a tenth of them, ``--txn-rows`` per transaction) runs while the
reader streams; ``backlog``: it runs first, then the reader is started.  A round ends when
the walsender has sent past the workload's last commit (written into its socket, whose send
buffer may hold megabytes the reader has not taken yet: "all sent" is not the reader's
pace; ``apply_pg``'s backlog phase is).  Per round: the walsender's CPU
(``/proc/<pid>/schedstat``) in seconds and µs per change, its voluntary and involuntary
context switches, the reader's own CPU, and the workload's seconds; the best round of each
reader (least walsender CPU) is printed beside the others' with its ratio to ``native``'s.
``--perf DIR`` records each round's walsender with ``perf record -g`` into DIR and prints
its top functions.  Findings are in docs/extract.md, "The walsender's CPU".
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: A child reader of ``--src``'s readers runs that checkout's code (set by the parent).
SRC_ENV = "WALSENDER_CPU_SRC"
sys.path.insert(0, os.environ.get(SRC_ENV) or str(ROOT / "src"))

from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: E402

from trailgate.capture.postgres.slots import add_extract, slot_name  # noqa: E402
from trailgate.capture.postgres.trandata import DEFAULT_PUBLICATION, add_trandata  # noqa: E402
from trailgate.db.cluster import postgres_bin_dir  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.demo.databases import Databases, run_sql  # noqa: E402

GROUP = "WS"
READERS = ("native", "recvlogical", "recvnative", "walstream", "extract")
#: ``--src``'s readers: trailgate's, run from the other checkout.
OTHER = "@src"
#: What a native subscription asks of a PostgreSQL 16+ publisher (its default streaming
#: is ``parallel`` since 18), for ``recvnative``.
NATIVE_OPTIONS = ("proto_version=4", "streaming=parallel", "origin=any",
                  "publication_names=bench_pub")
TRAILGATE_OPTIONS = ("proto_version=1", f"publication_names={DEFAULT_PUBLICATION}",
                     "messages=true")


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# -- the processes' CPU -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Sample:
    cpu: float  # seconds on a CPU
    voluntary: int
    involuntary: int
    segs_out: int = 0  # TCP segments the process's socket sent (``ss -ti``)
    segs_in: int = 0  # and received


def sample(pid: int) -> Sample:
    """``pid``'s CPU (nanosecond resolution), context switches and its TCP socket's segment
    counts so far (zeros if gone)."""
    try:
        run_ns = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, ValueError, IndexError):
        return Sample(0.0, 0, 0)
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    out, seg_in = tcp_segments(pid)
    return Sample(run_ns / 1e9, int(fields["voluntary_ctxt_switches"]),
                  int(fields["nonvoluntary_ctxt_switches"]), out, seg_in)


def tcp_line(pid: int) -> str:
    """``ss -tinm``'s line of ``pid``'s socket (what limited its sending)."""
    text = subprocess.run(["ss", "-tinmpH"], capture_output=True, text=True, timeout=10,
                          check=False).stdout
    lines = text.splitlines()
    return next((info.strip() for head, info in itertools.pairwise(lines)
                 if f"pid={pid}," in head), "")


def tcp_segments(pid: int) -> tuple[int, int]:
    """(segments sent, received) by ``pid``'s established TCP sockets (``ss -tinp``)."""
    try:
        text = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True, timeout=10,
                              check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return 0, 0
    lines = text.splitlines()
    out = seg_in = 0
    for head, info in itertools.pairwise(lines):
        if f"pid={pid}," not in head:
            continue
        stats = dict(w.split(":", 1) for w in info.split() if ":" in w)
        out += int(stats.get("segs_out", 0))
        seg_in += int(stats.get("segs_in", 0))
    return out, seg_in


def process_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` with all its threads (utime + stime), 0 if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the readers ----------------------------------------------------------------------------

class Reader:
    """One way of consuming the source's changes, started and stopped per round."""

    def __init__(self, name: str, dbs: Databases, work: Path, src: Path | None = None):
        self.name = name
        self.kind = name.removesuffix(OTHER)
        self.src = src if name.endswith(OTHER) else None
        self.dbs = dbs
        self.work = work
        self.proc: subprocess.Popen[bytes] | None = None
        self.slot = {"native": "bench_sub", "recvlogical": "bench_recv",
                     "recvnative": "bench_recvn"}.get(self.kind, slot_name(GROUP))
        self.app = {"native": "bench_sub", "recvlogical": "bench recvlogical",
                    "recvnative": "bench recvnative"}.get(self.kind,
                                                          f"trailgate {self.slot} stream")
        self.stats: dict[str, Any] = {}

    def start(self) -> None:
        source = self.dbs.source_conninfo
        if self.kind == "native":
            with connect(self.dbs.target_conninfo) as conn:
                conn.execute("ALTER SUBSCRIPTION bench_sub ENABLE")
            return
        if self.kind in ("recvlogical", "recvnative"):
            options = TRAILGATE_OPTIONS if self.kind == "recvlogical" else NATIVE_OPTIONS
            params = conninfo_to_dict(source)
            params["application_name"] = self.app
            cmd = [str(postgres_bin_dir() / "pg_recvlogical"), "-d", make_conninfo("", **params),
                   "--slot", self.slot, "--start", "-f", "/dev/null", "-F", "0", "--no-loop"]
            for option in options:
                cmd += ["-o", option]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
            return
        with connect(source) as conn:
            start = int(conn.execute(
                "SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::int8 FROM pg_replication_slots "
                "WHERE slot_name = %s", (self.slot,)).fetchone()[0])
        env = dict(os.environ)
        env.pop(SRC_ENV, None)
        if self.src is not None:
            env[SRC_ENV] = str(self.src)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--consume", self.kind, "--conninfo", source,
             "--start", str(start), "--home", str(self.work / "gg")],
            stdout=subprocess.PIPE, env=env)

    def stop(self) -> None:
        if self.kind == "native":
            with connect(self.dbs.target_conninfo) as conn:
                conn.execute("ALTER SUBSCRIPTION bench_sub DISABLE")
            return
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        self.stats = json.loads(out or b"{}") if self.kind in ("walstream", "extract") else {}

    def client_pid(self) -> int | None:
        """The reader's own process (native: the apply worker on the target)."""
        if self.proc is not None:
            return self.proc.pid
        with connect(self.dbs.target_conninfo) as conn:
            row = conn.execute("SELECT pid FROM pg_stat_subscription WHERE subname = "
                               "'bench_sub' AND pid IS NOT NULL").fetchone()
        return int(row[0]) if row else None


def walsender(conninfo: str, app: str, timeout: float = 60.0) -> int:
    """The pid of the streaming walsender whose client is ``app``."""
    deadline = time.monotonic() + timeout
    with connect(conninfo) as conn:
        while True:
            row = conn.execute("SELECT pid FROM pg_stat_replication WHERE application_name = %s "
                               "AND state = 'streaming'", (app,)).fetchone()
            if row:
                return int(row[0])
            if time.monotonic() > deadline:
                raise SystemExit(f"no walsender for {app!r} after {timeout:.0f} s")
            time.sleep(0.05)


def wait_sent(conninfo: str, pid: int, lsn: int, timeout: float = 300.0) -> None:
    """Wait until walsender ``pid`` has sent past ``lsn``."""
    deadline = time.monotonic() + timeout
    with connect(conninfo) as conn:
        while True:
            row = conn.execute("SELECT (sent_lsn - '0/0'::pg_lsn)::int8 FROM pg_stat_replication "
                               "WHERE pid = %s", (pid,)).fetchone()
            if row and row[0] is not None and int(row[0]) >= lsn:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"walsender {pid} did not send past {lsn} in {timeout:.0f} s")
            time.sleep(0.02)


def flush_lsn(conninfo: str) -> int:
    with connect(conninfo) as conn:
        row = conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                           ).fetchone()
    return int(row[0]) if row else 0


def advance(conninfo: str, slot: str) -> None:
    """Move an inactive slot to the WAL's end (it then decodes only what comes next)."""
    with connect(conninfo) as conn:
        conn.execute("SELECT pg_replication_slot_advance(%s, pg_current_wal_flush_lsn())",
                     (slot,))


# -- a round --------------------------------------------------------------------------------

@dataclass(slots=True)
class Round:
    reader: str
    changes: int
    wrote: float  # the workload's seconds
    seconds: float  # from the workload's start (backlog: the reader's) to all sent
    walsender: float
    voluntary: int
    involuntary: int
    segs_out: int
    segs_in: int
    client: float
    stats: dict[str, Any]

    @property
    def per_change(self) -> float:
        return self.walsender / max(self.changes, 1) * 1e6


def one_round(reader: Reader, args: argparse.Namespace, first: int, perf_dir: Path | None,
              n: int) -> Round:
    from apply_pg import throughput_workload  # not at the top: it puts this src first

    source = reader.dbs.source_conninfo
    advance(source, reader.slot)
    perf: subprocess.Popen[bytes] | None = None
    if args.mode == "live":
        reader.start()
        pid = walsender(source, reader.app)
        time.sleep(0.5)  # past the stream's start
        client = reader.client_pid()
        before, client0 = sample(pid), process_cpu(client) if client else 0.0
        if perf_dir is not None:
            perf = start_perf(pid, perf_dir / f"{reader.name}-{n}.data")
        t0 = time.monotonic()
        changes, _ = throughput_workload(source, args.rows, args.txn_rows, first, args.kind)
        wrote = time.monotonic() - t0
        end = flush_lsn(source)
    else:
        t0 = time.monotonic()
        changes, _ = throughput_workload(source, args.rows, args.txn_rows, first, args.kind)
        wrote = time.monotonic() - t0
        end = flush_lsn(source)
        t0 = time.monotonic()
        reader.start()
        pid = walsender(source, reader.app)
        client = reader.client_pid()
        before, client0 = Sample(0.0, 0, 0), 0.0
        if perf_dir is not None:
            perf = start_perf(pid, perf_dir / f"{reader.name}-{n}.data")
    wait_sent(source, pid, end)
    seconds = time.monotonic() - t0
    time.sleep(0.2)  # the reader takes the last of it
    after = sample(pid)
    if args.ss:
        say("      " + tcp_line(pid))
    client1 = process_cpu(client) if client else 0.0
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    reader.stop()
    return Round(reader.name, changes, wrote, seconds, after.cpu - before.cpu,
                 after.voluntary - before.voluntary, after.involuntary - before.involuntary,
                 after.segs_out - before.segs_out, after.segs_in - before.segs_in,
                 client1 - client0, reader.stats)


def start_perf(pid: int, out: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-p", str(pid), "-o",
                             str(out)], stdout=subprocess.DEVNULL)
    time.sleep(0.3)  # perf attached
    return proc


def perf_top(path: Path, lines: int) -> str:
    """The walsender's most expensive functions (self time) in a perf recording."""
    out = subprocess.run(["perf", "report", "-i", str(path), "--stdio", "--no-children",
                          "--sort", "symbol", "-g", "none", "--percent-limit", "1"],
                         capture_output=True, text=True, check=False).stdout
    rows = [r for r in out.splitlines() if r.strip() and not r.startswith("#")]
    return "\n".join("      " + r.strip() for r in rows[:lines])


# -- the stream readers' child process ----------------------------------------------------------

def consume(args: argparse.Namespace) -> int:
    """``--consume walstream|extract``: read the slot until SIGTERM, then print counters."""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    counts: dict[str, Any]
    if args.consume == "walstream":
        counts = consume_stream(args, stop)
    else:
        counts = consume_extract(args, stop)
    sys.stdout.write(json.dumps(counts))
    return 0


def consume_stream(args: argparse.Namespace, stop: dict[str, bool]) -> dict[str, Any]:
    from trailgate.capture.postgres.walstream import WalStream

    messages = keepalives = reads = 0
    with WalStream(args.conninfo, slot_name(GROUP), DEFAULT_PUBLICATION, args.start) as stream:
        position = args.start
        confirmed = time.monotonic()
        while not stop["now"]:
            end = stream.wait_available(position, 0.1)
            if end > position:
                reads += 1
                for chunk, lo, hi in stream.spans(end):
                    for k in range(lo, hi):
                        if chunk[k][1] is None:
                            keepalives += 1
                        else:
                            messages += 1
                position = end
            if time.monotonic() - confirmed >= 1.0:
                stream.confirm(position)
                confirmed = time.monotonic()
        stream.confirm(position)
        status = getattr(stream, "status_updates", None)  # --src: older code lacks it
    return {"messages": messages, "keepalives": keepalives, "reads": reads,
            "status updates": status}


def consume_extract(args: argparse.Namespace, stop: dict[str, bool]) -> dict[str, Any]:
    from trailgate.extract.postgres.source import SourceOptions, StreamedSlot
    from trailgate.extract.postgres.trail_streamer import TrailStreamer
    from trailgate.spark.trail_sink import SinkOptions

    home = Path(args.home)
    run = f"run-{os.getpid()}"
    sink = SinkOptions.parse({"path": str(home / "dirdat" / "ws"), "home": str(home),
                              "group": GROUP, "runId": run,
                              "stateFile": str(home / "dirchk" / "ws.state")}, run)
    slot = StreamedSlot(SourceOptions.parse({"home": str(home), "group": GROUP}))
    # durable and confirmed by the streamer's own thread every second (FLUSHSECS), as in
    # the Extract; a sync (a micro-batch's) only at the end, for the count
    streamer = TrailStreamer(slot, sink, args.start, flush_seconds=1.0)
    syncs = transactions = 0
    stream = None
    try:
        while not stop["now"]:
            time.sleep(0.2)
            stream = slot._stream  # its counter, below
        msg = streamer.sync(streamer.written)
        syncs += 1
        transactions += msg.transactions
    finally:
        streamer.close()
        slot.close()
    status = getattr(stream, "status_updates", None)
    return {"syncs": syncs, "transactions": transactions, "status updates": status}


# -- set-up and report ----------------------------------------------------------------------

def set_up(dbs: Databases, work: Path, readers: list[str]) -> None:
    from apply_pg import SOURCE_DDL, TARGET_DDL

    source, target = dbs.source_conninfo, dbs.target_conninfo
    run_sql(source, SOURCE_DDL)
    run_sql(target, TARGET_DDL)
    with connect(source) as conn:
        add_trandata(conn, "bench.orders")
        add_extract(conn, GROUP)
        conn.execute("CREATE PUBLICATION bench_pub FOR TABLE bench.orders")
        for reader in ("recvlogical", "recvnative"):
            if reader in readers:
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')",
                             ("bench_recv" if reader == "recvlogical" else "bench_recvn",))
    if "native" in readers:
        src = conninfo_to_dict(source)
        publisher = (f"host={src['host']} port={src['port']} dbname={src['dbname']} "
                     f"user={src['user']} password={src['password']}")
        with connect(target) as conn:
            conn.execute(f"CREATE SUBSCRIPTION bench_sub CONNECTION '{publisher}' "
                         "PUBLICATION bench_pub WITH (copy_data = false, enabled = false)")
    if "extract" in readers:
        from trailgate.home import GroupInfo, Home, TrailInfo

        home = Home(work / "gg").create()
        home.add_group(GroupInfo(GROUP, "EXTRACT", "TRANLOG"))
        home.add_trail(GROUP, TrailInfo("./dirdat/ws", megabytes=500))
        (home.dirprm / f"{GROUP.lower()}.prm").write_text(
            f"EXTRACT {GROUP}\nSOURCEDB {source}\nEXTTRAIL ./dirdat/ws\nTABLE bench.*;\n")


def report(rounds: list[Round]) -> None:
    best: dict[str, Round] = {}
    for r in rounds:
        if r.reader not in best or r.walsender < best[r.reader].walsender:
            best[r.reader] = r
    ref = best.get("native")
    say("\nmedian of each reader's rounds: walsender µs per change, TCP segments it sent")
    for name in best:
        mine = [r for r in rounds if r.reader == name]
        say(f"  {name:<14} {statistics.median(r.per_change for r in mine):>6.2f} µs "
            f"{statistics.median(r.segs_out for r in mine):>9,.0f} segments")
    say("\nbest round of each reader (least walsender CPU):")
    say(f"  {'reader':<14} {'walsender s':>11} {'µs/change':>9} {'ratio':>6} "
        f"{'vol cs':>7} {'invol cs':>8} {'segs out':>8} {'segs in':>7} {'client s':>8} "
        f"{'workload s':>10} {'all sent s':>10}")
    for name, r in best.items():
        ratio = f"{r.walsender / ref.walsender:.2f}" if ref and ref.walsender else "-"
        say(f"  {name:<14} {r.walsender:>11.3f} {r.per_change:>9.2f} {ratio:>6} "
            f"{r.voluntary:>7} {r.involuntary:>8} {r.segs_out:>8} {r.segs_in:>7} "
            f"{r.client:>8.2f} {r.wrote:>10.2f} {r.seconds:>10.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--txn-rows", type=int, default=100)
    parser.add_argument("--kind", choices=("mixed", "update", "insert"), default="mixed")
    parser.add_argument("--readers", default="native,recvlogical,walstream,extract")
    parser.add_argument("--mode", choices=("live", "backlog"), default="live")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ss", action="store_true",
                        help="print the walsender socket's TCP state after each round")
    parser.add_argument("--perf", metavar="DIR", help="perf record each round's walsender")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--src", type=Path, metavar="DIR",
                        help="another checkout's src: its walstream and extract readers "
                             "run too (NAME@src), beside this one's")
    parser.add_argument("--consume", choices=("walstream", "extract"), help=argparse.SUPPRESS)
    parser.add_argument("--conninfo", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.consume:
        return consume(args)
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    if args.src is not None:
        readers += [f"{r}{OTHER}" for r in readers if r in ("walstream", "extract")]
    unknown = [r for r in readers if r.removesuffix(OTHER) not in READERS]
    if unknown:
        parser.error(f"unknown reader(s) {', '.join(unknown)}: choose from {', '.join(READERS)}")
    perf_dir = Path(args.perf) if args.perf else None
    if perf_dir is not None:
        perf_dir.mkdir(parents=True, exist_ok=True)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tg-bench-ws-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # the server may run as another OS user
    dbs = Databases(work / "pg")
    rounds: list[Round] = []
    try:
        dbs.start()
        set_up(dbs, work, readers)
        if args.kind == "update":  # every round's rows, before any slot's round
            total = args.rows * args.repeat * len(readers)
            with connect(dbs.source_conninfo) as conn:
                conn.execute("INSERT INTO bench.orders SELECT g, 'customer ' || g, g * 1.25, "
                             "clock_timestamp(), md5(g::text) "
                             "FROM generate_series(1, %s::bigint) g", (total,))
        say(f"{args.mode}: {args.rows:,} rows, {args.kind}, {args.txn_rows} per transaction; "
            f"readers {', '.join(readers)}; {args.repeat} rounds each, interleaved")
        src = args.src.resolve() if args.src is not None else None
        objects = {name: Reader(name, dbs, work, src) for name in readers}
        n = 0
        for r in range(args.repeat):
            for name in readers:
                first = 1 + n * args.rows
                result = one_round(objects[name], args, first, perf_dir, n)
                rounds.append(result)
                extra = f" {result.stats}" if result.stats else ""
                say(f"  round {r + 1} {name:<14} walsender {result.walsender:.3f} s "
                    f"({result.per_change:.2f} µs/change), cs {result.voluntary} vol / "
                    f"{result.involuntary} invol; TCP segments {result.segs_out} out / "
                    f"{result.segs_in} in; client {result.client:.2f} s; workload "
                    f"{result.wrote:.2f} s, all sent {result.seconds:.2f} s{extra}")
                if perf_dir is not None:
                    say(perf_top(perf_dir / f"{name}-{n}.data", 25))
                n += 1
        report(rounds)
    finally:
        with contextlib.suppress(Exception), connect(dbs.target_conninfo) as conn:
            conn.execute("DROP SUBSCRIPTION IF EXISTS bench_sub")
        dbs.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
