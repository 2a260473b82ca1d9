"""The import contracts in pyproject.toml (docs/architecture.md) hold for the code as it is,
and each one fails ``lint-imports`` when a copy of the package is deliberately broken.

The broken copies live in a temporary directory put first on ``PYTHONPATH``, so
``lint-imports`` reads them instead of the installed package; the project is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "trailgate"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(),
                                reason="import-linter is not installed (pip install -e .[dev])")


def lint(contract: str | None = None, pythonpath: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    args = [str(LINT_IMPORTS), "--no-cache"] + (["--contract", contract] if contract else [])
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def broken_copy(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package with ``line`` appended to ``module`` (a path under it)."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "trailgate",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    with open(src / "trailgate" / module, "a", encoding="utf-8") as f:
        f.write(f"\n{line}  # deliberately against the contract\n")
    return src


def test_the_code_keeps_every_contract() -> None:
    done = lint()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("contract", "module", "line", "named"), [
    # the trail codec reaching up into a group
    ("layers", "model.py", "import trailgate.replicat.config",
     "trailgate.model is not allowed to import trailgate.replicat"),
    # a group using a sibling group (the Pump may not depend on the Replicat)
    ("layers", "pump/config.py", "import trailgate.replicat.config",
     "trailgate.pump is not allowed to import trailgate.replicat"),
    # the apply layer importing Spark: tasks and Logdump would pay for a JVM bridge
    ("core-without-spark", "apply/values.py", "import pyspark.sql",
     "trailgate.apply.values -> pyspark"),
    # two modules of one package importing each other
    ("acyclic", "replicat/task_rows.py", "import trailgate.replicat.micro_batch",
     "trailgate.replicat"),
])
def test_a_deliberate_break_fails(tmp_path: Path, contract: str, module: str, line: str,
                                  named: str) -> None:
    done = lint(contract, broken_copy(tmp_path, module, line))
    assert done.returncode != 0
    assert "BROKEN" in done.stdout
    assert named in done.stdout
