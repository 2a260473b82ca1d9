"""Fuzzed 12c+ trails (truncated, wrong lengths, unknown TDR indexes, random bytes) give
clean errors only: the reader raises TrailFormatError naming file and RBA, Logdump shows what
it can and never a traceback."""

from __future__ import annotations

import contextlib
import io
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trail_fuzz import mutate, mutations

from trailgate.errors import TrailFormatError
from trailgate.logdump.cli import run_lines
from trailgate.logdump.session import Session
from trailgate.model import Change, OpType, Transaction
from trailgate.sample import COURSE, STUDENT, seed_transactions
from trailgate.trail import TrailReader, TrailWriter
from trailgate.trail.header import decode_file_header
from trailgate.trail.release import parse_release
from trailgate.trail.release12 import FileDecoder, parse_record
from trailgate.trail.release12.layout import frame_length

_BASES: dict[str, bytes] = {}


def _base(release: str, order: str) -> bytes:
    key = f"{release}-{order}"
    if key not in _BASES:
        with tempfile.TemporaryDirectory() as tmp:
            tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
            with TrailWriter(f"{tmp}/aa", fsync=False, format=parse_release(release, order)) as w:
                for txn in seed_transactions():
                    w.write_transaction(txn, tables)
                big = Change(OpType.INSERT, "US03.STUDENT",
                             after={0: b"1", 1: b"v" * 70_000, 2: None},
                             tokens={"HOST": "db1", "GROUP": "EXT1"})
                w.write_transaction(Transaction("9.1.1", 99, [big] * 2), tables)
            _BASES[key] = (Path(tmp) / "aa000000000").read_bytes()
    return _BASES[key]


def _read_everything(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "aa000000000").write_bytes(data)
        with contextlib.suppress(TrailFormatError):
            for _ in TrailReader(Path(tmp) / "aa").transactions():
                pass
        with contextlib.suppress(TrailFormatError):
            for _ in TrailReader(Path(tmp) / "aa", start=None).raw_records():
                pass
        out = io.StringIO()
        session = Session(out)
        session.open(Path(tmp) / "aa000000000")
        run_lines(session, ["ghdr on", "detail data", "headertoken detail", "n 60",
                            "sfmd tdr 1", "show tdr", "pos 0", "count"])
        session.close()


BASES = st.sampled_from([("21.1", "little"), ("19.1", "big"), ("12.1", "little")])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BASES, mutations)
def test_mutated_12c_trails_raise_only_trail_format_error(base, edits):
    _read_everything(mutate(_base(*base), edits))  # any other exception fails the test


def _record_starts(data: bytes) -> list[int]:
    decoder_order = "big"
    pos = data.index(b"G\x01")
    out = []
    while pos < len(data):
        found = frame_length(data, pos, len(data), decoder_order)
        assert found is not None
        out.append(pos)
        pos += found[0]
    return out


def _sub_length_offset(data: bytes, pos: int, order: str, kind: str) -> int | None:
    """Where the length of the record's ``kind`` (D or T) sub-record is, from the record's
    start; ``None`` when the record has none."""
    at = 4  # the H sub-record's header
    while pos + at + 4 <= len(data) and data[pos + at] != ord("Z"):
        length = int.from_bytes(data[pos + at + 2 : pos + at + 4], order)  # type: ignore[arg-type]
        if data[pos + at] == ord(kind):
            return at + 2
        at += 4 + length
    return None


def test_the_length_fields_aimed_at_are_the_d_and_t_lengths():
    data = _base("21.1", "little")
    pos = next(p for p in _record_starts(data) if data[p + 4 + 4 + 6] == 5)  # an insert
    view = parse_record(data, pos, len(data))
    assert view.d is not None and view.t is not None
    for kind, area in (("D", view.d), ("T", view.t)):
        offset = _sub_length_offset(data, pos, "little", kind)
        assert offset is not None and data[pos + offset - 2] == ord(kind)
        assert int.from_bytes(data[pos + offset : pos + offset + 2], "little") == len(area)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BASES, st.integers(0, 10**6), st.sampled_from(["g", "h", "d", "rec", "tdr", "t"]),
       st.integers(0, 0xFFFF))
def test_wrong_lengths_and_indexes_are_clean_errors(base, which, field, value):
    """A G, H, D or T length, a RecLength or a TDR index set to any value: the record
    decodes or raises ValueError (the reader adds file and RBA); whole files read cleanly."""
    data = bytearray(_base(*base))
    starts = _record_starts(bytes(data))
    pos = starts[which % len(starts)]
    order = parse_record(bytes(data), pos, len(data)).order
    offset: int | None = {"g": 2, "h": 6, "rec": 8 + 4, "tdr": 8 + 34}.get(field)
    if offset is None:  # the D or T sub-record's length: after the H area (and the D area)
        offset = _sub_length_offset(bytes(data), pos, order, field.upper())
    if offset is not None and pos + offset + 2 <= len(data):
        data[pos + offset : pos + offset + 2] = value.to_bytes(2, order)  # type: ignore[arg-type]
    decoder = FileDecoder(decode_file_header(bytes(data)))
    for start in starts:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            decoder.decode(bytes(data), start, len(data))
    _read_everything(bytes(data))


def test_truncations_at_many_lengths_are_clean():
    for base in (("21.1", "little"), ("19.1", "big")):
        data = _base(*base)
        rng = random.Random(11)
        for cut in [*sorted(rng.sample(range(len(data)), 60)), 0, 1, 3, 8]:
            _read_everything(data[:cut])
