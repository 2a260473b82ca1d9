"""spark.readStream.format("trail"): micro-batches of whole transactions, each change once,
resuming from Spark's checkpoint as the trail grows."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from spark_conftest import (  # noqa: F401  (spark_session is the ``spark`` fixture)
    ChangeMaker,
    Workload,
    crash_mid_transaction,
    spark_session,
    write_workload,
)

from trailgate.model import TrailPosition
from trailgate.spark.trail_offsets import scan_boundary

pytestmark = pytest.mark.spark


def run_available_now(spark, trail: Path, checkpoint: Path, batches: dict, **options) -> dict:
    """Run the stream until it has read what the trail holds now; returns its end offset."""

    def collect(df, batch_id: int) -> None:
        batches[batch_id] = [(r.xid, r.seqno, r.rba, r.txn_first, r.txn_last)
                             for r in df.select("xid", "seqno", "rba", "txn_first",
                                                "txn_last").collect()]

    reader = spark.readStream.format("trail")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(trail)).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
        progress = [p for p in query.recentProgress if p["sources"]]
        return json.loads(progress[-1]["sources"][0]["endOffset"]) if progress else {}
    finally:
        query.stop()


def check_whole_transactions(batches: dict, workload: Workload) -> Counter:
    """Every batch holds whole transactions; returns how often each xid was delivered."""
    sizes = {t.xid: len(t.changes) for t in workload.transactions}
    delivered: Counter = Counter()
    for rows in batches.values():
        per_xid = defaultdict(list)
        for xid, *_ in rows:
            per_xid[xid].append(1)
        for xid, hits in per_xid.items():
            assert len(hits) == sizes[xid], f"transaction {xid} split across batches"
            delivered[xid] += 1
    return delivered


def test_stream_resumes_at_transaction_boundaries(spark, tmp_path):
    trail = tmp_path / "dirdat" / "st"
    checkpoint = tmp_path / "dirchk" / "rep"
    maker = ChangeMaker(seed=11)
    workload = Workload()
    write_workload(trail, [maker.transaction(f"s.{n}", n) for n in range(60)], workload).close()
    lost = maker.transaction("lost-1", 999, size=5)
    crash_mid_transaction(trail, lost)  # an Extract died inside this one

    first: dict = {}
    end = run_available_now(spark, trail, checkpoint, first, maxRecordsPerTrigger="50")
    assert len(first) >= 3  # the read limit cut the run into several micro-batches
    delivered = check_whole_transactions(first, workload)
    assert set(delivered) == {t.xid for t in workload.transactions}
    assert set(delivered.values()) == {1}
    assert end == {"seqno": workload.ends[-1].seqno, "rba": workload.ends[-1].rba}
    positions = [(s, r) for b in sorted(first) for _, s, r, *_ in first[b]]
    assert positions == sorted(positions)

    # The restarted Extract writes the lost transaction again, whole, in a new file, then
    # more, including one that rolls over into yet another file.
    more = [lost, *(maker.transaction(f"t.{n}", 2000 + n) for n in range(30)),
            maker.transaction("big-2", 5000, size=4000), maker.transaction("after-big", 5001)]
    first_new = len(workload.transactions)
    write_workload(trail, more, workload).close()
    second: dict = {}
    end = run_available_now(spark, trail, checkpoint, second)
    delivered = check_whole_transactions(second, workload)
    assert set(delivered) == {t.xid for t in workload.transactions[first_new:]}
    assert set(delivered.values()) == {1}
    assert end == {"seqno": workload.ends[-1].seqno, "rba": workload.ends[-1].rba}
    big_files = {s for rows in second.values() for xid, s, *_ in rows if xid == "big-2"}
    assert len(big_files) >= 2
    lost_rows = [row for rows in second.values() for row in rows if row[0] == "lost-1"]
    assert len(lost_rows) == 5 and lost_rows[0][1] > workload.ends[59].seqno


def test_latest_offset_never_splits_a_transaction(tmp_path):
    trail = tmp_path / "dirdat" / "lo"
    maker = ChangeMaker(seed=13)
    workload = Workload()
    write_workload(trail, [maker.transaction(f"l.{n}", n, size=3) for n in range(10)],
                   workload).close()
    ends = set(workload.ends)
    start = TrailPosition(0, 0)
    seen = []
    while True:
        boundary, covered, _ = scan_boundary(str(trail), start, max_records=4)
        if boundary == start:
            break
        assert boundary in ends and covered == 6  # two whole 3-change transactions
        seen.append(boundary)
        start = boundary
    assert seen == workload.ends[1::2]

    # A transaction cut off by a crash holds the boundary back; a scan that goes on from
    # where the previous one stopped finds its rewrite and what follows.
    cut = maker.transaction("cut", 99, size=3)
    crash_mid_transaction(trail, cut)
    boundary, covered, state = scan_boundary(str(trail), start)
    assert (boundary, covered) == (start, 0) and state.in_txn and state.resume > start
    write_workload(trail, [cut, maker.transaction("next", 100, size=2)], workload).close()
    boundary, covered, resumed = scan_boundary(str(trail), start, state=state)
    assert (boundary, covered) == (workload.ends[-1], 5)
    assert scan_boundary(str(trail), start)[:2] == (boundary, covered)
    assert scan_boundary(str(trail), boundary, state=resumed)[:2] == (boundary, 0)


def test_stream_with_table_filter_and_starting_position(spark, tmp_path):
    trail = tmp_path / "dirdat" / "sf"
    maker = ChangeMaker(seed=17)
    workload = Workload()
    write_workload(trail, [maker.transaction(f"f.{n}", n) for n in range(40)], workload).close()
    start = workload.ends[19]
    got: dict = {}
    run_available_now(spark, trail, tmp_path / "chk", got, tables="hr.*",
                      startingPosition=str(start))
    xids = Counter(xid for rows in got.values() for xid, *_ in rows)
    want = Counter(t.xid for t in workload.transactions[20:] for c in t.changes
                   if c.table == "HR.EMP")
    assert xids == want and want


def test_a_micro_batch_starting_inside_a_file_names_the_columns(spark, tmp_path):
    """The definitions a file gave before a micro-batch's start still name its columns
    (they were column numbers), for every batch of a run cut into many."""
    trail = tmp_path / "dirdat" / "nm"
    maker = ChangeMaker(seed=23)
    workload = Workload()
    write_workload(trail, [maker.transaction(f"n.{n}", n) for n in range(40)], workload).close()
    names: dict = {}

    def collect(df, batch_id: int) -> None:
        names[batch_id] = {(r.table_name, k) for r in df.select("table_name", "after")
                           .collect() if r.after for k in r.after}

    query = (spark.readStream.format("trail").option("maxRecordsPerTrigger", "20")
             .option("startingPosition", str(workload.ends[5])).load(str(trail))
             .writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120) and query.exception() is None
    finally:
        query.stop()
    assert len(names) >= 3
    from spark_conftest import TABLES

    known = {(t, c.name) for t, d in TABLES.items() for c in d.columns}
    seen = set().union(*names.values())
    assert seen and seen <= known, sorted(seen - known)[:5]
