"""Where an Extract micro-batch runs: on the driver, or in a Spark task for the first batch and
a large range — and how the driver reads the slot: all write the same trail.

Three Extract groups read the same history (three slots created before the workload) in
micro-batches of at most 64 kB of WAL: one with the defaults (every batch after the first on
the driver, which streams the slot over the replication protocol), one whose driver reads
the slot with SQL (``streaming=false``), one with ``driverMaxBytes=0`` (every batch in a
Spark task).  Their trails must hold the same records after the file headers."""

from __future__ import annotations

import pytest
from extract_support import make_home, trail_transactions
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)
from test_extract_pg import PARAMS, _schema, _workload_one, _workload_two

from trailgate.db.connect import connect
from trailgate.extract.postgres import micro_batch as extract_batch
from trailgate.extract.postgres.group import RunOptions, run_extract_group
from trailgate.trail.reader import record_bytes

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def test_driver_and_task_batches_write_the_same_trail(spark, pg_db, tmp_path, monkeypatch):
    with connect(pg_db) as conn:
        _schema(conn)
    homes = {name: make_home(tmp_path / name, pg_db, name, PARAMS + extra, megabytes=500)
             for name, extra in (("DRV", ""),
                                 ("SQL", "\nSPARK CONF trailgate.extract.streaming=false"),
                                 ("TSK", "\nSPARK CONF trailgate.extract.driverMaxBytes=0"))}
    _workload_one(pg_db)
    _workload_two(pg_db)
    where: dict[str, tuple[int, int, int]] = {}
    original = extract_batch.ExtractBatch.__call__

    def counting(self, df, batch_id):
        original(self, df, batch_id)
        where[self.sink.group] = (self.driver_batches, self.task_batches,
                                  self.streams_opened)

    monkeypatch.setattr(extract_batch.ExtractBatch, "__call__", counting)
    for name, home in homes.items():
        assert run_extract_group(home, name, RunOptions(once=True, max_wal_bytes=64 << 10),
                                 spark=spark) == 0
    drv, sql, tsk = (homes[n].dirdat / "aa" for n in ("DRV", "SQL", "TSK"))
    # the first batch only in a task; with driverMaxBytes=0 every batch in one (the slots
    # start a little apart, so background WAL may make their batch counts differ)
    assert where["DRV"][0] >= 3 and where["DRV"][1] == 1
    assert where["DRV"][2] == 1  # one stream for every driver batch
    assert where["SQL"][0] >= 3 and where["SQL"][1] == 1 and where["SQL"][2] == 0
    assert where["TSK"][0] == 0 and where["TSK"][1] >= 4
    assert len(trail_transactions(drv)) > 20
    assert record_bytes(drv) == record_bytes(tsk)
    assert record_bytes(sql) == record_bytes(tsk)
