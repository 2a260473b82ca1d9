"""Read ``ALTER SYSTEM DUMP LOGFILE`` text into RedoRecords and their change vectors.

The trace preamble before the first ``REDO RECORD`` line and anything after ``END OF REDO
DUMP`` are not redo and are passed over; everything in between must parse.  Record and change
headers are matched as whole token sequences (so wrapped lines parse, and a slip such as an
upper-case hex digit or a nine-digit SCN is rejected, never guessed at).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
from trailgate.capture.oracle.records import RBA, Cursor, RedoRecord, located, tokenize
from trailgate.capture.oracle.supplemental import HEADER_LINE, parse_supplemental
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
_CHANGE = re.compile(
    rf"CHANGE #(\d+) (?:CON_ID:\d+ )?TYP:(\d+) CLS:(\d+) AFN:(\d+) DBA:0x([0-9a-f]{{8}}) "
    rf"OBJ:(\d+) SCN:{_SCN} SEQ:(\d+) OP:(\d+)\.(\d+) ENC:(\d+) RBL:(\d+)"
    rf"(?: FLG:0x[0-9a-f]{{4}})?"
)
_MARKER = re.compile(
    rf"CHANGE #(\d+) MEDIA RECOVERY MARKER (?:CON_ID:\d+ )?SCN:{_SCN} SEQ:(\d+) "
    rf"OP:(\d+)\.(\d+) ENC:(\d+)(?: FLG:0x[0-9a-f]{{4}})?"
)
_END = "END OF REDO DUMP"


def parse_dump(path: str | Path, *, start: RBA | None = None) -> Iterator[RedoRecord]:
    """Yield the redo records of one dump file in file order.

    Records whose RBA is below ``start`` are yielded with their header only (no changes):
    a resumed capture needs their positions but not their contents.
    """
    p = str(path)
    lines: list[tuple[int, str]] | None = None
    try:
        with open(path, encoding="latin-1") as f:
            for lineno, raw in enumerate(f, 1):
                text = raw.strip()
                if not text:
                    continue
                if text.startswith("REDO RECORD"):
                    if lines is not None:
                        yield _record(p, lines, start)
                    lines = [(lineno, text)]
                elif lines is not None:
                    if text == _END:
                        yield _record(p, lines, start)
                        lines = None
                        break
                    lines.append((lineno, text))
    except OSError as exc:
        raise SourceError(f"{p}: cannot read the dump file: {exc.strerror}") from None
    if lines is not None:
        yield _record(p, lines, start)


def _record(path: str, lines: list[tuple[int, str]], start: RBA | None) -> RedoRecord:
    first_line = lines[0][0]
    i, toks = 0, []
    while i < len(lines) and not lines[i][1].startswith("CHANGE #"):
        toks.extend(lines[i][1].split())
        i += 1
    header = " ".join(toks)
    m = _RECORD.fullmatch(header)
    if not m:
        rm = _RECORD_RBA.search(header)
        rba = RBA(int(rm[1], 16), int(rm[2], 16), int(rm[3], 16)) if rm else None
        raise located(path, first_line, rba,
                      f"malformed REDO RECORD header {header[:160]!r} (expected 'REDO RECORD - "
                      f"Thread:n RBA: 0x…  LEN: 0x… VLD: 0x… SCN: 0xwwww.xxxxxxxx SUBSCN: n "
                      f"MM/DD/YYYY HH:MI:SS' in lower-case hex)")
    rba = RBA(int(m[2], 16), int(m[3], 16), int(m[4], 16))
    try:
        stamp = datetime(int(m[12]), int(m[10]), int(m[11]), int(m[13]), int(m[14]), int(m[15]))
    except ValueError:
        raise located(path, first_line, rba, "record timestamp is not a valid date") from None
    record = RedoRecord(path=path, line=first_line, thread=int(m[1]), rba=rba,
                        length=int(m[5], 16), vld=int(m[6], 16),
                        scn=int(m[7], 16) << 32 | int(m[8], 16), subscn=int(m[9]),
                        timestamp=stamp)
    if i == len(lines):
        raise located(path, lines[-1][0], rba, "redo record has no CHANGE (dump cut short?)")
    if start is not None and rba < start:
        return record
    chunk: list[tuple[int, str]] = []
    for lineno, text in lines[i:]:
        if text.startswith("CHANGE #") and chunk:
            record.changes.append(_change(path, rba, chunk, len(record.changes) + 1))
            chunk = []
        chunk.append((lineno, text))
    record.changes.append(_change(path, rba, chunk, len(record.changes) + 1))
    return record


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
