"""The dictionary file: seed 003's example loads into TableDefs; mistakes are ConfigErrors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trailgate.capture.oracle.dictionary import Dictionary
from trailgate.errors import ConfigError
from trailgate.model import ColumnKind

US03 = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle" / "examples"
        / "us03_dictionary.json")


def test_example_dictionary_tabledefs():
    d = Dictionary.load(US03)
    defs = d.tabledefs()
    assert sorted(defs) == ["US03.COURSE", "US03.STUDENT"]
    student = defs["US03.STUDENT"]
    assert student.object_id == 76490
    assert student.key == ["STUDENT_KEY"] and student.key_kind == "PRIMARY"
    assert [(c.name, c.index, c.kind) for c in student.columns] == [
        ("STUDENT_KEY", 0, ColumnKind.NUMBER), ("FIRST_NAME", 1, ColumnKind.VARCHAR2),
        ("SURNAME", 2, ColumnKind.VARCHAR2), ("GENDER", 3, ColumnKind.VARCHAR2),
        ("UNIVERSITY", 4, ColumnKind.VARCHAR2), ("SUBJECT", 5, ColumnKind.VARCHAR2),
        ("ENTRY_YEAR", 6, ColumnKind.NUMBER), ("TUITION_FEE", 7, ColumnKind.NUMBER)]
    assert student.columns[1].source_type == "VARCHAR2(30)"
    assert student.columns[0].nullable is False
    assert defs["US03.COURSE"].key == ["UNIVERSITY", "SUBJECT", "ENTRY_YEAR"]
    table = d.by_data_object_id(76495)[0]
    assert d.by_object_id(76490) is table
    assert [fk.ref_table for fk in table.foreign_keys] == ["COURSE"]
    assert table.unique_keys == [("FIRST_NAME", "SURNAME")]


def minimal(**table) -> dict:
    base = {"owner": "u", "table": "t", "object_id": 1,
            "columns": [{"name": "a", "type": "NUMBER"}, {"name": "b", "type": "DATE"}]}
    base.update(table)
    return {"format": "trailgate-oracle-dictionary", "version": 1, "tables": [base]}


def test_key_falls_back_to_unique_then_all_columns():
    d = Dictionary.from_dict(minimal())
    assert d.tabledefs()["U.T"].key == ["A", "B"] and d.tabledefs()["U.T"].key_kind == "ALL"
    doc = minimal(unique_keys=[{"columns": ["b"]}])
    assert Dictionary.from_dict(doc).tabledefs()["U.T"].key_kind == "ALL"  # b is nullable
    doc["tables"][0]["columns"][1]["nullable"] = False
    t = Dictionary.from_dict(doc).tabledefs()["U.T"]
    assert (t.key, t.key_kind) == (["B"], "UNIQUE")


@pytest.mark.parametrize(("change", "message"), [
    ({"columns": [{"name": "a", "type": "BLOB"}]}, "type BLOB is not supported"),
    ({"columns": [{"name": "a", "type": "NUMBER", "segcol": 1},
                  {"name": "b", "type": "NUMBER", "segcol": 1}]}, "same segcol 1"),
    ({"primary_key": {"columns": ["zz"]}}, "unknown column"),
    ({"object_id": "76490"}, '"object_id" must be a int'),
])
def test_mistakes_are_config_errors(change, message):
    with pytest.raises(ConfigError, match=message):
        Dictionary.from_dict(minimal(**change), path="d.json")


def test_bad_json_names_the_line(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{\n "format": "trailgate-oracle-dictionary",\n "version": 1,\n oops\n}')
    with pytest.raises(ConfigError, match=r"d.json, line 4: not valid JSON"):
        Dictionary.load(p)


def test_wrong_format_and_charset(tmp_path):
    with pytest.raises(ConfigError, match="not a dictionary file"):
        Dictionary.from_dict({"tables": []})
    doc = minimal()
    doc["database_charset"] = "JA16SJIS"
    with pytest.raises(ConfigError, match="JA16SJIS is not supported"):
        Dictionary.from_dict(doc)
    p = tmp_path / "d.json"
    p.write_text(json.dumps(minimal()))
    assert Dictionary.load(p).tables[0].qualified_name == "U.T"
