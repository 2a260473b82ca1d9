"""A remote Pump through a loopback proxy that injects faults — delays, partial writes,
connections reset or silently dropped at random points — over a long transfer from a
growing trail, with the Pump and the collector each killed with kill -9 several times: the
remote trail equals the Pump's own output (its staging trail, kept) byte for byte and holds
every input transaction once, in order; a Replicat on it leaves its Delta target equal to
the source."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from collector_support import free_port, trail_bytes
from deltalake import DeltaTable
from kill9_support import TrailFeeder, kill9, wait_for
from replicat_support import ROOT, Increments, replicat_home, run_group, start_group
from test_pump_kill9 import _in_batch, _transactions, _written

from trailgate.collector.tokens import TOKEN_DOMAIN
from trailgate.db.connect import CredentialStore
from trailgate.home import GroupInfo, Home, TrailInfo

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

TOKEN = "fault-proxy-token"


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashed peer or a middlebox does."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class FaultProxy(threading.Thread):
    """Relays 127.0.0.1:port to the collector, injecting faults while ``faults`` is set."""

    def __init__(self, target_port: int, seed: int):
        super().__init__(daemon=True)
        self.target_port = target_port
        self.rng = random.Random(seed)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.5)
        self.port = self.listener.getsockname()[1]
        self.faults = threading.Event()
        self.faults.set()
        self.stop = threading.Event()
        self.stats: Counter[str] = Counter()
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._pair, args=(client,), daemon=True).start()
        self.listener.close()

    def _pair(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            _reset(client)
            return
        state = {"dead": False, "blackhole": False}
        with self.lock:
            seed = self.rng.random()
        for src, dst, n in ((client, upstream, 0), (upstream, client, 1)):
            threading.Thread(target=self._relay, args=(src, dst, state, random.Random(
                seed + n), client, upstream), daemon=True).start()

    def _count(self, what: str) -> None:
        with self.lock:
            self.stats[what] += 1

    def _relay(self, src: socket.socket, dst: socket.socket, state: dict[str, bool],
               rng: random.Random, a: socket.socket, b: socket.socket) -> None:
        src.settimeout(1.0)
        try:
            while not state["dead"] and not self.stop.is_set():
                try:
                    data = src.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                if state["blackhole"]:
                    continue
                if self.faults.is_set():
                    r = rng.random()
                    if r < 0.004:
                        self._count("reset")
                        state["dead"] = True
                        _reset(a)
                        _reset(b)
                        return
                    if r < 0.007:
                        self._count("drop")  # silence from here on: only timeouts tell
                        state["blackhole"] = True
                        continue
                    if r < 0.06:
                        self._count("delay")
                        time.sleep(rng.uniform(0.0, 0.4))
                    elif r < 0.2 and len(data) > 1:
                        self._count("partial")
                        cut = rng.randrange(1, len(data))
                        dst.sendall(data[:cut])
                        if rng.random() < 0.03:  # reset in the middle of a write
                            self._count("reset mid-write")
                            state["dead"] = True
                            _reset(a)
                            _reset(b)
                            return
                        time.sleep(rng.uniform(0.001, 0.05))
                        data = data[cut:]
                dst.sendall(data)
        except OSError:
            state["dead"] = True
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()


class CollectorProcess:
    """``trailgate collector`` in the target home, on a fixed port, restartable."""

    def __init__(self, home: Home, port: int, log: Path):
        self.home, self.port, self.log = home, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "trailgate.cli", "--home", str(self.home.path),
                 "collector", "--port", str(self.port), "--token-alias", "pumps",
                 "--allow", "PUMP1", "--timeout", "20"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"collector did not start:\n"
                                         f"{self.log.read_text()[-3000:]}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _homes(tmp_path: Path, proxy_port: int) -> tuple[Home, Home]:
    target = replicat_home(tmp_path / "target", f"REPLICAT rep1\nTARGETDELTA "
                           f"{tmp_path / 'lake'}\nMAP public.*, TARGET lake.*;\n",
                           checkpoint_table=None)
    source = Home(tmp_path / "source").create()
    for home, user in ((target, "collector"), (source, "pump1")):
        CredentialStore(home.path).add("pumps", user, TOKEN, TOKEN_DOMAIN)
    source.add_group(GroupInfo("PUMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                               begin={"seqno": 0, "rba": 0}))
    source.add_trail("PUMP1", TrailInfo("./dirdat/rt", "RMTTRAIL", megabytes=1))
    source.param_file("PUMP1").write_text(
        f"EXTRACT pump1\nSPARK MASTER local[2]\nRMTHOST 127.0.0.1, PORT {proxy_port}, "
        f"TOKENALIAS pumps, COMPRESS, TIMEOUT 3, KEEPSTAGING\nRMTTRAIL ./dirdat/rt\n"
        f"PASSTHRU\nTABLE public.*;\n")
    return source, target


def test_remote_pump_through_faults_and_kill9(tmp_path: Path) -> None:
    rng = random.Random(2211)
    collector_port = free_port()
    proxy = FaultProxy(collector_port, seed=7)
    proxy.start()
    source, target = _homes(tmp_path, proxy.port)
    collector = CollectorProcess(target, collector_port, tmp_path / "collector.log")
    collector.start()
    work = Increments(seed=22, accounts=60)
    feeder = TrailFeeder(source.dirdat / "aa", work, limit=10**9, per_tick=20)
    feeder.start()
    log = tmp_path / "pump.log"
    pump = None
    kills = ["pump", "collector"] * 4
    rng.shuffle(kills)
    try:
        pump = start_group(source, "extract", "PUMP1", "--trigger", "0.3", log=log)
        for n, what in enumerate(kills):
            seen = _written(source)
            wait_for(lambda s=seen: _written(source) > s, 600, "a checkpoint", log)
            if what == "pump":
                if n % 2:
                    wait_for(lambda: _in_batch(source), 300, "a batch in flight", log, 0.005)
                else:
                    time.sleep(rng.uniform(0, 0.5))
                assert pump.poll() is None, log.read_text()[-3000:]
                kill9(pump, log, f"of the Pump ({n})")
                pump = start_group(source, "extract", "PUMP1", "--trigger", "0.3", log=log)
            else:
                time.sleep(rng.uniform(0, 1.0))
                collector.kill()
                with open(tmp_path / "collector.log", "a") as fh:
                    fh.write(f"\n=== test: kill -9 of the collector ({n}) ===\n")
                time.sleep(rng.uniform(0, 2.0))
                collector.start()
        feeder.finish()
        proxy.faults.clear()
        os.kill(pump.pid, signal.SIGKILL)
        pump.wait(timeout=30)
        done = run_group(source, "extract", "PUMP1", "--once", timeout=900)
        assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-3000:]
    finally:
        feeder.stop.set()
        if pump is not None and pump.poll() is None:
            pump.kill()
            pump.wait()
        collector.stop()
        proxy.stop.set()
    remote = target.dirdat / "rt"
    staging = source.path / "dirrmt" / "PUMP1" / "rt"
    assert trail_bytes(remote) == trail_bytes(staging)  # byte for byte, every file
    got = _transactions(remote)
    csns = [t[0] for t in got]
    assert len(csns) == len(set(csns)), "a transaction is in the remote trail twice"
    assert got == _transactions(source.dirdat / "aa")
    assert "retrying in" in source.ggserr_log.read_text()
    assert "Traceback" not in (tmp_path / "collector.log").read_text()
    assert {"reset", "drop", "delay", "partial"} <= set(proxy.stats), proxy.stats
    applied = run_group(target, "replicat", "REP1", "--once", timeout=1800)
    assert applied.returncode == 0, applied.stderr[-3000:]
    rows = DeltaTable(str(tmp_path / "lake" / "lake" / "accounts")).to_pyarrow_table()
    assert {r["id"]: r["counter"] for r in rows.to_pylist()} == work.expected_accounts()
    size = sum(len(b) for b in trail_bytes(remote).values())
    print(f"\n{len(got)} transactions, {size} bytes, {len(trail_bytes(remote))} files; "
          f"faults {dict(proxy.stats)}; kills {kills}")
