"""The apply layer: map trail changes to targets and apply them exactly once.

Used by the Replicat process from its micro-batches; no Spark code here (see
docs/replicat.md).  ``PgApplier`` (PostgreSQL), ``DeltaApplier`` (Delta Lake) and
``change_log_rows`` (Parquet change logs) share ``Mapper`` and the ``planner`` rules.
``DeltaApplier`` lives in ``trailgate.apply.delta`` (imported on demand: it loads deltalake).
"""

from trailgate.apply.changelog import change_log_rows, change_log_schema, change_log_tables
from trailgate.apply.discard import Discard, DiscardWriter, prepare_discard_file
from trailgate.apply.mapping import (
    MappedChange,
    Mapper,
    MappingError,
    StaticCatalog,
    TableMapping,
    TargetColumn,
    TargetTable,
)
from trailgate.apply.planner import (
    CollisionError,
    partition_key,
    partition_of,
    requires_single_partition,
    split_partitions,
)
from trailgate.apply.postgres import PgApplier, PgCatalog
from trailgate.apply.records import ApplyResult, TableCounts, TrailChange, from_read_transactions

__all__ = [
    "ApplyResult",
    "CollisionError",
    "Discard",
    "DiscardWriter",
    "MappedChange",
    "Mapper",
    "MappingError",
    "PgApplier",
    "PgCatalog",
    "StaticCatalog",
    "TableCounts",
    "TableMapping",
    "TargetColumn",
    "TargetTable",
    "TrailChange",
    "change_log_rows",
    "change_log_schema",
    "change_log_tables",
    "from_read_transactions",
    "partition_key",
    "partition_of",
    "prepare_discard_file",
    "requires_single_partition",
    "split_partitions",
]
