"""A Spark standalone cluster for tests: a master and workers as separate JVMs, started with
pyspark's own ``spark-class`` (``org.apache.spark.deploy.master.Master`` / ``…worker.Worker``),
small memory, on 127.0.0.1.  Each daemon runs in its own process group, so killing a
worker takes its executors and their Python workers with it, as losing a node would."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED = "Successfully registered with master"


#: For short test jobs: every JVM compiles with C1 only and collects with the serial
#: collector, which starts them sooner and leaves the small machine's cores to the work (the
#: JIT's C2 threads and a parallel collector's threads cost more than they give back here).
QUICK_JVM = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


def daemon_env(work: Path, quick: bool = False) -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", SPARK_LOG_DIR=str(work / "logs"),
               SPARK_NO_DAEMONIZE="1")
    if quick:  # the daemons, and the executors they start, which inherit it
        env.update(QUICK_JVM)
    return env


class StandaloneCluster:
    """``start()`` the master and ``workers`` workers (started together; ``wait=False``
    returns once the master is up, ``wait_workers()`` then waits for them to register);
    ``kill_worker()`` / ``start_worker()``; ``stop()`` ends every daemon this object
    started (by process group id).  ``quick``: the JVMs of :data:`QUICK_JVM`."""

    def __init__(self, work: Path, *, cores: int = 2, memory: str = "1g", workers: int = 1,
                 quick: bool = False):
        self.work = work
        self.cores, self.memory = cores, memory
        self.initial_workers, self.quick = workers, quick
        self.url = ""
        self.master: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self._registering: list[tuple[subprocess.Popen[bytes], Path]] = []
        work.mkdir(parents=True, exist_ok=True)

    def _spawn(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.work / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen([str(SPARK_CLASS), *args], stdout=out,
                                    stderr=subprocess.STDOUT,
                                    env=daemon_env(self.work, self.quick),
                                    start_new_session=True)
        return proc, log

    @staticmethod
    def _wait_log(proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str] | str,
                  timeout: float) -> re.Match[str] | str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            found = (pattern.search(text) if isinstance(pattern, re.Pattern)
                     else pattern if pattern in text else None)
            if found:
                return found
            if proc.poll() is not None:
                raise AssertionError(f"{log.name} exited ({proc.returncode}):\n{text[-3000:]}")
            time.sleep(0.1)
        raise AssertionError(f"{log.name}: not ready after {timeout} s:\n"
                             f"{log.read_text(errors='replace')[-3000:]}")

    def start(self, timeout: float = 120, *, wait: bool = True) -> StandaloneCluster:
        # port 0 lets the master's RPC and web UI take free ports (no clash to retry); the
        # URL it took is read from its log
        self.master, log = self._spawn("master", "org.apache.spark.deploy.master.Master",
                                       "--host", "127.0.0.1", "--port", "0",
                                       "--webui-port", "0")
        found = self._wait_log(self.master, log, _MASTER_URL, timeout)
        assert isinstance(found, re.Match)
        self.url = found.group(1)
        self._registering = [self._spawn_worker() for _ in range(self.initial_workers)]
        if wait:
            self.wait_workers(timeout)
        return self

    def wait_workers(self, timeout: float = 120) -> None:
        """Wait for the workers started to register with the master."""
        while self._registering:
            proc, log = self._registering.pop(0)
            self._wait_log(proc, log, _REGISTERED, timeout)

    def _spawn_worker(self) -> tuple[subprocess.Popen[bytes], Path]:
        n = len(self.workers)
        proc, log = self._spawn(f"worker{n}", "org.apache.spark.deploy.worker.Worker",
                                self.url, "--host", "127.0.0.1", "--port", "0",
                                "--webui-port", "0", "--cores", str(self.cores),
                                "--memory", self.memory,
                                "--work-dir", str(self.work / f"worker{n}"))
        self.workers.append(proc)
        return proc, log

    def start_worker(self, timeout: float = 120) -> subprocess.Popen[bytes]:
        proc, log = self._spawn_worker()
        self._wait_log(proc, log, _REGISTERED, timeout)
        return proc

    def kill_worker(self) -> None:
        """kill -9 the newest live worker and everything it started (executors, Python
        workers): its process group."""
        proc = next(p for p in reversed(self.workers) if p.poll() is None)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
