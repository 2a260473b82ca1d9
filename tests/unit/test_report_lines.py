"""A DDL's WARNING report line also goes to ggserr.log, whole."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

from trailgate.home import Home
from trailgate.process.runtime import _ReportLines
from trailgate.trail.ddl import report_line


def test_a_warning_line_reaches_ggserr_log_whole(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    handler = _ReportLines(SimpleNamespace(report=None, home=home))  # type: ignore[arg-type]
    text = "DDL error: DDL sequence 7 could not be read; skipped."
    handler.emit(logging.LogRecord("trailgate.ddl", logging.WARNING, __file__, 1,
                                   report_line("WARNING", "", text), None, None))
    handler.emit(logging.LogRecord("trailgate.ddl", logging.INFO, __file__, 1,
                                   report_line("INFO", "OGG-01487", "not a warning"), None,
                                   None))
    log = home.ggserr_log.read_text()
    assert text in log and "OGG-01738" in log, log
    assert "not a warning" not in log
