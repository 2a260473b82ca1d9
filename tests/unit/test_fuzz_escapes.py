"""Regression tests for what the fuzzers (test_fuzz_trails.py, test_fuzz_inputs.py) found
escaping as something other than trailgate's own error naming where: each input here once
ended in a traceback."""

from __future__ import annotations

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
