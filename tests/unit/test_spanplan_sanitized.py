"""The C set planner built with AddressSanitizer and UndefinedBehaviorSanitizer runs
test_spanplan.py — the planner against the Python path on random workloads, and
``copy_columns`` on random and damaged COPY text — so a read past a buffer, a use after
free or undefined arithmetic aborts the run instead of passing unnoticed.  Heavy: it
compiles the module and runs Python under the sanitizer runtime."""

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
SOURCE = REPO / "src" / "trailgate" / "apply" / "_spanplan.c"

# Load the sanitized build under the module's own name, then run the tests against it.
DRIVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("trailgate.apply._spanplan", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules[spec.name] = module
from trailgate.apply import spanplan
assert spanplan._module is module, "the sanitized build is not in use"
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[2]]))
"""


def test_set_planner_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc to build the sanitized module")
    runtime = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip("gcc has no AddressSanitizer runtime")
    built = tmp_path / "_spanplan_sanitized.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(built)],
                   check=True)
    env = {**os.environ, "LD_PRELOAD": runtime, "PYTHONMALLOC": "malloc",
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "PYTHONPATH": str(REPO / "src")}
    env.pop("TRAILGATE_PURE_PYTHON", None)
    run = subprocess.run([sys.executable, "-c", DRIVER, str(built),
                          str(Path(__file__).with_name("test_spanplan.py"))],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
