"""The Replicat runs a DDL with the source session's settings (DateStyle, search_path, …)
set for it alone, and the target session's own settings are back afterwards."""

from __future__ import annotations

import psycopg
import pytest

from trailgate.apply.pg_ddl import PgDdl
from trailgate.apply.records import ApplyResult, TrailChange
from trailgate.model import Change, OpType, TrailPosition
from trailgate.params.model import ReplicatParams
from trailgate.params.parser import parse_params_text
from trailgate.trail.ddl import encode_marker

pytestmark = pytest.mark.postgres


def test_ddl_runs_with_the_source_settings_and_restores_the_session(pg_db: str) -> None:
    params = parse_params_text("REPLICAT r\nTARGETDB tgt\nDDL INCLUDE MAPPED\n"
                               "MAP app.*, TARGET app.*;\n")
    assert isinstance(params, ReplicatParams)
    # unqualified, so search_path must be the source's; '03/04/2020' is 3 April under DMY
    statement = "ALTER TABLE t ADD COLUMN d date DEFAULT '03/04/2020'"
    env = [("C5", "7"), ("B3", "app"), ("B4", "t"), ("B5", "TABLE"), ("B6", "ALTER")]
    text = encode_marker(statement, env, settings={"search_path": "app",
                                                   "DateStyle": "SQL, DMY",
                                                   "TimeZone": "Asia/Kolkata"})
    tc = TrailChange(Change(OpType.DDL, "app.t", text=text), 1, "1", TrailPosition(0, 100))
    with psycopg.connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY)")
        conn.execute("SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'")
        with conn.transaction(), conn.cursor() as cur:
            assert PgDdl(conn, params).apply(cur, tc, ApplyResult(), [])
            settings = cur.execute("SELECT current_setting('DateStyle'), "
                                   "current_setting('TimeZone'), "
                                   "current_setting('search_path')").fetchone()
        assert settings == ("ISO, MDY", "UTC", '"$user", public')
        default = conn.execute("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef "
                               "WHERE adrelid = 'app.t'::regclass").fetchone()
        assert default is not None and "2020-04-03" in default[0]
