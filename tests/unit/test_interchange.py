"""JSON Lines export/import: the documented fields, and export then import reproduces the
same bytes."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from trailgate.cli import main
from trailgate.interchange import export_records, import_records
from trailgate.model import Change, OpType, Transaction
from trailgate.sample import COURSE, STUDENT, seed_transactions
from trailgate.trail import TrailName, TrailReader, TrailWriter

TABLES = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}


def _write_sample(trail: Path, megabytes: int = 500, extra: int = 0) -> None:
    with TrailWriter(trail, megabytes=megabytes, producer="EXT1") as w:
        for txn in seed_transactions():
            w.write_transaction(txn, TABLES)
        for i in range(extra):
            w.write_transaction(Transaction(f"2.{i}.1", 5000 + i, [
                Change(OpType.INSERT, "US03.COURSE",
                       after={0: b"Oxford", 1: b"x" * 3000, 2: str(i).encode()},
                       tokens={"HOST": "db1"}),
                Change(OpType.PK_UPDATE, "US03.STUDENT", before={0: b"1011"},
                       after={0: str(2000 + i).encode(), 7: None}),
            ]), TABLES)


def test_export_fields(tmp_path: Path):
    _write_sample(tmp_path / "aa")
    objs = list(export_records(tmp_path / "aa"))
    assert objs[0]["record"] == "file" and objs[0]["header"]["producer"]["name"] == "EXT1"
    assert objs[1]["record"] == "metadata" and objs[1]["table"] == "US03.STUDENT"
    first = objs[2]
    assert first["op"] == "Insert" and first["xid"] == "4.11.854" and first["csn"] == 1621215
    assert first["rowid"] == "AAASrPAAEAAAAQ2AAK" and first["trans_ind"] == "only"
    assert first["timestamp"].startswith("2013-03-31T23:59:58")
    assert first["columns"][0] == {"index": 0, "name": "STUDENT_KEY", "type": "NUMBER",
                                   "value": "1011"}
    update = objs[3]
    assert update["op"] == "FieldComp" and [c["name"] for c in update["columns"]] == [
        "STUDENT_KEY", "TUITION_FEE"]
    delete = objs[4]
    assert delete["before"] == [{"index": 0, "name": "STUDENT_KEY", "type": "NUMBER",
                                 "value": "1004"}]
    multi = [o for o in objs if o.get("xid") == "6.27.1204"]
    assert [o["trans_ind"] for o in multi] == ["first", "middle", "last"]


@pytest.mark.parametrize("megabytes", [500, 1])
def test_export_then_import_reproduces_the_bytes(tmp_path: Path, megabytes: int):
    _write_sample(tmp_path / "src" / "aa", megabytes=megabytes, extra=400)
    lines = [json.dumps(o) for o in export_records(tmp_path / "src" / "aa")]
    count = import_records(lines, tmp_path / "dst" / "aa")
    assert count == 15 + 800
    src, dst = TrailName(tmp_path / "src" / "aa"), TrailName(tmp_path / "dst" / "aa")
    assert src.sequence_numbers() == dst.sequence_numbers()
    for seq in src.sequence_numbers():
        assert src.file(seq).read_bytes() == dst.file(seq).read_bytes(), seq


def test_cli_export_from_position_and_import(tmp_path: Path):
    _write_sample(tmp_path / "aa")
    reader = TrailReader(tmp_path / "aa")
    ends = [rt.end for rt in reader.transactions()]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["trail", "export", str(tmp_path / "aa"), "--from", str(ends[4])]) == 0
    changes = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [c["xid"] for c in changes if c["record"] == "change"] == [
        "7.13.846"] * 3 + ["4.21.865"] * 3
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text(out.getvalue())
    assert main(["trail", "import", str(jsonl), "--trail", str(tmp_path / "new" / "bb")]) == 0
    got = [rt.transaction.xid for rt in TrailReader(tmp_path / "new" / "bb").transactions()]
    assert got == ["7.13.846", "4.21.865"]


def test_import_errors_name_file_and_line(tmp_path: Path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record": "change", "op": "Insert", "table": "A.B", "columns": []}\n'
                   "{not json\n")
    assert main(["trail", "import", str(bad), "--trail", str(tmp_path / "t" / "aa")]) == 1
    assert f"{bad}, line 2: not JSON" in capsys.readouterr().err
    bad.write_text('{"record": "change", "op": "Nonsense", "table": "A.B"}\n')
    assert main(["trail", "import", str(bad), "--trail", str(tmp_path / "u" / "aa")]) == 1
    assert "line 1" in capsys.readouterr().err


def test_a_21_1_trail_exports_the_same_changes(tmp_path: Path):
    """``trail export`` reads every format: a little-endian 21.1 trail of the same
    transactions exports the same definitions and changes as the 11.2 trail."""
    from trailgate.trail.release import parse_release

    _write_sample(tmp_path / "aa", extra=3)
    with TrailWriter(tmp_path / "bb", producer="EXT1",
                     format=parse_release("21.1", "little")) as w:
        for rt in TrailReader(tmp_path / "aa").transactions():
            w.begin_transaction(rt.transaction.xid, rt.transaction.csn)
            for change, record in zip(rt.transaction.changes, rt.records, strict=True):
                w.add_change(change, record.table_def)
            w.commit_transaction()

    def body(trail: Path) -> list[dict]:
        objs = [o for o in export_records(trail) if o["record"] != "file"]
        for o in objs:
            o.pop("position", None)
        return objs

    assert body(tmp_path / "bb") == body(tmp_path / "aa")
    header = next(export_records(tmp_path / "bb"))["header"]
    assert header["compatibility"] == 7
