"""Logdump's time commands: TIMEOFFSET, INTERPRETTIMESTAMP and COMPUTETIMESTAMP.

GoldenGate's Julian timestamps count microseconds with 1970-01-01 00:00 UTC at
210,866,760,000,000,000 (docs/trail-format.md, "Times"); Logdump's reference gives one
example of each command, and both are tests (tests/unit/test_logdump_time.py).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from trailgate.logdump.formats import julian_text
from trailgate.logdump.session import Session
from trailgate.logdump.usage import UsageError, number
from trailgate.model import julian_from_unix_micros

__all__ = ["compute_timestamp", "interpret_timestamp", "parse_time_offset", "time_offset"]

_OFFSET = re.compile(r"GMT\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?\Z")


def parse_time_offset(text: str) -> tuple[tzinfo, str]:
    """``LOCAL``, ``GMT``, ``GMT+hh[:mm]`` or ``GMT-hh[:mm]`` as a zone and its label."""
    word = " ".join(text.split()).upper()
    if word == "GMT":
        return UTC, "GMT"
    if word == "LOCAL":
        local = datetime.now().astimezone().tzinfo
        assert local is not None
        return local, "LOCAL"
    m = _OFFSET.match(word)
    if m is None:
        raise UsageError(f"TIMEOFFSET {text}: expected LOCAL, GMT, GMT+hh[:mm] or GMT-hh[:mm]")
    hours, minutes = int(m.group(2)), int(m.group(3) or 0)
    if hours > 23 or minutes > 59:
        raise UsageError(f"TIMEOFFSET {text}: the offset must be under 24 hours")
    delta = timedelta(hours=hours, minutes=minutes) * (1 if m.group(1) == "+" else -1)
    return timezone(delta), f"GMT{m.group(1)}{hours:02d}:{minutes:02d}"


def time_offset(s: Session, args: list[str]) -> None:
    """TIMEOFFSET [LOCAL | GMT | GMT±hh[:mm]]: the zone times are shown and read in."""
    if not args:
        s.say(f"Timeoffset is {s.settings.time_offset}")
        return
    s.settings.tz, s.settings.time_offset = parse_time_offset(" ".join(args))
    s.say(f"Timeoffset set to {s.settings.time_offset}")


def interpret_timestamp(s: Session, args: list[str]) -> None:
    """INTERPRETTIMESTAMP n: a Julian timestamp in GMT and in the machine's local time."""
    if len(args) != 1:
        raise UsageError("INTERPRETTIMESTAMP needs one Julian timestamp, e.g. "
                         "INTERPRETTIMESTAMP 211976584185800569")
    value = number(args[0], "the timestamp")
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    gmt = julian_text(value, UTC)
    if gmt.endswith("(not a time)"):
        raise UsageError(f"{value} is not a Julian timestamp Logdump can show")
    s.say(f"{gmt} GMT", f"{julian_text(value, local)} LCT")


def _parse_time(text: str, tz: tzinfo) -> datetime:
    clean = text.replace("/", "-")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d",
                "%Y-%m-%d:%H:%M:%S.%f", "%Y-%m-%d:%H:%M:%S"):
        try:
            return datetime.strptime(clean, fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    raise UsageError(f"not a time {text!r}: use YYYY-MM-DD [HH:MI[:SS[.FFFFFF]]]")


def compute_timestamp(s: Session, args: list[str]) -> None:
    """COMPUTETIMESTAMP time: the Julian timestamp of a time (in the TIMEOFFSET zone, GMT
    unless set)."""
    if not args:
        raise UsageError("COMPUTETIMESTAMP needs a time, e.g. COMPUTETIMESTAMP 2005-01-01 "
                         "12:00:00")
    text = " ".join(args)
    when = _parse_time(text, s.settings.tz)
    micros = (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    s.say(f"{text} is JulianTimestamp {julian_from_unix_micros(micros)}")
