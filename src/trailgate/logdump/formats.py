"""Small text formatters shared by Logdump and the annotated dump.

Kept in one place so both tools print times, hex and operation names identically.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from trailgate.model import datetime_from_julian

__all__ = [
    "RECTYPES",
    "hex_lines",
    "io_type_name",
    "julian_text",
    "oracle_rba",
    "parse_io_type",
    "printable",
    "spaced_hex",
    "trailanalyzer_time",
]

#: Operation types (seed 002, table H-2) as Logdump's SHOW RECTYPE lists them.
RECTYPES: list[tuple[int, str, str]] = [
    (1, "Abort", "A transaction aborted"),
    (2, "Commit", "A transaction committed"),
    (3, "Delete", "A record/row was deleted"),
    (4, "EndRollback", "A database rollback ended"),
    (5, "Insert", "A record/row was inserted"),
    (6, "Prepared", "A networked transaction has been prepared to commit"),
    (7, "TMF-Shutdown", "A TMF shutdown occurred"),
    (8, "TransBegin", "No longer used"),
    (9, "TransRelease", "No longer used"),
    (10, "Update", "A record/row was updated (full image)"),
    (11, "UpdateComp", "A record/row in a compressed file was updated"),
    (12, "FileAlter", "An attribute of a database file was altered"),
    (13, "FileCreate", "A database file was created"),
    (14, "FilePurge", "A database file was deleted"),
    (15, "FieldComp", "A row was updated; only the key and changed columns are present"),
    (16, "FileRename", "A file was renamed"),
    (17, "AuxPointer", "Which AUX trails have new data"),
    (18, "NetworkCommit", "A networked transaction committed"),
    (19, "NetworkAbort", "A networked transaction was aborted"),
    (90, "(GGS)SQLCol", "A column was added or an attribute changed"),
    (100, "(GGS)Purgedata", "All data was removed from the table (truncate)"),
    (101, "(GGS)Purge(File)", "A file was purged"),
    (102, "(GGS)Create(File)", "A file was created"),
    (103, "(GGS)Alter(File)", "A file was altered"),
    (104, "(GGS)Rename(File)", "A file was renamed"),
    (105, "(GGS)Setmode", "A SETMODE operation"),
    (106, "GGSChangeLabel", "A CHANGELABEL operation"),
    (107, "(GGS)Control", "A CONTROL operation"),
    (115, "(GGS)KeyFieldComp", "A primary key was updated: before key, then after key and row"),
    (116, "LargeObject", "A piece of a LONG/LOB column value"),
    (117, "(GGS)KeyFieldComp32", "A primary key was updated (32-bit lengths)"),
    (132, "(GGS)SequenceOp", "An operation on a sequence"),
    (134, "UnifiedUpdate", "An update with before and after values in one record"),
    (135, "UnifiedPKUpdate", "A PK update with before and after values in one record"),
    (160, "DDL", "A DDL operation"),
    (161, "RecordFragment", "Part of a large row stored across several records"),
    (170, "Metadata", "A table definition"),
    (200, "GGSUnstructured", "An unstructured block (BulkIO)"),
    (205, "GGSComment", "A comment record written by Logdump's SAVE"),
]

#: The names GoldenGate's Logdump prints on the operation line (public 21.3 and 19.1 dumps:
#: GGSPurgedata, GGSPKUpdate, DDLOP, GGSUnifiedPKUpdate, Metadata).
_OP_LINE_NAMES = {
    3: "Delete", 5: "Insert", 10: "Update", 15: "FieldComp", 100: "GGSPurgedata",
    115: "GGSPKUpdate", 116: "LargeObject", 132: "SequenceOp", 134: "GGSUnifiedUpdate",
    135: "GGSUnifiedPKUpdate", 160: "DDLOP", 161: "RecordFragment", 170: "Metadata",
    205: "GGSComment",
}
_NAME_TO_CODE: dict[str, int] = {}
for _code, _name, _ in RECTYPES:
    _NAME_TO_CODE[_name.upper()] = _code
    _NAME_TO_CODE[_name.upper().replace("(GGS)", "").replace("(FILE)", "")] = _code
for _code, _name in _OP_LINE_NAMES.items():
    _NAME_TO_CODE[_name.upper()] = _code
_NAME_TO_CODE.update({"LOB": 116, "PURGEDATA": 100, "KEYFIELDCOMP": 115, "DDL_OP": 160,
                      "COMMENT": 205, "SEQUENCE": 132, "FRAGMENT": 161, "TRUNCATE": 100,
                      "PK_UPDATE": 115, "FIELD_COMP": 15, "PKUPDATE": 115, "DDL": 160})


def io_type_name(io_type: int) -> str:
    """The operation name for an IOType, as Logdump's operation line shows it."""
    if io_type in _OP_LINE_NAMES:
        return _OP_LINE_NAMES[io_type]
    for code, name, _ in RECTYPES:
        if code == io_type:
            return name
    return f"IOType{io_type}"


def parse_io_type(text: str) -> int:
    """An IOType from a number or a name (``INSERT``, ``15``, ``PKUPDATE``, ``DDL_OP``).

    Raises ``ValueError`` with the accepted forms when ``text`` is neither.
    """
    if text.isdigit():
        value = int(text)
        if value > 255:
            raise ValueError(f"IOType {value} is out of range (0-255)")
        return value
    key = text.upper()
    if key in _NAME_TO_CODE:
        return _NAME_TO_CODE[key]
    raise ValueError(f"unknown record type {text!r}: give a number or a name that SHOW "
                     "RECTYPE lists (e.g. INSERT, DELETE, FIELDCOMP, DDL)")


def _datetime(julian_micros: int) -> datetime | None:
    try:
        return datetime_from_julian(julian_micros)
    except OverflowError:
        return None


def julian_text(julian_micros: int, tz: tzinfo = UTC) -> str:
    """Logdump's time form ``2013/03/31 23:59:58.000.000`` (in ``tz``, UTC unless
    TIMEOFFSET says otherwise); the raw number when the value is no plausible time (an
    unset field)."""
    when = _datetime(julian_micros) if julian_micros else None
    if when is not None and tz is not UTC:
        try:
            when = when.astimezone(tz)
        except (OverflowError, ValueError):
            when = None
    if when is None:
        return f"{julian_micros} (not a time)"
    ms, us = divmod(when.microsecond, 1000)
    return when.strftime("%Y/%m/%d %H:%M:%S") + f".{ms:03d}.{us:03d}"


def trailanalyzer_time(julian_micros: int) -> str:
    """TrailAnalyzer's time form ``2013:03:31 23:59:58 000000 ms`` (seed 003)."""
    when = _datetime(julian_micros) if julian_micros else None
    if when is None:
        return f"{julian_micros} (not a time)"
    return when.strftime("%Y:%m:%d %H:%M:%S") + f" {when.microsecond:06d} ms"


def oracle_rba(audit_rba: int, audit_pos: int) -> str:
    """An Oracle redo address ``0x000044.00000005.0010`` from AuditRBA (log sequence) and
    AuditPos (``block << 9 | offset``, seed 001)."""
    return f"0x{audit_rba:06x}.{audit_pos >> 9:08x}.{audit_pos & 0x1FF:04x}"


def printable(data: bytes) -> str:
    """ASCII with anything unprintable as ``.``, the right-hand column of a hex dump."""
    return "".join(chr(b) if 32 <= b < 127 else "." for b in data)


def spaced_hex(data: bytes) -> str:
    """``00 00 00 04 31`` — TrailAnalyzer's byte form."""
    return data.hex(" ").upper()


def hex_lines(data: bytes, width: int = 20) -> list[str]:
    """Logdump's data-area dump: two-byte hex words, then ``| ascii``, ``width`` bytes a line
    (GoldenGate's Logdump shows 20, seed 002 and every public dump)."""
    lines = []
    words_width = (width // 2) * 5
    for start in range(0, len(data), width):
        chunk = data[start : start + width]
        words = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        lines.append(f" {words:<{words_width - 1}} | {printable(chunk)}")
    return lines
