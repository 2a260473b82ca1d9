"""Parameter files: syntax, every supported parameter, and errors that name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.params import (
    ColMapEntry,
    ColumnRef,
    Compare,
    DdlRule,
    DiscardFileSpec,
    ExtractParams,
    FunctionCall,
    Literal,
    Logical,
    ReplicatParams,
    ReportCount,
    TargetSpec,
    TokenSpec,
    TranlogOptions,
    parse_globals,
    parse_group_params,
    parse_params,
    parse_params_text,
)

EXT_HEAD = "EXTRACT ext1\nEXTTRAIL ./dirdat/aa\n"
REP_HEAD = "REPLICAT rep1\nTARGETDB host=localhost dbname=tgt\n"


def ext(body: str, **kw: object) -> ExtractParams:
    p = parse_params_text(EXT_HEAD + body, "ext1.prm", **kw)  # type: ignore[arg-type]
    assert isinstance(p, ExtractParams)
    return p


def rep(body: str) -> ReplicatParams:
    p = parse_params_text(REP_HEAD + body, "rep1.prm")
    assert isinstance(p, ReplicatParams)
    return p


def error(text: str, **kw: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_params_text(text, "g.prm", **kw)  # type: ignore[arg-type]
    return info.value


# -- syntax --------------------------------------------------------------------------------
def test_full_extract_file(tmp_path: Path) -> None:
    prm = tmp_path / "ext1.prm"
    prm.write_text(
        "-- capture for HR\n"
        "Extract EXT1\n"
        "sourcedb postgresql://gg@db:5432/app, useridalias ggadmin domain OracleGoldenGate\n"
        "EXTTRAIL ./dirdat/aa\n"
        "RMTHOST target.example.com, MGRPORT 7809, COMPRESS\n"
        "RMTTRAIL ./dirdat/rt\n"
        "COMMENT anything at all here, even (unbalanced\n"
        "GETTRUNCATES\n"
        "table hr.emp;   -- trailing comment\n"
        "IGNORETRUNCATES\n"
        "TABLE hr.dept, COLSEXCEPT (blob_col);\n"
        "TABLEEXCLUDE hr.tmp_*\n"
        "PASSTHRU\n"
    )
    p = parse_params(prm, group="ext1")
    assert isinstance(p, ExtractParams)
    assert p.name == "EXT1" and p.kind == "EXTRACT"
    assert p.sourcedb == "postgresql://gg@db:5432/app"
    assert (p.useridalias, p.domain) == ("ggadmin", "OracleGoldenGate")
    assert p.exttrails == ["./dirdat/aa"] and p.rmttrails == ["./dirdat/rt"]
    assert p.rmthost == {"HOST": "target.example.com", "MGRPORT": "7809", "COMPRESS": ""}
    assert [t.name for t in p.tables] == ["hr.emp", "hr.dept"]
    assert p.tables[0].get_truncates is True and p.tables[1].get_truncates is False
    assert p.tables[0].line == 9 and p.tables[0].path == str(prm)
    assert p.tables[1].cols_except == ["blob_col"]
    assert p.table_excludes == ["hr.tmp_*"]
    assert p.passthru is True
    assert p.files == [str(prm)]


def test_keywords_are_case_insensitive_and_names_keep_case() -> None:
    p = ext('table HR."MixedCase";\nTaBlE hr.x;\n')
    assert [t.name for t in p.tables] == ['HR."MixedCase"', "hr.x"]


def test_ampersand_continues_a_line() -> None:
    p = ext("SOURCEDB host=db &\n   port=5432 dbname=app &\n   , USERIDALIAS gg\nTABLE a.b;\n")
    assert p.sourcedb == "host=db port=5432 dbname=app"
    assert p.useridalias == "gg"


def test_table_spans_lines_until_semicolon() -> None:
    p = ext("TABLE hr.emp,\n  COLS (id,\n        name),\n  WHERE (id > 10)\n;\nTABLE hr.x;\n")
    assert p.tables[0].cols == ["id", "name"]
    assert p.tables[0].line == 3
    assert p.tables[1].line == 8


def test_comment_dashes_inside_quotes_are_text() -> None:
    p = ext("TABLE a.b, TOKENS (t = 'x -- y');\n")
    assert p.tables[0].tokens == [TokenSpec("t", Literal("x -- y"))]


def test_doubled_quotes_escape() -> None:
    p = ext("TABLE a.b, TOKENS (t = 'it''s');\n")
    assert p.tables[0].tokens[0].expr == Literal("it's")


def test_quoted_string_value_keeps_spaces() -> None:
    p = ext("SOURCEDB 'host=db port=5432', USERID gg, PASSWORD 'p w'\nTABLE a.b;\n")
    assert p.sourcedb == "host=db port=5432"
    assert (p.userid, p.password) == ("gg", "p w")


# -- TABLE options -------------------------------------------------------------------------
def test_table_tokens_and_where() -> None:
    p = ext("TABLE hr.emp, COLS (id, name), TOKENS (tk_commit = "
            "@GETENV('GGHEADER', 'committimestamp'), tk_csn = @GETENV('TRANSACTION','CSN'), "
            "src = 'crm', now = @DATENOW()), WHERE (salary >= 100 AND (dept <> 'X' OR "
            "dept = @NULL));\n")
    t = p.tables[0]
    assert t.tokens == [
        TokenSpec("tk_commit", FunctionCall("GETENV", (Literal("GGHEADER"),
                                                       Literal("COMMITTIMESTAMP")))),
        TokenSpec("tk_csn", FunctionCall("GETENV", (Literal("TRANSACTION"), Literal("CSN")))),
        TokenSpec("src", Literal("crm")),
        TokenSpec("now", FunctionCall("DATENOW")),
    ]
    assert t.where is not None
    assert t.where.condition == Logical("AND", (
        Compare(ColumnRef("salary"), ">=", Literal("100", is_number=True)),
        Logical("OR", (Compare(ColumnRef("dept"), "<>", Literal("X")),
                       Compare(ColumnRef("dept"), "=", FunctionCall("NULL")))),
    ))
    assert "salary >= 100" in t.where.text


def test_where_operators() -> None:
    p = ext("TABLE a.b, WHERE (x != 1 OR y<=2 OR z>=3 OR w<4 OR v>5 OR u = @PRESENT);\n")
    cond = p.tables[0].where.condition  # type: ignore[union-attr]
    assert isinstance(cond, Logical)
    assert [c.op for c in cond.items] == ["<>", "<=", ">=", "<", ">", "="]  # type: ignore[union-attr]


def test_table_target_for_a_pump() -> None:
    p = ext("TABLE src.orders, TARGET dst.orders;\n")
    assert p.tables[0].target == "dst.orders"


@pytest.mark.parametrize("text, message", [
    ("TABLE hr.emp, COLS (a), COLSEXCEPT (b);", "COLS or COLSEXCEPT, not both"),
    ("TABLE hr.emp, FILTER (x);", "unknown or unsupported option FILTER"),
    ("TABLE hr.emp, COLS (a), COLS (b);", "COLS is given twice"),
    ("TABLE emp;", "needs a schema"),
    ("TABLE hr.emp, COLS a;", "'(' to start COLS"),
    ("TABLE hr.emp, COLS (a b);", "',' or ')'"),
    ("TABLE hr.emp, TOKENS (t @GETENV('GGHEADER','OPTYPE'));", "'=' after token name t"),
    ("TABLE hr.emp, TOKENS (t = @STRCAT('a'));", "unsupported function @STRCAT"),
    ("TABLE hr.emp, TOKENS (t = @GETENV('GGHEADER'));", "@GETENV takes ('class', 'field')"),
    ("TABLE hr.emp, TOKENS (t = @GETENV('GGHEADER', 'NOPE'));", "field must be one of"),
    ("TABLE hr.emp, TOKENS (t = @GETENV(GGHEADER, 'OPTYPE'));", "quoted string arguments"),
    ("TABLE hr.emp, TOKENS (t = @TOKEN('a', 'b'));", "@TOKEN takes one token name"),
    ("TABLE hr.emp, TOKENS (t = @DATENOW('x'));", "@DATENOW takes no arguments"),
    ("TABLE hr.emp, WHERE (a ~ 1);", "expected a comparison operator"),
    ("TABLE hr.emp, WHERE (a = 1 AND);", "expected a column, literal or @function"),
    ("TABLE hr.emp, WHERE (a = 1;", "')' to end the WHERE condition"),
    ("TABLE hr.emp, TOKENS (t = 'unterminated);", "unterminated string"),
])
def test_table_errors_name_file_and_line(text: str, message: str) -> None:
    e = error(EXT_HEAD + "\n" + text + "\n")
    assert e.path == "g.prm"
    assert e.line == 4
    assert message in str(e)
    assert str(e).startswith("g.prm, line 4: ")


def test_missing_semicolon_is_caught_at_the_next_statement() -> None:
    e = error(EXT_HEAD + "TABLE hr.emp\nTABLE hr.dept;\n")
    assert e.line == 4 and "starting at line 3 has no ending ';'" in str(e)
    e = error(EXT_HEAD + "TABLE hr.emp, COLS (a)\n")
    assert e.line == 3 and "no ending ';'" in str(e)


def test_text_after_semicolon_is_an_error() -> None:
    e = error(EXT_HEAD + "TABLE hr.emp; TABLE hr.x;\n")
    assert e.line == 3 and "after ';'" in str(e)


# -- MAP -----------------------------------------------------------------------------------
def test_map_with_colmap_keycols_and_toggles() -> None:
    p = rep(
        "HANDLECOLLISIONS\n"
        "REPERROR (DEFAULT, DISCARD)\n"
        "MAP hr.emp, TARGET rpt.emp,\n"
        "  COLMAP (USEDEFAULTS, full_name = name, src = 'hr', ts = @GETENV('GGHEADER',\n"
        "          'COMMITTIMESTAMP'), tk = @TOKEN('tk_commit'), \"Mixed\" = id),\n"
        "  KEYCOLS (id, region);\n"
        "NOHANDLECOLLISIONS\n"
        "REPERROR (-1403, IGNORE)\n"
        "MAP public.*, TARGET replica.*, REPERROR (23505, DISCARD);\n"
        "MAP a.b, TARGET c.d, HANDLECOLLISIONS, WHERE (qty > 0);\n"
    )
    m0, m1, m2 = p.maps
    assert (m0.source, m0.target, m0.line) == ("hr.emp", "rpt.emp", 5)
    assert m0.usedefaults is True
    assert m0.colmap == [
        ColMapEntry("full_name", ColumnRef("name")),
        ColMapEntry("src", Literal("hr")),
        ColMapEntry("ts", FunctionCall("GETENV", (Literal("GGHEADER"),
                                                  Literal("COMMITTIMESTAMP")))),
        ColMapEntry("tk", FunctionCall("TOKEN", (Literal("tk_commit"),))),
        ColMapEntry("Mixed", ColumnRef("id"), target_quoted=True),
    ]
    assert m0.keycols == ["id", "region"]
    assert m0.handle_collisions is True and m0.reperror == {"DEFAULT": "DISCARD"}
    assert m1.handle_collisions is False
    assert m1.reperror == {"DEFAULT": "DISCARD", "-1403": "IGNORE", "23505": "DISCARD"}
    assert m2.handle_collisions is True and m2.where is not None
    assert p.reperror == {"DEFAULT": "DISCARD", "-1403": "IGNORE"}
    assert p.handle_collisions is False  # the last toggle
    assert p.target == TargetSpec("POSTGRES", "host=localhost dbname=tgt")


def test_reperror_default_is_abend() -> None:
    p = rep("MAP a.b, TARGET c.d;\n")
    assert p.reperror == {"DEFAULT": "ABEND"}
    assert p.maps[0].reperror == {"DEFAULT": "ABEND"}


@pytest.mark.parametrize("text, message", [
    ("MAP a.b c.d;", "expected TARGET"),
    ("MAP a.b, c.d;", "expected TARGET"),
    ("MAP a.b, TARGET c.d, COLMAP (x);", "'=' after target column x"),
    ("MAP a.b, TARGET c.d, COLMAP (x = a, x = b);", "target column x more than once"),
    ("MAP a.b, TARGET c.d, KEYCOLS ();", "expected a column name"),
    ("MAP a.b, TARGET c.d, SQLEXEC (x);", "unknown or unsupported option SQLEXEC"),
    ("MAP a.b, TARGET c.d, REPERROR (DEFAULT, RETRY);", "ABEND or DISCARD or IGNORE"),
    ("MAP a.b, TARGET c.d, REPERROR DEFAULT, ABEND;", "'(' as in REPERROR"),
    ("REPERROR (oops_error, ABEND)", "not DEFAULT, DEFAULT2, an error number"),
    ("MAPEXCLUDE nodot", "needs a schema"),
])
def test_map_errors(text: str, message: str) -> None:
    e = error(REP_HEAD + text + "\nMAP x.y, TARGET x.y;\n")
    assert e.line == 3
    assert message in str(e)


def test_mapexclude_and_replicat_options() -> None:
    p = rep("MAPEXCLUDE hr.audit_*\nBATCHSQL\nASSUMETARGETDEFS\nGROUPTRANSOPS 500\n"
            "MAXTRANSOPS 10000\nDISCARDFILE ./dirdsc/rep1.dsc, PURGE, MEGABYTES 50\n"
            "SOURCEDEFS ./dirdef/hr.def\nGETTRUNCATES\nMAP hr.*, TARGET hr.*;\n")
    assert p.map_excludes == ["hr.audit_*"]
    assert p.batchsql and p.assume_targetdefs
    assert (p.group_trans_ops, p.max_trans_ops) == (500, 10000)
    assert p.discardfile == DiscardFileSpec("./dirdsc/rep1.dsc", append=False, megabytes=50)
    assert p.sourcedefs == "./dirdef/hr.def"
    assert p.maps[0].get_truncates is True


def test_discardfile_defaults_to_append() -> None:
    p = rep("DISCARDFILE ./dirdsc/x.dsc\nMAP a.b, TARGET a.b;\n")
    assert p.discardfile == DiscardFileSpec("./dirdsc/x.dsc", append=True, megabytes=None)
    e = error(REP_HEAD + "DISCARDFILE x.dsc, APPEND, PURGE\nMAP a.b, TARGET a.b;\n")
    assert "APPEND or PURGE, not both" in str(e)


# -- targets -------------------------------------------------------------------------------
@pytest.mark.parametrize("line, target", [
    ("TARGETDELTA /data/delta/hr", TargetSpec("DELTA", "/data/delta/hr")),
    ("TARGETPARQUET ./out/changes", TargetSpec("PARQUET", "./out/changes")),
    ("TARGETDB postgresql://u@h/db, USERIDALIAS tgt", TargetSpec("POSTGRES",
                                                                  "postgresql://u@h/db")),
])
def test_replicat_targets(line: str, target: TargetSpec) -> None:
    p = parse_params_text(f"REPLICAT r\n{line}\nMAP a.b, TARGET c.d;\n", "r.prm")
    assert isinstance(p, ReplicatParams)
    assert p.target == target


def test_replicat_needs_exactly_one_target_and_a_map() -> None:
    e = error("REPLICAT r\nMAP a.b, TARGET c.d;\n")
    assert e.line == 1 and "has no target" in str(e)
    e = error("REPLICAT r\nTARGETDB db\nTARGETDELTA /x\nMAP a.b, TARGET c.d;\n")
    assert e.line == 3 and "one target" in str(e)
    e = error("REPLICAT r\nTARGETDELTA /x\n")
    assert "has no MAP statement" in str(e)


def test_extract_needs_a_table_and_a_trail() -> None:
    assert "has no TABLE statement" in str(error("EXTRACT e\nEXTTRAIL ./dirdat/aa\n"))
    assert "writes no trail" in str(error("EXTRACT e\nTABLE a.b;\n"))


# -- extract options -----------------------------------------------------------------------
def test_ddl_rules() -> None:
    p = ext("DDL INCLUDE MAPPED, EXCLUDE OBJNAME hr.tmp_* OPTYPE drop, &\n"
            "  INCLUDE OBJTYPE 'TABLE' INSTR 'ALTER'\nTABLE a.b;\n")
    assert p.ddl == [
        DdlRule(True, "MAPPED"),
        DdlRule(False, None, objnames=["hr.tmp_*"], optypes=["DROP"]),
        DdlRule(True, None, objtypes=["TABLE"], instr=["ALTER"]),
    ]
    p = ext("DDL INCLUDE (ALL)\nTABLE a.b;\n")
    assert p.ddl == [DdlRule(True, "ALL")]


@pytest.mark.parametrize("text, message", [
    ("DDL", "expected INCLUDE or EXCLUDE"),
    ("DDL MAPPED", "expected INCLUDE or EXCLUDE"),
    ("DDL INCLUDE MAPPED ALL", "start another INCLUDE or EXCLUDE"),
    ("DDL INCLUDE FOO", "unknown option 'FOO'"),
    ("DDL INCLUDE (ALL", "unbalanced '('"),
])
def test_ddl_errors(text: str, message: str) -> None:
    e = error(EXT_HEAD + text + "\nTABLE a.b;\n")
    assert e.line == 3 and message in str(e)


def test_tranlogoptions_reportcount_checkpointsecs_spark() -> None:
    p = ext("TRANLOGOPTIONS DUMPDIR /dumps, DICTIONARY ./dirdef/dict.txt\n"
            "TRANLOGOPTIONS ONUNKNOWN SKIP\n"
            "REPORTCOUNT EVERY 1000 RECORDS, RATE\nCHECKPOINTSECS 5\n"
            "SPARK MASTER local[2], TRIGGER 500 MILLISECONDS\n"
            "SPARK CONF spark.sql.shuffle.partitions=4, CONF spark.ui.enabled false\n"
            "TABLE a.b;\n")
    assert p.tranlog == TranlogOptions("/dumps", "./dirdef/dict.txt", "SKIP")
    assert p.report_count == ReportCount(1000, "RECORDS", True)
    assert p.checkpoint_secs == 5
    assert p.spark.master == "local[2]"
    assert p.spark.trigger_seconds == pytest.approx(0.5)
    assert p.spark.conf == {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}
    p = ext("REPORTCOUNT 30 SECONDS\nSPARK TRIGGER 1 SECONDS\nTABLE a.b;\n")
    assert p.report_count == ReportCount(30, "SECONDS", False)
    assert p.spark.trigger_seconds == 1.0


def test_checkpointsecs_sets_the_window_of_groups_whose_batches_only_checkpoint() -> None:
    both = ext("CHECKPOINTSECS 5\nSPARK TRIGGER 500 MILLISECONDS\nTABLE a.b;\n")
    assert both.batch_seconds(None, patient=True) == 5
    assert both.batch_seconds(None, patient=False) == pytest.approx(0.5)  # data waits on it
    assert both.batch_seconds(2.0, patient=True) == 2.0  # a run's --trigger wins
    trigger = ext("SPARK TRIGGER 2 SECONDS\nTABLE a.b;\n")
    assert trigger.batch_seconds(None, patient=True) == 2.0  # SPARK TRIGGER still sets it
    neither = ext("TABLE a.b;\n")
    assert neither.checkpoint_secs is None
    # GoldenGate's CHECKPOINTSECS default: the group's own thread checkpoints every second
    assert neither.batch_seconds(None, patient=True) == 10.0
    assert neither.batch_seconds(None, patient=False) == 1.0


def test_flushsecs_is_an_extract_parameter_of_whole_seconds() -> None:
    assert ext("TABLE a.b;\n").flush_secs == 1.0  # GoldenGate's default
    assert ext("FLUSHSECS 3\nTABLE a.b;\n").flush_secs == 3
    assert ext("FLUSHSECS 0\nTABLE a.b;\n").flush_secs == 0
    e = error(REP_HEAD + "FLUSHSECS 1\nMAP a.b, TARGET a.b;\n")
    assert "FLUSHSECS is an Extract parameter" in str(e)


def test_eofdelay_caps_the_live_streams_gather_in_seconds_or_centiseconds() -> None:
    assert ext("TABLE a.b;\n").eof_delay == pytest.approx(0.02)  # trailgate's own default
    assert ext("EOFDELAYCSECS 5\nTABLE a.b;\n").eof_delay == pytest.approx(0.05)
    assert ext("EOFDELAY 1\nTABLE a.b;\n").eof_delay == 1.0
    assert ext("EOFDELAYCSECS 0\nTABLE a.b;\n").eof_delay == 0


def test_a_replicats_eofdelay_bounds_the_gap_between_its_steps() -> None:
    assert rep("MAP a.b, TARGET a.b;\n").eof_delay == pytest.approx(0.01)
    assert rep("EOFDELAYCSECS 5\nMAP a.b, TARGET a.b;\n").eof_delay == \
        pytest.approx(0.05)
    assert rep("EOFDELAY 1\nMAP a.b, TARGET a.b;\n").eof_delay == 1.0
    e = error(REP_HEAD + "EOFDELAYCSECS 150\nMAP a.b, TARGET a.b;\n")
    assert "EOFDELAYCSECS: at most 100 centiseconds, not 150" in str(e)
    assert "the stream apply lets transactions gather" in str(e)


@pytest.mark.parametrize("text, message", [
    ("EOFDELAYCSECS -1", "at least 0"),
    ("EOFDELAYCSECS 101", "EOFDELAYCSECS: at most 100 centiseconds, not 101"),
    ("EOFDELAY 2", "EOFDELAY: at most 1 second, not 2"),
    ("EOFDELAY soon", "EOFDELAY: expected a number of seconds (a whole number)"),
    ("TRANLOGOPTIONS", "expected DUMPDIR"),
    ("TRANLOGOPTIONS ONUNKNOWN MAYBE", "STOP or SKIP"),
    ("TRANLOGOPTIONS ALTLOGDEST x", "unknown or unsupported option ALTLOGDEST"),
    ("REPORTCOUNT EVERY ten RECORDS", "a whole number"),
    ("REPORTCOUNT EVERY 10 FORTNIGHTS", "expected RECORD"),
    ("CHECKPOINTSECS 0", "at least 1"),
    ("FLUSHSECS -1", "at least 0"),
    ("FLUSHSECS soon", "FLUSHSECS: expected a number of seconds (a whole number)"),
    ("FLUSHSECS 1 2", "unexpected '2'"),
    ("SPARK", "expected MASTER"),
    ("SPARK EXECUTORS 4", "unknown or unsupported option EXECUTORS"),
    ("SPARK TRIGGER soon", "a number"),
    ("EXTTRAIL ./dirdat/abc", "two-character prefix"),
    ("RMTTRAIL ./dirdat/a", "two-character prefix"),
    ("PASSTHRU now", "unexpected 'now'"),
    ("USERIDALIAS", "expected a credential store alias but the statement ends"),
    ("USERID gg, PASSWORD", "expected a password"),
])
def test_option_errors(text: str, message: str) -> None:
    e = error(EXT_HEAD + text + "\nTABLE a.b;\n")
    assert e.line == 3 and message in str(e)


# -- unknown and misplaced parameters ------------------------------------------------------
def test_unknown_parameter_suggests_a_close_one() -> None:
    e = error(EXT_HEAD + "TABEL hr.emp\nTABLE a.b;\n")
    assert e.line == 3
    assert "unknown parameter 'TABEL'" in str(e) and "did you mean TABLE?" in str(e)


def test_unsupported_goldengate_parameter_is_named() -> None:
    e = error(EXT_HEAD + "LOGALLSUPCOLS\nTABLE a.b;\n")
    assert "GoldenGate parameter that trailgate does not support" in str(e)


def test_dboptions_disablecommitnowait() -> None:
    assert rep("MAP a.b, TARGET c.d;\n").commit_nowait
    assert not rep("DBOPTIONS DISABLECOMMITNOWAIT\nMAP a.b, TARGET c.d;\n").commit_nowait
    e = error(REP_HEAD + "DBOPTIONS SUPPRESSTRIGGERS\nMAP a.b, TARGET c.d;\n")
    assert "unknown or unsupported option SUPPRESSTRIGGERS" in str(e)
    assert "DISABLECOMMITNOWAIT" in str(e) and "g.prm" in str(e)
    e = error(REP_HEAD + "DBOPTIONS\nMAP a.b, TARGET c.d;\n")
    assert "name an option" in str(e)
    e = error(EXT_HEAD + "DBOPTIONS ALLOWUNUSEDCOLUMN\nTABLE a.b;\n")
    assert "Extract takes no DBOPTIONS option" in str(e)


def test_parameter_of_the_other_process() -> None:
    e = error(REP_HEAD + "TABLE a.b;\n")
    assert "Extract parameter" in str(e) and "a Replicat uses MAP" in str(e)
    e = error(EXT_HEAD + "HANDLECOLLISIONS\nTABLE a.b;\n")
    assert "Replicat parameter and cannot be used in an Extract" in str(e)


def test_first_statement_must_name_the_group() -> None:
    e = error("TABLE a.b;\nEXTRACT e\n")
    assert e.line == 1 and "must begin with EXTRACT" in str(e)
    assert "must begin with EXTRACT" in str(error("-- only a comment\n"))
    e = error("EXTRACT e\nEXTTRAIL ./dirdat/aa\nEXTRACT f\nTABLE a.b;\n")
    assert e.line == 3 and "must be the first parameter" in str(e)
    assert "1 to 8 letters" in str(error("EXTRACT much_too_long\n"))
    e = error("EXTRACT e1 extra\n")
    assert "unexpected 'extra'" in str(e)


def test_group_name_must_match_file() -> None:
    e = error("EXTRACT ext2\nEXTTRAIL ./dirdat/aa\nTABLE a.b;\n", group="ext1")
    assert "for EXTRACT EXT2, not EXT1" in str(e)


def test_dangling_ampersand() -> None:
    e = error(EXT_HEAD + "TABLE a.b;\nGETTRUNCATES &\n")
    assert e.line == 4 and "ends with '&'" in str(e)


def test_statement_starting_with_punctuation() -> None:
    e = error(EXT_HEAD + "(TABLE a.b);\n")
    assert e.line == 3 and "must start with a parameter name" in str(e)


# -- OBEY / INCLUDE ------------------------------------------------------------------------
def test_obey_and_include_insert_statements(tmp_path: Path) -> None:
    (tmp_path / "tables.inc").write_text("TABLE hr.emp;\nINCLUDE more.inc\n")
    (tmp_path / "more.inc").write_text("TABLE hr.dept;\n")
    prm = tmp_path / "ext1.prm"
    prm.write_text("EXTRACT ext1\nEXTTRAIL ./dirdat/aa\nOBEY tables.inc\nTABLE hr.x;\n")
    p = parse_params(prm)
    assert [t.name for t in p.tables] == ["hr.emp", "hr.dept", "hr.x"]  # type: ignore[union-attr]
    assert p.tables[1].path == str(tmp_path / "more.inc")  # type: ignore[union-attr]
    assert p.files == [str(prm), str(tmp_path / "tables.inc"), str(tmp_path / "more.inc")]


def test_include_falls_back_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "dirprm").mkdir()
    (tmp_path / "shared.inc").write_text("TABLE hr.emp;\n")
    prm = tmp_path / "dirprm" / "ext1.prm"
    prm.write_text("EXTRACT ext1\nEXTTRAIL ./dirdat/aa\nINCLUDE shared.inc\n")
    p = parse_params(prm, base_dir=tmp_path)
    assert [t.name for t in p.tables] == ["hr.emp"]  # type: ignore[union-attr]


def test_errors_inside_included_files_name_that_file(tmp_path: Path) -> None:
    (tmp_path / "bad.inc").write_text("-- header\nTABLE hr.emp\n")
    prm = tmp_path / "e.prm"
    prm.write_text("EXTRACT e\nEXTTRAIL ./dirdat/aa\nINCLUDE bad.inc\n")
    with pytest.raises(ConfigError) as info:
        parse_params(prm)
    assert info.value.path == str(tmp_path / "bad.inc") and info.value.line == 2


def test_include_of_a_name_too_long_is_a_config_error(tmp_path: Path) -> None:
    prm = tmp_path / "e.prm"
    prm.write_text(f"EXTRACT e\nEXTTRAIL ./dirdat/aa\nINCLUDE {'n' * 5000}\n")
    with pytest.raises(ConfigError, match=r"INCLUDE n+…: not a usable file name") as info:
        parse_params(prm)
    assert info.value.line == 3


def test_include_loop_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "a.inc").write_text("INCLUDE b.inc\n")
    (tmp_path / "b.inc").write_text("INCLUDE a.inc\n")
    prm = tmp_path / "e.prm"
    prm.write_text("EXTRACT e\nEXTTRAIL ./dirdat/aa\nINCLUDE a.inc\nTABLE a.b;\n")
    with pytest.raises(ConfigError, match="includes itself"):
        parse_params(prm)
    prm.write_text("EXTRACT e\nEXTTRAIL ./dirdat/aa\nOBEY nope.inc\nTABLE a.b;\n")
    with pytest.raises(ConfigError) as info:
        parse_params(prm)
    assert info.value.line == 3 and "does not exist" in str(info.value)


def test_missing_parameter_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="EDIT PARAMS"):
        parse_params(tmp_path / "nope.prm")


# -- GLOBALS -------------------------------------------------------------------------------
def test_globals(tmp_path: Path) -> None:
    g = tmp_path / "GLOBALS"
    assert parse_globals(g).ggschema is None
    g.write_text("-- globals\nGGSCHEMA ggadmin\nCHECKPOINTTABLE ggadmin.ggchkpt\n")
    result = parse_globals(g)
    assert (result.ggschema, result.checkpoint_table) == ("ggadmin", "ggadmin.ggchkpt")
    g.write_text("GGSCHEMA gg\nMGRSERVNAME x\n")
    with pytest.raises(ConfigError) as info:
        parse_globals(g)
    assert info.value.line == 2


def test_parse_group_params_from_home(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    (tmp_path / "common.inc").write_text("TABLE hr.*;\n")
    home.param_file("ext1").write_text("EXTRACT EXT1\nEXTTRAIL ./dirdat/aa\nINCLUDE common.inc\n")
    p = parse_group_params(home, "Ext1")
    assert isinstance(p, ExtractParams) and [t.name for t in p.tables] == ["hr.*"]
    home.param_file("ext2").write_text("EXTRACT EXT1\nEXTTRAIL ./dirdat/aa\nTABLE a.b;\n")
    with pytest.raises(ConfigError, match="for EXTRACT EXT1, not EXT2"):
        parse_group_params(home, "ext2")


def test_trail_format_release_and_byte_order() -> None:
    """``EXTTRAIL|RMTTRAIL path, FORMAT RELEASE n.n [, TRAILBYTEORDER order]`` (GoldenGate's
    options): kept per trail, checked against the releases trailgate writes at start."""
    from trailgate.trail.release import sink_format_options

    def trail(line: str) -> ExtractParams:
        p = parse_params_text(f"EXTRACT ext1\n{line}\nTABLE hr.*;\n", "ext1.prm")
        assert isinstance(p, ExtractParams)
        return p

    spec = trail("EXTTRAIL ./dirdat/aa, FORMAT RELEASE 21.1, TRAILBYTEORDER LITTLEENDIAN"
                 ).trail_options["./dirdat/aa"]
    assert (spec.release, spec.byte_order, spec.line) == ("21.1", "LITTLEENDIAN", 2)
    assert sink_format_options(spec) == {"formatRelease": "21.1", "trailByteOrder": "little"}
    assert sink_format_options(None) == {}
    spec = trail("RMTTRAIL ./dirdat/rt, FORMAT RELEASE 12.2").trail_options["./dirdat/rt"]
    assert sink_format_options(spec)["trailByteOrder"] == "big"
    assert error("EXTRACT e\nEXTTRAIL ./dirdat/aa, FORMAT RELEASE twelve\n").line == 2
    assert "TRAILBYTEORDER" in str(error("EXTRACT e\nEXTTRAIL ./dirdat/aa, TRAILBYTEORDER "
                                         "SIDEWAYS\n"))
    assert "accepts FORMAT RELEASE, TRAILBYTEORDER" in str(error(
        "EXTRACT e\nEXTTRAIL ./dirdat/aa, MEGABYTES 5\n"))
    bad = trail("EXTTRAIL ./dirdat/aa, FORMAT RELEASE 23.4").trail_options["./dirdat/aa"]
    with pytest.raises(ConfigError, match=r"ext1\.prm, line 2: FORMAT RELEASE 23\.4"):
        sink_format_options(bad)
