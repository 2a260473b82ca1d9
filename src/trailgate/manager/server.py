"""The HTTP service's socket and its uvicorn server, in a thread of the Manager.

The socket is bound before anything else happens, so a port in use stops the Manager at
once with a message that names the port and the parameter file, and nothing it would
have started is started.  uvicorn then serves the bound socket in a daemon thread (its
signal handling stays with the Manager's main thread) until :meth:`HttpService.stop`.
Its housekeeping loop looks once a second, not ten times, whether to stop: an idle
Manager's wake-ups are CPU spent all day for nothing.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import threading
from typing import Any

import uvicorn

from trailgate.errors import ConfigError

__all__ = ["HttpService", "bind"]


def bind(address: str, port: int, where: str) -> socket.socket:
    """A listening socket on ``address:port``, or a ConfigError saying what to change."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"BINDADDRESS {address}: not an address of this host ({exc})",
                          path=where) from None
    family, kind, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"PORT {port}: the port is in use on {address} by another "
                              f"process; set another PORT in {where}, or stop what uses it "
                              f"(ss -ltnp shows it)", path=where) from None
        raise ConfigError(f"PORT {port} on {address}: cannot listen ({exc.strerror or exc})",
                          path=where) from None
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server with its housekeeping once a second (module docstring)."""

    async def main_loop(self) -> None:
        # uvicorn's own loop, with 1 s sleeps: ``on_tick`` refreshes the Date header when
        # its counter is a multiple of 10 (each second at uvicorn's 0.1 s) and says
        # whether to exit
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000
            await asyncio.sleep(1.0)
            should_exit = await self.on_tick(counter)


class HttpService:
    """uvicorn serving ``app`` on ``sock`` in a background thread."""

    def __init__(self, app: Any, sock: socket.socket):
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2)
        self.server = _Server(config)
        self.sock = sock
        self.thread = threading.Thread(target=self._serve, name="manager http", daemon=True)
        self.error: BaseException | None = None

    def _serve(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        except BaseException as exc:  # reported by the Manager's loop
            self.error = exc

    def start(self) -> None:
        self.thread.start()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
