"""trailgate's public Python API: the few entry points a program needs, in one place.

Everything here is typed, documented in docs/api.md and checked strictly by the type checker;
the modules behind it are free to change shape.  Reading and writing trails needs neither
Spark nor a database; running a group or a Spark query starts what it needs on first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trailgate.capture.oracle import DumpCapture, capture_oracle_dumps
from trailgate.errors import ConfigError, SourceError, TargetError, TrailFormatError, TrailgateError
from trailgate.home import Home
from trailgate.interchange import export_records, import_records
from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    Transaction,
)
from trailgate.trail.header import FileHeader
from trailgate.trail.reader import ReadTransaction, TrailReader, TrailRecord, read_header
from trailgate.trail.records import RawRecord, decode_record
from trailgate.trail.release import resolve_format
from trailgate.trail.writer import TrailWriter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "Change",
    "Column",
    "ColumnKind",
    "ConfigError",
    "DumpCapture",
    "FileHeader",
    "Home",
    "OpType",
    "RawRecord",
    "ReadTransaction",
    "SourceError",
    "TableDef",
    "TargetError",
    "TrailFormatError",
    "TrailPosition",
    "TrailReader",
    "TrailRecord",
    "TrailSourceOptions",
    "TrailWriter",
    "TrailgateError",
    "Transaction",
    "capture_oracle_dumps",
    "decode",
    "export_jsonl",
    "import_jsonl",
    "read_header",
    "read_transactions",
    "run_group",
    "spark_session",
    "write_transactions",
]


def read_transactions(trail: str | Path, start: TrailPosition | None = None
                      ) -> Iterator[ReadTransaction]:
    """Each complete transaction in trail ``trail`` (``dirdat/aa``: every file of it, in
    sequence order), from ``start`` (default: its first file).  A transaction a crashed
    writer left incomplete at the end is not yielded; a malformed record raises
    :class:`TrailFormatError` naming the file and RBA."""
    yield from TrailReader(trail, start=start).transactions()


def write_transactions(trail: str | Path, transactions: Iterable[Transaction],
                       tables: Mapping[str, TableDef], *, megabytes: int = 500,
                       fsync: bool = True, release: str | None = None,
                       byte_order: str | None = None) -> TrailPosition:
    """Append ``transactions`` to trail ``trail`` (a new file after its last, or its first),
    with ``tables`` the definitions of the tables they change; returns the position after
    the last one.  The file is completed (its header's last CSN and size filled in) and, by
    default, made durable before this returns.  ``release`` (``"21.1"``) writes that
    GoldenGate release's format, ``byte_order`` (``"big"``/``"little"``) overriding its
    default, as ``EXTTRAIL …, FORMAT RELEASE`` does; the default is the 11.2 format."""
    fmt = None
    if release is not None or byte_order is not None:
        try:
            fmt = resolve_format(release, byte_order)
        except ValueError as exc:
            raise ConfigError(f"write_transactions: {exc}") from None
    with TrailWriter(trail, megabytes=megabytes, fsync=fsync, format=fmt) as writer:
        for txn in transactions:
            writer.write_transaction(txn, tables)
        return writer.position


def decode(record: bytes) -> RawRecord:
    """One whole trail record (``G`` … ``Z``, as Logdump's ``SAVE`` or an RBA slice gives it)
    decoded into its header fields, data area and tokens; raises :class:`TrailFormatError`
    for bytes that are not one well-formed record."""
    try:
        raw = decode_record(record, 0, len(record))
    except (ValueError, UnicodeDecodeError) as exc:
        raise TrailFormatError(f"not a trail record: {exc}") from None
    if raw.length != len(record):
        raise TrailFormatError(f"the record is {raw.length} bytes long, the data "
                               f"{len(record)}: give exactly one record")
    return raw


def export_jsonl(trail: str | Path, start: TrailPosition | None = None) -> Iterator[str]:
    """The trail's records as JSON Lines, one string per record (docs/interchange.md)."""
    for obj in export_records(trail, start):
        yield json.dumps(obj, ensure_ascii=False)


def import_jsonl(lines: Iterable[str], trail: str | Path) -> int:
    """Write JSON Lines change records (as :func:`export_jsonl` gives them) into trail
    ``trail``; returns the number of changes written."""
    return import_records(lines, trail)


def run_group(home: str | Path | Home, name: str, *, once: bool = False,
              max_batches: int | None = None, spark: SparkSession | None = None) -> int:
    """Run group ``name`` of a home in this process until it stops, as ``trailgate run``
    does: an Extract (PostgreSQL or Oracle redo dumps), a Data Pump or a Replicat, found in
    the home's registry (GGSCI ``ADD``).  ``once``: process what is there now, then stop;
    ``max_batches``: stop cleanly after that many micro-batches.  ``spark``: a session to
    run in (default: the group starts its own and stops it at the end).  Returns the exit
    status (0 after a clean stop); a problem raises a :class:`TrailgateError` subclass."""
    from trailgate.run import run_named_group

    where = home if isinstance(home, Home) else Home(Path(home))
    return run_named_group(where, name, once=once, max_batches=max_batches, spark=spark)


@dataclass(frozen=True, slots=True)
class TrailSourceOptions:
    """Options of ``spark.read.format("trail")`` and ``readStream.format("trail")``, typed:
    ``.options(**TrailSourceOptions(...).as_options())``.

    ``path``: a trail (``dirdat/aa``), a glob over one trail's files or one file;
    ``tables``: GoldenGate patterns (``hr.*``, ``emp``) of the tables to keep;
    ``starting_position``: ``seqno:rba`` where a stream starts; ``include_metadata``: also
    the table definition records; ``batch_rows``: rows per Arrow batch;
    ``max_records_per_trigger``: bound a streaming micro-batch (transactions stay whole);
    ``table``: one table's changes with typed columns; ``list_tables``: the trail's tables
    instead of changes."""

    path: str
    tables: tuple[str, ...] = ()
    starting_position: TrailPosition | None = None
    include_metadata: bool = False
    batch_rows: int = 10_000
    max_records_per_trigger: int | None = None
    table: str | None = None
    list_tables: bool = False

    def as_options(self) -> dict[str, str]:
        """The options as the source takes them (names and text values)."""
        out = {"path": self.path, "batchRows": str(self.batch_rows),
               "includeMetadata": "true" if self.include_metadata else "false"}
        if self.tables:
            out["tables"] = ",".join(self.tables)
        if self.starting_position is not None:
            out["startingPosition"] = str(self.starting_position)
        if self.max_records_per_trigger is not None:
            out["maxRecordsPerTrigger"] = str(self.max_records_per_trigger)
        if self.table is not None:
            out["table"] = self.table
        if self.list_tables:
            out["listTables"] = "true"
        return out


def spark_session(master: str | None = None) -> SparkSession:
    """This process's Spark session (started on first use: ``local[*]`` unless ``master``
    names another), with the ``trail`` data source registered."""
    from trailgate.spark.session import get_spark

    return get_spark(master=master)
