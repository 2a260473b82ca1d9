"""Whether the trail codec uses its optional C accelerator, ``trailgate.trail._speedups``.

The pure-Python codec in values.py and records.py is the reference.  When the C extension was
built (``pip install`` compiles it if it can), the hot functions call it first; it returns
``None`` for anything it does not handle (an inconsistent record, an unusual argument type),
and the Python code then gives the result or raises its detailed error.

``TRAILGATE_PURE_PYTHON=1`` (any value but empty or ``0``) forces the pure-Python codec; it
is read once, at import.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "speedups"]

PURE_PYTHON_ENV = "TRAILGATE_PURE_PYTHON"


def _load() -> ModuleType | None:
    if os.environ.get(PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        return None
    try:
        from trailgate.trail import _speedups
    except ImportError:  # not compiled (no compiler at install time): pure Python it is
        return None
    return _speedups


#: The C module, or ``None`` when the pure-Python codec is in use.
speedups: ModuleType | None = _load()
