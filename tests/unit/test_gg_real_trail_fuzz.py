"""The real GoldenGate 12.2 trail (tests/fixtures/goldengate) with its binary DDR and TDRs and
its unified updates truncated or garbled: clean errors only.  The metadata parser raises
ValueError saying where; a file whose TDR is damaged still reads (the table keeps its name,
its rows their values by shape, SHOW TDR says what is wrong and at which RBA) or stops with
a TrailFormatError naming the file and the RBA; Logdump never shows a traceback."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from logdump_run import logdump_text
from test_trail_fuzz import mutate, mutations

from trailgate.errors import TrailFormatError
from trailgate.trail import TrailReader
from trailgate.trail.release12 import parse_record
from trailgate.trail.release12.layout import sub
from trailgate.trail.release12.metabin import parse_ddr, parse_tdr

REAL = (Path(__file__).parent.parent / "fixtures" / "goldengate" / "tr000000000").read_bytes()
DDR, TDR1, TDR2, UNIFIED = 1414, 1548, 2264, 4300


def with_area(rba: int, area: bytes) -> bytes:
    """The real file with the D area of the record at ``rba`` replaced, every length that
    frames it (G, D, RecLength) made to fit, so only the area's content is wrong."""
    rec = parse_record(REAL, rba, len(REAL))
    h = bytearray(rec.h)
    h[4:6] = len(area).to_bytes(2, "big")
    body = sub(0x48, bytes(h), "big") + sub(0x44, area, "big")
    if rec.t is not None:
        body += sub(0x54, rec.t, "big")
    length = 4 + len(body) + 4
    frame = b"G\x01" + length.to_bytes(2, "big")
    record = frame + body + b"Z\x01" + length.to_bytes(2, "big")
    return REAL[:rba] + record + REAL[rba + rec.length :]


def read_everything(data: bytes) -> str:
    """Every reader over ``data`` as trail file tr000000000; returns Logdump's output."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tr000000000"
        path.write_bytes(data)
        try:
            for _ in TrailReader(Path(tmp) / "tr", single_file=True).records():
                pass
        except TrailFormatError as exc:
            assert "tr000000000" in str(exc) and " RBA " in str(exc), str(exc)
        with contextlib.suppress(TrailFormatError):
            for _ in TrailReader(Path(tmp) / "tr").transactions():
                pass
        text = logdump_text(path, "ghdr on", "detail data", "n 25", "sfmd tdr 2", "show tdr",
                            "show ddr", "count")
        assert "Traceback" not in text
        return text


def test_every_truncation_of_the_binary_metadata_is_a_value_error():
    for rba, parse in ((DDR, parse_ddr), (TDR1, parse_tdr), (TDR2, parse_tdr)):
        area = parse_record(REAL, rba, len(REAL)).d or b""
        parse(area)
        for cut in range(len(area)):
            try:
                parse(area[:cut])
            except ValueError:
                continue
            raise AssertionError(f"a {cut}-byte cut of the area at RBA {rba} parsed")


def test_every_garbled_byte_of_the_tdrs_parses_or_raises_only_value_error():
    for rba in (TDR1, TDR2):
        area = parse_record(REAL, rba, len(REAL)).d or b""
        for at in range(len(area)):
            for byte in (0x00, 0xFF, area[at] ^ 0x01):
                garbled = area[:at] + bytes((byte,)) + area[at + 1 :]
                with contextlib.suppress(ValueError):
                    parse_tdr(garbled)


def test_damaged_metadata_and_unified_updates_in_the_file_are_clean():
    """Cuts of the DDR, both TDRs and a unified update inside a well-framed record: every
    reader copes, and a damaged TDR is reported with its RBA."""
    for rba in (DDR, TDR1, TDR2, UNIFIED):
        area = parse_record(REAL, rba, len(REAL)).d or b""
        for cut in sorted({0, 1, 3, 5, 6, 11, 40, 79, len(area) // 2, len(area) - 1}):
            shown = read_everything(with_area(rba, area[:cut]))
            if rba == TDR1:
                assert f"the TDR at RBA {TDR1}: " in shown, cut


def test_cutting_the_real_file_anywhere_is_clean():
    for cut in (*range(1400, 1700, 37), *range(2200, 3000, 53), 4301, 4400, 5659):
        read_everything(REAL[:cut])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_mutated_real_file_raises_only_trail_format_error(edits):
    read_everything(mutate(REAL, edits))  # any other exception fails the test


def test_a_unified_update_in_fragments_stops_the_reader_cleanly(tmp_path) -> None:
    """A 134 continued in a record fragment (161) is not read yet: the reader says so at
    its RBA instead of handing out the record without a change (which a Replicat skips)."""
    from trailgate.trail.release12.layout import pack_header

    data = REAL
    r = parse_record(data, 5100, len(data))
    d = data[r.subs[0][2]:r.subs[0][3]]

    def record(io_type: int, area: bytes, continued: int, t: bytes | None) -> bytes:
        h = pack_header("big", partition=r.partition, before_after=r.before_after,
                        rec_length=len(area), io_type=io_type, orig_node=r.orig_node,
                        io_time=r.io_time, audit_pos=r.audit_pos, audit_rba=r.audit_rba,
                        trans_ind=r.trans_ind, continued=continued, tail=r.tail)
        body = sub(0x48, h, "big") + sub(0x44, area, "big")
        if t is not None:
            body += sub(0x54, t, "big")
        n = (len(body) + 8).to_bytes(2, "big")
        return b"G\x01" + n + body + b"Z\x01" + n

    split = record(134, d[:30], 1, r.t) + record(161, d[30:], 0, None)
    path = tmp_path / "tr000000000"
    path.write_bytes(data[:5100] + split + data[5100 + r.length:])
    with pytest.raises(TrailFormatError, match=r"unified update \(IOType 134\) continued"):
        list(TrailReader(path, single_file=True).records())


def test_a_unified_key_update_without_its_old_key_is_refused() -> None:
    """A 135 (the key changed) with no TDR to name the key cannot give a PK update's old key:
    a clean ValueError, not an update the target would apply to no row (or the wrong one)."""
    from trailgate.trail.release12.columns import unified_to_seed

    r = parse_record(REAL, 5100, len(REAL))
    d = REAL[r.subs[0][2]:r.subs[0][3]]
    assert unified_to_seed(134, d, "big", None)[0] == 15  # the key unchanged: as before
    with pytest.raises(ValueError, match="the table's key is not known"):
        unified_to_seed(135, d, "big", None)
