"""TRANDATA and SCHEMATRANDATA on a real PostgreSQL, with GGSCI's messages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from trailgate.capture.postgres.trandata import (
    add_schematrandata,
    add_trandata,
    capture_warnings,
    delete_schematrandata,
    delete_trandata,
    info_schematrandata,
    info_trandata,
)
from trailgate.db.connect import connect
from trailgate.errors import ConfigError

pytestmark = pytest.mark.postgres
STAMP = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"


@pytest.fixture
def src(pg_db: str) -> Iterator[psycopg.Connection[Any]]:
    with connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA us01")
        conn.execute("CREATE TABLE us01.t27 (c1 int, c2 varchar(30), c3 int, c4 int, c5 int, "
                     "c6 varchar(10) UNIQUE, c7 date, PRIMARY KEY (c3, c4, c5))")
        conn.execute("CREATE TABLE us01.t22 (c1 int PRIMARY KEY, c2 text)")
        yield conn


def identity(conn: psycopg.Connection[Any], table: str) -> tuple[str, bool]:
    row = conn.execute(
        "SELECT c.relreplident::text, EXISTS (SELECT 1 FROM pg_publication_rel r "
        "JOIN pg_publication p ON p.oid = r.prpubid WHERE p.pubname = 'trailgate' "
        "AND r.prrelid = c.oid) FROM pg_class c WHERE c.oid = %s::regclass", (table,)
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def test_add_info_delete_trandata_like_ggsci(src) -> None:
    assert add_trandata(src, "us01.t27") == [
        "Logging of supplemental redo data enabled for table us01.t27."]
    assert info_trandata(src, "us01.t27") == [
        "Logging of supplemental redo log data is enabled for table us01.t27.",
        "Columns supplementally logged for table us01.t27: c3, c4, c5.",
    ]
    oid = src.execute("SELECT 'us01.t27'::regclass::oid::int8").fetchone()[0]
    assert src.execute("SELECT log_group_name FROM trailgate.log_groups").fetchall() == [
        (f"GGS_{oid}",)]
    assert identity(src, "us01.t27") == ("d", True)
    assert info_trandata(src, "us01.t22") == [
        "Logging of supplemental redo log data is disabled for table us01.t22."]
    assert delete_trandata(src, "us01.t27") == [
        "Logging of supplemental redo data disabled for table us01.t27."]
    assert info_trandata(src, "US01.T27") == [
        "Logging of supplemental redo log data is disabled for table us01.t27."]
    assert identity(src, "us01.t27") == ("d", False)


def test_delete_trandata_needs_schema(src) -> None:
    src.execute("SET search_path = us01")
    add_trandata(src, "t22")  # ADD takes the login's schema
    with pytest.raises(ConfigError, match=r"schema must be given"):
        delete_trandata(src, "t22")
    assert info_trandata(src, "us01.t22")[0].endswith("is enabled for table us01.t22.")


def test_key_selection_unique_then_all(src) -> None:
    src.execute("CREATE TABLE us01.u (a int, b int NOT NULL, c int NOT NULL, d text)")
    src.execute("CREATE UNIQUE INDEX u_z ON us01.u (c)")
    src.execute("CREATE UNIQUE INDEX u_a ON us01.u (a)")  # nullable: not usable
    src.execute("CREATE UNIQUE INDEX u_m ON us01.u (b, c)")
    add_trandata(src, "us01.u")
    # first usable unique index by name: u_m (u_a has a nullable column)
    assert info_trandata(src, "us01.u")[1].endswith(": b, c.")
    assert identity(src, "us01.u") == ("i", True)
    src.execute("CREATE TABLE us01.nokey (x int, y text)")
    lines = add_trandata(src, "us01.nokey")
    assert re.fullmatch(STAMP + r"  WARNING OGG-06439  No unique key is defined for table "
                        r"us01\.nokey\. All viewable columns will be used as a key\.", lines[0])
    assert info_trandata(src, "us01.nokey")[1].endswith(": x, y.")
    assert identity(src, "us01.nokey") == ("f", True)


def test_cols_and_nokey(src) -> None:
    add_trandata(src, "us01.t22", cols=["c2"])
    assert info_trandata(src, "us01.t22")[1].endswith(": c1, c2.")
    assert identity(src, "us01.t22") == ("f", True)  # extra columns need the full row
    add_trandata(src, "us01.t27", cols=["c7"], nokey=True)
    assert info_trandata(src, "us01.t27")[1].endswith(": c7.")
    with pytest.raises(ConfigError, match="NOKEY needs COLS"):
        add_trandata(src, "us01.t27", nokey=True)
    with pytest.raises(ConfigError, match="no column"):
        add_trandata(src, "us01.t27", cols=["nosuch"])
    with pytest.raises(ConfigError, match="no table matches"):
        add_trandata(src, "us01.nosuch")


def test_wildcard_info(src) -> None:
    add_trandata(src, "us01.*")
    lines = info_trandata(src, "us01.*")
    assert lines == [
        "Logging of supplemental redo log data is enabled for table us01.t22.",
        "Columns supplementally logged for table us01.t22: c1.",
        "Logging of supplemental redo log data is enabled for table us01.t27.",
        "Columns supplementally logged for table us01.t27: c3, c4, c5.",
    ]


def test_schematrandata_existing_and_new_tables(src) -> None:
    (line,) = add_schematrandata(src, "us01")
    assert re.fullmatch(STAMP + r"  INFO OGG-01788  SCHEMATRANDATA has been added on schema "
                        r"us01\.", line)
    assert info_trandata(src, "us01.t22")[1].endswith(": c1.")
    src.execute("CREATE TABLE us01.later (k int, v text)")  # the event trigger logs it
    assert info_trandata(src, "us01.later") == [
        "Logging of supplemental redo log data is enabled for table us01.later.",
        "Columns supplementally logged for table us01.later: k, v.",
    ]
    assert identity(src, "us01.later") == ("f", True)
    src.execute("CREATE TABLE public.elsewhere (k int)")
    assert info_trandata(src, "public.elsewhere")[0].endswith("disabled for table "
                                                               "public.elsewhere.")
    info = info_schematrandata(src, "us01")
    assert "OGG-06480" in info[0] and "enabled on schema us01." in info[0]
    lsn = src.execute("SELECT csn::int8 FROM trailgate.prepared_schemas").fetchone()[0]
    assert re.fullmatch(r"Schema us01 prepared at \S+ \S+ UTC, CSN (\d+); 3 table\(s\) "
                        r"supplementally logged\.", info[1]).group(1) == str(lsn)
    add_trandata(src, "us01.t27")  # explicit: survives DELETE SCHEMATRANDATA
    (line,) = delete_schematrandata(src, "us01")
    assert "OGG-01792  SCHEMATRANDATA has been deleted on schema us01." in line
    assert info_schematrandata(src, "us01") == [
        "Schema level supplemental logging is disabled on schema us01."]
    assert info_trandata(src, "us01.t22")[0].endswith("disabled for table us01.t22.")
    assert info_trandata(src, "us01.t27")[0].endswith("enabled for table us01.t27.")
    src.execute("CREATE TABLE us01.after_delete (k int)")
    assert info_trandata(src, "us01.after_delete")[0].endswith("disabled for table "
                                                                "us01.after_delete.")


def test_schematrandata_unknown_schema(src) -> None:
    with pytest.raises(ConfigError, match="schema nosuch does not exist"):
        add_schematrandata(src, "nosuch")


def test_capture_warnings_for_tables_without_trandata(src) -> None:
    add_trandata(src, "us01.t27")
    src.execute("CREATE TABLE us01.bare (x int)")
    warnings = capture_warnings(src, ["us01.*", "us01.missing"])
    assert warnings == [
        "WARNING: table us01.bare has no supplemental logging and no key the log can carry: "
        "it is not captured (PostgreSQL would reject its updates and deletes once "
        "published). Run ADD TRANDATA us01.bare.",
        "WARNING: table us01.t22 has no supplemental logging (ADD TRANDATA us01.t22); its "
        "updates and deletes carry its primary key, as the log provides.",
        "WARNING: no table matches us01.missing in database " + src.info.dbname + ".",
    ]
    assert identity(src, "us01.t22") == ("d", True)
    assert identity(src, "us01.bare") == ("d", False)
    src.execute("UPDATE us01.bare SET x = 1")  # still works at the source
