"""One DDL record applied to PostgreSQL inside the partition's transaction.

The Replicat's DDL rules decide whether it runs (default: MAPPED), MAP translates its names
(:mod:`~trailgate.apply.ddl_names`), the source session's settings that change its meaning
(search_path, DateStyle, TimeZone, …) are set around it, and it runs under a savepoint: a
failure is handled as ``DDLERROR`` says (retried, ignored, discarded, or the Replicat stops
with the DDL sequence, statement, trail position and rule).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg

from trailgate.apply.ddl_errors import DdlFailure, ddlerror_rule, respond, retrying
from trailgate.apply.ddl_names import Translation, translate
from trailgate.apply.discard import DdlDiscard
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.apply.sql_lexer import Kind, tokenize
from trailgate.model import OpType
from trailgate.params.ddl_rules import DdlFilter, DdlObject
from trailgate.params.model import DdlErrorRule, ReplicatParams
from trailgate.params.names import find_map, parse_name, resolve_map
from trailgate.trail.ddl import DdlMarker, read_ddl, report_line

__all__ = ["PgDdl", "ddl_changes"]

log = logging.getLogger("trailgate.ddl")

#: The recorded session settings a DDL runs under on the target.
_APPLIED_SETTINGS = ("DateStyle", "IntervalStyle", "TimeZone", "standard_conforming_strings")


def _where(tc: TrailChange) -> str:
    return (f"trail position {tc.position} (seqno {tc.position.seqno}, RBA "
            f"{tc.position.rba}), CSN {tc.csn}")


class PgDdl:
    """The DDL side of one PostgreSQL applier (its connection and its group's parameters)."""

    def __init__(self, conn: psycopg.Connection[Any], params: ReplicatParams):
        self.conn = conn
        self.params = params
        self.filter = DdlFilter(params.ddl, self._mapped, "REPLICAT", given=params.ddl_given)
        self.report = params.ddl_options.report

    def _mapped(self, name: str) -> bool:
        return find_map(self.params.maps, name, self.params.map_excludes) is not None

    def _map_table(self, name: str) -> str | None:
        return resolve_map(self.params.maps, name, self.params.map_excludes)

    def _say(self, level: str, code: str, text: str) -> None:
        log.info(report_line(level, code, text))

    def _report(self, level: str, text: str) -> None:
        self._say(level, "", text)

    # -- one record --------------------------------------------------------------------
    def apply(self, cur: psycopg.Cursor[Any], tc: TrailChange, result: ApplyResult,
              discards: list[DdlDiscard]) -> bool:
        """Apply DDL record ``tc``; True when it ran on the target (its definitions must
        then be read again)."""
        record = read_ddl(tc.change.text or "")
        marker, obj = record.marker, record.obj
        decision = self.filter.decide(obj)
        statement = marker.statement.strip()
        if self.report:
            self._say("INFO", "OGG-01487", f"DDL found, operation [{statement} (size "
                                           f"{len(statement)})], {_where(tc)}, DDL seqno "
                                           f"[{marker.get('C5')}].")
            verdict = "included" if decision.include else "excluded"
            self._say("INFO", "OGG-10451" if decision.include else "OGG-10452",
                      f"DDL operation {verdict} [{decision.rule}], optype [{marker.ddl_type}], "
                      f"objtype [{marker.object_type}], objowner \"{marker.owner}\", objname "
                      f"\"{marker.name}\".")
        if not decision.include:
            return False
        target = ((self._map_table(obj.qualified_name) if obj.name else None)
                  or obj.qualified_name or "(no object)")
        if marker.error:
            self._failed(tc, marker, obj, decision.scope, "", marker.error, statement, target,
                         result, discards)
            return False
        translation = self._translate(marker)
        run = _plain_indexes(translation.statement) if marker.object_type == "INDEX" or \
            translation.shape.object_word == "INDEX" else translation.statement
        if self.report and decision.scope == "MAPPED":
            self._say("INFO", "", f"DDL is of mapped scope, after mapping new "
                                           f"operation [{run.strip()}].")

        def named(exc: BaseException) -> tuple[str, str]:
            if isinstance(exc, psycopg.OperationalError):
                raise exc  # the connection: not a DDL error, the Replicat's retry cures it
            assert isinstance(exc, psycopg.Error)
            return exc.sqlstate or "?", exc.diag.message_primary or str(exc)

        outcome = retrying(lambda: self._run(cur, run, marker, translation), (psycopg.Error,),
                           named, lambda code: self._rule(code, obj, decision.scope),
                           self._report)
        if isinstance(outcome, DdlFailure):
            self._failed(tc, marker, obj, decision.scope, outcome.code, outcome.message, run,
                         target, result, discards, outcome.rule)
            return False
        result.table(target).ddl += 1
        if self.report:
            self._say("INFO", "", f"DDL operation successful: {marker.describe()}.")
        return True

    def _translate(self, marker: DdlMarker) -> Translation:
        master = marker.master_qualified_name
        master_target = self._map_table(master) if master else None

        def map_schema(schema: str) -> str | None:
            if master_target is not None and master and master.split(".")[0] == schema:
                return _schema_of(master_target)
            found = self._map_table(f"{schema}.{marker.name or 'x'}")
            return None if found is None else _schema_of(found)

        path = marker.settings().get("search_path", "")
        return translate(marker.statement, owner=marker.owner, map_table=self._map_table,
                         map_schema=map_schema, search_path=_split_path(path),
                         no_data=marker.rows_follow)

    def _run(self, cur: psycopg.Cursor[Any], statement: str, marker: DdlMarker,
             translation: Translation) -> None:
        """The statement under a savepoint, with the source's settings set around it."""
        settings = marker.settings()
        wanted: dict[str, str] = {k: settings[k] for k in _APPLIED_SETTINGS if settings.get(k)}
        if translation.search_path:
            wanted["search_path"] = ", ".join(_quote_schema(s) for s in translation.search_path)
        names = list(wanted)
        before = (cur.execute("SELECT " + ", ".join("current_setting(%s)" for _ in names),
                              names).fetchone() if names else ())
        with self.conn.transaction():
            _set_local(cur, list(wanted.items()))
            cur.execute(statement)  # the DDL as captured
        _set_local(cur, list(zip(names, before or (), strict=True)))

    def _rule(self, code: str, obj: DdlObject, scope: str) -> DdlErrorRule:
        return ddlerror_rule(self.params.ddl_errors, code, obj, scope)

    def _failed(self, tc: TrailChange, marker: DdlMarker, obj: DdlObject, scope: str,
                code: str, message: str, statement: str, target: str, result: ApplyResult,
                discards: list[DdlDiscard], rule: DdlErrorRule | None = None) -> None:
        rule = rule or self._rule(code, obj, scope)
        what = marker.describe() + (f" ({marker.ddl_type} {marker.object_type} "
                                    f"{obj.qualified_name})" if obj.name else "")
        ran = "" if statement.strip() == marker.statement.strip() else \
            f" run as [{statement.strip()}]"
        error = f"error {code} ({message})" if code else message
        text = f"DDL error: {error} applying {what}{ran}, {_where(tc)}"
        discard = respond(rule, text, code, tc, statement, target, result, self._report,
                          "; nothing of this transaction was committed")
        if discard is not None:
            discards.append(discard)


def _set_local(cur: psycopg.Cursor[Any], pairs: list[tuple[str, str]]) -> None:
    """Set each (setting, value) for the transaction, all in one round trip."""
    if pairs:
        cur.execute("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in pairs),
                    [part for pair in pairs for part in pair])


def _schema_of(name: str) -> str:
    parts = [p.text if p.quoted else p.text.lower() for p in parse_name(name)]
    return parts[-2] if len(parts) >= 2 else parts[0]


def _split_path(text: str) -> list[str]:
    """A search_path setting as its schemas (quotes kept off, commas inside quotes kept)."""
    out, buf, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
            buf.append(ch)
        elif ch == "," and not quoted:
            out.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
    if "".join(buf).strip():
        out.append("".join(buf).strip())
    return out


def _quote_schema(name: str) -> str:
    return '"' + name.replace('"', '""') + '"' if name != "$user" else '"$user"'


def _plain_indexes(statement: str) -> str:
    """``CREATE/DROP INDEX CONCURRENTLY`` without CONCURRENTLY: the Replicat applies in a
    transaction, where PostgreSQL refuses it."""
    tokens = tokenize(statement)
    out: list[str] = []
    skip_space = False
    for tok in tokens:
        if tok.kind is Kind.WORD and tok.upper == "CONCURRENTLY":
            skip_space = True
            continue
        if skip_space and tok.kind is Kind.SPACE:
            skip_space = False
            continue
        skip_space = False
        out.append(tok.text)
    return "".join(out)


def ddl_changes(changes: Sequence[TrailChange]) -> bool:
    """Whether a partition holds a DDL record."""
    return any(tc.change.op is OpType.DDL for tc in changes)
