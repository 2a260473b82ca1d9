"""GGSCI command parsing: every verb, abbreviations, comments, history and errors."""

from __future__ import annotations

from datetime import datetime

import pytest

from trailgate.errors import ConfigError
from trailgate.ggsci import (
    HELP_TOPICS,
    AddCheckpointTable,
    AddCredentialStore,
    AddExtract,
    AddReplicat,
    AddTrail,
    AlterCredentialStore,
    AlterGroup,
    CommandHistory,
    DbLogin,
    DeleteCheckpointTable,
    DeleteCredentialStore,
    DeleteGroup,
    DeleteTrail,
    EditParams,
    Exit,
    GgsciSyntaxError,
    Help,
    History,
    InfoAll,
    InfoCheckpointTable,
    InfoCredentialStore,
    InfoGroup,
    InfoTrail,
    KillGroup,
    LagGroup,
    MasterKeyCommand,
    Obey,
    Repeat,
    SchemaTranData,
    StartGroup,
    StatsGroup,
    StopGroup,
    TranData,
    ViewGgsevt,
    ViewParams,
    ViewReport,
    WalletCommand,
    parse_command,
    parse_obey,
)

CASES = [
    # DBLOGIN
    ("DBLOGIN USERIDALIAS ggadmin", DbLogin(useridalias="ggadmin")),
    ("dblogin useridalias gg domain OracleGoldenGate",
     DbLogin(useridalias="gg", domain="OracleGoldenGate")),
    ("DBLOGIN USERID us01 PASSWORD us01", DbLogin(userid="us01", password="us01")),
    ("DBLOGIN USERID us01, PASSWORD 'p w'", DbLogin(userid="us01", password="p w")),
    ("DBLOGIN SOURCEDB postgresql://gg@db:5432/app",
     DbLogin(sourcedb="postgresql://gg@db:5432/app")),
    ("DBLOGIN SOURCEDB host=db port=5432 dbname=app USERIDALIAS gg",
     DbLogin(sourcedb="host=db port=5432 dbname=app", useridalias="gg")),
    # TRANDATA
    ("ADD TRANDATA t22", TranData("ADD", "t22")),
    ("ADD TRANDATA us01.t22", TranData("ADD", "us01.t22")),
    ("add trandata hr.*", TranData("ADD", "hr.*")),
    ("ADD TRANDATA hr.emp, COLS (a, b)", TranData("ADD", "hr.emp", cols=("a", "b"))),
    ("ADD TRANDATA hr.emp, COLS (a), NOKEY", TranData("ADD", "hr.emp", cols=("a",),
                                                      nokey=True)),
    ("ADD TRANDATA hr.emp, ALLCOLS", TranData("ADD", "hr.emp", allcols=True)),
    ('ADD TRANDATA "HR"."Emp"', TranData("ADD", '"HR"."Emp"')),
    ("INFO TRANDATA t22", TranData("INFO", "t22")),
    ("DELETE TRANDATA us01.t22", TranData("DELETE", "us01.t22")),
    ("ADD SCHEMATRANDATA us02", SchemaTranData("ADD", "us02")),
    ("ADD SCHEMATRANDATA us02, ALLCOLS", SchemaTranData("ADD", "us02", allcols=True)),
    ("INFO SCHEMATRANDATA us02", SchemaTranData("INFO", "us02")),
    ("DELETE SCHEMATRANDATA us02", SchemaTranData("DELETE", "us02")),
    # checkpoint table
    ("ADD CHECKPOINTTABLE gg.chkpt", AddCheckpointTable("gg.chkpt")),
    ("ADD CHECKPOINTTABLE", AddCheckpointTable(None)),
    ("INFO CHECKPOINTTABLE gg.chkpt", InfoCheckpointTable("gg.chkpt")),
    ("DELETE CHECKPOINTTABLE gg.chkpt", DeleteCheckpointTable("gg.chkpt")),
    # ADD EXTRACT
    ("ADD EXTRACT ext1, TRANLOG, BEGIN NOW", AddExtract("EXT1", "TRANLOG", begin="NOW")),
    ("add ext ext1, tranlog, begin now", AddExtract("EXT1", "TRANLOG", begin="NOW")),
    ("ADD EXTRACT ext1, INTEGRATED TRANLOG, BEGIN NOW",
     AddExtract("EXT1", "TRANLOG", begin="NOW", integrated=True)),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-11-21 10:00:00",
     AddExtract("EXT1", "TRANLOG", begin=datetime(2026, 11, 21, 10, 0, 0))),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-11-21 10:00",
     AddExtract("EXT1", "TRANLOG", begin=datetime(2026, 11, 21, 10, 0))),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-11-21",
     AddExtract("EXT1", "TRANLOG", begin=datetime(2026, 11, 21))),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-11-21 10:00:00.123456",
     AddExtract("EXT1", "TRANLOG", begin=datetime(2026, 11, 21, 10, 0, 0, 123456))),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-11-21T10:00:00",
     AddExtract("EXT1", "TRANLOG", begin=datetime(2026, 11, 21, 10, 0, 0))),
    ("ADD EXTRACT ext1, TRANLOG, LSN 0/16b3748",
     AddExtract("EXT1", "TRANLOG", position={"lsn": "0/16B3748"})),
    ("ADD EXTRACT exo, TRANLOG, DUMPDIR /data/dumps, SCN 1234567",
     AddExtract("EXO", "TRANLOG", dumpdir="/data/dumps", position={"scn": 1234567})),
    ("ADD EXTRACT exo, TRANLOG, BEGIN NOW, DUMPDIR ./dumps, DESC 'oracle dumps'",
     AddExtract("EXO", "TRANLOG", dumpdir="./dumps", begin="NOW",
                description="oracle dumps")),
    ("ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/aa",
     AddExtract("PMP1", "EXTTRAILSOURCE", source_path="./dirdat/aa")),
    ("ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/aa, EXTSEQNO 3, EXTRBA 1024",
     AddExtract("PMP1", "EXTTRAILSOURCE", source_path="./dirdat/aa",
                position={"seqno": 3, "rba": 1024})),
    ("ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/aa, EXTSEQNO 3",
     AddExtract("PMP1", "EXTTRAILSOURCE", source_path="./dirdat/aa",
                position={"seqno": 3, "rba": 0})),
    # trails
    ("ADD EXTTRAIL ./dirdat/aa, EXTRACT ext1", AddTrail("EXTTRAIL", "./dirdat/aa", "EXT1")),
    ("ADD EXTTRAIL ./dirdat/aa, EXTRACT ext1, MEGABYTES 100",
     AddTrail("EXTTRAIL", "./dirdat/aa", "EXT1", 100)),
    ("add rmttrail /gg/dirdat/rt, ext pmp1, megabytes 50",
     AddTrail("RMTTRAIL", "/gg/dirdat/rt", "PMP1", 50)),
    ("DELETE EXTTRAIL ./dirdat/aa", DeleteTrail("EXTTRAIL", "./dirdat/aa")),
    ("DELETE RMTTRAIL ./dirdat/rt", DeleteTrail("RMTTRAIL", "./dirdat/rt")),
    ("INFO EXTTRAIL *", InfoTrail("EXTTRAIL", "*")),
    ("INFO RMTTRAIL ./dirdat/rt", InfoTrail("RMTTRAIL", "./dirdat/rt")),
    # ADD REPLICAT
    ("ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt", AddReplicat("REP1", "./dirdat/rt")),
    ("ADD REP rep1, EXTTRAIL ./dirdat/rt, CHECKPOINTTABLE gg.chkpt",
     AddReplicat("REP1", "./dirdat/rt", checkpoint_table="gg.chkpt")),
    ("ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, NODBCHECKPOINT",
     AddReplicat("REP1", "./dirdat/rt", nodbcheckpoint=True)),
    ("ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, EXTSEQNO 2, EXTRBA 0, DESC \"x\"",
     AddReplicat("REP1", "./dirdat/rt", position={"seqno": 2, "rba": 0}, description="x")),
    # ALTER
    ("ALTER EXTRACT ext1, BEGIN NOW", AlterGroup("EXTRACT", "EXT1", begin="NOW")),
    ("ALTER EXT ext1, ETROLLOVER", AlterGroup("EXTRACT", "EXT1", etrollover=True)),
    ("ALTER REPLICAT rep1, EXTSEQNO 4, EXTRBA 0",
     AlterGroup("REPLICAT", "REP1", position={"seqno": 4, "rba": 0})),
    ("ALTER EXTRACT exo, SCN 99", AlterGroup("EXTRACT", "EXO", position={"scn": 99})),
    # DELETE groups
    ("DELETE EXTRACT ext1", DeleteGroup("EXTRACT", "EXT1")),
    ("DELETE REP rep1 !", DeleteGroup("REPLICAT", "REP1", force=True)),
    # group verbs
    ("START EXTRACT ext1", StartGroup("EXTRACT", "EXT1")),
    ("START ext1", StartGroup(None, "EXT1")),
    ("start rep rep1", StartGroup("REPLICAT", "REP1")),
    ("START REPLICAT rep1, ATCSN 12345", StartGroup("REPLICAT", "REP1", atcsn="12345")),
    ("START REPLICAT rep1, AFTERCSN 12345",
     StartGroup("REPLICAT", "REP1", aftercsn="12345")),
    ("START ER *", StartGroup("ER", "*")),
    ("START EXT", StartGroup(None, "EXT")),  # a group called EXT
    ("STOP EXTRACT ext1", StopGroup("EXTRACT", "EXT1")),
    ("STOP REPLICAT rep1 !", StopGroup("REPLICAT", "REP1", force=True)),
    ("KILL EXTRACT ext1", KillGroup("EXTRACT", "EXT1")),
    ("LAG REPLICAT rep1", LagGroup("REPLICAT", "REP1")),
    ("LAG rep*", LagGroup(None, "REP*")),
    ("STATS EXTRACT ext1", StatsGroup("EXTRACT", "EXT1")),
    ("STATS REP rep1, TOTAL, TABLE hr.*",
     StatsGroup("REPLICAT", "REP1", total=True, table="hr.*")),
    ("STATS rep1, LATEST, RESET, REPORTRATE SEC",
     StatsGroup(None, "REP1", latest=True, reset=True, report_rate="SEC")),
    # INFO
    ("INFO ALL", InfoAll()),
    ("info all", InfoAll()),
    ("INFO EXTRACT *", InfoGroup("EXTRACT", "*")),
    ("INFO EXTRACT ext1", InfoGroup("EXTRACT", "EXT1")),
    ("INFO ext1, SHOWCH", InfoGroup(None, "EXT1", showch=True)),
    ("INFO EXT ext1, SHOWCH 5", InfoGroup("EXTRACT", "EXT1", showch=True, showch_count=5)),
    ("INFO REPLICAT rep1, DETAIL", InfoGroup("REPLICAT", "REP1", detail=True)),
    ("INFO ER *", InfoGroup("ER", "*")),
    ("INFO all_1", InfoGroup(None, "ALL_1")),
    ('ADD TRANDATA "Sales"', TranData("ADD", '"Sales"')),
    # files
    ("VIEW REPORT ext1", ViewReport("EXT1")),
    ("VIEW PARAMS rep1", ViewParams("REP1")),
    ("view params rep1", ViewParams("REP1")),
    ("VIEW GGSEVT", ViewGgsevt()),
    ("EDIT PARAMS ext1", EditParams("EXT1")),
    # credential store
    ("ADD CREDENTIALSTORE", AddCredentialStore()),
    ("DELETE CREDENTIALSTORE", DeleteCredentialStore()),
    ("INFO CREDENTIALSTORE", InfoCredentialStore()),
    ("INFO CREDENTIALSTORE DOMAIN admin", InfoCredentialStore("admin")),
    ("ALTER CREDENTIALSTORE ADD USER postgresql://gg@db:5432/app ALIAS gg",
     AlterCredentialStore("ADD", user="postgresql://gg@db:5432/app", alias="gg")),
    ("ALTER CREDENTIALSTORE ADD USER gg@orcl PASSWORD secret ALIAS gg DOMAIN admin",
     AlterCredentialStore("ADD", user="gg@orcl", password="secret", alias="gg",
                          domain="admin")),
    ("ALTER CREDENTIALSTORE ADD USER 'host=db dbname=app user=gg' ALIAS gg",
     AlterCredentialStore("ADD", user="host=db dbname=app user=gg", alias="gg")),
    ("ALTER CREDENTIALSTORE REPLACE USER gg PASSWORD new ALIAS gg",
     AlterCredentialStore("REPLACE", user="gg", password="new", alias="gg")),
    ("ALTER CREDENTIALSTORE DELETE USER gg", AlterCredentialStore("DELETE", user="gg")),
    ("ALTER CREDENTIALSTORE DELETE ALIAS gg", AlterCredentialStore("DELETE", alias="gg")),
    ("CREATE WALLET", WalletCommand("CREATE")),
    ("open wallet", WalletCommand("OPEN")),
    ("PURGE WALLET", WalletCommand("PURGE")),
    ("ADD MASTERKEY", MasterKeyCommand("ADD")),
    ("RENEW MASTERKEY", MasterKeyCommand("RENEW")),
    ("INFO MASTERKEY", MasterKeyCommand("INFO")),
    ("INFO MASTERKEY VERSION 7", MasterKeyCommand("INFO", (7,))),
    ("DELETE MASTERKEY VERSION 10", MasterKeyCommand("DELETE", (10,))),
    ("DELETE MASTERKEY RANGE FROM 3 TO 6", MasterKeyCommand("DELETE", (3, 4, 5, 6))),
    ("DELETE MASTERKEY ALL", MasterKeyCommand("DELETE", all=True)),
    ("UNDELETE MASTERKEY VERSION 3", MasterKeyCommand("UNDELETE", (3,))),
    # session
    ("OBEY ./dirprm/setup.oby", Obey("./dirprm/setup.oby")),
    ("OBEY '/path with spaces/x.oby'", Obey("/path with spaces/x.oby")),
    ("HELP", Help()),
    ("HELP ADD EXTRACT", Help("ADD EXTRACT")),
    ("help add ext", Help("ADD EXTRACT")),
    ("HELP INFO ALL", Help("INFO ALL")),
    ("HELP START", Help("START")),
    ("HISTORY", History()),
    ("HISTORY 10", History(10)),
    ("EXIT", Exit()),
    ("quit", Exit()),
    ("!", Repeat()),
    ("! 3", Repeat(number=3)),
    ("!-2", Repeat(number=-2)),
    ("! info", Repeat(prefix="info")),
    # comments and trailing semicolons
    ("INFO ALL  -- everything", InfoAll()),
    ("INFO ALL;", InfoAll()),
]


@pytest.mark.parametrize("text, expected", CASES, ids=[c[0] for c in CASES])
def test_parse(text: str, expected: object) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "-- a comment", "  -- indented comment"])
def test_blank_and_comment_lines(text: str) -> None:
    assert parse_command(text) is None


ERRORS = [
    ("ADD EXTRAKT e1", "Expected EXTRACT, REPLICAT, EXTTRAIL", "'EXTRAKT'"),
    ("FROB ext1", "Expected a command such as", "'FROB'"),
    ("ADD", "Expected EXTRACT, REPLICAT", ""),
    ("ADD EXTRACT ext1, TRANLOG",
     "BEGIN NOW, BEGIN timestamp, SCN n, LSN x or INITIALLOAD load", ""),
    ("ADD EXTRACT ext1 TRANLOG BEGIN NOW",
     "',' and TRANLOG, EXTTRAILSOURCE or SOURCEISTABLE", "'TRANLOG'"),
    ("ADD EXTRACT ext1, REDO, BEGIN NOW", "TRANLOG, EXTTRAILSOURCE or SOURCEISTABLE",
     "'REDO'"),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN yesterday", "NOW or a timestamp", "'yesterday'"),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN 2026-02-30", "NOW or a timestamp", "'2026-02-30'"),
    ("ADD EXTRACT ext1, TRANLOG, BEGIN NOW, SCN 5", "not both", ""),
    ("ADD EXTRACT ext1, TRANLOG, LSN 16B3748", "an LSN such as", ""),
    ("ADD EXTRACT ext1, TRANLOG, EXTSEQNO 1", "BEGIN, SCN, LSN, DUMPDIR", "'EXTSEQNO'"),
    ("ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/aa, DUMPDIR /x", "BEGIN, SCN", "'DUMPDIR'"),
    ("ADD EXTRACT waytoolong, TRANLOG, BEGIN NOW", "a group name (1 to 8", "'waytoolong'"),
    ("ADD EXTRACT ext-1, TRANLOG, BEGIN NOW", "a group name", ""),
    ("ADD EXTRACT e*, TRANLOG, BEGIN NOW", "a group name", "'e*'"),
    ("ADD EXTTRAIL ./dirdat/aa", "', EXTRACT group'", ""),
    ("ADD EXTTRAIL ./dirdat/abc, EXTRACT e", "two-character prefix", "'./dirdat/abc'"),
    ("ADD EXTTRAIL ./dirdat/aa, EXTRACT e, MEGABYTES 0", "MEGABYTES n", ""),
    ("ADD EXTTRAIL ./dirdat/aa, EXTRACT e, MEGABYTES lots", "a size in megabytes", "'lots'"),
    ("ADD REPLICAT rep1", "', EXTTRAIL trail'", ""),
    ("ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, CHECKPOINTTABLE gg.c, NODBCHECKPOINT",
     "EXTSEQNO, EXTRBA, BEGIN", "'NODBCHECKPOINT'"),
    ("ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, SCN 5", "EXTSEQNO", "'SCN'"),
    ("ADD TRANDATA hr.emp, NOKEY", "COLS (...) with NOKEY", ""),
    ("ADD TRANDATA hr.emp, COLS a", "'(' after COLS", "'a'"),
    ("ADD TRANDATA hr.emp, COLS (a b)", "',' or ')' in COLS", "'b'"),
    ("INFO TRANDATA hr.emp, NOKEY", "the end of the command", "'NOKEY'"),
    ("ADD TRANDATA", "a table name", ""),
    ("ADD SCHEMATRANDATA hr.emp", "a schema name", ""),
    ("DBLOGIN", "USERIDALIAS alias, USERID user or SOURCEDB", ""),
    ("DBLOGIN USERIDALIAS a USERID b", "USERIDALIAS or USERID, not both", ""),
    ("DBLOGIN USERIDALIAS a USERIDALIAS b", "each once", ""),
    ("DBLOGIN PASSWORD", "a value after PASSWORD", ""),
    ("START", "[EXTRACT|REPLICAT] group name", ""),
    ("START EXTRACT ext1, DETAIL", "ATCSN n or AFTERCSN n", "'DETAIL'"),
    ("STOP EXTRACT ext1, SHOWCH", "the end of the command", ""),
    ("STATS ext1, REPORTRATE DAY", "SEC, MIN or HR", "'DAY'"),
    ("INFO", "ALL, a group name", ""),
    ("INFO ext1 SHOWCH", "',' before the next option", "'SHOWCH'"),
    ("INFO ext1, SHOWCHX", "SHOWCH or DETAIL", "'SHOWCHX'"),
    ("INFO ALL EXTRA", "the end of the command", ""),
    ("ALTER EXTRACT ext1", "BEGIN ...", ""),
    ("ALTER REPLICAT rep1, ETROLLOVER", "BEGIN, SCN, LSN", "'ETROLLOVER'"),
    ("ALTER CREDENTIALSTORE ADD USER gg", "ALIAS alias", ""),
    ("ALTER CREDENTIALSTORE DELETE USER gg PASSWORD x", "each once", ""),
    ("ALTER CREDENTIALSTORE RENAME USER gg", "ADD, REPLACE or DELETE", "'RENAME'"),
    ("DELETE MASTERKEY", "VERSION n, RANGE FROM a TO b or ALL", ""),
    ("DELETE MASTERKEY RANGE FROM 6 TO 3", "at least 6", ""),
    ("DELETE MASTERKEY RANGE FROM 1 TO 999999999999", "at most 100,000 versions", ""),
    ("UNDELETE MASTERKEY", "VERSION n", ""),
    ("OPEN WALLETS", "WALLET", "'WALLETS'"),
    ("VIEW REPORT", "a group name", ""),
    ("VIEW STUFF x", "REPORT, PARAMS or GGSEVT", "'STUFF'"),
    ("EDIT REPORT x", "PARAMS", "'REPORT'"),
    ("OBEY", "a file name", ""),
    ("HELP FROBNICATE", "a command name", ""),
    ("HISTORY all", "a number of commands", "'all'"),
    ("EXIT now", "the end of the command", "'now'"),
    ("! 0", "HISTORY number", ""),
    ("INFO 'unterminated", "unterminated string", ""),
]


@pytest.mark.parametrize("text, expected, found", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_quote_command_and_say_what_was_expected(text: str, expected: str,
                                                        found: str) -> None:
    with pytest.raises(GgsciSyntaxError) as info:
        parse_command(text)
    message = str(info.value)
    assert message.startswith("ERROR: ")
    if not text.startswith("!"):
        assert repr(text) in message
    assert expected in message
    if found:
        assert f"found {found}" in message


def test_errors_point_to_help() -> None:
    with pytest.raises(GgsciSyntaxError, match="HELP ADD EXTRACT shows the syntax"):
        parse_command("ADD EXT e1, TRANLOG")
    with pytest.raises(GgsciSyntaxError, match="HELP lists the commands"):
        parse_command("FROB")


@pytest.mark.parametrize("verb", ["SHELL ls", "SEND EXTRACT e, STATUS", "CLEANUP EXTRACT e"])
def test_unsupported_verbs_say_so(verb: str) -> None:
    with pytest.raises(GgsciSyntaxError, match="not supported"):
        parse_command(verb)


def test_syntax_error_is_a_config_error_with_location() -> None:
    with pytest.raises(ConfigError) as info:
        parse_command("ADD EXTRAKT x", path="setup.oby", line=7)
    assert info.value.path == "setup.oby" and info.value.line == 7
    assert str(info.value).startswith("setup.oby, line 7: ERROR: Invalid command")


def test_parse_obey_reports_every_command_with_its_line() -> None:
    text = ("-- set up capture\n"
            "DBLOGIN USERIDALIAS gg\n"
            "\n"
            "ADD TRANDATA hr.*\n"
            "ADD EXTRACT ext1, TRANLOG, BEGIN NOW\n"
            "ADD EXTTRAIL ./dirdat/aa, EXTRACT ext1\n")
    cmds = parse_obey(text, "setup.oby")
    assert [n for n, _ in cmds] == [2, 4, 5, 6]
    assert cmds[1][1] == TranData("ADD", "hr.*")


def test_parse_obey_fails_before_running_anything() -> None:
    with pytest.raises(GgsciSyntaxError) as info:
        parse_obey("INFO ALL\nINFO ALL\nADD EXTRAKT x\n", "setup.oby")
    assert info.value.line == 3 and info.value.path == "setup.oby"


def test_every_help_topic_parses() -> None:
    for topic in HELP_TOPICS:
        assert parse_command(f"HELP {topic}") == Help(topic)


def test_history_resolves_repeats() -> None:
    h = CommandHistory()
    with pytest.raises(GgsciSyntaxError, match="history is empty"):
        h.resolve(Repeat())
    h.add("INFO ALL")
    h.add("START EXTRACT ext1")
    h.add("  info ext1, showch  ")
    assert h.resolve(Repeat()) == "info ext1, showch"
    assert h.resolve(Repeat(number=1)) == "INFO ALL"
    assert h.resolve(Repeat(number=-2)) == "START EXTRACT ext1"
    assert h.resolve(Repeat(prefix="start")) == "START EXTRACT ext1"
    assert h.resolve(Repeat(prefix="INFO")) == "info ext1, showch"
    assert h.last(2) == [(2, "START EXTRACT ext1"), (3, "info ext1, showch")]
    assert len(h.last()) == 3
    with pytest.raises(GgsciSyntaxError, match="no command 9"):
        h.resolve(Repeat(number=9))
    with pytest.raises(GgsciSyntaxError, match="starts with 'STOP'"):
        h.resolve(Repeat(prefix="STOP"))
