"""``dirprm/mgr.prm``: the Manager's parameters, read with the lexer every parameter file uses.

GoldenGate's Manager parameters as trailgate supports them (PORT, AUTOSTART, AUTORESTART,
PURGEOLDEXTRACTS, CHECKMINUTES, LAGREPORT…, LAGINFO…, LAGCRITICAL…) and a few of its own
for the HTTP service, each error naming the file and line.  The whole file is checked
before the Manager does anything, so a typo never leaves half a Manager running.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.params.cursor import Cursor
from trailgate.params.lexer import Statement, split_statements

__all__ = ["AutoRestart", "CollectorOptions", "GroupPattern", "ManagerParams", "PurgeRule",
           "parse_manager_params"]

DEFAULT_PORT = 7809
_KINDS = {"EXTRACT": "EXTRACT", "EXT": "EXTRACT", "REPLICAT": "REPLICAT", "REP": "REPLICAT",
          "ER": "ER"}
_PATTERN = re.compile(r"[A-Za-z0-9_*?]{1,8}")
_UNITS = {"SECONDS": 1, "MINUTES": 60, "HOURS": 3600, "DAYS": 86400}


@dataclass(frozen=True, slots=True)
class GroupPattern:
    """``{EXTRACT | REPLICAT | ER} pattern``: which groups a rule covers."""

    kind: str
    pattern: str

    def matches(self, kind: str, name: str) -> bool:
        return self.kind in ("ER", kind) and fnmatchcase(name.upper(), self.pattern.upper())


@dataclass(frozen=True, slots=True)
class AutoRestart:
    """``AUTORESTART … [, RETRIES n] [, WAITMINUTES n] [, RESETMINUTES n]`` (GoldenGate's
    defaults: 2 retries, 2 minutes' wait, a 120-minute window)."""

    groups: GroupPattern
    retries: int = 2
    wait_seconds: float = 120.0
    reset_seconds: float = 7200.0


@dataclass(frozen=True, slots=True)
class PurgeRule:
    """``PURGEOLDEXTRACTS trail [, USECHECKPOINTS | NOUSECHECKPOINTS] [, MINKEEP…]``."""

    trail: str  # as written: ./dirdat/*, ./dirdat/aa, ./dirdat/aa*
    use_checkpoints: bool = True
    min_keep_seconds: float | None = None
    min_keep_files: int | None = None
    path: str = ""
    line: int = 0

    def describe(self) -> str:
        """The rule in GoldenGate's words, for the purge events."""
        if self.min_keep_seconds is not None:
            rule = f"MINKEEPHOURS {self.min_keep_seconds / 3600:g}"
        elif self.min_keep_files is not None:
            rule = f"MINKEEPFILES {self.min_keep_files}"
        else:
            rule = ""
        if self.use_checkpoints:
            text = ("USECHECKPOINTS purge rule: Purge if all processes are finished with a "
                    "file as indicated by checkpoints")
            return text + (f", and {rule}" if rule else "")
        return f"NOUSECHECKPOINTS {rule} purge rule".replace("  ", " ")


@dataclass(frozen=True, slots=True)
class CollectorOptions:
    """*trailgate.* ``COLLECTOR PORT n [, BINDADDRESS a] [, TOKENALIAS a] [, CERTFILE f,
    KEYFILE f [, CAFILE f]] [, ALLOW sender …]``: the collector the Manager runs, which a
    Pump's ``RMTHOST host, MGRPORT m`` finds through the Manager's port."""

    port: int
    bind_address: str = "127.0.0.1"
    token_alias: str | None = None
    cert: str | None = None
    key: str | None = None
    ca: str | None = None
    allow: tuple[str, ...] = ()


@dataclass(slots=True)
class ManagerParams:
    """Everything in ``mgr.prm``, resolved."""

    path: str = ""
    port: int = DEFAULT_PORT
    bind_address: str = "127.0.0.1"
    autostart: list[GroupPattern] = field(default_factory=list)
    autorestart: list[AutoRestart] = field(default_factory=list)
    purge: list[PurgeRule] = field(default_factory=list)
    check_seconds: float = 600.0
    lag_report_seconds: float | None = None
    lag_info_seconds: float | None = None
    lag_critical_seconds: float | None = None
    lag_sample_seconds: float = 5.0
    collector: CollectorOptions | None = None
    warnings: list[str] = field(default_factory=list)

    def restart_rule(self, kind: str, name: str) -> AutoRestart | None:
        """The first AUTORESTART covering the group, if any."""
        return next((r for r in self.autorestart if r.groups.matches(kind, name)), None)

    def autostarts(self, kind: str, name: str) -> bool:
        return any(p.matches(kind, name) for p in self.autostart)


def _groups(cur: Cursor) -> GroupPattern:
    kind = _KINDS.get(cur.expect_kw(*_KINDS))
    assert kind is not None
    tok = cur.next("a group name or wildcard (*, EXT*)")
    pattern = tok.value
    while cur._glued_next():  # EXT* is lexed as two glued tokens
        pattern += cur.next("a group name").text
    if not _PATTERN.fullmatch(pattern):
        cur.error(f"{cur.stmt.keyword}: {pattern!r} is not a group name or wildcard", tok)
    return GroupPattern(kind, pattern.upper())


def _duration(cur: Cursor, keyword: str) -> float:
    """The seconds of a ``…SECONDS n`` / ``…MINUTES n`` / ``…HOURS n`` / ``…DAYS n``."""
    for unit, factor in _UNITS.items():
        if keyword.endswith(unit):
            return cur.number(f"a number of {unit.lower()}") * factor
    raise AssertionError(keyword)


def _autorestart(cur: Cursor) -> AutoRestart:
    groups = _groups(cur)
    values: dict[str, float] = {}
    while cur.skip_comma():
        opt = cur.expect_kw("RETRIES", "WAITMINUTES", "WAITSECONDS", "RESETMINUTES",
                            "RESETSECONDS")
        key = "retries" if opt == "RETRIES" else opt[:4].lower()
        if key in values:
            cur.error(f"AUTORESTART: {opt} given twice")
        values[key] = (cur.integer("a number of retries") if opt == "RETRIES"
                       else _duration(cur, opt))
    return AutoRestart(groups, int(values.get("retries", 2)), values.get("wait", 120.0),
                       values.get("rese", 7200.0))


def _purge(cur: Cursor, params: ManagerParams) -> PurgeRule:
    trail = cur.value("a trail such as ./dirdat/* or ./dirdat/aa")
    use = True
    seconds: float | None = None
    files: int | None = None
    while cur.skip_comma():
        opt = cur.expect_kw("USECHECKPOINTS", "NOUSECHECKPOINTS", "MINKEEPHOURS",
                            "MINKEEPDAYS", "MINKEEPFILES")
        if opt in ("USECHECKPOINTS", "NOUSECHECKPOINTS"):
            use = opt == "USECHECKPOINTS"
        elif opt == "MINKEEPFILES":
            files = cur.integer("a number of files", minimum=1)
        else:
            seconds = _duration(cur, opt.replace("MINKEEP", ""))
    if seconds is not None and files is not None:  # GoldenGate's OGG-00959
        params.warnings.append(f"PURGEOLDEXTRACTS {trail} (MINKEEPFILES option not used; "
                               "last MINKEEP time option entered will be used)")
        files = None
    return PurgeRule(trail, use, seconds, files, cur.stmt.path, cur.stmt.line)


def _collector(cur: Cursor, home: Home) -> CollectorOptions:
    values: dict[str, str] = {}
    allow: list[str] = []
    port: int | None = None
    first = True
    while first or cur.skip_comma():
        first = False
        opt = cur.expect_kw("PORT", "BINDADDRESS", "TOKENALIAS", "CERTFILE", "KEYFILE",
                            "CAFILE", "ALLOW")
        if opt == "PORT":
            port = cur.integer("a port number", minimum=1)
            if port > 65535:
                cur.error("COLLECTOR PORT: a port number is at most 65535")
        elif opt == "ALLOW":
            allow.append(cur.value("a sender's name").upper())
        else:
            value = cur.value("a value")
            values[opt] = str(home.resolve(value)) if opt.endswith("FILE") else value
    if port is None:
        cur.error("COLLECTOR: give its port (COLLECTOR PORT 7819, TOKENALIAS pumps)")
    if ("CERTFILE" in values) != ("KEYFILE" in values):
        cur.error("COLLECTOR: CERTFILE and KEYFILE go together")
    if "CAFILE" in values and "CERTFILE" not in values:
        cur.error("COLLECTOR: CAFILE (client certificates) needs TLS: give CERTFILE and "
                  "KEYFILE too")
    if "TOKENALIAS" not in values and "CAFILE" not in values:
        cur.error("COLLECTOR: a collector accepts only senders it can authenticate: give "
                  "TOKENALIAS alias or CAFILE file")
    assert port is not None
    return CollectorOptions(port, values.get("BINDADDRESS", "127.0.0.1"),
                            values.get("TOKENALIAS"), values.get("CERTFILE"),
                            values.get("KEYFILE"), values.get("CAFILE"), tuple(allow))


_LAG = {"LAGREPORT": "lag_report_seconds", "LAGINFO": "lag_info_seconds",
        "LAGCRITICAL": "lag_critical_seconds"}
KEYWORDS = ("PORT", "BINDADDRESS", "AUTOSTART", "AUTORESTART", "PURGEOLDEXTRACTS", "COLLECTOR",
            "CHECKMINUTES", "CHECKSECONDS", "LAGSAMPLESECONDS",
            *(f"{k}{u}" for k in _LAG for u in ("SECONDS", "MINUTES", "HOURS")))


def _statement(stmt: Statement, params: ManagerParams, home: Home) -> None:
    cur = Cursor(stmt)
    word = stmt.keyword
    if word == "PORT":
        params.port = cur.integer("a port number", minimum=1)
        if params.port > 65535:
            cur.error("PORT: a port number is at most 65535")
    elif word == "BINDADDRESS":
        params.bind_address = cur.value("an address such as 127.0.0.1")
    elif word == "AUTOSTART":
        params.autostart.append(_groups(cur))
    elif word == "AUTORESTART":
        params.autorestart.append(_autorestart(cur))
    elif word == "PURGEOLDEXTRACTS":
        params.purge.append(_purge(cur, params))
    elif word == "COLLECTOR":
        params.collector = _collector(cur, home)
    elif word in ("CHECKMINUTES", "CHECKSECONDS"):
        params.check_seconds = max(1.0, _duration(cur, word))
    elif word == "LAGSAMPLESECONDS":
        params.lag_sample_seconds = max(0.5, cur.number("a number of seconds"))
    elif any(word.startswith(k) for k in _LAG) and word in KEYWORDS:
        if word.startswith("LAGREPORT") and word.endswith("SECONDS"):
            cur.error("LAGREPORT takes MINUTES or HOURS (LAGREPORTMINUTES n)")
        setattr(params, _LAG[next(k for k in _LAG if word.startswith(k))],
                _duration(cur, word))
    else:
        close = difflib.get_close_matches(word, KEYWORDS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        cur.error(f"unknown Manager parameter {stmt.tokens[0].text!r}{hint}; "
                  "docs/manager.md lists the parameters", stmt.tokens[0])
    cur.end()


def parse_manager_params(home: Home, path: Path | None = None) -> ManagerParams:
    """Read ``dirprm/mgr.prm`` (defaults when it does not exist: PORT 7809, nothing
    else); a ConfigError names the file, the line and what is wrong."""
    path = path or home.dirprm / "mgr.prm"
    params = ManagerParams(path=str(path))
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return params
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the Manager's parameter file: {exc}",
                          path=str(path)) from None
    for stmt in split_statements(text, str(path)):
        _statement(stmt, params, home)
    return params
