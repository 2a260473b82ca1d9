"""DBLOGIN checks, connection failures, credential aliases and the cluster lifecycle."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import time
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from trailgate.db.cluster import Cluster
from trailgate.db.connect import (
    CredentialStore,
    alias_conninfo,
    connect,
    credential_conninfo,
    login_conninfo,
)
from trailgate.db.prereqs import dblogin
from trailgate.demo.databases import Databases
from trailgate.errors import ConfigError, SourceError

pytestmark = pytest.mark.postgres


def test_dblogin_ok_as_superuser(pg_db: str) -> None:
    conn, report = dblogin(pg_db)
    with conn:
        assert report.ok, report.problems
        assert report.lines() == ["Successfully logged into database."]


def test_dblogin_reports_missing_privileges_and_keyless_table(pg_cluster: Cluster,
                                                              pg_db: str) -> None:
    with connect(pg_db) as admin:
        db = admin.info.dbname
        admin.execute("DROP ROLE IF EXISTS plain")
        admin.execute("CREATE ROLE plain LOGIN PASSWORD 'pw'")
        admin.execute("REVOKE CREATE ON DATABASE " + admin.info.dbname + " FROM PUBLIC")
        admin.execute("CREATE TABLE public.heap (a int, b text)")
        admin.execute("CREATE TABLE public.keyed (a int PRIMARY KEY)")
    conn, report = dblogin(pg_cluster.conninfo(db, user="plain", password="pw"))
    conn.close()
    assert report.problems == [
        "user plain lacks the REPLICATION privilege needed to create and read replication "
        "slots: run ALTER ROLE plain REPLICATION (as a superuser)",
        f"user plain cannot create the trailgate catalog schema and publication in database "
        f"{db}: run GRANT CREATE ON DATABASE {db} TO plain",
    ]
    assert report.warnings[-1] == (
        "table public.heap has no usable key (no primary key, no unique key of NOT NULL "
        "columns): ADD TRANDATA public.heap will log all its columns (REPLICA IDENTITY FULL)")
    assert len(report.warnings) == 2  # not-superuser note + the keyless table
    assert report.lines()[1].startswith("ERROR: user plain lacks the REPLICATION")


def test_dblogin_reports_wal_level_replica() -> None:
    directory = Path(tempfile.mkdtemp(prefix="tg-pgr-"))
    cluster = Cluster(directory, fast=True, wal_level="replica",
                      settings={"max_replication_slots": "0"})
    try:
        cluster.create()
        cluster.start()
        assert cluster.status().running
        conn, report = dblogin(cluster.conninfo())
        conn.close()
        assert report.problems == [
            "wal_level is 'replica'; logical decoding needs 'logical': run ALTER SYSTEM SET "
            "wal_level = logical (as a superuser) and restart the server",
            "max_replication_slots is 0; each Extract needs one slot: set "
            "max_replication_slots (e.g. ALTER SYSTEM SET max_replication_slots = 10) and "
            "restart the server",
        ]
        cluster.stop()
        status = cluster.status()
        assert status.exists and not status.running
        cluster.start()  # restart keeps data and settings
        with connect(cluster.conninfo()) as c:
            assert c.execute("SHOW wal_level").fetchone() == ("replica",)
    finally:
        cluster.destroy()
    assert not directory.exists()


def test_cluster_is_loopback_only_and_private(pg_cluster: Cluster) -> None:
    with connect(pg_cluster.conninfo()) as c:
        assert c.execute("SHOW listen_addresses").fetchone() == ("127.0.0.1",)
        assert c.execute("SHOW unix_socket_directories").fetchone() == \
            (str(pg_cluster.socket_dir),)
        assert c.execute("SHOW wal_level").fetchone() == ("logical",)
    state = pg_cluster.directory / "cluster.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    if os.geteuid() == 0:
        assert pg_cluster.data_dir.stat().st_uid != 0
    # the Unix socket, as TCP, takes no one without a password
    with pytest.raises(SourceError, match="password"):
        connect(f"host={pg_cluster.socket_dir} port={pg_cluster.port} dbname=postgres "
                f"user={pg_cluster.superuser}")


def test_unreachable_database_is_a_clear_error_quickly() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(SourceError) as info:
        connect(f"host=127.0.0.1 port={port} dbname=x user=u password=secret")
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert message.startswith(f"cannot connect to PostgreSQL u@127.0.0.1:{port}/x:")
    assert "secret" not in message and "Check that the server is running" in message
    with pytest.raises(SourceError, match=r"10\.255\.255\.1"):  # unroutable: the timeout ends it
        connect("host=10.255.255.1 dbname=x user=u connect_timeout=1")
    assert time.monotonic() - started < 20


def test_wrong_password_names_the_user(pg_cluster: Cluster) -> None:
    with pytest.raises(SourceError, match=r"postgres@127\.0\.0\.1:\d+/postgres: .*password"):
        connect(pg_cluster.conninfo(user="postgres", password="wrong"))


def test_credential_store(tmp_path: Path, pg_cluster: Cluster) -> None:
    store = CredentialStore(tmp_path)
    userid = f"postgres@127.0.0.1:{pg_cluster.port}/postgres"
    store.add("ggadmin", userid, pg_cluster.password)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    cred = store.get("ggadmin")
    with connect(credential_conninfo(cred)) as c:
        assert c.execute("SELECT current_user").fetchone() == ("postgres",)
    by_alias = alias_conninfo(tmp_path, "ggadmin")  # what a group hands to Spark
    assert pg_cluster.password not in by_alias
    with connect(by_alias) as c:
        assert c.execute("SELECT current_user").fetchone() == ("postgres",)
    assert [c.alias for c in store.list()] == ["ggadmin"]
    store.delete("ggadmin")
    with pytest.raises(ConfigError, match="alias 'ggadmin' does not exist"):
        store.get("ggadmin")


def test_login_conninfo_forms() -> None:
    assert conninfo_to_dict(login_conninfo(sourcedb="mydb", userid="u@h:6543/other",
                                           password="p")) == \
        {"dbname": "other", "user": "u", "host": "h", "port": "6543", "password": "p"}
    assert conninfo_to_dict(login_conninfo(sourcedb="host=a dbname=b", userid="u")) == \
        {"host": "a", "dbname": "b", "user": "u"}
    # a Unix socket's directory as the host, as psql -h takes it
    assert conninfo_to_dict(login_conninfo(userid="u@/var/run/postgresql:5433/sales")) == \
        {"user": "u", "host": "/var/run/postgresql", "port": "5433", "dbname": "sales"}
    assert conninfo_to_dict(login_conninfo(userid="u@/tmp/pg")) == {"user": "u", "host": "/tmp/pg"}
    with pytest.raises(ConfigError, match="socket directory as /directory:port/dbname"):
        login_conninfo(userid="u@/tmp/pg:port/db")


def test_a_login_by_the_clusters_unix_socket_reaches_it(pg_cluster: Cluster) -> None:
    user, password = Databases.login(pg_cluster.conninfo("postgres", via_socket=True))
    assert user.startswith(f"postgres@{pg_cluster.socket_dir}:")
    with connect(login_conninfo(userid=user, password=password)) as conn:
        assert conn.info.host == str(pg_cluster.socket_dir)
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_cluster_refuses_unreachable_directory() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root runs PostgreSQL as another OS user")
    parent = Path(tempfile.mkdtemp(prefix="tg-priv-"))  # mode 0700, owned by root
    try:
        with pytest.raises(ConfigError, match=r"cannot reach .*chmod o\+x"):
            Cluster(parent / "c").create()
    finally:
        import shutil
        shutil.rmtree(parent)


def test_connections_keep_tcp_keepalives_unless_the_string_sets_them(pg_db: str) -> None:
    """Every connection (query, replication stream) asks for TCP keepalives, so a server
    gone without a reset is an error in about a minute, not a two-hour hang; a connection
    string's own values win."""
    from trailgate.db.connect import session_conninfo

    with connect(pg_db) as conn:
        params = conn.info.get_parameters()
        assert (params.get("keepalives"), params.get("keepalives_idle"),
                params.get("keepalives_count")) == ("1", "30", "3")
    from psycopg.conninfo import make_conninfo

    with connect(make_conninfo(pg_db, keepalives_idle="7")) as conn:
        assert conn.info.get_parameters().get("keepalives_idle") == "7"
    stream = conninfo_to_dict(session_conninfo(pg_db, replication="database"))
    assert stream["keepalives_interval"] == "10" and stream["replication"] == "database"


def test_a_long_cluster_path_gets_a_private_socket_dir_and_links_are_never_followed(
        tmp_path: Path) -> None:
    """A cluster whose own ``run/`` is too long for a socket address gets a private
    directory in the temporary directory, kept across starts unless another could write
    it; trailgate's settings files replace a link left in their place, never its target."""
    import shutil

    deep = tmp_path / ("d" * 100)
    (deep / "data").mkdir(parents=True)
    cluster = Cluster(deep)
    cluster._save_state({"port": 5432, "user": "postgres", "password": "x",
                         "os_user": cluster.os_user})
    uid, gid = cluster._ensure_os_user()
    made = []
    try:
        cluster._prepare_socket_dir(uid, gid)
        first = cluster.socket_dir
        made.append(first)
        assert first.parent == Path(tempfile.gettempdir())
        assert first.name.startswith("trailgate-")
        st = first.lstat()
        assert st.st_uid == uid and stat.S_IMODE(st.st_mode) == 0o755
        cluster._prepare_socket_dir(uid, gid)
        assert cluster.socket_dir == first
        os.chmod(first, 0o777)  # now anyone could plant a socket there: not reused
        cluster._prepare_socket_dir(uid, gid)
        made.append(cluster.socket_dir)
        assert cluster.socket_dir != first
        victim = tmp_path / "victim"
        victim.write_text("keep")
        (deep / "data" / "pg_hba.conf").symlink_to(victim)
        cluster._write_conf(5432, uid, gid)
        assert victim.read_text() == "keep"
        hba = deep / "data" / "pg_hba.conf"
        assert not hba.is_symlink() and "local all all scram-sha-256" in hba.read_text()
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
