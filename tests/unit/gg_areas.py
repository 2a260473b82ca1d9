"""The data areas of a 12c+ trail file's table definition records (TDRs), by table: what
the pass-through tests compare byte for byte (a unit test and the Pump's integration test
share it)."""

from __future__ import annotations

from pathlib import Path

from trailgate.trail.header import decode_file_header
from trailgate.trail.release12 import parse_record


def tdr_records(trail: Path) -> list[tuple[str, bytes]]:
    """Each TDR in ``trail`` (one file), in order: the table it names, its D area."""
    data = trail.read_bytes()
    pos, out = decode_file_header(data).length, []
    while pos < len(data):
        rec = parse_record(data, pos, len(data))
        if rec.io_type == 170 and rec.orig_node == 2:
            out.append((rec.name or "", rec.d or b""))
        pos += rec.length
    return out


def tdr_areas(trail: Path) -> dict[str, bytes]:
    """Each TDR's D area in ``trail`` (one file), by the table it names."""
    return dict(tdr_records(trail))
