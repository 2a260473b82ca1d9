"""Which paths the trail sources and the lake targets take: local paths and file: URIs for
trails (other schemes refused when the query is planned, saying what to do), object-store
URIs for Delta targets only."""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.replicat.config import is_uri, lake_location
from trailgate.spark.trail_options import parse_options
from trailgate.spark.trail_paths import local_trail_path


def test_local_paths_and_file_uris() -> None:
    assert local_trail_path("dirdat/aa") == "dirdat/aa"
    assert local_trail_path("/gg/dirdat/aa") == "/gg/dirdat/aa"
    assert local_trail_path("file:///gg/dir%20dat/aa") == "/gg/dir dat/aa"
    assert local_trail_path("file:/gg/dirdat/aa") == "/gg/dirdat/aa"
    assert local_trail_path("file://localhost/gg/dirdat/aa") == "/gg/dirdat/aa"


@pytest.mark.parametrize("uri", ["s3a://bucket/dirdat/aa", "hdfs://nn:8020/gg/dirdat/aa",
                                 "abfss://c@acct.dfs.core.windows.net/aa", "gs://b/aa"])
def test_other_schemes_are_refused_with_what_to_do(uri: str) -> None:
    scheme = uri.split(":")[0]
    with pytest.raises(ValueError, match=rf"trail path {uri}: the trail sources do not read "
                                         rf"{scheme}: URIs.*every node mounts"):
        parse_options({"path": uri})
    with pytest.raises(ValueError, match="names no host"):
        local_trail_path("file://otherhost/gg/dirdat/aa")


def test_a_file_uri_reads_the_trail(tmp_path: Path) -> None:
    (tmp_path / "aa000000000").write_bytes(b"")
    opts = parse_options({"path": f"file://{tmp_path}/aa"})
    assert opts.trail == str(tmp_path / "aa")


def test_lake_locations(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert lake_location(home, "DELTA", "./lake", None) == str(tmp_path / "lake")
    assert lake_location(home, "DELTA", f"file://{tmp_path}/l", None) == f"{tmp_path}/l"
    assert lake_location(home, "DELTA", "s3://bucket/lake", None) == "s3://bucket/lake"
    assert is_uri("s3://bucket/lake") and not is_uri("file:///x") and not is_uri("/x")
    with pytest.raises(ConfigError, match="TARGETPARQUET s3://b/logs: Parquet change logs"):
        lake_location(home, "PARQUET", "s3://b/logs", "rep1.prm")
