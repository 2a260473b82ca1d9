"""Waking a trail's reader when its directory changes (Linux inotify), instead of polling.

A reader following a growing trail must see new bytes at once, yet polling an idle trail
every few milliseconds costs CPU all day.  inotify has the kernel wake the reader when a
file of the directory is written, created or renamed into it; events queue, so one that
comes between the last look and the wait ends the wait at once.  Without inotify (not
Linux, no watches left) a :class:`TrailWatch` is inactive and the reader polls; a wait
never outlasts its timeout, so a change the kernel cannot report is still seen, later.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import select
import sys
import threading

__all__ = ["TrailWatch"]

log = logging.getLogger("trailgate.trail")

_IN_MODIFY = 0x00000002
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE

_libc: ctypes.CDLL | None = None
_libc_lock = threading.Lock()


def _lib() -> ctypes.CDLL | None:
    global _libc
    with _libc_lock:
        if _libc is None and sys.platform.startswith("linux"):
            with contextlib.suppress(OSError):
                _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6",
                                    use_errno=True)
        return _libc


class TrailWatch:
    """Events on one directory (a trail's ``dirdat``); see the module docstring.
    ``wait`` is for one thread, ``interrupt`` for any other."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = os.fspath(directory)
        self._fd: int | None = None
        self._lock = threading.Lock()  # interrupt and close: never a closed (reused) fd
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        lib = _lib()
        if lib is None:
            return
        fd = lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            log.info("no inotify (%s): the trail %s is polled", os.strerror(ctypes.get_errno()),
                     self.directory)
            return
        if lib.inotify_add_watch(fd, os.fsencode(self.directory), _MASK) < 0:
            log.info("cannot watch %s (%s): the trail is polled", self.directory,
                     os.strerror(ctypes.get_errno()))
            os.close(fd)
            return
        self._fd = fd

    @property
    def active(self) -> bool:
        """Whether the kernel reports changes (else ``wait`` only ends by its timeout or
        an ``interrupt``)."""
        return self._fd is not None

    def wait(self, timeout: float) -> bool:
        """Until something in the directory changed since the last wait (True), an
        ``interrupt`` (True) or ``timeout`` seconds (False)."""
        fds = [self._wake_r] if self._fd is None else [self._fd, self._wake_r]
        ready, _, _ = select.select(fds, [], [], max(0.0, timeout))
        for fd in ready:
            _drain(fd)
        return bool(ready)

    def interrupt(self) -> None:
        """End the wait under way (or the next one) now; nothing once closed."""
        with self._lock:
            if not self._closed:
                with contextlib.suppress(BlockingIOError, OSError):
                    os.write(self._wake_w, b"x")

    def close(self) -> None:
        """Release the descriptors (once; no wait may be under way)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self._fd, self._wake_r, self._wake_w):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._fd = None


def _drain(fd: int) -> None:
    """Read everything queued on ``fd`` (the events themselves do not matter: any change
    sends the reader to look)."""
    with contextlib.suppress(BlockingIOError, OSError):
        while os.read(fd, 65536):
            pass
