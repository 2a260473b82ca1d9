"""DDL capture on a real PostgreSQL: ADD DDLSUPPORT's trigger writes markers, the Extract
turns them into DDL records (IOType 160) followed by the new definition (IOType 170), in
commit order with the DML around them, as the DDL rules say."""

from __future__ import annotations

import psycopg
import pytest
from extract_support import make_home
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.capture.postgres.ddl_setup import (
    add_ddlsupport,
    delete_ddlsupport,
    info_ddlsupport,
    installed,
    upgrade_needed,
)
from trailgate.capture.postgres.trandata import add_schematrandata
from trailgate.db.connect import connect
from trailgate.extract.postgres.config import load_extract_config
from trailgate.extract.postgres.group import RunOptions, run_extract_group
from trailgate.extract.postgres.startup import check_source
from trailgate.model import OpType
from trailgate.trail import TrailReader
from trailgate.trail.ddl import parse_marker

pytestmark = [pytest.mark.postgres]


def _markers(conn: psycopg.Connection) -> list[tuple[int, str, str]]:
    rows = conn.execute("SELECT seqno, subtype, string_agg(marker_text, '' ORDER BY "
                        "fragmentno) FROM ggadmin.ggs_marker GROUP BY 1, 2 ORDER BY 1"
                        ).fetchall()
    return [(int(s), str(t), str(x)) for s, t, x in rows]


def test_trigger_writes_markers_and_never_fails_ddl(pg_db):
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY)")
        lines = add_ddlsupport(conn, "GGADMIN")
        assert lines[0] == "MARKER TABLE ggadmin.ggs_marker ... OK"
        assert installed(conn, "ggadmin")
        # several statements in one query string: each marker gets its own statement
        first = ("/* a; */ ALTER TABLE app.t ADD v text DEFAULT 'x;y', "
                 r"""ADD "q;""x" text DEFAULT E'\';'""")
        conn.execute(first + "; "
                     "CREATE INDEX ON app.t (v); CREATE TABLE app.u (k int, d text "
                     "DEFAULT $q$;$q$)")
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            conn.execute("ALTER TABLE app.t ADD gone int")
            conn.execute("SELECT 1/0")
        conn.execute("DO $$ BEGIN EXECUTE 'ALTER TABLE app.u ADD w int'; END $$")
        conn.execute("SET search_path = app")
        conn.execute("ALTER TABLE u RENAME TO u2")
        conn.execute("DROP INDEX app.t_v_idx")
        markers = _markers(conn)
        got = [(parse_marker(text).statement, sub) for _, sub, text in markers]
        assert got == [
            (first, "DDLINFO"),
            ("CREATE INDEX ON app.t (v)", "DDLINFO"),
            ("CREATE TABLE app.u (k int, d text DEFAULT $q$;$q$)", "DDLINFO"),
            ("DO $$ BEGIN EXECUTE 'ALTER TABLE app.u ADD w int'; END $$", "DDLERROR"),
            ("ALTER TABLE u RENAME TO u2", "DDLINFO"),
            ("DROP INDEX app.t_v_idx", "DDLINFO"),
        ]  # the rolled-back ALTER left nothing
        index = parse_marker(markers[1][2])
        assert (index.object_type, index.ddl_type, index.master_qualified_name) == (
            "INDEX", "CREATE", "app.t")
        assert parse_marker(markers[5][2]).master_qualified_name == "app.t"  # from history
        renamed = parse_marker(markers[4][2])
        assert renamed.qualified_name == "app.u2" and renamed.settings()["search_path"] == "app"
        assert "cannot be isolated" in parse_marker(markers[3][2]).error
        # a trailgate failure never fails the user's DDL: the marker table is gone, the
        # DDL still runs (a WARNING says it is not captured)
        conn.execute("SET trailgate.internal_ddl = on")
        conn.execute("ALTER TABLE ggadmin.ggs_marker RENAME TO broken")
        conn.execute("SET trailgate.internal_ddl = off")
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute("ALTER TABLE app.t ADD still int")
        assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = "
                            "'app.t'::regclass AND attname = 'still'").fetchone()[0] == 1
        assert any("not captured" in n for n in notices)
        conn.execute("SET trailgate.internal_ddl = on")
        conn.execute("ALTER TABLE ggadmin.broken RENAME TO ggs_marker")
        conn.execute("SET trailgate.internal_ddl = off")
        info = info_ddlsupport(conn, "ggadmin")
        assert "DDL TRIGGER ggs_ddl_trigger_end ON ddl_command_end ... ENABLED" in info
        delete_ddlsupport(conn, "ggadmin")
        assert not installed(conn, "ggadmin")
        conn.execute("ALTER TABLE app.t ADD after_delete int")  # no trigger, no error
        assert conn.execute("SELECT to_regclass('ggadmin.ggs_marker')").fetchone()[0] is None



def test_trigger_failure_becomes_a_ddlerror_marker_and_internal_ddl_is_superuser_only(pg_db):
    """An error inside the trigger (here: the history table refuses every row) does not fail
    the user's DDL: its marker is written with SUBTYPE DDLERROR and E1 saying what failed.
    ``trailgate.internal_ddl`` set by a role that is not a superuser leaves DDL captured."""
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY)")
        add_ddlsupport(conn, "ggadmin")
        conn.execute("SET trailgate.internal_ddl = on")  # a superuser: not marked
        conn.execute("ALTER TABLE ggadmin.ggs_ddl_hist ADD CONSTRAINT refuse CHECK (false) "
                     "NOT VALID")
        conn.execute("RESET trailgate.internal_ddl")
        assert _markers(conn) == []
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute("ALTER TABLE app.t ADD c int")
        assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = "
                            "'app.t'::regclass AND attname = 'c'").fetchone()[0] == 1
        [(seq, subtype, text)] = _markers(conn)
        marker = parse_marker(text)
        assert subtype == "DDLERROR" and marker.statement == "ALTER TABLE app.t ADD c int"
        assert marker.get("C5") == str(seq) and marker.qualified_name == "app.t"
        assert marker.error.startswith("the DDL trigger failed: ") and "refuse" in marker.error
        assert any(f"DDL sequence {seq} is marked DDLERROR" in n for n in notices), notices
        conn.execute("SET trailgate.internal_ddl = on")
        conn.execute("ALTER TABLE ggadmin.ggs_ddl_hist DROP CONSTRAINT refuse")
        # a role that is not a superuser cannot hide its DDL with the setting
        conn.execute("CREATE ROLE app_owner NOLOGIN; GRANT ALL ON SCHEMA app TO app_owner")
        conn.execute("RESET trailgate.internal_ddl")
        conn.execute("SET ROLE app_owner")
        conn.execute("SET trailgate.internal_ddl = on")
        conn.execute("CREATE TABLE app.hidden (id int)")
        conn.execute("RESET ROLE")
        last = parse_marker(_markers(conn)[-1][2])
        assert last.statement == "CREATE TABLE app.hidden (id int)" and not last.error


def test_capture_function_is_not_executable_by_ordinary_users(pg_cluster, pg_db, tmp_path):
    """``ggs_ddl_capture`` (SECURITY DEFINER: it writes the marker rows the Replicat runs) is
    executable by no ordinary user, so none can forge a DDL into the trail; their real DDL
    is still captured with their session's settings, a new table under SCHEMATRANDATA gives
    only its CREATE, and an install by an earlier trailgate (capture granted to PUBLIC, no
    guards) is reported and mended by running ADD DDLSUPPORT again."""
    dbname = str(psycopg.conninfo.conninfo_to_dict(pg_db)["dbname"])
    role = f"plain_{dbname}"[:60]  # roles are the cluster's: one of its own
    capture = "ggadmin.ggs_ddl_capture(text, text, text, text[])"
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY)")
        add_ddlsupport(conn, "ggadmin")
        assert upgrade_needed(conn, "ggadmin") is None
        # what an earlier install left: the function granted to PUBLIC, no guard triggers
        conn.execute("SET trailgate.internal_ddl = on")
        conn.execute(f"GRANT EXECUTE ON FUNCTION {capture} TO PUBLIC")
        conn.execute("DROP EVENT TRIGGER ggs_ddl_guard_end")
        conn.execute("RESET trailgate.internal_ddl")
        problem = upgrade_needed(conn, "ggadmin")
        assert problem and "executable by PUBLIC" in problem and "guard" in problem
        assert "ADD DDLSUPPORT again" in problem
        assert any("executable by PUBLIC" in line for line in info_ddlsupport(conn, "ggadmin"))
        home = make_home(tmp_path / "home", pg_db, "EXTU", "TABLE app.*;",
                         extra="DDL INCLUDE MAPPED\n")
        home.globals_file.write_text("GGSCHEMA ggadmin\n")
        started = check_source(load_extract_config(home, "EXTU"), None)  # the Extract's start
        assert any("executable by PUBLIC" in w and "ADD DDLSUPPORT again" in w
                   for w in started.warnings), started.warnings
        add_ddlsupport(conn, "ggadmin")  # the re-run mends it
        assert upgrade_needed(conn, "ggadmin") is None
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA app TO {role}")
        conn.execute(f"GRANT USAGE ON SCHEMA ggadmin TO {role}")  # even so: no EXECUTE
        add_schematrandata(conn, "app")
        before = len(_markers(conn))
    with connect(pg_cluster.conninfo(dbname, user=role, password="pw")) as user:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), user.transaction():
            user.execute(f"SELECT {capture.split('(')[0]}('ddl_command_end', 'ALTER TABLE', "
                         "'DROP TABLE app.t', ARRAY[]::text[])")
        user.execute("SET search_path = app, public")
        user.execute("SET trailgate.internal_ddl = on")  # not a superuser: no effect
        user.execute("CREATE TABLE mine (id int PRIMARY KEY)")
        user.execute("ALTER TABLE mine ADD c int")
        user.execute("DROP TABLE mine")
        # an operator of the user's own, first in the search_path, cannot answer the
        # guard's test either
        user.execute("CREATE FUNCTION app.never(text, text) RETURNS boolean "
                     "LANGUAGE sql AS 'SELECT false'")
        user.execute("CREATE OPERATOR app.= (LEFTARG = text, RIGHTARG = text, "
                     "FUNCTION = app.never)")
        user.execute("SET search_path = app, pg_catalog")
        user.execute("SET trailgate.internal_ddl = on")
        user.execute("CREATE TABLE sneaky (id int)")
    with connect(pg_db) as conn:
        got = [parse_marker(text) for _, _, text in _markers(conn)[before:]]
        assert [(m.statement, m.get("B9"), m.error) for m in got
                if m.object_type == "TABLE"] == [
            ("CREATE TABLE mine (id int PRIMARY KEY)", role, ""),
            ("ALTER TABLE mine ADD c int", role, ""),
            ("DROP TABLE mine", role, ""),
            ("CREATE TABLE sneaky (id int)", role, ""),
        ]
        assert all(m.qualified_name == "app.mine" for m in got[:3])
        assert got[0].settings()["search_path"] == "app, public"
        conn.execute(f"DROP OWNED BY {role}; DROP ROLE {role}")


@pytest.mark.spark
def test_extract_writes_ddl_records_in_commit_order(spark, pg_db, tmp_path):
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app; CREATE SCHEMA other; "
                     "CREATE TABLE app.base (id int PRIMARY KEY, v text)")
        add_ddlsupport(conn, "ggadmin")
        add_schematrandata(conn, "app")
    home = make_home(tmp_path / "home", pg_db, "EXTD", "TABLE app.*;",
                     extra="DDL INCLUDE MAPPED\nDDLOPTIONS REPORT\nGETTRUNCATES\n")
    home.globals_file.write_text("GGSCHEMA ggadmin\n")
    with connect(pg_db) as conn:
        conn.execute("INSERT INTO app.base VALUES (1, 'a'), (2, 'b')")
        with conn.transaction():  # DML, DDL, DML using it: one transaction
            conn.execute("INSERT INTO app.base VALUES (3, 'c')")
            conn.execute("ALTER TABLE app.base ADD n int DEFAULT 7")
            conn.execute("INSERT INTO app.base VALUES (4, 'd', 8)")
        conn.execute("CREATE TABLE app.copy AS SELECT * FROM app.base")  # rows come after
        conn.execute("CREATE TABLE other.skip (x int)")  # UNMAPPED: not captured
        conn.execute("TRUNCATE app.copy")
        conn.execute("DROP TABLE app.copy")
        # a marker row written by hand, not a marker text: a DDL record saying so
        conn.execute("INSERT INTO ggadmin.ggs_marker VALUES (nextval('ggadmin.ggs_marker_seq'),"
                     " 1, '2026-01-01 00:00:00', 'DDL', 'DDLINFO', 'ALTER TABLE app.base oops')")
    assert run_extract_group(home, "EXTD", RunOptions(once=True), spark=spark) == 0

    records = list(TrailReader(home.dirdat / "aa").records())
    seen = []
    for rec in records:
        io = rec.raw.io_type
        if io == OpType.METADATA:
            seen.append(("META", rec.table_def.qualified_name, len(rec.table_def.columns)))
        elif io == OpType.DDL:
            m = parse_marker(rec.change.text)
            seen.append(("DDL", rec.raw.table, m.statement))
        else:
            seen.append((OpType(io).name, rec.raw.table, None))
    assert not any(t and "ggs_" in t for _, t, _ in seen), "marker rows are never DML"
    assert seen == [
        ("META", "app.base", 2), ("INSERT", "app.base", None), ("INSERT", "app.base", None),
        ("INSERT", "app.base", None),
        ("DDL", "app.base", "ALTER TABLE app.base ADD n int DEFAULT 7"),
        ("META", "app.base", 3),
        ("INSERT", "app.base", None),
        ("DDL", "app.copy", "CREATE TABLE app.copy AS SELECT * FROM app.base"),
        ("META", "app.copy", 3),
        *[("INSERT", "app.copy", None)] * 4,
        ("TRUNCATE", "app.copy", None),
        ("DDL", "app.copy", "DROP TABLE app.copy"),
        ("DDL", "", "ALTER TABLE app.base oops"),
    ]
    bad = parse_marker(records[-1].change.text)
    assert bad.get("C5") == "5" and "marker text cannot be read" in bad.error
    after = next(r for r in records if r.raw.table == "app.base" and r.change is not None
                 and r.change.after and r.change.after.get(0) == b"4")
    assert after.change.after == {0: b"4", 1: b"d", 2: b"8"}
    report = home.report_file("EXTD").read_text()
    assert "DDL found, operation [ALTER TABLE app.base ADD n int DEFAULT 7" in report
    assert "DDL operation excluded [INCLUDE MAPPED" not in report
    assert 'DDL operation excluded [no INCLUDE clause takes it], optype [CREATE], ' \
           'objtype [TABLE], objowner "other", objname "skip"' in report
    assert "DDL operation written to extract trail file." in report
    assert "WARNING" in report and "DDL sequence 5" in report
    ck = home.checkpoints.load("EXTD", "EXTRACT")
    assert ck.stats["app.base"].ddl == 1 and ck.stats["app.copy"].ddl == 2
