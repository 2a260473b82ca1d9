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
import mmap
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Protocol, TypeVar, cast

from trailgate.model import ColumnKind, OpType

__all__ = ["PURE_PYTHON_ENV", "Speedups", "load_optional", "speedups"]

_T = TypeVar("_T")

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


class Speedups(Protocol):
    """What ``_speedups.c`` exports (its method table), typed: each returns ``None`` for what
    it leaves to the Python code."""

    def decode_columns(self, data: bytes, fixed: frozenset[int] | None, start: int,
                       end: int, /) -> dict[int, bytes | None] | None: ...
    def decode_record(self, buf: bytes | mmap.mmap, pos: int, end: int, record_class: type[_T], /
                      ) -> _T | None: ...
    def encode_columns(self, values: Mapping[int, bytes | None], kinds: Sequence[ColumnKind] | None,
                       widths: Sequence[int | None] | None, /) -> bytes | None: ...
    def encode_record(self, io_type: int, table: str, data: bytes, io_time: int,
                      audit_pos: int, audit_rba: int, trans_ind: int, before_after: int,
                      continued: int, rowid: str | None, csn: int | None, xid: str | None,
                      tokens: Mapping[str, str] | None, /) -> bytes | None: ...
    def decode_change(self, record: object, fixed: frozenset[int] | None,
                      data: bytes | None, change_class: type[_T], op_types: Mapping[int, OpType], /
                      ) -> _T | None: ...
    def scan_records(self, buf: bytes, pos: int, end: int,
                     state: tuple[bool, int, bool, bool, int, bool], max_records: int,
                     mark: Callable[[int, str], object] | None,
                     mark_types: frozenset[int] | None, /
                     ) -> tuple[int, int, int, int, int, int, int, int, int] | None: ...
    def scan_tables(self, buf: bytes, pos: int, end: int, row_types: bytes,
                    counts: dict[str, int], first: dict[str, int], /
                    ) -> tuple[int, list[tuple[int, int]], int] | None: ...
    def header_rows(self, buf: bytes, pos: int, end: int, keep: bytes, upper: int,
                    names: dict[bytes, int], /
                    ) -> tuple[int, int, int, int, tuple[bytearray, ...]] | None: ...
    def change_rows(self, buf: bytes, pos: int, end: int, keep: bytes, upper: int,
                    max_rows: int, names: dict[bytes, int], specs: list[bytes],
                    lookup: Callable[[bytes], int | None], define: Callable[[int, int], int],
                    shape: tuple[bool, int, int, bytes], /
                    ) -> tuple[int, int, int, int, int, list[bytes | None]]: ...
    def split_records(self, blob: bytes, /) -> tuple[list[bytes], bytes] | None: ...
    def register_dataclass(self, cls: type, /) -> bool: ...
    def set_column_kinds(self, variable_kinds: frozenset[ColumnKind], char: ColumnKind,
                         date: ColumnKind, timestamp: ColumnKind, /) -> None: ...


#: The C module, or ``None`` when the pure-Python codec is in use.
speedups = cast("Speedups | None", load_optional("trailgate.trail._speedups"))
