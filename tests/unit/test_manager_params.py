"""``dirprm/mgr.prm``: what the Manager accepts, and the messages for what it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.manager.params import parse_manager_params


def _home(tmp_path: Path, text: str) -> Home:
    home = Home(tmp_path / "gg").create()
    (home.dirprm / "mgr.prm").write_text(text)
    return home


def test_goldengate_parameters(tmp_path: Path) -> None:
    home = _home(tmp_path, """\
-- the Manager
PORT 7810
AUTOSTART ER *
AUTORESTART EXTRACT *, RETRIES 3, WAITMINUTES 1, RESETMINUTES 60
AUTORESTART REP REP*, WAITSECONDS 5, RESETSECONDS 30
PURGEOLDEXTRACTS ./dirdat/*, USECHECKPOINTS, MINKEEPHOURS 2
PURGEOLDEXTRACTS ./dirdat/aa, NOUSECHECKPOINTS, MINKEEPFILES 3
CHECKMINUTES 5
LAGREPORTMINUTES 5
LAGINFOSECONDS 30
LAGCRITICALMINUTES 2
""")
    p = parse_manager_params(home)
    assert p.port == 7810 and p.bind_address == "127.0.0.1"
    assert p.autostarts("REPLICAT", "REP1") and p.autostarts("EXTRACT", "X")
    ext = p.restart_rule("EXTRACT", "EXT1")
    assert ext is not None and (ext.retries, ext.wait_seconds, ext.reset_seconds) == (3, 60, 3600)
    rep = p.restart_rule("REPLICAT", "REP1")
    assert rep is not None and (rep.retries, rep.wait_seconds, rep.reset_seconds) == (2, 5, 30)
    assert p.restart_rule("REPLICAT", "OTHER") is None
    assert p.purge[0].use_checkpoints and p.purge[0].min_keep_seconds == 7200
    assert not p.purge[1].use_checkpoints and p.purge[1].min_keep_files == 3
    assert (p.check_seconds, p.lag_report_seconds, p.lag_info_seconds,
            p.lag_critical_seconds) == (300, 300, 30, 120)


def test_collector(tmp_path: Path) -> None:
    p = parse_manager_params(_home(tmp_path, "COLLECTOR PORT 7819, TOKENALIAS pumps, CERTFILE "
                                              "./dircrd/c.pem, KEYFILE ./dircrd/c.key, "
                                              "CAFILE /etc/ca.pem, ALLOW pump1, ALLOW pump2\n"))
    c = p.collector
    assert c is not None and (c.port, c.token_alias, c.ca) == (7819, "pumps", "/etc/ca.pem")
    assert c.cert == str(tmp_path / "gg" / "dircrd" / "c.pem") and c.allow == ("PUMP1", "PUMP2")


def test_defaults_without_a_file(tmp_path: Path) -> None:
    p = parse_manager_params(Home(tmp_path / "gg").create())
    assert p.port == 7809 and not p.autorestart and not p.purge


def test_minkeep_hours_wins_over_files_with_goldengates_warning(tmp_path: Path) -> None:
    p = parse_manager_params(_home(tmp_path, "PURGEOLDEXTRACTS ./dirdat/*, MINKEEPHOURS 1, "
                                              "MINKEEPFILES 2\n"))
    assert p.purge[0].min_keep_files is None and p.purge[0].min_keep_seconds == 3600
    assert "MINKEEPFILES option not used" in p.warnings[0]


@pytest.mark.parametrize("text, message", [
    ("AUTOSTRT ER *\n", "line 1: unknown Manager parameter 'AUTOSTRT' (did you mean AUTOSTART?)"),
    ("PORT 7809\nPORT seventy\n", "line 2: PORT: expected a port number"),
    ("PORT 70000\n", "a port number is at most 65535"),
    ("AUTORESTART ER *, RETRIES 2, RETRIES 3\n", "RETRIES given twice"),
    ("AUTORESTART ER *, WAITHOURS 1\n", "expected RETRIES or WAITMINUTES"),
    ("AUTOSTART GROUP x\n", "expected EXTRACT or EXT or REPLICAT"),
    ("LAGREPORTSECONDS 5\n", "LAGREPORT takes MINUTES or HOURS"),
    ("PURGEOLDEXTRACTS ./dirdat/*, MINKEEPFILES 0\n", "must be at least 1"),
    ("COLLECTOR TOKENALIAS a\n", "COLLECTOR: give its port"),
    ("COLLECTOR PORT 7819\n", "accepts only senders it can authenticate"),
    ("COLLECTOR PORT 7819, CERTFILE c.pem, TOKENALIAS a\n", "CERTFILE and KEYFILE go"),
    ("COLLECTOR PORT 7819, TOKENALIAS a, ENCRYPT\n", "expected PORT or BINDADDRESS"),
])
def test_errors_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    home = _home(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        parse_manager_params(home)
    assert message in str(err.value)
    assert str(home.dirprm / "mgr.prm") in str(err.value)
