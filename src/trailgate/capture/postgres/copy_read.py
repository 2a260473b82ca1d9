"""Reading one range of a source table inside the load's snapshot, with ``COPY … TO STDOUT``.

Every reader imports the same exported snapshot (``SET TRANSACTION SNAPSHOT`` as the first
statement of a REPEATABLE READ transaction), so all ranges of all tables are read at one
cut.  Two forms: the raw blocks of a binary COPY (passed straight to a PostgreSQL target's
``COPY FROM``, never parsed here), and Arrow record batches, parsed from a CSV COPY by
Arrow's C++ reader in bounded blocks — memory does not grow with the table.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.pq as pq
import pyarrow as pa
import pyarrow.csv as pacsv

from trailgate.capture.postgres.pgoutput import quote_ident
from trailgate.capture.postgres.ranges import KeyRange
from trailgate.capture.postgres.types import SESSION_SETTINGS
from trailgate.db.connect import connect, describe
from trailgate.errors import SourceError
from trailgate.trail._accel import load_optional

__all__ = ["CHUNK_BYTES", "CSV_BLOCK", "ReadColumn", "arrow_batches", "copy_in", "copy_out",
           "copy_through", "open_snapshot", "pump_available", "range_select"]

#: Bytes of CSV Arrow parses at a time (one record batch each).
CSV_BLOCK = 4 << 20
#: Bytes of COPY data gathered before they are handed on (the server sends a row a message).
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class ReadColumn:
    """A column read from the source and the name it goes under: ``source_type`` and
    ``target_type`` are ``format_type`` spellings (the target's: PostgreSQL's, or the
    spelling of a Delta or Parquet column's type)."""

    source: str
    source_type: str
    target: str
    target_type: str


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


_pump = load_optional("trailgate.capture.postgres._copypump")


@functools.lru_cache(maxsize=1)
def _libpq() -> tuple[int, int, int] | None:
    """The addresses of PQgetCopyData, PQputCopyData and PQfreemem in the libpq psycopg
    loaded (the C pump calls them), or None when they cannot be found."""
    import ctypes

    if pq.__impl__ != "binary" and pq.__impl__ != "c":
        return None
    path = None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = line.rsplit(" ", 1)[-1].strip()
                if "/libpq" in name and ".so" in name:
                    path = name
                    break
    except OSError:
        return None
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        return tuple(ctypes.cast(getattr(lib, f), ctypes.c_void_p).value or 0  # type: ignore[return-value]
                     for f in ("PQgetCopyData", "PQputCopyData", "PQfreemem"))
    except (OSError, AttributeError):
        return None


def _c_pump() -> tuple[Any, tuple[int, int, int]] | None:
    """The C pump and libpq's functions, when both are there."""
    if _pump is None:
        return None
    fns = _libpq()
    return None if fns is None or not all(fns) else (_pump, fns)


def pump_available() -> bool:
    """Whether :func:`copy_through` moves the rows in C (outside Python's lock)."""
    return _c_pump() is not None


def _fail(pgconn: Any, result: Any, what: str) -> psycopg.Error:
    message = (result.error_message if result is not None else pgconn.error_message) or b""
    return psycopg.OperationalError(f"{what}: {message.decode('utf-8', 'replace').strip()}")


def copy_out(conn: psycopg.Connection[Any], sql: str, chunk: int = CHUNK_BYTES
             ) -> Generator[bytes, None, None]:
    """``COPY … TO STDOUT``'s data in pieces of about ``chunk`` bytes, read with libpq
    itself (psycopg's per-message machinery costs more than the data at a row a message).
    ``conn`` stays in its transaction."""
    pgconn = conn.pgconn
    with _blocking(pgconn):
        yield from _copy_out(pgconn, sql, chunk)


@contextlib.contextmanager
def _blocking(pgconn: Any) -> Iterator[None]:
    """libpq in blocking mode for the COPY (psycopg keeps it non-blocking)."""
    before = pgconn.nonblocking
    pgconn.nonblocking = 0
    try:
        yield
    finally:
        pgconn.nonblocking = before


def _copy_out(pgconn: Any, sql: str, chunk: int) -> Iterator[bytes]:
    result = pgconn.exec_(sql.encode())
    if result.status != pq.ExecStatus.COPY_OUT:
        raise _fail(pgconn, result, "COPY TO failed")
    c = _c_pump()
    if c is not None:
        module, (get, _, free) = c
        while True:
            try:
                data = module.gather(pgconn.pgconn_ptr, get, free, chunk)
            except RuntimeError:
                raise _fail(pgconn, None, "COPY TO failed") from None
            if data:
                yield data
            if len(data) < chunk:
                break
    else:
        parts: list[Any] = []
        size = 0
        get_data = pgconn.get_copy_data
        while True:
            n, piece = get_data(0)
            if n < 0:
                break
            parts.append(piece)
            size += n
            if size >= chunk:
                yield b"".join(parts)
                parts, size = [], 0
        if parts:
            yield b"".join(parts)
    result = pgconn.get_result()
    while pgconn.get_result() is not None:
        pass
    if result is None or result.status != pq.ExecStatus.COMMAND_OK:
        raise _fail(pgconn, result, "COPY TO failed")


def copy_through(src: psycopg.Connection[Any], select_sql: str, dst: psycopg.Connection[Any],
                 insert_sql: str, progress: Any = None) -> int | None:
    """``COPY … TO STDOUT`` on ``src`` straight into ``COPY … FROM STDIN`` on ``dst``, in
    C, libpq to libpq (the rows never become Python objects); the rows copied.  None when
    the C pump is not there (the caller then uses :func:`copy_out` and :func:`copy_in`).
    ``progress(bytes)`` is called every :data:`CHUNK_BYTES` or so."""
    c = _c_pump()
    if c is None:
        return None
    module, (get, put, free) = c
    sp, dp = src.pgconn, dst.pgconn
    with _blocking(sp), _blocking(dp):
        result = sp.exec_(select_sql.encode())
        if result.status != pq.ExecStatus.COPY_OUT:
            raise _fail(sp, result, "COPY TO failed")
        result = dp.exec_(insert_sql.encode())
        if result.status != pq.ExecStatus.COPY_IN:
            error = _fail(dp, result, "COPY FROM failed")
            while sp.get_result() is not None:  # the source's COPY is dropped with it
                pass
            raise error
        moved = 0
        try:
            while True:
                try:
                    # pgconn_ptr: the libpq pointer, in psycopg's C and ctypes PGconn alike
                    n, finished = module.pump(sp.pgconn_ptr,  # type: ignore[attr-defined]
                                              dp.pgconn_ptr,  # type: ignore[attr-defined]
                                              get, put, free, CHUNK_BYTES * 8)
                except RuntimeError as exc:
                    who = sp if "reading" in str(exc) else dp
                    raise _fail(who, None, str(exc)) from None
                moved += n
                if progress is not None:
                    progress(moved)
                if finished:
                    break
            ended = sp.get_result()
            while sp.get_result() is not None:
                pass
            if ended is None or ended.status != pq.ExecStatus.COMMAND_OK:
                raise _fail(sp, ended, "COPY TO failed")
        except BaseException as exc:
            dp.put_copy_end(str(exc)[:200].encode() or b"aborted")
            while dp.get_result() is not None:
                pass
            raise
        dp.put_copy_end(None)
        ended = dp.get_result()
        while dp.get_result() is not None:
            pass
        if ended is None or ended.status != pq.ExecStatus.COMMAND_OK:
            raise _fail(dp, ended, "COPY FROM failed")
        status = (ended.command_status or b"").split()
        return int(status[-1]) if status and status[-1].isdigit() else 0


def copy_in(conn: psycopg.Connection[Any], sql: str, chunks: Iterator[bytes]) -> int:
    """Feed ``chunks`` to ``COPY … FROM STDIN`` (libpq itself); the rows copied.  On an
    error the COPY is ended with it and the error raised (the caller rolls back)."""
    pgconn = conn.pgconn
    with _blocking(pgconn):
        return _copy_in(pgconn, sql, chunks)


def _copy_in(pgconn: Any, sql: str, chunks: Iterator[bytes]) -> int:
    result = pgconn.exec_(sql.encode())
    if result.status != pq.ExecStatus.COPY_IN:
        raise _fail(pgconn, result, "COPY FROM failed")
    try:
        for data in chunks:
            if pgconn.put_copy_data(data) != 1:
                raise _fail(pgconn, None, "COPY FROM failed")
    except BaseException as exc:
        pgconn.put_copy_end(str(exc)[:200].encode() or b"aborted")
        while pgconn.get_result() is not None:
            pass
        raise
    pgconn.put_copy_end(None)
    result = pgconn.get_result()
    while pgconn.get_result() is not None:
        pass
    if result is None or result.status != pq.ExecStatus.COMMAND_OK:
        raise _fail(pgconn, result, "COPY FROM failed")
    status = (result.command_status or b"").split()
    return int(status[-1]) if status and status[-1].isdigit() else 0


class _CopyReader(io.RawIOBase):
    """A COPY TO STDOUT as a file Arrow's CSV reader pulls from.  The server sends a
    message per row: a read gathers them until the caller's buffer is full (Arrow makes a
    record batch per read, and one per row would be slow)."""

    def __init__(self, blocks: Iterator[Any], count: list[int]):
        self._next = iter(blocks).__next__
        self._buf = memoryview(b"")
        self._count = count
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        out = memoryview(b).cast("B")
        want = len(out)
        if len(self._buf) < want and not self._done:
            parts: list[Any] = [self._buf] if self._buf else []
            have = len(self._buf)
            nxt = self._next
            try:
                while have < want:
                    block = nxt()
                    parts.append(block)
                    have += len(block)
            except StopIteration:
                self._done = True
            self._count[0] += have - len(self._buf)
            self._buf = memoryview(b"".join(parts))
        take = min(want, len(self._buf))
        out[:take] = self._buf[:take]
        self._buf = self._buf[take:]
        return take


def _csv_expr(col: ReadColumn, arrow_type: pa.DataType) -> str:
    name = quote_ident(col.source)
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
    with contextlib.closing(copy_out(conn, sql)) as chunks:
        reader = pacsv.open_csv(
            _CopyReader(chunks, count),
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
