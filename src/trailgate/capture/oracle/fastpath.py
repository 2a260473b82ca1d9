"""Whole-structure regexes for the change bodies that carry data: the dump parser's fast path.

The token parsers in ``changes.py`` are the reference, strict and exact in their messages,
but a Python call per token.  Here each common body is matched by a few compiled regexes.
A fast parser gives exactly what the reference would or answers ``False``, and the caller
runs the reference parser: the fast path may be narrower than the reference, never wider
(array operations, direct loads and slips take the slow road).
"""

from __future__ import annotations

import re
from itertools import pairwise

from trailgate.capture.oracle.changes import (
    Commit,
    Kdo,
    RowChange,
    UndoHeader,
    UndoRecord,
)

__all__ = ["fast_body"]

# Tokens as the reference splits them: ``\s+`` between tokens, and one ends at ``(?!\S)``.
_E = r"(?!\S)"  # end of token
_INT = r"-?\d+"
_XID = r"0x([0-9a-f]{4})\.([0-9a-f]{3})\.([0-9a-f]{8})"


def _skip_to(words: str) -> str:
    """Regex: skip whole tokens up to and including the first occurrence of ``words`` (the
    repeat is possessive and cannot step over ``words``, so a later one is never taken)."""
    seq = r"\s+".join(re.escape(w) for w in words.split())
    return rf"(?:\s+(?!{seq}{_E})\S+)*+\s+{seq}{_E}"


_KDO_COMMON = (
    rf"KDO\s+Op\s+code:\s+(?P<op>\S+)\s+row\s+dependencies\s+\S+\s+xtype:\s+\S+\s+flags:\s+"
    rf"0x[0-9a-f]+\s+bdba:\s+0x(?P<bdba>[0-9a-f]{{8}}){_E}\s+hdba:\s+0x[0-9a-f]{{8}}\s+itli:\s+"
    rf"{_INT}\s+ispac:\s+{_INT}\s+maxfr:\s+{_INT}\s+tabn:\s+(?P<tabn>{_INT}){_E}")
_SLOT = rf"\s+slot:\s+(\d+)\(0x([0-9a-f]+)\){_E}"
#: what follows ``tabn:`` for each KDO operation; group 1 is the slot, except for LKR
_TAILS = {
    "IRP": re.compile(
        rf"{_SLOT}\s+size/delt:\s+{_INT}\s+fb:\s+([K-][C-][H-][D-][F-][L-][P-][N-])\s+lb:\s+"
        rf"0x[0-9a-f]+\s+cc:\s+({_INT}){_E}(?:\s+null:\s+\S+)?"),
    "URP": re.compile(
        rf"{_SLOT}\s+flag:\s+0x([0-9a-f]+)\s+lock:\s+{_INT}\s+ckix:\s+{_INT}\s+ncol:\s+"
        rf"({_INT})\s+nnew:\s+({_INT})\s+size:\s+{_INT}{_E}(?:\s+Vector\s+content:{_E})?"),
    "DRP": re.compile(_SLOT),
    "LKR": re.compile(rf"\s+slot:\s+({_INT})\s+to:\s+{_INT}{_E}"),
}
_COL = re.compile(
    rf"\s+col\s+(\d+):\s+(?:(\*NULL\*)|\[[^\S\n]*(\d+)\]((?:\s+[0-9a-f]{{2}}{_E})*+)){_E}")
_END = re.compile(r"\s*\Z")

_KDO_HEAD = re.compile(_KDO_COMMON)
_KTUDB = re.compile(rf"\s*ktudb\s+redo:{_E}")
_UNDO_FIELDS = re.compile(
    rf"\s+{_XID}{_E}\s+(ktub[lu])\s+redo:\s+slt:\s+{_INT}\s+rci:\s+{_INT}\s+opc:\s+(\S+)\s+"
    rf"(\[?)objn:\s+({_INT})\s+objd:\s+({_INT}){_E}")
_UNDO_REC_REST = re.compile(rf"\s+undo\s+record:{_E}")
_OP_CODE_REST = re.compile(rf"\s+Op\s+code:{_E}")
_KTB_HEAD = re.compile(rf"\s*KTB\s+Redo\s+op:\s+0x[0-9a-f]+\s+ver:\s+0x[0-9a-f]+{_E}")
_KTB_OP = re.compile(rf"\s+([A-Z]){_E}(?:\s+xid:\s+{_XID}{_E})?")


_XIDS: dict[str, str] = {}


def _xid(m: re.Match[str], group: int) -> str:
    """``usn.slot.sqn`` of the XID matched by groups ``group``…``group + 2`` (cached: the
    changes of a transaction repeat it)."""
    raw = m.string[m.start(group) : m.end(group + 2)]
    xid = _XIDS.get(raw)
    if xid is None:
        xid = f"{int(m[group], 16)}.{int(m[group + 1], 16)}.{int(m[group + 2], 16)}"
        if len(_XIDS) >= 1 << 14:
            _XIDS.clear()
        _XIDS[raw] = xid
    return xid


def _find_tokens(text: str, pos: int, first: str,
                 rest: re.Pattern[str] | None) -> tuple[int, int]:
    """(start, end) of the first token ``first`` at or after ``pos`` that ``rest`` (the
    following tokens) continues; ``(-1, -1)`` when absent, or when a ``[ `` on the lines
    passed over means the reference tokenizer might split them differently (the caller then
    leaves the change to the reference parser)."""
    size, n = len(text), len(first)
    i = text.find(first, pos)
    while i >= 0:
        j = i + n
        if (i == 0 or text[i - 1].isspace()) and (j == size or text[j].isspace()):
            end = j
            if rest is not None:
                m = rest.match(text, j)
                end = m.end() if m is not None else -1
            if end >= 0:
                if text.find("[ ", text.rfind("\n", 0, pos) + 1, i) >= 0:
                    return -1, -1
                return i, end
        i = text.find(first, i + 1)
    return -1, -1
_KTUDH = re.compile(
    rf"\s*ktudh\s+redo:\s+slt:\s+0x([0-9a-f]{{4}})\s+sqn:\s+0x([0-9a-f]{{8}})\s+flg:\s+"
    rf"0x[0-9a-f]+{_E}")
_KTUCM = re.compile(
    rf"\s*ktucm\s+redo:\s+slt:\s+0x([0-9a-f]{{4}})\s+sqn:\s+0x([0-9a-f]{{8}})\s+srt:\s+{_INT}"
    rf"\s+sta:\s+{_INT}\s+flg:\s+0x([0-9a-f]+){_E}"
    rf"(\s+ktucf\s+redo:\s+uba:\s+0x[0-9a-f]{{8}}\.[0-9a-f]{{4}}\.[0-9a-f]{{2}}\s+ext:\s+{_INT}"
    rf"\s+spc:\s+{_INT}\s+fbi:\s+{_INT}{_E})?(\s+rolled\s+back\s+transaction{_E})?\s*\Z")


# One column per line, its bytes separated by single spaces: what dumps print unless a long
# value wraps.  The block regex finds where such a run of columns ends (character classes
# only: cheap); findall then splits it, and each value is checked by slicing.
_ITEM = re.compile(r"\s+col\s+(\d+):\s+(?:(\*NULL\*)|\[[^\S\n]*(\d+)\]([ 0-9a-f]*))(?=\s|\Z)")
_BLOCK = re.compile(r"(?:\s+col\s+\d+:\s+(?:\*NULL\*|\[[^\S\n]*\d+\][ 0-9a-f]*)(?=\s|\Z))*+")


_SEQUENCE = [[str(k) for k in range(n)] for n in range(1001)]  # "0", "1", … as dumps print


def _columns(text: str, pos: int, count: int,
             sequential: bool) -> tuple[list[tuple[int, bytes | None]], int] | None:
    """``count`` ``col n: [len] xx xx…`` entries from ``pos``: ``(columns, end)``.

    Checked in bulk (list comparisons, one ``bytes.fromhex`` for all values) because a
    Python statement per column costs more than the regex that finds them."""
    block = _BLOCK.match(text, pos)
    assert block is not None  # the pattern matches the empty string
    end = block.end()
    items = _ITEM.findall(text, pos, end)
    if len(items) != count or count > 1000:
        return _columns_exact(text, pos, count, sequential)
    nos, nulls, sizes, runs = zip(*items, strict=True) if items else ((), (), (), ())
    if sequential:
        if list(nos) != _SEQUENCE[count]:
            return None
        colnos: list[int] | range = range(count)
    else:
        colnos = list(map(int, nos))
        if any(a >= b for a, b in pairwise(colnos)):
            return None
    joined = "".join(runs)
    lengths = [len(r) // 3 for r in runs]
    if (len(joined) % 3 or joined[::3] != " " * (len(joined) // 3)
            or list(map(str, lengths)) != [s or "0" for s in sizes]
            or any(len(r) % 3 for r in runs)):
        return _columns_exact(text, pos, count, sequential)
    try:
        data = bytes.fromhex(joined)
    except ValueError:
        return _columns_exact(text, pos, count, sequential)
    if len(data) * 3 != len(joined):
        return _columns_exact(text, pos, count, sequential)
    cols: list[tuple[int, bytes | None]] = []
    append = cols.append
    at = 0
    for colno, null, n in zip(colnos, nulls, lengths, strict=True):
        if null:
            append((colno, None))
        else:
            append((colno, data[at : at + n]))
            at += n
    return cols, end


def _columns_exact(text: str, pos: int, count: int,
                   sequential: bool) -> tuple[list[tuple[int, bytes | None]], int] | None:
    """Token by token (values wrapped across lines, unusual spacing)."""
    cols: list[tuple[int, bytes | None]] = []
    last = -1
    for k in range(count):
        m = _COL.match(text, pos)
        if m is None:
            return None
        colno = int(m[1])
        if colno <= last or (sequential and colno != k):
            return None
        last = colno
        if m[2] is not None:
            cols.append((colno, None))
        else:
            try:
                value = bytes.fromhex(m[4])
            except ValueError:  # not hex: the reference parser names the line
                return None
            if len(value) != int(m[3]):
                return None
            cols.append((colno, value))
        pos = m.end()
    return cols, pos


def _kdo(text: str, m: re.Match[str], line0: int) -> tuple[Kdo, int] | None:
    """The KDO whose common part ``m`` matched, read to its end."""
    op = m["op"]
    kdo = Kdo(op, int(m["bdba"], 16), int(m["tabn"]), -1, "", 0, 0, [], [], [],
              line0 + text.count("\n", 0, m.start("op")))
    pos = m.end()
    tail = _TAILS.get(op)
    if tail is None:
        return None if op in ("QMI", "QMD") else (kdo, pos)  # arrays: the reference parser
    r = tail.match(text, pos)
    if r is None:
        return None
    kdo.slot = int(r[1])
    if op == "LKR":
        return kdo, r.end()
    if int(r[2], 16) != kdo.slot:
        return None
    if op == "IRP":
        kdo.fb = r[3]
        got = _columns(text, r.end(), int(r[4]), True)
    elif op == "URP":
        kdo.flag, kdo.ncol = int(r[3], 16), int(r[4])
        got = _columns(text, r.end(), int(r[5]), False)
    else:
        return kdo, r.end()
    if got is None:
        return None
    kdo.columns = got[0]
    return kdo, got[1]


def _undo_record(c: UndoRecord, text: str, line0: int) -> bool:
    m = _KTUDB.match(text)
    if m is None:
        return False
    _, x = _find_tokens(text, m.end(), "xid:", None)
    f = _UNDO_FIELDS.match(text, x) if x >= 0 else None
    if f is None or (f[4] == "ktubl") != (f[6] == "["):
        return False
    c.xid = _xid(f, 1)
    c.begin = f[4] == "ktubl"
    c.opc = f[5]
    c.objn, c.objd = int(f[7]), int(f[8])
    if c.opc != "11.1":
        return True
    _, u = _find_tokens(text, f.end(), "KDO", _UNDO_REC_REST)
    k, _ = _find_tokens(text, u, "KDO", _OP_CODE_REST) if u >= 0 else (-1, -1)
    km = _KDO_HEAD.match(text, k) if k >= 0 else None
    got = _kdo(text, km, line0) if km is not None else None
    if got is None or not _END.match(text, got[1]):
        return False
    c.kdo = got[0]
    return True


def _row_change(c: RowChange, text: str, line0: int) -> bool:
    m = _KTB_HEAD.match(text)
    if m is None:
        return False
    _, o = _find_tokens(text, m.end(), "op:", None)
    op = _KTB_OP.match(text, o) if o >= 0 else None
    if op is None or (op[1] == "F") != (op[2] is not None):
        return False
    k, _ = _find_tokens(text, op.end(), "KDO", _OP_CODE_REST)
    km = _KDO_HEAD.match(text, k) if k >= 0 else None
    got = _kdo(text, km, line0) if km is not None else None
    if got is None or not _END.match(text, got[1]):
        return False
    kdo = got[0]
    if kdo.op != RowChange.EXPECTED[c.code] or kdo.bdba != c.dba:
        return False
    c.ktb_op = op[1]
    if op[2] is not None:
        c.xid = _xid(op, 2)
    c.kdo = kdo
    return True


def _undo_header(c: UndoHeader, text: str) -> bool:
    m = _KTUDH.match(text)
    if m is None or c.cls < 17:
        return False
    c.sqn = int(m[2], 16)
    c.xid = f"{(c.cls - 15) // 2}.{int(m[1], 16)}.{c.sqn}"
    return True


def _commit(c: Commit, text: str) -> bool:
    m = _KTUCM.match(text)
    if m is None or c.cls < 17:
        return False
    flg = int(m[3], 16)
    if bool(flg & Commit.KTUCF) != (m[4] is not None):
        return False
    if m[5] is not None and not flg & Commit.ROLLBACK:
        return False
    c.flg = flg
    c.xid = f"{(c.cls - 15) // 2}.{int(m[1], 16)}.{int(m[2], 16)}"
    return True


def fast_body(change: object, text: str, line0: int) -> bool:
    """Decode ``text`` (a change body, supplemental data cut off) into ``change``; ``False``
    when the reference parser must decide.  ``line0`` is the line ``text`` starts on."""
    if isinstance(change, UndoRecord):
        return _undo_record(change, text, line0)
    if isinstance(change, RowChange):
        return _row_change(change, text, line0)
    if isinstance(change, UndoHeader):
        return _undo_header(change, text)
    if isinstance(change, Commit):
        return _commit(change, text)
    return False
