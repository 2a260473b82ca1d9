"""DDL replication end to end: a randomised workload mixing DML and DDL on a real PostgreSQL
goes Extract → Data Pump → Replicat into a target PostgreSQL and into Delta tables; the
target equals the source in data and in shape (columns, types, nullability, defaults,
indexes, constraints, from the catalogs), the Delta tables in data and columns, and DDL in
the schema no TABLE statement takes reaches nobody.  Every kind of DDL the workload knows
(``KINDS``: the list of issue 17) runs in each run, the rest of the DDL is random."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from trailgate.db.connect import connect
from trailgate.demo.compare import compare_tables, render_comparison
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.ddl_workload import KINDS, DdlWorkload, table_shapes
from trailgate.demo.pipeline import Pipeline, PipelineSpec
from trailgate.demo.workload import Workload
from trailgate.home import Home
from trailgate.spark.session import SPARK_DIR_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.spark]



def _compare(source: str, target: str, work: DdlWorkload, delta: Path | None) -> None:
    src, tgt = table_shapes(source, "ddl"), table_shapes(target, "ddl")
    assert sorted(tgt) == sorted(src), "the target has other tables than the source"
    for name, shape in src.items():
        assert tgt[name] == shape, f"ddl.{name}: target shape differs\n{shape}\n{tgt[name]}"
    assert set(table_shapes(target, "ddlx")) == {"noise"}, "excluded-schema DDL was applied"
    tables = [f"ddl.{n}" for n in sorted(src)]
    assert sorted(tables) == work.qualified()
    results = compare_tables(source, tables, target=target, delta_root=delta)
    report = "\n".join(render_comparison(results))
    print(report)
    assert all(r.equal for r in results), report
    if delta is not None:
        from deltalake import DeltaTable

        for name in src:
            columns = [c[0] for c in src[name].columns]
            fields = [f.name for f in DeltaTable(str(delta / "ddl" / name)).schema().fields]
            assert fields == columns, f"Delta ddl.{name} has columns {fields}, not {columns}"
        dropped = {p.name for p in (delta / "ddl").iterdir() if p.is_dir()} - set(src)
        assert not dropped, f"Delta tables of dropped source tables are still there: {dropped}"


def _replicate(dbs: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
               name: str, transactions: int, seed: int, ddl_every: int, delta: bool) -> None:
    for cluster in (dbs.source, dbs.target):
        cluster.create_database(name)
    source, target = dbs.source.conninfo(name), dbs.target.conninfo(name)
    work = DdlWorkload(ddl_every=ddl_every, cover=True)  # every kind of DDL, then random
    run_sql(source, work.setup_sql())
    run_sql(target, work.setup_sql())
    home = Home(tmp_path / "gg").create()
    monkeypatch.setenv(SPARK_DIR_ENV, str(home.dirtmp / "spark"))
    spec = PipelineSpec(tables=["ddl.*"], maps=[("ddl.*", "ddl.*")], source_db=name,
                        target_db=name, extract="EXTD", pump_name="PMPD",
                        replicat_pg_name="RPGD", replicat_delta_name="RDLD",
                        replicat_delta=delta, ddl_schemas=["ddl"],
                        extra_extract_params=["GETTRUNCATES"],
                        extra_replicat_params=["GETTRUNCATES"])
    pipeline = Pipeline(home, spec)
    setup, start = pipeline.write_files(Databases.login(source), Databases.login(target))
    transcript = io.StringIO()
    try:
        mark = pipeline.event_mark()
        pipeline.ggsci([setup, start], transcript)
        load = Workload(source, work, transactions=transactions, threads=1, rate=30,
                        seed=seed)
        load.start()
        deadline = time.monotonic() + 900
        while not load.done or len(pipeline.started_since(mark)) < len(pipeline.groups):
            pipeline.check_running()
            load.check()
            assert time.monotonic() < deadline, "the groups did not start"
            time.sleep(1)
        load.wait(timeout=5)
        assert set(work.kinds) == set(KINDS), f"DDL kinds not run: {set(KINDS) - set(work.kinds)}"
        assert pipeline.wait_caught_up(source, timeout=900) is not None
        _compare(source, target, work, pipeline.delta_root if delta else None)
        with connect(source) as conn:
            ddl_count = conn.execute("SELECT count(DISTINCT seqno) FROM ggadmin.ggs_marker"
                                     ).fetchone()[0]
        ck = home.checkpoints.load("RPGD", "REPLICAT")
        applied = sum(s.ddl for s in ck.stats.values())
        print(f"{ddl_count} DDL marked at the source, {applied} applied to the target")
        assert applied > 5
    except BaseException:
        print(transcript.getvalue())
        for g in pipeline.groups:
            print(f"--- {g.name}: {pipeline.report_tail(g, 40)}")
        raise
    finally:
        print("\n".join(pipeline.stop_all()))


def test_ddl_and_dml_replicate_to_postgres_and_delta(databases, tmp_path, monkeypatch):
    _replicate(databases, tmp_path, monkeypatch, name="ddl_small", transactions=160,
               seed=17, ddl_every=4, delta=True)


@pytest.mark.heavy
def test_ddl_and_dml_replicate_heavy(databases, tmp_path, monkeypatch):
    _replicate(databases, tmp_path, monkeypatch, name="ddl_heavy", transactions=1500,
               seed=4242, ddl_every=3, delta=True)
