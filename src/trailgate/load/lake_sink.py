"""A range loaded into a Delta table or a Parquet change log, exactly once.

Arrow batches stream into the writer, so a task holds a few batches whatever the range's
size.  Delta: one append per range with an application transaction naming the range (its
version is the cut), so a loaded range is found in the log.  Parquet: the change log gets
the load as batch -1, one file per range written under a hidden name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa

from trailgate.apply.arrow_types import column_arrow_type
from trailgate.apply.changelog import change_log_schema
from trailgate.capture.postgres.copy_read import arrow_batches, open_snapshot
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.checkpoint import fsync_dir
from trailgate.errors import TargetError
from trailgate.load.job import LoadJob, LoadTable
from trailgate.model import unix_micros_from_julian

__all__ = ["LOAD_BATCH", "app_id", "delta_done", "delta_path", "load_delta_range",
           "load_parquet_range", "parquet_dir", "parquet_done", "source_schema"]

#: The change-log batch id of an initial load.
LOAD_BATCH = -1


def delta_path(root: str, table: LoadTable) -> str:
    return f"{root.rstrip('/')}/{table.target_schema}/{table.target_name}"


def parquet_dir(root: str, table: LoadTable) -> Path:
    return Path(root, table.target_schema, table.target_name, f"batch_id={LOAD_BATCH}")


def app_id(group: str, table: LoadTable, index: int) -> str:
    return f"trailgate-load:{group}:{table.number}:{table.generation}:{index}"


def source_schema(table: LoadTable) -> pa.Schema:
    """The Arrow schema of a table's rows as the trail types them (change logs, Delta
    tables the load creates)."""
    return pa.schema([pa.field(c.name, column_arrow_type(c), c.nullable)
                      for c in table.table_def.columns])


def delta_done(root: str, group: str, table: LoadTable, indexes: list[int]
               ) -> dict[int, int]:
    """Ranges of ``indexes`` whose commit is in the table's log: index → cut."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        dt = DeltaTable(delta_path(root, table))
    except TableNotFoundError:
        return {}
    out = {}
    for i in indexes:
        version = dt.transaction_version(app_id(group, table, i))
        if version is not None:
            out[i] = int(version)
    return out


def _fail(table: LoadTable, rng: KeyRange, exc: Exception, where: str) -> TargetError:
    return TargetError(f"loading {table.source} into {where} (range {rng.index}, "
                       f"{rng.predicate(table.key_column) or 'whole table'}) failed: {exc}; "
                       f"nothing of this range was committed")


def _full_batches(batches: Iterator[pa.RecordBatch], full: pa.Schema, loaded: pa.Schema
                  ) -> Iterator[pa.RecordBatch]:
    """Batches of the table's whole schema: columns the load does not fill are NULL."""
    if full.names == loaded.names:
        yield from batches
        return
    for b in batches:
        cols = [b.column(loaded.get_field_index(f.name)) if f.name in loaded.names
                else pa.nulls(b.num_rows, f.type) for f in full]
        yield pa.RecordBatch.from_arrays(cols, schema=full)


def load_delta_range(job: LoadJob, table: LoadTable, rng: KeyRange,
                     progress: Callable[[int], None]) -> int | None:
    """Append one range to its Delta table; rows, or None when it was loaded before."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    path = delta_path(job.sink.location, table)
    dt = DeltaTable(path)
    app = app_id(job.group, table, rng.index)
    if dt.transaction_version(app) is not None:
        return None
    full = pa.schema(dt.schema())
    loaded = pa.schema([full.field(c.target) for c in table.columns])
    src = open_snapshot(job.conninfo, job.snapshot, table.source)
    count = [0]
    rows = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for b in arrow_batches(src, table.source_sql, table.key_column, rng,
                               table.columns, loaded, count):
            rows[0] += b.num_rows
            progress(count[0])
            yield b

    try:
        reader = pa.RecordBatchReader.from_batches(full, _full_batches(batches(), full,
                                                                         loaded))
        write_deltalake(dt, reader, mode="append",
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction(app, job.cut)],
                            max_commit_retries=100))
    except (pa.ArrowException, OSError, ValueError, psycopg.Error) as exc:
        raise _fail(table, rng, exc, f"Delta table {path}") from None
    except Exception as exc:
        if type(exc).__module__.startswith("deltalake"):
            raise _fail(table, rng, exc, f"Delta table {path}") from None
        raise
    finally:
        src.close()
    return rows[0]


def parquet_done(root: str, table: LoadTable) -> dict[int, tuple[int, int]]:
    """Ranges of the table's current generation with their file: index → (rows, cut)."""
    import pyarrow.parquet as pq

    directory = parquet_dir(root, table)
    out: dict[int, tuple[int, int]] = {}
    if not directory.is_dir():
        return out
    suffix = f"-g{table.generation}.parquet"
    for entry in directory.iterdir():
        name = entry.name
        if name.startswith("part-load-") and name.endswith(suffix):
            index = int(name[len("part-load-"):-len(suffix)])
            meta = pq.read_metadata(entry)
            cut = int((meta.metadata or {}).get(b"trailgate.cut", b"0"))
            out[index] = (meta.num_rows, cut)
    return out


def clear_parquet(root: str, table: LoadTable) -> None:
    """Remove the table's load files (a reload at a new generation replaces them)."""
    directory = parquet_dir(root, table)
    if directory.is_dir():
        for entry in directory.iterdir():
            if entry.name.startswith(("part-load-", ".part-load-")):
                entry.unlink()


def _change_rows(batch: pa.RecordBatch, table: LoadTable, schema: pa.Schema,
                 job: LoadJob, seen: int) -> pa.RecordBatch:
    n = batch.num_rows
    after = pa.StructArray.from_arrays(list(batch.columns),
                                       fields=list(schema.field("after").type))
    names = [c.name for c in table.table_def.columns]
    micros = unix_micros_from_julian(job.commit_time) if job.commit_time else None
    ts = pa.array([micros] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    columns: dict[str, Any] = {
        "op": pa.array(["INSERT"] * n), "io_type": pa.array([5] * n, pa.int32()),
        "table_name": pa.array([table.table_def.qualified_name] * n),
        "csn": pa.array([job.cut] * n, pa.int64()),
        "xid": pa.array([f"load.{table.number}.{seen + i}" for i in range(n)]),
        "commit_time": ts, "io_time": ts,
        "seqno": pa.nulls(n, pa.int64()), "rba": pa.nulls(n, pa.int64()),
        "trans_ind": pa.array([3] * n, pa.int8()), "audit_seq": pa.array([0] * n, pa.int64()),
        "audit_pos": pa.array([0] * n, pa.int64()), "rowid": pa.nulls(n, pa.string()),
        "tokens": pa.nulls(n, schema.field("tokens").type),
        "before": pa.nulls(n, schema.field("before").type),
        "before_columns": pa.nulls(n, pa.list_(pa.string())),
        "after": after, "after_columns": pa.array([names] * n, pa.list_(pa.string())),
    }
    return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def load_parquet_range(job: LoadJob, table: LoadTable, rng: KeyRange,
                       progress: Callable[[int], None]) -> int | None:
    """Write one range into the table's change log; rows, or None when its file exists."""
    import pyarrow.parquet as pq

    directory = parquet_dir(job.sink.location, table)
    final = directory / f"part-load-{rng.index}-g{table.generation}.parquet"
    if final.exists():
        return None
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{final.name}.tmp"
    schema = change_log_schema(table.table_def).with_metadata(
        {"trailgate.cut": str(job.cut), "trailgate.load": job.group})
    rows_schema = source_schema(table)
    src = open_snapshot(job.conninfo, job.snapshot, table.source)
    count, rows = [0], 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for b in arrow_batches(src, table.source_sql, table.key_column, rng,
                                   table.columns, rows_schema, count):
                writer.write_batch(_change_rows(b, table, schema, job, rows))
                rows += b.num_rows
                progress(count[0])
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        fsync_dir(directory)
    except (pa.ArrowException, OSError, psycopg.Error) as exc:
        tmp.unlink(missing_ok=True)
        raise _fail(table, rng, exc, f"Parquet change log {directory}") from None
    finally:
        src.close()
    return rows
