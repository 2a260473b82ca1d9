"""Module docstrings stay a short paragraph: what the module is for and why it is shaped so.
Measurements and history go to docs/, where they can be dated (issue 16)."""

from __future__ import annotations

import ast
from pathlib import Path

import trailgate

#: Characters of a module docstring; a paragraph of five to eight lines.
LIMIT = 650


def test_every_module_has_a_short_docstring() -> None:
    root = Path(trailgate.__file__).parent
    missing, long = [], []
    for path in sorted(root.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        name = str(path.relative_to(root))
        if not doc and path.name != "__init__.py":
            missing.append(name)
        elif doc and len(doc) > LIMIT:
            long.append(f"{name} ({len(doc)} characters)")
    assert not missing, f"modules without a docstring: {missing}"
    assert not long, f"docstrings over {LIMIT} characters (move the detail to docs/): {long}"
