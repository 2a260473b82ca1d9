"""A trail file GoldenGate 12.2 wrote itself (tests/fixtures/goldengate/README.md: Oracle's
GoldenGate for Big Data sample trail, source R1 of docs/trail-format.md): every record's
frame, header fields, tables, values and tokens as its bytes give them, through trailgate's
record parser, reader and Logdump."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from trailgate.logdump.cli import run_lines
from trailgate.logdump.session import Session
from trailgate.model import julian_from_unix_micros
from trailgate.trail.header import decode_file_header
from trailgate.trail.release12 import parse_record
from trailgate.trail.release12.tokens import walk

REAL = Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000"

#: (RBA, IOType, OrigNode, TransInd, TDR index, BeforeAfter) of each record after the header.
FRAMES = [
    (1414, 170, 1, 3, 0, "A"), (1548, 170, 2, 3, 1, "A"),
    (1956, 5, 0xFF, 0, 1, "A"), (2126, 5, 0xFF, 1, 1, "A"),
    (2264, 170, 2, 1, 2, "A"),  # TCUSTORD's TDR, in the middle of the transaction
    (2928, 5, 0xFF, 1, 2, "A"), (3106, 5, 0xFF, 2, 2, "A"),
    (3286, 5, 0xFF, 0, 1, "A"), (3462, 5, 0xFF, 1, 1, "A"), (3600, 5, 0xFF, 2, 1, "A"),
    (3733, 5, 0xFF, 0, 2, "A"), (3940, 5, 0xFF, 1, 2, "A"), (4120, 5, 0xFF, 2, 2, "A"),
    (4300, 134, 0xFF, 0, 2, "A"), (4586, 134, 0xFF, 1, 2, "A"), (4845, 134, 0xFF, 1, 2, "A"),
    (5100, 134, 0xFF, 2, 1, "A"),
    (5272, 3, 0xFF, 0, 2, "B"), (5480, 3, 0xFF, 2, 2, "B"),
]


def julian(text: str) -> int:
    moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return julian_from_unix_micros(int(moment.timestamp()) * 1_000_000 + moment.microsecond)


def logdump(*commands: str) -> str:
    out = io.StringIO()
    session = Session(out)
    session.open(REAL)
    run_lines(session, commands)
    session.close()
    return out.getvalue()


def test_every_record_of_the_real_file_frames_as_its_bytes_say():
    """19 records after a 1,414-byte file header, big-endian throughout, each header field
    where docs/trail-format.md puts it; metadata records carry their DDR/TDR index in bytes
    24-27, rows their TDR index in the 2-byte tail, TDRs their table's name."""
    buf = REAL.read_bytes()
    header = decode_file_header(buf)
    assert header.compatibility == 5 and header.length == 1414
    assert header.database.vendor == 7 and header.database.name == "ORA1120I"
    assert header.producer.version_string.startswith("Version 12.2.0.1.0 OGGCORE_12.2.0.1.0")
    pos, seen = header.length, []
    while pos < len(buf):
        rec = parse_record(buf, pos, len(buf), "big")
        assert rec.order == rec.data_order == "big"
        assert rec.hdr_ind == 0x45 and rec.format_type == 0x52 and rec.rec_count == 1
        assert rec.rec_length == len(rec.d or b"")
        index = rec.tdr_index
        seen.append((pos, rec.io_type, rec.orig_node, rec.trans_ind, index,
                     chr(rec.before_after)))
        if rec.io_type == 170:
            assert rec.partition == 0 and rec.t is None
            assert rec.ddr_index == 1
            assert rec.name == {0: None, 1: "QASOURCE.TCUSTMER", 2: "QASOURCE.TCUSTORD"}[index]
        else:
            assert rec.partition == 0x0C and rec.audit_rba == 108466  # the redo sequence
            assert rec.name is None and len(rec.tail) == 2
        pos += rec.length
    assert pos == len(buf) == 5660
    assert seen == FRAMES


def test_real_file_times_and_tokens():
    """IO times read with GoldenGate's epoch (docs/trail-format.md "Times"): the rows of the
    first transaction at 2015-11-05 18:45:36 UTC, the metadata two seconds later, the file
    created at 18:45:18.173484; every row has ORAROWID, each transaction's first row LOGCSN,
    TRANID (and ORATAG, empty, in the first)."""
    buf = REAL.read_bytes()
    header = decode_file_header(buf)
    assert header.creation_time == julian("2015-11-05 18:45:18.173484")
    rec = parse_record(buf, 1956, len(buf))
    assert rec.io_time == julian("2015-11-05 18:45:36.000000")
    assert parse_record(buf, 1414, len(buf)).io_time == julian("2015-11-05 18:45:38.198361")
    assert parse_record(buf, 3286, len(buf)).io_time == julian("2015-11-05 18:45:39.000000")
    tokens, problem = walk(rec.t or b"", "big")
    assert problem is None
    assert [(chr(t), i, v) for t, i, v in tokens] == [
        ("R", 0, b"AAKifQAAKAAAFDHAAA\x00\x01"), ("t", 1, b""), ("L", 0, b"7824137832"),
        ("6", 0, b"2.3.228025")]
    firsts = {rba: walk(parse_record(buf, rba, len(buf)).t or b"", "big")[0]
              for rba, io, *_ in FRAMES if io != 170}
    csns = {rba: v for rba, toks in firsts.items() for t, _i, v in toks if t == 0x4C}
    assert csns == {1956: b"7824137832", 3286: b"7824137914", 3733: b"7824137917",
                    4300: b"7824137919", 5272: b"7824137921"}
    assert all(toks[0][0] == 0x52 for toks in firsts.values())


def test_logdump_counts_the_real_file():
    out = logdump("count")
    assert "LogTrail " in out and "has 19 records" in out
    for line in ("Insert                            10", "GGSUnifiedUpdate                   4",
                 "Delete                             2", "Metadata                           3"):
        assert line in out
