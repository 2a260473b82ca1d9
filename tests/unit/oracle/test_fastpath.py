"""The fast paths decode exactly what the token parser (the reference) decodes, and never
accept what the reference refuses: every change of every fixture, of generated dumps, and of
thousands of random mutations gives the same object or the same error both ways.  The regex
fast path is checked change by change; the C record reader record by record, also on text
cut short, garbled or holding numbers past 64 bits."""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import pytest

from trailgate.capture.oracle import DumpCapture, dumpparser, recordscan, rowchanges
from trailgate.capture.oracle.changes import KdoRow
from trailgate.capture.oracle.datatypes import CHARSETS, encode_number
from trailgate.capture.oracle.dictionary import Dictionary, OracleColumn
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.capture.oracle.records import RBA
from trailgate.capture.oracle.rowchanges import RowBuilder
from trailgate.errors import SourceError
from trailgate.trail._accel import PURE_PYTHON_ENV

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
RBA0 = RBA(0x44, 5, 0x10)


def generated() -> str:
    out = io.StringIO()
    w = DumpWriter(out)
    row = [encode_number(1011), b"Jordan", None, b"M", b"x" * 40, b"", encode_number(2013),
           encode_number(-2.5)]
    a, b = Xid(4, 11, 854), Xid(6, 27, 1204)
    w.insert(a, 10, row)
    w.update(a, 10, {7: encode_number(9000), 4: None}, {7: encode_number(6000), 4: b"y" * 30},
             [(1, encode_number(1011))])
    w.delete(b, 3, row)
    w.commit(b, rollback=True)
    w.commit(a)
    w.end()
    return out.getvalue()


def chunks(text: str) -> list[tuple[str, int, int]]:
    """(change text, first line, change number) of every change in a dump text."""
    out = []
    for line, rec in dumpparser._record_texts(io.StringIO(text)):
        starts = [*dumpparser._change_starts(rec), len(rec)]
        for k in range(len(starts) - 1):
            a, b = starts[k], starts[k + 1]
            out.append((rec[a:b], line + rec.count("\n", 0, a), k + 1))
    return out


def outcome(fn):
    try:
        return "ok", fn()
    except SourceError as exc:
        return "error", str(exc)


def same_both_ways(text: str, line: int, number: int) -> None:
    fast = outcome(lambda: dumpparser._change_text("t.dmp", RBA0, text, line, number))
    ref = outcome(lambda: dumpparser._change("t.dmp", RBA0, dumpparser._lines(text, line),
                                             number))
    assert fast == ref, text


def corpus() -> list[str]:
    texts = [p.read_text(encoding="latin-1") for p in sorted(FIXTURES.glob("*.dmp"))]
    return [*texts, generated()]


@pytest.mark.parametrize("index", range(len(corpus())))
def test_fixtures_decode_the_same_both_ways(index):
    for text, line, number in chunks(corpus()[index]):
        same_both_ways(text, line, number)


def test_values_wrapped_across_lines_decode_the_same():
    text = generated()
    wrapped = re.sub(r"(col  4: \[40\](?: [0-9a-f]{2}){20})", r"\1\n       ", text)
    assert wrapped != text
    for chunk in chunks(wrapped):
        same_both_ways(*chunk)


_MUTATIONS = [
    lambda tok: tok.upper(),
    lambda tok: "",
    lambda tok: tok + " " + tok,
    lambda tok: tok[:-1],
    lambda tok: tok + "0",
    lambda tok: "\n" + tok,
    lambda tok: tok + "\n\n",
    lambda tok: "[ " + tok,
    lambda tok: "zz",
    lambda tok: "*NULL*",
    lambda tok: "xid:",
    lambda tok: "KDO Op code: URP",
    lambda tok: "Header (20 bytes)\n",
    lambda tok: "op: F",
    lambda tok: "\t" + tok,  # whitespace the regexes' \s takes but the reference may not
    lambda tok: tok + "\x1c",
]


def test_random_mutations_fail_or_succeed_the_same_both_ways():
    rng = random.Random(3)
    base = [c for t in corpus() for c in chunks(t)]
    tried = 0
    for _ in range(6000):
        text, line, number = rng.choice(base)
        toks = list(re.finditer(r"\S+", text))
        m = rng.choice(toks[1:])  # keep "CHANGE" itself
        new = rng.choice(_MUTATIONS)(m[0])
        same_both_ways(text[: m.start()] + new + text[m.end() :], line, number)
        tried += 1
    assert tried == 6000


def test_the_fast_path_takes_the_common_changes():
    """Not a speed test: the usual changes must not fall back to the reference parser."""
    from trailgate.capture.oracle.fastpath import fast_body

    taken = set()
    for text, line, _number in chunks(generated()):
        m = dumpparser._CHANGE_FAST.match(text)
        if m is None:
            assert dumpparser._MARKER_FAST.match(text) is not None
            continue
        op = f"{m[10]}.{m[11]}"
        cls = dumpparser.REGISTRY.get((int(m[10]), int(m[11])))
        if cls is None:
            continue
        change = cls(number=1, layer=int(m[10]), code=int(m[11]), line=line, cls=int(m[3]),
                     dba=int(m[5], 16))
        body = text[m.end():]
        sup = dumpparser._sup_line(body)
        assert fast_body(change, body if sup is None else body[: sup.start()], line), op
        taken.add(op)
    assert taken == {"5.1", "5.2", "5.4", "11.2", "11.3", "11.5"}


# -- the C record reader (_dumpscan.parse_record) -----------------------------------------
# It must give the reference's record (every change by the token parser) or None; after a
# None the Python path must still give the reference's record or error.  Malformed text of
# every kind (cut short, garbled, huge numbers, non-ASCII, control characters) must never
# crash it or make it accept what the reference refuses.

C = recordscan.parse_record
#: how many times over to run the C reader's random cases (the sanitizer build runs more)
ROUNDS = int(os.environ.get("TRAILGATE_DUMPSCAN_ROUNDS", "1"))
needs_c = pytest.mark.skipif(C is None, reason="the C record reader was not built "
                                                "(or TRAILGATE_PURE_PYTHON is set)")


def records(text: str) -> list[tuple[int, str]]:
    return list(dumpparser._record_texts(io.StringIO(text)))


def reference_record(rec: str, line: int, start: RBA | None = None):
    return outcome(lambda: dumpparser._record("t.dmp", rec, line, start,
                                              dumpparser.reference_change))


def c_same_as_reference(rec: str, line: int, start: RBA | None = None) -> bool:
    """Check one record both ways; whether the C reader took it."""
    assert C is not None
    want = reference_record(rec, line, start)
    got = C(rec, "t.dmp", line, start)
    if got is None:
        python = outcome(lambda: dumpparser._record("t.dmp", rec, line, start))
        assert python == want, (repr(rec), want)
        return False
    assert ("ok", got) == want, (repr(rec), want)
    return True


def bench_like() -> str:
    """Records as benchmarks/oracle_dump.py writes them (inserts, PK updates, deletes)."""
    out = io.StringIO()
    w = DumpWriter(out)
    row = [encode_number(10_000), b"Jordan", b"Sherwood", b"M", b"Manchester", b"Chemistry",
           encode_number(2013), encode_number(9000)]
    for t in range(3):
        xid = Xid(1 + t, t, 100 + t)
        w.insert(xid, 7, row)
        w.update(xid, 7, {7: encode_number(9000)}, {7: encode_number(7500)},
                 [(1, encode_number(10_000))])
        w.delete(xid, 7, row)
        w.commit(xid, seconds=0)
    w.end()
    return out.getvalue()


#: layouts the reference reads that the fixtures do not show: (name, pattern, replacement)
_VARIANTS = [
    ("CON_UID", r"(VLD: 0x05)", r"\1 CON_UID: 3721"),
    ("CON_ID", r"(CHANGE #\d+) TYP:", r"\1 CON_ID:3 TYP:"),
    ("marker CON_ID", r"MARKER SCN:", "MARKER CON_ID:1 SCN:"),
    ("FLG", r"RBL:0\n", "RBL:0 FLG:0x0001\n"),
    ("marker FLG", r"(OP:5\.20 ENC:0)", r"\1 FLG:0x0000"),
    ("Vector content", r"(nnew: \d+ size: 0)\n", r"\1\nVector content: \n"),
    ("other undo", r"opc: 11\.1 objn:", "opc: 11.19 objn:"),
    ("indented", r"\n(?=\S)", "\n   "),
    ("double spaces", r"(?<=:) (?=\S)", "  "),
    ("wrapped header", r" LEN: 0x0200", "\nLEN: 0x0200"),
    ("wrapped kdo", r" hdba: ", "\nhdba: "),
    ("wrapped value", r"(col  4: \[40\](?: [0-9a-f]{2}){20})", "\\1\n       "),
    ("lower-case supplemental", r"\n C2 ", "\n c2 "),
    ("28-byte header", r"Header \(20 bytes\)\n (\S+ \S+ \S+ \S+ \S+)",
     "Header (28 bytes)\n \\1 01000436 00000007"),
]


def variants() -> list[tuple[str, str]]:
    base = generated()
    out = []
    for name, pattern, repl in _VARIANTS:
        text = re.sub(pattern, repl, base)
        assert text != base, name
        out.append((name, text))
    return out


@needs_c
def test_c_reader_gives_the_reference_records_for_layout_variants():
    for name, text in variants():
        taken = 0
        for line, rec in records(text):
            taken += c_same_as_reference(rec, line)
        assert taken, name  # each variant is read in C somewhere, not only left to Python


@needs_c
def test_c_reader_gives_the_reference_records():
    taken = total = 0
    for text in corpus():
        for line, rec in records(text):
            taken += c_same_as_reference(rec, line)
            total += 1
    assert taken >= total - 3  # only the array insert and the direct load are left to Python


@needs_c
def test_c_reader_takes_the_common_records():
    """Not a speed test: the usual records must not fall back to the Python parser."""
    for text in (generated(), bench_like()):
        for line, rec in records(text):
            assert c_same_as_reference(rec, line), rec


@needs_c
def test_c_reader_skips_bodies_below_the_start_as_python_does():
    for line, rec in records(generated()):
        for start in (None, RBA(0, 0, 0), RBA(0x50, 5, 0x90), RBA(1 << 40, 0, 0)):
            assert c_same_as_reference(rec, line, start)


_C_MUTATIONS = [
    *_MUTATIONS,
    lambda tok: re.sub(r"\d+", "9" * 40, tok, count=1),  # a huge number
    lambda tok: re.sub(r"[0-9a-f]+", "f" * 30, tok, count=1),
    lambda tok: tok + "\u00e9",  # non-ASCII
    lambda tok: tok[:1] + "\u00a0" + tok[1:],  # a space Python's split sees, C refuses
    lambda tok: tok + "\x00",
    lambda tok: "\x1c" + tok,
    lambda tok: tok + "\r",
    lambda tok: "-" + tok,
    lambda tok: "0" + tok,
    lambda tok: "CHANGE #2",
]


@needs_c
def test_c_reader_random_mutations_fail_or_succeed_as_the_reference():
    rng = random.Random(11)
    base = [r for t in (*corpus(), bench_like(), *(v for _, v in variants()))
            for r in records(t)]
    taken = 0
    for _ in range(4000 * ROUNDS):
        line, rec = rng.choice(base)
        toks = list(re.finditer(r"\S+", rec))
        m = rng.choice(toks[1:])
        new = rng.choice(_C_MUTATIONS)(m[0])
        taken += c_same_as_reference(rec[: m.start()] + new + rec[m.end() :], line)
    assert taken > 800  # mutations the layout tolerates are still read in C


@needs_c
def test_c_reader_malformed_text_never_crashes_or_reads_past_the_end():
    rng = random.Random(5)
    base = [r for t in (*corpus(), bench_like()) for r in records(t)]
    palette = "0123456789abcdefx:.#[]()*- \n\t\x00\x7f\x85\xa0\u00e9\u2028\U0001f600"
    for _ in range(1500 * ROUNDS):
        line, rec = rng.choice(base)
        kind = rng.randrange(4)
        if kind == 0:  # cut short anywhere
            text = rec[: rng.randrange(len(rec) + 1)]
        elif kind == 1:  # garbled characters
            chars = list(rec)
            for _ in range(rng.randint(1, 4)):
                chars[rng.randrange(len(chars))] = rng.choice(palette)
            text = "".join(chars)
        elif kind == 2:  # a whole line dropped or doubled
            lines = rec.split("\n")
            k = rng.randrange(len(lines))
            lines[k : k + 1] = [] if rng.random() < 0.5 else [lines[k], lines[k]]
            text = "\n".join(lines)
        else:  # a number grown past 64 bits
            runs = list(re.finditer(r"[0-9a-f]+", rec))
            m = rng.choice(runs)
            text = rec[: m.start()] + m[0] * rng.randint(5, 12) + rec[m.end() :]
        c_same_as_reference(text, line)
    assert C("", "t.dmp", 1, None) is None
    assert C("REDO RECORD", "t.dmp", 1, None) is None


@needs_c
def test_c_reader_leaves_other_arguments_to_python():
    line, rec = records(generated())[0]
    assert C(rec.encode(), "t.dmp", line, None) is None
    assert C(rec, "t.dmp", "1", None) is None
    assert C(rec, "t.dmp", line, (1, 2)) is None
    assert C(rec, "t.dmp", line, ("a", 1, 2)) is None
    assert C(rec, "t.dmp", 1 << 70, None) is None
    assert C(rec, "t.dmp", (1 << 63) - 1, None) is None  # line numbers would overflow
    assert C(rec, "t.dmp", -1, None) is None


def test_pure_python_parse_gives_the_same_records(monkeypatch):
    """With the C reader (when built) and without it: the same records from a whole file."""
    path = FIXTURES / "multi_update.dmp"
    with_c = list(dumpparser.parse_dump(path))
    monkeypatch.setattr(dumpparser, "_c_record", None)
    assert list(dumpparser.parse_dump(path)) == with_c


def test_pure_python_env_turns_the_c_reader_off():
    path = str(FIXTURES / "single_update.dmp")
    code = ("from trailgate.capture.oracle import recordscan, dumpparser, rowchanges; "
            "from trailgate.capture.oracle import capture_oracle_dumps; "
            f"recs = list(dumpparser.parse_dump({path!r})); "
            "print(recordscan.parse_record is None, rowchanges.row_values is None, len(recs)); "
            f"print(repr(list(capture_oracle_dumps({str(US03)!r}, [{path!r}]))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, PURE_PYTHON_ENV: "1"}).stdout
    flags, captured = out.split("\n", 1)
    assert flags.split() == ["True", "True", "2"]
    assert captured.strip() == repr(list(DumpCapture(Dictionary.load(US03), [path])))


# -- the C row values (_dumpscan.row_values) -----------------------------------------------
# A row piece's trail-form values built in C must be the dict the Python code builds, or
# None; after a None the Python code gives the dict or its located error.  Checked piece by
# piece on random and mangled bytes of every column kind, and capture by capture (C values
# on and off) on every fixture and on random dumps.

V = recordscan.row_values
needs_c_values = pytest.mark.skipif(V is None, reason="the C row values were not built "
                                                      "(or TRAILGATE_PURE_PYTHON is set)")
US03 = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle" / "examples"
        / "us03_dictionary.json")
_KINDS = ["NUMBER", "VARCHAR2", "CHAR", "NVARCHAR2", "DATE", "TIMESTAMP", "RAW", "LONG",
          "FLOAT", "NCHAR"]


def kinds_dictionary(charset: str) -> Dictionary:
    """One table with a column of every type (the key first), data object 76495."""
    cols = [{"name": "ID", "type": "NUMBER", "nullable": False}]
    cols += [{"name": f"C{k}_{t}", "type": t} for k, t in enumerate(_KINDS)]
    return Dictionary.from_dict({
        "format": "trailgate-oracle-dictionary", "version": 1, "database_charset": charset,
        "tables": [{"owner": "K", "table": "KINDS", "object_id": 76490,
                    "data_object_id": 76495, "columns": cols,
                    "primary_key": {"name": "KINDS_PK", "columns": ["ID"]}}]})


def random_value(rng: random.Random, col: OracleColumn, bad: float = 0.2) -> bytes | None:
    """A value for ``col``: mostly valid, a ``bad`` share random bytes or one byte mangled."""
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.1 + bad:  # any bytes at all
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 7, 11, 21, 22])))
    if col.type in ("NUMBER", "FLOAT"):
        value = encode_number(rng.choice([0, 1, -1, 10 ** rng.randrange(40),
                                          rng.randrange(-10 ** 12, 10 ** 12),
                                          f"{rng.randrange(-999, 999)}.{rng.randrange(10**6)}",
                                          f"-0.{'0' * rng.randrange(5)}{rng.randrange(1, 99)}",
                                          f"1e{rng.randrange(-129, 125)}"]))
    elif col.type in ("DATE", "TIMESTAMP"):
        value = bytes([rng.randrange(100, 200), rng.randrange(100, 200), rng.randrange(1, 13),
                       rng.randrange(1, 32), rng.randrange(1, 25), rng.randrange(1, 61),
                       rng.randrange(1, 61)])
        if col.type == "TIMESTAMP" and rng.random() < 0.7:
            value += rng.randrange(1_000_000_000).to_bytes(4, "big")
    elif col.type == "RAW":
        value = rng.randbytes(rng.randrange(8))
    else:
        text = rng.choice(["Jordan", "", "Zoë", "東京", "a\u00a0b", "x" * 30, "\U0001f600"])
        value = text.encode(CHARSETS[col.charset], errors="replace")
    if rng.random() < bad and value:  # one byte mangled
        k = rng.randrange(len(value))
        value = value[:k] + bytes([rng.randrange(256)]) + value[k + 1:]
    return value


def built(fn):
    try:
        return "ok", fn()
    except SourceError as exc:
        return "error", str(exc)
    except rowchanges._Skip:  # the skip policy drops the change (warned)
        return "skipped", None


@needs_c_values
@pytest.mark.parametrize("charset", ["AL32UTF8", "WE8MSWIN1252"])
def test_c_row_values_random_pieces_as_python(monkeypatch, charset):
    dictionary = kinds_dictionary(charset)
    table = dictionary.tables[0]
    columns = table.columns
    rng = random.Random(f"row values {charset}")
    record = SimpleNamespace(path="t.dmp", rba=RBA0, julian_time=0)
    change = SimpleNamespace(line=7, dba=0x01000436, obj=76495)
    taken = 0
    for _ in range(1500 * ROUNDS):
        on_unknown = rng.choice(["stop", "skip"])
        n = rng.randrange(len(columns) + 2)
        first = rng.choice([0, 0, 0, 1, 3, len(columns), -2])
        cols = [(first + k, random_value(rng, columns[(first + k) % len(columns)]))
                for k in range(n)]
        if rng.random() < 0.1 and cols:
            cols.append(cols[0])  # a column twice: the later value stands, as in Python
        offset = rng.choice([1, 1, 1, 0, 2, -1])
        fb = "--H-FL--" if rng.random() < 0.9 else "--H-F---"
        row = KdoRow(3, fb, cols)
        cases = []
        for use_c in (True, False):
            monkeypatch.setattr(rowchanges, "row_values", V if use_c else None)
            b = RowBuilder(dictionary, on_unknown, warn=lambda _m: None)
            cases.append((built(partial(b._piece, record, change, table, cols, offset)),
                          built(partial(b._insert, record, change, table, row))))
            if use_c:
                layout = b._layout(table)
                taken += V(layout.by_column, cols, offset, None) is not None
        assert cases[0] == cases[1], (cols, offset)
    assert taken > 1500 * ROUNDS // 6  # many pieces are decoded in C, not handed back


@needs_c_values
def test_c_row_values_capture_the_fixtures_and_random_dumps_as_python(monkeypatch, tmp_path):
    def capture(path: Path, dictionary: Dictionary, on_unknown: str):
        warnings: list[str] = []
        try:
            cap = DumpCapture(dictionary, [path], on_unknown=on_unknown)
            txns = list(cap)
            warnings = cap.warnings
            return "ok", txns, warnings, cap.rolled_back
        except SourceError as exc:
            return "error", str(exc), warnings

    def both_ways(path: Path, dictionary: Dictionary, on_unknown: str = "stop") -> str:
        got = []
        for fn in (V, None):
            monkeypatch.setattr(rowchanges, "row_values", fn)
            got.append(capture(path, dictionary, on_unknown))
        assert got[0] == got[1], path
        return got[0][0]

    us03 = Dictionary.load(US03)
    outcomes: Counter[str] = Counter()
    for path in sorted(FIXTURES.glob("*.dmp")):
        outcomes[both_ways(path, us03)] += 1
    assert outcomes["ok"] >= 7, outcomes
    outcomes.clear()
    rng = random.Random("row values in dumps")
    for round_ in range(12 * ROUNDS):
        charset = rng.choice(["AL32UTF8", "WE8MSWIN1252"])
        dictionary = kinds_dictionary(charset)
        columns = dictionary.tables[0].columns
        out = io.StringIO()
        w = DumpWriter(out)
        for t in range(8):
            xid = Xid(4, t, 100 + t)
            key = encode_number(t)

            def row(key: bytes = key, rest: list[OracleColumn] = columns[1:]
                    ) -> list[bytes | None]:
                return [key, *(random_value(rng, c, 0.01) for c in rest)]
            w.insert(xid, t, row())
            picked = rng.sample(range(1, len(columns)), 2)
            w.update(xid, t, {c: random_value(rng, columns[c], 0.01) for c in picked},
                     {c: random_value(rng, columns[c], 0.01) for c in picked}, [(1, key)])
            w.delete(xid, t, row())
            w.commit(xid, rollback=rng.random() < 0.1)
        w.end()
        path = tmp_path / f"r{round_}.dmp"
        path.write_text(out.getvalue(), encoding="latin-1")
        outcomes[both_ways(path, dictionary, rng.choice(["stop", "skip"]))] += 1
    assert outcomes["ok"] >= 2 and outcomes["error"] >= 2, outcomes  # both kinds compared


@needs_c_values
def test_c_row_values_leave_odd_arguments_to_python():
    table = kinds_dictionary("AL32UTF8").tables[0]
    layout = RowBuilder(kinds_dictionary("AL32UTF8"))._layout(table)
    assert layout.by_column is not None
    good = [(0, encode_number(5))]
    assert V(layout.by_column, good, 1, None) == {table.columns[0]: b"5"}
    assert V(layout.by_index, good, 1, {0: None, 1: None}) == {0: b"5", 1: None}
    for args in [(list(layout.by_column), good, 1, None), (layout.by_column, tuple(good), 1,
                 None), (layout.by_column, good, "1", None), (layout.by_column, good, 1, []),
                 (layout.by_column, [(0, "05")], 1, None), (layout.by_column, [[0, b"\x80"]],
                 1, None), (layout.by_column, [(0,)], 1, None),
                 (layout.by_column, [(1 << 80, None)], 1, None),
                 (layout.by_column, [(0, None)], 1 << 80, None),
                 (layout.by_column, [(0, None)], -(1 << 62), None),
                 (layout.by_column, [(1 << 62, None)], 1 << 62, None),
                 ((None, ("k", 1 << 70, None)), [(0, b"\x80")], 1, None),
                 ((None, ("k", "x", None)), [(0, b"\x80")], 1, None),
                 ((None, ("k", 9, None)), [(0, b"\x80")], 1, None),
                 ((None, ("k", 5, lambda raw: "text")), [(0, b"\x80")], 1, None),
                 ((None, ("k",)), [(0, b"\x80")], 1, None), ((), [(0, None)], 1, None)]:
        assert V(*args) is None, args
    assert V(layout.by_column, good, 1) is None
    assert V((None, ([], 4, None)), [(0, b"")], 1, None) is None  # an unhashable key: Python
