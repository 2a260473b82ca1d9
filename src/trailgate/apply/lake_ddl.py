"""DDL records applied to Delta tables and Parquet change logs: schema evolution.

A lake target cannot run SQL, so a DDL is applied through what it changed: the definition
the trail carries after the DDL record, against the table's schema.  Columns are added
(nullable), dropped (earlier versions keep them), renamed or retyped; CREATE, DROP and
RENAME of a table follow ``DDLOPTIONS LAKECREATE|LAKEDROP|LAKERENAME``.  Every step looks at
the table first, so a replayed batch does nothing twice.  docs/ddl.md.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

from trailgate.apply.arrow_types import column_arrow_type, converter
from trailgate.apply.ddl_errors import DdlFailure, ddlerror_rule, respond, retrying
from trailgate.apply.ddl_names import find_names
from trailgate.apply.discard import DiscardWriter
from trailgate.apply.lake_errors import LAKE_FAILURES, lake_sqlstate
from trailgate.apply.parquet import table_directory
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.checkpoint import fsync_dir
from trailgate.model import DdlObject
from trailgate.params.ddl_rules import DdlFilter
from trailgate.params.model import DdlErrorRule, ReplicatParams
from trailgate.params.names import find_map, parse_name, resolve_map
from trailgate.trail.ddl import DdlMarker, read_ddl, report_line

__all__ = ["LakeDdl"]

log = logging.getLogger("trailgate.ddl")


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    strings = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    if any(f(a) for f in strings) and any(f(b) for f in strings):
        return True
    return bool(a.equals(b))



def _move(src: Path, dst: Path) -> bool:
    """Rename a table's directory (atomic on one file system); False when there is nothing
    to move (a replay: it moved already)."""
    if not src.exists() or dst.exists():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.rename(src, dst)
    fsync_dir(dst.parent)
    fsync_dir(src.parent)
    return True


def _report(level: str, text: str) -> None:
    log.info(report_line(level, "", text))


class LakeDdl:
    """The DDL side of a Delta (``kind`` DELTA) or Parquet (PARQUET) Replicat rooted at
    ``root``."""

    def __init__(self, params: ReplicatParams, kind: str, root: str, group: str,
                 storage_options: dict[str, str] | None = None,
                 discard: DiscardWriter | None = None):
        self.params = params
        self.discard = discard  # where DDLERROR … DISCARD writes
        self.kind = kind
        self.root = str(root).rstrip("/")
        self.group = group
        self.storage_options = storage_options
        self.options = params.ddl_options
        self.filter = DdlFilter(params.ddl, lambda n: find_map(params.maps, n,
                                                              params.map_excludes) is not None,
                                "REPLICAT", given=params.ddl_given)

    def _map(self, name: str) -> str | None:
        return resolve_map(self.params.maps, name, self.params.map_excludes)

    def _path(self, target: str) -> Path:
        return table_directory(self.root, target)

    def apply(self, tc: TrailChange, table: Any, result: ApplyResult) -> bool:
        """Apply DDL record ``tc`` (``table``: the source definition the trail gives right
        after it, or None); True when it changed a table (mappings must be made anew)."""
        # marker text that cannot be read comes with E1 saying so: DDLERROR's DEFAULT rules
        # decide, as on PostgreSQL
        record = read_ddl(tc.change.text or "")
        marker, obj = record.marker, record.obj
        decision = self.filter.decide(obj)
        if self.options.report:
            log.info(report_line("INFO", "OGG-10451" if decision.include else "OGG-10452",
                                 f"DDL operation {'included' if decision.include else 'excluded'}"
                                 f" [{decision.rule}], optype [{marker.ddl_type}], objtype "
                                 f"[{marker.object_type}], {marker.describe()}."))
        if not decision.include or (obj.object_type != "TABLE" and not marker.error):
            return False
        target = self._map(obj.qualified_name) if obj.name else None
        if marker.error:  # no SQLSTATE: only DEFAULT rules apply, as on PostgreSQL
            self._failed(tc, marker, obj, decision.scope, "", marker.error,
                         target or obj.qualified_name or "(no object)", result)
            return False
        if target is None:
            return False
        outcome = retrying(lambda: self._table_ddl(tc, marker, obj, target, table),
                           LAKE_FAILURES,
                           lambda exc: (lake_sqlstate(exc), f"{type(exc).__name__}: {exc}"),
                           lambda code: ddlerror_rule(self.params.ddl_errors, code, obj,
                                                      decision.scope), _report)
        if isinstance(outcome, DdlFailure):
            self._failed(tc, marker, obj, decision.scope, outcome.code, outcome.message,
                         target, result, outcome.rule)
            return False
        changed = outcome
        if changed:
            result.table(target).ddl += 1
        return changed

    def _failed(self, tc: TrailChange, marker: DdlMarker, obj: DdlObject, scope: str,
                code: str, message: str, target: str, result: ApplyResult,
                rule: DdlErrorRule | None = None) -> None:
        """DDLERROR's response to a DDL that failed on this target (PgDdl's, with the
        failure's SQLSTATE from :mod:`lake_errors`)."""
        rule = rule or ddlerror_rule(self.params.ddl_errors, code, obj, scope)
        error = f"error {code} ({message})" if code else message
        text = (f"DDL error: {error} applying {marker.describe()} to {self.kind.title()} "
                f"table {target}, trail position {tc.position} (seqno {tc.position.seqno}, "
                f"RBA {tc.position.rba}), CSN {tc.csn}")
        discard = respond(rule, text, code, tc, marker.statement, target, result, _report)
        if discard is not None and self.discard is not None:
            # no target transaction holds this step: a replayed batch repeats it, and
            # the entry is written once
            self.discard.write_ddl_once(discard)

    def _table_ddl(self, tc: TrailChange, marker: DdlMarker, obj: DdlObject, target: str,
                   table: Any) -> bool:
        path = self._path(target)
        optype = marker.ddl_type
        if optype == "DROP":
            return self._drop(path, marker)
        if optype == "CREATE":
            if self.kind == "DELTA" and table is not None and \
                    self.options.lake_create == "ATDDL":
                return self._evolve(path, target, table, [], marker)
            return False
        shape = find_names(marker.statement)
        old = next((r for r in shape.names if r.role == "object"), None)
        if any(r.role == "newname" for r in shape.names) and old is not None:
            old_target = self._map(f"{marker.owner}.{old.parts[-1]}")
            if old_target is not None and old_target != target and \
                    self.options.lake_rename == "MOVE":
                moved = _move(self._path(old_target), path)
                if moved:
                    log.info(report_line("INFO", "", f"{self.kind.title()} table "
                                                     f"{old_target} renamed to {target}."))
                return moved
            return False
        if self.kind == "DELTA" and table is not None:
            return self._evolve(path, target, table, shape.renamed_columns, marker)
        return False

    def _drop(self, path: Path, marker: DdlMarker) -> bool:
        mode = self.options.lake_drop
        if mode == "KEEP" or not path.exists():
            return False
        if mode == "PURGE":
            shutil.rmtree(path)
            fsync_dir(path.parent)
            log.info(report_line("INFO", "", f"table directory {path} removed (LAKEDROP "
                                             f"PURGE)."))
            return True
        archive = Path(self.root, ".dropped", *path.parts[-2:-1],
                       f"{path.name}.{marker.get('C5') or 'x'}")
        moved = _move(path, archive)
        if moved:
            log.info(report_line("INFO", "", f"table directory {path} moved to {archive} "
                                             f"(LAKEDROP ARCHIVE)."))
        return moved

    # -- Delta schema evolution ------------------------------------------------------------
    def _keeps_history(self, source: str) -> bool:
        """True when ``source``'s MAP says ``SCD TYPE 2``: its table has validity columns."""
        spec = find_map(self.params.maps, source, self.params.map_excludes)
        return getattr(spec, "scd_type", 1) == 2

    def _evolve(self, path: Path, target: str, table: Any, renames: list[tuple[str, str]],
                marker: DdlMarker) -> bool:
        from deltalake import DeltaTable, write_deltalake
        from deltalake.exceptions import TableNotFoundError
        from deltalake.schema import Field

        desired = [(c.name, column_arrow_type(c)) for c in table.columns]
        if self._keeps_history(table.qualified_name):
            from trailgate.apply.delta_history import HISTORY_FIELDS

            desired += [(f.name, f.type) for f in HISTORY_FIELDS]  # never dropped by a DDL
        try:
            dt = DeltaTable(str(path), storage_options=self.storage_options)
        except TableNotFoundError:
            if self.options.lake_create != "ATDDL":
                return False
            name = [p.text if p.quoted else p.text.lower() for p in parse_name(target)][-1]
            DeltaTable.create(str(path), pa.schema([pa.field(n, t, True) for n, t in desired]),
                              mode="ignore", name=name,
                              description=f"replicated by trailgate group {self.group} from "
                                          f"{table.qualified_name}",
                              storage_options=self.storage_options)
            return True
        current = pa.schema(dt.schema())
        names = [f.name for f in current]
        wanted = [n for n, _ in desired]
        rename = {o: n for o, n in renames if o in names and n not in names and n in wanted}
        kept = [rename.get(n, n) for n in names]
        types = {rename.get(f.name, f.name): f.type for f in current}
        drops = [n for n in kept if n not in wanted]
        adds = [(n, t) for n, t in desired if n not in kept]
        retypes = [(n, t) for n, t in desired if n in types and not _same_type(types[n], t)]
        missing = marker.missing_values()
        if not (rename or drops or retypes or adds):
            return False
        if not (rename or drops or retypes) and not any(n in missing for n, _ in adds):
            dt.alter.add_columns([Field.from_arrow(pa.field(n, t, True)) for n, t in adds])
            log.info(report_line("INFO", "", f"Delta table {target}: column(s) "
                                             f"{', '.join(n for n, _ in adds)} added."))
            return True
        data = dt.to_pyarrow_table()
        data = data.rename_columns(kept)
        columns = []
        for name, dtype in desired:
            if name in data.column_names:
                column = data.column(name)
                if not _same_type(column.type, dtype):
                    column = column.cast(dtype)
            else:
                value = missing.get(name)
                fill = None if value is None else converter(dtype)(value)
                column = pa.array([fill] * data.num_rows, dtype)
            columns.append(column)
        rewritten = pa.table(columns, schema=pa.schema([pa.field(n, t, True)
                                                        for n, t in desired]))
        write_deltalake(dt, rewritten, mode="overwrite", schema_mode="overwrite",
                        storage_options=self.storage_options)
        log.info(report_line("INFO", "", f"Delta table {target} rewritten with its new columns "
                                         f"(renamed {sorted(rename.items())}, dropped {drops},"
                                         f" retyped {[n for n, _ in retypes]}, added "
                                         f"{[n for n, _ in adds]}): earlier versions keep the "
                                         f"old shape."))
        return True
