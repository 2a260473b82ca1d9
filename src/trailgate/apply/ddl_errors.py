"""DDLERROR for every target: the rule that answers a failed DDL, retries, and the response.

A DDL fails differently on PostgreSQL (a SQLSTATE from the server) and on a lake target (an
exception from deltalake or Arrow given a SQLSTATE by ``lake_errors``), but ``DDLERROR``
must mean one thing everywhere: the same rule lookup, the same retry wording in the report,
the same IGNORE / DISCARD / ABEND responses.  The targets keep only what differs: what a
DDL step is and how its failure is named.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from trailgate.apply.discard import DdlDiscard
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.errors import TargetError
from trailgate.model import TrailPosition
from trailgate.params.ddl_rules import DdlObject, clause_matches
from trailgate.params.model import DdlErrorRule

__all__ = ["DdlError", "DdlFailure", "ddlerror_rule", "respond", "retrying"]

_DEFAULT_RULE = DdlErrorRule("DEFAULT", "ABEND")
T = TypeVar("T")


class DdlError(TargetError):
    """A DDL failed on the target and DDLERROR says ABEND (nothing of the partition is
    committed); ``txn_start`` is where the DDL's transaction begins in the trail, so that
    a caller may commit what came before it."""

    txn_start: TrailPosition | None = None


@dataclass(frozen=True, slots=True)
class DdlFailure:
    """A DDL step that failed for good: its SQLSTATE, message and the rule that answers."""

    code: str
    message: str
    rule: DdlErrorRule


def ddlerror_rule(rules: Sequence[DdlErrorRule], code: str, obj: DdlObject, scope: str
                  ) -> DdlErrorRule:
    """The DDLERROR rule for error ``code`` (a SQLSTATE; empty for a marker the trigger
    could not describe): an exact one first, then DEFAULT, else ``DDLERROR DEFAULT ABEND``;
    a rule's INCLUDE or EXCLUDE clause narrows it to the DDL it takes."""
    def applies(rule: DdlErrorRule) -> bool:
        if rule.only is None:
            return True
        matched = clause_matches(rule.only, obj, scope)
        return matched if rule.only.include else not matched

    for wanted in (code, "DEFAULT"):
        for rule in rules:
            if rule.error == wanted and applies(rule):
                return rule
    return _DEFAULT_RULE


def retrying(step: Callable[[], T], failures: tuple[type[BaseException], ...],
             name: Callable[[BaseException], tuple[str, str]],
             rule_for: Callable[[str], DdlErrorRule], say: Callable[[str, str], None]
             ) -> T | DdlFailure:
    """``step()``'s result, retried as its rule says (``RETRYOP MAXRETRIES n RETRYDELAY
    s``) while it fails with one of ``failures`` (``name`` gives a failure's SQLSTATE and
    message); a :class:`DdlFailure` when the retries are spent.  ``say(level, text)``
    reports each retry."""
    attempt = 0
    while True:
        try:
            return step()
        except failures as exc:
            code, message = name(exc)
            rule = rule_for(code)
            if attempt >= rule.max_retries:
                return DdlFailure(code, message, rule)
            attempt += 1
            say("INFO", f"DDL error ignored for next retry: error code [{code}], error text "
                f"[{message}], retry [{attempt}] ({rule.text()}).")
            time.sleep(rule.retry_delay)


def respond(rule: DdlErrorRule, text: str, code: str, tc: TrailChange, statement: str,
            target: str, result: ApplyResult, say: Callable[[str, str], None],
            abend_tail: str = "") -> DdlDiscard | None:
    """``rule``'s response to the failure ``text`` describes: IGNORE counts it, DISCARD
    counts it and returns the discard entry to write, ABEND raises :class:`DdlError`."""
    if rule.response == "IGNORE":
        result.table(target).ignores += 1
        say("WARNING", f"{text}; ignored ({rule.text()}).")
        return None
    if rule.response == "DISCARD":
        result.table(target).discards += 1
        say("WARNING", f"{text}; discarded ({rule.text()}).")
        return DdlDiscard(tc, statement, text, (code,) if code else ())
    hint = (f"add a DDLERROR rule for error {code} (IGNORE or DISCARD)" if code
            else "add DDLERROR DEFAULT IGNORE (or DISCARD) to skip it")
    failure = DdlError(f"{text}. The Replicat stops ({rule.text()}): correct the target and "
                       f"start again, or {hint}{abend_tail}")
    failure.txn_start = tc.txn_start
    raise failure
