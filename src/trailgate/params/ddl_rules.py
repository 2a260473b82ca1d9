"""Which DDL a group takes: ``DDL INCLUDE | EXCLUDE`` evaluated as GoldenGate documents it.

A DDL's *scope* is MAPPED when its object (or, for an index or trigger, its table) is named
by the group's TABLE or MAP statements, UNMAPPED for any other object in a schema, OTHER for
objects outside schemas (schemas, roles, extensions) and GRANT/REVOKE.  A DDL is taken when
an INCLUDE clause matches it and no EXCLUDE clause does (EXCLUDE wins); a clause matches
when all its options do.  Without a DDL parameter: an Extract takes no DDL, a Replicat
takes MAPPED DDL, a Data Pump passes every DDL through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trailgate.model import DdlObject
from trailgate.params.model import DdlRule
from trailgate.params.names import match_table

__all__ = ["DdlDecision", "DdlFilter", "DdlObject", "clause_matches"]

#: Object types whose DDL follows the table they belong to when deciding the scope.
_DEPENDENT = frozenset({"INDEX", "TRIGGER", "RULE", "POLICY"})
#: What a group does when its file has no DDL parameter.
DEFAULTS = {"EXTRACT": (False, "no DDL parameter: DDL is not captured"),
            "REPLICAT": (None, "INCLUDE MAPPED (the default without a DDL parameter)"),
            "PUMP": (True, "INCLUDE ALL (a Data Pump passes DDL through)")}


@dataclass(frozen=True, slots=True)
class DdlDecision:
    """Taken or not, the clause that decided (as written), and the DDL's scope."""

    include: bool
    rule: str
    scope: str


def clause_matches(rule: DdlRule, obj: DdlObject, scope: str) -> bool:
    """Whether every option of ``rule`` matches ``obj`` (of scope ``scope``)."""
    if rule.scope not in (None, "ALL") and rule.scope != scope:
        return False
    if rule.objnames and not any(
            match_table(p, obj.qualified_name if "." in p else obj.name) for p in rule.objnames):
        return False
    if rule.optypes and obj.ddl_type.upper() not in rule.optypes:
        return False
    if rule.objtypes and obj.object_type.upper() not in {t.strip("'").upper()
                                                         for t in rule.objtypes}:
        return False
    statement = obj.statement.lower()
    return all(s.lower() in statement for s in rule.instr)


class DdlFilter:
    """The DDL rules of one group; ``mapped(name)`` says whether its TABLE/MAP statements
    name a table; ``role`` is EXTRACT, PUMP or REPLICAT (the default without rules)."""

    def __init__(self, rules: Sequence[DdlRule], mapped: Callable[[str], bool], role: str,
                 *, given: bool | None = None):
        self.rules = list(rules)
        self.mapped = mapped
        self.role = role
        self.given = bool(self.rules) if given is None else given

    def scope(self, obj: DdlObject) -> str:
        """MAPPED, UNMAPPED or OTHER (see the module docstring)."""
        if not obj.owner or obj.ddl_type.upper() in ("GRANT", "REVOKE"):
            return "OTHER"
        names = [obj.qualified_name]
        if obj.master and obj.object_type.upper() in _DEPENDENT:
            names.insert(0, obj.master)
        return "MAPPED" if any(self.mapped(n) for n in names) else "UNMAPPED"

    def decide(self, obj: DdlObject) -> DdlDecision:
        scope = self.scope(obj)
        if obj.error and not obj.name:  # nothing to judge it by: DDLERROR decides
            return DdlDecision(True, "a marker that names no object (DDLERROR decides)",
                               scope)
        if not self.given:
            include, text = DEFAULTS[self.role]
            return DdlDecision(scope == "MAPPED" if include is None else include, text, scope)
        excluded = next((r for r in self.rules if not r.include
                         and clause_matches(r, obj, scope)), None)
        if excluded is not None:
            return DdlDecision(False, excluded.text(), scope)
        included = next((r for r in self.rules if r.include and clause_matches(r, obj, scope)),
                        None)
        if included is not None:
            return DdlDecision(True, included.text(), scope)
        return DdlDecision(False, "no INCLUDE clause takes it", scope)
