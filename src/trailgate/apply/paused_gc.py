"""No cyclic garbage collection while a batch is read and applied.

A batch makes hundreds of thousands of small objects (changes, their mapped forms, rows)
that reference counting frees; the cyclic collector would traverse them again and again as
they pile up, for nothing.  It runs again afterwards, for whatever cycles the batch left.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block (if it was enabled)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
