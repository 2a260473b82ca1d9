"""One C extension built with AddressSanitizer and UndefinedBehaviorSanitizer, and test
files run against it in a child interpreter under the sanitizer runtime: what the heavy
``*_sanitized`` tests of a single module share (``./dev sanitize`` builds them all)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]

# Load the sanitized build under the module's own name, check that ``in_use`` (an
# expression) sees it, then run pytest with the remaining arguments.
_DRIVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(sys.argv[1], sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules[spec.name] = module
assert eval(sys.argv[3], {"module": module, "importlib": importlib}), \\
    "the sanitized build is not in use"
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[4:]]))
"""


def run_sanitized(tmp_path: Path, module: str, source: str, in_use: str,
                  pytest_args: list[str], env: dict[str, str] | None = None) -> None:
    """Build ``source`` (relative to the repository) as ``module`` with both sanitizers,
    then run ``pytest_args`` in a child interpreter with it loaded; ``in_use`` is a Python
    expression over ``module`` and ``importlib`` that must hold once it is loaded.  Fails
    on any sanitizer report, a failed or skipped test; skips without gcc or libasan."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc to build the sanitized module")
    runtime = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip("gcc has no AddressSanitizer runtime")
    built = tmp_path / f"{module.rpartition('.')[2]}_sanitized.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{sysconfig.get_paths()['include']}", str(REPO / source), "-o",
                    str(built)], check=True)
    child = {**os.environ, "LD_PRELOAD": runtime, "PYTHONMALLOC": "malloc",
             "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
             "PYTHONPATH": str(REPO / "src"), **(env or {})}
    child.pop("TRAILGATE_PURE_PYTHON", None)
    run = subprocess.run([sys.executable, "-c", _DRIVER, module, str(built), in_use,
                          *pytest_args], env=child, capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
