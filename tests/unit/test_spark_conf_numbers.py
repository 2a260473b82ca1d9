"""SPARK CONF whole numbers: one reading for every group kind, ASCII digits only."""

from __future__ import annotations

import pytest

from trailgate.errors import ConfigError
from trailgate.load.route import choose_route
from trailgate.params.model import SparkOptions


@pytest.mark.parametrize("text", ["+5", "1_000", "٣", "５", "-1", "", "2.0", "0x10"])
def test_only_ascii_digits_are_a_number(text: str) -> None:
    with pytest.raises(ConfigError, match="expected a positive whole number") as err:
        SparkOptions(conf={"k": text}).whole("k", path="dirprm/r.prm")
    assert "dirprm/r.prm" in str(err.value)


def test_bounds_and_spaces() -> None:
    spark = SparkOptions(conf={"a": " 7 ", "z": "0"})
    assert spark.whole("a") == 7
    assert spark.whole("unset") is None
    assert spark.whole("z", minimum=0) == 0
    with pytest.raises(ConfigError, match="positive"):
        spark.whole("z")


def test_the_load_route_reads_the_same_way() -> None:
    with pytest.raises(ConfigError, match="driverThreads=٢"):
        choose_route("POSTGRES", "local[2]", 3, {"trailgate.load.driverThreads": "٢"},
                     pump=True)
    route = choose_route("POSTGRES", "local[2]", 3, {"trailgate.load.driverThreads": "0"},
                         pump=True)
    assert route.threads == 0
