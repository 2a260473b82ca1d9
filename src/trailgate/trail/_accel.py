"""Whether the trail codec uses its optional C accelerator, ``trailgate.trail._speedups``.

The pure-Python codec in values.py and records.py is the reference.  When the C extension was
built (``pip install`` compiles it if it can), the hot functions call it first; it returns
``None`` for anything it does not handle (an inconsistent record, an unusual argument type),
and the Python code then gives the result or raises its detailed error.

``TRAILGATE_PURE_PYTHON=1`` (any value but empty or ``0``) forces the pure-Python codec; it
is read once, at import.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "load_optional", "speedups"]

PURE_PYTHON_ENV = "TRAILGATE_PURE_PYTHON"


def load_optional(name: str) -> ModuleType | None:
    """The optional C extension ``name`` (``trailgate.trail._speedups``, …), or ``None`` when
    it was not compiled or ``TRAILGATE_PURE_PYTHON`` asks for the Python code everywhere."""
    if os.environ.get(PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # not compiled (no compiler at install time): pure Python it is
        return None


#: The C module, or ``None`` when the pure-Python codec is in use.
speedups: ModuleType | None = load_optional("trailgate.trail._speedups")
