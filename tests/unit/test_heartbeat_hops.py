"""A heartbeat row's hops: the Extract's rules stamp it, a pump's read stamps it, in trail
form, and nothing else is touched."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from trailgate.capture.postgres.types import classify, pg_text_from_trail
from trailgate.changes.change_rows import iter_change_rows
from trailgate.changes.heartbeat import is_heartbeat, seed_name, stamp_hop
from trailgate.changes.range_rows import read_change_rows
from trailgate.changes.routing import Router
from trailgate.extract.tables import TableRules
from trailgate.extract.tokens import GroupEnv
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.model import Change, Column, OpType, TableDef, TrailPosition, Transaction
from trailgate.params.model import TableSpec
from trailgate.pump.config import load_pump_config
from trailgate.trail import TrailWriter


def _table(name: str, cols: list[tuple[str, str]], key: list[str]) -> TableDef:
    schema, _, table = name.rpartition(".")
    columns = []
    for i, (cname, ctype) in enumerate(cols):
        t = classify(ctype)
        columns.append(Column(cname, i, t.kind, ctype, t.length, t.precision, t.scale))
    return TableDef(schema, table, columns, key)


SEED = _table("ggadmin.gg_heartbeat_seed", [
    ("remote_database", "text"), ("incoming_extract", "text"),
    ("heartbeat_timestamp", "timestamp with time zone"),
    ("incoming_extract_ts", "timestamp with time zone"), ("incoming_routing_path", "text"),
    ("incoming_routing_ts", "timestamp with time zone")],
    ["incoming_extract", "heartbeat_timestamp"])
OTHER = _table("public.t", [("id", "integer")], ["id"])
WHEN = datetime(2026, 11, 25, 10, 0, 0, 123456, UTC)


def _beat(**extra: bytes) -> Change:
    after = {0: b"src", 1: b"EXT1", 2: b"2026-11-25:09:59:59.900000000"}
    after.update({SEED.column(k).index: v for k, v in extra.items()})
    return Change(OpType.INSERT, SEED.qualified_name, after=after)


def test_names() -> None:
    assert seed_name("ggadmin") == "ggadmin.gg_heartbeat_seed"
    assert is_heartbeat("GGADMIN.GG_HEARTBEAT_SEED") and is_heartbeat('x."gg_heartbeat_seed"')
    assert not is_heartbeat("public.gg_heartbeat_seeds")


def test_hops_in_trail_form() -> None:
    change = _beat()
    assert stamp_hop(change, SEED, "EXTRACT", "EXT1", WHEN)
    value = change.after[3]  # type: ignore[index]
    assert value == b"2026-11-25:10:00:00.123456000"
    assert pg_text_from_trail(value, "timestamp with time zone").startswith(
        "2026-11-25 10:00:00.123456")
    assert stamp_hop(change, SEED, "PUMP", "PMP1", WHEN)
    assert stamp_hop(change, SEED, "PUMP", "PMP2", WHEN)
    assert change.after[4] == b"PMP1 ==> PMP2"  # type: ignore[index]
    assert change.after[5] == b"2026-11-25:10:00:00.123456000"  # type: ignore[index]
    delete = Change(OpType.DELETE, SEED.qualified_name, before={1: b"EXT1", 2: b"x"})
    assert not stamp_hop(delete, SEED, "EXTRACT", "EXT1", WHEN)


def test_the_extract_takes_heartbeats_whatever_its_tables_say() -> None:
    env = GroupEnv("EXT1", "", "host", "gg", 1)
    rules = TableRules([TableSpec("public.*")], [], env, heartbeat=seed_name("ggadmin"))
    assert rules.rule(SEED.qualified_name) is not None
    out = rules.apply(_beat(), SEED, 100, "1.2.3", 0, 0, 1)
    assert out is not None and out.after[3].endswith(b"000")  # type: ignore[index]
    delete = Change(OpType.DELETE, SEED.qualified_name, before={1: b"EXT1", 2: b"x"})
    assert rules.apply(delete, SEED, 100, "1.2.3", 0, 0, 1) is None  # clean-up stays home
    plain = TableRules([TableSpec("public.*")], [], env)
    assert plain.rule(SEED.qualified_name) is None


def test_a_pump_stamps_its_hop_and_nothing_else(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="T")
    writer.write_transaction(Transaction("1.1.1", 100, [
        Change(OpType.INSERT, "public.t", after={0: b"7"}),
        _beat(incoming_extract_ts=b"2026-11-25:09:59:59.950000000")]),
        {SEED.qualified_name: SEED, "public.t": OTHER})
    writer.close()
    router = Router.of([("public.*", None), (seed_name("ggadmin"), None)], [], hop="PMP1")
    changes = [row.change for batch in read_change_rows(str(trail), TrailPosition(0, 0), None,
                                                        router=router)
               for row in iter_change_rows(batch) if row.change is not None]
    plain, beat = changes
    assert plain is not None and beat is not None
    assert plain.after == {0: b"7"}
    assert beat.after[4] == b"PMP1" and beat.after[5].startswith(b"20")  # type: ignore[index]
    assert beat.after[3] == b"2026-11-25:09:59:59.950000000"  # type: ignore[index]


@pytest.mark.parametrize("globals_text", ["GGSCHEMA ggadmin\n", None])
def test_the_pumps_own_config_routes_and_stamps_heartbeats(tmp_path: Path,
                                                           globals_text: str | None) -> None:
    """The pump as it starts: its registry entry and parameter file (TABLE names one other
    table, renamed), GLOBALS' GGSCHEMA or none; the router it reads through keeps the
    heartbeat, unrenamed, stamps its hop, and still drops the tables TABLE does not name."""
    home = Home(tmp_path / "gg").create()
    home.add_group(GroupInfo("PMP1", "EXTRACT", "EXTTRAILSOURCE", "./dirdat/aa",
                             trails=[TrailInfo("./dirdat/bb", "RMTTRAIL")]))
    home.param_file("PMP1").write_text("EXTRACT pmp1\nRMTTRAIL ./dirdat/bb\n"
                                       "TABLE public.t, TARGET dr.t;\n")
    if globals_text is not None:
        home.globals_file.write_text(globals_text)
    cfg = load_pump_config(home, "PMP1")
    trail = home.dirdat / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False, producer="T")
    other = _table("public.u", [("id", "integer")], ["id"])
    writer.write_transaction(Transaction("1.1.1", 100, [
        Change(OpType.INSERT, "public.t", after={0: b"7"}),
        Change(OpType.INSERT, "public.u", after={0: b"8"}),
        _beat(incoming_extract_ts=b"2026-11-25:09:59:59.950000000")]),
        {SEED.qualified_name: SEED, "public.t": OTHER, "public.u": other})
    writer.close()
    changes = [row.change for batch in read_change_rows(str(trail), TrailPosition(0, 0), None,
                                                        router=cfg.router())
               for row in iter_change_rows(batch) if row.change is not None]
    assert [c.table for c in changes] == ["dr.t", SEED.qualified_name]
    beat = changes[1]
    assert beat.after is not None and beat.after[4] == b"PMP1"
    assert beat.after[5].startswith(b"20") and beat.after[5] != beat.after[3]
    assert beat.after[3] == b"2026-11-25:09:59:59.950000000"  # the Extract's stamp kept
