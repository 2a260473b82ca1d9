"""Regression tests for what the fuzzers (test_fuzz_trails.py, test_fuzz_inputs.py) found
escaping as something other than trailgate's own error naming where: each input here once
ended in a traceback."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest

from trailgate.cli import main


def _import(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]) -> str:
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    assert main(["trail", "import", str(src), "--trail", str(tmp_path / "t" / "aa")]) == 1
    return capsys.readouterr().err


def test_json_lines_not_utf8_names_the_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    err = _import(tmp_path, b'\n{"table": "\xd9"}\n', capsys)
    assert f"{tmp_path / 'in.jsonl'}, line 2: byte 12 of the line is not UTF-8" in err


@pytest.mark.parametrize("line", [b"1", b"[]", b'"change"', b"null"])
def test_json_lines_value_not_an_object_names_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: bytes) -> None:
    err = _import(tmp_path, line + b"\n", capsys)
    assert f"{tmp_path / 'in.jsonl'}, line 1: a JSON" in err
    assert "record object" in err


def test_ggsci_obey_file_not_utf8_names_the_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    obey = tmp_path / "setup.oby"
    obey.write_bytes(b"INFO ALL\nINFO \xc6ANAGER\n")
    assert main(["--home", str(tmp_path), "ggsci", str(obey)]) == 1
    out = capsys.readouterr().out
    assert f"obey file {obey}, line 2: not UTF-8" in out


def _strict_stdin(data: bytes) -> io.TextIOWrapper:
    """stdin as Python opens it under a UTF-8 locale such as en_US.UTF-8 (errors strict)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict")


def test_logdump_commands_on_stdin_not_utf8_are_unknown_commands() -> None:
    from trailgate.logdump.cli import run

    out = io.StringIO()
    run(argparse.Namespace(file=None), stdin=_strict_stdin(b"ghdr on\n\xff\xfe n\nenv\n"),
        stdout=out)
    assert "Error: unknown command" in out.getvalue()
    assert "GHDR" in out.getvalue().upper()  # the lines after it still ran (ENV)


def test_ggsci_script_on_stdin_not_utf8_stops_at_its_line(tmp_path: Path) -> None:
    from trailgate.ggsci.shell import run

    out = io.StringIO()
    status = run(argparse.Namespace(home=str(tmp_path), obey=None),
                 stdin=_strict_stdin(b"INFO ALL\nINFO \xc6X\n"), stdout=out)
    assert status == 1
    assert "stdin, line 2" in out.getvalue()


_CHANGE = {"record": "change", "op": "Insert", "table": "APP.T", "trans_ind": "only",
           "columns": [{"index": 0, "value": "1"}]}


@pytest.mark.parametrize(("field", "value", "said"), [
    ("tokens", ["a"], '"tokens" must be an object of strings'),
    ("rowid", {"a": 1}, "'rowid' cannot be an object"),
    ("table", 1.5, "'table' cannot be a number"),
    ("text", {}, "'text' cannot be an object"),
    ("xid", [], "'xid' cannot be an array"),
    ("io_time", 2**70, "a number out of the trail format's range"),
    ("before", {"index": 1}, "'before' cannot be an object"),
    ("columns", ["index"], "a column must be a JSON object, not a string"),
])
def test_json_lines_field_of_the_wrong_type_names_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object,
        said: str) -> None:
    line = json.dumps({**_CHANGE, field: value})
    err = _import(tmp_path, b"\n" + line.encode() + b"\n", capsys)
    assert f"in.jsonl, line 2: {said}" in err


@pytest.mark.parametrize(("header", "said"), [
    ({"filename": 7}, "the file header: 'filename' cannot be a number"),
    ({"machine": {"hostname": []}}, "header.machine: 'hostname' cannot be an array"),
    ({"producer": "x"}, "header.producer must be a JSON object, not a string"),
    ({"nonsense": 1}, "the file header has no field 'nonsense'"),
])
def test_json_lines_file_header_of_the_wrong_shape_names_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], header: dict, said: str) -> None:
    line = json.dumps({"record": "file", "format": 1, "header": header})
    err = _import(tmp_path, line.encode() + b"\n", capsys)
    assert f"in.jsonl, line 1: {said}" in err


def test_json_lines_definition_of_the_wrong_shape_names_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = json.dumps({"record": "metadata", "definition": {
        "schema": "APP", "name": 5, "columns": [{"name": "ID", "index": 0, "kind": "NUMBER",
                                                 "source_type": "NUMBER"}]}})
    err = _import(tmp_path, line.encode() + b"\n", capsys)
    assert "in.jsonl, line 1: the definition: 'name' cannot be a number" in err


def test_json_lines_definition_with_a_negative_column_index_names_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = json.dumps({"record": "metadata", "definition": {
        "schema": "APP", "name": "T", "columns": [{"name": "ID", "index": -3,
                                                  "kind": "NUMBER", "source_type": "NUMBER"}]}})
    err = _import(tmp_path, line.encode() + b"\n" + json.dumps(_CHANGE).encode() + b"\n",
                  capsys)
    assert "in.jsonl, line 1: a column index must be 0 to 65535, not -3" in err


def _trail_with_damage(tmp_path: Path, how: str) -> tuple[str, int]:
    """A one-file 11.2 trail whose second transaction's record is damaged ``how``; the
    trail and the damaged record's RBA."""
    from trailgate.sample import COURSE, STUDENT, seed_transactions
    from trailgate.trail import TrailReader, TrailWriter

    tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE}
    with TrailWriter(tmp_path / "aa", fsync=False) as w:
        for txn in seed_transactions()[:3]:
            w.write_transaction(txn, tables)
    rows = [pos.rba for pos, raw in TrailReader(tmp_path / "aa").raw_records()
            if raw.io_type != 170 and raw.trans_ind in (0, 3)]
    path = tmp_path / "aa000000000"
    data = bytearray(path.read_bytes())
    pos = rows[1]
    hlen = int.from_bytes(data[pos + 6:pos + 8], "big")
    body = pos + 8 + hlen  # the D sub-record, then T (and U)
    dlen = int.from_bytes(data[body + 2:body + 4], "big")
    tarea = body + 4 + dlen  # the T sub-record: R, L, 6 inside
    if how == "sub-record past its record":
        data[tarea + 2:tarea + 4] = b"\x27\x2c"
    elif how == "table name not UTF-8":
        data[pos + 8 + 34] = 0xFF  # the H area: 34 fixed bytes, then the name
    elif how == "D length not RecLength":
        data[pos + 8 + 4:pos + 8 + 6] = (dlen + 1).to_bytes(2, "big")  # RecLength
    elif how == "CSN not digits":
        at = data.index(b"L\x00", tarea + 4)
        data[at + 4] = ord("x")
    path.write_bytes(bytes(data))
    return str(tmp_path / "aa"), pos


@pytest.mark.parametrize("how", ["sub-record past its record", "table name not UTF-8",
                                 "D length not RecLength", "CSN not digits"])
def test_the_c_boundary_scan_stops_where_the_reader_raises(tmp_path: Path, how: str) -> None:
    """The Spark source's boundary scan in C passed over records whose framing was sound
    but whose sub-records the reader refuses, and found a boundary after them where the
    pure-Python scan raises: both now raise TrailFormatError at the record."""
    from trailgate.errors import TrailFormatError
    from trailgate.model import TrailPosition
    from trailgate.replicat.range_apply import CLEAN_SCAN
    from trailgate.spark.trail_offsets import scan_boundary
    from trailgate.trail._accel import speedups

    trail, rba = _trail_with_damage(tmp_path, how)
    with pytest.raises(TrailFormatError, match=f"at RBA {rba}"):
        scan_boundary(trail, TrailPosition(0, 0))
    if speedups is not None:
        data = Path(trail + "000000000").read_bytes()
        first = data.index(b"G\x01")
        out = speedups.scan_records(data, first, len(data), CLEAN_SCAN, -1, None, None)
        assert out is not None and out[0] == rba and out[-1] == 1  # stopped there


@pytest.mark.parametrize("registry", [
    b"\x80",
    {"version": 1, "groups": []},
    {"version": 1, "groups": {"PMP1": {"name": "PMP1", "kind": 3, "source": "TRANLOG"}}},
    {"version": 1, "groups": {"PMP1": {"name": "PMP1", "kind": "XTRACT", "source": "TRANLOG"}}},
    {"version": 1, "groups": {"PMP1": {"name": "PMP1", "kind": "EXTRACT",
                                       "source": "EXTTRAILSOURCE", "trails": [{"path": 7}]}}},
])
def test_a_damaged_group_registry_is_named_not_an_internal_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], registry: dict | bytes) -> None:
    """dirchk/groups.json edited by hand or damaged: GGSCI said "internal error
    (AttributeError …)" for a groups list and one not UTF-8, and took fields of the wrong
    type."""
    from trailgate.errors import ConfigError
    from trailgate.home import Home

    (tmp_path / "dirchk").mkdir()
    (tmp_path / "dirchk" / "groups.json").write_bytes(
        registry if isinstance(registry, bytes) else json.dumps(registry).encode())
    with pytest.raises(ConfigError, match="the group registry is corrupt"):
        Home(tmp_path).groups()
    obey = tmp_path / "info.oby"
    obey.write_text("INFO ALL\n", "utf-8")
    assert main(["--home", str(tmp_path), "ggsci", str(obey)]) == 1
    out = capsys.readouterr().out
    assert "the group registry is corrupt" in out and "internal error" not in out


@pytest.mark.parametrize("separator", ["\x1c", "\x1f", "\u2028"])
def test_oracle_dump_column_bytes_split_by_odd_whitespace_are_read_or_refused(
        tmp_path: Path, separator: str) -> None:
    """A column value's hex bytes split by a character Python's regex takes for whitespace
    but bytes.fromhex does not (\\x1c…\\x1f): the fast path's ValueError escaped."""
    from trailgate.capture.oracle import capture_oracle_dumps
    from trailgate.errors import SourceError

    fixtures = Path(__file__).parents[1] / "fixtures" / "oracle"
    dictionary = (Path(__file__).parents[2] / "src" / "trailgate" / "capture" / "oracle"
                  / "examples" / "us03_dictionary.json")
    text = (fixtures / "single_insert.dmp").read_text()
    old = "col 2: [ 8] 53 68 65 72 77 6f 6f 64"
    assert text.count(old) == 1
    dump = tmp_path / "odd.dmp"
    dump.write_text(text.replace(old, old.replace("53 68", f"53{separator}68")))
    try:  # read as the reference parser reads it, or refused naming the line
        list(capture_oracle_dumps(dictionary, [dump]))
    except SourceError as exc:
        assert re.search(r"odd\.dmp, line \d+", str(exc)), exc


def test_manager_rest_query_string_not_utf8_is_a_400(tmp_path: Path) -> None:
    """GET /api/groups/?<0x80>: the framework's trailing-slash redirect decoded the query
    string and the Manager answered 500 (a UnicodeDecodeError in the server)."""
    import asyncio

    from fuzz_worker import _home, _manager_state

    from trailgate.manager.api import create_app

    app = create_app(_manager_state(_home(tmp_path / "home")))
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": "/api/groups/", "root_path": "",
             "raw_path": b"/api/groups/", "query_string": b"lines=\x80", "client": ("a", 1),
             "headers": [(b"host", b"127.0.0.1")], "server": ("127.0.0.1", 7809)}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    assert b"not UTF-8" in sent[1]["body"]


@pytest.mark.parametrize("how", ["sub-record past its record", "D length not RecLength",
                                 "CSN not digits"])
def test_header_only_reads_and_the_catalog_stop_where_the_reader_raises(tmp_path: Path,
                                                                         how: str) -> None:
    """The C header rows and the catalog's C pass leave a record the reader refuses to the
    reader: the read raises its error with the RBA, never rows from a damaged record."""
    from trailgate.errors import TrailFormatError
    from trailgate.model import TrailPosition
    from trailgate.spark.trail_catalog import tables_between
    from trailgate.spark.trail_rows import header_batches
    from trailgate.trail._accel import speedups

    trail, rba = _trail_with_damage(tmp_path, how)
    if speedups is not None:  # header-only reads exist only with the C codec
        with pytest.raises(TrailFormatError, match=f"RBA {rba}"):
            list(header_batches(trail, TrailPosition(0, 0), None, ("op", "rba"), None))
    with pytest.raises(TrailFormatError, match=f"RBA {rba}"):
        tables_between(trail, 0, 0, None)
