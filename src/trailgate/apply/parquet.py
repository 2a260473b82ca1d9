"""The Parquet change-log target: one dataset per target table, one file per batch.

Not ``writeStream.format("parquet")``: each table's log has its own schema, which one
file-sink query cannot hold.  Exactly once by naming, as the file sink does it: batch *b* of
a table is the single file ``<dir>/<schema>/<table>/batch_id=<b>/part-00000.parquet``,
written under a hidden name, fsynced and renamed, so a replay rewrites the same file and a
reader never sees a change twice or half a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trailgate.apply.changelog import change_log_rows
from trailgate.apply.records import TableCounts, TrailChange
from trailgate.checkpoint import fsync_dir
from trailgate.model import OpType, TableDef
from trailgate.params.names import parse_name, resolve_map

__all__ = ["table_directory", "write_change_logs"]


def table_directory(root: str | os.PathLike[str], target: str) -> Path:
    """``root/schema/table`` for a target name (unquoted parts fold to lower case)."""
    parts = [p.text if p.quoted else p.text.lower() for p in parse_name(target)]
    return Path(root, *parts[-2:])



def _write(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    pq.write_table(table, tmp)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_change_logs(cfg: Any, batch_id: int, changes: Sequence[TrailChange],
                      table_defs: Mapping[str, TableDef], *, part: int = 0
                      ) -> dict[str, TableCounts]:
    """Write the batch's change rows, one file per mapped table; counts per target.
    ``part``: the batch's part after its ``part``-th DDL record (its own file: a new schema
    version, which ``spark.read.option("mergeSchema", "true")`` reads with the others)."""
    params = cfg.params
    by_target: dict[str, list[TrailChange]] = {}
    sources: dict[str, str] = {}
    for tc in changes:
        if not tc.change.op.is_row_change:
            continue
        target = resolve_map(params.maps, tc.change.table, params.map_excludes)
        if target is None:
            continue
        if sources.setdefault(target, tc.change.table) != tc.change.table:
            target = f"{target}#{tc.change.table}"  # two sources into one log: keep apart
        by_target.setdefault(target, []).append(tc)
    counts: dict[str, TableCounts] = {}
    for target, group in by_target.items():
        name = target.split("#")[0]
        rows = change_log_rows(group, table_defs)
        directory = table_directory(cfg.target, name)
        suffix = "" if "#" not in target else "-" + target.split("#")[1].lower()
        _write(rows, directory / f"batch_id={batch_id}" / f"part-{part:05d}{suffix}.parquet")
        c = counts.setdefault(name, TableCounts())
        for tc in group:
            op = tc.change.op
            if op is OpType.INSERT:
                c.inserts += 1
            elif op is OpType.DELETE:
                c.deletes += 1
            elif op is OpType.TRUNCATE:
                c.truncates += 1
            else:
                c.updates += 1
    return counts
