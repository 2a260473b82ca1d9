"""Logdump's commands for a self-describing trail's metadata: SCANFORMETADATA (SFMD) to the
next DDR or TDR record (or the one defining a TDR index), and SHOW DDR / SHOW TDR [n] for
what the whole file defines.

SCANFORMETADATA is GoldenGate's (Logdump reference 12.2); SHOW DDR and SHOW TDR are
trailgate's, for the question a person reading a 12c+ file asks first: which table is TDR n?
"""

from __future__ import annotations

from trailgate.logdump.session import Session
from trailgate.logdump.source import HeaderEntry, Record
from trailgate.logdump.usage import UsageError, number
from trailgate.trail.release12 import primed_decoder
from trailgate.trail.release12.definitions import encode_tdr, tdr_text

__all__ = ["scan_for_metadata", "show_metadata"]


def scan_for_metadata(s: Session, args: list[str]) -> None:
    """SCANFORMETADATA [DDR | TDR] [index | NEXT]."""
    words = [a.upper() for a in args]
    kind = words.pop(0) if words and words[0] in ("DDR", "TDR") else None
    if len(words) > 1:
        raise UsageError("SCANFORMETADATA takes [DDR | TDR] [index | NEXT]")
    target = words[0] if words else "NEXT"
    index = None if target == "NEXT" else number(target, "the index")
    file = s.require_file()
    if file is None:
        return
    if index is not None and kind != "TDR":
        raise UsageError("an index names a table definition: SFMD TDR n")
    if index is not None:
        if not file.release12:
            s.say("This file is in the 11.2 format: its table definitions have no TDR index "
                  "(SFMD TDR NEXT shows the next one)")
            return
        s.rba = file.first_record_rba  # an index is found from the file's start

    def match(e: object) -> bool:
        if isinstance(e, HeaderEntry) or getattr(e, "io_type", None) != 170:
            return False
        view = e.view if isinstance(e, Record) else None
        if kind == "DDR":
            return view is not None and view.orig_node == 1
        if kind == "TDR":
            if view is None:
                return True  # an 11.2 file's metadata records are table definitions
            if view.orig_node not in (2, 3):
                return False
            return index is None or (isinstance(e, Record) and e.own_index == index)
        return True

    if not s.next(1, match):
        what = f"TDR {index}" if index is not None else kind or "metadata record"
        s.say(f"No {what} found")


def show_metadata(s: Session, what: str, args: list[str]) -> None:
    """SHOW DDR, SHOW TDR [n]: the database definition or the table definitions the whole
    open file holds (read from its start, without moving the position)."""
    file = s.require_file()
    if file is None:
        return
    if not file.release12 or file.header is None:
        s.say("This file is in the 11.2 format: it has no DDR or TDR records (SHOW TABLES "
              "lists its table definitions)")
        return
    try:
        decoder = primed_decoder(file.path, file.header, file.size)
    except ValueError as exc:
        s.say(f"Error: reading the file's metadata: {exc}")
        return
    if what == "DDR":
        ddr = decoder.ddr
        if ddr is None:
            s.say("The file has no DDR trailgate can read")
            return
        s.say(*ddr.lines())
        return
    if args:
        index = number(args[0], "the TDR index")
        spec = decoder.tdrs.get(index)
        if spec is None:
            s.say(f"The file defines no TDR {index} (SHOW TDR lists them)")
            return
        if spec.definition is None:
            s.say(f"TDR {index}: {spec.name}: {spec.problem or 'definition not readable'}")
            return
        text = (tdr_text(spec.binary, spec.name) if spec.binary is not None else encode_tdr(
            spec.definition, exact=False).decode("utf-8").rstrip("\n").splitlines())
        s.say(f"TDR {index}:", *text)
        return
    if not decoder.tdrs:
        s.say("The file has no TDR records")
    for index, spec in sorted(decoder.tdrs.items()):
        columns = (f"{len(spec.definition.columns)} columns" if spec.definition is not None
                   else f"definition not readable: {spec.problem}")
        s.say(f"TDR Index {index:>4}: {spec.name} ({columns})")
