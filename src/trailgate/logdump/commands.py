"""Logdump's command language: names, abbreviations, arguments, and what each one does.

:func:`execute` takes one command line; unknown commands and bad arguments produce a message
that says what was expected, so a typo never ends a session or prints a traceback.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trailgate.errors import TrailFormatError
from trailgate.logdump.count import Tally, render_count
from trailgate.logdump.filters import FilterError, parse_condition
from trailgate.logdump.formats import RECTYPES, io_type_name, parse_io_type
from trailgate.logdump.metadata_cmds import scan_for_metadata, show_metadata
from trailgate.logdump.save import write_saved_file
from trailgate.logdump.session import Session
from trailgate.logdump.source import Eof, HeaderEntry
from trailgate.logdump.time_cmds import compute_timestamp, interpret_timestamp, time_offset
from trailgate.logdump.usage import UsageError
from trailgate.logdump.usage import number as _number
from trailgate.model import OpType, TransInd

__all__ = ["COMMANDS", "Command", "execute", "lookup"]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    aliases: tuple[str, ...]
    syntax: str
    summary: str
    run: Callable[[Session, list[str]], bool | None]


def _switch(args: list[str], allowed: tuple[str, ...], what: str) -> str:
    if len(args) != 1 or args[0].upper() not in allowed:
        raise UsageError(f"{what} takes {' | '.join(allowed)}")
    return args[0].upper()


# -- the commands --------------------------------------------------------------------------

def _open(s: Session, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("OPEN needs one file name")
    s.open(os.path.expanduser(args[0]))


def _next(s: Session, args: list[str]) -> None:
    if len(args) > 1:
        raise UsageError("NEXT takes at most one count")
    s.next(_number(args[0], "the count") if args else 1)


def _position(s: Session, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("POSITION needs an RBA, 0, FIRST or LAST")
    word = args[0].upper()
    if word in ("FIRST", "0"):
        s.position(0)
    elif word == "LAST":
        last = s.last_record_rba()
        if last is not None:
            s.position(last)
        elif s.file is not None:
            s.say("The file holds no records")
    else:
        s.position(_number(args[0], "the RBA"))


def _ghdr(s: Session, args: list[str]) -> None:
    s.settings.ghdr = _switch(args, ("ON", "OFF"), "GHDR") == "ON"


def _detail(s: Session, args: list[str]) -> None:
    s.settings.detail = _switch(args, ("ON", "OFF", "DATA"), "DETAIL")


def _fileheader(s: Session, args: list[str]) -> None:
    s.settings.fileheader = _switch(args, ("ON", "OFF", "DETAIL"), "FILEHEADER")


def _usertoken(s: Session, args: list[str]) -> None:
    s.settings.usertoken = _switch(args, ("ON", "OFF", "DETAIL"), "USERTOKEN")


def _ggstoken(s: Session, args: list[str]) -> None:
    s.settings.ggstoken = _switch(args, ("ON", "OFF", "DETAIL"), "GGSTOKEN")


def _headertoken(s: Session, args: list[str]) -> None:
    s.settings.headertoken = _switch(args, ("ON", "OFF", "DETAIL"), "HEADERTOKEN")


def _decrypt(s: Session, args: list[str]) -> None:
    words = [a.upper() for a in args]
    if words[:1] == ["OFF"] and len(words) == 1:
        on, key = False, None
    elif words[:1] == ["ON"] and len(words) in (1, 3) and words[1:2] in ([], ["KEYNAME"]):
        on, key = True, (args[2] if len(args) == 3 else None)
    else:
        raise UsageError("DECRYPT {OFF | ON [KEYNAME name]}")
    s.settings.decrypt, s.settings.key_name = on, key
    if s.file is not None:
        s.file.set_decrypt(on, key)
    s.say("Decrypt " + ("ON" + (f", key {key.upper()}" if key else
                                ": each file's key from its home's ENCKEYS") if on else "OFF"))


def _reclen(s: Session, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("RECLEN needs the number of bytes to display")
    s.settings.reclen = max(1, _number(args[0], "RECLEN"))
    s.say(f"Reclen set to {s.settings.reclen}")


def _count(s: Session, args: list[str]) -> None:
    detail = bool(args) and args[0].upper() in ("DETAIL", "DET")
    if args and not detail:
        raise UsageError("COUNT takes DETAIL or nothing")
    file = s.require_file()
    if file is None:
        return
    tally = Tally()
    try:
        for entry in s.records_from(file.first_record_rba):
            if isinstance(entry, Eof):
                break
            if isinstance(entry, HeaderEntry) or not s.filters.passes(entry):
                continue
            tally.add(entry)
    except TrailFormatError as exc:
        s.say(f"Error: {exc}", "Counts below stop at the damaged record.")
    header = file.header.length if file.header is not None else 0
    if s.filters.active:
        s.say("Counting records that pass the filter (SHOW FILTER lists it)")
    s.say(*render_count(tally, str(file.path), detail, header))


def _filter(s: Session, args: list[str]) -> None:
    word = args[0].upper() if args else ""
    f = s.filters
    if word == "CLEAR":
        f.conditions.clear()
        f.match_all = True
        s.say("Filtering cleared")
    elif word in ("SHOW", ""):
        s.say(*f.describe())
    elif word in ("ON", "OFF") and len(args) == 1:
        f.enabled = word == "ON"
        s.say(f"Filtering {word}")
    elif word == "MATCH":
        f.match_all = _switch(args[1:], ("ANY", "ALL"), "FILTER MATCH") == "ALL"
        s.say(f"Include conditions must match {'ALL' if f.match_all else 'ANY'}")
    else:
        try:
            cond = parse_condition(args, s.settings.tz)
        except FilterError as exc:
            raise UsageError(str(exc)) from None
        f.conditions.append(cond)
        f.enabled = True
        s.say(f"Filter added: {cond}")


def _show(s: Session, args: list[str]) -> None:
    what = args[0].upper() if args else ""
    if what in ("FILTER", "FILTERS"):
        s.say(*s.filters.describe())
    elif what in ("RECTYPE", "RECTYPES"):
        s.say("Record types (IOType):")
        s.say(*(f"  {code:>3} - {name:<22} {desc}" for code, name, desc in RECTYPES))
    elif what in ("ENV", "ENVIRONMENT"):
        _env(s, [])
    elif what in ("TABLES", "TABLE"):
        if not s.tables:
            s.say("No table definitions seen yet (they come from Metadata records)")
        for name, t in sorted(s.tables.items()):
            s.say(f"{name}: {', '.join(c.name for c in t.columns)}")
    elif what in ("DDR", "TDR"):
        show_metadata(s, what, args[1:])
    else:
        raise UsageError("SHOW takes FILTER, RECTYPE, ENV, TABLES, DDR or TDR [n]")


def _env(s: Session, args: list[str]) -> None:
    st = s.settings
    file = s.file
    lines = [
        f"{'Version':<20}: trailgate Logdump",
        f"{'Current Directory':<20}: {os.getcwd()}",
        f"{'LogTrail':<20}: {file.path if file else '*none*'}",
    ]
    if file is not None:
        lines.append(f"{'Current RBA':<20}: {s.rba}")
        lines.append(f"{'File Size':<20}: {file.size}")
        if file.header is not None:
            lines.append(f"{'Compatibility':<20}: {file.header.compatibility}")
            lines.append(f"{'Trail Format':<20}: "
                         + ("12c+ (self-describing)" if file.header.compatibility >= 5 else
                            "12.1" if file.release12 else "11.2"))
            order = file.decoder.order if file.decoder is not None else "big"
            lines.append(f"{'Logtrail Data':<20}: {order.capitalize()} Endian/ASCII")
    lines.append(f"{'Local System':<20}: {sys.byteorder.capitalize()} Endian")
    lines += [
        f"{'GHDR':<20}: {'ON' if st.ghdr else 'OFF'}",
        f"{'DETAIL':<20}: {st.detail}",
        f"{'FILEHEADER':<20}: {st.fileheader}",
        f"{'USERTOKEN':<20}: {st.usertoken}",
        f"{'GGSTOKEN':<20}: {st.ggstoken}",
        f"{'HEADERTOKEN':<20}: {st.headertoken}",
        f"{'Timeoffset':<20}: {st.time_offset}",
        f"{'RECLEN':<20}: {st.reclen}",
        f"{'DECRYPT':<20}: {'ON' if st.decrypt else 'OFF'}",
        f"{'Filtering':<20}: {'ON' if s.filters.active else 'OFF'} "
        f"({len(s.filters.conditions)} conditions)",
        f"{'Tables Known':<20}: {len(s.tables)}",
    ]
    s.say(*lines)


def _scan_for_header(s: Session, args: list[str]) -> None:
    if args:
        raise UsageError("SCANFORHEADER takes no arguments")
    s.scan_for_header()


def _scan_for_type(s: Session, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("SCANFORTYPE needs a record type, e.g. SFT INSERT or SFT 15")
    try:
        code = parse_io_type(args[0])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not s.next(1, lambda e: not isinstance(e, HeaderEntry) and e.io_type == code):
        s.say(f"No {io_type_name(code)} record (IOType {code}) found")


def _scan_for_end_trans(s: Session, args: list[str]) -> None:
    ends = (TransInd.LAST, TransInd.ONLY)
    if not s.next(1, lambda e: not isinstance(e, HeaderEntry) and e.trans_ind in ends
                  and e.io_type not in (OpType.METADATA, OpType.COMMENT)):
        s.say("No end of transaction found")


def _save(s: Session, args: list[str]) -> None:
    overwrite = "!" in args
    args = [a for a in args if a != "!"]
    if len(args) >= 3 and args[2].upper() in ("RECORDS", "RECORD", "RECS", "REC"):
        args = args[:2]
    if len(args) != 2:
        raise UsageError("SAVE needs a file name and a record count: SAVE file [!] n RECORDS")
    target = Path(os.path.expanduser(args[0]))
    n = _number(args[1], "the record count")
    file = s.require_file()
    if file is None:
        return
    if target.exists() and not overwrite:
        s.say(f"Error: {target} exists; SAVE {target} ! {n} RECORDS overwrites it")
        return
    if target.resolve() == file.path.resolve():
        s.say("Error: SAVE cannot write into the file being read")
        return
    if file.header is not None and file.header.encryption is not None and not file.decrypt:
        s.say("Error: the file is encrypted (ENCRYPTTRAIL): DECRYPT ON first; the saved file "
              "holds the records opened, in the clear")
        return
    raws: list[bytes] = []
    tables: list[str] = []
    defined: set[str] = set()
    csns: list[int] = []
    times: list[int] = []
    pending_fragments = False
    try:
        for entry in s.records_from(s.rba):
            if isinstance(entry, Eof):
                break
            if isinstance(entry, HeaderEntry):
                continue
            if pending_fragments:  # finish a record split into fragments
                if entry.io_type != OpType.RECORD_FRAGMENT:
                    break
            elif len(raws) >= n:
                break
            elif not s.filters.passes(entry):
                continue
            raws.append(file.record_bytes(entry))
            pending_fragments = bool(entry.continued)
            if entry.io_type == OpType.METADATA:
                defined.add(entry.table)
            elif entry.io_type not in (OpType.COMMENT, OpType.RECORD_FRAGMENT) \
                    and entry.table not in tables:
                tables.append(entry.table)
            if entry.csn is not None:
                csns.append(entry.csn)
            if entry.io_time:
                times.append(entry.io_time)
    except TrailFormatError as exc:
        s.say(f"Error: {exc}", "Saving the records before it.")
    definitions = []
    if file.release12:  # every metadata record before: the TDR indexes keep their tables
        definitions = _metadata_before(s, s.rba)
    for name in tables if not file.release12 else []:
        if name not in defined:
            if name not in s.tables:
                s._learn_tables(s.rba)
            if name in s.table_records:
                definitions.append(s.table_records[name])
    try:
        size = write_saved_file(
            target, file.header, file.path, s.rba, raws, definitions,
            first_csn=csns[0] if csns else None, last_csn=csns[-1] if csns else None,
            first_io_time=times[0] if times else None, last_io_time=times[-1] if times else None,
            byte_order=file.decoder.order if file.decoder is not None else "big",
        )
    except OSError as exc:
        s.say(f"Error: cannot write {target}: {exc.strerror}")
        return
    extra = f" and {len(definitions)} table definitions" if definitions else ""
    s.say(f"Saved {len(raws)} records{extra} to {target} ({size} bytes)")


def _metadata_before(s: Session, upto: int) -> list[bytes]:
    """The bytes of every metadata record (and its fragments) before RBA ``upto``."""
    file = s.file
    assert file is not None
    out: list[bytes] = []
    in_meta = False
    for entry in s.records_from(file.first_record_rba):
        if isinstance(entry, Eof) or entry.rba >= upto:
            break
        if isinstance(entry, HeaderEntry):
            continue
        if entry.io_type == OpType.METADATA or (in_meta and entry.io_type ==
                                               OpType.RECORD_FRAGMENT):
            out.append(file.record_bytes(entry))
            in_meta = bool(entry.continued)
        else:
            in_meta = False
    return out


def _nexttrail(s: Session, args: list[str]) -> None:
    s.nexttrail()


def _history(s: Session, args: list[str]) -> None:
    s.say(*(f"{i:>4}: {line}" for i, line in enumerate(s.history, start=1)))


def _help(s: Session, args: list[str]) -> None:
    if args:
        cmd = lookup(args[0])
        if cmd is None:
            s.say(f"No command {args[0]!r}; HELP lists them")
            return
        alias = f"  (abbreviation: {', '.join(cmd.aliases)})" if cmd.aliases else ""
        s.say(f"{cmd.syntax}{alias}", f"  {cmd.summary}")
        return
    s.say("Logdump commands (case-insensitive; HELP command for one):")
    for cmd in COMMANDS:
        alias = f" ({', '.join(cmd.aliases)})" if cmd.aliases else ""
        s.say(f"  {cmd.syntax:<48} {cmd.summary}{alias}")


def _exit(s: Session, args: list[str]) -> bool:
    return True


COMMANDS: list[Command] = [
    Command("OPEN", (), "OPEN file", "open a trail file", _open),
    Command("NEXT", ("N",), "NEXT [n]", "show the next n records (default 1)", _next),
    Command("POSITION", ("POS",), "POSITION {rba | 0 | FIRST | LAST}",
            "read forward from this RBA", _position),
    Command("GHDR", (), "GHDR {ON | OFF}", "show the record header fields", _ghdr),
    Command("DETAIL", ("DET",), "DETAIL {ON | OFF | DATA}",
            "ON: list columns; DATA: also their decoded values", _detail),
    Command("FILEHEADER", ("FH",), "FILEHEADER {ON | OFF | DETAIL}",
            "show the file header's token groups (DETAIL: with hex)", _fileheader),
    Command("USERTOKEN", ("UT", "USERTOKENS"), "USERTOKEN {ON | OFF | DETAIL}",
            "show user tokens (TKN-...)", _usertoken),
    Command("GGSTOKEN", ("GGS",), "GGSTOKEN {ON | OFF | DETAIL}",
            "show the transaction area: ROWID, CSN, XID", _ggstoken),
    Command("HEADERTOKEN", ("HT",), "HEADERTOKEN {ON | OFF | DETAIL}",
            "show the record's G/H/D/T/Z areas (DETAIL: with the H area in hex)", _headertoken),
    Command("RECLEN", (), "RECLEN n", "bytes of data shown per image or column", _reclen),
    Command("DECRYPT", (), "DECRYPT {OFF | ON [KEYNAME name]}",
            "show encrypted records opened with their key (ENCKEYS) or as they are", _decrypt),
    Command("COUNT", (), "COUNT [DETAIL]",
            "count records per type and table (DETAIL: table by type)", _count),
    Command("FILTER", ("FIL",), "FILTER {INCLUDE | EXCLUDE} condition | CLEAR | ON | OFF | "
            "MATCH {ANY | ALL}", "select the records to show: FILENAME, IOTYPE, RBA, STRING, "
            "HEX, RECLEN, TRANSIND, STARTTIME, ENDTIME", _filter),
    Command("SHOW", ("SH",), "SHOW {FILTER | RECTYPE | ENV | TABLES | DDR | TDR [n]}",
            "show settings, filters, record types, known tables, or a 12c+ file's DDR and "
            "TDRs", _show),
    Command("ENV", (), "ENV", "show the current settings", _env),
    Command("SCANFORHEADER", ("SFH",), "SCANFORHEADER",
            "find the next good record after a damaged one", _scan_for_header),
    Command("SCANFORTYPE", ("SFT",), "SCANFORTYPE type",
            "show the next record of a type (SFT INSERT, SFT 15)", _scan_for_type),
    Command("SCANFORENDTRANS", ("SFET",), "SCANFORENDTRANS",
            "show the next record that ends a transaction", _scan_for_end_trans),
    Command("SCANFORMETADATA", ("SFMD",), "SCANFORMETADATA [DDR | TDR] [index | NEXT]",
            "show the next metadata record, or the TDR defining an index", scan_for_metadata),
    Command("TIMEOFFSET", (), "TIMEOFFSET [LOCAL | GMT | GMT+hh[:mm] | GMT-hh[:mm]]",
            "the time zone times are shown in (default GMT)", time_offset),
    Command("INTERPRETTIMESTAMP", (), "INTERPRETTIMESTAMP n",
            "a Julian timestamp as a time, GMT and local", interpret_timestamp),
    Command("COMPUTETIMESTAMP", (), "COMPUTETIMESTAMP YYYY-MM-DD [HH:MI:SS[.FFFFFF]]",
            "the Julian timestamp of a time", compute_timestamp),
    Command("SAVE", (), "SAVE file [!] n [RECORDS]",
            "write the next n records to a new trail file (! overwrites)", _save),
    Command("NEXTTRAIL", ("NT",), "NEXTTRAIL", "open the next file of this trail", _nexttrail),
    Command("HISTORY", ("HIST",), "HISTORY", "list the commands entered", _history),
    Command("HELP", ("?",), "HELP [command]", "list commands", _help),
    Command("EXIT", ("QUIT", "Q"), "EXIT | QUIT", "leave Logdump", _exit),
]
_BY_NAME = {name: cmd for cmd in COMMANDS for name in (cmd.name, *cmd.aliases)}


def lookup(word: str) -> Command | None:
    """A command by name, abbreviation, or an unambiguous prefix of at least 3 letters."""
    key = word.upper()
    if key in _BY_NAME:
        return _BY_NAME[key]
    if len(key) >= 3:
        found = [c for c in COMMANDS if c.name.startswith(key)]
        if len(found) == 1:
            return found[0]
    return None


def execute(session: Session, line: str) -> bool:
    """Run one command line; returns True when the session should end (EXIT)."""
    text = line.strip()
    if not text or text.startswith(("--", "#")):
        return False
    session.history.append(text)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        session.say(f"Error: cannot read the command ({exc}); check the quotes")
        return False
    cmd = lookup(words[0])
    if cmd is None:
        session.say(f"Error: unknown command {words[0]!r}; HELP lists the commands")
        return False
    try:
        return bool(cmd.run(session, words[1:]))
    except UsageError as exc:
        session.say(f"Error: {exc}", f"Usage: {cmd.syntax}")
    except TrailFormatError as exc:
        session.damage_message(exc)
    return False
