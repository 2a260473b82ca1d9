"""The C row path (``_pgfast``) gives exactly the Python path's D areas, or hands back.

The Python path — pgoutput decoding, ``decode_row``, the TABLE COLS trim and the trail's D
area encoding — is the reference.  Random row changes over every mapped type (NULLs,
unchanged TOAST values, key and full old images, key changes, COLS masks) must encode to
the same operation and bytes; the C code may decline (``None``) only where the Python path
has work it does not do (a time zone offset to convert, a value needing LOB pieces).
"""

from __future__ import annotations

import random
import struct

import pytest
from test_pgoutput import tup

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres import pgoutput as pgo
from trailgate.capture.postgres.rows import build_relation, decode_row
from trailgate.capture.postgres.types import classify
from trailgate.trail.records import _data_area, encode_row_record
from trailgate.trail.values import MAX_VALUE_BYTES

pytestmark = pytest.mark.skipif(not fastpath.available, reason="the C row path is not built")

TYPES = ["integer", "numeric(12,2)", "boolean", "character(5)", "date",
         "timestamp without time zone", "timestamp with time zone", "bytea", "text",
         "character varying(30)", "integer[]", "double precision"]
OID = 16_400


def _relation(key: list[int], identity: str = "d") -> pgo.Relation:
    cols = [pgo.RelationColumn(f"c{i}", 0, -1, i in key) for i in range(len(TYPES))]
    return pgo.Relation(OID, "public", "t", identity, cols)


def _text(rng: random.Random) -> str:
    alphabet = "abc XYZ 019 é ß 中 😀 \\ ' \" \t"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random, type_name: str) -> str:
    stamp = (f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
             f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    if type_name in ("integer", "double precision"):
        return rng.choice([str(rng.randint(-10**9, 10**9)), "0", "NaN", "-1.5e+300"])
    if type_name.startswith("numeric"):
        return rng.choice([f"{rng.randint(-10**6, 10**6)}.{rng.randint(0, 99):02d}", "NaN"])
    if type_name == "boolean":
        return rng.choice(["t", "f"])
    if type_name.startswith("character("):
        return _text(rng)[:5]
    if type_name == "date":
        return rng.choice([stamp[:10], "infinity", "-infinity", stamp[:10] + " BC"])
    if type_name.startswith("timestamp"):
        frac = "." + str(rng.randint(0, 999999)).rjust(6, "0")[:rng.randint(1, 6)]
        text = rng.choice([stamp, stamp + frac, "infinity", "-infinity", stamp + " BC",
                           "10000-01-01 00:00:00", stamp + ".1234567"])
        if "with" in type_name and text[0].isdigit() and "BC" not in text:
            text += rng.choice(["+00", "+00", "+00:00", "+05:30", "-08", "+0000"])
        return text
    if type_name == "bytea":
        return "\\x" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 9))).hex()
    if type_name == "integer[]":
        return "{" + ",".join(str(rng.randint(0, 9)) for _ in range(rng.randint(0, 3))) + "}"
    if rng.random() < 0.02:
        return "x" * (MAX_VALUE_BYTES + rng.randint(-2, 3))  # around the LOB limit
    return _text(rng)


def _tuple(values: list[pgo.TupleValue]) -> bytes:
    return tup(*values)


def _row(rng: random.Random, nulls: bool = True, toast: bool = False
         ) -> list[pgo.TupleValue]:
    row: list[pgo.TupleValue] = []
    for t in TYPES:
        r = rng.random()
        if nulls and r < 0.12:
            row.append(None)
        elif toast and r < 0.25:
            row.append(pgo.UNCHANGED_TOAST)
        else:
            row.append(_value(rng, t))
    return row


def _message(rng: random.Random, key: list[int], identity: str) -> bytes:
    head = struct.pack(">I", OID)
    kind = rng.choice("IUUD")
    if kind == "I":
        return b"I" + head + b"N" + _tuple(_row(rng))
    old = _row(rng)
    if identity == "d":  # a key image: the key's values, NULL elsewhere
        old = [old[i] if i in key and old[i] is not None else (None if i not in key else "7")
               for i in range(len(TYPES))]
    marker = {"d": b"K", "f": b"O"}[identity]
    if kind == "D":
        return b"D" + head + marker + _tuple(old)
    new = _row(rng, toast=True)
    for i in range(len(TYPES)):
        if rng.random() < 0.4 and old[i] is not None:
            new[i] = old[i]  # unchanged columns, so full images compare equal
    if rng.random() < 0.2:
        return b"U" + head + b"N" + _tuple(new)  # no old image
    if identity == "d" and rng.random() < 0.5:
        return b"U" + head + b"N" + _tuple(new)  # key unchanged: pgoutput sends no old
    return b"U" + head + marker + _tuple(old) + b"N" + _tuple(new)


def _needs_python(data: bytes) -> bool:
    """Values only the Python path converts: a real time zone offset, a LOB-sized value."""
    text = data.decode("utf-8", "replace")
    offset = any(z in text for z in ("+05:30", "-08\x00", "-08t", "-08n", "-08u")) \
        or text.endswith("-08")
    return offset or len(data) > MAX_VALUE_BYTES


def _python(rel, data: bytes, keep: frozenset[int] | None) -> tuple[int, bytes, bool]:
    change = decode_row((rel, 99, data), 0)
    if keep is not None:
        change.after = None if change.after is None else {
            i: v for i, v in change.after.items() if i in keep}
        change.before = None if change.before is None else {
            i: v for i, v in change.before.items() if i in keep}
    area, lobs = _data_area(change, rel.table)
    return int(change.op), area, bool(lobs)


@pytest.mark.parametrize("identity", ["d", "f"])
@pytest.mark.parametrize("seed", range(4))
def test_random_changes_match_python(identity: str, seed: int) -> None:
    rng = random.Random(seed * 7 + (identity == "f"))
    key = [0, 3] if identity == "d" else list(range(len(TYPES)))
    types = [classify(t) for t in TYPES]
    rel = build_relation(_relation(key, identity), types, {"c0"})
    handled = 0
    for n in range(600):
        data = _message(rng, key, identity)
        keep = None if n % 3 else frozenset(rng.sample(range(len(TYPES)), 6)) | set(key)
        mask = fastpath.keep_mask(len(TYPES), keep)
        fast = fastpath.encode_change(data, rel.layout, mask)
        try:
            op, area, lobs = _python(rel, data, keep)
        except ValueError as exc:  # a key image too big for a record: C declines it too
            assert "before image" in str(exc) and fast is None
            continue
        if fast is None:
            assert lobs or _needs_python(data), f"C declined a plain change: {data!r}"
            continue
        handled += 1
        assert (int(fast[0]), fast[1]) == (op, area), f"differs for {data!r} keep={keep}"
        assert not lobs
        lsn = rng.randrange(1 << 40)
        record = fastpath.row_encoder(data, rel.layout, mask, "public.t", 2_000 + n, lsn)
        assert record == encode_row_record(fast[0], "public.t", area, 2_000 + n, lsn,
                                           lsn >> 24, None, None)
    assert handled > 400


def test_key_change_is_a_pk_update_with_the_before_key() -> None:
    rel = build_relation(_relation([0]), [classify(t) for t in TYPES], set())
    old = [None] * len(TYPES)
    old[0] = "1"
    new = ["2"] + ["x"] * (len(TYPES) - 1)
    new[2], new[4], new[5], new[6], new[7] = "t", "2024-01-02", "2024-01-02 03:04:05.5", \
        "2024-01-02 03:04:05+00", "\\x00ff"
    data = b"U" + struct.pack(">I", OID) + b"K" + _tuple(old) + b"N" + _tuple(new)
    fast = fastpath.encode_change(data, rel.layout, None)
    assert fast is not None and fast[0] is pgo_op("PK_UPDATE")
    assert (int(fast[0]), fast[1]) == _python(rel, data, None)[:2]


def pgo_op(name: str):
    from trailgate.model import OpType

    return OpType[name]


def test_malformed_and_unsupported_messages_are_declined() -> None:
    rng = random.Random(5)
    rel = build_relation(_relation([0]), [classify(t) for t in TYPES], set())
    head = struct.pack(">I", OID)
    binary = b"I" + head + b"N" + struct.pack(">h", len(TYPES)) + b"b" + b"\x00" * 40
    assert fastpath.encode_change(binary, rel.layout, None) is None
    short = b"I" + head + b"N" + _tuple(["1"])  # fewer columns than the relation
    assert fastpath.encode_change(short, rel.layout, None) is None
    for _ in range(300):
        data = _message(rng, [0], "d")
        cut = data[:rng.randrange(len(data))]
        assert fastpath.encode_change(cut, rel.layout, None) is None
        noisy = bytearray(data)
        noisy[rng.randrange(5, len(noisy))] = rng.randrange(256)
        result = fastpath.encode_change(bytes(noisy), rel.layout, None)
        if result is not None:  # still well formed: it must say what Python says
            try:
                expected = _python(rel, bytes(noisy), None)
            except Exception:
                pytest.fail(f"C accepted what Python rejects: {bytes(noisy)!r}")
            assert (int(result[0]), result[1]) == expected[:2]


def _chunk(rng: random.Random, key: list[int]) -> list[tuple[int, bytes | None]]:
    """A read-ahead chunk: row changes of two relations, keepalives, a commit, odd items."""
    other = struct.pack(">I", OID + 1)
    chunk: list[tuple[int, bytes | None]] = []
    for n in range(400):
        r = rng.random()
        lsn = 1_000_000 + 10 * n
        if r < 0.03:
            chunk.append((lsn, None))
        elif r < 0.06:
            chunk.append((lsn, b"I" + other + b"N" + _tuple(["1"])))
        elif r < 0.07:
            chunk.append((lsn, b"C" + bytes(25)))
        else:
            chunk.append((lsn, _message(rng, key, "d")))
    return chunk


@pytest.mark.parametrize("seed", range(3))
def test_encode_rows_is_encode_row_over_a_run(seed: int) -> None:
    """One call takes the run of the relation's row changes from ``start`` and stops at
    the first item that is not one, at one ``encode_row`` declines, at ``room`` or at the
    byte budget — each taken item's record exactly ``encode_row``'s."""
    rng = random.Random(seed)
    key = [0, 3]
    rel = build_relation(_relation(key), [classify(t) for t in TYPES], set())
    rel_key = struct.pack(">I", OID)
    chunk = _chunk(rng, key)
    i, taken = 0, 0
    while i < len(chunk):
        room, budget = rng.choice([(1000, 1 << 30), (3, 1 << 30), (1000, 600)])
        out: list[bytes] = [b"keep"]
        nxt, nbytes = fastpath.rows_encoder(chunk, i, len(chunk), rel_key, rel.layout, None,
                                            "public.t", 77, out, room, budget)
        records = out[1:]
        assert out[0] == b"keep" and nxt - i == len(records) <= room
        assert nbytes == sum(map(len, records))
        for k, record in enumerate(records):
            lsn, data = chunk[i + k]
            assert record == fastpath.row_encoder(data, rel.layout, None, "public.t", 77, lsn)
        assert sum(map(len, records[:-1])) < budget
        if nxt < len(chunk) and len(records) < room and nbytes < budget:
            lsn, data = chunk[nxt]  # where it stopped: not one it would take
            assert (data is None or data[1:5] != rel_key or data[0] not in b"IUD"
                    or fastpath.row_encoder(data, rel.layout, None, "public.t", 77,
                                            lsn) is None)
        taken += len(records)
        i = max(nxt, i + 1)
    assert taken > 200


def test_next_mark_finds_keepalives_begins_and_commits() -> None:
    rng = random.Random(9)
    chunk = _chunk(rng, [0])
    chunk[50] = (5, b"B" + bytes(20))
    for start in range(0, len(chunk), 7):
        for stop in (start, start + 13, len(chunk), len(chunk) + 5):
            got = fastpath.next_mark(chunk, start, stop)
            assert got == fastpath._next_mark(chunk, start, stop)
            for k in range(start, min(got, len(chunk))):
                assert chunk[k][1] is not None and chunk[k][1][:1] not in (b"B", b"C")
            if got < min(stop, len(chunk)):
                assert chunk[got][1] is None or chunk[got][1][:1] in (b"B", b"C")


def test_a_negative_start_is_refused_not_read_before_the_list() -> None:
    """``encode_rows`` and ``next_mark`` read ``chunk[start]`` in C: a negative start read
    before the list's items (a heap overflow the sanitizer run found with mutated calls,
    tests/integration/test_sanitizers.py); it is an IndexError now."""
    rng = random.Random(3)
    rel = build_relation(_relation([0]), [classify(t) for t in TYPES], set())
    chunk = _chunk(rng, [0])[:20]
    with pytest.raises(IndexError, match="negative start"):
        fastpath.rows_encoder(chunk, -1, len(chunk), struct.pack(">I", OID), rel.layout, None,
                              "public.t", 77, [], 10, 1 << 20)
    with pytest.raises(IndexError, match="negative start"):
        fastpath.next_mark(chunk, -3, len(chunk))
