"""The C rows with values (``change_rows``) and header rows built with AddressSanitizer and
UndefinedBehaviorSanitizer run the differential tests of test_change_rows.py (five times the
damage cases) and test_header_rows.py: a read past a buffer, a use after free or undefined
arithmetic aborts the run instead of passing unnoticed.  Heavy: it compiles the module and
runs Python under the sanitizer runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from sanitized_one import run_sanitized

pytestmark = pytest.mark.heavy


def test_c_rows_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    here = Path(__file__).parent
    run_sanitized(tmp_path, "trailgate.trail._speedups", "src/trailgate/trail/_speedups.c",
                  "importlib.import_module('trailgate.trail._accel').speedups is module",
                  [str(here / "test_change_rows.py"), str(here / "test_header_rows.py")],
                  {"TRAILGATE_CHANGE_ROWS_ROUNDS": "5"})
