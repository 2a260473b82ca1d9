"""The replication stream's reader takes libpq's buffered messages in one C call.

``WalStream`` reads CopyData messages one ``get_copy_data`` call at a time, a Python call and
a few objects per message; ``_pgfast.drain`` does the same loop in C, without the GIL.  It
must call the very libpq psycopg's connection belongs to, so this finds that library among
the process's mapped files (exactly one, its version psycopg's) and hands C its functions'
addresses.  Anything unexpected — no C module, ``TRAILGATE_PURE_PYTHON=1``, two libpq
copies — leaves ``drainer()`` ``None`` and the reader keeps its Python loop, the reference.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from collections.abc import Callable
from typing import Any, TypeAlias

import psycopg.pq as pq

from trailgate.trail._accel import load_optional

__all__ = ["Drain", "drainer", "libpq_path"]

log = logging.getLogger("trailgate.extract")

#: ``(pgconn_address, out, max, received, committed, sock, wait_ns) -> (status, size,
#: received, committed, reply)``: see ``_pgfast.c``'s ``drain``.
Drain: TypeAlias = Callable[[int, list[tuple[int, Any]], int, int, int, int, int],
                            tuple[int, int, int, int, int]]


def libpq_path(maps: str) -> str | None:
    """The one libpq shared library among ``maps`` (``/proc/self/maps``'s text), or
    ``None`` when there is none or more than one."""
    found = set()
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            name = os.path.basename(fields[5])
            if name.startswith("libpq") and ".so" in name:
                found.add(fields[5])
    return found.pop() if len(found) == 1 else None


@functools.cache
def drainer() -> Drain | None:
    """``_pgfast.drain`` bound to psycopg's libpq, or ``None`` (module docstring)."""
    module = load_optional("trailgate.capture.postgres._pgfast")
    if module is None:
        return None
    try:
        with open("/proc/self/maps") as f:
            path = libpq_path(f.read())
        if path is None:
            return None
        # RTLD_NOLOAD: the library already loaded, never a second copy
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        lib.PQlibVersion.restype = ctypes.c_int
        if lib.PQlibVersion() != pq.version():
            return None
        get = ctypes.cast(lib.PQgetCopyData, ctypes.c_void_p).value
        free = ctypes.cast(lib.PQfreemem, ctypes.c_void_p).value
        consume = ctypes.cast(lib.PQconsumeInput, ctypes.c_void_p).value
        if not get or not free or not consume:
            return None
        module.bind_libpq(get, free, consume)
    except (OSError, AttributeError, ValueError, TypeError) as exc:
        log.debug("the stream reader keeps its Python loop: %s", exc)
        return None
    drain: Drain = module.drain
    return drain
