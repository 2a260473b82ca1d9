"""Seed 004's own examples as expected values: the marker text of ``ALTER TABLE t100 ADD c4
NUMBER`` (sequence 501) and the GGS_DDL_HIST metadata of table T100 parse to what the seed
states.  The seed shows them "reformatted and commented for readability": the ``#``
comments are taken off before parsing, as the seed's own layout is not the stored text."""

from __future__ import annotations

import re

import pytest

from trailgate.model import ColumnKind, DdlObject
from trailgate.params.ddl_rules import DdlFilter
from trailgate.trail.ddl import ddl_object, encode_marker, fragments, parse_marker, read_ddl
from trailgate.trail.metadata import decode_kv, decode_tabledef, encode_kv

# the seed's fragment 1 of GGS_MARKER for sequence 501
MARKER_STATEMENT = ",C1='ALTER TABLE t100 ADD c4 NUMBER ',"
# the seed's fragment 2 (the environment), as the seed prints it
MARKER_ENV = """\
,C5='501',# GGS_MARKER Sequence Number
,B2='77002',# Object ID
,G4='',# Sequence ROWID?
,B3='US01',             # Object Owner
,B4='T100',# Object Name
,C12='',# Master Owner
,C13='',# Master Object
,B5='TABLE',# Object Type
,B6='ALTER',# DDL Type
,B7='501',# DDL_HIST Sequence Number
,B8='GG01.GGS_DDL_HIST',# DDL_HIST table name
,B9='US01',# Login User Name
,C7='11.2.0.3.0',# Table Version
,C8='11.2.0.0.0',# Table Version - Compatible
,C9='VALID',# Table Validity
,C10='1',# Instance Number
,C11='NORTH',# Instance Name
,G3='NONUNIQUE',# Is Index Unique?
,C14='NO',# Object Table?
,C20='NO',# XML Type Table?
,C17('1')='NLS_LANGUAGE',# NLS Parameter Name
,C18('1')='AMERICAN',# NLS Parameter Value
,C17('2')='NLS_TERRITORY',              # NLS Parameter Name
,C18('2')='AMERICA',# NLS Parameter Value
,C17('3')='NLS_CURRENCY',# NLS Parameter Name
,C18('3')='$',# NLS Parameter Value
,C17('4')='NLS_ISO_CURRENCY',# NLS Parameter Name
,C18('4')='AMERICA',# NLS Parameter Value
,C17('5')='NLS_NUMERIC_CHARACTERS',# NLS Parameter Name
,C18('5')='.\\,',# NLS Parameter Value
,C17('6')='NLS_CALENDAR',# NLS Parameter Name
,C18('6')='GREGORIAN',# NLS Parameter Value
,C17('7')='NLS_DATE_FORMAT',# NLS Parameter Name
,C18('7')='DD-MON-RR',# NLS Parameter Value
,C17('8')='NLS_DATE_LANGUAGE',# NLS Parameter Name
,C18('8')='ENGLISH',# NLS Parameter Value
,C17('9')='NLS_SORT',# NLS Parameter Name
,C18('9')='BINARY',# NLS Parameter Value
,C17('10')='NLS_TIME_FORMAT',# NLS Parameter Name
,C18('10')='HH.MI.SSXFF AM',# NLS Parameter Value
,C17('11')='NLS_TIMESTAMP_FORMAT',# NLS Parameter Name
,C18('11')='DD-MON-RR HH.MI.SSXFF AM',# NLS Parameter Value
,C17('12')='NLS_TIME_TZ_FORMAT',# NLS Parameter Name
,C18('12')='HH.MI.SSXFF AM TZR',# NLS Parameter Value
,C17('13')='NLS_TIMESTAMP_TZ_FORMAT',# NLS Parameter Name
,C18('13')='DD-MON-RR HH.MI.SSXFF AM TZR',# NLS Parameter Value
,C17('14')='NLS_DUAL_CURRENCY',# NLS Parameter Name
,C18('14')='$',# NLS Parameter Value
,C17('15')='NLS_COMP',# NLS Parameter Name
,C18('15')='BINARY',# NLS Parameter Value
,C17('16')='NLS_LENGTH_SEMANTICS',# NLS Parameter Name
,C18('16')='BYTE',# NLS Parameter Value
,C17('17')='NLS_NCHAR_CONV_EXCP',# NLS Parameter Name
,C18('17')='FALSE',# NLS Parameter Value
,C19='17',# Number of NLS parameters
"""

HISTORY_METADATA = """\
,C6='GG01.GGS_MARKER',# Marker Table Name
,C5='501',# Marker Sequence Number
,C2='1885306',# SCN
,S='77002',# Object ID
,W='US01',# Owner
,X='T100',# Name
,Y='TABLE',# Object Type
,Z='ALTER',# Operation Type
,A1='84',# User ID
,A1='84',# User ID
,C3='',# Master Owner
,C4='',# Master Name
,C15='NO',# Ignore?
,R='8192',# Block Size
,I='77002',# Data Object ID
,J='',# Cluster Columns
,K='3',# Total Number of Columns
,L='0',# Log Group Exists
,N='VALID',# Valid?
,G11='FALSE',# Cluster?
,G7='NO',# IOT?
,G8='NO',# IOT Overflow?
,O='NO',# Subpartitioned?
,P='NO',# Partitioned?

# Column C1 definitions
,C('1'),C('C1')='C1',# Alternative Name
,D('1'),D('C1')='NUMBER',# Alternative Type
,G13('1'),G13('C1')='',# Alternative XML Type
,E('1'),E('C1')='',# Alternative Precision
,F('1'),F('C1')='',# Alternative Char Used
,G10('1'),G10('C1')='22',# Alternative Length
,G20('1'),G20('C1')='NO',# Is Encrypted?
,G22('1'),G22('C1')='NO',# Is LOB?
,G21('1'),G21('C1')='NO',# No Salt?
,G27('1'),G27('C1')='NO',# Has Not Null Default?
,G('1'),G('C1')='0',# Alternative XML Type
,G9('1'),G9('C1')='0',# Alternative BinaryXML Type
,G26('1'),G26('C1')='0',# Alternative ObjectXML Type
,A2('1'),A2('C1')='C1',# Column Name
,A3('1'),A3('C1')='1',# Column Number
,A4('1'),A4('C1')='1',# Segment Column Number
,A5('1'),A5('C1')='2',# Column Type (2=NUMBER)
,A6('1'),A6('C1')='22',# Length
,A7('1'),A7('C1')='1',# Is NULL?
,A8('1'),A8('C1')='',# Precision
,A9('1'),A9('C1')='',# Scale
,B1('1'),B1('C1')='0',# Character Set ID
,A('1'),A('C1')='0',# Character Set Form

# Column C2 definitions
,C('2'),C('C2')='C2',# Alternative Name
,D('2'),D('C2')='VARCHAR2',# Alternative Type
,G13('2'),G13('C2')='',# Alternative XML Type
,E('2'),E('C2')='',# Alternative Precision
,F('2'),F('C2')='B',# Alternative Char Used
,G10('2'),G10('C2')='30',# Alternative Length
,G20('2'),G20('C2')='NO',# Is Encrypted?
,G22('2'),G22('C2')='NO',# Is LOB?
,G21('2'),G21('C2')='NO',# No Salt?
,G27('2'),G27('C2')='NO',# Has Not NULL Default?
,G('2'),G('C2')='0',# Alternative XML Type
,G9('2'),G9('C2')='0',# Alternative BinaryXML Type
,G26('2'),G26('C2')='0',# Alternative ObjectXML Type
,A2('2'),A2('C2')='C2',# Column Name
,A3('2'),A3('C2')='2',# Column Number
,A4('2'),A4('C2')='2',# Segment Column Number
,A5('2'),A5('C2')='1',# Column Type (1=VARCHAR2)
,A6('2'),A6('C2')='30',# Length
,A7('2'),A7('C2')='1',# Is NULL?
,A8('2'),A8('C2')='',# Precision
,A9('2'),A9('C2')='',# Scale
,B1('2'),B1('C2')='178',# Character Set ID
,A('2'),A('C2')='1',# Character Set Form

# Column 3 definitions
,C('3'),C('C3')='C3',# Alternative Name
,D('3'),D('C3')='DATE',# Alternative Type
,G13('3'),G13('C3')='',# Alternative XML Type
,E('3'),E('C3')='',# Alternative Precision
,F('3'),F('C3')='',# Alternative Char Used
,G10('3'),G10('C3')='7',# Alternative Length
,G20('3'),G20('C3')='NO',# Is Encrypted?
,G22('3'),G22('C3')='NO',# Is LOB?
,G21('3'),G21('C3')='NO',# No Salt?
,G27('3'),G27('C3')='NO',# Has Not NULL Default?
,G('3'),G('C3')='0',# Alternative XML Type
,G9('3'),G9('C3')='0',# Alternative BinaryXML Type
,G26('3'),G26('C3')='0',# Alternative ObjectXML Type
,A2('3'),A2('C3')='C3',# Column Name
,A3('3'),A3('C3')='3',# Column Number
,A4('3'),A4('C3')='3',# Segment Column Number
,A5('3'),A5('C3')='12',# Column Type (12=DATE)
,A6('3'),A6('C3')='7',# Length
,A7('3'),A7('C3')='1',# Nullable
,A8('3'),A8('C3')='',# Precision
,A9('3'),A9('C3')='',# Scale
,B1('3'),B1('C3')='0',# Character Set ID
,A('3'),A('C3')='0',# Character Set Form

,H='3',# Column Count (=3)
,G28='NO',# XML Type Table?
"""
# fragment 1 of GGS_DDL_HIST for the same DDL
HISTORY_STATEMENT = ",G1='ALTER TABLE t100 ADD c4 NUMBER ',"


def uncomment(text: str) -> str:
    """The seed's layout without its ``# …`` comments (outside quotes)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"((?:[^'#]|'(?:[^'\\]|''|\\.)*')*)", line)
        out.append(m.group(1) if m else line)
    return "\n".join(out)


def test_marker_statement_fragment():
    marker = parse_marker(MARKER_STATEMENT)
    assert marker.statement == "ALTER TABLE t100 ADD c4 NUMBER "


def test_marker_environment_values():
    marker = parse_marker(MARKER_STATEMENT + uncomment(MARKER_ENV))
    assert marker.seqno == 501
    assert marker.get("B2") == "77002"
    assert marker.get("G4") == ""
    assert (marker.owner, marker.name) == ("US01", "T100")
    assert (marker.master_owner, marker.master_name) == ("", "")
    assert (marker.object_type, marker.ddl_type) == ("TABLE", "ALTER")
    assert marker.get("B7") == "501"
    assert marker.get("B8") == "GG01.GGS_DDL_HIST"
    assert marker.login_user == "US01"
    assert (marker.get("C7"), marker.get("C8")) == ("11.2.0.3.0", "11.2.0.0.0")
    assert (marker.get("C9"), marker.get("C10"), marker.get("C11")) == ("VALID", "1", "NORTH")
    assert (marker.get("G3"), marker.get("C14"), marker.get("C20")) == ("NONUNIQUE", "NO", "NO")
    settings = marker.settings()
    assert marker.get("C19") == "17" and len(settings) == 17
    assert settings["NLS_LANGUAGE"] == "AMERICAN"
    assert settings["NLS_NUMERIC_CHARACTERS"] == ".,"  # written '.\,' in the marker
    assert settings["NLS_DATE_FORMAT"] == "DD-MON-RR"
    assert settings["NLS_TIMESTAMP_TZ_FORMAT"] == "DD-MON-RR HH.MI.SSXFF AM TZR"
    assert list(settings)[-1] == "NLS_NCHAR_CONV_EXCP"
    assert marker.qualified_name == "US01.T100"
    assert marker.describe() == "DDL sequence 501 [ALTER TABLE t100 ADD c4 NUMBER]"


def test_history_metadata_values():
    items = decode_kv(HISTORY_STATEMENT + uncomment(HISTORY_METADATA))
    plain = {k: v for k, i, v in items if i is None}
    assert plain["G1"] == "ALTER TABLE t100 ADD c4 NUMBER "
    assert (plain["C6"], plain["C5"], plain["C2"]) == ("GG01.GGS_MARKER", "501", "1885306")
    assert (plain["S"], plain["W"], plain["X"], plain["Y"], plain["Z"]) == (
        "77002", "US01", "T100", "TABLE", "ALTER")
    assert (plain["A1"], plain["R"], plain["I"], plain["K"], plain["H"]) == (
        "84", "8192", "77002", "3", "3")
    by_name = {(k, i): v for k, i, v in items if i is not None}
    assert by_name[("C", "1")] == by_name[("C", "C1")] == "C1"  # by number and by name
    assert by_name[("B1", "C2")] == "178" and by_name[("F", "2")] == "B"
    table = decode_tabledef((HISTORY_STATEMENT + uncomment(HISTORY_METADATA)).encode())
    assert table.qualified_name == "US01.T100" and table.object_id == 77002
    assert [(c.name, c.kind, c.source_type, c.length, c.nullable) for c in table.columns] == [
        ("C1", ColumnKind.NUMBER, "NUMBER", 22, True),
        ("C2", ColumnKind.VARCHAR2, "VARCHAR2", 30, True),
        ("C3", ColumnKind.DATE, "DATE", 7, True)]


def test_marker_round_trip_and_fragments():
    text = encode_marker("ALTER TABLE t ADD c text DEFAULT 'a,b\\c'",
                         [("C5", "7"), ("B3", "public"), ("B4", "t"), ("B5", "TABLE"),
                          ("B6", "ALTER")], settings={"search_path": '"$user", public',
                                                      "DateStyle": "ISO, MDY"})
    marker = parse_marker(text)
    assert marker.statement == "ALTER TABLE t ADD c text DEFAULT 'a,b\\c'"
    assert marker.settings() == {"search_path": '"$user", public', "DateStyle": "ISO, MDY"}
    pieces = fragments(text * 100)
    assert all(len(p) <= 4000 for p in pieces) and "".join(pieces) == text * 100
    assert decode_kv(encode_kv([("X", "it's", "a\\b'c")])) == [("X", "it's", "a\\b'c")]


@pytest.mark.parametrize("bad", ["not marker text", ",C1=x", ",C1='x", ",C1('1'", ",C1"])
def test_malformed_marker_text(bad):
    with pytest.raises(ValueError):
        parse_marker(bad)


def test_backslashes_written_before_they_were_doubled_still_read_the_same():
    from trailgate.trail.metadata import decode_kv, encode_kv

    # earlier trailgate wrote a backslash as itself: a\'b was  'a\''b', a\nb was 'a\nb'
    assert decode_kv(",C1='a\\''b',C2='a\\nb'") == [("C1", None, "a\\'b"),
                                                     ("C2", None, "a\\nb")]
    for value in ("a\\'b", "x\\", ".,", "a\\nb", "it's", "\\\\,"):
        assert decode_kv(encode_kv([("C1", "1", value)])) == [("C1", "1", value)]


def test_read_ddl_gives_the_object_the_rules_judge():
    """The one reading of a DDL record's text every group uses (Extract, Pump, Replicat on
    PostgreSQL and lake targets): the seed's marker, an index's table, an unreadable text."""
    record = read_ddl(MARKER_STATEMENT + uncomment(MARKER_ENV))
    assert record.unreadable is None and record.marker.seqno == 501
    assert record.obj == DdlObject("US01", "T100", "TABLE", "ALTER",
                                   "ALTER TABLE t100 ADD c4 NUMBER ", None, "")
    index = read_ddl(encode_marker("create index i on app.t (v)", [
        ("B3", "app"), ("B4", "i"), ("B5", "index"), ("B6", "create"), ("C12", "app"),
        ("C13", "t")]))
    assert index.obj == DdlObject("app", "i", "INDEX", "CREATE", "create index i on app.t (v)",
                                  "app.t", "")
    assert ddl_object(index.marker) == index.obj
    bad = read_ddl(",C1='cut")
    assert bad.unreadable and "cannot be read" in bad.marker.error
    assert bad.marker.statement == ",C1='cut" and bad.obj.error == bad.marker.error
    assert (bad.obj.owner, bad.obj.name) == ("", "")
    # nothing to judge it by: every group's rules take it, and DDLERROR decides
    assert DdlFilter([], lambda _: False, "REPLICAT").decide(bad.obj).include
