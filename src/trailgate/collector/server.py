"""The collector: accepts Data Pumps' connections and writes the remote trails they send.

A thread per connection; one sender per trail at a time (a newer session takes a trail
over from one a network fault left half-open).  It writes the bytes it is sent where it is
told, refuses gaps, and acknowledges a length only after fsync.  Every sender is
authenticated first (a client certificate from a CA, or the HMAC of a shared token); a
collector configured with neither refuses to start.  docs/pump.md, "The collector".
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.checkpoint import fsync_dir
from trailgate.collector.protocol import (
    ACK,
    CODECS,
    COMMIT,
    ERROR,
    HELLO,
    PROTOCOL,
    SERVER_HELLO,
    STAT,
    STATUS,
    WELCOME,
    WINDOW,
    WRITE,
    Connection,
    PeerClosed,
    auth_mac,
    crc,
    decode_write,
    need,
)
from trailgate.collector.tls import TlsFiles, handshake_error, peer_name, server_context
from trailgate.collector.tokens import stored_token
from trailgate.errors import ConfigError, NetworkError
from trailgate.trail.naming import TrailName

__all__ = ["Collector", "CollectorSettings"]

Log = Callable[[str, str], None]  # (level, message)


@dataclass(frozen=True, slots=True)
class CollectorSettings:
    """How a collector listens and whom it lets write (docs/pump.md)."""

    home: Path
    bind: str = "127.0.0.1"
    port: int = 7819
    tls: ssl.SSLContext | None = None
    client_certs: bool = False  # tls requires and verifies client certificates
    token: str | None = None  # the shared token (credential store), proven by HMAC
    allow: frozenset[str] = field(default_factory=frozenset)  # sender names, upper case
    timeout: float = 300.0  # seconds a session may stay silent
    handshake_timeout: float = 10.0

    @classmethod
    def of(cls, home: Path, bind: str, port: int, tls: TlsFiles | None,
           token_alias: str | None, allow: Iterable[str], *, where: str = "collector",
           timeout: float = 300.0) -> CollectorSettings:
        """Settings from what a person wrote (the collector command's options, mgr.prm's
        COLLECTOR): the TLS files opened (``where`` names them in errors), the token
        looked up in the credential store, the sender names in upper case."""
        return cls(home=home, bind=bind, port=port,
                   tls=server_context(tls, where) if tls is not None and tls.cert else None,
                   client_certs=tls is not None and bool(tls.ca),
                   token=stored_token(home, token_alias),
                   allow=frozenset(a.upper() for a in allow), timeout=timeout)

    def check(self) -> None:
        if self.token is None and not self.client_certs:
            raise ConfigError("a collector accepts only senders it can authenticate: give "
                              "--token-alias ALIAS (a token in the credential store's "
                              "Collector domain) or --tls-ca FILE (client certificates)")


class _Trails:
    """Which session writes which trail; a newcomer takes a trail over."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owners: dict[str, _Session] = {}

    def claim(self, key: str, session: _Session) -> None:
        with self._cond:
            old = self._owners.get(key)
            if old is not None:
                old.kick()
            if not self._cond.wait_for(lambda: key not in self._owners, timeout=15.0):
                raise NetworkError(f"trail {key} is still being written by "
                                   f"{old.peer if old else 'another session'}")
            self._owners[key] = session

    def release(self, key: str, session: _Session) -> None:
        with self._cond:
            if self._owners.get(key) is session:
                del self._owners[key]
                self._cond.notify_all()

    def sessions(self) -> list[_Session]:
        with self._cond:
            return list(self._owners.values())


class _Session:
    """One sender's connection: handshake, then STAT / WRITE / COMMIT until it ends."""

    def __init__(self, collector: Collector, sock: socket.socket, peer: str):
        self.collector = collector
        self.settings = collector.settings
        self.raw = sock
        self.peer = peer
        self.conn: Connection | None = None
        self.trail: TrailName | None = None
        self.codec = 0
        self._fds: dict[int, int] = {}
        self._created: set[int] = set()
        self._kicked = False
        self._said_nothing = False

    def kick(self) -> None:
        """End this session from another thread (a newer one takes its trail)."""
        self._kicked = True
        with contextlib.suppress(OSError):
            self.raw.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        key = None
        log = self.collector.log
        try:
            sock = self.raw
            if self.settings.tls is not None:
                sock.settimeout(self.settings.handshake_timeout)
                try:
                    sock = self.settings.tls.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as exc:
                    raise handshake_error(exc, self.peer, server=True) from None
            self.conn = Connection(sock, self.peer, self.settings.handshake_timeout,
                                   server=True)
            sender, key = self._handshake(sock)
            self.collector.trails.claim(key, self)
            self.conn.sock.settimeout(self.settings.timeout)
            assert self.trail is not None
            self.conn.send_json(WELCOME, {"protocol": PROTOCOL, "trail": str(self.trail)})
            log("INFO", f"collector: {sender} from {self.peer} writes trail {self.trail}")
            self._serve()
        except NetworkError as exc:
            if self._kicked:
                log("INFO", f"collector: session from {self.peer} ended: a new session "
                            f"took its trail over")
            elif self._said_nothing:  # a port probe, a health check
                log("INFO", f"collector: {self.peer} connected and closed without a word")
            else:
                log("WARNING", f"collector: session from {self.peer} ended: {exc}")
                self._tell(str(exc))
        except OSError as exc:  # the collector's own disk: full, read-only, permissions
            where = f" ({exc.filename})" if exc.filename else ""
            message = (f"writing remote trail {self.trail} failed: {exc.strerror or exc}{where}; "
                       f"free space or correct permissions on the collector's host (the Pump "
                       f"retries and resends what was not acknowledged)")
            log("ERROR", f"collector: {message}")
            self._tell(message)
        except Exception as exc:  # a bug must end one session, never the collector
            log("ERROR", f"collector: session from {self.peer} failed: "
                         f"{type(exc).__name__}: {exc}")
            self._tell(f"the collector failed: {type(exc).__name__}: {exc}")
        finally:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if key is not None:
                self.collector.trails.release(key, self)
            if self.conn is not None:
                self.conn.close()
            else:
                self.raw.close()

    def _tell(self, message: str) -> None:
        if self.conn is not None:
            try:
                self.conn.sock.settimeout(2.0)
                self.conn.send_json(ERROR, {"message": message})
            except NetworkError:
                pass

    def _handshake(self, sock: socket.socket) -> tuple[str, str]:
        assert self.conn is not None
        nonce = secrets.token_hex(16)
        self.conn.send_json(SERVER_HELLO, {"protocol": PROTOCOL, "nonce": nonce})
        try:
            hello = self.conn.receive_json(HELLO)
        except PeerClosed:
            self._said_nothing = True
            raise
        if hello.get("protocol") != PROTOCOL:
            raise NetworkError(f"{self.peer}: the sender speaks {hello.get('protocol')!r}, "
                               f"this collector {PROTOCOL}")
        sender = need(hello, "sender", str, self.peer)
        label = need(hello, "trail", str, self.peer)
        codec = hello.get("compress") or "none"
        if codec not in CODECS:
            raise NetworkError(f"{self.peer}: unknown compression {codec!r} (known: "
                               f"{', '.join(CODECS)})")
        self.codec = CODECS[codec]
        identity = sender
        if self.settings.client_certs and isinstance(sock, ssl.SSLSocket):
            identity = peer_name(sock) or sender
        if self.settings.token is not None:
            mac = hello.get("mac")
            want = auth_mac(self.settings.token, nonce, sender, label)
            if not isinstance(mac, str) or not hmac.compare_digest(mac, want):
                raise NetworkError(f"{self.peer}: refused sender {sender}: it did not prove "
                                   f"the collector's token (RMTHOST …, TOKENALIAS names a "
                                   f"credential with the same token)")
        if self.settings.allow and identity.upper() not in self.settings.allow:
            raise NetworkError(f"{self.peer}: refused sender {identity}: not among the "
                               f"collector's allowed senders")
        self.trail = self._resolve(label)
        return identity, str(self.trail)

    def _resolve(self, label: str) -> TrailName:
        home = self.settings.home.resolve()
        path = Path(label).expanduser()
        path = (path if path.is_absolute() else home / path).resolve()
        if not path.is_relative_to(home):
            raise NetworkError(f"{self.peer}: trail {label} is outside the collector's home "
                               f"{home}; name a trail under it (e.g. ./dirdat/rt)")
        try:
            trail = TrailName(path)
        except ValueError as exc:
            raise NetworkError(f"{self.peer}: {exc}") from None
        trail.directory.mkdir(parents=True, exist_ok=True)
        return trail

    # -- requests --------------------------------------------------------------------------

    def _serve(self) -> None:
        assert self.conn is not None and self.trail is not None
        while True:
            kind, payload = self.conn.receive()
            if kind == WRITE:
                w = decode_write(payload, self.peer, compressed=self.codec != 0)
                self._write(w.seqno, w.offset, w.data)
                continue
            try:
                message: dict[str, Any] = json.loads(payload.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise NetworkError(f"{self.peer}: a request that is not JSON") from None
            if not isinstance(message, dict):
                raise NetworkError(f"{self.peer}: a request that is not a JSON object")
            if kind == STAT:
                self.conn.send_json(STATUS, self._stat(message.get("seqno")))
            elif kind == COMMIT:
                seqno = need(message, "seqno", int, self.peer)
                size = need(message, "size", int, self.peer)
                self._commit(seqno, size)
                self.conn.send_json(ACK, {"seqno": seqno, "size": size})
            else:
                raise NetworkError(f"{self.peer}: unexpected request type {kind}")

    def _fd(self, seqno: int, create: bool) -> int | None:
        fd = self._fds.get(seqno)
        if fd is not None:
            return fd
        assert self.trail is not None
        if seqno < 0 or seqno > 999_999_999:
            raise NetworkError(f"{self.peer}: file sequence number {seqno} out of range")
        path = self.trail.file(seqno)
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        existed = path.exists()
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            return None
        if not existed:
            self._created.add(seqno)
        for old in [s for s in self._fds if s < seqno - 1]:  # finished files
            os.close(self._fds.pop(old))
        self._fds[seqno] = fd
        return fd

    def _stat(self, seqno: object) -> dict[str, Any]:
        assert self.trail is not None
        seqs = self.trail.sequence_numbers()
        out: dict[str, Any] = {"last": seqs[-1] if seqs else None}
        if isinstance(seqno, int) and not isinstance(seqno, bool):
            fd = self._fd(seqno, create=False)
            size = head = tail = 0
            if fd is not None:
                os.fsync(fd)  # what STATUS reports is durable
                size = os.fstat(fd).st_size
                head = crc(os.pread(fd, min(size, WINDOW), 0))
                start = max(0, size - WINDOW)
                tail = crc(os.pread(fd, size - start, start))
            else:
                head = tail = crc(b"")
            out.update({"seqno": seqno, "size": size, "head": head, "tail": tail})
        return out

    def _write(self, seqno: int, offset: int, data: bytes) -> None:
        fd = self._fd(seqno, create=True)
        assert fd is not None
        size = os.fstat(fd).st_size
        if offset > size:
            raise NetworkError(f"{self.peer}: a WRITE at RBA {offset} of file {seqno} would "
                               f"leave a gap (the file holds {size} bytes)")
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n

    def _commit(self, seqno: int, size: int) -> None:
        fd = self._fd(seqno, create=True)
        assert fd is not None and self.trail is not None
        have = os.fstat(fd).st_size
        if have < size:
            raise NetworkError(f"{self.peer}: COMMIT of {size} bytes of file {seqno}, but "
                               f"the collector holds {have}: data was lost on the way")
        if have > size:
            os.ftruncate(fd, size)
        os.fsync(fd)
        if seqno in self._created:
            fsync_dir(self.trail.directory)
            self._created.discard(seqno)


class Collector:
    """Listens and serves sessions in threads; :meth:`serve_forever` or :meth:`start`."""

    def __init__(self, settings: CollectorSettings, log: Log | None = None):
        settings.check()
        self.settings = settings
        self.log: Log = log or (lambda level, message: None)
        self.trails = _Trails()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self._listener = socket.create_server((settings.bind, settings.port),
                                                  reuse_port=False)
        except OSError as exc:
            raise ConfigError(f"collector: cannot listen on {settings.bind}:{settings.port}: "
                              f"{exc.strerror or exc}") from None
        self._listener.settimeout(0.5)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def serve_forever(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    sock, addr = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError as exc:
                    if self._stop.is_set():
                        break
                    # out of file descriptors, say: the listener stays, sessions end
                    self.log("ERROR", f"collector: accepting a connection failed: "
                                      f"{exc.strerror or exc}; trying again in 1 s")
                    self._stop.wait(1.0)
                    continue
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                session = _Session(self, sock, f"{addr[0]}:{addr[1]}")
                threading.Thread(target=session.run, name=f"collector-{addr[1]}",
                                 daemon=True).start()
        finally:
            self._listener.close()

    def start(self) -> Collector:
        """Serve in a background thread (tests, the benchmark)."""
        self._thread = threading.Thread(target=self.serve_forever, name="collector",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for session in self.trails.sessions():
            session.kick()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        else:
            self._listener.close()
