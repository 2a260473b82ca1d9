"""Logdump's SAVE: copy records into a new trail file that trailgate (and Logdump) can read.

The saved records are bracketed by GGSComment records as Logdump's SAVE brackets them
(seed 002, type 205), and the definitions of the tables they touch are copied in first, so
the new file describes its own tables like every trailgate trail file does.  A 12c+ file's
copy keeps its format: its comments are 12c+ records and every metadata record before the
saved ones is copied, so each TDR index still names the same table.
"""

from __future__ import annotations

from pathlib import Path

from trailgate.checkpoint import atomic_write_bytes
from trailgate.model import Change, OpType, TransInd
from trailgate.trail.header import FileHeader, ProducerInfo, now_julian
from trailgate.trail.naming import parse_trail_file
from trailgate.trail.records import encode_record
from trailgate.trail.release import format_for_level
from trailgate.trail.release12 import encode_change12

__all__ = ["write_saved_file"]


def _comment(text: str, source: FileHeader | None, byte_order: str) -> bytes:
    if source is not None and source.compatibility > 3:
        fmt = format_for_level(source.compatibility, byte_order)
        change = Change(op=OpType.COMMENT, table="GGS_COMMENT", text=text, io_time=now_julian())
        return encode_change12(change, None, fmt, source.database.vendor, TransInd.ONLY)[0]
    return encode_record(io_type=OpType.COMMENT, table="GGS_COMMENT", data=text.encode("utf-8"),
                         io_time=now_julian(), trans_ind=TransInd.ONLY)


def write_saved_file(
    target: Path,
    source: FileHeader | None,
    source_path: Path,
    start_rba: int,
    records: list[bytes],
    definitions: list[bytes],
    *,
    first_csn: int | None,
    last_csn: int | None,
    first_io_time: int | None,
    last_io_time: int | None,
    byte_order: str = "big",
) -> int:
    """Write the file; returns its size. Raises ``OSError`` when it cannot be written."""
    opening = _comment(f"Logdump SAVE: {len(records)} records from {source_path} "
                       f"at RBA {start_rba}", source, byte_order)
    closing = _comment(f"Logdump SAVE: end of {len(records)} records from {source_path}",
                       source, byte_order)
    parsed = parse_trail_file(target)
    header = FileHeader(
        seqno=parsed[1] if parsed else 0,
        filename=str(target.absolute()),
        producer=ProducerInfo(name="LOGDUMP"),
        creation_time=now_julian(),
        first_csn=first_csn,
        last_csn=last_csn,
        first_io_time=first_io_time,
        last_io_time=last_io_time,
        file_size=0,
    )
    if source is not None:
        header.uri = source.uri
        header.uri_history = list(source.uri_history)
        header.compatibility = source.compatibility
        header.machine = source.machine
        header.database = source.database
        header.producer = source.producer
    body = opening + b"".join(definitions) + b"".join(records) + closing
    header.file_size = len(header.encode()) + len(body)
    data = header.encode() + body
    atomic_write_bytes(target, data)
    return len(data)
