"""The real GoldenGate 12.2 trail (tests/fixtures/goldengate, S19: big-endian) rebuilt as
its little-endian twin by the rules docs/trail-format.md gives for a little-endian 12c+
file, and read: every record decodes to what its big-endian original does, by the C path
and the reference, and the reader gives the same changes and table definitions.

The rules: the file header stays as it is (big-endian in every public 12c+ header); the
G/Z and sub-record lengths, the 34 header bytes' multi-byte fields, a metadata record's
DDR/TDR index pair, a row's TDR index in the tail, the column framing's index, length and
inner value length, and the GGS token lengths in little-endian; binary numbers (data type
134) stay big-endian (S1, S3).  What no public bytes show — the DDR/TDR token trees' and
the unified update's 4-byte prefix's order in such a file — is built both ways."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest
from logdump_run import logdump_text

from trailgate.model import OpType
from trailgate.trail import TrailReader
from trailgate.trail.header import decode_file_header
from trailgate.trail.metadata import decode_tabledef
from trailgate.trail.release12 import FileDecoder, parse_record
from trailgate.trail.release12.definitions import TableSpec
from trailgate.trail.release12.layout import Record12
from trailgate.trail.release12.metabin import build_ddr, build_tdr, parse_ddr, parse_tdr

REAL = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"
_HEAD = struct.Struct("<BBBBHBBQQIBBBBBB")  # the 34 fixed header bytes (layout.py's fields)


def le16(value: int) -> bytes:
    return value.to_bytes(2, "little")


def be16(b: bytes, pos: int) -> int:
    return int.from_bytes(b[pos : pos + 2], "big")


def columns_le(d: bytes, start: int, end: int, spec: TableSpec) -> bytes:
    """Columns ``d[start:end]`` of a big-endian row: index, length and a variable value's
    inner length turned round; a fixed or binary value's bytes as they are."""
    out, pos = b"", start
    while pos < end:
        index, length = be16(d, pos), be16(d, pos + 2)
        value = d[pos + 4 : pos + 4 + length]
        mode = spec.columns[index].mode
        if mode in ("var", "char") and length >= 4:
            value = value[:2] + le16(be16(value, 2)) + value[4:]
        out += le16(index) + le16(length) + value
        pos += 4 + length
    assert pos == end
    return out


def tokens_le(t: bytes) -> bytes:
    out, pos = b"", 0
    while pos < len(t):
        n = be16(t, pos + 2)
        out += t[pos : pos + 2] + le16(n) + t[pos + 4 : pos + 4 + n]
        pos += 4 + n
    return out


def twin_record(rec: Record12, spec: TableSpec | None, trees: str, unified: str) -> bytes:
    """``rec`` (big-endian) as a little-endian file holds it."""
    d = rec.d
    if rec.io_type == 170:
        tail = rec.tail
        audit_rba = int.from_bytes(le16(rec.ddr_index) + le16(rec.tdr_index), "little")
        if d and trees == "little":
            d = (build_ddr(parse_ddr(d), "little") if rec.orig_node == 1
                 else build_tdr(parse_tdr(d), "little"))
    else:
        tail, audit_rba = le16(rec.tdr_index), rec.audit_rba
        assert spec is not None and d is not None
        if rec.io_type == 134:
            before = be16(d, 2)
            assert d[:2] == b"\x00\x00"
            prefix = (b"\x00\x00" + le16(before) if unified == "two u16"
                      else before.to_bytes(4, "little"))
            d = (prefix + columns_le(d, 4, 4 + before, spec)
                 + columns_le(d, 4 + before, len(d), spec))
        else:
            d = columns_le(d, 0, len(d), spec)
    head = _HEAD.pack(rec.hdr_ind, rec.partition, rec.undo_flag, rec.before_after,
                      len(d or b""), rec.io_type, rec.orig_node, rec.io_time, rec.audit_pos,
                      audit_rba, rec.trans_ind, rec.format_type, rec.syskey_len,
                      rec.incomplete, rec.continued, rec.rec_count) + tail
    body = b"H\x00" + le16(len(head)) + head
    if d is not None:
        body += b"D\x00" + le16(len(d)) + d
    if rec.t is not None:
        t = tokens_le(rec.t)
        body += b"T\x00" + le16(len(t)) + t
    assert rec.u is None
    size = le16(len(body) + 8)
    return bytes((0x47, rec.flag)) + size + body + bytes((0x5A, rec.flag)) + size


def twin(path: Path, trees: str, unified: str) -> Path:
    buf = REAL.read_bytes()
    header = decode_file_header(buf)
    decoder = FileDecoder(header)
    out, pos = buf[: header.length], header.length
    while pos < len(buf):
        rec = parse_record(buf, pos, len(buf), "big")
        decoder.normalise(rec)
        spec = decoder.tdrs.get(rec.tdr_index) if rec.io_type != 170 else None
        out += twin_record(rec, spec, trees, unified)
        pos += rec.length
    assert len(out) == len(buf)
    path.write_bytes(out)
    return path


def records(path: Path, use_c: bool) -> list[tuple[object, ...]]:
    """Every record as the decoder gives it (11.2 form), its RBA, length and a metadata
    record's AuditRBA (the index pair, which reads apart as a u32) aside, and a DDR's data
    area (handed on as the file holds it) and a TDR's definition (which carries the TDR's
    bytes too) as their fields."""
    buf = path.read_bytes()
    decoder = FileDecoder(decode_file_header(buf))
    decoder.use_c = use_c
    pos, out = decode_file_header(buf).length, []
    while pos < len(buf):
        raw = decoder.decode(buf, pos, len(buf))
        fields = dataclasses.astuple(raw)[2:]
        if raw.io_type == 170:
            fields = fields[:11] + fields[12:]  # AuditRBA: the index pair
            area = parse_ddr(raw.data) if raw.orig_node == 1 else decode_tabledef(raw.data)
            fields = (*fields[:17], area, *fields[18:])
            rec = parse_record(buf, pos, len(buf))
            fields += (rec.ddr_index, rec.tdr_index, rec.name)
        out.append(fields)
        pos += raw.length
    return out


@pytest.mark.parametrize(("trees", "unified"), [("big", "two u16"), ("little", "u32")])
def test_the_little_endian_twin_reads_the_same_changes(tmp_path: Path, trees: str,
                                                       unified: str):
    little = twin(tmp_path / "le000000000", trees, unified)
    assert little.read_bytes() != REAL.read_bytes()
    first = parse_record(little.read_bytes(), 1414, len(little.read_bytes()))
    assert first.order == first.data_order == "little"
    expected = records(REAL, use_c=False)
    assert len(expected) == 19
    for use_c in (False, True):
        assert records(little, use_c) == expected
    ours = [rt.transaction for rt in TrailReader(tmp_path / "le").transactions()]
    theirs = [rt.transaction for rt in TrailReader(REAL).transactions()]
    assert [(t.xid, t.csn, list(t.changes)) for t in ours] == [
        (t.xid, t.csn, list(t.changes)) for t in theirs]
    assert sum(c.op is OpType.INSERT for t in ours for c in t.changes) == 10

    def tables(path: Path) -> dict[str, object]:
        return {r.raw.table: r.table_def for r in TrailReader(path, single_file=True).records()
                if r.table_def is not None}

    assert tables(little) == tables(REAL)


def test_logdump_shows_the_twin_as_the_original(tmp_path: Path):
    """Logdump on the twin (trees little-endian): the same decoded values and metadata as
    on the original, the header fields the same, no traceback."""
    little = twin(tmp_path / "le000000000", "little", "u32")
    commands = ("ghdr on", "detail data", "sfmd", *["n"] * 19)

    def shown(path: Path) -> list[str]:
        text = logdump_text(path, *commands)
        assert "Traceback" not in text
        # the hex columns and the file name differ; every decoded line must not
        return [line for line in text.splitlines() if " = " in line or "TDR" in line
                or line.startswith(("IOType", "TransInd", "RecLength", "AuditRBA"))]

    lines = shown(little)
    assert "PRODUCT_PRICE = 14000.00" in "\n".join(lines)
    assert lines == shown(REAL)
