"""Property-based fuzzing of the collector protocol (heavy suite): whatever a peer sends —
random bytes, frames of random types and lengths, JSON of the wrong shape, WRITEs with
gaps, bad codecs or bombs, before or after a valid handshake — the collector ends that
session with a clear message (no session fails with anything but a NetworkError) and keeps
serving others; and the Pump's side, given a random answer, raises NetworkError, never
anything else."""

from __future__ import annotations

import json
import socket
import struct
import threading
import zlib
from pathlib import Path

import pytest
from collector_support import running_collector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trailgate.collector.client import RemoteTarget, TrailMirror
from trailgate.collector.protocol import HELLO, PROTOCOL, WRITE, auth_mac
from trailgate.errors import NetworkError
from trailgate.trail import TrailWriter

pytestmark = pytest.mark.heavy

TOKEN = "s3cret-token"
_HEAD = struct.Struct("!BI")


def _frame(kind: int, payload: bytes) -> bytes:
    return _HEAD.pack(kind, len(payload)) + payload


def _recv_frame(sock: socket.socket) -> tuple[int, bytes]:
    head = b""
    while len(head) < 5:
        chunk = sock.recv(5 - len(head))
        if not chunk:
            return -1, b""
        head += chunk
    kind, length = _HEAD.unpack(head)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            break
        body += chunk
    return kind, body


def _handshake(sock: socket.socket) -> None:
    _, body = _recv_frame(sock)
    nonce = json.loads(body)["nonce"]
    hello = {"protocol": PROTOCOL, "sender": "PUMP1", "trail": "./dirdat/rt",
             "compress": "zlib", "mac": auth_mac(TOKEN, nonce, "PUMP1", "./dirdat/rt")}
    sock.sendall(_frame(HELLO, json.dumps(hello).encode()))
    kind, _ = _recv_frame(sock)
    assert kind == 3  # WELCOME


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4), max_leaves=10)
_messages = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda k, p: _frame(k, p), st.integers(0, 255), st.binary(max_size=200)),
    st.builds(lambda k, v: _frame(k, json.dumps(v).encode()), st.integers(1, 9), _json_values),
    st.builds(lambda s, o, c, d: _frame(WRITE, struct.pack("!IQB", s, o, c) + d),
              st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 3),
              st.binary(max_size=100)),
    st.just(_frame(WRITE, struct.pack("!IQB", 0, 0, 1) + zlib.compress(b"\0" * (4 << 20)))),
    st.just(_HEAD.pack(WRITE, 0xFFFFFFFF)),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.booleans(), messages=st.lists(_messages, min_size=1, max_size=4))
def test_collector_survives_any_peer(tmp_path: Path, before: bool, messages: list[bytes]
                                     ) -> None:
    events: list[tuple[str, str]] = []
    home = tmp_path / "home"
    with running_collector(home, log=events, timeout=2.0) as collector:
        with socket.create_connection(("127.0.0.1", collector.port), timeout=5) as sock:
            if not before:
                _handshake(sock)
            else:
                _recv_frame(sock)
            try:
                for data in messages:
                    sock.sendall(data)
                sock.shutdown(socket.SHUT_WR)
                while sock.recv(65536):
                    pass
            except OSError:
                pass
        # the collector still serves a well-behaved Pump afterwards
        local = tmp_path / "src" / "rt"
        if not local.parent.exists():
            writer = TrailWriter(local, megabytes=1, fsync=False)
            writer.write_comment("fuzz")
            writer.close()
        TrailMirror(str(local), RemoteTarget("127.0.0.1", collector.port, "./dirdat/ok",
                                             "PUMP1", token=TOKEN, timeout=5.0)).sync()
    assert not any(level == "ERROR" for level, _ in events), events  # no session crashed


def _answering(answer: bytes) -> int:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            conn.sendall(answer)
            conn.settimeout(1.0)
            while conn.recv(65536):
                pass
        except OSError:
            pass
        conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1])


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_messages)
def test_pump_side_raises_only_network_errors(tmp_path: Path, answer: bytes) -> None:
    local = tmp_path / "rt"
    if not local.parent.joinpath("rt000000000").exists():
        writer = TrailWriter(local, megabytes=1, fsync=False)
        writer.write_comment("fuzz")
        writer.close()
    port = _answering(answer)
    with pytest.raises(NetworkError):
        TrailMirror(str(local), RemoteTarget("127.0.0.1", port, "./dirdat/rt", "PUMP1",
                                             token=TOKEN, timeout=0.5)).sync()
