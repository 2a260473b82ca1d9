"""The Oracle redo dump Extract turns inserts into GGSCHEMA's GGS_MARKER into DDL records:
a dump written in seed 003's insert layout, holding seed 004's two marker rows of ``ALTER
TABLE t100 ADD c4 NUMBER`` (sequence 501) between two transactions of T100."""

from __future__ import annotations

import json
import re

import pytest
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.capture.oracle.datatypes import encode_number
from trailgate.capture.oracle.dumpwriter import DumpWriter, Xid
from trailgate.extract.oracle.group import run_oracle_extract
from trailgate.extract.postgres.group import RunOptions
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import OpType
from trailgate.trail import TrailReader
from trailgate.trail.ddl import parse_marker

pytestmark = pytest.mark.spark

# seed 004's marker rows for sequence 501, comments taken off
STATEMENT = ",C1='ALTER TABLE t100 ADD c4 NUMBER ',"
ENVIRONMENT = (",C5='501',,B2='77002',,G4='',,B3='US01',,B4='T100',,C12='',,C13='',"
               ",B5='TABLE',,B6='ALTER',,B7='501',,B8='GG01.GGS_DDL_HIST',,B9='US01',"
               ",C7='11.2.0.3.0',,C8='11.2.0.0.0',,C9='VALID',,C10='1',,C11='NORTH',"
               ",G3='NONUNIQUE',,C14='NO',,C20='NO',,C17('1')='NLS_LANGUAGE',"
               ",C18('1')='AMERICAN',,C17('2')='NLS_NUMERIC_CHARACTERS',,C18('2')='.\\,',"
               ",C19='2',")

DICTIONARY = {
    "format": "trailgate-oracle-dictionary", "version": 1, "database_charset": "AL32UTF8",
    "tables": [
        {"owner": "US01", "table": "T100", "object_id": 77002, "data_object_id": 77002,
         "columns": [{"name": "C1", "type": "NUMBER"},
                     {"name": "C2", "type": "VARCHAR2", "length": 30},
                     {"name": "C3", "type": "DATE"}]},
        {"owner": "GG01", "table": "GGS_MARKER", "object_id": 76000, "data_object_id": 76000,
         "columns": [{"name": "SEQNO", "type": "NUMBER"},
                     {"name": "FRAGMENTNO", "type": "NUMBER"},
                     {"name": "OPTIME", "type": "CHAR", "length": 19},
                     {"name": "TYPE", "type": "VARCHAR2", "length": 100},
                     {"name": "SUBTYPE", "type": "VARCHAR2", "length": 100},
                     {"name": "MARKER_TEXT", "type": "VARCHAR2", "length": 4000}]},
    ],
}


def _write_dump(path) -> None:
    with open(path, "w", encoding="latin-1") as out:
        w = DumpWriter(out, seq=0x70, scn=0x1CC4F0, objn=77002, objd=77002)
        before, ddl, after = Xid(4, 0x11, 900), Xid(6, 0x05, 901), Xid(4, 0x12, 902)
        w.insert(before, 1, [encode_number(1), b"first", None])
        w.commit(before)
        w.objn = w.objd = 76000  # the DDL trigger's rows, in the DDL's transaction
        for fragment, text in ((1, STATEMENT), (2, ENVIRONMENT)):
            w.insert(ddl, fragment, [encode_number(501), encode_number(fragment),
                                     b"2013-04-02:09:00:10", b"DDL", b"DDLINFO",
                                     text.encode()])
        w.commit(ddl)
        w.objn = w.objd = 77002
        w.insert(after, 2, [encode_number(2), b"second", None])
        w.commit(after)
        w.end()


def test_marker_inserts_in_a_redo_dump_become_a_ddl_record(spark, tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    _write_dump(dumps / "thread1_seq000112.dmp")
    home = Home(tmp_path / "home").create()
    home.add_group(GroupInfo("ORAD", "EXTRACT", "DUMPDIR", source_path=str(dumps)))
    home.add_trail("ORAD", TrailInfo("./dirdat/od", megabytes=1))
    (home.path / "dictionary.json").write_text(json.dumps(DICTIONARY))
    home.globals_file.write_text("GGSCHEMA GG01\n")
    (home.dirprm / "orad.prm").write_text(
        f"EXTRACT ORAD\nTRANLOGOPTIONS DUMPDIR {dumps}, DICTIONARY ./dictionary.json\n"
        "EXTTRAIL ./dirdat/od\nDDL INCLUDE MAPPED\nDDLOPTIONS REPORT\nTABLE US01.*;\n")
    assert run_oracle_extract(home, "ORAD", RunOptions(once=True), spark=spark) == 0

    records = [r for r in TrailReader(home.path / "dirdat" / "od").records()
               if r.raw.io_type != OpType.METADATA]
    assert [(OpType(r.raw.io_type).name, r.raw.table) for r in records] == [
        ("INSERT", "US01.T100"), ("DDL", "US01.T100"), ("INSERT", "US01.T100")]
    ddl = records[1]
    assert ddl.starts_transaction and ddl.ends_transaction
    marker = parse_marker(ddl.change.text)
    assert marker.statement == "ALTER TABLE t100 ADD c4 NUMBER "
    assert (marker.seqno, marker.owner, marker.name, marker.object_type, marker.ddl_type) == (
        501, "US01", "T100", "TABLE", "ALTER")
    assert marker.settings() == {"NLS_LANGUAGE": "AMERICAN", "NLS_NUMERIC_CHARACTERS": ".,"}
    report = home.report_file("ORAD").read_text()
    assert re.search(r"DDL found, operation \[ALTER TABLE t100 ADD c4 NUMBER \(size 30\)\]",
                     report)
    assert "DDL operation included [INCLUDE MAPPED], optype [ALTER], objtype [TABLE]" in report
    ck = home.checkpoints.load("ORAD", "EXTRACT")
    assert ck.stats["US01.T100"].ddl == 1 and ck.stats["US01.T100"].inserts == 2
