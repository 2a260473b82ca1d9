"""Which tables an Extract captures and how each change is trimmed: TABLE, TABLEEXCLUDE,
COLS/COLSEXCEPT, TOKENS and GETTRUNCATES applied to captured changes.

The rules are plain data (they travel to Spark tasks) and are resolved once per table name.
When several TABLE statements match a table, one naming it exactly wins, else the first
wildcard one in the file (the rule MAP uses).  Key columns are always kept by COLS and
COLSEXCEPT: without them an update or delete could not be applied; the start-up check
reports such a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from trailgate.changes.heartbeat import is_heartbeat, stamp_hop
from trailgate.extract.tokens import GroupEnv, TokenContext, evaluate
from trailgate.model import Change, OpType, TableDef
from trailgate.params.model import TableSpec
from trailgate.params.names import match_table, parse_name

__all__ = ["TableRule", "TableRules"]


@dataclass(slots=True)
class TableRule:
    """How one captured table is handled (from the TABLE statement that matched it)."""

    spec: TableSpec
    _keep: dict[int, tuple[TableDef, frozenset[int] | None]] = field(default_factory=dict)

    def keep_columns(self, table: TableDef) -> frozenset[int] | None:
        """Indexes of the columns kept (``None``: all), cached per definition object."""
        spec = self.spec
        if spec.cols is None and spec.cols_except is None:
            return None
        cached = self._keep.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        keep: frozenset[int] | None = None
        if spec.cols is not None or spec.cols_except is not None:
            wanted = {n.lower() for n in (spec.cols or spec.cols_except or [])}
            keys = {k.lower() for k in table.key}
            if spec.cols is not None:
                keep = frozenset(c.index for c in table.columns
                                 if c.name.lower() in wanted or c.name.lower() in keys)
            else:
                keep = frozenset(c.index for c in table.columns
                                 if c.name.lower() not in wanted or c.name.lower() in keys)
        self._keep[id(table)] = (table, keep)
        return keep


def _trim(values: dict[int, bytes | None] | None, keep: frozenset[int]
          ) -> dict[int, bytes | None] | None:
    if values is None:
        return None
    return {i: v for i, v in values.items() if i in keep}


class TableRules:
    """The TABLE and TABLEEXCLUDE statements of one Extract, and ``heartbeat``: the
    heartbeat seed table (``GGSCHEMA.gg_heartbeat_seed``), captured whatever the TABLE
    statements say, its inserts stamped with this Extract's hop."""

    def __init__(self, tables: Sequence[TableSpec], excludes: Iterable[str], env: GroupEnv,
                 heartbeat: str | None = None):
        self.tables = list(tables)
        self.excludes = list(excludes)
        self.env = env
        self.heartbeat = heartbeat
        self._cache: dict[str, TableRule | None] = {}

    def __getstate__(self) -> tuple[list[TableSpec], list[str], GroupEnv, str | None]:
        return self.tables, self.excludes, self.env, self.heartbeat  # the cache stays behind

    def __setstate__(self, state: tuple[list[TableSpec], list[str], GroupEnv, str | None]
                     ) -> None:
        self.tables, self.excludes, self.env, self.heartbeat = state
        self._cache = {}

    def is_heartbeat(self, table: str) -> bool:
        """``table`` is this Extract's heartbeat seed table."""
        return self.heartbeat is not None and is_heartbeat(table) and \
            match_table(self.heartbeat, table)

    def rule(self, table: str) -> TableRule | None:
        """The rule for ``table`` (``schema.table``), ``None`` if it is not captured."""
        try:
            return self._cache[table]
        except KeyError:
            pass
        found: TableRule | None = None
        if self.is_heartbeat(table):
            found = TableRule(TableSpec(name=table))
        elif not any(match_table(x, table) for x in self.excludes):
            exact = [s for s in self.tables if not any(p.has_wildcard for p in
                                                       parse_name(s.name))
                     and match_table(s.name, table)]
            wild = [s for s in self.tables if match_table(s.name, table)]
            spec = next(iter(exact or wild), None)
            found = TableRule(spec) if spec is not None else None
        self._cache[table] = found
        return found

    def apply(self, change: Change, table: TableDef | None, csn: int, xid: str,
              commit_time: int, index: int, count: int) -> Change | None:
        """The change as the trail gets it, or ``None`` if this Extract does not take it."""
        rule = self.rule(change.table)
        if rule is None:
            return None
        spec = rule.spec
        if self.is_heartbeat(change.table):
            return change if stamp_hop(change, table, "EXTRACT", self.env.group) else None
        if change.op is OpType.TRUNCATE and not spec.get_truncates:
            return None
        if table is not None:
            keep = rule.keep_columns(table)
            if keep is not None:
                change.after = _trim(change.after, keep)
                change.before = _trim(change.before, keep)
        if spec.tokens:
            ctx = TokenContext(change, table, csn, xid, commit_time, index, count)
            change.tokens = {**(change.tokens or {}),
                             **{t.name: evaluate(t.expr, ctx, self.env) or ""
                                for t in spec.tokens}}
        return change
