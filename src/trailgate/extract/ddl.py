"""An Extract's DDL: marker rows in, DDL changes for the trail out, as the DDL rules say.

Both Extracts (PostgreSQL, Oracle dumps) capture the DDL trigger's marker and history rows
like any DML of their transaction; :class:`ExtractDdl` takes them out of the row stream and
gives back, for each DDL, one DDL change (IOType 160, the marker text), the new definition
of the table it changed (written right after it when the table is captured), and the report
lines (``DDLOPTIONS REPORT``; a DDL the trigger could not describe is always reported).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trailgate.capture.ddl_markers import CapturedDdl, DdlRows
from trailgate.extract.tables import TableRules
from trailgate.model import Change, OpType, TableDef
from trailgate.params.ddl_rules import DdlFilter
from trailgate.params.model import DdlRule
from trailgate.trail.ddl import ddl_object, report_line

__all__ = ["DdlOut", "ExtractDdl"]


@dataclass(slots=True)
class DdlOut:
    """One DDL for the trail: its change (None: excluded, only report lines), the
    definition to write after it, report lines."""

    change: Change | None
    define: TableDef | None = None
    notes: list[str] = field(default_factory=list)
    created: str | None = None  # a CREATE TABLE AS whose rows follow: the table it made


class ExtractDdl:
    """The DDL side of one Extract: GGSCHEMA's marker rows, the DDL rules (against the
    group's TABLE statements), and how a history text becomes a definition (``history``;
    None where the source has no history)."""

    def __init__(self, ggschema: str, rules: list[DdlRule], given: bool, tables: TableRules,
                 *, report: bool = False,
                 history: Callable[[str], TableDef | None] | None = None):
        self.rows = DdlRows(ggschema)
        self.tables = tables
        self.filter = DdlFilter(rules, lambda name: tables.rule(name) is not None, "EXTRACT",
                                given=given)
        self.report = report
        self.history = history

    def is_ddl_table(self, table: str) -> bool:
        """A marker or history table: its rows are DDL, never DML for the trail."""
        return self.rows.is_ddl_table(table)

    @property
    def table_names(self) -> frozenset[str]:
        return frozenset({self.rows.marker_table, self.rows.history_table})

    def add(self, change: Change, table: TableDef | None) -> None:
        self.rows.add(change, table)

    def pending(self) -> bool:
        return len(self.rows) > 0

    def take(self, csn: int) -> list[DdlOut]:
        """The DDLs whose rows came since the last call, those the rules take as DDL
        changes (the others only as report lines)."""
        return [out for ddl in self.rows.take() if (out := self._out(ddl, csn)) is not None]

    def _out(self, ddl: CapturedDdl, csn: int) -> DdlOut | None:
        marker = ddl.marker()
        obj = ddl_object(marker)
        decision = self.filter.decide(obj)
        seq = marker.get("C5") or "?"
        notes: list[str] = []
        if self.report:
            statement = marker.statement.strip()
            notes.append(report_line(
                "INFO", "OGG-01487",
                f"DDL found, operation [{statement} (size {len(statement)})], commit CSN "
                f"[{csn}], instance [{marker.get('C11')} ({marker.get('C10') or 1})], DDL "
                f"seqno [{seq}], marker seqno [{seq}]."))
            verdict = "included" if decision.include else "excluded"
            notes.append(report_line(
                "INFO", "OGG-10451" if decision.include else "OGG-10452",
                f"DDL operation {verdict} [{decision.rule}], optype [{marker.ddl_type}], "
                f"objtype [{marker.object_type}], objowner \"{marker.owner}\", objname "
                f"\"{marker.name}\"."))
        if not decision.include:
            return DdlOut(None, None, notes) if notes else None
        if ddl.failed:
            notes.append(report_line(
                "WARNING", "",
                f"{marker.describe()} ({marker.ddl_type} {marker.object_type} "
                f"{obj.qualified_name}): {marker.error or 'marked DDLERROR'}; written to the "
                f"trail as it is, the Replicat's DDLERROR decides"))
        if self.report:
            notes.append(report_line("INFO", "", "DDL operation written to extract trail file."))
        first = ddl.first
        change = Change(OpType.DDL, obj.qualified_name, text=ddl.record_text(),
                        io_time=first.io_time if first else 0,
                        audit_seq=first.audit_seq if first else 0,
                        audit_pos=first.audit_pos if first else 0)
        define = None
        if (self.history is not None and ddl.history and marker.object_type == "TABLE"
                and marker.ddl_type != "DROP"):
            table = self.history(ddl.history)
            if table is not None and self.tables.rule(table.qualified_name) is not None:
                define = table
        created = (obj.qualified_name if marker.rows_follow and marker.ddl_type == "CREATE"
                   else None)
        return DdlOut(change, define, notes, created)
