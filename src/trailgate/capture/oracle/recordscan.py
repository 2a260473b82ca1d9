"""The dump parser's C record reader, ``_dumpscan.parse_record``, when it was built.

``parse_record(text, path, first_line, start)`` gives the RedoRecord ``dumpparser._record``
builds, or ``None`` for anything outside the common layouts (the Python parser then decides,
with its located errors).  The C code fills the dataclasses' slots, so it checks at import
that the classes have the fields it was written for; if not, or without the extension, or
with ``TRAILGATE_PURE_PYTHON`` set, ``parse_record`` is ``None`` and Python reads every
record.  ``row_values`` (same module, same conditions) turns a row piece's columns into
the trail-form values ``rowchanges`` builds, or ``None`` for Python to decide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trailgate.capture.oracle.changes import (
    DATA_LAYERS,
    REGISTRY,
    Commit,
    Kdo,
    MediaRecoveryMarker,
    OtherChange,
    RowChange,
    UndoHeader,
    UndoRecord,
)
from trailgate.capture.oracle.records import RBA, RedoRecord
from trailgate.capture.oracle.supplemental import SupplementalData
from trailgate.trail._accel import load_optional

__all__ = ["parse_record", "row_values"]

#: ``(text, path, first_line, start) -> RedoRecord | None``, or ``None`` when not built.
parse_record: Callable[[str, str, int, RBA | None], RedoRecord | None] | None = None
#: ``(layout, cols, offset, template) -> dict | None``: a row piece's trail-form values as
#: ``rowchanges`` keys them (``None``: the Python code decides), or ``None`` when not built.
row_values: Callable[[tuple[Any, ...], list[tuple[int, bytes | None]], int,
                      dict[Any, bytes | None] | None], dict[Any, bytes | None] | None] | None = None

_module = load_optional("trailgate.capture.oracle._dumpscan")
if _module is not None and _module.setup(
        (RedoRecord, UndoHeader, UndoRecord, Commit, RowChange, OtherChange,
         MediaRecoveryMarker, Kdo, SupplementalData),
        RBA, REGISTRY, sorted(DATA_LAYERS), dict(RowChange.EXPECTED)):
    parse_record = _module.parse_record
    row_values = _module.row_values
