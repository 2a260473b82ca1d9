"""GoldenGate wildcard rules: match_table, find_map and resolve_map."""

from __future__ import annotations

import pytest

from trailgate.params import (
    MapSpec,
    ReplicatParams,
    find_map,
    match_table,
    parse_name,
    parse_params_text,
    resolve_map,
    split_name,
)
from trailgate.params.names import NamePart


@pytest.mark.parametrize("pattern, table, expected", [
    ("hr.emp", "hr.emp", True),
    ("hr.emp", "HR.EMP", True),
    ("HR.EMP", "hr.emp", True),
    ("hr.emp", "hr.emp2", False),
    ("hr.*", "hr.anything", True),
    ("hr.*", "sales.anything", False),
    ("*.*", "any.thing", True),
    ("hr.emp*", "hr.emp", True),
    ("hr.emp*", "hr.employees", True),
    ("hr.emp*", "hr.xemp", False),
    ("hr.*_hist", "hr.orders_hist", True),
    ("hr.*_hist", "hr.orders_hist2", False),
    ("hr.t?", "hr.t1", True),
    ("hr.t?", "hr.t12", False),
    ("hr.t?", "hr.t", False),
    ("h?.*", "hr.x", True),
    ('"HR"."Emp"', "HR.Emp", True),
    ('"HR"."Emp"', "HR.EMP", False),
    ('"HR"."Emp"', "hr.Emp", False),
    ('hr."Emp*"', "HR.Employees", True),
    ('hr."Emp*"', "HR.employees", False),
    ("hr.emp", 'HR."EMP"', True),
    ("hr.a.b", "hr.a.b", True),
    ("a.b", "cat.a.b", True),  # schema.table matches within any catalog
    ("cat.a.b", "a.b", False),
    ("hr.emp", "hr.emp.x", False),
    ("hr.e.mp", "hr.emp", False),
    ("hr.emp+", "hr.emp+", True),  # regex characters are literal
    ("hr.emp+", "hr.empp", False),
])
def test_match_table(pattern: str, table: str, expected: bool) -> None:
    assert match_table(pattern, table) is expected


def test_parse_name_parts_and_quotes() -> None:
    assert parse_name('a."B.c"') == (NamePart("a"), NamePart("B.c", quoted=True))
    assert parse_name('"x""y".t') == (NamePart('x"y', quoted=True), NamePart("t"))
    assert split_name('sales."Orders"') == ("sales", "Orders")
    assert str(NamePart('x"y', quoted=True)) == '"x""y"'
    for bad in ('a."b', "a..b", ".a", "a."):
        with pytest.raises(ValueError):
            parse_name(bad)


def _maps(text: str) -> ReplicatParams:
    p = parse_params_text("REPLICAT r\nTARGETDELTA /x\n" + text, "r.prm")
    assert isinstance(p, ReplicatParams)
    return p


def test_resolve_wildcard_map() -> None:
    p = _maps("MAP public.*, TARGET replica.*;\n")
    assert resolve_map(p.maps, "public.orders") == "replica.orders"
    assert resolve_map(p.maps, "public.Orders") == "replica.Orders"
    assert resolve_map(p.maps, "PUBLIC.orders") == "replica.orders"
    assert resolve_map(p.maps, "other.orders") is None


def test_resolve_prefers_exact_map_over_wildcards() -> None:
    p = _maps("MAP hr.*, TARGET rpt.*;\nMAP hr.emp, TARGET rpt.employees;\n"
              "MAP hr.e*, TARGET never.*;\n")
    assert resolve_map(p.maps, "hr.emp") == "rpt.employees"
    assert resolve_map(p.maps, "hr.dept") == "rpt.dept"
    assert resolve_map(p.maps, "hr.emp2") == "rpt.emp2"  # first wildcard in file order
    spec = find_map(p.maps, "hr.emp")
    assert spec is not None and spec.line == 4


def test_target_wildcard_with_prefix_and_quotes() -> None:
    p = _maps('MAP "Src".*, TARGET "Dst".*;\nMAP src.*, TARGET dst.h_*;\n')
    assert resolve_map(p.maps, "src.orders") == "dst.h_orders"
    assert resolve_map(p.maps, "Src.Orders") == '"Dst".Orders'
    assert split_name(resolve_map(p.maps, "Src.Orders") or "") == ("Dst", "Orders")


def test_schema_wildcard_in_target() -> None:
    p = _maps("MAP *.*, TARGET *.*;\n")
    assert resolve_map(p.maps, "a.b") == "a.b"
    assert resolve_map(p.maps, "cat.a.b") == "a.b"


def test_mapexclude_wins() -> None:
    p = _maps("MAPEXCLUDE hr.audit_*\nMAP hr.*, TARGET rpt.*;\n")
    assert resolve_map(p.maps, "hr.audit_log", p.map_excludes) is None
    assert resolve_map(p.maps, "hr.emp", p.map_excludes) == "rpt.emp"
    assert find_map(p.maps, "hr.audit_log", p.map_excludes) is None


def test_target_with_more_parts_than_source_is_an_error() -> None:
    maps = [MapSpec("a.b", "x.y.z")]
    with pytest.raises(ValueError):
        resolve_map(maps, "a.b")
