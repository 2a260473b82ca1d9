"""The dump parser's C record reader, ``_dumpscan.parse_record``, when it was built.

``parse_record(text, path, first_line, start)`` gives the RedoRecord ``dumpparser._record``
builds, or ``None`` for anything outside the common layouts (the Python parser then decides,
with its located errors).  The C code fills the dataclasses' slots, so it checks at import
that the classes have the fields it was written for; if not, or without the extension, or
with ``TRAILGATE_PURE_PYTHON`` set, ``parse_record`` is ``None`` and Python reads every
record.
"""

from __future__ import annotations

from collections.abc import Callable

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

__all__ = ["parse_record"]

#: ``(text, path, first_line, start) -> RedoRecord | None``, or ``None`` when not built.
parse_record: Callable[[str, str, int, RBA | None], RedoRecord | None] | None = None

_module = load_optional("trailgate.capture.oracle._dumpscan")
if _module is not None and _module.setup(
        (RedoRecord, UndoHeader, UndoRecord, Commit, RowChange, OtherChange,
         MediaRecoveryMarker, Kdo, SupplementalData),
        RBA, REGISTRY, sorted(DATA_LAYERS), dict(RowChange.EXPECTED)):
    parse_record = _module.parse_record
