"""A transaction larger than the Extract's memory limit is spilled to disk and reaches the
trail whole, while the processes' memory stays bounded (peak RSS is printed).

The Extract runs as ``trailgate run extract --once``; a sampler walks its process tree
(driver, JVM, Spark's Python workers) every 50 ms and records each one's peak RSS."""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from extract_support import make_home, start_extract

from trailgate.capture.postgres.trandata import add_trandata
from trailgate.db.connect import connect
from trailgate.model import OpType, TransInd
from trailgate.trail import TrailReader

pytestmark = [pytest.mark.postgres, pytest.mark.spark]
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _role(pid: int, root: int) -> str:
    """What a process is, from its executable and command line.

    Not from its name: a child the JVM is spawning (posix_spawn, Hadoop's shell commands)
    shares the JVM's memory until it execs and is named after the JVM thread that spawned it,
    so by name it looked like a Python worker the size of the JVM."""
    if pid == root:
        return "driver"
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "other"
    if Path(exe).name == "java":
        return "jvm"
    if b"pyspark" in cmdline:
        return "python worker"
    return "other"


def _tree(root: int) -> dict[int, str]:
    """pid -> role for ``root`` and its descendants."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        children[int(rest[1])].append(int(entry))
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        out[pid] = _role(pid, root)
        todo.extend(children.get(pid, []))
    return out


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes; PSS shares pages fairly among processes (Spark's
    Python workers are forked from one daemon), so PSS adds up across the tree."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


class Sampler(threading.Thread):
    """Peak RSS of the largest process of each role, peak PSS of the whole tree, and whether
    a spill file existed at some point."""

    def __init__(self, root: int, spill_dir: Path):
        super().__init__(daemon=True)
        self.root, self.spill_dir = root, spill_dir
        self.peak: dict[str, int] = defaultdict(int)
        self.peak_tree_pss = 0
        self.spilled = False
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            total = 0
            for pid, role in _tree(self.root).items():
                rss, pss = _memory(pid)
                self.peak[role] = max(self.peak[role], rss)
                total += pss
            self.peak_tree_pss = max(self.peak_tree_pss, total)
            if not self.spilled and self.spill_dir.is_dir():
                self.spilled = any(self.spill_dir.glob("txn-*.spill"))
            time.sleep(0.05)


def _capture_big(pg_db: str, tmp_path: Path, rows: int, memory_limit: str,
                 group: str) -> Sampler:
    # slots are per server: each test its own group
    with connect(pg_db) as conn:
        conn.execute("CREATE TABLE big (id int PRIMARY KEY, v text, pad text)")
        add_trandata(conn, "public.big")
    home = make_home(tmp_path / "home", pg_db, group, "TABLE public.big;", megabytes=100)
    with connect(pg_db) as conn:
        conn.execute("INSERT INTO big SELECT g, 'row ' || g, repeat(md5(g::text), 3) "
                     "FROM generate_series(1, %s) g", (rows,))
    log = tmp_path / "extract.log"
    t0 = time.monotonic()
    proc = start_extract(home, group, "--once", "--memory-limit", memory_limit, log=log)
    sampler = Sampler(proc.pid, home.dirtmp / group.lower())
    sampler.start()
    try:
        assert proc.wait(timeout=3600) == 0, log.read_text()[-3000:]
    finally:
        sampler.stop.set()
        sampler.join()
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - t0

    count, ends, first = 0, 0, None
    for _pos, raw in TrailReader(home.dirdat / "aa").raw_records():
        if raw.io_type != OpType.INSERT:
            continue
        count += 1
        first = raw.trans_ind if first is None else first
        if raw.trans_ind in (TransInd.LAST, TransInd.ONLY):
            ends += 1
    assert (count, ends, first) == (rows, 1, TransInd.FIRST)  # one whole transaction
    ck = home.checkpoints.load(group, "EXTRACT")
    assert ck.stats["public.big"].inserts == rows
    mb = {role: peak / 2**20 for role, peak in sampler.peak.items()}
    print(f"\n{rows:,} rows in one transaction, memory limit {memory_limit}: {elapsed:.0f} s; "
          "peak RSS MB (largest process): " + ", ".join(f"{r} {v:.0f}" for r, v in
                                                        sorted(mb.items()))
          + f"; whole tree PSS {sampler.peak_tree_pss / 2**20:.0f} MB; spilled: "
          f"{sampler.spilled}")
    return sampler


def test_transaction_larger_than_memory_spills(pg_db, tmp_path):
    sampler = _capture_big(pg_db, tmp_path, 50_000, "1M", "BIG")
    assert sampler.spilled
    assert sampler.peak["python worker"] < 400 * 2**20


@pytest.mark.heavy
def test_million_row_transaction_bounded_memory(pg_db, tmp_path):
    # 20 times the rows of the test above: held in memory they would take gigabytes; the
    # workers' peak depends on the memory limit (and Spark's batches), not on the size.
    # (Measured: 1M rows under the default 64M limit peaked at 422 MB.)
    sampler = _capture_big(pg_db, tmp_path, 1_000_000, "16M", "BIG1M")
    assert sampler.spilled
    assert sampler.peak["python worker"] < 400 * 2**20
