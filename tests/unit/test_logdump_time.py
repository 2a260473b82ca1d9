"""GoldenGate's Julian epoch, fixed by Logdump's own examples (Logdump Reference 12.2,
INTERPRETTIMESTAMP and COMPUTETIMESTAMP pages), and Logdump's time commands."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from trailgate.logdump.cli import run_lines
from trailgate.logdump.formats import julian_text
from trailgate.logdump.session import Session
from trailgate.model import JULIAN_UNIX_EPOCH_MICROS, unix_micros_from_julian


def logdump(*commands: str) -> list[str]:
    out = io.StringIO()
    run_lines(Session(out), commands)
    return out.getvalue().splitlines()


def test_interprettimestamp_example_of_the_logdump_reference():
    # docs.oracle.com/goldengate/ns1221/gg-nsk/GLOGD/GUID-D9CCBA91-7158-4F9C-B09F-496398E49027
    lines = logdump("INTERPRETTIMESTAMP 211976584185800569")
    assert lines[0] == "2005/03/03 04:29:45.800.569 GMT"
    assert lines[1].endswith(" LCT")


def test_computetimestamp_example_of_the_logdump_reference():
    # docs.oracle.com/goldengate/ns1221/gg-nsk/GLOGD/GUID-D70EC94B-94A5-4790-A27A-D5E15C0499C5
    assert logdump("COMPUTETIMESTAMP 2005-01-01 12:00:00") == [
        "2005-01-01 12:00:00 is JulianTimestamp 211971340800000000"]


def test_the_epoch_is_julian_date_2440587_5():
    assert JULIAN_UNIX_EPOCH_MICROS == 2_440_587_5 * 86_400 * 10**6 // 10
    # Logdump's CTIME example in the same reference: 1109823330 is Thu Mar 3 04:15:30 2005 GMT
    assert datetime.fromtimestamp(1109823330, UTC) == datetime(2005, 3, 3, 4, 15, 30, tzinfo=UTC)


def test_seed001_timestamps_under_the_epoch():
    """Seed 001's H record time (02 F1 FD 87 76 B3 53 40) and its file's CreationTime (02 F1
    FD 87 75 A4 17 24), 18 seconds apart: 2013-03-07 11:28:37 and 11:28:19.224356 UTC."""
    assert julian_text(0x02F1FD8776B35340) == "2013/03/07 11:28:37.000.000"
    assert julian_text(0x02F1FD8775A41724) == "2013/03/07 11:28:19.224.356"
    assert unix_micros_from_julian(0x02F1FD8776B35340) % 1_000_000 == 0


def test_timeoffset_changes_how_times_are_shown_and_read():
    lines = logdump("timeoffset GMT+09:00", "computetimestamp 2022-12-26 15:03:44",
                    "timeoffset", "timeoffset gmt -01", "timeoffset moon")
    assert lines[0] == "Timeoffset set to GMT+09:00"
    julian = int(lines[1].rsplit(" ", 1)[1])
    assert julian_text(julian) == "2022/12/26 06:03:44.000.000"  # GMT
    assert lines[2] == "Timeoffset is GMT+09:00"
    assert lines[3] == "Timeoffset set to GMT-01:00"
    assert lines[4].startswith("Error: TIMEOFFSET moon: expected LOCAL, GMT")


def test_bad_timestamps_are_messages():
    assert logdump("interprettimestamp x")[0].startswith("Error: the timestamp must be a number")
    assert logdump("computetimestamp yesterday")[0].startswith("Error: not a time")
