"""The Oracle dumps' C record reader built with AddressSanitizer and UndefinedBehaviorSanitizer
runs the C-reader and C row-value cases of oracle/test_fastpath.py (five times the random
cases): a read past a buffer, a use after free, a leak of a reference into freed memory or
undefined arithmetic aborts the run instead of passing unnoticed.  Heavy: it compiles the
module and runs Python under the sanitizer runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from sanitized_one import run_sanitized

pytestmark = pytest.mark.heavy


def test_c_reader_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    run_sanitized(tmp_path, "trailgate.capture.oracle._dumpscan",
                  "src/trailgate/capture/oracle/_dumpscan.c",
                  "importlib.import_module('trailgate.capture.oracle.recordscan')"
                  ".parse_record is module.parse_record",
                  ["-k", "c_reader or c_row_values",
                   str(Path(__file__).parent / "oracle" / "test_fastpath.py")],
                  {"TRAILGATE_DUMPSCAN_ROUNDS": "5"})
