"""Read ``ALTER SYSTEM DUMP LOGFILE`` text into RedoRecords and their change vectors.

The trace preamble before the first ``REDO RECORD`` line and anything after ``END OF REDO
DUMP`` are not redo and are passed over; everything in between must parse.  Record and change
headers are matched as whole token sequences (so wrapped lines parse, and a slip such as an
upper-case hex digit or a nine-digit SCN is rejected, never guessed at).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from datetime import datetime
from pathlib import Path

from trailgate.capture.oracle.changes import (
    DATA_LAYERS,
    REGISTRY,
    ChangeVector,
    MediaRecoveryMarker,
    OtherChange,
    UndoRecord,
)
from trailgate.capture.oracle.fastpath import fast_body
from trailgate.capture.oracle.records import RBA, Cursor, RedoRecord, located, tokenize
from trailgate.capture.oracle.recordscan import parse_record as _c_record
from trailgate.capture.oracle.supplemental import (
    HEADER_LINE,
    fast_supplemental,
    parse_supplemental,
)
from trailgate.errors import SourceError

__all__ = ["parse_dump"]

_SCN = r"0x([0-9a-f]{4})\.([0-9a-f]{8})"
_RBA = r"0x([0-9a-f]{6})\.([0-9a-f]{8})\.([0-9a-f]{4})"
_RECORD = re.compile(
    rf"REDO RECORD - Thread:(\d+) RBA: {_RBA} LEN: 0x([0-9a-f]{{4}}) VLD: 0x([0-9a-f]{{2}})"
    rf"(?: CON_UID: \d+)? SCN: {_SCN} SUBSCN: (\d+) (\d\d)/(\d\d)/(\d{{4}}) "
    rf"(\d\d):(\d\d):(\d\d)"
    rf"(?: \(LWN RBA: 0x[0-9a-f]{{6}}\.[0-9a-f]{{8}}\.[0-9a-f]{{4}} LEN: [0-9a-f]{{4}} "
    rf"NST: [0-9a-f]{{4}} SCN: 0x[0-9a-f]{{4}}\.[0-9a-f]{{8}}\))?"
)
_RECORD_RBA = re.compile(rf"RBA: {_RBA}")
#: the same header matched in place (tokens separated by any whitespace, lines included)
_RECORD_FAST = re.compile(r"\s*" + _RECORD.pattern.replace(" ", r"\s+") + r"\s*")
_STAMPS: dict[str, datetime] = {}  # record timestamps repeat: parse each text once
_CHANGE = re.compile(
    rf"CHANGE #(\d+) (?:CON_ID:\d+ )?TYP:(\d+) CLS:(\d+) AFN:(\d+) DBA:0x([0-9a-f]{{8}}) "
    rf"OBJ:(\d+) SCN:{_SCN} SEQ:(\d+) OP:(\d+)\.(\d+) ENC:(\d+) RBL:(\d+)"
    rf"(?: FLG:0x[0-9a-f]{{4}})?"
)
_MARKER = re.compile(
    rf"CHANGE #(\d+) MEDIA RECOVERY MARKER (?:CON_ID:\d+ )?SCN:{_SCN} SEQ:(\d+) "
    rf"OP:(\d+)\.(\d+) ENC:(\d+)(?: FLG:0x[0-9a-f]{{4}})?"
)
_RECORD_START = "REDO RECORD"
_END = "END OF REDO DUMP"
_CHANGE_FAST = re.compile(
    rf"[^\S\n]*CHANGE #(\d+)\s+(?:CON_ID:\d+\s+)?TYP:(\d+)\s+CLS:(\d+)\s+AFN:(\d+)\s+"
    rf"DBA:0x([0-9a-f]{{8}})\s+OBJ:(\d+)\s+SCN:{_SCN}\s+SEQ:(\d+)\s+OP:(\d+)\.(\d+)\s+"
    rf"ENC:(\d+)\s+RBL:(\d+)(?:[^\S\n]+FLG:0x[0-9a-f]{{4}})?[^\S\n]*(?=\n|\Z)")
_MARKER_FAST = re.compile(
    rf"[^\S\n]*CHANGE #(\d+)\s+MEDIA\s+RECOVERY\s+MARKER\s+(?:CON_ID:\d+\s+)?SCN:{_SCN}\s+"
    rf"SEQ:(\d+)\s+OP:(\d+)\.(\d+)\s+ENC:(\d+)(?:[^\S\n]+FLG:0x[0-9a-f]{{4}})?[^\S\n]*"
    rf"(?=\n|\Z)")
#: whitespace other than space and newline (a tab, \x1c, \xa0…): dumps hold none, and the
#: reference ends a change header only at " RBL:" after a space, so such text goes to it
_ODD_SPACE = re.compile(r"[^\S \n]")
_SUP_LINE = re.compile(r"[^\S\n]*Header \(\d+ bytes\)[^\S\n]*(?=\n|\Z)")
_READ_SIZE = 1 << 22
_NUMBERS = [str(i) for i in range(256)]
#: ("5", "1") -> (5, 1, change class or None for an unknown data-layer operation)
_OP_CLASSES: dict[tuple[str, ...], tuple[int, int, type[ChangeVector] | None]] = {}


def parse_dump(path: str | Path, *, start: RBA | None = None
               ) -> Generator[RedoRecord, None, None]:
    """Yield the redo records of one dump file in file order.

    Records whose RBA is below ``start`` are yielded with their header only (no changes):
    a resumed capture needs their positions but not their contents.
    """
    p = str(path)
    scan = _c_record
    try:
        with open(path, encoding="latin-1") as f:
            if scan is None:
                for line, text in _record_texts(f):
                    yield _record(p, text, line, start)
                return
            for line, text in _record_texts(f):  # C first; None: the Python parser decides
                yield scan(text, p, line, start) or _record(p, text, line, start)
    except OSError as exc:
        raise SourceError(f"{p}: cannot read the dump file: {exc.strerror}") from None


def _at_line_start(text: str, i: int, floor: int = 0) -> int:
    """The start of the line holding offset ``i`` when only whitespace precedes ``i`` on it
    (what ``line.strip().startswith(…)`` accepts), else -1."""
    ls = text.rfind("\n", floor, i) + 1 or floor
    return ls if ls == i or text[ls:i].isspace() else -1


def _record_texts(f) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each record: from its ``REDO RECORD`` line to the next
    record, ``END OF REDO DUMP`` or the end of the file.  Read in large blocks and searched
    with ``str.find`` (a regex scan costs far more per character); only whole lines are
    searched, so a boundary split between two blocks is found in the next pass."""
    buf = ""
    rec: int | None = None  # offset in buf of the current record's first line
    rec_line = 0
    counted, counted_line = 0, 1  # line number of offset ``counted``
    scan = 0
    eof = False
    while not eof:
        block = f.read(_READ_SIZE)
        eof = not block
        buf += block
        limit = len(buf) if eof else buf.rfind("\n") + 1
        pos = scan
        end_at = buf.find(_END, pos, limit)
        while True:
            r = buf.find(_RECORD_START, pos, limit)
            is_end = end_at >= 0 and (r < 0 or end_at < r)
            i = end_at if is_end else r
            if i < 0:
                break
            pos = i + 1
            at = _at_line_start(buf, i, scan)
            if at >= 0 and is_end:
                eol = buf.find("\n", i, limit)
                tail = buf[i + len(_END): eol if eol >= 0 else limit]
                if tail and not tail.isspace():
                    at = -1
            if at < 0:
                if is_end:
                    end_at = buf.find(_END, pos, limit)
                continue
            if is_end:
                if rec is not None:
                    yield rec_line, buf[rec:at]
                    return
                end_at = buf.find(_END, pos, limit)  # in the preamble: not the end
                continue
            if rec is not None:
                yield rec_line, buf[rec:at]
            counted_line += buf.count("\n", counted, at)
            counted = at
            rec, rec_line = at, counted_line
        scan = max(limit, scan)
        keep = rec if rec is not None else scan
        if keep:
            counted_line += buf.count("\n", counted, keep)
            buf, counted = buf[keep:], 0
            scan -= keep
            if rec is not None:
                rec = 0
    if rec is not None:
        yield rec_line, buf[rec:]


def _change_starts(text: str) -> list[int]:
    """Offsets of the lines starting ``CHANGE #`` (leading whitespace allowed)."""
    out = []
    find = text.find
    i = find("CHANGE #")
    while i >= 0:
        if i == 0 or text[i - 1] == "\n":
            out.append(i)
        else:
            at = _at_line_start(text, i)
            if at >= 0:
                out.append(at)
        i = find("CHANGE #", i + 8)
    return out


def _record(path: str, text: str, first_line: int, start: RBA | None,
            decode: Callable[[str, RBA, str, int, int], ChangeVector] | None = None
            ) -> RedoRecord:
    """One record from its text; each change by ``decode(path, rba, text, line, number)``,
    the fast path with the reference behind it unless told otherwise (tests pass
    :func:`reference_change`)."""
    starts = _change_starts(text)
    header_end = starts[0] if starts else len(text)
    m = _RECORD_FAST.fullmatch(text, 0, header_end)
    if not m:
        header = " ".join(text[:header_end].split())
        rm = _RECORD_RBA.search(header)
        rba = RBA(int(rm[1], 16), int(rm[2], 16), int(rm[3], 16)) if rm else None
        raise located(path, first_line, rba,
                      f"malformed REDO RECORD header {header[:160]!r} (expected 'REDO RECORD - "
                      f"Thread:n RBA: 0x…  LEN: 0x… VLD: 0x… SCN: 0xwwww.xxxxxxxx SUBSCN: n "
                      f"MM/DD/YYYY HH:MI:SS' in lower-case hex)")
    rba = RBA(int(m[2], 16), int(m[3], 16), int(m[4], 16))
    key = text[m.start(10) : m.end(15)]
    stamp = _STAMPS.get(key)
    if stamp is None:
        try:
            stamp = datetime(int(m[12]), int(m[10]), int(m[11]), int(m[13]), int(m[14]),
                             int(m[15]))
        except ValueError:
            raise located(path, first_line, rba, "record timestamp is not a valid date") from None
        if len(_STAMPS) > 4096:
            _STAMPS.clear()
        _STAMPS[key] = stamp
    record = RedoRecord(path, first_line, int(m[1]), rba, int(m[5], 16), int(m[6], 16),
                        int(m[7], 16) << 32 | int(m[8], 16), int(m[9]), stamp, [])
    if not starts:
        last = first_line + text.count("\n", 0, len(text.rstrip()))
        raise located(path, last, rba, "redo record has no CHANGE (dump cut short?)")
    if start is not None and rba < start:
        return record
    line = first_line + text.count("\n", 0, starts[0])
    starts.append(len(text))
    changes = record.changes
    change_text = decode or _change_text
    for k in range(len(starts) - 1):
        a, b = starts[k], starts[k + 1]
        changes.append(change_text(path, rba, text[a:b], line, len(changes) + 1))
        line += text.count("\n", a, b)
    return record


def _change_text(path: str, rba: RBA, text: str, line0: int, number: int) -> ChangeVector:
    """One change from its text: the fast path when it applies, else the reference parser."""
    if _ODD_SPACE.search(text):  # the regexes' \s is wider than the reference's rules
        return reference_change(path, rba, text, line0, number)
    m = _CHANGE_FAST.match(text)
    if m is not None:
        g = m.groups()
        op = _OP_CLASSES.get(g[9:11])
        if op is None:
            layer, code = int(g[9]), int(g[10])
            cls = REGISTRY.get((layer, code))
            if cls is None and layer not in DATA_LAYERS:
                cls = OtherChange
            op = _OP_CLASSES[g[9:11]] = (layer, code, cls)
        layer, code, cls = op
        if cls is not None and g[0] == (_NUMBERS[number] if number < 256 else str(number)):
            change: ChangeVector = cls(
                number, layer, code, line0, int(g[1]), int(g[2]), int(g[3]), int(g[4], 16),
                int(g[5]), int(g[6], 16) << 32 | int(g[7], 16), int(g[8]))
            body = text[m.end():]
            if cls is OtherChange:
                if "Header (" not in body:
                    return change
            else:
                body_line = line0 + text.count("\n", 0, m.end())
                sup = _sup_line(body) if cls is UndoRecord else None
                main = body if sup is None else body[: sup.start()]
                if "Header (" not in main and fast_body(change, main, body_line):
                    if sup is None:
                        return change
                    sup_line = body_line + body.count("\n", 0, sup.start())
                    assert isinstance(change, UndoRecord)
                    change.supplemental = fast_supplemental(body, sup.start(), sup_line)
                    if change.supplemental is None:
                        change.supplemental = parse_supplemental(
                            _lines(body[sup.start():], sup_line),
                            lambda ln, msg: located(path, ln, rba, msg))
                    return change
    else:
        mm = _MARKER_FAST.match(text)
        if mm is not None and int(mm[1]) == number and "Header (" not in text[mm.end():]:
            return MediaRecoveryMarker(number, int(mm[5]), int(mm[6]), line0,
                                       scn=int(mm[2], 16) << 32 | int(mm[3], 16),
                                       seq=int(mm[4]))
    return _change(path, rba, _lines(text, line0), number)


def reference_change(path: str, rba: RBA, text: str, line0: int, number: int) -> ChangeVector:
    """One change by the token parser alone (the reference the fast paths are held to)."""
    return _change(path, rba, _lines(text, line0), number)


def _sup_line(body: str) -> re.Match[str] | None:
    """The first ``Header (N bytes)`` line of a body (where supplemental data starts)."""
    i = body.find("Header (")
    while i >= 0:
        at = _at_line_start(body, i)
        if at >= 0:
            m = _SUP_LINE.match(body, at)
            if m is not None:
                return m
        i = body.find("Header (", i + 8)
    return None


def _lines(text: str, line0: int) -> list[tuple[int, str]]:
    """The non-blank lines of ``text``, stripped, with their line numbers."""
    return [(line0 + i, s) for i, raw in enumerate(text.split("\n")) if (s := raw.strip())]


def _change(path: str, rba: RBA, chunk: list[tuple[int, str]], number: int) -> ChangeVector:
    line0 = chunk[0][0]
    toks: list[str] = []
    j = 0
    while j < len(chunk):
        line = chunk[j][1]
        toks.extend(line.split())
        j += 1
        term = " ENC:" if len(toks) > 2 and toks[2] == "MEDIA" else " RBL:"
        if term in " " + line:
            break
    header = " ".join(toks)
    body = chunk[j:]
    if len(toks) > 2 and toks[2] == "MEDIA":
        mm = _MARKER.fullmatch(header)
        if not mm:
            raise located(path, line0, rba, f"malformed change header {header[:160]!r}")
        change: ChangeVector = MediaRecoveryMarker(
            number=int(mm[1]), layer=int(mm[5]), code=int(mm[6]), line=line0,
            scn=int(mm[2], 16) << 32 | int(mm[3], 16), seq=int(mm[4]))
    else:
        m = _CHANGE.fullmatch(header)
        if not m:
            raise located(path, line0, rba,
                          f"malformed change header {header[:160]!r} (expected 'CHANGE #n TYP:n "
                          f"CLS:n AFN:n DBA:0x… OBJ:n SCN:0x… SEQ:n OP:l.c ENC:n RBL:n' in "
                          f"lower-case hex; dump cut short?)")
        layer, code = int(m[10]), int(m[11])
        cls = REGISTRY.get((layer, code))
        if cls is None:
            if layer in DATA_LAYERS:
                raise located(path, line0, rba,
                              f"operation {layer}.{code} changes table data but trailgate does "
                              f"not know how to read it; it cannot be captured safely")
            cls = OtherChange
        change = cls(number=int(m[1]), layer=layer, code=code, line=line0, typ=int(m[2]),
                     cls=int(m[3]), afn=int(m[4]), dba=int(m[5], 16), obj=int(m[6]),
                     scn=int(m[7], 16) << 32 | int(m[8], 16), seq=int(m[9]))
    if change.number != number:
        raise located(path, line0, rba, f"CHANGE #{change.number} where #{number} was expected")
    sup_at = None
    if isinstance(change, UndoRecord) or any(t.startswith("Header (") for _, t in body):
        sup_at = next((k for k, (_, text) in enumerate(body)
                       if text.startswith("Header (") and HEADER_LINE.fullmatch(text)), None)
    if sup_at is not None and not isinstance(change, UndoRecord):
        raise located(path, body[sup_at][0], rba,
                      f"supplemental data beneath a {change.op} change: it belongs beneath "
                      f"the 5.1 undo change of the row operation")
    if isinstance(change, (MediaRecoveryMarker, OtherChange)):
        return change
    main = body if sup_at is None else body[:sup_at]
    toks2, starts = tokenize(main)
    end_line = main[-1][0] if main else line0
    change.parse_body(Cursor(toks2, starts, path, rba, end_line))
    if sup_at is not None:
        assert isinstance(change, UndoRecord)
        change.supplemental = parse_supplemental(
            body[sup_at:], lambda ln, msg: located(path, ln, rba, msg))
    return change
