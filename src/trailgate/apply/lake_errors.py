"""Why a DDL failed on a lake target, as a SQLSTATE, so that ``DDLERROR`` rules apply there.

A Delta table or Parquet change log is changed by trailgate's own code (deltalake, Arrow,
the file system), not by a database that reports SQLSTATEs; ``DDLERROR 42P01 IGNORE`` must
still mean the same thing on every target.  Each failure that can come from that code is
given the PostgreSQL SQLSTATE of the same kind of failure (docs/ddl.md lists them); anything
else is not a DDL failure but a bug, and is left to propagate.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake.exceptions import (
    CommitFailedError,
    DeltaError,
    DeltaProtocolError,
    SchemaMismatchError,
    TableNotFoundError,
)

__all__ = ["LAKE_FAILURES", "lake_sqlstate"]

#: The exceptions a lake DDL step can fail with for a reason of the target's.
LAKE_FAILURES: tuple[type[BaseException], ...] = (OSError, pa.ArrowException, DeltaError)


def lake_sqlstate(exc: BaseException) -> str:
    """The SQLSTATE of a failure in :data:`LAKE_FAILURES`."""
    if isinstance(exc, TableNotFoundError):
        return "42P01"  # undefined_table
    if isinstance(exc, SchemaMismatchError | pa.ArrowTypeError):
        return "42804"  # datatype_mismatch
    if isinstance(exc, pa.ArrowNotImplementedError):
        return "42846"  # cannot_coerce: a cast Arrow does not do
    if isinstance(exc, pa.ArrowInvalid):
        return "22P02"  # invalid_text_representation: a value the new type cannot hold
    if isinstance(exc, CommitFailedError):
        return "40001"  # serialization_failure: another writer committed first
    if isinstance(exc, DeltaProtocolError):
        return "0A000"  # feature_not_supported
    if isinstance(exc, FileNotFoundError):
        return "58P01"  # undefined_file
    if isinstance(exc, FileExistsError):
        return "58P02"  # duplicate_file
    if isinstance(exc, PermissionError):
        return "42501"  # insufficient_privilege
    if isinstance(exc, OSError):
        return "58030"  # io_error
    return "XX000"  # internal_error: another deltalake or Arrow failure
