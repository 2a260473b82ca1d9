"""The group runtime: one run at a time, pid file, report, events, signals, abends."""

from __future__ import annotations

import os
import signal

import pytest

from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.process import runtime
from trailgate.process.runtime import GroupProcess


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path / "home").create()


def test_clean_run_writes_pid_report_and_events_then_removes_the_pid(home):
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        assert (home.dirchk / "EXT1.pid").read_text().split()[0] == str(os.getpid())
        proc.warn("WARNING: table x has no supplemental logging", "OGG-06441")
        proc.stopped("test over")
    assert not (home.dirchk / "EXT1.pid").exists()
    report = (home.dirrpt / "EXT1.rpt").read_text()
    assert "EXTRACT EXT1 starting." in report and "stopping: test over" in report
    events = home.ggserr_log.read_text().splitlines()
    assert [e.split()[3] for e in events] == ["OGG-00975", "OGG-06441", "OGG-00991"]
    assert "WARNING" in events[1] and "table x has no supplemental logging" in events[1]


def test_an_error_is_an_abend_that_keeps_the_pid_file(home):
    with pytest.raises(ConfigError), GroupProcess(home, "EXTRACT", "ext1", title="T"):
        raise ConfigError("the thing to fix")
    assert (home.dirchk / "EXT1.pid").exists()
    assert "PROCESS ABENDING. the thing to fix" in (home.dirrpt / "EXT1.rpt").read_text()
    assert "ERROR   OGG-01668" in home.ggserr_log.read_text()


def test_one_run_at_a_time(home, monkeypatch):
    monkeypatch.setattr(runtime, "LOCK_WAIT_SECONDS", 0.3)
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        with pytest.raises(ConfigError, match="EXTRACT EXT1 is already running"):
            GroupProcess(home, "EXTRACT", "ext1", title="T").__enter__()
        proc.stopped("done")


def test_a_signal_asks_for_a_stop_and_a_second_one_insists(home):
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        os.kill(os.getpid(), signal.SIGTERM)
        assert proc.stop_requested and proc.stop_reason == "SIGTERM received"
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        proc.stopped(proc.stop_reason)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_reports_are_aged(home):
    for n in range(3):
        with GroupProcess(home, "EXTRACT", "ext1", title=f"run {n}") as proc:
            proc.stopped("done")
    names = sorted(p.name for p in home.dirrpt.iterdir())
    assert names == ["EXT1.rpt", "EXT10.rpt", "EXT11.rpt"]
    assert "run 2" in (home.dirrpt / "EXT1.rpt").read_text()
    assert "run 0" in (home.dirrpt / "EXT11.rpt").read_text()


def test_signals_are_reclaimed_from_a_library_that_took_them(home):
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        signal.signal(signal.SIGINT, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        proc.reclaim_signals()  # as after SparkContext() installed its SIGINT handler
        os.kill(os.getpid(), signal.SIGINT)
        assert proc.stop_reason == "SIGINT received"
        proc.stopped("done")


def test_report_echoes_parameter_files_with_passwords_masked(tmp_path):
    from trailgate.process.runtime import Report

    prm = tmp_path / "ext1.prm"
    prm.write_text("EXTRACT ext1\nUSERID gg, PASSWORD secret\n"
                   "SOURCEDB host=localhost password=hunter2 dbname=app\nEXTTRAIL ./dirdat/aa\n")
    report = Report(tmp_path / "EXT1.rpt")
    report.parameters([prm, tmp_path / "missing.prm"])
    report.close()
    text = (tmp_path / "EXT1.rpt").read_text()
    assert "Running with the following parameters" in text
    assert f"-- {prm}" in text and "EXTTRAIL ./dirdat/aa" in text
    assert "secret" not in text and "hunter2" not in text
    assert "PASSWORD ***" in text and "password=***" in text


def test_a_clear_text_password_in_a_parameter_file_is_warned_about(home):
    """USERID…PASSWORD still works but warns, as GoldenGate does; the echo masks quoted
    passwords (spaces, doubled quotes) and URLs whole; an alias alone draws no warning."""
    prm = home.param_file("ext1")
    prm.write_text("EXTRACT ext1\nUSERID gg, PASSWORD 'top sec''ret'\n"
                   "SOURCEDB postgresql://gg:hunter2@db/app\n")
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        proc.echo_parameters([prm])
        proc.stopped("done")
    report = home.report_file("ext1").read_text()
    log = home.ggserr_log.read_text()
    for text in (report, log):
        assert "a parameter file gives a password in clear text" in text
        assert "USERIDALIAS a instead" in text
        assert "top sec" not in text and "ret'" not in text and "hunter2" not in text
    assert "PASSWORD ***\n" in report and "postgresql://gg:***@db/app" in report
    prm.write_text("EXTRACT ext1\nSOURCEDB app, USERIDALIAS gg  -- PASSWORD in a comment\n")
    with GroupProcess(home, "EXTRACT", "ext1", title="T") as proc:
        proc.echo_parameters([prm])
        proc.stopped("done")
    assert home.ggserr_log.read_text().count("password in clear text") == 1
