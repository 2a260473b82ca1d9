"""DDL in the trail and around it, without a database: marker rows into DDL, the DDL rules,
a DDL record with its new definition written and read back, export/import, segments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trailgate.apply.records import TrailChange
from trailgate.capture.ddl_markers import DdlRows
from trailgate.changes.ranges import TrailRange
from trailgate.errors import ConfigError
from trailgate.extract.ddl import ExtractDdl
from trailgate.extract.tables import TableRules
from trailgate.extract.tokens import GroupEnv
from trailgate.interchange import export_records, import_records
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.params.ddl_rules import DdlFilter, DdlObject
from trailgate.params.model import DdlRule, TableSpec
from trailgate.replicat.task_rows import read_task_rows
from trailgate.trail import TrailName, TrailReader, TrailWriter
from trailgate.trail.ddl import encode_marker, parse_marker
from trailgate.trail.reader import record_bytes
from trailgate.trail.release import parse_release

MARKER = TableDef("gg", "ggs_marker", [
    Column("seqno", 0, ColumnKind.NUMBER, "bigint"),
    Column("fragmentno", 1, ColumnKind.NUMBER, "integer"),
    Column("optime", 2, ColumnKind.CHAR, "character(19)", 19),
    Column("type", 3, ColumnKind.VARCHAR2, "character varying(100)"),
    Column("subtype", 4, ColumnKind.VARCHAR2, "character varying(100)"),
    Column("marker_text", 5, ColumnKind.VARCHAR2, "character varying(4000)")], ["seqno"])
HIST = TableDef("gg", "ggs_ddl_hist", [
    Column("seqno", 0, ColumnKind.NUMBER, "bigint"),
    Column("fragmentno", 7, ColumnKind.NUMBER, "integer"),
    Column("metadata_text", 10, ColumnKind.VARCHAR2, "character varying(4000)")], ["seqno"])
T1 = TableDef("app", "t", [Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
                           Column("v", 1, ColumnKind.VARCHAR2, "text")], ["id"])
T2 = TableDef("app", "t", [*T1.columns, Column("w", 2, ColumnKind.NUMBER, "integer")], ["id"])


def marker_row(seq: object, frag: object, text: str, subtype: str = "DDLINFO") -> Change:
    after = {0: None if seq is None else str(seq).encode(),
             1: None if frag is None else str(frag).encode(), 2: b"2026-11-21:10:00:00",
             3: b"DDL", 4: subtype.encode(), 5: text.encode()}
    return Change(OpType.INSERT, "GG.GGS_MARKER", after=after, io_time=5, audit_pos=77)


def history_row(seq: int, frag: int, text: str) -> Change:
    return Change(OpType.INSERT, "gg.ggs_ddl_hist",
                  after={0: str(seq).encode(), 7: str(frag).encode(), 10: text.encode()})


HISTORY = (",C6='gg.GGS_MARKER',C5='7',S='1',W='app',X='t',Y='TABLE',Z='ALTER',H='3',"
           "T='id',V='PRIMARY',A2('1')='id',A3('1')='1',A5('1')='2',D('1')='integer',"
           "A7('1')='0',A2('2')='v',A3('2')='2',A5('2')='1',D('2')='text',A7('2')='1',"
           "A2('3')='w',A3('3')='3',A5('3')='2',D('3')='integer',A7('3')='1'")


def test_marker_rows_become_one_ddl_each():
    rows = DdlRows("gg")
    assert rows.kind("GG.GGS_MARKER") == "marker" and rows.kind("gg.ggs_ddl_hist") == "history"
    assert rows.kind("gg.other") is None
    env = ",C5='7',B3='app',B4='t',B5='TABLE',B6='ALTER'"
    rows.add(history_row(7, 1, ",G1='ALTER TABLE t ADD w int'"), HIST)
    rows.add(history_row(7, 2, HISTORY), HIST)
    rows.add(marker_row(7, 1, ",C1='ALTER TABLE t ADD w int'"), MARKER)
    rows.add(marker_row(7, 2, env), MARKER)
    rows.add(marker_row(8, 1, "garbage that is not marker text"), MARKER)
    rows.add(marker_row(None, None, ",C1='by hand'"), MARKER)
    first, second, third = rows.take()
    assert first.seqno == 7 and first.marker().statement == "ALTER TABLE t ADD w int"
    assert first.marker().qualified_name == "app.t" and not first.failed
    assert first.history is not None and "A2('3')='w'" in first.history
    assert second.failed and "cannot be read" in second.marker().error
    assert second.marker().seqno == 8 and second.marker().statement.startswith("garbage")
    assert third.failed and "without SEQNO" in third.marker().error
    assert rows.take() == []


def test_ddl_rules_as_goldengate_documents_them():
    mapped = {"app.t", "app.u"}.__contains__

    def decide(rules: list[DdlRule], obj: DdlObject, role: str = "EXTRACT") -> bool:
        return DdlFilter(rules, mapped, role).decide(obj).include

    alter = DdlObject("app", "t", "TABLE", "ALTER", "ALTER TABLE t ADD x int")
    other_table = DdlObject("hr", "x", "TABLE", "CREATE", "CREATE TABLE hr.x (a int)")
    index = DdlObject("app", "t_a_idx", "INDEX", "CREATE", "CREATE INDEX ON t (a)", "app.t")
    schema = DdlObject("", "s1", "SCHEMA", "CREATE", "CREATE SCHEMA s1")
    assert not decide([], alter)  # Extract without DDL: none
    assert decide([], alter, "REPLICAT") and not decide([], other_table, "REPLICAT")
    assert decide([], other_table, "PUMP")
    mapped_only = [DdlRule(True, "MAPPED")]
    assert decide(mapped_only, alter) and decide(mapped_only, index)  # the index's table
    assert not decide(mapped_only, other_table) and not decide(mapped_only, schema)
    assert decide([DdlRule(True, "UNMAPPED")], other_table)
    assert decide([DdlRule(True, "OTHER")], schema)
    assert decide([DdlRule(True, "ALL")], schema)
    no_drop = [DdlRule(True, "MAPPED"), DdlRule(False, optypes=["DROP"])]
    assert not decide(no_drop, DdlObject("app", "t", "TABLE", "DROP", "DROP TABLE t"))
    assert decide(no_drop, alter)
    by_name = [DdlRule(True, objnames=["hr.*"]), DdlRule(False, objtypes=["'INDEX'"])]
    assert decide(by_name, other_table) and not decide(by_name, alter)
    assert not decide(by_name, DdlObject("hr", "i", "INDEX", "CREATE", "CREATE INDEX i"))
    assert decide([DdlRule(True, instr=["add x"])], alter)
    assert not decide([DdlRule(True, instr=["add y"])], alter)
    filt = DdlFilter(no_drop, mapped, "EXTRACT")
    assert filt.decide(alter).rule == "INCLUDE MAPPED"
    unreadable = DdlObject("", "", "", "", "???", error="cannot be read")
    assert filt.decide(unreadable).include  # DDLERROR decides


def _extract_ddl(rules: list[DdlRule]) -> ExtractDdl:
    tables = TableRules([TableSpec("app.*")], [], GroupEnv("E", "", "h", "u", 1))
    from trailgate.capture.postgres.ddl_history import tabledef_from_history

    return ExtractDdl("gg", rules, bool(rules), tables, report=True,
                      history=tabledef_from_history)


def test_extract_ddl_writes_the_new_definition_and_report_lines():
    ddl = _extract_ddl([DdlRule(True, "MAPPED")])
    ddl.add(history_row(7, 1, ",G1='x'"), HIST)
    ddl.add(history_row(7, 2, HISTORY), HIST)
    ddl.add(marker_row(7, 1, ",C1='ALTER TABLE t ADD w int'"), MARKER)
    ddl.add(marker_row(7, 2, ",C5='7',B3='app',B4='t',B5='TABLE',B6='ALTER',C11='db'"),
            MARKER)
    (out,) = ddl.take(csn=99)
    assert out.change is not None and out.change.op is OpType.DDL
    assert out.change.table == "app.t" and out.change.audit_pos == 77
    assert parse_marker(out.change.text).statement == "ALTER TABLE t ADD w int"
    assert out.define is not None and [c.name for c in out.define.columns] == ["id", "v", "w"]
    assert out.define.key == ["id"] and not out.define.columns[0].nullable
    assert "DDL found, operation [ALTER TABLE t ADD w int (size 23)], commit CSN [99]" \
        in out.notes[0]
    assert "DDL operation included [INCLUDE MAPPED]" in out.notes[1]
    ddl.add(marker_row(8, 1, ",C1='CREATE TABLE hr.x (a int)'"), MARKER)
    ddl.add(marker_row(8, 2, ",C5='8',B3='hr',B4='x',B5='TABLE',B6='CREATE'"), MARKER)
    (excluded,) = ddl.take(csn=100)
    assert excluded.change is None and "excluded" in excluded.notes[1]


def _write(trail: Path, ddl_last: bool) -> None:
    text = encode_marker("ALTER TABLE app.t ADD w int",
                         [("C5", "7"), ("B3", "app"), ("B4", "t"), ("B5", "TABLE"),
                          ("B6", "ALTER")])
    with TrailWriter(trail, megabytes=1, fsync=False) as w:
        w.begin_transaction("0.1.1", 11)
        w.add_change(Change(OpType.INSERT, "app.t", after={0: b"1", 1: b"a"}), T1)
        w.add_change(Change(OpType.DDL, "app.t", text=text), None)
        w.add_definition(T2)
        if not ddl_last:
            w.add_change(Change(OpType.INSERT, "app.t", after={0: b"2", 1: b"b", 2: b"3"}),
                         T2)
        w.commit_transaction()
        w.begin_transaction("0.2.1", 12)
        w.add_change(Change(OpType.INSERT, "app.t", after={0: b"4", 1: b"c", 2: b"5"}), T2)
        w.commit_transaction()


def test_ddl_record_then_its_definition_then_the_changes(tmp_path: Path):
    for ddl_last in (False, True):
        trail = tmp_path / f"x{int(ddl_last)}" / "aa"
        _write(trail, ddl_last)
        kinds = [(r.raw.io_type, r.raw.trans_ind) for r in TrailReader(trail).records()]
        expect = [(170, 3), (5, 0), (160, 2 if ddl_last else 1), (170, 3)]
        expect += [] if ddl_last else [(5, 2)]
        assert kinds == [*expect, (5, 3)]  # no second definition before the last insert
        txns = list(TrailRange(str(trail), TrailPosition(0, 0), None).transactions())
        ddl_item = next(item for item in txns[0].items if item[0].op is OpType.DDL)
        assert ddl_item[2] == T2  # the definition written after it, even when it ends
        task = read_task_rows(str(trail), TrailPosition(0, 0), TrailPosition(9, 0),
                              TrailRange(str(trail), TrailPosition(0, 0), None).router)
        changes = task.changes[0]
        segments = task.definitions.segments(changes)
        assert segments is not None
        shapes = [([tc.change.op for tc in part], sorted(defs)) for part, defs in segments]
        assert shapes[1] == ([OpType.DDL], ["app.t"])
        assert segments[0][1]["app.t"] == T1 and segments[-1][1]["app.t"] == T2
        assert all(isinstance(tc, TrailChange) and tc.txn_start is not None for tc in changes)
        # export and import give the same bytes back
        lines = [json.dumps(o) for o in export_records(trail)]
        ddl = next(json.loads(x) for x in lines if '"DDL"' in x)
        assert ddl["ddl"]["statement"] == "ALTER TABLE app.t ADD w int"
        assert ddl["ddl"]["seqno"] == "7" and ddl["ddl"]["objname"] == "t"
        copy = tmp_path / f"copy{int(ddl_last)}" / "aa"
        import_records(lines, copy)
        assert record_bytes(copy) == record_bytes(trail)


def test_import_keeps_a_whole_ddl_transaction_before_a_bad_line(tmp_path: Path):
    """A transaction that ends with a DDL is committed when the next line is known; a bad
    next line stops the import, but not before that transaction is in the trail."""
    _write(tmp_path / "src" / "aa", ddl_last=True)
    objects = list(export_records(tmp_path / "src" / "aa"))
    # file, metadata, the first transaction (insert, DDL last), the DDL's new definition;
    # then, instead of the second transaction, a line that is not JSON
    assert [o.get("op") for o in objects[2:5]] == ["Insert", "DDL", None]
    kept = [json.dumps(o) for o in objects[:5]]
    with pytest.raises(ConfigError, match="not JSON"):
        import_records([*kept, "{not json"], tmp_path / "dst" / "aa", source="in.jsonl")
    txns = list(TrailReader(tmp_path / "dst" / "aa").transactions())
    assert [t.transaction.xid for t in txns] == ["0.1.1"]
    assert txns[0].transaction.changes[-1].op is OpType.DDL


@pytest.mark.parametrize("release", ["11.2", "21.1"])
def test_ddl_at_the_start_of_a_new_file_and_across_a_rollover(tmp_path: Path, release: str):
    """A DDL transaction that rolls over to a new file, and a DDL that is the first record
    of a file (a restarted writer), in the 11.2 and a self-describing 12c+ format: the new
    definition is written in the file's own format, and readers — from the start, and
    restarted in the new file as a Replicat is — decode the rows after it with it."""
    fmt = parse_release(release, "little") if release != "11.2" else None
    trail = tmp_path / "aa"
    text = encode_marker("ALTER TABLE app.t ADD w int",
                         [("C5", "7"), ("B3", "app"), ("B4", "t"), ("B5", "TABLE"),
                          ("B6", "ALTER")])
    with TrailWriter(trail, megabytes=1, fsync=False, format=fmt) as w:
        n = 0
        while w.position.rba < (1 << 20) - 3000:  # the file all but full
            n += 1
            w.begin_transaction(f"0.{n}.1", n)
            w.add_change(Change(OpType.INSERT, "app.t", after={0: b"%d" % n, 1: b"p" * 2000}),
                         T1)
            w.commit_transaction()
        w.begin_transaction("0.a.1", 1000)  # DML, DDL, DML: rolls over inside
        w.add_change(Change(OpType.INSERT, "app.t", after={0: b"-1", 1: b"q" * 2500}), T1)
        w.add_change(Change(OpType.DDL, "app.t", text=text), None)
        w.add_definition(T2)
        w.add_change(Change(OpType.INSERT, "app.t", after={0: b"-2", 1: b"b", 2: b"3"}), T2)
        w.commit_transaction()
        w.start_file()  # as a restarted Extract does: the DDL opens the next file
        w.begin_transaction("0.b.1", 1001)
        w.add_change(Change(OpType.DDL, "app.t", text=text.replace("'7'", "'8'")), None)
        w.add_definition(T1)
        w.add_change(Change(OpType.INSERT, "app.t", after={0: b"-3", 1: b"c"}), T1)
        w.commit_transaction()
    name = TrailName(trail)
    seqs = name.sequence_numbers()
    assert len(seqs) == 3
    last = [(r.raw.io_type, r.raw.trans_ind)
            for r in TrailReader(name.file(seqs[-1]), single_file=True).records()]
    assert last[0] == (OpType.DDL, 0) and last[-1] == (OpType.INSERT, 2)
    assert all(ind == 3 for io, ind in last if io == OpType.METADATA)  # its own format's
    rows = [r.change.after for r in TrailReader(trail).records()
            if r.change is not None and r.change.after and r.change.after[0].startswith(b"-")]
    assert [(r[0], sorted(r)) for r in rows] == [(b"-1", [0, 1]), (b"-2", [0, 1, 2]),
                                                 (b"-3", [0, 1])]
    restart = TrailPosition(seqs[-1], 0)  # a Replicat whose checkpoint is the new file
    again = [r for r in TrailReader(trail, start=restart).records() if r.change is not None]
    assert [r.change.op for r in again] == [OpType.DDL, OpType.INSERT]
    assert again[1].change.after == {0: b"-3", 1: b"c"}
    rng = TrailRange(str(trail), restart, None)
    task = read_task_rows(str(trail), restart, TrailPosition(99, 0), rng.router)
    [changes] = task.changes.values()
    segments = task.definitions.segments(changes)
    assert segments is not None
    assert [([tc.change.op for tc in part], defs["app.t"]) for part, defs in segments] == [
        ([OpType.DDL], T1), ([OpType.INSERT], T1)]
