"""The C calls of the batched Extract path on odd and broken input.

``scan_span`` (where a stream's read stops) must agree with its Python reference on random
streams and bounds, and both must name the LSN of a truncated Begin or Commit.
``encode_txns`` must take only whole, sound transactions from garbled streams — truncated,
bit-flipped, spliced messages — and never crash or read past a message; what it leaves goes
to the general path, where a malformed message is a ``SourceError`` naming its LSN.  The
heavy case runs the garbling under AddressSanitizer and UBSan.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from txn_stream_support import PG_TYPES, TABLES, ReplayStream, chunks, random_stream

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres import pgoutput as pgo
from trailgate.capture.postgres.capture import CapturedBatch, PgCapture
from trailgate.capture.postgres.rows import build_relation
from trailgate.capture.postgres.types import classify
from trailgate.errors import SourceError
from trailgate.trail.records import decode_record
from trailgate.trail.txn_batch import TxnBatch

pytestmark = pytest.mark.skipif(not fastpath.available, reason="the C row path is not built")

ROOT = Path(__file__).resolve().parents[2]
_TYPE_NAMES = {"int4": "integer", "text": "text", "numeric": "numeric", "bool": "boolean",
               "timestamp": "timestamp without time zone", "bytea": "bytea", "date": "date"}


def _capture(items: list, seed: int) -> PgCapture:
    """A capture of a replayed stream whose relations are known already (no database)."""
    cap = PgCapture("host=/nonexistent dbname=none", "s", "p", encode_plan=lambda t: b"",
                    stream=ReplayStream(chunks(items, seed)))  # type: ignore[arg-type]
    for oid, (schema, name, cols, nkey) in TABLES.items():
        msg = pgo.Relation(oid, schema, name, "d", [
            pgo.RelationColumn(c, PG_TYPES[t], -1, i < nkey)
            for i, (c, t) in enumerate(cols)])
        cap._relations[oid] = build_relation(msg, [classify(_TYPE_NAMES[t]) for _, t in cols],
                                             set())
    return cap


def _plain(items: list) -> list:
    """The stream without Relation messages (the capture knows every table already) and
    without s.t2's rows (a Relation message changes its columns)."""
    t2 = struct.pack(">I", 90002)
    return [(lsn, data) for lsn, data in items
            if data is None or not (data[:1] == b"R" or (data[:1] in (b"I", b"U", b"D")
                                                           and data[1:5] == t2))]


def _rels(cap: PgCapture) -> dict:
    return {oid: (rel.layout, None, rel.table.qualified_name)
            for oid, rel in cap._relations.items()}


def _garble(rng: random.Random, items: list) -> list:
    out = list(items)
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(len(out))
        lsn, data = out[k]
        if data is None:
            continue
        how = rng.random()
        if how < 0.4:  # truncated
            data = data[:rng.randrange(len(data))]
        elif how < 0.7:  # a byte changed
            at = rng.randrange(len(data))
            data = data[:at] + bytes((rng.randrange(256),)) + data[at + 1:]
        elif how < 0.85:  # a length field made huge
            at = rng.randrange(len(data))
            data = data[:at] + b"\x7f\xff\xff\xf0" + data[at + 4:]
        else:  # another message's bytes spliced in
            other = out[rng.randrange(len(out))][1] or b""
            data = data[:rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]
        out[k] = (lsn, data)
    return out


def test_scan_span_agrees_with_its_reference():
    rng = random.Random(5)
    for seed in range(30):
        items = random_stream(seed, 60)
        lsns = [lsn for lsn, _ in items]
        for part in chunks(items, seed, most=80):
            for _ in range(6):
                i = rng.randrange(len(part) + 1)
                end = rng.choice(lsns) + rng.choice([-1, 0, 1, 10_000])
                bound = rng.choice([0, rng.choice(lsns)])
                in_txn = rng.random() < 0.5
                assert fastpath.scan_span(part, i, len(part), end, bound, in_txn) == \
                    fastpath._scan_span(part, i, len(part), end, bound, in_txn)


def test_lsns_of_any_size_are_read_as_unsigned_64_bit_numbers():
    """An item's LSN is an unsigned 64-bit number: one past 2**63 is read as one below it,
    a negative one or one past 2**64 is an ``OverflowError``, something else a
    ``TypeError``."""
    for base in (0x1_0000_0000, (1 << 63) - 50, (1 << 63) + 7, (1 << 64) - 200):
        items = [(base + k, None) for k in range(5)] + [(base + 9, b"X")]
        for end in (base + 2, base + 9, base + 100):
            assert fastpath.scan_span(items, 0, len(items), end, 0, False) == \
                fastpath._scan_span(items, 0, len(items), end, 0, False)
    for bad, error in ((-1, OverflowError), (-(1 << 70), OverflowError), (1 << 64, OverflowError),
                       (1.5, TypeError), (True, None)):
        items = [(bad, None)]
        if error is None:  # a bool is an int
            fastpath.scan_span(items, 0, 1, 10, 0, False)
            continue
        with pytest.raises(error):
            fastpath.scan_span(items, 0, 1, 10, 0, False)
        with pytest.raises(error):
            fastpath.txns_encoder(items, 0, 1, {}, 0, 10, 5, 100, 5)


@pytest.mark.parametrize("message", [b"B\x00\x00\x00\x01", b"C\x00" + b"\x00" * 10, b""])
def test_scan_span_names_the_lsn_of_a_broken_begin_or_commit(message):
    in_txn = message[:1] == b"C"
    part = [(0x1_0000_0010, message)]
    for scan in (fastpath.scan_span, fastpath._scan_span):
        with pytest.raises(ValueError, match=r"pgoutput .*message at LSN 1/10"):
            scan(part, 0, 1, 1 << 40, 0, in_txn)


def test_encode_txns_takes_only_whole_sound_transactions_of_garbled_streams():
    rng = random.Random(9)
    clean = _plain(random_stream(21, 300))
    cap = _capture(clean, 21)
    rels = _rels(cap)
    taken = 0
    for k in range(400):
        items = _garble(rng, clean)
        start = 0
        while start < len(items):
            data = items[start][1]
            if data is None or data[:1] != b"B":
                start += 1
                continue
            nxt, count, blob, _, _, _ = fastpath.txns_encoder(
                items, start, len(items), rels, 0, 1 << 62, 50, 1 << 20, (16, 1000)[k % 2])
            assert start <= nxt <= len(items)
            if blob is not None:
                batch = TxnBatch.parse(blob)
                for txn in batch.transactions():
                    for _, records in txn.runs:
                        for record in records:
                            decode_record(record, 0, len(record))
                taken += batch.count
            start = nxt + 1 if count == 0 else nxt
    assert taken > 10_000  # most of the stream is still whole


def _txn_of(rows: int, xid: int = 900, lsn: int = 0x2_0000_0000, cut: int = 0) -> list:
    """One transaction of ``rows`` inserts into s.t1 (``cut``: its last items left out)."""
    items = [(lsn, b"B" + struct.pack(">qqI", lsn + rows + 1, 800_000_000_000_000, xid))]
    for k in range(rows):
        items.append((lsn + 1 + k, b"I" + struct.pack(">I", 90001) + b"N" + struct.pack(">h", 5)
                      + b"".join(b"t" + struct.pack(">i", len(v)) + v
                                 for v in (str(k).encode(), b"x" * 40, b"1.5", b"t",
                                           b"2026-11-28 10:00:00"))))
    end = lsn + rows + 1
    items.append((end, b"C" + struct.pack(">bqqq", 0, end, end + 8, 800_000_000_000_000)))
    return items[:len(items) - cut]


def test_encode_txns_leaves_long_cut_and_oversized_transactions_before_encoding_them():
    """A transaction of more than ``max_rows`` row changes, one whose Commit is not in
    ``chunk[:stop]``, or one whose own records pass ``max_bytes`` is not taken (the general
    path takes it); one of ``max_rows`` rows is, and a batch ends before such a one."""
    cap = _capture(_plain(random_stream(3, 5)), 3)
    rels = _rels(cap)
    encode = fastpath.txns_encoder
    one = _txn_of(20)
    assert encode(one, 0, len(one), rels, 0, 1 << 62, 50, 1 << 20, 20)[:2] == (len(one), 1)
    assert encode(one, 0, len(one), rels, 0, 1 << 62, 50, 1 << 20, 19)[:3] == (0, 0, None)
    for cut in (1, 2, len(one) - 1):  # the Commit, then rows too, are past the chunk's end
        part = one[:len(one) - cut]
        assert encode(part, 0, len(part), rels, 0, 1 << 62, 50, 1 << 20, 100)[:3] == \
            (0, 0, None)
    assert encode(one, 0, len(one) - 1, rels, 0, 1 << 62, 50, 1 << 20, 100)[:3] == (0, 0, None)
    nxt, count, blob, _, _, _ = encode(one, 0, len(one), rels, 0, 1 << 62, 50, 1 << 20, 100)
    size = len(TxnBatch.parse(blob).records)
    assert encode(one, 0, len(one), rels, 0, 1 << 62, 50, size, 100)[:2] == (len(one), 1)
    assert encode(one, 0, len(one), rels, 0, 1 << 62, 50, size - 1, 100)[:3] == (0, 0, None)
    # small transactions, then one too long: the batch holds the small ones
    small = _txn_of(2, 901, 0x3_0000_0000) + _txn_of(3, 902, 0x4_0000_0000)
    items = small + _txn_of(30, 903, 0x5_0000_0000)
    nxt, count, blob, csn, _, _ = encode(items, 0, len(items), rels, 0, 1 << 62, 50, 1 << 20,
                                         16)
    assert (nxt, count, TxnBatch.parse(blob).count) == (len(small), 2, 2)
    assert csn == 0x4_0000_0000 + 4


@pytest.mark.parametrize("kind", ["B", "C", "U"])
def test_a_broken_message_in_a_batched_read_names_its_lsn(kind):
    """The batch stops before the transaction; the general path says what is wrong."""
    items = _plain(random_stream(31, 40))
    victims = [k for k, (_, d) in enumerate(items)
               if d is not None and d[:1] == kind.encode() and k > len(items) // 2]
    k = victims[0]
    lsn, data = items[k]
    items[k] = (lsn, data[:len(data) - 3])
    cap = _capture(items, 31)
    where = f"LSN {pgo.format_lsn(lsn)}"
    with pytest.raises(SourceError, match=where):
        for t in cap.read_batched(0, 1 << 62):
            if not isinstance(t, CapturedBatch):
                list(t.transaction.changes)


SANITIZED = """
import random, sys
sys.path[:0] = [sys.argv[1]]
import _pgfast
from trailgate.capture.postgres import fastpath
fastpath.txns_encoder = _pgfast.encode_txns
fastpath.scan_span = _pgfast.scan_span
import test_pgfast_txns as t
t.test_scan_span_agrees_with_its_reference()
t.test_encode_txns_takes_only_whole_sound_transactions_of_garbled_streams()
t.test_encode_txns_leaves_long_cut_and_oversized_transactions_before_encoding_them()
print("sanitized ok")
"""


@pytest.mark.heavy
def test_garbled_streams_under_address_sanitizer(tmp_path):
    """The same garbling with ``_pgfast.c`` built with ``-fsanitize=address,undefined``:
    no read or write outside a buffer, no undefined behaviour."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    lib = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                         text=True).stdout.strip()
    if not lib or not Path(lib).exists():
        pytest.skip("no libasan")
    out = tmp_path / ("_pgfast" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc, "-shared", "-fPIC", "-g", "-O1", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
                    f"-I{sysconfig.get_paths()['include']}", "-o", str(out),
                    str(ROOT / "src/trailgate/capture/postgres/_pgfast.c")], check=True)
    env = {**os.environ, "LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(Path(__file__).parent)])}
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(SANITIZED), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0 and "sanitized ok" in run.stdout, run.stderr[-4000:]


def test_a_read_left_before_its_end_abandons_the_stream():
    """A span holds many transactions: a consumer that stops inside a read may not have
    taken some of them, so the stream is marked for a new one instead of being read on
    (a read taken to its end leaves it usable)."""
    whole = _capture(_plain(random_stream(5, 30)), 5)
    for _ in whole.read_batched(0, 1 << 62):
        pass
    assert not whole._stream.abandoned  # type: ignore[union-attr]
    left = _capture(_plain(random_stream(5, 30)), 5)
    for _ in left.read_batched(0, 1 << 62):
        break
    assert left._stream.abandoned  # type: ignore[union-attr]
