"""The collector protocol's frames: what a Data Pump and a collector say to each other.

Every frame is a type byte and a 4-byte big-endian length, then the payload: a JSON object
for control messages, a small binary header and trail bytes for ``WRITE``.  Lengths are
bounded and every read has a timeout, so a peer that sends garbage, too much or nothing
ends the session with a :class:`~trailgate.errors.NetworkError` naming the peer, never a
hang or a traceback.  The conversation itself is described in docs/pump.md ("The
collector protocol").
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import socket
import ssl
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from trailgate.collector.tls import handshake_error
from trailgate.errors import NetworkError

__all__ = [
    "ACK", "COMMIT", "ERROR", "HELLO", "MAX_CHUNK", "PROTOCOL", "SERVER_HELLO", "STAT",
    "STATUS", "WELCOME", "WINDOW", "WRITE", "Connection", "PeerClosed", "Write", "auth_mac", "crc",
    "decode_write", "encode_write", "need",
]

PROTOCOL = "trailgate-collector/1"

SERVER_HELLO, HELLO, WELCOME, ERROR, STAT, STATUS, WRITE, COMMIT, ACK = range(1, 10)
_NAMES = {SERVER_HELLO: "SERVER_HELLO", HELLO: "HELLO", WELCOME: "WELCOME", ERROR: "ERROR",
          STAT: "STAT", STATUS: "STATUS", WRITE: "WRITE", COMMIT: "COMMIT", ACK: "ACK"}

MAX_CHUNK = 1 << 20  # trail bytes in one WRITE
WINDOW = 1 << 16  # the head and tail windows a STATUS checksums
_MAX_JSON = 1 << 16
_MAX_WRITE = MAX_CHUNK + 64 + (MAX_CHUNK >> 4)  # a chunk that compression made no smaller
_HEAD = struct.Struct("!BI")
_WRITE_HEAD = struct.Struct("!IQB")  # seqno, offset, codec
CODECS = {"none": 0, "zlib": 1}


def crc(data: bytes | memoryview) -> int:
    """The checksum STATUS gives for a window of a file (CRC-32)."""
    return zlib.crc32(data) & 0xFFFFFFFF


def auth_mac(token: str, nonce: str, sender: str, trail: str) -> str:
    """The HELLO's proof of the shared token: HMAC-SHA256 over the collector's nonce, the
    sender and the trail (the token itself never crosses the wire)."""
    text = "\0".join((nonce, sender, trail)).encode()
    return hmac.new(token.encode(), text, hashlib.sha256).hexdigest()


class PeerClosed(NetworkError):
    """The peer closed the connection between two frames, with nothing of the next sent:
    before its first frame, a port probe or a health check."""


@dataclass(frozen=True, slots=True)
class Write:
    """One ``WRITE``: trail bytes for file ``seqno`` at ``offset``."""

    seqno: int
    offset: int
    data: bytes


def encode_write(seqno: int, offset: int, data: bytes, codec: str) -> bytes:
    if codec == "zlib":
        return _WRITE_HEAD.pack(seqno, offset, 1) + zlib.compress(data, 1)
    return _WRITE_HEAD.pack(seqno, offset, 0) + data


def decode_write(payload: bytes, peer: str, *, compressed: bool) -> Write:
    """A WRITE's payload; a bad one (short, unknown codec, a bomb, compressed when the
    HELLO did not agree to it) is a NetworkError."""
    if len(payload) < _WRITE_HEAD.size:
        raise NetworkError(f"{peer}: a WRITE frame of {len(payload)} bytes is too short")
    seqno, offset, codec = _WRITE_HEAD.unpack_from(payload)
    body = payload[_WRITE_HEAD.size:]
    if codec == 0:
        return Write(seqno, offset, bytes(body))
    if codec != 1 or not compressed:
        raise NetworkError(f"{peer}: a WRITE frame names codec {codec}, not the one the "
                           f"HELLO agreed")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, MAX_CHUNK)
    except zlib.error as exc:
        raise NetworkError(f"{peer}: a compressed WRITE frame does not inflate: {exc}") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise NetworkError(f"{peer}: a compressed WRITE frame inflates past {MAX_CHUNK} "
                           f"bytes or is cut short")
    return Write(seqno, offset, data)


class Connection:
    """A socket (plain or TLS) speaking frames, every read under ``timeout`` seconds."""

    def __init__(self, sock: socket.socket, peer: str, timeout: float, *, server: bool):
        self.sock = sock
        self.peer = peer
        self.server = server
        sock.settimeout(timeout)

    def send(self, kind: int, payload: bytes) -> None:
        try:
            self.sock.sendall(_HEAD.pack(kind, len(payload)) + payload
                              if len(payload) < 65536 else _HEAD.pack(kind, len(payload)))
            if len(payload) >= 65536:
                self.sock.sendall(payload)
        except ssl.SSLError as exc:  # TLS 1.3 refuses a client certificate after the handshake
            raise handshake_error(exc, self.peer, server=self.server) from None
        except TimeoutError:
            raise NetworkError(f"{self.peer}: the peer took no data for "
                               f"{self.sock.gettimeout():.0f} s (network stalled?)") from None
        except OSError as exc:
            raise NetworkError(f"{self.peer}: the connection broke while sending: "
                               f"{_reason(exc)}") from None

    def send_json(self, kind: int, message: dict[str, Any]) -> None:
        self.send(kind, json.dumps(message, separators=(",", ":")).encode())

    def _read(self, n: int, what: str, frame_start: bool = False) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            except ssl.SSLError as exc:
                raise handshake_error(exc, self.peer, server=self.server) from None
            except TimeoutError:
                raise NetworkError(f"{self.peer}: waited {self.sock.gettimeout():.0f} s for "
                                   f"{what} in vain (network stalled or the peer hung)"
                                   ) from None
            except ConnectionResetError as exc:
                # a peer that closes without reading what was sent resets the connection:
                # before anything of the next frame, a probe like one that closed cleanly
                closed = PeerClosed if frame_start and not buf else NetworkError
                raise closed(f"{self.peer}: the connection broke while waiting for {what}: "
                             f"{_reason(exc)}") from None
            except OSError as exc:
                raise NetworkError(f"{self.peer}: the connection broke while waiting for "
                                   f"{what}: {_reason(exc)}") from None
            if not chunk:
                if buf:
                    raise NetworkError(f"{self.peer}: the peer closed the connection in "
                                       f"the middle of {what}")
                closed = PeerClosed if frame_start else NetworkError
                raise closed(f"{self.peer}: the peer closed the connection (waiting for "
                             f"{what})")
            buf += chunk
        return bytes(buf)

    def receive(self) -> tuple[int, bytes]:
        """The next frame, its kind checked and its length bounded."""
        kind, length = _HEAD.unpack(self._read(_HEAD.size, "a frame", True))
        if kind not in _NAMES:
            raise NetworkError(f"{self.peer}: unknown frame type {kind} (not a trailgate "
                               f"collector peer, or a different protocol version)")
        limit = _MAX_WRITE if kind == WRITE else _MAX_JSON
        if length > limit:
            raise NetworkError(f"{self.peer}: a {_NAMES[kind]} frame of {length} bytes is "
                               f"over the {limit}-byte limit")
        return kind, self._read(length, f"a {_NAMES[kind]} frame")

    def receive_json(self, *expected: int) -> dict[str, Any]:
        """The next frame, which must be a JSON message of one of ``expected`` kinds; an
        ERROR frame from the peer becomes a NetworkError with the peer's words."""
        kind, payload = self.receive()
        try:
            message = json.loads(payload.decode("utf-8")) if kind != WRITE else None
        except (UnicodeDecodeError, ValueError):
            message = None
        if not isinstance(message, dict):
            raise NetworkError(f"{self.peer}: a {_NAMES[kind]} frame that is not a JSON "
                               f"object")
        if kind == ERROR and ERROR not in expected:
            raise NetworkError(f"{self.peer}: {message.get('message', 'refused')}")
        if kind not in expected:
            raise NetworkError(f"{self.peer}: expected "
                               f"{' or '.join(_NAMES[k] for k in expected)}, got "
                               f"{_NAMES[kind]}")
        return message

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def need(message: dict[str, Any], name: str, kind: type, peer: str) -> Any:
    """``message[name]``, which must be of ``kind``: a peer's bad message is an error, not a
    KeyError or a TypeError."""
    value = message.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise NetworkError(f"{peer}: message field {name!r} missing or not "
                           f"{getattr(kind, '__name__', kind)}")
    return value
