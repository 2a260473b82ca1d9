"""The operating system's name for the calling thread.

Python before 3.14 leaves every thread of a process under the process's name, so ``top -H``,
``ps -L`` and ``/proc/<pid>/task/*/comm`` cannot tell a group's stream reader from its trail
streamer or its flush thread.  Each long-lived thread names itself once as it starts (one
system call); the kernel keeps the first 15 bytes.  Where there is no ``prctl`` (not Linux)
nothing happens: the name only helps a person or a measurement look at the threads.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

__all__ = ["name_native_thread"]

_PR_SET_NAME = 15
#: The kernel's limit on a thread's name, without its terminating NUL.
NAME_BYTES = 15
_prctl: Any = None


def name_native_thread(name: str) -> None:
    """Give the calling thread ``name`` (its first 15 bytes) in the kernel's task list."""
    global _prctl
    if not sys.platform.startswith("linux"):
        return
    if _prctl is None:
        try:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _prctl = False
    if _prctl:
        _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8", "replace")[:NAME_BYTES]),
               0, 0, 0)
