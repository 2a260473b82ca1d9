"""The dump parser's C record reader, ``_dumpscan``, when it was built.

``parse_record(text, path, first_line, start)`` gives the RedoRecord ``dumpparser._record``
builds, or ``None`` outside the common layouts (the Python parser then decides, with its
located errors); ``row_values`` likewise gives a row piece's trail-form values.  The C code
fills the dataclasses' slots, so it checks at import that they have the fields it was
written for; if not, without the extension, or with ``TRAILGATE_PURE_PYTHON`` set, both are
``None`` and Python does the work.
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
