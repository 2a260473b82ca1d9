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


def daemon_env(work: Path) -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", SPARK_LOG_DIR=str(work / "logs"),
               SPARK_NO_DAEMONIZE="1")
    return env


class StandaloneCluster:
    """``start()`` the master and one worker; ``kill_worker()`` / ``start_worker()``;
    ``stop()`` ends every daemon this object started (by process group id)."""

    def __init__(self, work: Path, *, cores: int = 2, memory: str = "1g"):
        self.work = work
        self.cores, self.memory = cores, memory
        self.url = ""
        self.master: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        work.mkdir(parents=True, exist_ok=True)

    def _spawn(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.work / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen([str(SPARK_CLASS), *args], stdout=out,
                                    stderr=subprocess.STDOUT, env=daemon_env(self.work),
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

    def start(self, timeout: float = 120) -> StandaloneCluster:
        # port 0 lets the master's RPC and web UI take free ports (no clash to retry); the
        # URL it took is read from its log
        self.master, log = self._spawn("master", "org.apache.spark.deploy.master.Master",
                                       "--host", "127.0.0.1", "--port", "0",
                                       "--webui-port", "0")
        found = self._wait_log(self.master, log, _MASTER_URL, timeout)
        assert isinstance(found, re.Match)
        self.url = found.group(1)
        self.start_worker(timeout)
        return self

    def start_worker(self, timeout: float = 120) -> subprocess.Popen[bytes]:
        n = len(self.workers)
        proc, log = self._spawn(f"worker{n}", "org.apache.spark.deploy.worker.Worker",
                                self.url, "--host", "127.0.0.1", "--port", "0",
                                "--webui-port", "0", "--cores", str(self.cores),
                                "--memory", self.memory,
                                "--work-dir", str(self.work / f"worker{n}"))
        self.workers.append(proc)
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
