"""The home directory: location rules, layout, event log and group registry."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from trailgate.checkpoint import Checkpoint
from trailgate.errors import ConfigError
from trailgate.home import SUBDIRS, GroupInfo, Home, TrailInfo, validate_group_name


def test_locate_prefers_option_then_env_then_cwd(tmp_path: Path) -> None:
    env = {"TRAILGATE_HOME": str(tmp_path / "env")}
    assert Home.locate(str(tmp_path / "opt"), environ=env).path == tmp_path / "opt"
    assert Home.locate(None, environ=env).path == tmp_path / "env"
    assert Home.locate(None, environ={}, cwd=tmp_path / "cwd").path == tmp_path / "cwd"
    assert Home.locate(None, environ={}).path == Path(os.getcwd())


def test_create_makes_every_directory(tmp_path: Path) -> None:
    home = Home(tmp_path / "gg")
    assert not home.exists()
    assert home.create() is home
    assert home.exists()
    for sub in SUBDIRS:
        assert (tmp_path / "gg" / sub).is_dir()
    home.create()  # idempotent


def test_file_locations(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.param_file("Ext1") == tmp_path / "dirprm" / "ext1.prm"
    assert home.report_file("ext1") == tmp_path / "dirrpt" / "EXT1.rpt"
    assert home.discard_file("rep1") == tmp_path / "dirdsc" / "REP1.dsc"
    assert home.spark_checkpoint_dir("rep1") == tmp_path / "dirchk" / "REP1"
    assert home.globals_file == tmp_path / "dirprm" / "GLOBALS"
    assert home.ggserr_log == tmp_path / "ggserr.log"
    assert home.resolve("./dirdat/aa") == tmp_path / "dirdat" / "aa"
    assert home.resolve("/abs/x") == Path("/abs/x")
    assert home.checkpoints.path("ext1", "EXTRACT") == tmp_path / "dirchk" / "EXT1.cpe"


@pytest.mark.parametrize("name", ["EXT1", "e", "rep_hr", "ABCDEFGH", "12345678"])
def test_valid_group_names_upper_case(name: str) -> None:
    assert validate_group_name(name) == name.upper()


@pytest.mark.parametrize("name", ["", "ABCDEFGHI", "ext-1", "ext 1", "e.x", "../x", "é"])
def test_invalid_group_names_explain_the_rule(name: str) -> None:
    with pytest.raises(ConfigError, match="1 to 8 letters, digits or underscores"):
        validate_group_name(name)
    with pytest.raises(ConfigError):
        Home("/tmp").param_file(name)


def test_log_event_format_and_append(tmp_path: Path) -> None:
    home = Home(tmp_path)
    when = datetime(2026, 11, 21, 10, 0, 0)
    line = home.log_event("info", "OGG-00975", "EXTRACT EXT1 starting.", when=when)
    assert line == "2026-11-21 10:00:00  INFO    OGG-00975  trailgate EXTRACT EXT1 starting."
    home.log_event("WARNING", "OGG-01234", "multi\nline   message")
    home.log_event("ERROR", "OGG-00664", "boom")
    lines = home.ggserr_log.read_text().splitlines()
    assert lines[0] == line
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  WARNING OGG-01234  trailgate "
                        r"multi line message", lines[1])
    assert lines[2].endswith("  ERROR   OGG-00664  trailgate boom")
    assert len(lines) == 3


def test_log_event_rejects_unknown_level(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Home(tmp_path).log_event("DEBUG", "X", "y")


def _extract(name: str = "ext1") -> GroupInfo:
    return GroupInfo(name=name, kind="extract", source="TRANLOG", begin="NOW")


def test_registry_add_list_get(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    assert home.groups() == []
    home.add_group(_extract())
    home.add_group(GroupInfo(name="rep1", kind="REPLICAT", source="EXTTRAIL",
                             source_path="./dirdat/rt", checkpoint_table="gg.chk"))
    assert [g.name for g in home.groups()] == ["EXT1", "REP1"]
    ext = home.group("Ext1")
    assert ext is not None and ext.kind == "EXTRACT" and ext.begin == "NOW"
    assert home.group("nope") is None
    rep = home.require_group("rep1", "REPLICAT")
    assert rep.checkpoint_table == "gg.chk"
    data = json.loads(home.registry_file.read_text())
    assert set(data["groups"]) == {"EXT1", "REP1"}


def test_registry_rejects_duplicates_across_types(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    home.add_group(_extract("g1"))
    with pytest.raises(ConfigError, match="EXTRACT G1 already exists"):
        home.add_group(GroupInfo(name="G1", kind="REPLICAT", source="EXTTRAIL"))


def test_require_group_explains_how_to_create(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    with pytest.raises(ConfigError, match="ADD REPLICAT REP9"):
        home.require_group("rep9", "REPLICAT")
    home.add_group(_extract("x1"))
    with pytest.raises(ConfigError, match="REPLICAT X1 does not exist"):
        home.require_group("x1", "REPLICAT")


def test_trails_attach_to_one_extract(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    home.add_group(_extract("ext1"))
    home.add_group(_extract("ext2"))
    home.add_trail("ext1", TrailInfo("./dirdat/aa", "EXTTRAIL", 100))
    home.add_trail("ext1", TrailInfo("./dirdat/aa", "EXTTRAIL", 200))  # re-add replaces
    assert home.require_group("ext1").trails == [TrailInfo("./dirdat/aa", "EXTTRAIL", 200)]
    with pytest.raises(ConfigError, match="already written by EXTRACT EXT1"):
        home.add_trail("ext2", TrailInfo("./dirdat/aa"))
    with pytest.raises(ConfigError, match="ADD EXTRACT NOPE first"):
        home.add_trail("nope", TrailInfo("./dirdat/bb"))
    assert home.delete_trail("./dirdat/aa").name == "EXT1"
    assert home.require_group("ext1").trails == []
    with pytest.raises(ConfigError, match="no group writes trail"):
        home.delete_trail("./dirdat/aa")


def test_delete_group_removes_checkpoint(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    home.add_group(_extract())
    home.checkpoints.save(Checkpoint("EXT1", "EXTRACT", read_position={"lsn": 5}))
    assert home.checkpoints.load("EXT1", "EXTRACT") is not None
    removed = home.delete_group("ext1")
    assert removed.name == "EXT1"
    assert home.group("ext1") is None
    assert home.checkpoints.load("EXT1", "EXTRACT") is None
    with pytest.raises(ConfigError, match="does not exist"):
        home.delete_group("ext1")


def test_update_group(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    info = home.add_group(_extract())
    info.begin = "2026-11-21T10:00:00"
    home.update_group(info)
    assert home.require_group("EXT1").begin == "2026-11-21T10:00:00"
    with pytest.raises(ConfigError):
        home.update_group(_extract("other"))


def test_corrupt_registry_is_reported(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    home.registry_file.write_text("{not json")
    with pytest.raises(ConfigError) as info:
        home.groups()
    assert str(home.registry_file) in str(info.value)
    assert "corrupt" in str(info.value)


def test_failed_registry_change_is_not_written(tmp_path: Path) -> None:
    home = Home(tmp_path).create()
    home.add_group(_extract())
    before = home.registry_file.read_bytes()
    with pytest.raises(ConfigError):
        home.add_group(_extract())
    assert home.registry_file.read_bytes() == before


@pytest.mark.parametrize("field, value, said", [
    ("begin", [1], "'begin' cannot be an array"),
    ("created", 5, "'created' cannot be a number"),
    ("colour", "red", "has no field 'colour'"),
    ("trails", [{"path": 7}], "trail: 'path' cannot be a number"),
    ("trails", [{"path": "./dirdat/aa", "speed": 1}], "trail has no field 'speed'"),
    ("trails", "aa", "'trails' cannot be a string"),
])
def test_a_registry_field_of_the_wrong_type_is_named(tmp_path: Path, field: str, value: object,
                                                     said: str) -> None:
    home = Home(tmp_path).create()
    home.add_group(_extract())
    data = json.loads(home.registry_file.read_text())
    data["groups"]["EXT1"][field] = value
    home.registry_file.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="corrupt") as info:
        home.groups()
    assert said in str(info.value)
