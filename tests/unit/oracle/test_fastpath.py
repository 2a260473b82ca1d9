"""The regex fast path decodes exactly what the token parser (the reference) decodes, and
never accepts what the reference refuses: every change of every fixture, of generated dumps,
and of thousands of random mutations gives the same object or the same error both ways."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest

from trailgate.capture.oracle import dumpparser
from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.capture.oracle.records import RBA
from trailgate.errors import SourceError

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
