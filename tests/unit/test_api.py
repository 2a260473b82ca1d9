"""The public API (``trailgate.api``, docs/api.md): what a Python user reaches for works as
documented, with the same results as the modules behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trailgate import api


def _table() -> api.TableDef:
    return api.TableDef("public", "items", [
        api.Column("id", 0, api.ColumnKind.NUMBER, "integer", nullable=False),
        api.Column("name", 1, api.ColumnKind.VARCHAR2, "text"),
    ], key=["id"])


def _txn(n: int) -> api.Transaction:
    changes = [api.Change(api.OpType.INSERT, "public.items", {0: str(i).encode(), 1: b"x"})
               for i in range(n)]
    return api.Transaction(xid=f"1.{n}.0", csn=1000 + n, changes=changes)


def test_write_then_read_transactions(tmp_path: Path) -> None:
    trail = tmp_path / "dirdat" / "aa"
    end = api.write_transactions(trail, [_txn(2), _txn(3)], {"public.items": _table()})
    assert end.seqno == 0 and end.rba > 0
    read = list(api.read_transactions(trail))
    assert [len(r.transaction.changes) for r in read] == [2, 3]
    assert [r.transaction.csn for r in read] == [1002, 1003]
    assert read[1].transaction.changes[2].after == {0: b"2", 1: b"x"}
    assert api.read_header(f"{trail}000000000").seqno == 0


def test_write_a_release_format_and_read_it(tmp_path: Path) -> None:
    trail = tmp_path / "dirdat" / "aa"
    api.write_transactions(trail, [_txn(2)], {"public.items": _table()}, release="21.1",
                           byte_order="little")
    assert api.read_header(f"{trail}000000000").compatibility == 7
    (read,) = api.read_transactions(trail)
    assert read.transaction.changes[1].after == {0: b"1", 1: b"x"}
    for release, order in (("21.1", "sideways"), (None, "little")):
        with pytest.raises(api.ConfigError, match="TRAILBYTEORDER"):
            api.write_transactions(tmp_path / "bad" / "aa", [], {}, release=release,
                                   byte_order=order)


def test_decode_one_record(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    api.write_transactions(trail, [_txn(1)], {"public.items": _table()})
    (first,) = api.read_transactions(trail)
    record = first.records[0]
    data = Path(f"{trail}000000000").read_bytes()
    raw = api.decode(data[record.position.rba:record.end.rba])
    assert raw.op is api.OpType.INSERT
    assert raw.table == "public.items"
    with pytest.raises(api.TrailFormatError, match="not a trail record"):
        api.decode(b"G\x01\x00\x05junk")
    with pytest.raises(api.TrailFormatError, match="exactly one record"):
        api.decode(data[record.position.rba:record.end.rba] + b"extra")


def test_json_lines_round_trip(tmp_path: Path) -> None:
    src, copy = tmp_path / "aa", tmp_path / "bb"
    api.write_transactions(src, [_txn(2)], {"public.items": _table()})
    lines = list(api.export_jsonl(src))
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert api.import_jsonl(lines, copy) == 2
    assert [r.transaction.changes for r in api.read_transactions(copy)] == \
        [r.transaction.changes for r in api.read_transactions(src)]


def test_trail_source_options() -> None:
    opts = api.TrailSourceOptions("dirdat/aa", tables=("hr.*", "emp"),
                                  starting_position=api.TrailPosition(3, 1024),
                                  max_records_per_trigger=500)
    assert opts.as_options() == {"path": "dirdat/aa", "batchRows": "10000",
                                 "includeMetadata": "false", "tables": "hr.*,emp",
                                 "startingPosition": "3:1024", "maxRecordsPerTrigger": "500"}
    from trailgate.spark.trail_options import parse_options

    parsed = parse_options({**opts.as_options(), "path": "dirdat/aa"}, streaming=True)
    assert parsed.start == api.TrailPosition(3, 1024)
    assert parsed.tables == ("hr.*", "emp")
    typed = api.TrailSourceOptions("dirdat/aa", table="public.orders").as_options()
    assert typed["table"] == "public.orders" and "listTables" not in typed
    assert parse_options(typed, streaming=True).table == "public.orders"
    assert api.TrailSourceOptions("dirdat/aa", list_tables=True).as_options()[
        "listTables"] == "true"


def test_capture_oracle_dumps_into_a_trail(tmp_path: Path) -> None:
    oracle = Path(__file__).parents[1] / "fixtures" / "oracle"
    dictionary = (Path(api.__file__).parent / "capture" / "oracle" / "examples"
                  / "us03_dictionary.json")
    capture: api.DumpCapture = api.capture_oracle_dumps(dictionary, [oracle / "single_insert.dmp"])
    trail = tmp_path / "ea"
    api.write_transactions(trail, capture, capture.tables)
    (read,) = api.read_transactions(trail)
    assert [c.table for c in read.transaction.changes] == ["US03.STUDENT"]
    assert read.records[0].table_def == capture.tables["US03.STUDENT"]
    assert capture.records > 0 and capture.open_at_end == []


def test_run_group_names_a_missing_group(tmp_path: Path) -> None:
    home = api.Home(tmp_path)
    with pytest.raises(api.ConfigError, match="no group NOPE"):
        api.run_group(home, "nope")


def test_everything_exported_exists() -> None:
    for name in api.__all__:
        assert getattr(api, name) is not None
