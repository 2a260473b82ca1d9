"""The GoldenGate trail format: file header, records, column encodings, writer and reader.

This package imports nothing from Spark or databases, so Logdump and the tests start
instantly and the same code runs inside Spark tasks.
"""

from trailgate.trail.header import (
    COMPATIBILITY_LEVEL,
    DatabaseInfo,
    FileHeader,
    MachineInfo,
    ProducerInfo,
)
from trailgate.trail.naming import TrailName, parse_trail_file
from trailgate.trail.reader import (
    ReadTransaction,
    TrailReader,
    TrailRecord,
    find_next_record,
    read_header,
)
from trailgate.trail.records import RawRecord, encode_change_record, encode_change_records
from trailgate.trail.writer import TrailWriter

__all__ = [
    "COMPATIBILITY_LEVEL",
    "DatabaseInfo",
    "FileHeader",
    "MachineInfo",
    "ProducerInfo",
    "RawRecord",
    "ReadTransaction",
    "TrailName",
    "TrailReader",
    "TrailRecord",
    "TrailWriter",
    "encode_change_record",
    "encode_change_records",
    "find_next_record",
    "parse_trail_file",
    "read_header",
]
