"""Extract capture rate beside PostgreSQL's own pg_recvlogical, on the same changes.

    ./dev bench capture_pg [--rows 200000] [--txn-rows 100] [--repeat 3] [--keep DIR]

Generates workloads on an embedded PostgreSQL (inserts, then updates of a fifth and deletes
of a tenth of the rows, in transactions of ``--txn-rows`` rows).  ``trailgate run extract``
is started first and warmed up by one transaction (Spark's start-up is printed apart).  Then:

1. **Backlog** (the ratio): the Extract's processes are paused (SIGSTOP) while a workload
   runs, so its changes wait in the slot, as they do for ``pg_recvlogical`` on a second slot
   moved to the same starting point.  ``pg_recvlogical`` reads them to the WAL end the
   workload reached, writing the stream to a file: rows / its wall time.  Then the Extract
   is resumed: rows / the time until its checkpoint says the trail holds them all.  Both
   read exactly the same changes from the same server, one after the other.  This is done
   ``--repeat`` times; the best time of each is compared (and the median of the pairs'
   ratios shown), as the machine is shared and noisy.
2. **Live**: a second workload runs while the Extract captures; its rate is the row changes
   / the time from the workload's start until the trail holds them all (the workload's own
   duration is printed beside it: a live capture cannot finish before its source does).

Prints a table of the rates and the ratio Extract / pg_recvlogical on the backlog (the aim:
at least 0.5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from process_tree import signal_tree  # noqa: E402  (benchmarks/)
from trailgate.capture.postgres.ddl_setup import add_ddlsupport  # noqa: E402
from trailgate.capture.postgres.slots import add_extract  # noqa: E402
from trailgate.capture.postgres.trandata import add_trandata  # noqa: E402
from trailgate.db.cluster import Cluster, postgres_bin_dir  # noqa: E402
from trailgate.db.connect import connect  # noqa: E402
from trailgate.home import GroupInfo, Home, TrailInfo  # noqa: E402


def workload(conninfo: str, rows: int, txn_rows: int, first_id: int = 1) -> int:
    """Inserts ``rows`` rows (ids from ``first_id``), then updates a fifth and deletes a
    tenth of them, all in transactions of ``txn_rows`` rows; returns the row changes."""
    changes = 0
    last_id = first_id + rows - 1
    with connect(conninfo, autocommit=False) as conn:
        for start in range(first_id, last_id + 1, txn_rows):
            stop = min(start + txn_rows - 1, last_id)
            conn.execute("INSERT INTO bench SELECT g, 'customer ' || g, g * 1.25, now(), "
                         "md5(g::text) FROM generate_series(%s::int, %s::int) g",
                         (start, stop))
            conn.commit()
            changes += stop - start + 1
        for start in range(first_id, last_id + 1, txn_rows * 5):
            stop = min(start + txn_rows - 1, last_id)
            changes += conn.execute("UPDATE bench SET amount = amount + 1 WHERE id BETWEEN "
                                    "%s AND %s", (start, stop)).rowcount
            conn.commit()
        for start in range(first_id + 2, last_id + 1, txn_rows * 10):
            stop = min(start + txn_rows - 1, last_id)
            changes += conn.execute("DELETE FROM bench WHERE id BETWEEN %s AND %s",
                                    (start, stop)).rowcount
            conn.commit()
    return changes


def flush_lsn(conninfo: str) -> str:
    with connect(conninfo) as conn:
        return str(conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0])


def run_recvlogical(cluster: Cluster, conninfo: str, slot: str, endpos: str,
                    out: Path) -> float:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(conninfo)
    env = dict(os.environ, PGPASSWORD=str(params.get("password", "")))
    argv = [str(postgres_bin_dir() / "pg_recvlogical"), "-h", str(params["host"]),
            "-p", str(params["port"]), "-U", str(params["user"]), "-d", str(params["dbname"]),
            "--slot", slot, "--start", "--no-loop", "-f", str(out), "-E", endpos,
            "-o", "proto_version=1", "-o", "publication_names=trailgate"]
    t0 = time.monotonic()
    subprocess.run(argv, check=True, env=env, capture_output=True)
    return time.monotonic() - t0


def _checkpoint_lsn(home: Home) -> int:
    try:
        ck = json.loads((home.dirchk / "BENCH.cpe").read_text())
    except (OSError, ValueError):
        return 0
    return int((ck.get("read_position") or {}).get("lsn", 0))


def _trail_rows(home: Home) -> int:
    try:
        ck = json.loads((home.dirchk / "BENCH.cpe").read_text())
    except (OSError, ValueError):
        return 0
    return sum(sum(v for k, v in s.items() if k != "discards")
               for s in ck["stats"].values())


class ExtractRun:
    """The Extract running in the background, with its whole process tree (the JVM runs in
    its own session, Spark's Python workers under it) paused and resumed on request."""

    def __init__(self, home: Home):
        self.home = home
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        self.log = open(home.path / "extract.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trailgate.cli", "--home", str(home.path), "run", "extract",
             "BENCH", "--trigger", "0.2"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def signal_tree(self, sig: int) -> None:
        signal_tree(self.proc.pid, sig)

    def wait_for(self, lsn: int) -> None:
        """Until the checkpoint's read position reaches ``lsn``."""
        _wait(lambda: _checkpoint_lsn(self.home) >= lsn, self.proc, self.home)

    def stop(self) -> None:
        self.signal_tree(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=300)
        self.log.close()


def captured(home: Home, before: int, changes: int) -> None:
    got = _trail_rows(home) - before
    if got != changes:
        print(f"WARNING: the trail got {got:,} changes, the workload made {changes:,}")


def _wait(done, proc: subprocess.Popen, home: Home) -> None:
    while not done():
        if proc.poll() is not None:
            raise SystemExit("the Extract stopped:\n" +
                             (home.path / "extract.log").read_text()[-3000:])
        time.sleep(0.05)


def flush_lsn_int(conninfo: str) -> int:
    with connect(conninfo) as conn:
        return int(conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8"
                                ).fetchone()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--txn-rows", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3,
                        help="backlog rounds (the machine is shared: best of N is shown)")
    parser.add_argument("--keep", help="keep the cluster and home in this directory")
    parser.add_argument("--ddl-support", action="store_true",
                        help="install DDL support (ADD DDLSUPPORT: the marker tables in the "
                             "publication, the DDL event triggers) and capture DDL "
                             "(DDL INCLUDE MAPPED): DML capture should not change")
    args = parser.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="tg-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    cluster = Cluster(base / "pg", fast=True)
    extract: ExtractRun | None = None
    try:
        cluster.create()
        cluster.start()
        conninfo = cluster.create_database("bench")
        with connect(conninfo) as conn:
            conn.execute("CREATE TABLE bench (id int PRIMARY KEY, customer text, "
                         "amount numeric(12,2), at timestamptz, note text)")
            add_trandata(conn, "public.bench")
            if args.ddl_support:
                add_ddlsupport(conn, "ggadmin")
            add_extract(conn, "RECV")
        home = Home(base / "home").create()
        if args.ddl_support:
            home.globals_file.write_text("GGSCHEMA ggadmin\n")
        home.add_group(GroupInfo("BENCH", "EXTRACT", "TRANLOG"))
        home.add_trail("BENCH", TrailInfo("./dirdat/bb", megabytes=500))
        with connect(conninfo) as conn:
            add_extract(conn, "BENCH")
        (home.dirprm / "bench.prm").write_text(
            f"EXTRACT bench\nSOURCEDB {conninfo}\nEXTTRAIL ./dirdat/bb\n"
            + ("DDL INCLUDE MAPPED\n" if args.ddl_support else "") + "TABLE public.bench;\n")

        t0 = time.monotonic()
        extract = ExtractRun(home)
        with connect(conninfo) as conn:  # a first transaction: Spark's workers are warm after
            conn.execute("INSERT INTO bench VALUES (0, 'warm-up', 0, now(), '')")
        extract.wait_for(flush_lsn_int(conninfo))
        print(f"Extract started and warm in {time.monotonic() - t0:.1f} s (Spark start-up)")

        # 1. backlog: the same changes waiting in two slots, read by each in turn
        recv_times, backlog_times = [], []
        first_id = 1
        for rep in range(args.repeat):
            extract.signal_tree(signal.SIGSTOP)
            start_lsn = flush_lsn(conninfo)
            with connect(conninfo) as conn:
                conn.execute("SELECT pg_replication_slot_advance('trailgate_recv', "
                             "%s::pg_lsn)", (start_lsn,))
            changes = workload(conninfo, args.rows, args.txn_rows, first_id=first_id)
            first_id += args.rows
            endpos = flush_lsn(conninfo)
            recv_times.append(run_recvlogical(cluster, conninfo, "trailgate_recv", endpos,
                                              base / "recvlogical.out"))
            before = _trail_rows(home)
            t1 = time.monotonic()
            extract.signal_tree(signal.SIGCONT)
            extract.wait_for(flush_lsn_int(conninfo))
            backlog_times.append(time.monotonic() - t1)
            captured(home, before, changes)
            print(f"  backlog {rep + 1}/{args.repeat}: pg_recvlogical {recv_times[-1]:.2f} s, "
                  f"Extract {backlog_times[-1]:.2f} s")

        # 2. live: the Extract captures while the workload runs
        before = _trail_rows(home)
        t2 = time.monotonic()
        live_changes = workload(conninfo, args.rows, args.txn_rows, first_id=first_id)
        workload_s = time.monotonic() - t2
        extract.wait_for(flush_lsn_int(conninfo))
        live_s = time.monotonic() - t2
        captured(home, before, live_changes)

        recv_s, backlog_s = min(recv_times), min(backlog_times)
        rows = [(f"pg_recvlogical, backlog (best of {args.repeat})", changes, recv_s),
                (f"Extract, same backlog (best of {args.repeat})", changes, backlog_s),
                (f"Extract, live (workload alone: {workload_s:.2f} s)", live_changes, live_s)]
        print(f"\nworkloads of {changes:,} row changes in transactions of {args.txn_rows} "
              "rows\n")
        print(f"{'reader':<44} {'changes':>9} {'seconds':>8} {'rows/s':>9}")
        for label, n, secs in rows:
            print(f"{label:<44} {n:>9,} {secs:>8.2f} {n / secs:>9,.0f}")
        ratio = recv_s / backlog_s
        median = statistics.median(r / b for r, b in zip(recv_times, backlog_times,
                                                          strict=True))
        print(f"\nratio Extract / pg_recvlogical on the same backlog: {ratio:.2f} best to "
              f"best, {median:.2f} median of pairs "
              f"(aim: >= 0.5 — {'met' if ratio >= 0.5 else 'not met'})")
    finally:
        if extract is not None:
            extract.stop()
        cluster.stop()
        cluster.destroy()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
