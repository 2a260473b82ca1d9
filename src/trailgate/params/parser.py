"""Read a GoldenGate parameter file into :class:`ExtractParams` or :class:`ReplicatParams`.

Each parameter has one small handler.  A parameter trailgate does not know, or knows but
does not implement, is an error naming file and line: a silently ignored ``HANDLECOLLISIONS``
or ``TABLEEXCLUDE`` would change what gets replicated without anyone noticing.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.errors import ConfigError
from trailgate.home import Home, validate_group_name
from trailgate.params.cursor import Cursor
from trailgate.params.ddl_params import parse_ddl, parse_ddlerror, parse_ddloptions
from trailgate.params.lexer import Statement, Tok, split_statements
from trailgate.params.model import (
    ColMapEntry,
    DiscardFileSpec,
    ExtractParams,
    GlobalsParams,
    GroupParams,
    MapSpec,
    ReplicatParams,
    ReportCount,
    TableSpec,
    TargetSpec,
    TokenSpec,
    TrailCrypt,
    TrailOptions,
    TranlogOptions,
)

__all__ = ["KNOWN_PARAMETERS", "parse_globals", "parse_group_params", "parse_params",
           "parse_params_text"]


@dataclass(slots=True)
class _State:
    """The parameters being built, plus the toggles that apply to later TABLE/MAPs."""

    params: ExtractParams | ReplicatParams
    handle_collisions: bool = False
    reperror: dict[str, str] = field(default_factory=lambda: {"DEFAULT": "ABEND"})
    get_truncates: bool = False
    targets: list[tuple[str, int]] = field(default_factory=list)
    encrypt: TrailCrypt | None = None  # ENCRYPTTRAIL in force for the next trails


Handler = Callable[[Cursor, _State], None]
_HANDLERS: dict[str, tuple[Handler, frozenset[str]]] = {}
_BOTH = frozenset({"EXTRACT", "REPLICAT"})
_EXT = frozenset({"EXTRACT"})
_REP = frozenset({"REPLICAT"})

#: GoldenGate parameters trailgate recognises but does not implement: say so plainly.
_UNSUPPORTED = frozenset({
    "LOGALLSUPCOLS", "UPDATERECORDFORMAT", "SETENV",
    "FETCHOPTIONS", "STATOPTIONS", "WARNLONGTRANS", "BR", "DISCARDROLLOVER", "REPORT",
    "REPORTROLLOVER", "PURGEOLDEXTRACTS", "SOURCECATALOG", "MACRO", "NOCOMPRESSDELETES",
    "COMPRESSUPDATES", "NOCOMPRESSUPDATES", "SEQUENCE", "FILTER", "SQLEXEC", "INSERTALLRECORDS",
    "EXCEPTIONSONLY", "ALLOWDUPTARGETMAP", "CACHEMGR", "THREADOPTIONS", "LAGREPORTMINUTES",
    "FORMATASCII", "FORMATXML", "DYNAMICRESOLUTION",
    "NODYNAMICRESOLUTION", "WILDCARDRESOLVE", "STARTUPVALIDATIONDELAY", "TRACE", "TRACE2",
})


def _handler(*names: str, applies: frozenset[str] = _BOTH) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            _HANDLERS[name] = (fn, applies)
        return fn
    return register


# -- group, login, trails ----------------------------------------------------------------
@_handler("EXTRACT", "REPLICAT")
def _group(cur: Cursor, st: _State) -> None:
    cur.error(f"{cur.stmt.keyword} must be the first parameter, and appear only once")


def _login(cur: Cursor, st: _State) -> None:
    """``USERIDALIAS a [DOMAIN d]`` or ``USERID u[, PASSWORD p]`` after SOURCEDB/TARGETDB."""
    p = st.params
    if cur.accept_kw("USERIDALIAS"):
        p.useridalias = cur.value("a credential store alias")
        if cur.accept_kw("DOMAIN"):
            p.domain = cur.value("a credential store domain")
    elif cur.accept_kw("USERID"):
        p.userid = cur.value("a user name")
        cur.skip_comma()
        if cur.accept_kw("PASSWORD"):
            p.password = cur.value("a password")
    else:
        tok = cur.peek()
        cur.error(f"{cur.stmt.keyword}: expected USERIDALIAS or USERID, found "
                  f"{tok.text if tok else 'nothing'!r}", tok)


@_handler("USERIDALIAS")
def _useridalias(cur: Cursor, st: _State) -> None:
    cur.i -= 1
    _login(cur, st)
    cur.end()


@_handler("USERID")
def _userid(cur: Cursor, st: _State) -> None:
    cur.i -= 1
    _login(cur, st)
    cur.end()


def _database(cur: Cursor, st: _State) -> str:
    dsn = cur.words_until("USERIDALIAS", "USERID")
    cur.skip_comma()
    if not cur.at_end():
        _login(cur, st)
    cur.end()
    return dsn


@_handler("SOURCEDB", applies=_EXT)
def _sourcedb(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.sourcedb = _database(cur, st)


@_handler("TARGETDB", applies=_REP)
def _targetdb(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    st.params.targetdb = _database(cur, st)
    st.targets.append(("POSTGRES", cur.stmt.line))


@_handler("TARGETDELTA", "TARGETPARQUET", applies=_REP)
def _target_files(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    kind = "DELTA" if cur.stmt.keyword == "TARGETDELTA" else "PARQUET"
    st.params.target = TargetSpec(kind, cur.value("a directory path"))
    st.targets.append((kind, cur.stmt.line))
    cur.end()


_TRAIL = re.compile(r"[A-Za-z0-9_]{2}\Z")


@_handler("EXTTRAIL", "RMTTRAIL", applies=_EXT)
def _trail(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    path = cur.value("a trail path such as ./dirdat/aa")
    if not _TRAIL.match(os.path.basename(path)):
        cur.error(f"{cur.stmt.keyword}: {path!r}: a trail name is a directory and a "
                  f"two-character prefix, such as ./dirdat/aa")
    (st.params.exttrails if cur.stmt.keyword == "EXTTRAIL" else st.params.rmttrails).append(
        path)
    spec = TrailOptions(path=cur.stmt.path, line=cur.stmt.line)
    seen: set[str] = set()
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "FORMAT":
            cur.expect_kw("RELEASE")
            spec.release = cur.value("a release such as 21.1")
            if not re.fullmatch(r"\d+\.\d+(?:\.\d+)*", spec.release):
                cur.error(f"{cur.stmt.keyword} {path}: FORMAT RELEASE {spec.release}: expected "
                          "major.minor, e.g. 21.1")
        elif opt == "TRAILBYTEORDER":
            spec.byte_order = cur.value("BIGENDIAN, LITTLEENDIAN or NATIVEENDIAN").upper()
            if spec.byte_order not in ("BIGENDIAN", "LITTLEENDIAN", "NATIVEENDIAN"):
                cur.error(f"{cur.stmt.keyword} {path}: TRAILBYTEORDER {spec.byte_order}: "
                          "expected BIGENDIAN, LITTLEENDIAN or NATIVEENDIAN")
        else:
            _unknown_option(cur, opt, ["FORMAT RELEASE", "TRAILBYTEORDER"])
    if spec.release is not None or spec.byte_order is not None:
        st.params.trail_options[path] = spec
    if st.encrypt is not None:
        st.params.encrypt[path] = st.encrypt


_CIPHERS = ("AES128", "AES192", "AES256")


def _crypt(cur: Cursor) -> TrailCrypt:
    """``[AES128|AES192|AES256] [, KEYNAME name]`` (GoldenGate also writes the cipher in
    braces or parentheses, ``{AES192}``/``(AES, KEYNAME k)``: their punctuation is not
    tokens trailgate's lexer keeps, so the words are read in order)."""
    cipher, key = "AES256", None
    while cur.skip_comma() or not cur.at_end():
        word = cur.value("AES128, AES192, AES256 or KEYNAME").strip("{}()").upper()
        if word in _CIPHERS:
            cipher = word
        elif word == "AES":
            cipher = "AES256"
        elif word == "KEYNAME":
            key = cur.value("a key name from the ENCKEYS file").strip("{}()")
        elif word in ("BLOWFISH", "GGS"):
            cur.error(f"{cur.stmt.keyword} {word}: trailgate encrypts trails with AES-GCM "
                      "only; use AES128, AES192 or AES256")
        else:
            cur.error(f"{cur.stmt.keyword}: expected AES128, AES192, AES256 or KEYNAME name, "
                      f"found {word!r}")
    return TrailCrypt(cipher, key.upper() if key else None)


@_handler("ENCRYPTTRAIL", "NOENCRYPTTRAIL", applies=_EXT)
def _encrypttrail(cur: Cursor, st: _State) -> None:
    if cur.stmt.keyword == "NOENCRYPTTRAIL":
        st.encrypt = None
        cur.end()
        return
    st.encrypt = _crypt(cur)


@_handler("DECRYPTTRAIL")
def _decrypttrail(cur: Cursor, st: _State) -> None:
    st.params.decrypt = _crypt(cur)


@_handler("SOURCEISTABLE", applies=_EXT)
def _sourceistable(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.sourceistable = True
    cur.end()


@_handler("EXTFILE", "RMTFILE", applies=_EXT)
def _extfile(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    path = cur.value("a file name such as ./dirdat/il")
    if not _TRAIL.match(os.path.basename(path)):
        cur.error(f"{cur.stmt.keyword}: {path!r}: trailgate writes the load as a trail: a "
                  f"directory and a two-character prefix, such as ./dirdat/il")
    while cur.skip_comma() or not cur.at_end():
        opt = cur.expect_kw("MEGABYTES", "PURGE")
        if opt == "MEGABYTES":
            cur.integer("a size in megabytes", minimum=1)  # one file per range: accepted
    st.params.extfiles.append((cur.stmt.keyword, path))


@_handler("RMTTASK", applies=_EXT)
def _rmttask(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    cur.expect_kw("REPLICAT")
    cur.skip_comma()
    cur.expect_kw("GROUP")
    try:
        st.params.rmttask = validate_group_name(cur.value("a Replicat group name"))
    except ConfigError as exc:
        cur.error(f"RMTTASK: {exc}")
    cur.end()


@_handler("INSTANTIATE", applies=_EXT)
def _instantiate(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    cur.expect_kw("REPLICAT")
    while True:
        try:
            st.params.instantiate.append(validate_group_name(cur.value("a Replicat group")))
        except ConfigError as exc:
            cur.error(f"INSTANTIATE: {exc}")
        if not cur.skip_comma():
            break
    cur.end()


@_handler("CREATETARGETS", applies=_EXT)
def _createtargets(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.create_targets = True
    cur.end()


@_handler("RMTHOST", applies=_EXT)
def _rmthost(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    options = {"HOST": cur.value("a host name")}
    while cur.skip_comma() or not cur.at_end():
        key = cur.next("an RMTHOST option").upper
        if not key:
            cur.error("RMTHOST: expected an option name such as MGRPORT")
        words = []
        while (tok := cur.peek()) is not None and tok.kind is not Tok.COMMA:
            words.append(cur.value("an option value"))
        options[key] = " ".join(words)
    st.params.rmthost = options


@_handler("PASSTHRU", "NOPASSTHRU", applies=_EXT)
def _passthru(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.passthru = cur.stmt.keyword == "PASSTHRU"
    cur.end()


# -- TABLE / MAP -------------------------------------------------------------------------
def _column_list(cur: Cursor, what: str) -> list[str]:
    return [name for name, _ in cur.paren_list(cur.column_name, what)]


def _next_option(cur: Cursor, seen: set[str]) -> str | None:
    """The next ``, OPTION`` keyword of a TABLE/MAP, or None at the end."""
    cur.skip_comma()
    if cur.at_end():
        return None
    tok = cur.next("an option")
    if tok.kind is not Tok.WORD:
        cur.error(f"{cur.stmt.keyword}: expected an option, found {tok.text!r}", tok)
    if tok.upper in seen:
        cur.error(f"{cur.stmt.keyword}: {tok.upper} is given twice", tok)
    seen.add(tok.upper)
    return tok.upper


def _unknown_option(cur: Cursor, option: str, allowed: list[str]) -> None:
    cur.i -= 1
    cur.error(f"{cur.stmt.keyword}: unknown or unsupported option {option}; "
              f"{cur.stmt.keyword} accepts {', '.join(allowed)}", cur.peek())


@_handler("TABLE", applies=_EXT)
def _table(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    spec = TableSpec(cur.object_name(), get_truncates=st.get_truncates,
                     path=cur.stmt.path, line=cur.stmt.line)
    seen: set[str] = set()
    allowed = ["TARGET", "COLS", "COLSEXCEPT", "TOKENS", "WHERE"]
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "TARGET":
            spec.target = cur.object_name("a target schema.table")
        elif opt in ("COLS", "COLSEXCEPT"):
            if {"COLS", "COLSEXCEPT"} <= seen:
                cur.error("TABLE: use COLS or COLSEXCEPT, not both")
            cols = _column_list(cur, opt)
            if opt == "COLS":
                spec.cols = cols
            else:
                spec.cols_except = cols
        elif opt == "TOKENS":
            spec.tokens = cur.paren_list(lambda: _token_spec(cur), "TOKENS")
        elif opt == "WHERE":
            spec.where = cur.where()
        else:
            _unknown_option(cur, opt, allowed)
    st.params.tables.append(spec)


def _token_spec(cur: Cursor) -> TokenSpec:
    tok = cur.next("a token name")
    if tok.kind not in (Tok.WORD, Tok.STRING, Tok.QIDENT):
        cur.error(f"TOKENS: expected a token name, found {tok.text!r}", tok)
    cur.expect(Tok.EQ, f"'=' after token name {tok.value}")
    return TokenSpec(tok.value, cur.expr())


def _colmap_item(cur: Cursor, spec: MapSpec) -> ColMapEntry | None:
    if cur.accept_kw("USEDEFAULTS"):
        spec.usedefaults = True
        return None
    name, quoted = cur.column_name()
    cur.expect(Tok.EQ, f"'=' after target column {name}")
    return ColMapEntry(name, cur.expr(), target_quoted=quoted)


def _reperror_rule(cur: Cursor) -> tuple[str, str]:
    """``(DEFAULT|DEFAULT2|error, ABEND|DISCARD|IGNORE)``."""
    cur.expect(Tok.LPAREN, "'(' as in REPERROR (DEFAULT, ABEND)")
    tok = cur.next("an error number or DEFAULT")
    if tok.kind not in (Tok.WORD, Tok.STRING):
        cur.error(f"REPERROR: expected an error number or DEFAULT, found {tok.text!r}", tok)
    error = tok.value.upper()
    if tok.kind is Tok.WORD and error not in ("DEFAULT", "DEFAULT2"):
        try:
            int(error)
        except ValueError:
            if not (len(error) == 5 and error.isalnum()):
                cur.error(f"REPERROR: {tok.text!r} is not DEFAULT, DEFAULT2, an error number "
                          f"or a five-character SQLSTATE", tok)
    cur.expect(Tok.COMMA, "',' between the error and the response")
    response = cur.expect_kw("ABEND", "DISCARD", "IGNORE")
    cur.expect(Tok.RPAREN, "')' to close REPERROR")
    return error, response


@_handler("MAP", applies=_REP)
def _map(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    source = cur.object_name("a source schema.table")
    cur.skip_comma()
    if not cur.accept_kw("TARGET"):
        tok = cur.peek()
        cur.error("MAP: expected TARGET after the source name, as in "
                  "MAP src.t, TARGET tgt.t;", tok)
    target = cur.object_name("a target schema.table")
    spec = MapSpec(source, target, handle_collisions=st.handle_collisions,
                   reperror=dict(st.reperror), get_truncates=st.get_truncates,
                   path=cur.stmt.path, line=cur.stmt.line)
    seen: set[str] = set()
    allowed = ["COLMAP", "KEYCOLS", "WHERE", "HANDLECOLLISIONS", "NOHANDLECOLLISIONS",
               "REPERROR", "SCD TYPE 1|2", "TRACK HISTORY ON"]
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "COLMAP":
            items = cur.paren_list(lambda: _colmap_item(cur, spec), "COLMAP")
            spec.colmap = [e for e in items if e is not None]
            targets = [e.target.lower() if not e.target_quoted else e.target
                       for e in spec.colmap]
            dups = {t for t in targets if targets.count(t) > 1}
            if dups:
                cur.error(f"MAP: COLMAP maps target column {sorted(dups)[0]} more than once")
        elif opt == "KEYCOLS":
            spec.keycols = _column_list(cur, "KEYCOLS")
        elif opt == "WHERE":
            spec.where = cur.where()
        elif opt in ("HANDLECOLLISIONS", "NOHANDLECOLLISIONS"):
            spec.handle_collisions = opt == "HANDLECOLLISIONS"
        elif opt == "REPERROR":
            error, response = _reperror_rule(cur)
            spec.reperror[error] = response
        elif opt == "SCD":
            spec.scd_type = _scd_type(cur)
        elif opt == "TRACK":
            _track_history(cur, spec)
        else:
            _unknown_option(cur, opt, allowed)
    if "TRACK" in seen and spec.scd_type != 2:
        cur.error(f"MAP {source}: TRACK HISTORY needs SCD TYPE 2 before it, as in "
                  f"MAP {source}, TARGET {target}, SCD TYPE 2, TRACK HISTORY ON (col, ...);")
    st.params.maps.append(spec)


def _scd_type(cur: Cursor) -> int:
    """``SCD TYPE 1|2`` (after SCD): 1 keeps the last version of a row, 2 every one."""
    cur.expect_kw("TYPE")
    tok = cur.next("1 or 2 after SCD TYPE")
    if tok.kind is not Tok.WORD or tok.value not in ("1", "2"):
        cur.error(f"MAP: SCD TYPE takes 1 (the last version of each row, the default) or 2 "
                  f"(every version, with validity columns), not {tok.text!r}", tok)
    return int(tok.value)


def _track_history(cur: Cursor, spec: MapSpec) -> None:
    """``TRACK HISTORY ON (cols)`` or ``TRACK HISTORY ON * EXCEPT (cols)`` (after TRACK)."""
    cur.expect_kw("HISTORY")
    cur.expect_kw("ON")
    tok = cur.peek()
    if tok is not None and tok.kind is Tok.WORD and tok.value == "*":
        cur.next("*")
        cur.expect_kw("EXCEPT")
        spec.track_history_except = _column_list(cur, "TRACK HISTORY ON * EXCEPT")
    else:
        spec.track_history = _column_list(cur, "TRACK HISTORY ON")


@_handler("TABLEEXCLUDE", applies=_EXT)
def _tableexclude(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.table_excludes.append(cur.object_name())
    cur.end()


@_handler("MAPEXCLUDE", applies=_REP)
def _mapexclude(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    st.params.map_excludes.append(cur.object_name())
    cur.end()


# -- Replicat behaviour ------------------------------------------------------------------
@_handler("HANDLECOLLISIONS", "NOHANDLECOLLISIONS", applies=_REP)
def _collisions(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    st.handle_collisions = cur.stmt.keyword == "HANDLECOLLISIONS"
    st.params.handle_collisions = st.handle_collisions
    cur.end()


@_handler("REPERROR", applies=_REP)
def _reperror(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    error, response = _reperror_rule(cur)
    st.reperror[error] = response
    st.params.reperror[error] = response
    cur.end()


@_handler("BATCHSQL", applies=_REP)
def _batchsql(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    st.params.batchsql = True
    cur.end()


@_handler("GROUPTRANSOPS", "MAXTRANSOPS", applies=_REP)
def _transops(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    n = cur.integer("a number of operations", minimum=1)
    if cur.stmt.keyword == "GROUPTRANSOPS":
        st.params.group_trans_ops = n
    else:
        st.params.max_trans_ops = n
    cur.end()


@_handler("DBOPTIONS")
def _dboptions(cur: Cursor, st: _State) -> None:
    if not isinstance(st.params, ReplicatParams):
        cur.error("DBOPTIONS: trailgate's Extract takes no DBOPTIONS option; remove it "
                  "(docs/parameters.md lists what is supported)")
    seen: set[str] = set()
    if cur.at_end():
        cur.error("DBOPTIONS: name an option (trailgate accepts DISABLECOMMITNOWAIT)")
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "DISABLECOMMITNOWAIT":
            st.params.commit_nowait = False
        else:
            _unknown_option(cur, opt, ["DISABLECOMMITNOWAIT"])


# -- shared ------------------------------------------------------------------------------
@_handler("DISCARDFILE")
def _discardfile(cur: Cursor, st: _State) -> None:
    spec = DiscardFileSpec(cur.value("a discard file path"))
    seen: set[str] = set()
    while (opt := _next_option(cur, seen)) is not None:
        if opt in ("APPEND", "PURGE"):
            if {"APPEND", "PURGE"} <= seen:
                cur.error("DISCARDFILE: use APPEND or PURGE, not both")
            spec.append = opt == "APPEND"
        elif opt == "MEGABYTES":
            spec.megabytes = cur.integer("a size in megabytes", minimum=1)
        else:
            _unknown_option(cur, opt, ["APPEND", "PURGE", "MEGABYTES"])
    st.params.discardfile = spec


@_handler("ASSUMETARGETDEFS")
def _assumetargetdefs(cur: Cursor, st: _State) -> None:
    st.params.assume_targetdefs = True
    cur.end()


@_handler("SOURCEDEFS")
def _sourcedefs(cur: Cursor, st: _State) -> None:
    st.params.sourcedefs = cur.value("a definitions file path")
    cur.end()


@_handler("GETTRUNCATES", "IGNORETRUNCATES")
def _truncates(cur: Cursor, st: _State) -> None:
    st.get_truncates = cur.stmt.keyword == "GETTRUNCATES"
    st.params.get_truncates = st.get_truncates
    cur.end()


@_handler("DDL")
def _ddl(cur: Cursor, st: _State) -> None:
    st.params.ddl.extend(parse_ddl(cur))
    st.params.ddl_given = True


@_handler("DDLOPTIONS")
def _ddloptions(cur: Cursor, st: _State) -> None:
    parse_ddloptions(cur, st.params.ddl_options)


@_handler("DDLERROR", applies=_REP)
def _ddlerror(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ReplicatParams)
    st.params.ddl_errors.append(parse_ddlerror(cur))


@_handler("TRANLOGOPTIONS", applies=_EXT)
def _tranlogoptions(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    opts = st.params.tranlog or TranlogOptions()
    seen: set[str] = set()
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "DUMPDIR":
            opts.dumpdir = cur.value("a directory of redo dumps")
        elif opt == "DICTIONARY":
            opts.dictionary = cur.value("a dictionary file")
        elif opt == "ONUNKNOWN":
            opts.on_unknown = cur.expect_kw("STOP", "SKIP")
        else:
            _unknown_option(cur, opt, ["DUMPDIR", "DICTIONARY", "ONUNKNOWN"])
    if not seen:
        cur.error("TRANLOGOPTIONS: expected DUMPDIR, DICTIONARY or ONUNKNOWN")
    st.params.tranlog = opts


_UNITS = {"RECORD": "RECORDS", "RECORDS": "RECORDS", "SECOND": "SECONDS", "SECONDS": "SECONDS",
          "SEC": "SECONDS", "SECS": "SECONDS", "MINUTE": "MINUTES", "MINUTES": "MINUTES",
          "MIN": "MINUTES", "HOUR": "HOURS", "HOURS": "HOURS"}


@_handler("REPORTCOUNT")
def _reportcount(cur: Cursor, st: _State) -> None:
    cur.accept_kw("EVERY")
    n = cur.integer("a count", minimum=1)
    unit = _UNITS.get(cur.expect_kw(*_UNITS))
    assert unit is not None
    rate = False
    if cur.skip_comma() or not cur.at_end():
        cur.expect_kw("RATE")
        rate = True
    st.params.report_count = ReportCount(n, unit, rate)
    cur.end()


@_handler("CHECKPOINTSECS")
def _checkpointsecs(cur: Cursor, st: _State) -> None:
    st.params.checkpoint_secs = cur.integer("a number of seconds", minimum=1)
    cur.end()


@_handler("FLUSHSECS", applies=_EXT)
def _flushsecs(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams)
    st.params.flush_secs = cur.integer("a number of seconds", minimum=0)
    cur.end()


@_handler("EOFDELAY", "EOFDELAYCSECS")
def _eofdelay(cur: Cursor, st: _State) -> None:
    assert isinstance(st.params, ExtractParams | ReplicatParams)
    csecs = cur.stmt.keyword == "EOFDELAYCSECS"
    n = cur.integer("a number of centiseconds" if csecs else "a number of seconds")
    if n > (100 if csecs else 1):  # a pause on the data path: longer would hold a busy group
        what = ("the stream apply lets transactions gather before a step"
                if isinstance(st.params, ReplicatParams)
                else "the stream's reader lets data gather")
        cur.error(f"{cur.stmt.keyword}: at most {'100 centiseconds' if csecs else '1 second'}"
                  f", not {n} (it bounds how long {what}; docs/parameters.md)")
    st.params.eof_delay = n / 100 if csecs else float(n)
    cur.end()


_TRIGGER_UNITS = {"MILLISECONDS": 0.001, "MS": 0.001, "SECONDS": 1.0, "SECOND": 1.0,
                  "SEC": 1.0, "MINUTES": 60.0, "MINUTE": 60.0, "MIN": 60.0}


@_handler("SPARK")
def _spark(cur: Cursor, st: _State) -> None:
    opts = st.params.spark
    seen: set[str] = set()
    while (opt := _next_option(cur, seen)) is not None:
        if opt == "MASTER":
            opts.master = cur.value("a Spark master URL such as local[2]")
        elif opt == "TRIGGER":
            n = cur.number("a trigger interval")
            unit = cur.accept_kw(*_TRIGGER_UNITS) or "SECONDS"
            opts.trigger_seconds = n * _TRIGGER_UNITS[unit]
        elif opt == "CONF":
            key = cur.value("a Spark configuration key")
            if "=" in key and not key.endswith("="):
                key, _, val = key.partition("=")
            else:
                key = key.rstrip("=")
                cur.accept(Tok.EQ)
                val = cur.value(f"a value for {key}")
            opts.conf[key] = val
            seen.discard("CONF")  # several CONF settings may share one statement
        else:
            _unknown_option(cur, opt, ["MASTER", "TRIGGER", "CONF"])
    if not seen and not opts.conf:
        cur.error("SPARK: expected MASTER, TRIGGER or CONF, as in SPARK MASTER local[2]")


# -- driver ------------------------------------------------------------------------------
KNOWN_PARAMETERS: frozenset[str] = frozenset(_HANDLERS) | {"OBEY", "INCLUDE"}


def _read(path: Path, stmt: Statement | None) -> str:
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        where = {"path": stmt.path, "line": stmt.line} if stmt else {"path": str(path)}
        raise ConfigError(f"parameter file {path} does not exist" + (
            "; check the OBEY/INCLUDE path" if stmt else
            "; create it (EDIT PARAMS <group> prints where)"), **where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read parameter file: {exc}", path=str(path)) from None


def _expand(text: str, path: str, base_dir: Path | None, stack: tuple[str, ...],
            files: list[str]) -> list[Statement]:
    """Statements of ``text`` with OBEY/INCLUDE replaced by the included statements."""
    out: list[Statement] = []
    files.append(path)
    for stmt in split_statements(text, path):
        if stmt.keyword in ("OBEY", "INCLUDE"):
            cur = Cursor(stmt)
            name = cur.value("a file name")
            cur.end()
            try:
                target = Path(name).expanduser()
                if not target.is_absolute():
                    candidates = [Path(path).parent / target]
                    if base_dir is not None:
                        candidates.append(base_dir / target)
                    target = next((c for c in candidates if c.exists()), candidates[0])
                key = str(target.resolve())
            except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise ConfigError(f"{stmt.keyword} {name[:80]}{'…' if len(name) > 80 else ''}"
                                  f": not a usable file name ({reason})",
                                  path=stmt.path, line=stmt.line) from None
            if key in stack:
                raise ConfigError(f"{stmt.keyword} {name} includes itself (through "
                                  f"{' -> '.join(stack)}); remove the loop",
                                  path=stmt.path, line=stmt.line)
            out.extend(_expand(_read(target, stmt), str(target), base_dir, (*stack, key),
                               files))
        else:
            out.append(stmt)
    return out


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "AEIOU" else f"a {noun}"


def _unknown(stmt: Statement, kind: str) -> ConfigError:
    word = stmt.keyword
    if word in _UNSUPPORTED:
        msg = (f"{word} is a GoldenGate parameter that trailgate does not support; remove it "
               f"(docs/parameters.md lists what is supported)")
    elif word in _HANDLERS:
        other = "Replicat" if kind == "EXTRACT" else "Extract"
        hint = {"TABLE": "; a Replicat uses MAP", "MAP": "; an Extract uses TABLE"}.get(word, "")
        msg = (f"{word} is {_a(other)} parameter and cannot be used in "
               f"{_a(kind.title())}{hint}")
    else:
        close = difflib.get_close_matches(word, KNOWN_PARAMETERS, n=1)
        msg = f"unknown parameter {stmt.tokens[0].text!r}" + (
            f"; did you mean {close[0]}?" if close else "; see docs/parameters.md")
    return ConfigError(f"{msg} (in: {stmt.text[:120]})", path=stmt.path, line=stmt.line)


def parse_params_text(text: str, path: str = "<parameters>", *,
                      base_dir: str | os.PathLike[str] | None = None,
                      group: str | None = None) -> ExtractParams | ReplicatParams:
    """Parse parameter-file ``text``; ``path`` is used in messages and to find OBEY files.

    ``group``, when given, must match the file's EXTRACT/REPLICAT name.
    """
    files: list[str] = []
    base = Path(base_dir) if base_dir is not None else None
    stmts = _expand(text, path, base, (str(Path(path).resolve()),), files)
    if not stmts or stmts[0].keyword not in ("EXTRACT", "REPLICAT"):
        where = {"path": stmts[0].path, "line": stmts[0].line} if stmts else {"path": path}
        raise ConfigError("a parameter file must begin with EXTRACT <group> or "
                          "REPLICAT <group>", **where)
    first = stmts[0]
    cur = Cursor(first)
    name_tok = cur.next("a group name")
    try:
        name = validate_group_name(name_tok.value)
    except ConfigError as exc:
        raise ConfigError(str(exc), path=first.path, line=first.line) from None
    cur.end()
    kind = first.keyword
    if group is not None and validate_group_name(group) != name:
        raise ConfigError(f"this file is for {kind} {name}, not {group.upper()}: fix the "
                          f"{kind} line or the file name", path=first.path, line=first.line)
    params: ExtractParams | ReplicatParams = (
        ExtractParams(name=name, path=path) if kind == "EXTRACT"
        else ReplicatParams(name=name, path=path))
    params.files = files
    state = _State(params)
    for stmt in stmts[1:]:
        entry = _HANDLERS.get(stmt.keyword)
        if entry is None or kind not in entry[1]:
            raise _unknown(stmt, kind)
        handler, _ = entry
        handler(Cursor(stmt), state)
    _validate(params, state, first)
    return params


def _validate(params: GroupParams, state: _State, first: Statement) -> None:
    """Checks that need the whole file."""
    if isinstance(params, ReplicatParams):
        kinds = {k for k, _ in state.targets}
        if len(kinds) > 1:
            line = state.targets[-1][1]
            raise ConfigError("a Replicat writes to one target: use one of TARGETDB, "
                              "TARGETDELTA or TARGETPARQUET", path=params.path, line=line)
        if params.target is None and params.targetdb is not None:
            params.target = TargetSpec("POSTGRES", params.targetdb)
        if params.target is None:
            raise ConfigError(f"REPLICAT {params.name} has no target: add TARGETDB, "
                              f"TARGETDELTA or TARGETPARQUET", path=first.path, line=first.line)
        if not params.maps:
            raise ConfigError(f"REPLICAT {params.name} has no MAP statement, so it would "
                              f"apply nothing: add MAP schema.table, TARGET schema.table;",
                              path=first.path, line=first.line)
    elif isinstance(params, ExtractParams) and params.sourceistable:
        _validate_load(params, first)
    elif isinstance(params, ExtractParams):
        for word, used in (("EXTFILE/RMTFILE", params.extfiles), ("RMTTASK", params.rmttask),
                           ("INSTANTIATE", params.instantiate),
                           ("CREATETARGETS", params.create_targets)):
            if used:
                raise ConfigError(f"{word} is for an initial-load Extract: add SOURCEISTABLE "
                                  f"(and ADD EXTRACT {params.name}, SOURCEISTABLE)",
                                  path=first.path, line=first.line)
        if not params.tables:
            raise ConfigError(f"EXTRACT {params.name} has no TABLE statement, so it would "
                              f"capture nothing: add TABLE schema.table; (or schema.*)",
                              path=first.path, line=first.line)
        if not params.exttrails and not params.rmttrails:
            raise ConfigError(f"EXTRACT {params.name} writes no trail: add EXTTRAIL or "
                              f"RMTTRAIL before the TABLE statements",
                              path=first.path, line=first.line)


def _validate_load(params: ExtractParams, first: Statement) -> None:
    """An initial-load Extract: TABLEs, and exactly one of EXTFILE/RMTFILE or RMTTASK."""
    where: dict[str, Any] = {"path": first.path, "line": first.line}
    if not params.tables:
        raise ConfigError(f"EXTRACT {params.name} (SOURCEISTABLE) has no TABLE statement: add "
                          f"TABLE schema.table; (or schema.*) for the tables to load", **where)
    if params.exttrails or params.rmttrails:
        raise ConfigError(f"EXTRACT {params.name} is an initial load (SOURCEISTABLE): it writes "
                          f"EXTFILE/RMTFILE or loads through RMTTASK, not EXTTRAIL/RMTTRAIL",
                          **where)
    outputs = len(params.extfiles) + (1 if params.rmttask else 0)
    if outputs != 1:
        raise ConfigError(f"EXTRACT {params.name} (SOURCEISTABLE) needs exactly one output: "
                          f"EXTFILE ./dirdat/il (a file a Replicat applies) or RMTTASK "
                          f"REPLICAT, GROUP name (straight into that Replicat's targets)",
                          **where)


def parse_params(path: str | os.PathLike[str], *, base_dir: str | os.PathLike[str] | None
                 = None, group: str | None = None) -> ExtractParams | ReplicatParams:
    """Parse the parameter file at ``path`` (OBEY/INCLUDE relative to it, then ``base_dir``,
    normally the home)."""
    p = Path(path)
    return parse_params_text(_read(p, None), str(p), base_dir=base_dir, group=group)


def parse_globals(path: str | os.PathLike[str]) -> GlobalsParams:
    """Parse a ``GLOBALS`` file (``GGSCHEMA``, ``CHECKPOINTTABLE``); missing file = defaults."""
    p = Path(path)
    result = GlobalsParams(str(p))
    if not p.exists():
        return result
    for stmt in split_statements(_read(p, None), str(p)):
        cur = Cursor(stmt)
        if stmt.keyword == "GGSCHEMA":
            result.ggschema = cur.value("a schema name")
        elif stmt.keyword == "CHECKPOINTTABLE":
            result.checkpoint_table = cur.object_name()
        else:
            raise ConfigError(f"unknown GLOBALS parameter {stmt.tokens[0].text!r}; GLOBALS "
                              f"accepts GGSCHEMA and CHECKPOINTTABLE", path=stmt.path,
                              line=stmt.line)
        cur.end()
    return result


def parse_group_params(home: Home, group: str) -> ExtractParams | ReplicatParams:
    """Parse ``dirprm/<group>.prm`` of ``home``, checking it names ``group``; OBEY/INCLUDE
    paths may be relative to the file or to the home."""
    return parse_params(home.param_file(group), base_dir=home.path, group=group)
