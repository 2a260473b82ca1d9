"""The C set planner built with AddressSanitizer and UndefinedBehaviorSanitizer runs
test_spanplan.py — the planner against the Python path on random workloads, and
``copy_columns`` on random and damaged COPY text — so a read past a buffer, a use after
free or undefined arithmetic aborts the run instead of passing unnoticed.  Heavy: it
compiles the module and runs Python under the sanitizer runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from sanitized_one import run_sanitized

pytestmark = pytest.mark.heavy


def test_set_planner_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    run_sanitized(tmp_path, "trailgate.apply._spanplan", "src/trailgate/apply/_spanplan.c",
                  "importlib.import_module('trailgate.apply.spanplan')._module is module",
                  [str(Path(__file__).with_name("test_spanplan.py"))])
