"""Reading one range of a source table inside the load's snapshot, with ``COPY … TO STDOUT``.

Every reader imports the same exported snapshot (``SET TRANSACTION SNAPSHOT`` as the first
statement of a REPEATABLE READ transaction), so all ranges of all tables are read at one
cut.  Two forms: the raw blocks of a binary COPY (passed straight to a PostgreSQL target's
``COPY FROM``, never parsed here), and Arrow record batches, parsed from a CSV COPY by
Arrow's C++ reader in bounded blocks — memory does not grow with the table.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.csv as pacsv

from trailgate.capture.postgres.ranges import KeyRange
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.db.connect import connect, describe
from trailgate.errors import SourceError

__all__ = ["CSV_BLOCK", "ReadColumn", "arrow_batches", "open_snapshot", "range_select"]

#: Bytes of CSV Arrow parses at a time (one record batch each).
CSV_BLOCK = 4 << 20


@dataclass(frozen=True, slots=True)
class ReadColumn:
    """A column read from the source and the name it goes under: ``source_type`` and
    ``target_type`` are ``format_type`` spellings (the target's: PostgreSQL's, or the
    spelling of a Delta or Parquet column's type)."""

    source: str
    source_type: str
    target: str
    target_type: str


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open_snapshot(conninfo: str, snapshot: str | None, what: str) -> psycopg.Connection[Any]:
    """A source connection in a REPEATABLE READ, READ ONLY transaction that sees
    ``snapshot`` (the load's cut); without one, its own snapshot."""
    conn = connect(conninfo, autocommit=True, settings=SESSION_SETTINGS,
                   application_name=f"trailgate load {what}")
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        if snapshot is not None:
            conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
    except psycopg.Error as exc:
        conn.close()
        detail = exc.diag.message_primary or str(exc)
        if snapshot is not None and "snapshot" in detail.lower():
            raise SourceError(f"the load's snapshot {snapshot} is no longer there in "
                              f"{describe(conninfo)} ({detail}): the process that holds it "
                              f"ended; start the load again (it redoes only unfinished "
                              f"ranges, at a new cut)") from None
        raise SourceError(f"cannot read {what} in {describe(conninfo)}: {detail}") from None
    return conn


def range_select(table_sql: str, key_column: str | None, rng: KeyRange,
                 exprs: list[str]) -> str:
    """``SELECT exprs FROM table WHERE range`` for a COPY."""
    where = rng.predicate(key_column)
    return (f"SELECT {', '.join(exprs)} FROM {table_sql}"
            + (f" WHERE {where}" if where else ""))


class _CopyReader(io.RawIOBase):
    """A COPY TO STDOUT as a file Arrow's CSV reader pulls from."""

    def __init__(self, blocks: Iterator[Any], count: list[int]):
        self._blocks = blocks
        self._buf = b""
        self._count = count

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                block = next(self._blocks)
            except StopIteration:
                return 0
            self._buf = bytes(block)
            self._count[0] += len(self._buf)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _csv_expr(col: ReadColumn, arrow_type: pa.DataType) -> str:
    name = _ident(col.source)
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return f"encode({name}, 'hex')"
    if pa.types.is_boolean(arrow_type) and col.source_type != "boolean":
        return f"({name})::boolean"
    return name


def arrow_batches(conn: psycopg.Connection[Any], table_sql: str, key_column: str | None,
                  rng: KeyRange, columns: Sequence[ReadColumn], schema: pa.Schema,
                  progress: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    """The range's rows as record batches of ``schema`` (target column names and types,
    in ``columns`` order), parsed from a CSV COPY.  ``progress[0]`` counts bytes."""
    types = [schema.field(c.target).type for c in columns]
    exprs = [_csv_expr(c, t) for c, t in zip(columns, types, strict=True)]
    sql = f"COPY ({range_select(table_sql, key_column, rng, exprs)}) TO STDOUT (FORMAT csv)"
    names = [c.target for c in columns]
    parse_types = {n: (pa.string() if pa.types.is_binary(t) or pa.types.is_large_binary(t)
                       else t) for n, t in zip(names, types, strict=True)}
    binary = [i for i, t in enumerate(types) if pa.types.is_binary(t)
              or pa.types.is_large_binary(t)]
    count = progress if progress is not None else [0]
    with conn.cursor() as cur, cur.copy(sql) as copy:
        reader = pacsv.open_csv(
            _CopyReader(iter(copy), count),
            read_options=pacsv.ReadOptions(column_names=names, block_size=CSV_BLOCK),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types=parse_types, null_values=[""], strings_can_be_null=True,
                quoted_strings_can_be_null=False, true_values=["t"], false_values=["f"]))
        for batch in reader:
            if binary:
                arrays = list(batch.columns)
                for i in binary:
                    arrays[i] = pa.array([None if v is None else bytes.fromhex(v)
                                          for v in arrays[i].to_pylist()], types[i])
                batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
            elif batch.schema != schema:
                batch = batch.cast(schema)
            yield batch
