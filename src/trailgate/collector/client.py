"""The Pump's side: a local trail mirrored, byte for byte, to a collector's remote trail.

The Pump writes its output as a local Pump does, into a staging trail, and
:meth:`TrailMirror.sync` brings the remote trail level with it before each checkpoint: it
asks the collector what each file holds (length, head and tail checksums), sends what is
missing or different, and waits for the acknowledgement that the file is fsynced.  It is
idempotent, so a retry after any fault resumes from what the collector holds, nothing
missing, nothing twice.  docs/pump.md, "Remote trails".
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trailgate.collector.protocol import (
    ACK,
    COMMIT,
    HELLO,
    MAX_CHUNK,
    PROTOCOL,
    SERVER_HELLO,
    STAT,
    STATUS,
    WELCOME,
    WINDOW,
    WRITE,
    Connection,
    auth_mac,
    crc,
    encode_write,
    need,
)
from trailgate.collector.tls import TlsFiles, client_context, handshake_error
from trailgate.errors import NetworkError
from trailgate.trail.naming import TrailName

__all__ = ["RemoteTarget", "TrailMirror", "connect"]


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    """Where and how a Pump reaches its collector (``RMTHOST`` and ``RMTTRAIL``)."""

    host: str
    port: int  # 0: ask the Manager on ``mgrport`` where its collector listens
    trail: str  # the remote trail as RMTTRAIL names it (relative: to the collector's home)
    sender: str  # the Pump's group name
    tls: TlsFiles | None = None  # None: plain TCP
    token: str | None = field(default=None, repr=False)
    compress: bool = False
    timeout: float = 60.0
    retries: int | None = None  # failed attempts in a row before giving up (None: never)
    mgrport: int | None = None

    @property
    def address(self) -> str:
        if not self.port and self.mgrport:
            return f"collector of the Manager {self.host}:{self.mgrport}"
        return f"collector {self.host}:{self.port}"


class _Link:
    """One authenticated session with the collector."""

    def __init__(self, conn: Connection, target: RemoteTarget, remote_path: str):
        self.conn = conn
        self.target = target
        self.remote_path = remote_path
        self.codec = "zlib" if target.compress else "none"

    def stat(self, seqno: int | None) -> dict[str, Any]:
        self.conn.send_json(STAT, {"seqno": seqno})
        status = self.conn.receive_json(STATUS)
        if seqno is not None:
            for name in ("size", "head", "tail"):
                need(status, name, int, self.conn.peer)
        last = status.get("last")
        if last is not None and (not isinstance(last, int) or isinstance(last, bool)):
            raise NetworkError(f"{self.conn.peer}: STATUS field 'last' is not a number")
        return status

    def write(self, seqno: int, offset: int, data: bytes) -> None:
        self.conn.send(WRITE, encode_write(seqno, offset, data, self.codec))

    def commit(self, seqno: int, size: int) -> None:
        self.conn.send_json(COMMIT, {"seqno": seqno, "size": size})
        ack = self.conn.receive_json(ACK)
        if ack.get("seqno") != seqno or ack.get("size") != size:
            raise NetworkError(f"{self.conn.peer}: acknowledged {ack}, not file {seqno} at "
                               f"{size} bytes")

    def close(self) -> None:
        self.conn.close()


def _connect_error(exc: OSError, target: RemoteTarget, *,
                   manager: bool = False) -> NetworkError:
    where = f"Manager {target.host}:{target.port}" if manager else target.address
    if isinstance(exc, socket.gaierror):
        return NetworkError(f"{where}: host {target.host} cannot be resolved "
                            f"({exc.strerror}); check RMTHOST")
    if isinstance(exc, ConnectionRefusedError):
        if manager:
            return NetworkError(f"{where}: connection refused: is the Manager running there "
                                f"(START MANAGER), with PORT {target.port}?")
        return NetworkError(f"{where}: connection refused: is a collector running there "
                            f"(trailgate collector --port {target.port})?")
    if isinstance(exc, TimeoutError):
        return NetworkError(f"{where}: no answer within {target.timeout:.0f} s (host down, "
                            f"or a firewall drops the connection)")
    return NetworkError(f"{where}: cannot connect: {exc.strerror or exc}")


def manager_collector_port(target: RemoteTarget) -> int:
    """``RMTHOST host, MGRPORT m``: the port of the collector the Manager on ``host:m``
    runs, from its open ``GET /collector``."""
    import json
    import urllib.error
    import urllib.request

    assert target.mgrport is not None
    where = f"Manager {target.host}:{target.mgrport}"
    host = f"[{target.host}]" if ":" in target.host else target.host
    url = f"http://{host}:{target.mgrport}/collector"
    try:
        with urllib.request.urlopen(url, timeout=target.timeout) as answer:
            data = json.loads(answer.read(65536).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(json.loads(detail).get("detail", detail))
        raise NetworkError(f"{where}: {detail or exc.reason} (HTTP {exc.code})") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, OSError):
            raise _connect_error(reason, RemoteTarget(
                target.host, target.mgrport, target.trail, target.sender,
                timeout=target.timeout), manager=True) from None
        raise NetworkError(f"{where}: {reason}") from None
    except (OSError, ValueError) as exc:
        raise NetworkError(f"{where}: no usable answer to GET /collector: {exc}") from None
    port = data.get("port") if isinstance(data, dict) else None
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise NetworkError(f"{where}: GET /collector answered without a port: {data!r}")
    return port


def connect(target: RemoteTarget) -> _Link:
    """A session: TCP, TLS if asked, the handshake (the token proven by HMAC)."""
    if not target.port and target.mgrport:
        target = dataclasses.replace(target, port=manager_collector_port(target))
    where = target.address
    ctx = client_context(target.tls, f"RMTHOST {target.host}") if target.tls else None
    try:
        sock = socket.create_connection((target.host, target.port), timeout=target.timeout)
    except OSError as exc:
        raise _connect_error(exc, target) from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ctx is not None:
        try:
            sock = ctx.wrap_socket(sock, server_hostname=target.host)
        except (ssl.SSLError, OSError) as exc:
            sock.close()
            raise handshake_error(exc, where, server=False) from None
    conn = Connection(sock, where, target.timeout, server=False)
    try:
        try:
            hello = conn.receive_json(SERVER_HELLO)
        except NetworkError as exc:
            if ctx is None and "closed" in str(exc):
                raise NetworkError(f"{exc} during the handshake: does the collector expect "
                                   f"TLS (RMTHOST …, TLS)?") from None
            raise
        if hello.get("protocol") != PROTOCOL:
            raise NetworkError(f"{where}: the collector speaks {hello.get('protocol')!r}, "
                               f"this Pump {PROTOCOL}")
        nonce = need(hello, "nonce", str, where)
        message: dict[str, Any] = {"protocol": PROTOCOL, "sender": target.sender,
                                   "trail": target.trail,
                                   "compress": "zlib" if target.compress else None}
        if target.token is not None:
            message["mac"] = auth_mac(target.token, nonce, target.sender, target.trail)
        conn.send_json(HELLO, message)
        welcome = conn.receive_json(WELCOME)
        return _Link(conn, target, str(welcome.get("trail", target.trail)))
    except BaseException:
        conn.close()
        raise


class TrailMirror:
    """Keeps a collector's remote trail equal to the local staging trail ``local``."""

    def __init__(self, local: str, target: RemoteTarget,
                 report: Callable[[str, str], None] | None = None):
        self.local = TrailName(local)
        self.target = target
        self.report = report or (lambda level, message: None)  # (level, message)
        self._link: _Link | None = None
        self._known: dict[int, tuple[int, int]] = {}  # seqno -> (size, head crc) acked
        self.remote_last: int | None = None
        self.bytes_sent = 0

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
        self._known.clear()

    def sync(self) -> None:
        """One attempt: the remote trail made equal to the local one and fsynced."""
        seqs = self.local.sequence_numbers()
        if not seqs:
            return
        if self._link is None:
            self._link = connect(self.target)
        link = self._link
        last = link.stat(None).get("last")
        if last is not None and last > seqs[-1]:
            raise NetworkError(f"{self.target.address}: remote trail {link.remote_path} "
                               f"holds file {last}, beyond this Pump's last file {seqs[-1]}: "
                               f"another writer has written it; give the Pump a trail of "
                               f"its own")
        if last is not None and last < seqs[0]:
            raise NetworkError(f"{self.target.address}: remote trail {link.remote_path} ends "
                               f"with file {last}, but this Pump's staging trail begins at "
                               f"file {seqs[0]}: the files between are gone from both (the "
                               f"collector's trail was reset or moved); restore them on the "
                               f"collector, or re-position the Pump and its Replicat")
        start = last if last is not None else seqs[0]
        for seq in seqs:
            if seq >= start:
                self._ship(link, seq)
        self.remote_last = seqs[-1]

    def _ship(self, link: _Link, seq: int) -> None:
        fd = os.open(self.local.file(seq), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            head = crc(os.pread(fd, min(size, WINDOW), 0))
            known = self._known.get(seq)
            if known is not None and known[1] == head and known[0] <= size:
                start = known[0]
                if start == size:
                    return
            else:
                start = self._compare(link, fd, seq, size)
            for offset in range(start, size, MAX_CHUNK):
                data = os.pread(fd, min(MAX_CHUNK, size - offset), offset)
                link.write(seq, offset, data)
                self.bytes_sent += len(data)
            link.commit(seq, size)
            self._known = {s: k for s, k in self._known.items() if s >= seq - 1}
            self._known[seq] = (size, head)
        finally:
            os.close(fd)

    def _compare(self, link: _Link, fd: int, seq: int, size: int) -> int:
        """Where to send file ``seq`` from: the collector's durable length, after putting
        right a head or tail that differs (a header completed since, a file a crashed
        writer began again)."""
        status = link.stat(seq)
        have = int(status["size"])
        if have > size:
            return 0  # the local file began again, shorter: rewrite, COMMIT truncates
        window = os.pread(fd, min(have, WINDOW), 0)
        if crc(window) != status["head"]:
            link.write(seq, 0, window)
        if have > WINDOW:
            tail_start = have - WINDOW
            if crc(os.pread(fd, WINDOW, tail_start)) != status["tail"]:
                return tail_start
        return have

    def _attempt(self) -> NetworkError | None:
        """One :meth:`sync` (two when a kept session turns out closed: the collector ends
        idle sessions); the error, or None."""
        tries = 2 if self._link is not None else 1
        error: NetworkError | None = None
        for _ in range(tries):
            try:
                self.sync()
                return None
            except NetworkError as exc:
                self.close()
                error = exc
        return error

    def sync_retrying(self, stopping: Callable[[], bool]) -> None:
        """:meth:`sync` until it succeeds, with backoff (1 s doubling to 30 s) and a report
        line per failure; gives up with the last error after ``target.retries`` failures
        in a row, or when ``stopping()`` says the Pump is stopping."""
        failures = 0
        delay = 1.0
        while True:
            error = self._attempt()
            if error is None:
                break
            failures += 1
            if self.target.retries is not None and failures > self.target.retries:
                raise NetworkError(f"{error} (gave up after {failures} attempts)")
            if stopping():
                raise error
            self.report("WARNING", f"{error}; retrying in {delay:.0f} s (attempt {failures})")
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and not stopping():
                time.sleep(0.1)
            delay = min(delay * 2, 30.0)
        if failures:
            self.report("INFO", f"{self.target.address}: remote trail {self.target.trail} "
                                f"level again after {failures} failed attempts")
