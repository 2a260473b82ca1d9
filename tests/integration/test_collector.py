"""The collector and the Pump's mirror over loopback (no Spark): the remote trail byte-equal to
the local one across files, header completion, a collector restart, lost and damaged bytes;
authentication (token, allowed senders, TLS certificates); clear errors for a refused
connection, an unknown host, a peer that is not a collector, a silent peer."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
from collector_support import free_port, make_certs, running_collector, trail_bytes

from trailgate.collector.client import RemoteTarget, TrailMirror
from trailgate.collector.server import Collector, CollectorSettings
from trailgate.collector.tls import TlsFiles
from trailgate.errors import ConfigError, NetworkError
from trailgate.model import Change, OpType, Transaction
from trailgate.trail import TrailWriter
from trailgate.trail.naming import TrailName

TOKEN = "s3cret-token"


def _txns(start: int, n: int, size: int = 4000) -> list[Transaction]:
    return [Transaction(f"0.{i}.1", i, [Change(OpType.INSERT, "public.t", io_time=1000 + i,
                                               after={0: str(i).encode(), 1: b"x" * size})])
            for i in range(start, start + n)]


def _write(trail: Path, txns: list[Transaction], close: bool = True) -> TrailWriter:
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    for txn in txns:
        writer.write_transaction(txn, {})
    if close:
        writer.close()
    else:
        writer.flush()
    return writer


def _target(port: int, **kw: object) -> RemoteTarget:
    base: dict[str, object] = {"host": "127.0.0.1", "port": port, "trail": "./dirdat/rt",
                               "sender": "PUMP1", "token": TOKEN, "timeout": 5.0}
    base.update(kw)
    return RemoteTarget(**base)  # type: ignore[arg-type]


def test_mirror_is_byte_equal_across_files_header_completion_and_restart(tmp_path: Path
                                                                          ) -> None:
    local = tmp_path / "src" / "rt"
    remote_home = tmp_path / "dst"
    remote = remote_home / "dirdat" / "rt"
    writer = _write(local, _txns(1, 600), close=False)  # > 1 MB: two files, one open
    assert len(TrailName(local).sequence_numbers()) >= 2
    with running_collector(remote_home) as collector:
        mirror = TrailMirror(str(local), _target(collector.port, compress=True))
        mirror.sync()
        assert trail_bytes(remote) == trail_bytes(local)
        writer.close()  # completes the open file's header (FileSize, LastCSN)
        mirror.sync()
        assert trail_bytes(remote) == trail_bytes(local)
        _write(local, _txns(601, 30))  # a new run: a new file
        mirror.sync()
        mirror.close()
    assert trail_bytes(remote) == trail_bytes(local)
    # a machine crash took the collector's unsynced bytes and zeroed some before them;
    # restarted on another port, the collector is put right from what the Pump has
    files = TrailName(remote)
    last = files.file(files.sequence_numbers()[-1])
    data = last.read_bytes()[: last.stat().st_size * 3 // 4]
    last.write_bytes(data[:-3000] + b"\0" * 3000)
    _write(local, _txns(700, 10))
    with running_collector(remote_home) as collector:
        mirror = TrailMirror(str(local), _target(collector.port))
        mirror.sync()
        mirror.close()
    assert trail_bytes(remote) == trail_bytes(local)


def test_sync_retrying_reports_and_waits_for_the_collector(tmp_path: Path) -> None:
    local = tmp_path / "src" / "rt"
    _write(local, _txns(1, 20))
    port = free_port()
    lines: list[str] = []
    mirror = TrailMirror(str(local), _target(port),
                         report=lambda level, line: lines.append(f"{level} {line}"))
    settings = CollectorSettings(home=tmp_path / "dst", port=port, token=TOKEN, timeout=5.0)

    def late() -> None:
        time.sleep(0.5)
        Collector(settings).start()

    threading.Thread(target=late, daemon=True).start()
    mirror.sync_retrying(lambda: False)
    mirror.close()
    assert trail_bytes(tmp_path / "dst" / "dirdat" / "rt") == trail_bytes(local)
    assert lines[0].startswith("WARNING") and "connection refused" in lines[0]
    assert "retrying in 1 s" in lines[0]
    assert lines[-1].startswith("INFO") and "level again after" in lines[-1]
    stop = TrailMirror(str(local), _target(free_port(), retries=1))
    with pytest.raises(NetworkError, match="gave up after 2 attempts"):
        stop.sync_retrying(lambda: False)


def test_a_collector_refuses_senders_it_does_not_know(tmp_path: Path) -> None:
    local = tmp_path / "src" / "rt"
    _write(local, _txns(1, 5))
    with pytest.raises(ConfigError, match="accepts only senders it can authenticate"):
        CollectorSettings(home=tmp_path / "dst", token=None).check()
    events: list[tuple[str, str]] = []
    with running_collector(tmp_path / "dst", allow=frozenset({"PUMP1"}),
                           log=events) as collector:
        with pytest.raises(NetworkError, match="did not prove the collector's token"):
            TrailMirror(str(local), _target(collector.port, token="wrong")).sync()
        with pytest.raises(NetworkError, match="did not prove the collector's token"):
            TrailMirror(str(local), _target(collector.port, token=None)).sync()
        with pytest.raises(NetworkError, match="refused sender PUMP2: not among"):
            TrailMirror(str(local), _target(collector.port, sender="PUMP2")).sync()
        with pytest.raises(NetworkError, match="outside the collector's home"):
            TrailMirror(str(local), _target(collector.port, trail="/tmp/elsewhere/rt")).sync()
    assert not (tmp_path / "dst" / "dirdat").exists()  # nothing written by any of them
    assert sum(level == "WARNING" for level, _ in events) == 4


def test_clear_errors_for_unreachable_refused_and_bad_peers(tmp_path: Path) -> None:
    local = tmp_path / "src" / "rt"
    _write(local, _txns(1, 5))
    with pytest.raises(NetworkError, match="connection refused: is a collector running"):
        TrailMirror(str(local), _target(free_port())).sync()
    with pytest.raises(NetworkError, match="cannot be resolved"):
        TrailMirror(str(local), _target(7819, host="no-such-host.invalid")).sync()
    for answer, message in ((b"HTTP/1.1 400 Bad Request\r\n\r\n", "unknown frame type"),
                            (b"\x01\x7f\xff\xff\xff", "over the 65536-byte limit"),
                            (b"\x01\x00\x00\x00\x05oops!", "not a JSON object"),
                            (None, "waited 1 s for a frame in vain")):
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]

        def serve(sock: socket.socket = listener, data: bytes | None = answer) -> None:
            conn, _ = sock.accept()
            if data is not None:
                conn.sendall(data)
            time.sleep(2.0)
            conn.close()
            sock.close()

        threading.Thread(target=serve, daemon=True).start()
        with pytest.raises(NetworkError, match=message):
            TrailMirror(str(local), _target(port, timeout=1.0)).sync()


def test_tls_mutual_authentication_and_refusals(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    local = tmp_path / "src" / "rt"
    _write(local, _txns(1, 50))
    good = TlsFiles(certs.client_cert, certs.client_key, certs.ca)
    with running_collector(tmp_path / "dst", token=None, certs=certs, client_certs=True,
                           allow=frozenset({"PUMP1"})) as collector:
        mirror = TrailMirror(str(local), _target(collector.port, tls=good, token=None,
                                                 compress=True))
        mirror.sync()
        mirror.close()
        cases = [
            (TlsFiles(None, None, certs.ca), "requires a client certificate|TLS handshake"),
            (TlsFiles(certs.client_cert, certs.client_key, certs.other_ca),
             "collector's certificate is not trusted"),
            (TlsFiles(certs.stranger_cert, certs.stranger_key, certs.ca),
             "refused this sender's certificate|TLS handshake failed"),
            (None, "does the collector expect TLS"),
        ]
        for files, message in cases:
            with pytest.raises(NetworkError, match=message):
                TrailMirror(str(local), _target(collector.port, tls=files, token=None)).sync()
        with pytest.raises(ConfigError, match="does not exist"):
            TrailMirror(str(local), _target(collector.port, token=None, tls=TlsFiles(
                None, None, str(tmp_path / "missing.pem")))).sync()
    assert trail_bytes(tmp_path / "dst" / "dirdat" / "rt") == trail_bytes(local)
    # a TLS Pump against a plain collector
    with running_collector(tmp_path / "dst2") as plain, pytest.raises(
            NetworkError, match=r"does not speak TLS|TLS handshake failed"):
        TrailMirror(str(local), _target(plain.port, tls=good)).sync()


def test_collector_command_refuses_to_run_without_authentication(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    done = subprocess.run([sys.executable, "-m", "trailgate.cli", "--home", str(tmp_path),
                           "collector", "--port", "0"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 1
    assert "accepts only senders it can authenticate" in done.stderr
    assert "Traceback" not in done.stderr


def test_mgrport_finds_the_collector_the_manager_runs(tmp_path: Path) -> None:
    from manager_support import start_manager

    from trailgate.collector.tokens import TOKEN_DOMAIN
    from trailgate.db.connect import CredentialStore
    from trailgate.home import Home

    local = tmp_path / "src" / "rt"
    _write(local, _txns(1, 30))
    home = Home(tmp_path / "dst").create()
    CredentialStore(home.path).add("pumps", "collector", TOKEN, TOKEN_DOMAIN)
    without = Home(tmp_path / "plain").create()
    proc, port = start_manager(home, f"COLLECTOR PORT {free_port()}, TOKENALIAS pumps, "
                                     f"ALLOW PUMP1\n")
    other, other_port = start_manager(without, "")
    try:
        mirror = TrailMirror(str(local), _target(0, mgrport=port))
        mirror.sync()
        mirror.close()
        with pytest.raises(NetworkError, match="runs no collector: add COLLECTOR PORT"):
            TrailMirror(str(local), _target(0, mgrport=other_port)).sync()
    finally:
        for p in (proc, other):
            p.terminate()
            p.wait(timeout=30)
    assert trail_bytes(home.dirdat / "rt") == trail_bytes(local)
    assert "Collector listening on 127.0.0.1:" in home.ggserr_log.read_text()
    with pytest.raises(NetworkError, match=r"Manager 127.0.0.1:\d+: connection refused: is "
                                           r"the Manager running"):
        TrailMirror(str(local), _target(0, mgrport=free_port())).sync()


def test_staging_files_gone_past_the_remote_trail_is_an_error_not_a_gap(tmp_path: Path
                                                                         ) -> None:
    """The collector's trail ends before the first staging file (its trail was reset, or
    staging lost files it never had): shipping on would leave a hole in the remote trail."""
    local = tmp_path / "src" / "rt"
    remote = tmp_path / "dst" / "dirdat" / "rt"
    _write(local, _txns(1, 10))
    with running_collector(tmp_path / "dst") as collector:
        mirror = TrailMirror(str(local), _target(collector.port))
        mirror.sync()
        mirror.close()
        _write(local, _txns(11, 10))
        _write(local, _txns(21, 10))  # two more runs: files 1 and 2
        files = TrailName(local)
        for seq in files.sequence_numbers()[:2]:
            files.file(seq).unlink()
        with pytest.raises(NetworkError, match="ends with file 0, but this Pump's staging "
                                               "trail begins at file 2"):
            TrailMirror(str(local), _target(collector.port)).sync()
    assert TrailName(remote).sequence_numbers() == [0]


def test_a_port_probe_is_logged_quietly_and_a_cut_hello_is_a_warning(tmp_path: Path) -> None:
    """A connection closed before its first frame (a port probe, a health check) is an INFO
    line; one closed after a frame's header, in the middle of its HELLO, is a WARNING."""
    log: list[tuple[str, str]] = []
    with running_collector(tmp_path / "home", log=log) as collector:
        socket.create_connection(("127.0.0.1", collector.port)).close()
        with socket.create_connection(("127.0.0.1", collector.port)) as cut:
            cut.settimeout(10)
            cut.recv(1 << 16)  # the SERVER_HELLO read, so closing sends FIN, not a reset
            # (a reset may discard the header below before the collector reads it)
            cut.sendall(b"\x01\x00\x00\x00\x20")  # a frame header: 32 bytes to come, none sent
        deadline = time.monotonic() + 10
        while len([e for e in log if "collector: 127.0.0.1" in e[1] or "session from" in e[1]]
                   ) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    quiet = [e for e in log if "closed without a word" in e[1]]
    loud = [e for e in log if e[0] == "WARNING" and "(waiting for a SERVER_HELLO frame)" in e[1]]
    assert [e[0] for e in quiet] == ["INFO"] and len(loud) == 1, log
