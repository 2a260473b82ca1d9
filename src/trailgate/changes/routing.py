"""Which tables a trail range yields, and under which name: the TABLE/MAP rules of a group.

A Data Pump keeps and renames tables with ``TABLE src, TARGET tgt``; a Replicat reads only
the tables its MAPs name.  Both read the trail through a :class:`Router` so the choice is made
once per table name, with the same precedence MAP uses (an exact name wins over wildcards).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trailgate.model import Change
from trailgate.params.ddl_rules import DdlFilter
from trailgate.params.model import DdlRule
from trailgate.params.names import fill_target, find_map
from trailgate.trail.ddl import read_ddl

__all__ = ["Router", "ddl_keep"]


@dataclass(frozen=True, slots=True)
class _Rule:
    source: str
    target: str | None


@dataclass(frozen=True, slots=True)
class Router:
    """Which tables a range yields and under which name: TABLE/MAP patterns (exact names
    win over wildcards), exclusions, and an optional TARGET rename (a pump's ``TABLE src,
    TARGET tgt``).  No rules: every table, unchanged.  ``hop``: the Data Pump reading
    through it, which stamps heartbeat rows with its name and time
    (:mod:`trailgate.changes.heartbeat`)."""

    rules: tuple[_Rule, ...] = ()
    excludes: tuple[str, ...] = ()
    hop: str | None = None
    _cache: dict[str, str | None] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, rules: list[tuple[str, str | None]], excludes: list[str],
           hop: str | None = None) -> Router:
        return cls(tuple(_Rule(s, t) for s, t in rules), tuple(excludes), hop)

    def route(self, table: str) -> str | None:
        """The output name of ``table``, or None to leave it out."""
        if not self.rules:
            return table
        if table in self._cache:
            return self._cache[table]
        spec = find_map(self.rules, table, self.excludes)
        out = None
        if spec is not None:
            out = table if not spec.target else fill_target(spec.target, table)
        self._cache[table] = out
        return out


def ddl_keep(router: Router, rules: list[DdlRule], given: bool
             ) -> Callable[[Change], bool] | None:
    """A Data Pump's DDL rules as a test of DDL records (MAPPED: its TABLE statements take
    the object); None without a DDL parameter: every DDL passes through."""
    if not given:
        return None
    ddl = DdlFilter(rules, lambda name: router.route(name) is not None, "PUMP", given=True)

    def keep(change: Change) -> bool:
        record = read_ddl(change.text or "")
        if record.unreadable is not None:
            return True  # the Replicat reports it under DDLERROR
        return ddl.decide(record.obj).include
    return keep
