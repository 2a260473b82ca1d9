"""The dump parser's C record reader, ``_dumpscan.parse_record``, when it was built.

``parse_record(text, path, first_line, start)`` reads one redo record's text into the same
RedoRecord (changes, KDOs, supplemental data) that ``dumpparser._record`` builds, or returns
``None`` for anything outside the common layouts, and the Python parser then decides, with
its located errors.  The C code fills the dataclasses' slots directly, so it checks at import
that the classes still have the fields it was written for; if they differ, or the extension
was not compiled, or ``TRAILGATE_PURE_PYTHON`` is set, ``parse_record`` is ``None`` and
every record takes the Python path.
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
