"""Oracle redo log dumps (``ALTER SYSTEM DUMP LOGFILE`` text) as a capture source.

``capture_oracle_dumps(dictionary, dumps)`` yields committed ``model.Transaction`` objects
exactly as seed 003 shows GoldenGate extracting them; docs/oracle-dumps.md describes the
input formats, the decisions and the limits.
"""

from trailgate.capture.oracle.capture import CHECKPOINT_FORMAT, DumpCapture, capture_oracle_dumps
from trailgate.capture.oracle.dictionary import Dictionary

__all__ = ["CHECKPOINT_FORMAT", "Dictionary", "DumpCapture", "capture_oracle_dumps"]
