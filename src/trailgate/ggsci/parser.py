"""Parse GGSCI command lines into command objects (see :mod:`trailgate.ggsci.commands`).

Case-insensitive, with the abbreviations GGSCI accepts (``EXT``, ``REP``, ``ER``), ``--``
comments, and errors that quote the command and say what was expected, the way GGSCI answers
``ERROR: Invalid command.``
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

from trailgate.errors import ConfigError
from trailgate.ggsci.commands import (
    HELP_TOPICS,
    AddCheckpointTable,
    AddCredentialStore,
    AddExtract,
    AddReplicat,
    AddTrail,
    AlterCredentialStore,
    AlterGroup,
    Command,
    CompareGroups,
    DbLogin,
    DdlSupport,
    DeleteCheckpointTable,
    DeleteCredentialStore,
    DeleteGroup,
    DeleteTrail,
    EditParams,
    Exit,
    HeartbeatTable,
    Help,
    History,
    InfoAll,
    InfoCheckpointTable,
    InfoCredentialStore,
    InfoGroup,
    InfoTrail,
    KillGroup,
    LagGroup,
    ManagerCommand,
    MasterKeyCommand,
    Obey,
    Repeat,
    SchemaTranData,
    SendSnapshot,
    StartGroup,
    StatsGroup,
    StopGroup,
    TranData,
    ViewGgsevt,
    ViewParams,
    ViewReport,
    WalletCommand,
)
from trailgate.params.lexer import Tok, Token, _find_comment, tokenize_line
from trailgate.params.names import parse_name

__all__ = ["GgsciSyntaxError", "parse_command", "parse_obey"]

_GROUP_NAME = re.compile(r"[A-Za-z0-9_]{1,8}\Z")
_GROUP_PATTERN = re.compile(r"[A-Za-z0-9_*?]{1,8}\Z")
_TRAIL_PREFIX = re.compile(r"[A-Za-z0-9_]{2}\Z")
_KINDS = {"EXTRACT": "EXTRACT", "EXT": "EXTRACT", "REPLICAT": "REPLICAT", "REP": "REPLICAT",
          "ER": "ER"}
_TIMESTAMP_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M",
                      "%Y-%m-%d")


class GgsciSyntaxError(ConfigError):
    """A command GGSCI cannot parse; the message quotes it and says what was expected."""


class _Line:
    """A cursor over one command's tokens."""

    def __init__(self, text: str, tokens: list[Token], path: str | None, line: int | None):
        self.text = text
        self.tokens = tokens
        self.path = path
        self.line = line
        self.i = 0

    def fail(self, expected: str) -> NoReturn:
        tok = self.peek()
        found = f", found {tok.text!r}" if tok is not None else ""
        raise GgsciSyntaxError(f"ERROR: Invalid command: {self.text.strip()!r}. Expected "
                               f"{expected}{found}. {self._help_hint()}", path=self.path,
                               line=self.line)

    def _help_hint(self) -> str:
        words = [_KINDS.get(t.upper, t.upper) for t in self.tokens[:2] if t.kind is Tok.WORD]
        for n in (2, 1):
            topic = " ".join(words[:n])
            if len(words) >= n and topic in HELP_TOPICS:
                return f"HELP {topic} shows the syntax."
        return "HELP lists the commands."

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def word(self, expected: str) -> str:
        """The next token as an upper-case keyword."""
        tok = self.peek()
        if tok is None or tok.kind is not Tok.WORD:
            self.fail(expected)
        self.i += 1
        return tok.upper

    def accept(self, *words: str) -> str | None:
        tok = self.peek()
        if tok is not None and tok.is_kw(*words):
            self.i += 1
            return tok.upper
        return None

    def comma(self) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind is Tok.COMMA:
            self.i += 1
            return True
        return False

    def value(self, expected: str, *, raw: bool = False) -> str:
        """A value: a quoted string (unquoted), or glued tokens taken as written (paths,
        conninfo, names); ``raw`` keeps the quotes of a lone ``"identifier"``."""
        tok = self.peek()
        if tok is None or tok.kind not in (Tok.WORD, Tok.STRING, Tok.QIDENT):
            self.fail(expected)
        self.i += 1
        if (tok.kind is Tok.STRING or (tok.kind is Tok.QIDENT and not raw)) \
                and not self._glued():
            return tok.value
        parts = [tok.text]
        while self._glued():
            parts.append(self.tokens[self.i].text)
            self.i += 1
        return "".join(parts)

    def words_until(self, expected: str, *stop: str) -> str:
        """Space-joined values up to a comma, a stop keyword or the end (an unquoted
        conninfo such as ``host=db port=5432 dbname=app``)."""
        parts = [self.value(expected)]
        while not self.at_end():
            tok = self.peek()
            assert tok is not None
            if tok.kind is Tok.COMMA or tok.is_kw(*stop):
                break
            parts.append(self.value(expected))
        return " ".join(parts)

    def _glued(self) -> bool:
        tok = self.peek()
        return tok is not None and tok.glued and tok.kind in (Tok.WORD, Tok.QIDENT, Tok.EQ,
                                                              Tok.STRING)

    def integer(self, expected: str) -> int:
        tok = self.peek()
        try:
            n = int(tok.value) if tok is not None and tok.kind is Tok.WORD else -1
        except ValueError:
            n = -1
        if n < 0:
            self.fail(expected)
        self.i += 1
        return n

    def group(self, *, wildcard: bool = False) -> str:
        tok = self.peek()
        pattern = _GROUP_PATTERN if wildcard else _GROUP_NAME
        if tok is None or tok.kind is not Tok.WORD or not pattern.match(tok.value):
            self.fail("a group name (1 to 8 letters, digits or underscores"
                      + (", or a wildcard such as * or EXT*)" if wildcard else ")"))
        self.i += 1
        return tok.value.upper()

    def table(self, *, schema_only: bool = False) -> str:
        what = "a schema name" if schema_only else "a table name (schema.table or schema.*)"
        name = self.value(what, raw=True)
        try:
            parts = parse_name(name)
        except ValueError:
            self.i -= 1
            self.fail(what)
        if len(parts) != 1 if schema_only else len(parts) > 3:
            self.i -= 1
            self.fail(what)
        return name

    def done(self) -> None:
        if not self.at_end():
            self.fail("the end of the command")


# -- helpers -----------------------------------------------------------------------------
def _kind(cur: _Line) -> str | None:
    tok = cur.peek()
    if tok is not None and tok.kind is Tok.WORD and tok.upper in _KINDS:
        nxt = cur.tokens[cur.i + 1] if cur.i + 1 < len(cur.tokens) else None
        # ``START EXT`` alone names a group called EXT, not the kind
        if nxt is not None and nxt.kind is Tok.WORD:
            cur.i += 1
            return _KINDS[tok.upper]
    return None


def _trail(cur: _Line) -> str:
    """A trail: a directory and a two-character prefix, as ``./dirdat/aa``."""
    expected = "a trail path: a directory and a two-character prefix, such as ./dirdat/aa"
    path = cur.value(expected)
    if not _TRAIL_PREFIX.match(path.rstrip("/").rsplit("/", 1)[-1]):
        cur.i -= 1
        cur.fail(expected)
    return path


def _timestamp(cur: _Line) -> datetime:
    start = cur.i
    words = [cur.value("a timestamp yyyy-mm-dd[ hh:mi[:ss[.cccccc]]]")]
    tok = cur.peek()
    if tok is not None and tok.kind is Tok.WORD and re.match(r"\d{1,2}:\d", tok.value):
        words.append(cur.value("a time"))
    text = " ".join(words).replace("T", " ")
    for fmt in _TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    cur.i = start
    cur.fail("NOW or a timestamp yyyy-mm-dd[ hh:mi[:ss[.cccccc]]]")


def _position_option(cur: _Line, opt: str, into: dict[str, Any]) -> bool:
    """Handle a BEGIN/SCN/LSN/EXTSEQNO/EXTRBA option; False if ``opt`` is none of those."""
    if opt == "BEGIN":
        into["begin"] = "NOW" if cur.accept("NOW") else _timestamp(cur)
    elif opt == "SCN":
        into.setdefault("position", {})["scn"] = cur.integer("an SCN")
    elif opt == "LSN":
        lsn = cur.value("an LSN such as 0/16B3748")
        if not re.fullmatch(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}", lsn):
            cur.i -= 1
            cur.fail("an LSN such as 0/16B3748")
        into.setdefault("position", {})["lsn"] = lsn.upper()
    elif opt == "EXTSEQNO":
        pos = into.setdefault("position", {})
        pos["seqno"] = cur.integer("a trail sequence number")
        pos.setdefault("rba", 0)
    elif opt == "EXTRBA":
        into.setdefault("position", {})["rba"] = cur.integer("an RBA")
    else:
        return False
    if "begin" in into and "position" in into:
        cur.fail("BEGIN or a position (SCN, LSN, EXTSEQNO/EXTRBA), not both")
    return True


def _options(cur: _Line, handle: Callable[[str], bool], expected: str) -> None:
    """Parse ``, OPTION ...`` repeatedly; ``handle`` consumes an option's arguments."""
    while not cur.at_end():
        if not cur.comma():
            cur.fail("',' before the next option")
        opt = cur.word(expected)
        if not handle(opt):
            cur.i -= 1
            cur.fail(expected)


# -- verbs -------------------------------------------------------------------------------
def _dblogin(cur: _Line) -> Command:
    args: dict[str, Any] = {}
    while not cur.at_end():
        cur.comma()
        opt = cur.word("USERIDALIAS, USERID, PASSWORD, SOURCEDB or DOMAIN")
        key = {"USERIDALIAS": "useridalias", "USERID": "userid", "PASSWORD": "password",
               "SOURCEDB": "sourcedb", "DOMAIN": "domain"}.get(opt)
        if key is None or key in args:
            cur.i -= 1
            cur.fail("USERIDALIAS, USERID, PASSWORD, SOURCEDB or DOMAIN (each once)")
        if key == "sourcedb":
            args[key] = cur.words_until("a conninfo", "USERIDALIAS", "USERID", "PASSWORD",
                                        "DOMAIN")
        else:
            args[key] = cur.value(f"a value after {opt}")
    if not ({"useridalias", "userid", "sourcedb"} & args.keys()):
        cur.fail("USERIDALIAS alias, USERID user or SOURCEDB conninfo")
    if "useridalias" in args and "userid" in args:
        cur.fail("USERIDALIAS or USERID, not both")
    return DbLogin(**args)


def _trandata(cur: _Line, action: str) -> Command:
    table = cur.table()
    args: dict[str, Any] = {}

    def handle(opt: str) -> bool:
        if opt == "COLS" and action == "ADD":
            if (tok := cur.peek()) is None or tok.kind is not Tok.LPAREN:
                cur.fail("'(' after COLS")
            cur.i += 1
            cols = [cur.value("a column name")]
            while cur.comma():
                cols.append(cur.value("a column name"))
            if (tok := cur.peek()) is None or tok.kind is not Tok.RPAREN:
                cur.fail("',' or ')' in COLS")
            cur.i += 1
            args["cols"] = tuple(cols)
        elif opt in ("NOKEY", "ALLCOLS") and action == "ADD":
            args[opt.lower()] = True
        else:
            return False
        return True

    _options(cur, handle, "COLS (...), NOKEY or ALLCOLS" if action == "ADD"
             else "the end of the command")
    if args.get("nokey") and not args.get("cols"):
        cur.fail("COLS (...) with NOKEY: without key columns, name the columns to log")
    return TranData(action, table, **args)


def _schematrandata(cur: _Line, action: str) -> Command:
    schema = cur.table(schema_only=True)
    allcols = False

    def handle(opt: str) -> bool:
        nonlocal allcols
        if opt == "ALLCOLS" and action == "ADD":
            allcols = True
            return True
        return False

    _options(cur, handle, "ALLCOLS" if action == "ADD" else "the end of the command")
    return SchemaTranData(action, schema, allcols)


def _add_extract(cur: _Line) -> Command:
    name = cur.group()
    if not cur.comma():
        cur.fail("',' and TRANLOG, EXTTRAILSOURCE or SOURCEISTABLE after the group name")
    args: dict[str, Any] = {}
    integrated = bool(cur.accept("INTEGRATED"))
    source = cur.word("TRANLOG, EXTTRAILSOURCE or SOURCEISTABLE")
    if source == "TRANLOG":
        pass
    elif source == "EXTTRAILSOURCE" and not integrated:
        args["source_path"] = _trail(cur)
    elif source == "SOURCEISTABLE" and not integrated:
        pass
    else:
        cur.i -= 1
        cur.fail("TRANLOG, EXTTRAILSOURCE or SOURCEISTABLE")

    def handle(opt: str) -> bool:
        if opt == "DUMPDIR" and source == "TRANLOG":
            args["dumpdir"] = cur.value("a directory of redo dumps")
        elif opt == "INITIALLOAD" and source == "TRANLOG" and "position" not in args:
            args["initialload"] = cur.group()
        elif opt == "DESC":
            args["description"] = cur.value("a quoted description")
        elif source == "SOURCEISTABLE" or (opt in ("EXTSEQNO", "EXTRBA")
                                           and source == "TRANLOG"):
            return False
        else:
            return _position_option(cur, opt, args)
        return True

    _options(cur, handle, "DESC" if source == "SOURCEISTABLE" else
             "BEGIN, SCN, LSN, DUMPDIR, INITIALLOAD, EXTSEQNO, EXTRBA or DESC")
    if source == "TRANLOG" and "initialload" in args:
        if "position" in args or args.get("begin") not in (None, "NOW") or "dumpdir" in args:
            cur.fail("INITIALLOAD alone: the Extract begins where the initial load's "
                     "snapshot ends")
        args["begin"] = "NOW"
    if source == "TRANLOG" and "begin" not in args and "position" not in args:
        cur.fail("BEGIN NOW, BEGIN timestamp, SCN n, LSN x or INITIALLOAD load for a TRANLOG "
                 "Extract")
    return AddExtract(name, source, integrated=integrated, **args)


def _add_replicat(cur: _Line) -> Command:
    name = cur.group()
    if not cur.comma() or not cur.accept("EXTTRAIL"):
        cur.fail("', EXTTRAIL trail' after the group name")
    args: dict[str, Any] = {"exttrail": _trail(cur)}

    def handle(opt: str) -> bool:
        if opt == "CHECKPOINTTABLE" and "nodbcheckpoint" not in args:
            args["checkpoint_table"] = cur.table()
        elif opt == "NODBCHECKPOINT" and "checkpoint_table" not in args:
            args["nodbcheckpoint"] = True
        elif opt == "DESC":
            args["description"] = cur.value("a quoted description")
        elif opt in ("SCN", "LSN"):
            return False
        else:
            return _position_option(cur, opt, args)
        return True

    _options(cur, handle, "EXTSEQNO, EXTRBA, BEGIN, CHECKPOINTTABLE, NODBCHECKPOINT or DESC")
    return AddReplicat(name, **args)


def _add_trail(cur: _Line, kind: str) -> Command:
    path = _trail(cur)
    if not cur.comma() or _KINDS.get(cur.word("EXTRACT")) != "EXTRACT":
        cur.fail("', EXTRACT group' after the trail path")
    extract = cur.group()
    megabytes: int | None = None

    def handle(opt: str) -> bool:
        nonlocal megabytes
        if opt == "MEGABYTES" and megabytes is None:
            megabytes = cur.integer("a size in megabytes")
            return megabytes > 0
        return False

    _options(cur, handle, "MEGABYTES n")
    return AddTrail(kind, path, extract, megabytes)


def _checkpoint_table(cur: _Line, cls: type) -> Command:
    table = None if cur.at_end() else cur.table()
    cur.done()
    return cls(table)


def _add(cur: _Line) -> Command:
    obj = cur.word(_OBJECTS["ADD"])
    kind = _KINDS.get(obj)
    if kind == "EXTRACT":
        return _add_extract(cur)
    if kind == "REPLICAT":
        return _add_replicat(cur)
    if obj in ("EXTTRAIL", "RMTTRAIL"):
        return _add_trail(cur, obj)
    if obj == "TRANDATA":
        return _trandata(cur, "ADD")
    if obj == "SCHEMATRANDATA":
        return _schematrandata(cur, "ADD")
    if obj == "DDLSUPPORT":
        cur.done()
        return DdlSupport("ADD")
    if obj == "CHECKPOINTTABLE":
        return _checkpoint_table(cur, AddCheckpointTable)
    if obj == "HEARTBEATTABLE":
        return _heartbeat(cur, "ADD")
    if obj == "CREDENTIALSTORE":
        cur.done()
        return AddCredentialStore()
    if obj == "MASTERKEY":
        cur.done()
        return MasterKeyCommand("ADD")
    cur.i -= 1
    cur.fail(_OBJECTS["ADD"])


def _delete(cur: _Line) -> Command:
    obj = cur.word(_OBJECTS["DELETE"])
    kind = _KINDS.get(obj)
    if kind in ("EXTRACT", "REPLICAT"):
        name = cur.group()
        force = _bang(cur)
        cur.done()
        return DeleteGroup(kind, name, force)
    if obj in ("EXTTRAIL", "RMTTRAIL"):
        path = _trail(cur)
        cur.done()
        return DeleteTrail(obj, path)
    if obj == "TRANDATA":
        return _trandata(cur, "DELETE")
    if obj == "SCHEMATRANDATA":
        return _schematrandata(cur, "DELETE")
    if obj == "DDLSUPPORT":
        cur.done()
        return DdlSupport("DELETE")
    if obj == "CHECKPOINTTABLE":
        return _checkpoint_table(cur, DeleteCheckpointTable)
    if obj == "HEARTBEATTABLE":
        return _heartbeat(cur, "DELETE")
    if obj == "CREDENTIALSTORE":
        cur.done()
        return DeleteCredentialStore()
    if obj == "MASTERKEY":
        return _delete_masterkey(cur)
    cur.i -= 1
    cur.fail(_OBJECTS["DELETE"])


_MAX_RANGE = 100_000  # master-key versions one DELETE MASTERKEY RANGE may name


def _delete_masterkey(cur: _Line) -> Command:
    """``DELETE MASTERKEY {VERSION n | RANGE FROM a TO b | ALL}``."""
    option = cur.word("VERSION n, RANGE FROM a TO b or ALL")
    if option == "ALL":
        cur.done()
        return MasterKeyCommand("DELETE", all=True)
    if option == "VERSION":
        version = cur.integer("a master-key version number")
        cur.done()
        return MasterKeyCommand("DELETE", (version,))
    if option == "RANGE":
        if cur.accept("FROM") is None:
            cur.fail("FROM first-version")
        first = cur.integer("the first version of the range")
        if cur.accept("TO") is None:
            cur.fail("TO last-version")
        last = cur.integer("the last version of the range")
        cur.done()
        if last < first:
            cur.fail(f"a range whose last version is at least {first}")
        if last - first >= _MAX_RANGE:
            cur.fail(f"a range of at most {_MAX_RANGE:,} versions")
        return MasterKeyCommand("DELETE", tuple(range(first, last + 1)))
    cur.i -= 1
    cur.fail("VERSION n, RANGE FROM a TO b or ALL")


def _masterkey_verb(cur: _Line, verb: str) -> Command:
    """``RENEW MASTERKEY`` and ``UNDELETE MASTERKEY VERSION n``."""
    if cur.accept("MASTERKEY") is None:
        cur.fail("MASTERKEY")
    if verb == "RENEW":
        cur.done()
        return MasterKeyCommand("RENEW")
    if cur.accept("VERSION") is None:
        cur.fail("VERSION n")
    version = cur.integer("a master-key version number")
    cur.done()
    return MasterKeyCommand("UNDELETE", (version,))


def _wallet_verb(cur: _Line, verb: str) -> Command:
    """``CREATE WALLET``, ``OPEN WALLET``, ``PURGE WALLET``."""
    if cur.accept("WALLET") is None:
        cur.fail("WALLET")
    cur.done()
    return WalletCommand(verb)


def _bang(cur: _Line) -> bool:
    tok = cur.peek()
    if tok is not None and tok.kind is Tok.WORD and tok.value == "!":
        cur.i += 1
        return True
    return False


def _info(cur: _Line) -> Command:
    tok = cur.peek()
    if tok is None:
        cur.fail(_OBJECTS["INFO"])
    word = tok.upper
    if word == "ALL":
        cur.i += 1
        cur.done()
        return InfoAll()
    if word in ("TRANDATA", "SCHEMATRANDATA"):
        cur.i += 1
        return _trandata(cur, "INFO") if word == "TRANDATA" else _schematrandata(cur, "INFO")
    if word in ("EXTTRAIL", "RMTTRAIL"):
        cur.i += 1
        path = cur.value("a trail path or *")
        cur.done()
        return InfoTrail(word, path)
    if word == "CHECKPOINTTABLE":
        cur.i += 1
        return _checkpoint_table(cur, InfoCheckpointTable)
    if word == "HEARTBEATTABLE":
        cur.i += 1
        return _heartbeat(cur, "INFO")
    if word == "DDLSUPPORT":
        cur.i += 1
        cur.done()
        return DdlSupport("INFO")
    manager = _manager(cur, "INFO")
    if manager is not None:
        return manager
    if word == "CREDENTIALSTORE":
        cur.i += 1
        domain = cur.value("a domain") if cur.accept("DOMAIN") else None
        cur.done()
        return InfoCredentialStore(domain)
    if word == "MASTERKEY":
        cur.i += 1
        versions = (cur.integer("a master-key version number"),) \
            if cur.accept("VERSION") else ()
        cur.done()
        return MasterKeyCommand("INFO", versions)
    kind = _kind(cur)
    name = cur.group(wildcard=True)
    args: dict[str, Any] = {}

    def handle(opt: str) -> bool:
        if opt == "SHOWCH" and "showch" not in args:
            args["showch"] = True
            nxt = cur.peek()
            if nxt is not None and nxt.kind is Tok.WORD and nxt.value.isdigit():
                args["showch_count"] = cur.integer("a number of checkpoints")
        elif opt == "DETAIL" and "detail" not in args:
            args["detail"] = True
        else:
            return False
        return True

    _options(cur, handle, "SHOWCH or DETAIL")
    return InfoGroup(kind, name, **args)


def _manager(cur: _Line, verb: str) -> Command | None:
    """``START|STOP|INFO MANAGER`` (or ``MGR``), None when the command is about a group."""
    tok = cur.peek()
    if tok is None or not tok.is_kw("MANAGER", "MGR"):
        return None
    nxt = cur.tokens[cur.i + 1] if cur.i + 1 < len(cur.tokens) else None
    if nxt is not None and not (verb == "STOP" and nxt.value == "!"):
        return None  # a group named MANAGER or MGR, with options
    cur.i += 1
    force = _bang(cur) if verb == "STOP" else False
    cur.done()
    return ManagerCommand(verb, force)


def _heartbeat(cur: _Line, action: str) -> Command:
    args: dict[str, Any] = {}

    def handle(opt: str) -> bool:
        key = {"FREQUENCY": "frequency", "RETENTION_TIME": "retention_time",
               "PURGE_FREQUENCY": "purge_frequency"}.get(opt)
        if key is not None and action in ("ADD", "ALTER") and key not in args:
            args[key] = cur.integer(f"a number after {opt}")
            if args[key] < 1:
                cur.i -= 1
                cur.fail(f"a positive number after {opt}")
            return True
        if opt == "TARGETONLY" and action == "ADD":
            args["target_only"] = True
            return True
        return False

    _options(cur, handle, "FREQUENCY, RETENTION_TIME, PURGE_FREQUENCY or TARGETONLY"
             if action in ("ADD", "ALTER") else "the end of the command")
    return HeartbeatTable(action, **args)


def _group_verb(cur: _Line, verb: str) -> Command:
    if verb in ("START", "STOP"):
        manager = _manager(cur, verb)
        if manager is not None:
            return manager
    if cur.at_end():
        cur.fail(f"[EXTRACT|REPLICAT] group name after {verb}")
    kind = _kind(cur)
    name = cur.group(wildcard=True)
    args: dict[str, Any] = {}
    if verb == "STOP":
        args["force"] = _bang(cur)

    def handle(opt: str) -> bool:
        if verb == "START" and opt in ("ATCSN", "AFTERCSN") and not args:
            args[opt.lower()] = cur.value("a CSN")
        elif verb == "STATS" and opt in ("TOTAL", "LATEST", "RESET"):
            args[opt.lower()] = True
        elif verb == "STATS" and opt == "TABLE":
            args["table"] = cur.table()
        elif verb == "STATS" and opt == "REPORTRATE":
            rate = cur.word("SEC, MIN or HR")
            if rate not in ("SEC", "MIN", "HR"):
                cur.i -= 1
                cur.fail("SEC, MIN or HR")
            args["report_rate"] = rate
        else:
            return False
        return True

    expected = {"START": "ATCSN n or AFTERCSN n",
                "STATS": "TOTAL, LATEST, TABLE name, RESET or REPORTRATE"}.get(
        verb, "the end of the command")
    _options(cur, handle, expected)
    cls = {"START": StartGroup, "STOP": StopGroup, "KILL": KillGroup, "STATS": StatsGroup,
           "LAG": LagGroup}[verb]
    return cls(kind, name, **args)


def _alter(cur: _Line) -> Command:
    obj = cur.word("EXTRACT, REPLICAT, CREDENTIALSTORE or HEARTBEATTABLE")
    if obj == "CREDENTIALSTORE":
        return _alter_credentialstore(cur)
    if obj == "HEARTBEATTABLE":
        return _heartbeat(cur, "ALTER")
    kind = _KINDS.get(obj)
    if kind not in ("EXTRACT", "REPLICAT"):
        cur.i -= 1
        cur.fail("EXTRACT, REPLICAT or CREDENTIALSTORE")
    name = cur.group()
    args: dict[str, Any] = {}

    def handle(opt: str) -> bool:
        if opt == "ETROLLOVER" and kind == "EXTRACT":
            args["etrollover"] = True
            return True
        return _position_option(cur, opt, args)

    _options(cur, handle, "BEGIN, SCN, LSN, EXTSEQNO, EXTRBA or ETROLLOVER")
    if not args:
        cur.fail("', BEGIN ...', ', EXTSEQNO n, EXTRBA n' or ', ETROLLOVER'")
    return AlterGroup(kind, name, **args)


def _send(cur: _Line) -> Command:
    cur.accept("EXTRACT", "EXT")
    name = cur.group()
    tok = cur.tokens[cur.i] if cur.comma() and cur.i < len(cur.tokens) else None
    if tok is None or tok.upper != "SNAPSHOT":
        raise GgsciSyntaxError(
            f"ERROR: {cur.text.strip()!r}: this SEND request is not supported: trailgate's "
            f"SEND takes SNAPSHOT TABLE schema.table [, RESYNC]; STOP, START, INFO and STATS "
            f"do the rest.", path=cur.path, line=cur.line)
    cur.word("SNAPSHOT")
    if cur.word("TABLE") != "TABLE":
        cur.i -= 1
        cur.fail("TABLE after SNAPSHOT")
    table = cur.table()
    resync = False

    def handle(opt: str) -> bool:
        nonlocal resync
        if opt == "RESYNC":
            resync = True
            return True
        return False

    _options(cur, handle, "RESYNC")
    return SendSnapshot(name, table, resync)


def _compare(cur: _Line) -> Command:
    cur.accept("EXTRACT", "EXT")
    extract = cur.group()
    if not cur.comma():
        cur.fail("', REPLICAT name' after the Extract")
    cur.accept("REPLICAT", "REP")
    replicat = cur.group()
    args: dict[str, Any] = {}
    tables: list[str] = []

    def handle(opt: str) -> bool:
        if opt == "TABLE":
            tables.append(cur.table())
        elif opt in ("REPORT", "REPAIR") and opt.lower() not in args:
            args[opt.lower()] = cur.value("a file name")
        elif opt == "APPLYREPAIR":
            args["apply_repair"] = True
        elif opt == "NOCONFIRM":
            args["confirm"] = False
        elif opt == "CONFIRMWAIT":
            args["confirm_wait"] = float(cur.integer("a number of seconds"))
        else:
            return False
        return True

    _options(cur, handle, "TABLE, REPORT, REPAIR, APPLYREPAIR, NOCONFIRM or CONFIRMWAIT")
    if args.get("apply_repair") and "repair" not in args:
        cur.fail("REPAIR file with APPLYREPAIR (the SQL that is run)")
    return CompareGroups(extract, replicat, tuple(tables), **args)


def _alter_credentialstore(cur: _Line) -> Command:
    action = cur.word("ADD, REPLACE or DELETE USER")
    if action not in ("ADD", "REPLACE", "DELETE"):
        cur.i -= 1
        cur.fail("ADD, REPLACE or DELETE USER")
    args: dict[str, Any] = {}
    if action == "DELETE" and cur.accept("ALIAS"):
        args["alias"] = cur.value("an alias")
    else:
        if not cur.accept("USER"):
            cur.fail(f"USER after {action}")
        args["user"] = cur.words_until("a user name or conninfo", "PASSWORD", "ALIAS",
                                       "DOMAIN")
    while not cur.at_end():
        cur.comma()
        opt = cur.word("PASSWORD, ALIAS or DOMAIN")
        key = {"PASSWORD": "password", "ALIAS": "alias", "DOMAIN": "domain"}.get(opt)
        if key is None or key in args or (key == "password" and action == "DELETE"):
            cur.i -= 1
            cur.fail("PASSWORD, ALIAS or DOMAIN (each once)")
        args[key] = cur.value(f"a value after {opt}")
    if action != "DELETE" and "alias" not in args:
        cur.fail(f"ALIAS alias: {action} USER needs the alias that parameter files use")
    return AlterCredentialStore(action, **args)


def _view(cur: _Line) -> Command:
    obj = cur.word("REPORT, PARAMS or GGSEVT")
    if obj == "GGSEVT":
        cur.done()
        return ViewGgsevt()
    if obj not in ("REPORT", "PARAMS", "PARAM"):
        cur.i -= 1
        cur.fail("REPORT, PARAMS or GGSEVT")
    name = cur.group()
    cur.done()
    return ViewReport(name) if obj == "REPORT" else ViewParams(name)


def _edit(cur: _Line) -> Command:
    if cur.word("PARAMS") not in ("PARAMS", "PARAM"):
        cur.i -= 1
        cur.fail("PARAMS")
    name = cur.group()
    cur.done()
    return EditParams(name)


def _obey(cur: _Line) -> Command:
    path = cur.value("a file name")
    cur.done()
    return Obey(path)


def _help(cur: _Line) -> Command:
    words = []
    while not cur.at_end():
        words.append(cur.word("a command name"))
    if not words:
        return Help()
    words = [_KINDS.get(w, w) for w in words]
    for n in (2, 1):
        topic = " ".join(words[:n])
        if topic in HELP_TOPICS and len(words) == n:
            return Help(topic)
    cur.i = 1
    cur.fail("a command name")


def _history(cur: _Line) -> Command:
    count = None if cur.at_end() else cur.integer("a number of commands")
    cur.done()
    return History(count)


def _exit(cur: _Line) -> Command:
    cur.done()
    return Exit()


_OBJECTS = {
    "ADD": "EXTRACT, REPLICAT, EXTTRAIL, RMTTRAIL, TRANDATA, SCHEMATRANDATA, DDLSUPPORT, "
           "CHECKPOINTTABLE, HEARTBEATTABLE, CREDENTIALSTORE or MASTERKEY",
    "DELETE": "EXTRACT, REPLICAT, EXTTRAIL, RMTTRAIL, TRANDATA, SCHEMATRANDATA, DDLSUPPORT, "
              "CHECKPOINTTABLE, HEARTBEATTABLE, CREDENTIALSTORE or MASTERKEY",
    "INFO": "ALL, a group name, MANAGER, EXTRACT, REPLICAT, TRANDATA, SCHEMATRANDATA, "
            "DDLSUPPORT, EXTTRAIL, RMTTRAIL, CHECKPOINTTABLE, HEARTBEATTABLE, "
            "CREDENTIALSTORE or MASTERKEY",
}

_VERBS: dict[str, Callable[[_Line], Command]] = {
    "DBLOGIN": _dblogin,
    "ADD": _add,
    "DELETE": _delete,
    "INFO": _info,
    "ALTER": _alter,
    "START": lambda c: _group_verb(c, "START"),
    "STOP": lambda c: _group_verb(c, "STOP"),
    "KILL": lambda c: _group_verb(c, "KILL"),
    "STATS": lambda c: _group_verb(c, "STATS"),
    "STATUS": _info,
    "LAG": lambda c: _group_verb(c, "LAG"),
    "COMPARE": _compare,
    "SEND": _send,
    "VIEW": _view,
    "EDIT": _edit,
    "OBEY": _obey,
    "HELP": _help,
    "HISTORY": _history,
    "EXIT": _exit,
    "QUIT": _exit,
    "RENEW": lambda c: _masterkey_verb(c, "RENEW"),
    "UNDELETE": lambda c: _masterkey_verb(c, "UNDELETE"),
    "CREATE": lambda c: _wallet_verb(c, "CREATE"),
    "OPEN": lambda c: _wallet_verb(c, "OPEN"),
    "PURGE": lambda c: _wallet_verb(c, "PURGE"),
}

_NOT_SUPPORTED = {
    "SHELL": "SHELL is not supported: run operating-system commands outside GGSCI",
    "CLEANUP": "CLEANUP is not supported: use DELETE and ADD",
}


def _repeat(text: str, path: str | None, line: int | None) -> Repeat:
    rest = text.strip()[1:].strip()
    if not rest:
        return Repeat()
    if re.fullmatch(r"-?\d+", rest):
        n = int(rest)
        if n == 0:
            raise GgsciSyntaxError(f"ERROR: Invalid command: {text.strip()!r}. Expected ! n "
                                   f"with n a HISTORY number or -n for n commands back.",
                                   path=path, line=line)
        return Repeat(number=n)
    return Repeat(prefix=rest)


def parse_command(text: str, *, path: str | None = None,
                  line: int | None = None) -> Command | None:
    """Parse one GGSCI command line; ``None`` for a blank or comment-only line.

    ``path``/``line`` locate the command in an obey file for error messages.
    """
    cut = _find_comment(text)
    body = (text if cut < 0 else text[:cut]).strip()
    if not body:
        return None
    if body.startswith("!"):
        return _repeat(body, path, line)
    try:
        tokens = tokenize_line(body, line or 1, path)
    except ConfigError as exc:
        raise GgsciSyntaxError(f"ERROR: Invalid command: {body!r}. {exc}", path=path,
                               line=line) from None
    if tokens and tokens[-1].kind is Tok.SEMI:
        tokens.pop()
    cur = _Line(body, tokens, path, line)
    verb = cur.word("a command such as INFO ALL")
    if verb in _NOT_SUPPORTED:
        raise GgsciSyntaxError(f"ERROR: {_NOT_SUPPORTED[verb]}.", path=path, line=line)
    handler = _VERBS.get(verb)
    if handler is None:
        cur.i = 0
        cur.fail("a command such as ADD, INFO, START, STOP, STATS or DBLOGIN")
    return handler(cur)


def parse_obey(text: str, path: str) -> list[tuple[int, Command]]:
    """Parse every command of an obey file up front, so that a typo on line 40 is reported
    before line 1 runs; returns ``(line number, command)`` pairs."""
    out: list[tuple[int, Command]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        cmd = parse_command(raw, path=path, line=n)
        if cmd is not None:
            out.append((n, cmd))
    return out
