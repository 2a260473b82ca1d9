"""The C path of the 12c+ codec (``_codec12.c``) against its Python reference, on random and
malformed records: whatever the C path returns, the reference returns too; where it declines
(None), the reference decides."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trail_roundtrip import changes, tables, workloads

from trailgate.model import TransInd
from trailgate.trail import TrailWriter
from trailgate.trail.header import decode_file_header
from trailgate.trail.records import decode_record
from trailgate.trail.release import parse_release
from trailgate.trail.release12 import FileDecoder, encode_change12
from trailgate.trail.release12 import decoder as decoder_module
from trailgate.trail.release12.layout import frame_length

pytestmark = pytest.mark.skipif(decoder_module._c is None,
                                reason="the C extension is not compiled (pure Python)")
FORMATS = st.sampled_from([parse_release("21.1", "little"), parse_release("19.1"),
                           parse_release("12.1", "little"), parse_release("12.2")])
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _file(fmt, defs, txns, vendor: int) -> bytes:
    from trailgate.trail import DatabaseInfo

    with tempfile.TemporaryDirectory() as tmp:
        with TrailWriter(f"{tmp}/aa", fsync=False, format=fmt, megabytes=64,
                         database=DatabaseInfo(vendor=vendor)) as w:
            for txn in txns:
                w.write_transaction(txn, {t.qualified_name: t for t in defs})
        return (Path(tmp) / "aa000000000").read_bytes()


def _walk(data: bytes, use_c: bool) -> list[object]:
    """Every record of a file decoded in order (by C where it can, else by the reference)."""
    decoder = FileDecoder(decode_file_header(data))
    decoder.use_c = use_c
    pos = decode_file_header(data).length
    out: list[object] = []
    while pos < len(data):
        try:
            found = decoder.read(data, pos, len(data))
        except (ValueError, UnicodeDecodeError) as exc:
            out.append(("error", pos))
            del exc
            break
        if found is None:
            break
        out.append(found[0])
        pos += found[1]
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(FORMATS, st.sampled_from([7, 21]), workloads())
def test_c_decoding_equals_the_reference(fmt, vendor, workload):
    defs, txns = workload
    data = _file(fmt, defs, txns, vendor)
    assert _walk(data, True) == _walk(data, False)


DAMAGE = st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1,
                  max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(FORMATS, workloads(), DAMAGE)
def test_c_decoding_of_damaged_records_never_disagrees(fmt, workload, edits):
    """A damaged record: the C path gives the reference's record, or declines."""
    _check_damaged(fmt, workload, edits)


@pytest.mark.heavy
@settings(max_examples=1500, deadline=None, suppress_health_check=SLOW)
@given(FORMATS, workloads(), DAMAGE)
def test_c_decoding_of_damaged_records_never_disagrees_heavy(fmt, workload, edits):
    _check_damaged(fmt, workload, edits)


def _check_damaged(fmt, workload, edits) -> None:
    defs, txns = workload
    data = bytearray(_file(fmt, defs, txns, 7))
    start = decode_file_header(bytes(data)).length
    for where, byte in edits:
        data[start + where % (len(data) - start)] = byte
    reference = FileDecoder(decode_file_header(bytes(data)))
    reference.use_c = False
    pos, buf = start, bytes(data)
    while pos < len(buf):
        c_result = decoder_module._c.to_seed(buf, pos, len(buf),  # type: ignore[union-attr]
                                             reference.order == "little",
                                             reference._c_tables, reference._c_names)
        try:
            found = reference.read(buf, pos, len(buf))
            problem = None
        except (ValueError, UnicodeDecodeError) as exc:
            found, problem = None, exc
        if c_result is not None:
            seed, length, _little = c_result
            try:
                c_raw = decode_record(seed, 0, len(seed))
            except (ValueError, UnicodeDecodeError):
                c_raw = None  # the decoder then reads the record by the reference
            if c_raw is not None:
                assert found is not None, f"C decoded a record the reference refuses: {problem}"
                assert length == found[1]
                c_raw.rba, c_raw.length = found[0].rba, length
                assert c_raw == found[0]
        if found is None:
            try:
                size = frame_length(buf, pos, len(buf), reference.order)
            except ValueError:
                break
            if size is None:
                break
            pos += size[0]
        else:
            pos += found[1]


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(st.data(), FORMATS, st.sampled_from([7, 21]))
def test_c_encoding_equals_the_reference(data, fmt, vendor):
    table = data.draw(tables())
    change = data.draw(changes(table))
    known = data.draw(st.sampled_from([table, None]))
    csn = data.draw(st.one_of(st.none(), st.integers(0, 2**63)))
    xid = data.draw(st.one_of(st.none(), st.just("3.11.848")))
    args = (change, known, fmt, vendor, TransInd.MIDDLE, csn, xid)
    try:
        want = encode_change12(*args, use_c=False)
    except ValueError:
        with pytest.raises(ValueError):
            encode_change12(*args)
        return
    assert encode_change12(*args) == want


@pytest.mark.parametrize("release", ["19.1", "12.2", "21.1"])
def test_c_encoding_of_a_row_without_columns_equals_the_reference(release):
    """A DELETE whose image holds no column: an empty D area, which the C encoder copied with
    memcpy from a NULL buffer (undefined; UBSan's report in the sanitizer run,
    tests/integration/test_sanitizers.py); the bytes are the reference's."""
    from trailgate.model import Change, OpType
    from trailgate.sample import STUDENT

    fmt = parse_release(release, "little" if release == "21.1" else "big")
    change = Change(OpType.DELETE, STUDENT.qualified_name, before={})
    for known in (STUDENT, None):
        args = (change, known, fmt, 7, TransInd.ONLY, None, None)
        assert encode_change12(*args) == encode_change12(*args, use_c=False)
