"""The driver's side of a load's target: check it, prepare it, and ask it what is done.

Whether a range is loaded is decided by the target itself — a row of
``trailgate.load_ranges`` committed with the range's rows (PostgreSQL), the range's
application transaction in the Delta log, the range's file in place (Parquet, trail) —
so :meth:`SinkDriver.refresh` makes the manifest agree with it at every start and end.
A table split by ctid that a crash left partly loaded is emptied and reloaded whole at
the next generation (its ranges are only valid inside one snapshot).
"""

from __future__ import annotations

from typing import Any

from trailgate.apply.table_map import Destination, check_columns
from trailgate.capture.postgres.catalog import SourceTable
from trailgate.capture.postgres.copy_read import ReadColumn
from trailgate.db.connect import connect, describe
from trailgate.errors import ConfigError
from trailgate.load.config import LoadConfig
from trailgate.load.job import LoadTable
from trailgate.load.manifest import Manifest, TableState
from trailgate.load.targets import create_delta_table, create_pg_table, pg_target_rows
from trailgate.trail.naming import TrailName

__all__ = ["SinkDriver"]


class SinkDriver:
    """Target operations of one load run (module docstring)."""

    def __init__(self, cfg: LoadConfig):
        self.cfg = cfg
        self.kind = cfg.sink_kind
        self.location = cfg.sink_location
        self._tables: dict[int, tuple[SourceTable, Destination, list[ReadColumn]]] = {}
        self._manifest: Manifest | None = None

    # -- preparing ------------------------------------------------------------------------
    def prepare(self, tables: list[SourceTable], dests: list[Destination],
                manifest: Manifest, report: Any) -> None:
        """Check or create every target, learn what is done, reset half-done ctid tables."""
        self._manifest = manifest
        if self.kind == "POSTGRES":
            self._prepare_pg(tables, dests, manifest, report)
        elif self.kind == "DELTA":
            self._prepare_delta(tables, dests, manifest, report)
        else:
            for state, table, dest in zip(manifest.tables, tables, dests, strict=True):
                cols = [ReadColumn(c.name, c.type_name, c.name, c.type_name)
                        for c in table.read_columns]
                self._tables[state.number] = (table, dest, cols)
            if self.kind == "TRAIL":
                self._check_trail(manifest)
        self.refresh(manifest)
        self._reset_partial(manifest, report)

    def _prepare_pg(self, tables: list[SourceTable], dests: list[Destination],
                    manifest: Manifest, report: Any) -> None:
        from trailgate.apply.postgres import PgCatalog
        from trailgate.load.pg_sink import done_ranges, ensure_progress_table

        where = f"PostgreSQL {describe(self.location)}"
        with connect(self.location, application_name=f"trailgate load {self.cfg.group}"
                     ) as conn:
            ensure_progress_table(conn)
            catalog = PgCatalog(conn, self.location)
            for state, table, dest in zip(manifest.tables, tables, dests, strict=True):
                target = catalog.describe(dest.schema, dest.name)
                if target is None:
                    if not self.cfg.params.create_targets:
                        raise ConfigError(
                            f"target table {dest.schema}.{dest.name} (for "
                            f"{table.qualified_name}) does not exist in {where}: create it, "
                            f"or add CREATETARGETS to the load's parameter file to create it "
                            f"from the source's columns, types, NOT NULL and key",
                            path=self.cfg.params.path)
                    cols = check_columns(table, dest, None, where)
                    ddl = create_pg_table(conn, table, dest, cols)
                    report.line(f"Created target:   {dest.schema}.{dest.name} "
                                f"({' '.join(ddl.split())[:200]})")
                    target = catalog.describe(dest.schema, dest.name)
                cols = check_columns(table, dest, target, where)
                self._tables[state.number] = (table, dest, cols)
                loaded = any(done_ranges(conn, self.cfg.group, state.number, g)
                             for g in range(state.generation + 1))
                if not loaded and not any(r.done for r in state.ranges) and \
                        pg_target_rows(conn, dest.schema, dest.name):
                    raise ConfigError(
                        f"target table {dest.schema}.{dest.name} in {where} already holds "
                        f"rows: the initial load adds every row of {table.qualified_name}, "
                        f"so it must start empty (TRUNCATE it), or leave the table out of "
                        f"the load", path=self.cfg.params.path)

    def _prepare_delta(self, tables: list[SourceTable], dests: list[Destination],
                       manifest: Manifest, report: Any) -> None:
        from trailgate.apply.delta import DeltaCatalog

        catalog = DeltaCatalog(self.location)
        where = catalog.where()
        for state, table, dest in zip(manifest.tables, tables, dests, strict=True):
            target = catalog.describe(dest.schema, dest.name)
            if target is None:
                cols = check_columns(table, dest, None, where)
                create_delta_table(catalog.path(dest.schema, dest.name), table, cols)
                report.line(f"Created target:   Delta table "
                            f"{catalog.path(dest.schema, dest.name)}")
                target = catalog.describe(dest.schema, dest.name)
            cols = check_columns(table, dest, target, where)
            self._tables[state.number] = (table, dest, cols)
            dt = catalog.open(dest.schema, dest.name)
            if not any(r.done for r in state.ranges) and state.generation == 0 and \
                    dt is not None and not self._delta_done(state) and \
                    dt.to_pyarrow_dataset().count_rows() > 0:
                raise ConfigError(
                    f"Delta table {catalog.path(dest.schema, dest.name)} already holds rows: "
                    f"the initial load adds every row of {table.qualified_name}, so it must "
                    f"start empty (remove the table, or leave it out of the load)",
                    path=self.cfg.params.path)

    def _check_trail(self, manifest: Manifest) -> None:
        name = TrailName(self.location)
        ours = set(self.seqnos().values())
        foreign = [s for s in name.sequence_numbers() if s not in ours]
        if foreign:
            raise ConfigError(
                f"EXTFILE {self.cfg.trail_label} already has file(s) the load did not write "
                f"({name.file(foreign[0])}): remove them, or write the load to another trail",
                path=self.cfg.params.path)

    # -- what tasks get --------------------------------------------------------------------
    def load_table(self, state: TableState) -> LoadTable:
        table, dest, cols = self._tables[state.number]
        tdef = table.table_def()
        return LoadTable(state.number, table.schema, table.name, dest.schema, dest.name,
                         tuple(cols), state.key_column, tdef, state.generation)

    def seqnos(self) -> dict[tuple[int, int], int]:
        """Trail output: each range's file sequence number, in table and range order."""
        if self.kind != "TRAIL" or self._manifest is None:
            return {}
        out: dict[tuple[int, int], int] = {}
        for t in self._manifest.tables:
            for r in t.ranges:
                out[(t.number, r.range.index)] = len(out)
        return out

    # -- done or not -----------------------------------------------------------------------
    def _done(self, state: TableState) -> dict[int, tuple[int | None, int]]:
        """index → (rows or None when unknown, cut) of the ranges the target holds."""
        lt = self.load_table(state)
        if self.kind == "POSTGRES":
            from trailgate.load.pg_sink import done_ranges

            with connect(self.location) as conn:
                return {i: (n, c) for i, (n, c) in done_ranges(
                    conn, self.cfg.group, state.number, state.generation).items()}
        if self.kind == "DELTA":
            return {i: (None, c) for i, c in self._delta_done(state).items()}
        if self.kind == "PARQUET":
            from trailgate.load.lake_sink import parquet_done

            return {i: (n, c) for i, (n, c) in parquet_done(self.location, lt).items()}
        from trailgate.load.trail_sink import trail_done

        seqnos = {i: s for (t, i), s in self.seqnos().items() if t == state.number}
        return {i: (None, c) for i, c in trail_done(self.location, seqnos).items()}

    def _delta_done(self, state: TableState) -> dict[int, int]:
        from trailgate.load.lake_sink import delta_done

        return delta_done(self.location, self.cfg.group, self.load_table(state),
                          [r.range.index for r in state.ranges])

    def refresh(self, manifest: Manifest) -> None:
        """Mark done what the target holds (with its rows and cut when the target knows)."""
        for state in manifest.tables:
            done = self._done(state)
            for r in state.ranges:
                found = done.get(r.range.index)
                if found is None:
                    if r.done and state.cleared:
                        r.done = False  # the target does not have it (emptied by hand?)
                    continue
                rows, cut = found
                r.done = True
                if rows is not None:
                    r.rows = rows
                if cut:
                    r.cut = cut

    def _reset_partial(self, manifest: Manifest, report: Any) -> None:
        """Empty and reload, at the next generation, a ctid table a crash left half done."""
        for state in manifest.tables:
            partial = (not state.cleared) or (
                state.split != "key" and any(r.done for r in state.ranges)
                and not state.complete)
            if not partial:
                continue
            if state.cleared:
                state.generation += 1
                state.cleared = False
                for r in state.ranges:
                    r.done, r.rows, r.cut = False, 0, None
                assert self._manifest is not None
                from trailgate.home import Home
                from trailgate.load.manifest import manifest_path

                manifest.save(manifest_path(Home(self.cfg.home).dirchk, self.cfg.group))
            self._clear(state)
            state.cleared = True
            report.line(f"Reloading:        {state.source} whole (split by ctid, which is "
                        f"valid only in one snapshot): generation {state.generation}")

    def _clear(self, state: TableState) -> None:
        _, dest, _ = self._tables[state.number]
        lt = self.load_table(state)
        if self.kind == "POSTGRES":
            from trailgate.load.pg_sink import clear_table

            with connect(self.location) as conn:
                clear_table(conn, self.cfg.group, state.number, lt.target_sql)
        elif self.kind == "DELTA":
            from trailgate.apply.delta import DeltaCatalog

            dt = DeltaCatalog(self.location).open(dest.schema, dest.name)
            if dt is not None:
                dt.delete()
        elif self.kind == "PARQUET":
            from trailgate.load.lake_sink import clear_parquet

            clear_parquet(self.location, lt)
        else:
            name = TrailName(self.location)
            for (t, _i), s in self.seqnos().items():
                if t == state.number:
                    name.file(s).unlink(missing_ok=True)
