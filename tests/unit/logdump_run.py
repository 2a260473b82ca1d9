"""A Logdump session over one trail file, for tests: the commands run, the text printed."""

from __future__ import annotations

import io
from pathlib import Path

from trailgate.logdump.cli import run_lines
from trailgate.logdump.session import Session


def logdump_text(path: Path, *commands: str) -> str:
    """What Logdump prints for ``commands`` with ``path`` open."""
    out = io.StringIO()
    session = Session(out)
    session.open(path)
    run_lines(session, commands)
    session.close()
    return out.getvalue()
