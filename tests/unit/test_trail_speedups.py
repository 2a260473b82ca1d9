"""The optional C accelerator (trailgate.trail._speedups) agrees with the pure-Python codec.

The C functions return ``None`` for anything they do not handle; the property tests check
that whenever they return something else it is exactly the reference's result, that they
never return a result where the reference raises, and that they do handle valid input.
The pure-Python reference is obtained by switching the accelerator off in the two codec
modules for the duration of a call (``pure_python``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trailgate.model import Change, ColumnKind, OpType, TransInd
from trailgate.sample import COURSE, STUDENT, seed_transactions
from trailgate.trail import _accel, records, values
from trailgate.trail.records import RawRecord, decode_change, decode_record, encode_record
from trailgate.trail.values import decode_columns, encode_columns, fixed_indexes

C = pytest.importorskip("trailgate.trail._speedups", reason="C accelerator not built")
ROOT = Path(__file__).resolve().parents[2]
# What values.py and records.py do at import when the accelerator is on; repeated here so the
# C functions are tested under TRAILGATE_PURE_PYTHON=1 too (both calls are idempotent).
C.set_column_kinds(values._VARIABLE, ColumnKind.CHAR, ColumnKind.DATE, ColumnKind.TIMESTAMP)
assert C.register_dataclass(RawRecord) and C.register_dataclass(Change)


@contextlib.contextmanager
def pure_python():
    saved = values._speedups, records._speedups
    values._speedups = records._speedups = None
    try:
        yield
    finally:
        values._speedups, records._speedups = saved


def reference(fn, *args, **kwargs):
    """(True, result) or (False, exception) of the pure-Python ``fn``."""
    with pure_python():
        try:
            return True, fn(*args, **kwargs)
        except Exception as exc:  # anything the reference raises, C must decline
            return False, exc


def same(a, b) -> bool:
    """Equal, and for dicts in the same order (the decoders insert in record order)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a.items()) == list(b.items())
    if isinstance(a, RawRecord):
        return a == b and same(a.tokens, b.tokens) and type(a.data) is type(b.data) is bytes
    return a == b and type(a) is type(b)


def check(c_result, ok: bool, expected, *, must_handle: bool = False) -> None:
    if not ok:
        assert c_result is None, f"C returned {c_result!r} where Python raises {expected!r}"
    elif c_result is None:
        assert not must_handle, "C declined valid input"
    else:
        assert same(c_result, expected), (c_result, expected)


def mutate(data: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    out = bytearray(data)
    for where, byte, how in edits:
        at = where % (len(out) + 1)
        if how == "set" and at < len(out):
            out[at] = byte
        elif how == "del" and at < len(out):
            del out[at]
        else:
            out[at:at] = bytes((byte,))
    return bytes(out)


edits_st = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(0, 255), st.sampled_from(["set", "del", "ins"])),
    min_size=1, max_size=6,
)
value_st = st.one_of(st.none(), st.binary(max_size=40))
columns_st = st.dictionaries(st.integers(0, 24), value_st, max_size=14)
kinds_st = st.one_of(st.none(), st.lists(st.sampled_from(list(ColumnKind)), max_size=20))
fixed_st = st.one_of(st.none(), st.frozensets(st.integers(0, 24), max_size=8))
ascii_st = st.text(alphabet=st.characters(max_codepoint=127), max_size=24)
any_text_st = st.one_of(ascii_st, st.text(max_size=12))  # sometimes non-ASCII or surrogates


def test_accelerator_is_active_unless_pure_python_is_asked_for():
    if os.environ.get(_accel.PURE_PYTHON_ENV, "") not in ("", "0"):
        assert _accel.speedups is None and values._speedups is None
    else:
        assert _accel.speedups is C and records._speedups is C


def test_pure_python_env_switches_the_accelerator_off():
    code = ("from trailgate.trail import records, values; "
            "print(values._speedups is None, records._speedups is None)")
    for flag, expected in (("1", "True True"), ("0", "False False")):
        env = {**os.environ, _accel.PURE_PYTHON_ENV: flag}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == expected


# -- columns -----------------------------------------------------------------------------

def _widths_for(kinds, data) -> list[int | None] | None:
    if kinds is None:
        return None
    return data.draw(st.lists(st.one_of(st.none(), st.integers(-2, 30)),
                              min_size=len(kinds), max_size=len(kinds)))


@settings(max_examples=400, deadline=None)
@given(columns_st, kinds_st, st.data())
def test_encode_columns_is_byte_identical(columns, kinds, data):
    widths = _widths_for(kinds, data)
    ok, expected = reference(encode_columns, columns, kinds, widths)
    check(C.encode_columns(columns, kinds, widths), ok, expected, must_handle=True)
    assert encode_columns(columns, kinds, widths) == expected  # the public function too


@pytest.mark.parametrize("kind", [ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.DATE])
@pytest.mark.parametrize("size", [0xFFFF - 4, 0xFFFF - 3, 0xFFFF - 2, 0xFFFF, 0x10000])
def test_encode_columns_at_the_size_limit(kind, size):
    columns = {0: b"x" * size, 3: None}
    ok, expected = reference(encode_columns, columns, [kind] * 4, [size + 5] * 4)
    check(C.encode_columns(columns, [kind] * 4, [size + 5] * 4), ok, expected)
    ok, expected = reference(encode_columns, columns, [kind] * 4, None)
    check(C.encode_columns(columns, [kind] * 4, None), ok, expected)


def test_encode_columns_declines_what_it_does_not_know():
    assert C.encode_columns({0: b"1"}, ["VARCHAR2"], None) is None  # a str, not the member
    assert C.encode_columns({-1: b"1"}, None, None) is None
    assert C.encode_columns({70000: b"1"}, None, None) is None
    assert C.encode_columns({0: "text"}, None, None) is None
    assert C.encode_columns({0: bytearray(b"1")}, None, None) is None
    with pytest.raises(ValueError, match="unknown column kind"):
        encode_columns({0: b"1"}, [None], None)  # type: ignore[list-item]
    # A plain-string kind is still framed by the Python code, as before.
    assert encode_columns({0: b"1"}, ["VARCHAR2"], None) == b"\x00\x00\x00\x05\x00\x00\x00\x011"


@settings(max_examples=400, deadline=None)
@given(columns_st, kinds_st, st.data())
def test_decode_columns_of_valid_lists(columns, kinds, data):
    widths = _widths_for(kinds, data)
    with pure_python():
        encoded = encode_columns(columns, kinds, widths)
    fixed = None if kinds is None else fixed_indexes(kinds)
    ok, expected = reference(decode_columns, encoded, fixed, 0, len(encoded))
    assert ok
    check(C.decode_columns(encoded, fixed, 0, len(encoded)), ok, expected, must_handle=True)
    # the reference's careful decoder says the same
    assert same(values._decode_columns_slow(encoded, fixed, 0, len(encoded)), expected)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns_st, kinds_st, edits_st, fixed_st, st.integers(0, 8), st.integers(-8, 0))
@example({0: None}, None, [(0, 0, "set")], None, 0, 0)
@example({0: b"ab", 1: None}, None, [(2, 0, "set"), (3, 0, "set")], frozenset(), 0, 0)
def test_decode_columns_of_mutated_lists(columns, kinds, edits, fixed, cut_start, cut_end):
    with pure_python():
        encoded = mutate(encode_columns(columns, kinds), edits)
    start = min(cut_start, len(encoded))
    end = max(start, len(encoded) + cut_end)
    ok, expected = reference(decode_columns, encoded, fixed, start, end)
    got = C.decode_columns(encoded, fixed, start, end)
    check(got, ok, expected)
    # and the Python fast path agrees with the careful decoder it falls back to
    try:
        slow = values._decode_columns_slow(encoded, fixed, start, end)
    except ValueError:
        assert not ok
    else:
        assert ok and same(slow, expected)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), fixed_st, st.integers(-3, 70), st.integers(-3, 70))
def test_decode_columns_of_garbage(blob, fixed, start, end):
    ok, expected = reference(decode_columns, blob, fixed, start, end)
    check(C.decode_columns(blob, fixed, start, end), ok, expected)


def test_decode_columns_null_flag_needs_its_own_bytes():
    # Column 0 has length 0; the FF FF after it is column 65535's index, not a null flag.
    data = bytes.fromhex("0000 0000 ffff 0004 ffff 0000")
    assert C.decode_columns(data, frozenset(), 0, len(data)) is None
    for fixed in (frozenset(), None):
        with pytest.raises(ValueError, match="shorter than its null flag"):
            decode_columns(data, fixed)
        with pure_python(), pytest.raises(ValueError, match="shorter than its null flag"):
            decode_columns(data, fixed)


# -- records -----------------------------------------------------------------------------

record_args_st = st.fixed_dictionaries({
    "io_type": st.one_of(st.sampled_from(list(OpType)), st.integers(0, 256)),
    "table": any_text_st,
    "data": st.binary(max_size=300),
    "io_time": st.one_of(st.integers(0, 2**64 - 1), st.integers(-1, 2**64)),
    "audit_pos": st.integers(0, 2**64 - 1),
    "audit_rba": st.one_of(st.integers(0, 2**32 - 1), st.just(2**32)),
    "trans_ind": st.one_of(st.sampled_from(list(TransInd)), st.integers(0, 255)),
    "before_after": st.sampled_from([0x41, 0x42, 0, 255]),
    "continued": st.integers(0, 1),
    "rowid": st.one_of(st.none(), any_text_st),
    "csn": st.one_of(st.none(), st.integers(0, 10**25), st.integers(-5, -1), st.just(True)),
    "xid": st.one_of(st.none(), any_text_st),
    "tokens": st.one_of(st.none(), st.dictionaries(any_text_st, any_text_st, max_size=4)),
})


def _c_encode(args: dict) -> bytes | None:
    return C.encode_record(args["io_type"], args["table"], args["data"], args["io_time"],
                           args["audit_pos"], args["audit_rba"], args["trans_ind"],
                           args["before_after"], args["continued"], args["rowid"],
                           args["csn"], args["xid"], args["tokens"])


def _valid(args: dict) -> bool:
    """Whether the reference can encode and decode ``args`` (so C must handle them)."""
    ok, encoded = reference(lambda: encode_record(**args))
    return ok and reference(decode_record, encoded, 0, len(encoded))[0]


@settings(max_examples=500, deadline=None)
@given(record_args_st)
def test_encode_record_is_byte_identical(args):
    ok, expected = reference(lambda: encode_record(**args))
    check(_c_encode(args), ok, expected, must_handle=ok and args["csn"] is not True)
    if ok:
        assert encode_record(**args) == expected


@settings(max_examples=500, deadline=None)
@given(record_args_st)
def test_decode_record_of_valid_records(args):
    ok, encoded = reference(lambda: encode_record(**args))
    if not ok:
        return
    ok, expected = reference(decode_record, encoded, 0, len(encoded))
    check(C.decode_record(encoded, 0, len(encoded), RawRecord), ok, expected,
          must_handle=_valid(args))
    if ok:
        assert same(decode_record(encoded, 0, len(encoded)), expected)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_args_st, edits_st, st.binary(max_size=6), st.binary(max_size=6),
       st.integers(-8, 8))
def test_decode_record_of_mutated_records(args, edits, prefix, suffix, end_shift):
    ok, encoded = reference(lambda: encode_record(**args))
    if not ok:
        return
    buf = prefix + mutate(encoded, edits) + suffix
    pos = len(prefix)
    end = min(len(buf), max(pos, len(buf) - len(suffix) + end_shift))
    ok, expected = reference(decode_record, buf, pos, end)
    check(C.decode_record(buf, pos, end, RawRecord), ok, expected)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.integers(-2, 130), st.integers(-2, 130))
def test_decode_record_of_garbage(blob, pos, end):
    buf = b"G\x01" + blob
    ok, expected = reference(decode_record, buf, pos, end)
    check(C.decode_record(buf, pos, end, RawRecord), ok, expected)


@pytest.mark.parametrize("csn", [0, 7, 10**18, 2**63, 2**64 - 1, 2**64, 10**19 - 1, 10**19,
                                 99_999_999_999_999_999_999, 10**40,
                                 pytest.param(10**5000, id="5001 digits")])
def test_commit_csn_sizes(csn):
    args = {"io_type": 5, "table": "S.T", "data": b"", "csn": csn, "xid": "1.2.3"}
    ok, encoded = reference(lambda: encode_record(**args))
    check(C.encode_record(5, "S.T", b"", 0, 0, 0, 3, 0x41, 0, None, csn, "1.2.3", None), ok,
          encoded, must_handle=csn < 10**4000)
    if ok:
        ok, expected = reference(decode_record, encoded, 0, len(encoded))
        assert ok and expected.csn == csn
        check(C.decode_record(encoded, 0, len(encoded), RawRecord), ok, expected,
              must_handle=True)


def _g_record(subs: bytes, rec_length: int = 0) -> bytes:
    """A G record for table S.T whose H header is followed by the sub-records ``subs``."""
    h = (bytes([0x45, 4, 0, 0x41]) + rec_length.to_bytes(2, "big") + bytes([5, 0xFF])
         + b"\x00" * 16 + bytes([3, 0, 0, 0, 0, 0x52, 0, 0, 0, 1]) + b"S.T\x00")
    body = b"H\x00" + len(h).to_bytes(2, "big") + h + subs
    total = (len(body) + 8).to_bytes(2, "big")
    return b"G\x01" + total + body + b"Z\x01" + total


def _sub(type_: bytes, content: bytes) -> bytes:
    return type_ + b"\x00" + len(content).to_bytes(2, "big") + content


@pytest.mark.parametrize("csn", [b"000123", b"0" * 30 + b"5", b"1" * 25, b"", b"12a", b"-1",
                                 b"\xd9\xa1", b"1_000"])
def test_commit_csn_text(csn):
    record = _g_record(_sub(b"T", _sub(b"L", csn)))
    ok, expected = reference(decode_record, record, 0, len(record))
    assert ok == csn.isdigit()
    check(C.decode_record(record, 0, len(record), RawRecord), ok, expected, must_handle=ok)


def test_decode_record_sub_record_rules():
    """Unknown sub-records skipped; a later T replaces all three values; a later U wins."""
    record = _g_record(
        b"X\x00\x00\x03abc"
        + b"T\x00\x00\x0aL\x00\x00\x0299" + b"6\x00\x00\x00" + b"D\x00\x00\x02\x00\x01"
        + b"T\x00\x00\x06R\x00\x00\x02\x00\x01"
        + b"U\x00\x00\x06\x00\x01a\x00\x01b" + b"U\x00\x00\x06\x00\x01c\x00\x01d",
        rec_length=2)
    ok, expected = reference(decode_record, record, 0, len(record))
    assert ok and expected.csn is None and expected.rowid == "" and expected.tokens == {"c": "d"}
    check(C.decode_record(record, 0, len(record), RawRecord), ok, expected, must_handle=True)


def test_decode_record_errors_keep_their_python_messages():
    record = encode_record(io_type=OpType.INSERT, table="A.B", data=b"")
    bad = record[:-3] + b"\x02" + record[-2:]  # Z flag differs from G's
    assert C.decode_record(bad, 0, len(bad), RawRecord) is None
    with pytest.raises(ValueError, match="does not match its Z trailer"):
        decode_record(bad, 0, len(bad))


def test_record_class_errors_propagate():
    record = encode_record(io_type=OpType.INSERT, table="A.B", data=b"")

    def refuse(*args):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError, match="no"):
        C.decode_record(record, 0, len(record), refuse)


# -- changes -----------------------------------------------------------------------------

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([*OpType, 7]), columns_st, columns_st, kinds_st,
       st.one_of(st.none(), edits_st), st.booleans())
def test_decode_change_matches(op, before, after, kinds, edits, override):
    with pure_python():
        if op == OpType.PK_UPDATE:
            key = encode_columns(before, kinds)
            data = len(key).to_bytes(2, "big") + key + encode_columns(after, kinds)
        elif op in (OpType.DDL, OpType.COMMENT):
            data = "ALTER TABLE é".encode()
        else:
            data = encode_columns(after, kinds)
        if edits:
            data = mutate(data, edits)
        raw = decode_record(enc := encode_record(io_type=op, table="S.T", data=data, rowid="R1",
                                                 tokens={"K": "v"}), 0, len(enc))
    fixed = None if kinds is None else fixed_indexes(kinds)
    args = (raw, fixed, data) if override else (raw, fixed)
    ok, expected = reference(decode_change, *args)
    got = C.decode_change(raw, fixed, data if override else None, Change, records._OP_TYPES)
    check(got, ok, expected, must_handle=not edits and op != 7)
    if ok and got is not None:
        assert same(got.after, expected.after) and same(got.before, expected.before)


# -- the seeds ---------------------------------------------------------------------------

def test_seed_transactions_encode_and_decode_identically():
    tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
    for txn in seed_transactions():
        for i, change in enumerate(txn.changes):
            table = tables.get(change.table)
            args = (change, table, TransInd.ONLY, txn.csn if i == 0 else None,
                    txn.xid if i == 0 else None)
            with pure_python():
                expected = records.encode_change_records(*args)
            assert records.encode_change_records(*args) == expected
            for record in expected:
                ok, raw = reference(decode_record, record, 0, len(record))
                c_raw = C.decode_record(record, 0, len(record), RawRecord)
                check(c_raw, ok, raw, must_handle=True)
                fixed = fixed_indexes([c.kind for c in table.columns]) if table else None
                ok, decoded = reference(decode_change, raw, fixed)
                check(C.decode_change(raw, fixed, None, Change, records._OP_TYPES), ok,
                      decoded, must_handle=True)
                assert decoded == change


# -- the rest of the suite in the other mode ---------------------------------------------

@pytest.mark.heavy
def test_trail_tests_pass_in_the_other_mode():
    """Run the trail tests with the accelerator switched the other way."""
    pure = os.environ.get(_accel.PURE_PYTHON_ENV, "") not in ("", "0")
    env = {**os.environ, _accel.PURE_PYTHON_ENV: "0" if pure else "1"}
    tests = sorted(str(p) for p in (ROOT / "tests" / "unit").glob("test_trail_*.py")
                   if p.name != Path(__file__).name)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *tests], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
