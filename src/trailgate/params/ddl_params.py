"""The DDL parameters' syntax: ``DDL INCLUDE|EXCLUDE …``, ``DDLOPTIONS …`` and ``DDLERROR …``.

Kept beside the parser (which registers one handler per parameter and calls these) because
the three share the INCLUDE/EXCLUDE clause grammar and are a family of their own.
"""

from __future__ import annotations

from trailgate.params.cursor import Cursor
from trailgate.params.lexer import Tok
from trailgate.params.model import DdlErrorRule, DdlOptions, DdlRule

__all__ = ["parse_ddl", "parse_ddlerror", "parse_ddloptions"]

_SCOPES = ("MAPPED", "UNMAPPED", "OTHER", "ALL")
_CLAUSE_OPTIONS = "MAPPED, UNMAPPED, OTHER, ALL, OBJNAME, OPTYPE, OBJTYPE or INSTR"


def _clause_option(cur: Cursor, rule: DdlRule, word: str, what: str) -> bool:
    """Take one option of an INCLUDE/EXCLUDE clause into ``rule``; False if ``word`` is
    not one."""
    if word in _SCOPES:
        if rule.scope is not None:
            cur.error(f"{what}: {rule.scope} and {word} in one clause; start another "
                      f"INCLUDE or EXCLUDE")
        rule.scope = word
    elif word == "OBJNAME":
        rule.objnames.append(cur.object_name("an object name such as hr.*"))
    elif word == "OPTYPE":
        rule.optypes.append(cur.value("an operation type such as CREATE").upper())
    elif word == "OBJTYPE":
        rule.objtypes.append(cur.value("an object type such as 'TABLE'").upper())
    elif word == "INSTR":
        rule.instr.append(cur.expect(Tok.STRING, "a quoted string").value)
    else:
        return False
    return True


def parse_ddl(cur: Cursor) -> list[DdlRule]:
    """``DDL {INCLUDE | EXCLUDE} [MAPPED | UNMAPPED | OTHER | ALL] [OBJNAME n] [OPTYPE t]
    [OBJTYPE 't'] [INSTR 's'] …``: each INCLUDE or EXCLUDE starts a clause."""
    rules: list[DdlRule] = []
    depth = 0
    while not cur.at_end():
        if cur.skip_comma():
            continue
        if cur.accept(Tok.LPAREN):
            depth += 1
            continue
        if cur.accept(Tok.RPAREN):
            depth -= 1
            if depth < 0:
                cur.error("DDL: unbalanced ')'")
            continue
        tok = cur.next("INCLUDE or EXCLUDE")
        word = tok.upper
        if word in ("INCLUDE", "EXCLUDE"):
            rules.append(DdlRule(include=word == "INCLUDE"))
            continue
        if not rules:
            cur.error(f"DDL: expected INCLUDE or EXCLUDE, found {tok.text!r}", tok)
        if not _clause_option(cur, rules[-1], word, "DDL"):
            cur.error(f"DDL: unknown option {tok.text!r}; use {_CLAUSE_OPTIONS}", tok)
    if depth:
        cur.error("DDL: unbalanced '('")
    if not rules:
        cur.error("DDL: expected INCLUDE or EXCLUDE, as in DDL INCLUDE MAPPED")
    return rules


_LAKE_OPTIONS = {"LAKECREATE": ("ATDDL", "ONFIRSTROW"), "LAKEDROP": ("ARCHIVE", "PURGE", "KEEP"),
                 "LAKERENAME": ("MOVE", "NEWTABLE")}


def parse_ddloptions(cur: Cursor, options: DdlOptions) -> None:
    """``DDLOPTIONS [REPORT | NOREPORT] [, LAKECREATE …] [, LAKEDROP …] [, LAKERENAME …]``
    into ``options`` (several DDLOPTIONS lines add up)."""
    if cur.at_end():
        cur.error("DDLOPTIONS: expected an option, e.g. DDLOPTIONS REPORT")
    while not cur.at_end():
        if cur.skip_comma():
            continue
        tok = cur.next("an option")
        word = tok.upper
        if word in ("REPORT", "NOREPORT"):
            options.report = word == "REPORT"
        elif word in _LAKE_OPTIONS:
            value = cur.expect_kw(*_LAKE_OPTIONS[word])
            setattr(options, word.lower().replace("lake", "lake_"), value)
        else:
            cur.error(f"DDLOPTIONS: unknown or unsupported option {tok.text!r}; DDLOPTIONS "
                      f"accepts REPORT, NOREPORT, LAKECREATE, LAKEDROP and LAKERENAME", tok)


def parse_ddlerror(cur: Cursor) -> DdlErrorRule:
    """``DDLERROR {error | DEFAULT} {ABEND | DISCARD | IGNORE} [RETRYOP MAXRETRIES n
    [RETRYDELAY seconds]] [INCLUDE … | EXCLUDE …]``; ``error`` is a PostgreSQL SQLSTATE."""
    tok = cur.next("an error (a SQLSTATE such as 42P01) or DEFAULT")
    error = tok.value.upper()
    if error != "DEFAULT" and not (len(error) == 5 and error.isalnum()):
        cur.error(f"DDLERROR: {tok.text!r} is not DEFAULT or a five-character SQLSTATE "
                  f"(such as 42P01, undefined table)", tok)
    cur.skip_comma()
    rule = DdlErrorRule(error, cur.expect_kw("ABEND", "DISCARD", "IGNORE"))
    while not cur.at_end():
        if cur.skip_comma():
            continue
        tok = cur.next("RETRYOP, INCLUDE or EXCLUDE")
        word = tok.upper
        if word == "RETRYOP":
            cur.expect_kw("MAXRETRIES")
            rule.max_retries = cur.integer("a number of retries", minimum=1)
            if cur.accept_kw("RETRYDELAY"):
                rule.retry_delay = cur.number("a delay in seconds")
        elif word in ("INCLUDE", "EXCLUDE"):
            if rule.only is not None:
                cur.error("DDLERROR: one INCLUDE or EXCLUDE clause per rule", tok)
            rule.only = DdlRule(include=word == "INCLUDE")
        elif rule.only is not None and _clause_option(cur, rule.only, word, "DDLERROR"):
            continue
        else:
            cur.error(f"DDLERROR: unknown option {tok.text!r}; use RETRYOP MAXRETRIES n "
                      f"[RETRYDELAY s], then INCLUDE or EXCLUDE with {_CLAUSE_OPTIONS}", tok)
    return rule
