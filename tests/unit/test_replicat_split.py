"""A batch's range from Spark's offset log, and its key-partition count: decided once,
recorded, and taken back for a replay whatever the settings are then."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from replicat_support import TABLES, Increments

from trailgate.changes.routing import Router
from trailgate.model import Change, OpType, TrailPosition, Transaction
from trailgate.spark.key_split import key_partitions, scan_hint_file, write_scan_hint
from trailgate.spark.offset_log import batch_range, logged_end
from trailgate.spark.trail_offsets import position_of, scan_boundary
from trailgate.trail import TrailWriter

META = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'


def _log(spark_dir: Path, batch: int, offset: str) -> None:
    (spark_dir / "offsets").mkdir(parents=True, exist_ok=True)
    (spark_dir / "offsets" / str(batch)).write_text(f"v1\n{META}\n{offset}")


def test_batch_range_from_the_offset_log(tmp_path: Path) -> None:
    start = TrailPosition(0, 1234)
    _log(tmp_path, 0, '{"seqno": 0, "rba": 5000}')
    _log(tmp_path, 1, '{"seqno":1,"rba":77}')
    assert logged_end(tmp_path, 1) == TrailPosition(1, 77)
    assert batch_range(tmp_path, 0, start) == (start, TrailPosition(0, 5000))
    assert batch_range(tmp_path, 1, start) == (TrailPosition(0, 5000), TrailPosition(1, 77))
    assert batch_range(tmp_path, 2, start) is None  # not logged
    assert batch_range(tmp_path, 0, None) is None  # first batch, start unknown
    _log(tmp_path, 3, "-")  # no offset for the source
    _log(tmp_path, 4, '{"lsn": 5}')  # not a trail offset
    (tmp_path / "offsets" / "5").write_text("v2\nwhatever\n{}")
    assert [logged_end(tmp_path, b) for b in (3, 4, 5)] == [None, None, None]
    assert batch_range(tmp_path, 4, start) is None


def test_extract_lsn_range_from_the_offset_log(tmp_path: Path) -> None:
    from trailgate.extract.postgres.micro_batch import lsn_range

    for batch, offset in enumerate(['{"lsn": 100}', '{"lsn": 250}', '{"lsn": 250}',
                                    '{"lsn": 9}', '{"seqno": 0, "rba": 1}']):
        _log(tmp_path, batch, offset)
    assert lsn_range(tmp_path, 0) is None  # the first batch: its start is the source's
    assert lsn_range(tmp_path, 1) == (100, 250)
    assert lsn_range(tmp_path, 2) == (250, 250)
    assert lsn_range(tmp_path, 3) is None  # going backwards: not a log this code knows
    assert lsn_range(tmp_path, 4) is None  # not an LSN offset
    assert lsn_range(tmp_path, 6) is None  # not logged


def test_key_partitions_are_recorded_and_kept_for_a_replay(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    work = Increments(seed=9)
    ends = [writer.write_transaction(t, TABLES) for t in work.transactions(40)]
    pk = Transaction("pk", 99_000, [Change(OpType.PK_UPDATE, "public.events",
                                           after={0: b"500"}, before={0: b"499"})])
    ends.append(writer.write_transaction(pk, TABLES))
    writer.close()
    split = tmp_path / "replicat.split"
    router = Router.of([("public.*", None)], [])

    def count(lower: TrailPosition, upper: TrailPosition, **kw: object) -> int:
        opts: dict = {"partitions": 3, "split_min": 1, "router": router, "path": split} | kw
        return key_partitions(str(trail), lower, upper, **opts)

    assert count(ends[0], ends[30]) == 3
    assert json.loads(split.read_text()) == {
        "start": [ends[0].seqno, ends[0].rba], "end": [ends[30].seqno, ends[30].rba],
        "partitions": 3}
    # the same range planned again with other settings: the recorded count
    assert count(ends[0], ends[30], partitions=2, split_min=10**6) == 3
    # another range: decided anew
    assert count(ends[30], ends[39], split_min=10**6) == 1  # small
    assert count(ends[30], ends[-1], path=None) == 1  # holds a PK update of a kept table
    unkept = Router.of([("public.accounts", None)], [])
    assert count(ends[30], ends[-1], path=None, router=unkept) == 3  # not a kept table
    assert count(ends[0], ends[30], partitions=1, path=None) == 1


def test_the_source_scan_hint_spares_a_second_scan(tmp_path: Path) -> None:
    trail = tmp_path / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    ends = [writer.write_transaction(t, TABLES) for t in Increments(seed=4).transactions(20)]
    writer.close()
    split = tmp_path / "replicat.split"
    router = Router.of([("public.*", None)], [])
    _, _, state = scan_boundary(str(trail), ends[0])
    assert state.boundary == ends[-1]
    # a hint that (falsely) says the range holds a PK update: believed, so not scanned
    write_scan_hint(split, ends[0], state.__class__(**{
        **{f: getattr(state, f) for f in state.__dataclass_fields__}, "marked": True}))
    assert json.loads(scan_hint_file(split).read_text())["marked"] is True
    opts = {"partitions": 3, "split_min": 1, "router": router, "path": split}
    assert key_partitions(str(trail), ends[0], ends[-1], **opts) == 1
    # for another range the hint does not count: scanned, no PK update, split
    split.unlink()
    assert key_partitions(str(trail), ends[1], ends[-1], **opts) == 3


def test_source_options_are_read_case_insensitively(tmp_path: Path) -> None:
    """Spark hands a data source its options with lower-case names: the trailchanges
    reader must still find startingPosition and maxRecordsPerTrigger."""
    from pyspark.sql.datasource import CaseInsensitiveDict

    from trailgate.spark.trail_changes import TrailChangesDataSource

    (tmp_path / "rt000000000").write_bytes(b"")
    options = CaseInsensitiveDict({
        "path": str(tmp_path / "rt"), "startingPosition": "0:1359", "rows": "apply",
        "maxRecordsPerTrigger": "40", "keyPartitions": "3", "splitMinRecords": "7",
        "tables": json.dumps({"rules": [["public.*", None]], "excludes": []})})
    assert "startingposition" in dict(options)  # what Spark does to the names
    reader = TrailChangesDataSource(options).streamReader(None)
    assert reader.options.start == TrailPosition(0, 1359)
    assert reader.initialOffset() == {"seqno": 0, "rba": 1359}
    assert reader.options.max_records_per_trigger == 40
    assert reader.options.tables is None  # the routing rules are not a table filter
    assert (reader.key_partitions, reader.split_min) == (3, 7)
    assert reader.router.route("public.x") == "public.x" and reader.router.route("a.b") is None


def test_a_streaming_replicats_batches_never_pass_its_checkpoint(tmp_path: Path) -> None:
    """Once its first (eager) batches are behind, a streaming Replicat's source lets a batch
    reach only as far as the group checkpoint, which the stream apply writes for what it
    made durable, and without the record bound: batches that only record how far the
    stream apply got need not start at a bound, and never claim what is not durable."""
    from pyspark.sql.datasource import CaseInsensitiveDict

    from trailgate.checkpoint import Checkpoint, CheckpointStore
    from trailgate.spark.batch_window import PATIENT_OPTION, WINDOW_OPTION
    from trailgate.spark.trail_changes import APPLIED_OPTION, TrailChangesDataSource
    from trailgate.spark.trail_offsets import offset_of

    trail = tmp_path / "aa"
    writer = TrailWriter(trail, megabytes=1, fsync=False)
    ends = [writer.write_transaction(t, TABLES) for t in Increments(seed=5).transactions(30)]
    writer.close()
    store = CheckpointStore(tmp_path / "dirchk")
    reader = TrailChangesDataSource(CaseInsensitiveDict({
        "path": str(trail), "startingPosition": "0:0", "rows": "apply",
        "maxRecordsPerTrigger": "3", WINDOW_OPTION: "0", PATIENT_OPTION: "true",
        APPLIED_OPTION: str(store.path("REP", "REPLICAT")),
        "tables": json.dumps({"rules": [["public.*", None]], "excludes": []})})
    ).streamReader(None)
    assert reader._window is not None
    reader._window.idle = 0.05  # nothing new: back to Spark soon
    limit = reader.getDefaultReadLimit()

    def ckpt(position: TrailPosition) -> None:
        ck = Checkpoint("REP", "REPLICAT")
        ck.read_position = offset_of(position)
        store.save(ck)

    first = reader.latestOffset(None, limit)  # the eager ones: bounded, no checkpoint yet
    second = reader.latestOffset(first, limit)
    assert ends[0] <= position_of(first) < position_of(second) < ends[10]
    assert reader.latestOffset(second, limit) == second  # nothing durable past it
    ckpt(ends[20])
    third = reader.latestOffset(second, limit)
    assert third == offset_of(ends[20])  # past the bound, not past the checkpoint
    assert reader.latestOffset(third, limit) == third
    ckpt(ends[-1])
    assert reader.latestOffset(third, limit) == offset_of(ends[-1])
