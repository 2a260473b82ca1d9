"""kill -9 around DDL: right after a group handled a DDL, and between a DDL and the DML that
uses it.  Nothing is lost, nothing is applied twice (a DDL applied twice would stop the
Replicat: the column would already exist), and the target equals the source.

Both are heavy (./dev test-heavy): one runs the Replicat alone over a trail written as a live
Extract would; the other runs Extract → Data Pump → Replicat on a real source and kills
each group.  The default run replicates DDL end to end in test_ddl_end_to_end.py."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from kill9_support import kill9, wait_for
from replicat_support import pg_target, query, replicat_home, start_group, tdef

from trailgate.db.cluster import Cluster
from trailgate.demo.compare import compare_tables, render_comparison
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.ddl_workload import table_shapes
from trailgate.demo.pipeline import Pipeline, PipelineSpec
from trailgate.home import Home
from trailgate.model import Change, OpType, TableDef
from trailgate.process import lifecycle
from trailgate.spark.session import SPARK_DIR_ENV
from trailgate.trail import TrailWriter
from trailgate.trail.ddl import encode_marker

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def _columns(conninfo: str, table: str) -> list[str]:
    return [r[0] for r in query(conninfo, "SELECT attname::text FROM pg_attribute WHERE "
                                          f"attrelid = '{table}'::regclass AND attnum > 0 "
                                          "AND NOT attisdropped ORDER BY attnum")]


class Feeder:
    """Writes transactions to the trail as an Extract would: rows of app.t, and now and then
    ``ALTER TABLE app.t ADD cN int`` followed by rows that fill cN."""

    def __init__(self, trail: Path):
        self.writer = TrailWriter(trail, megabytes=1, fsync=False, producer="K9DDL")
        self.table: TableDef = tdef("app.t", [("id", "integer"), ("v", "text")], ["id"])
        self.csn = 1000
        self.next_id = 1
        self.rows: dict[int, dict[str, str | None]] = {}

    def _txn(self, changes: list[Change], define: TableDef | None = None) -> None:
        self.csn += 1
        w = self.writer
        w.begin_transaction(f"0.{self.csn}.1", self.csn)
        for change in changes:
            w.add_change(change, None if change.op is OpType.DDL else self.table)
            if change.op is OpType.DDL and define is not None:
                w.add_definition(define)
        w.commit_transaction()
        w.flush()

    def rows_txn(self, n: int = 3) -> None:
        changes = []
        for _ in range(n):
            key = self.next_id
            self.next_id += 1
            values = {c.name: None for c in self.table.columns}
            values.update(id=str(key), v=f"v{key}")
            for c in self.table.columns[2:]:
                values[c.name] = str(key * 10)
            self.rows[key] = values
            changes.append(Change(OpType.INSERT, "app.t", after={
                c.index: None if values[c.name] is None else values[c.name].encode()
                for c in self.table.columns}))
        self._txn(changes)

    def add_column(self, name: str) -> None:
        cols = [(c.name, c.source_type) for c in self.table.columns] + [(name, "integer")]
        self.table = tdef("app.t", cols, ["id"])
        for values in self.rows.values():
            values[name] = None
        text = encode_marker(f"ALTER TABLE app.t ADD {name} integer",
                             [("C5", str(self.csn)), ("B3", "app"), ("B4", "t"),
                              ("B5", "TABLE"), ("B6", "ALTER")])
        self._txn([Change(OpType.DDL, "app.t", text=text)], define=self.table)


@pytest.mark.heavy
def test_kill9_replicat_after_ddl_and_before_its_dml(e2e_cluster: Cluster, tmp_path: Path):
    conninfo = e2e_cluster.create_database("ddlk9")
    pg_target(conninfo, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text);")
    home = replicat_home(tmp_path / "home", (
        f"REPLICAT rep1\nTARGETDB {conninfo}\nSPARK MASTER local[1]\nBATCHSQL\n"
        "MAP app.*, TARGET app.*;\n"))
    feed = Feeder(home.dirdat / "rt")
    log = tmp_path / "replicat.log"
    feed.rows_txn()
    proc = start_group(home, "replicat", "REP1", "--trigger", "0.3", log=log)
    try:
        for n, name in enumerate(["c1", "c2"]):
            feed.rows_txn()
            feed.add_column(name)
            # kill -9 the moment the target has the column: the DDL committed, perhaps
            # nothing after it (its group checkpoint not written yet)
            wait_for(lambda name=name: name in _columns(conninfo, "app.t"), 300,
                  f"column {name}", log)
            kill9(proc, log, f"after DDL {n}")
            feed.rows_txn()  # the DML that uses the new column, written while it is down
            proc = start_group(home, "replicat", "REP1", "--trigger", "0.3", log=log)
        feed.add_column("c3")  # and one more DDL applied by the restarted Replicat
        feed.rows_txn()
        feed.writer.close()
        last = feed.next_id - 1
        wait_for(lambda: query(conninfo, "SELECT coalesce(max(id), 0) FROM app.t")[0][0] == last,
              300, "the last row", log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _columns(conninfo, "app.t") == ["id", "v", "c1", "c2", "c3"]
    got = {r[0]: r[1:] for r in query(conninfo, "SELECT id, v, c1, c2, c3 FROM app.t")}
    want = {k: (v["v"], *(None if v.get(c) is None else int(v[c]) for c in ("c1", "c2", "c3")))
            for k, v in feed.rows.items()}
    assert got == want, "a row lost or applied twice"
    text = log.read_text()
    assert "already exists" not in text and "ABENDING" not in text


def _delta_columns(path: Path) -> list[str]:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return [f.name for f in DeltaTable(str(path)).schema().fields]
    except TableNotFoundError:
        return []


@pytest.mark.heavy
def test_kill9_delta_replicat_after_ddl_and_before_its_dml(tmp_path: Path):
    """The same for a Delta target, whose DDL is a schema change of the Delta table (its
    own commit, not in a database transaction with the checkpoint): killed the moment the
    table has the new column, once with the DML that uses it written only while the
    Replicat is down, once with that DML already in the trail."""
    home = replicat_home(tmp_path / "home", "REPLICAT rep1\nTARGETDELTA ./delta\n"
                         "SPARK MASTER local[1]\nMAP app.*, TARGET app.*;\n",
                         checkpoint_table=None)
    table = home.path / "delta" / "app" / "t"
    feed = Feeder(home.dirdat / "rt")
    log = tmp_path / "replicat.log"
    feed.rows_txn()
    proc = start_group(home, "replicat", "REP1", "--trigger", "0.3", log=log)
    try:
        for n, name in enumerate(["c1", "c2"]):
            feed.rows_txn()
            feed.add_column(name)
            if n == 1:
                feed.rows_txn()  # the DML that uses it, already in the trail
            wait_for(lambda name=name: name in _delta_columns(table), 300, f"column {name}", log)
            kill9(proc, log, f"after DDL {n}")
            feed.rows_txn()  # rows using the new column, written while it is down
            proc = start_group(home, "replicat", "REP1", "--trigger", "0.3", log=log)
        feed.add_column("c3")
        feed.rows_txn()
        feed.writer.close()
        last = feed.next_id - 1

        def done() -> bool:
            from deltalake import DeltaTable

            if "c3" not in _delta_columns(table):
                return False
            ids = DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).column(0)
            return max(ids.to_pylist(), default=0) == last

        wait_for(done, 300, "the last row", log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    from deltalake import DeltaTable

    assert _delta_columns(table) == ["id", "v", "c1", "c2", "c3"]
    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    assert len(rows) == len({r["id"] for r in rows}), "a row applied twice"
    got = {r["id"]: (r["v"], r["c1"], r["c2"], r["c3"]) for r in rows}
    want = {k: (v["v"], *(None if v.get(c) is None else int(v[c]) for c in ("c1", "c2", "c3")))
            for k, v in feed.rows.items()}
    assert got == want, "a row lost or applied twice"
    assert "ABENDING" not in log.read_text()


# -- the whole pipeline (heavy) ------------------------------------------------------------

def _trail_ddl(trail: Path) -> int:
    from trailgate.trail import TrailReader

    try:
        return sum(1 for r in TrailReader(trail).records() if r.raw.io_type == OpType.DDL)
    except Exception:
        return -1


@pytest.mark.heavy
def test_kill9_each_group_around_ddl(databases: Databases, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch):
    dbs = databases
    pipeline = None
    try:
        source, target = dbs.source_conninfo, dbs.target_conninfo
        schema = "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text);"
        run_sql(source, schema)
        run_sql(target, schema)
        home = Home(tmp_path / "gg").create()
        monkeypatch.setenv(SPARK_DIR_ENV, str(home.dirtmp / "spark"))
        spec = PipelineSpec(tables=["app.*"], maps=[("app.*", "app.*")], source_db="src",
                            target_db="tgt", ddl_schemas=["app"], replicat_delta=False)
        pipeline = Pipeline(home, spec)
        setup, start = pipeline.write_files(Databases.login(source), Databases.login(target))
        mark = pipeline.event_mark()
        pipeline.ggsci([setup, start], io.StringIO())
        next_id = 1

        def rows(conn: psycopg.Connection, n: int = 5) -> None:
            nonlocal next_id
            cols = _columns(source, "app.t")
            for _ in range(n):
                conn.execute(f"INSERT INTO app.t ({', '.join(cols)}) VALUES "
                             f"({', '.join(['%s'] * len(cols))})",
                             (next_id, f"v{next_id}", *[next_id] * (len(cols) - 2)))
                next_id += 1

        def handled(k: int, trail: str | None) -> Callable[[], bool]:
            """Group k has the k-th DDL: in its trail, or (the Replicat) in the target."""
            if trail is None:
                return lambda: f"c{k}" in _columns(target, "app.t")
            return lambda: _trail_ddl(home.dirdat / trail) > k

        log = home.path / "k9.log"
        with psycopg.connect(source, autocommit=True) as conn:
            rows(conn)  # the Data Pump reports "started" once its input trail has a file
            deadline = time.monotonic() + 600
            while len(pipeline.started_since(mark)) < len(pipeline.groups):
                pipeline.check_running()
                assert time.monotonic() < deadline, "the groups did not start"
                time.sleep(1)
            for k, (group, trail) in enumerate(zip(pipeline.groups, ["lt", "rt", None],
                                                   strict=True)):
                conn.execute(f"ALTER TABLE app.t ADD c{k} int")
                wait_for(handled(k, trail), 600, f"{group.name} to handle DDL {k}", log)
                lifecycle.kill_group(home, group.kind, group.name)  # right after the DDL
                rows(conn)  # the DML that uses the new column, while the group is down
                lifecycle.start_group(home, group.kind, group.name)
            rows(conn)
        assert pipeline.wait_caught_up(source, timeout=900) is not None
        assert _trail_ddl(home.dirdat / "lt") == 3 and _trail_ddl(home.dirdat / "rt") == 3
        assert table_shapes(target, "app") == table_shapes(source, "app")
        results = compare_tables(source, ["app.t"], target=target)
        assert all(r.equal for r in results), "\n".join(render_comparison(results))
    finally:
        if pipeline is not None:
            print("\n".join(pipeline.stop_all()))
