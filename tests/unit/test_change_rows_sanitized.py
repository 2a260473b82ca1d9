"""The C rows with values (``change_rows``) and header rows built with AddressSanitizer and
UndefinedBehaviorSanitizer run the differential tests of test_change_rows.py (five times the
damage cases) and test_header_rows.py: a read past a buffer, a use after free or undefined
arithmetic aborts the run instead of passing unnoticed.  Heavy: it compiles the module and
runs Python under the sanitizer runtime."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy

REPO = Path(__file__).parents[2]
SOURCE = REPO / "src" / "trailgate" / "trail" / "_speedups.c"

# Load the sanitized build under the module's own name, then run the tests against it.
DRIVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("trailgate.trail._speedups", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules[spec.name] = module
from trailgate.trail._accel import speedups
assert speedups is module, "the sanitized build is not in use"
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""


def test_c_rows_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc to build the sanitized module")
    runtime = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip("gcc has no AddressSanitizer runtime")
    built = tmp_path / "_speedups_sanitized.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(built)],
                   check=True)
    env = {**os.environ, "LD_PRELOAD": runtime, "PYTHONMALLOC": "malloc",
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "TRAILGATE_CHANGE_ROWS_ROUNDS": "5", "PYTHONPATH": str(REPO / "src")}
    env.pop("TRAILGATE_PURE_PYTHON", None)
    here = Path(__file__).parent
    run = subprocess.run([sys.executable, "-c", DRIVER, str(built),
                          str(here / "test_change_rows.py"), str(here / "test_header_rows.py")],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
