"""Reading one side of a compare: a range's hash, its rows' hashes, chosen rows' values.

Equal rows must give equal hashes on both sides, so a pair is read one way: PostgreSQL to
PostgreSQL with one SQL aggregate per range in each database (same session settings, target
columns cast to the source's types); PostgreSQL to Delta as Arrow, each value turned into
one canonical string by the same code.  Row identity is the key's text (the whole row
without a key); NULL has its own marker.  docs/instantiation.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trailgate.capture.postgres.copy_read import ReadColumn, arrow_batches, range_select
from trailgate.capture.postgres.pgoutput import quote_ident
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.compare.spec import CompareTable
from trailgate.db.connect import connect

__all__ = ["DeltaSide", "PgArrowSide", "PgSqlSide", "Rows", "open_side"]

#: key text -> (row hash, how many rows: more than one only for a table without a key)
Rows = dict[str, tuple[int, int]]
_MASK = (1 << 64) - 1
_NULL = "\x00NULL\x00"
_SEP = "\x1f"


class PgSqlSide:
    """One PostgreSQL side of a PostgreSQL-to-PostgreSQL compare."""

    def __init__(self, conninfo: str, role: str):
        self.role = role
        self.conn = connect(conninfo, settings=SESSION_SETTINGS,
                            application_name=f"trailgate compare {role}")

    def close(self) -> None:
        self.conn.close()

    def _exprs(self, cols: list[ReadColumn]) -> list[str]:
        if self.role == "source":
            return [quote_ident(c.source) for c in cols]
        return [quote_ident(c.target) if c.target_type == c.source_type
                else f"{quote_ident(c.target)}::{c.source_type}" for c in cols]

    def _table(self, t: CompareTable) -> str:
        return t.source_sql if self.role == "source" else t.target_sql

    def _key_column(self, t: CompareTable) -> str | None:
        if t.key_column is None or self.role == "source":
            return t.key_column
        return next(c.target for c in t.columns if c.source == t.key_column)

    def _select(self, t: CompareTable, rng: KeyRange, exprs: list[str]) -> str:
        return range_select(self._table(t), self._key_column(t), rng, exprs)

    def range_hash(self, t: CompareTable, rng: KeyRange) -> tuple[int, int]:
        row = f"hashtextextended(ROW({', '.join(self._exprs(list(t.columns)))})::text, 0)"
        select = self._select(t, rng, [row + " AS h"])
        sql = f"SELECT count(*), coalesce(sum(h), 0) FROM ({select}) s"
        count, total = self.conn.execute(sql).fetchone()  # type: ignore[misc]
        return int(count), int(total) & _MASK

    def range_rows(self, t: CompareTable, rng: KeyRange) -> Rows:
        key = f"ROW({', '.join(self._exprs(t.key_columns()))})::text"
        row = f"hashtextextended(ROW({', '.join(self._exprs(list(t.columns)))})::text, 0)"
        out: Rows = {}
        with self.conn.cursor() as cur:
            for k, h in cur.stream(self._select(t, rng, [key, row]), size=20_000):
                found = out.get(k)
                out[k] = (int(h) & _MASK, 1 if found is None else found[1] + 1)
        return out

    def values(self, t: CompareTable, rng: KeyRange, keys: list[str]
               ) -> dict[str, tuple[str | None, ...]]:
        """The rows of ``keys`` (key texts) as each column's text."""
        if not keys:
            return {}
        key = f"ROW({', '.join(self._exprs(t.key_columns()))})::text"
        cols = [f"({e})::text" for e in self._exprs(list(t.columns))]
        select = self._select(t, rng, [key, *cols])
        names = ", ".join(f"c{i}" for i in range(len(cols)))
        rows = self.conn.execute(f"SELECT * FROM ({select}) s(k, {names}) WHERE k = ANY(%s)",
                                 (keys,)).fetchall()
        return {r[0]: tuple(r[1:]) for r in rows}


def _canon(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One canonical string per value (a marker for NULL)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        out = pa.array([None if v is None else v.hex() for v in arr.to_pylist()], pa.string())
    elif pa.types.is_timestamp(t):
        out = pc.cast(pc.cast(arr, pa.timestamp("us", tz=t.tz)).cast(pa.int64()), pa.string())
    elif pa.types.is_date(t):
        out = pc.cast(pc.cast(arr, pa.date32()).cast(pa.int32()), pa.string())
    elif pa.types.is_dictionary(t):
        out = pc.cast(arr.dictionary_decode(), pa.string())
    else:
        out = pc.cast(arr, pa.string())
    return pc.fill_null(out, _NULL)


def _hash(texts: pa.Array) -> list[int]:
    import pandas as pd
    from pandas.util import hash_pandas_object

    series = pd.Series(texts.to_numpy(zero_copy_only=False), dtype=object)
    return [int(h) for h in hash_pandas_object(series, index=False).to_numpy()]


class _ArrowSide:
    """A side read as Arrow record batches of the target's column names and types."""

    role = ""

    def batches(self, t: CompareTable, rng: KeyRange) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _canon(self, t: CompareTable, batch: pa.RecordBatch
               ) -> tuple[pa.Array, pa.Array, list[pa.Array]]:
        names = [c.target for c in t.columns]
        cols = [_canon(batch.column(batch.schema.get_field_index(n))) for n in names]
        keys = [cols[names.index(c.target)] for c in t.key_columns()]
        key = pc.binary_join_element_wise(*keys, _SEP) if len(keys) > 1 else keys[0]
        row = pc.binary_join_element_wise(*cols, _SEP) if len(cols) > 1 else cols[0]
        return key, row, cols

    def range_hash(self, t: CompareTable, rng: KeyRange) -> tuple[int, int]:
        count = total = 0
        for b in self.batches(t, rng):
            _, row, _ = self._canon(t, b)
            count += b.num_rows
            total = (total + sum(_hash(row))) & _MASK
        return count, total

    def range_rows(self, t: CompareTable, rng: KeyRange) -> Rows:
        out: Rows = {}
        for b in self.batches(t, rng):
            key, row, _ = self._canon(t, b)
            for k, h in zip(key.to_pylist(), _hash(row), strict=True):
                found = out.get(k)
                out[k] = (h, 1 if found is None else found[1] + 1)
        return out

    def values(self, t: CompareTable, rng: KeyRange, keys: list[str]
               ) -> dict[str, tuple[str | None, ...]]:
        wanted = set(keys)
        out: dict[str, tuple[str | None, ...]] = {}
        for b in self.batches(t, rng):
            key, _, cols = self._canon(t, b)
            mask = pc.is_in(key, value_set=pa.array(list(wanted), pa.string()))
            if not pc.any(mask).as_py():
                continue
            picked = [c.filter(mask).to_pylist() for c in cols]
            for i, k in enumerate(key.filter(mask).to_pylist()):
                out[k] = tuple(None if col[i] == _NULL else col[i] for col in picked)
        return out


class PgArrowSide(_ArrowSide):
    """The PostgreSQL source of a PostgreSQL-to-Delta compare, read as Arrow with the Delta
    table's types (CSV COPY)."""

    role = "source"

    def __init__(self, conninfo: str, schemas: dict[int, pa.Schema]):
        self.conn = connect(conninfo, settings=SESSION_SETTINGS,
                            application_name="trailgate compare source")
        self.schemas = schemas

    def close(self) -> None:
        self.conn.close()

    def batches(self, t: CompareTable, rng: KeyRange) -> Iterator[pa.RecordBatch]:
        schema = self.schemas[t.number]
        yield from arrow_batches(self.conn, t.source_sql, t.key_column, rng, t.columns,
                                 schema)


class DeltaSide(_ArrowSide):
    """A Delta target: the table's files filtered by the range's key bounds."""

    role = "target"

    def __init__(self, root: str):
        self.root = root.rstrip("/")
        self._tables: dict[int, Any] = {}

    def schema(self, t: CompareTable) -> pa.Schema:
        dataset = self._dataset(t)
        return pa.schema([dataset.schema.field(c.target) for c in t.columns])

    def _dataset(self, t: CompareTable) -> Any:
        if t.number not in self._tables:
            from deltalake import DeltaTable

            path = f"{self.root}/{t.target_schema}/{t.target_name}"
            self._tables[t.number] = DeltaTable(path).to_pyarrow_dataset()
        return self._tables[t.number]

    def batches(self, t: CompareTable, rng: KeyRange) -> Iterator[pa.RecordBatch]:
        import pyarrow.dataset as ds

        dataset = self._dataset(t)
        filt = None
        if rng.kind == "key":
            field = ds.field(next(c.target for c in t.columns if c.source == t.key_column))
            if rng.lower is not None:
                filt = field >= rng.lower
            if rng.upper is not None:
                filt = (field < rng.upper) if filt is None else filt & (field < rng.upper)
        names = [c.target for c in t.columns]
        schema = self.schema(t)
        for b in dataset.to_batches(columns=names, filter=filt, batch_size=65_536):
            yield b if b.schema == schema else b.cast(schema)


def open_side(kind: str, location: str, role: str, schemas: dict[int, pa.Schema] | None = None
              ) -> Any:
    """The reader of one side: ``kind`` POSTGRES (SQL, or Arrow when ``schemas`` are the
    Delta target's) or DELTA."""
    if kind == "DELTA":
        return DeltaSide(location)
    if schemas is not None:
        return PgArrowSide(location, schemas)
    return PgSqlSide(location, role)

