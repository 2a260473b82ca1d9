"""DDLERROR on a Delta target, with a real Delta table (deltalake, no Spark): a DDL the
table cannot take (a retype whose values do not convert) fails with a SQLSTATE, and the
rules decide as on PostgreSQL — a specific error before DEFAULT, IGNORE, DISCARD (to the
discard file), ABEND with the trail position, and retries before the response."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from trailgate.apply.ddl_errors import DdlError
from trailgate.apply.discard import DiscardWriter
from trailgate.apply.lake_ddl import LakeDdl
from trailgate.apply.lake_errors import lake_sqlstate
from trailgate.apply.parquet import table_directory
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.capture.postgres.types import classify
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text
from trailgate.trail.ddl import encode_marker


def _tdef(cols: list[tuple[str, str]]) -> TableDef:
    columns = []
    for i, (name, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(name, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef("app", "t", columns, ["id"])


RETYPED = _tdef([("id", "integer"), ("v", "integer")])
RETYPE = "ALTER TABLE app.t ALTER COLUMN v TYPE integer USING length(v)"


def _ddl(statement: str = RETYPE, **extra: str) -> TrailChange:
    env = [("C5", "12"), ("B3", "app"), ("B4", "t"), ("B5", "TABLE"), ("B6", "ALTER"),
           *extra.items()]
    return TrailChange(Change(OpType.DDL, "app.t", text=encode_marker(statement, env)), 103,
                       "1.2.3", TrailPosition(4, 1971))


def _lake(tmp_path: Path, rules: str) -> tuple[LakeDdl, Path]:
    params = parse_params_text(f"REPLICAT rep1\nTARGETDB x\n{rules}\nMAP app.*, TARGET rep.*;",
                               "dirprm/rep1.prm")
    assert isinstance(params, ReplicatParams)
    root = tmp_path / "lake"
    path = table_directory(root, "rep.t")
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int32()),
                                         "v": pa.array(["12", "abc"])}))
    return LakeDdl(params, "DELTA", str(root), "REP1",
                   discard=DiscardWriter(tmp_path / "rep1.dsc")), path


def _unchanged(path: Path) -> bool:
    table = DeltaTable(str(path))
    return table.version() == 0 and pa.schema(table.schema()).field("v").type == pa.string()


def test_abend_names_the_error_position_and_rule(tmp_path: Path):
    lake, path = _lake(tmp_path, "")
    with pytest.raises(DdlError) as raised:
        lake.apply(_ddl(), RETYPED, ApplyResult())
    text = str(raised.value)
    assert "error 22P02 (ArrowInvalid: " in text and "DDL sequence 12 [" + RETYPE in text
    assert "Delta table rep.t, trail position 4:1971 (seqno 4, RBA 1971), CSN 103" in text
    assert "The Replicat stops (DDLERROR DEFAULT ABEND)" in text
    assert "add a DDLERROR rule for error 22P02 (IGNORE or DISCARD)" in text
    assert raised.value.txn_start is None and _unchanged(path)


def test_specific_error_before_default_and_ignore(tmp_path: Path):
    lake, path = _lake(tmp_path, "DDLERROR 22P02 IGNORE\nDDLERROR DEFAULT ABEND")
    result = ApplyResult()
    assert lake.apply(_ddl(), RETYPED, result) is False
    assert result.counts["rep.t"].ignores == 1 and result.counts["rep.t"].ddl == 0
    assert _unchanged(path)


def test_discard_writes_the_ddl_to_the_discard_file(tmp_path: Path):
    lake, path = _lake(tmp_path, "DDLERROR DEFAULT DISCARD")
    result = ApplyResult()
    assert lake.apply(_ddl(), RETYPED, result) is False
    assert result.counts["rep.t"].discards == 1
    entry = (tmp_path / "rep1.dsc").read_text()
    assert "22P02" in entry and RETYPE in entry and _unchanged(path)


def test_retries_before_the_response(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    lake, _ = _lake(tmp_path, "DDLERROR DEFAULT ABEND RETRYOP MAXRETRIES 2 RETRYDELAY 0")
    with caplog.at_level(logging.INFO, "trailgate.ddl"), pytest.raises(DdlError,
                                                                       match="MAXRETRIES 2"):
        lake.apply(_ddl(), RETYPED, ApplyResult())
    retries = [r.getMessage() for r in caplog.records if "for next retry" in r.getMessage()]
    assert len(retries) == 2 and "retry [2]" in retries[-1] and "[22P02]" in retries[0]


def test_a_rule_for_another_error_does_not_apply(tmp_path: Path):
    lake, _ = _lake(tmp_path, "DDLERROR 42P01 IGNORE")
    with pytest.raises(DdlError, match="DDLERROR DEFAULT ABEND"):
        lake.apply(_ddl(), RETYPED, ApplyResult())


def test_a_marker_the_trigger_could_not_describe_takes_default_rules_only(tmp_path: Path):
    lake, path = _lake(tmp_path, "DDLERROR 22P02 ABEND\nDDLERROR DEFAULT IGNORE")
    result = ApplyResult()
    marked = _ddl(E1="the DDL trigger failed: boom")
    assert lake.apply(marked, RETYPED, result) is False
    assert result.counts["rep.t"].ignores == 1 and _unchanged(path)
    lake, _ = _lake(tmp_path / "b", "")
    with pytest.raises(DdlError, match=r"boom.*add DDLERROR DEFAULT IGNORE"):
        lake.apply(marked, RETYPED, ApplyResult())


def test_lake_failures_map_to_sqlstates():
    from deltalake.exceptions import TableNotFoundError

    assert lake_sqlstate(TableNotFoundError("x")) == "42P01"
    assert lake_sqlstate(pa.ArrowNotImplementedError("x")) == "42846"
    assert lake_sqlstate(PermissionError("x")) == "42501"
    assert lake_sqlstate(OSError("x")) == "58030"


def test_a_replayed_discard_is_written_once(tmp_path: Path):
    """The DDL step of a batch replayed after a crash runs again: its discard entry is
    not repeated, while another DDL's is written."""
    lake, _ = _lake(tmp_path, "DDLERROR DEFAULT DISCARD")
    for _ in range(2):
        assert lake.apply(_ddl(), RETYPED, ApplyResult()) is False
    later = TrailChange(_ddl().change, 104, "1.2.4", TrailPosition(4, 2400))
    lake.apply(later, RETYPED, ApplyResult())
    text = (tmp_path / "rep1.dsc").read_text()
    assert text.count("Discarded DDL") == 2
    assert text.count("RBA 1971, CSN 103") == 1 and text.count("RBA 2400, CSN 104") == 1


def test_a_marker_that_cannot_be_read_follows_the_default_rules(tmp_path: Path):
    garbled = TrailChange(Change(OpType.DDL, "app.t", text="\x00not a marker"), 103,
                          "1.2.3", TrailPosition(4, 1971))
    lake, path = _lake(tmp_path, "DDLERROR DEFAULT IGNORE")
    result = ApplyResult()
    assert lake.apply(garbled, RETYPED, result) is False
    assert _unchanged(path)
    lake, _ = _lake(tmp_path / "b", "")
    with pytest.raises(DdlError, match=r"cannot be read.*The Replicat stops .DDLERROR DEFAULT "
                                       r"ABEND.*add DDLERROR DEFAULT IGNORE"):
        lake.apply(garbled, RETYPED, ApplyResult())


def test_the_ddl_discard_check_reads_only_what_was_appended(tmp_path: Path):
    """The replay check keeps what it read of the discard file and reads only what was
    appended since (other writers' entries included); a file emptied at start (PURGE) or
    replaced is read again from its start."""
    from trailgate.apply import discard as discard_module

    lake, _ = _lake(tmp_path, "DDLERROR DEFAULT DISCARD")
    path = tmp_path / "rep1.dsc"
    lake.apply(_ddl(), RETYPED, ApplyResult())
    other = TrailChange(_ddl().change, 105, "1.2.5", TrailPosition(4, 2600))
    # another writer's entry, then a line still being written
    DiscardWriter(path).write([discard_module.DdlDiscard(other, "ALTER …", "elsewhere", ())])
    with path.open("ab") as fh:
        fh.write(b"Operation: DDL, trail position seqno 4, RBA 2700")
    assert lake.apply(other, RETYPED, ApplyResult()) is False  # seen in the appended part
    assert path.read_text().count("RBA 2600, CSN 105") == 1
    whole = path.read_bytes().rfind(b"\n") + 1
    assert discard_module._ddl_seen[path][1] == whole  # read up to the last whole line
    with path.open("ab") as fh:
        fh.write(b", CSN 106, XID 1.2.6\n")
    replayed = TrailChange(_ddl().change, 106, "1.2.6", TrailPosition(4, 2700))
    assert lake.apply(replayed, RETYPED, ApplyResult()) is False  # the line, once whole
    path.write_bytes(b"")  # PURGE at the next start
    lake.apply(_ddl(), RETYPED, ApplyResult())
    assert path.read_text().count("RBA 1971, CSN 103") == 1


def test_a_discard_file_rewritten_in_place_is_read_again(tmp_path: Path):
    """A file emptied in place (PURGE) or replaced by one of the same inode and a size past
    what was read keeps no DDL line of the old one."""
    lake, _ = _lake(tmp_path, "DDLERROR DEFAULT DISCARD")
    path = tmp_path / "rep1.dsc"
    lake.apply(_ddl(), RETYPED, ApplyResult())
    lake.apply(_ddl(), RETYPED, ApplyResult())  # read and remembered: not written again
    assert path.read_text().count("RBA 1971, CSN 103") == 1
    with path.open("r+b") as fh:  # the same inode, other text, longer than before
        fh.truncate(0)
        fh.write(b"Current time: 2026-11-28 00:00:00\nsomething else\n*\n" * 40)
    assert lake.apply(_ddl(), RETYPED, ApplyResult()) is False
    assert path.read_text().count("RBA 1971, CSN 103") == 1  # written again, once
