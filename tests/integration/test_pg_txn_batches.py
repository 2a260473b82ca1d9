"""Batches of whole small transactions write the very trail the general path writes.

The same random pgoutput stream (``txn_stream_support``: 1-3 row transactions over several
tables, NULLs, TOAST, key changes, interleaved Relation messages, big and empty transactions,
TRUNCATE, messages, keepalives, cut into chunks at random) goes through the Extract's
driver read twice — each transaction on its own (the general path) and in batches
(``PgCapture.read_batched``) — and through the trail sink into two trails.  Everything after
the file headers must be identical, and so must what the sink and the capture report (the
trail position, last CSN and XID, counts, transactions, the capture's delivered and end
positions, the last commit time).  The writer's own fallbacks are covered too: a file that
rolls over inside a batch, a replay whose batch is partly in the trail already, a 12c+
format, whose records are laid out again one by one.  The database serves only the type and
NOT NULL look-ups of the Relation messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from txn_stream_support import PARAMS, ReplayStream, chunks, random_stream

from trailgate.capture.postgres import fastpath
from trailgate.capture.postgres.capture import BATCH_TXN_ROWS, PgCapture
from trailgate.changes.change_rows import (
    OP_TXNS,
    ChangeColumns,
    ChangeRowBuilder,
    ColumnRowBuilder,
)
from trailgate.extract.postgres.snapshot_tracker import SnapshotTracker
from trailgate.extract.postgres.source import SourceOptions, _Emitter, _rows
from trailgate.home import GroupInfo, Home, TrailInfo
from trailgate.spark.trail_sink import SinkOptions, write_change_batches
from trailgate.trail.reader import record_bytes
from trailgate.trail.txn_batch import TxnBatch

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not fastpath.available, reason="the C row path is not built")]

END = 1 << 62
TAKEN = {False: 0, True: 0}  # transactions written from batches, by path
LONGEST = {False: 0, True: 0}  # the most records of a transaction in a batch, by path


def _home(path: Path, conninfo: str) -> SourceOptions:
    home = Home(path).create()
    home.add_group(GroupInfo("TXB", "EXTRACT", "TRANLOG"))
    home.add_trail("TXB", TrailInfo("./dirdat/aa", megabytes=1))
    (home.dirprm / "txb.prm").write_text(
        f"EXTRACT TXB\nSOURCEDB {conninfo}\nEXTTRAIL ./dirdat/aa\n{PARAMS}\n")
    return SourceOptions.parse({"home": str(home.path), "group": "TXB"})


def _write(opts: SourceOptions, conninfo: str, parts: list, trail: Path, batched: bool,
           sink_options: dict[str, str] | None = None, tracker: bool = False,
           columns: bool = False) -> tuple[Any, PgCapture, int | None]:
    """Read ``parts`` as the driver's streamed slot does and append them to ``trail``
    (``tracker``: with a run's snapshot tracker, none under way, as ``run extract`` has;
    ``columns``: handed over as the streamer's read hands them, not as Arrow batches)."""
    emitter = _Emitter(opts.config, tracker=SnapshotTracker("run") if tracker else None)
    cap = PgCapture(conninfo, "no_slot", "no_pub", encode_plan=emitter.encode_plan,
                    stream=ReplayStream(parts), watch=emitter.watch)  # type: ignore[arg-type]
    rows = ColumnRowBuilder() if columns else ChangeRowBuilder()
    last: list[int | None] = []

    def batches():
        last.append((yield from _rows(opts, cap, emitter, 1, END, rows, batched)))
        rows.add_position({"lsn": END})
        yield rows.take()

    def counted():
        for batch in batches():
            cols = batch if columns else ChangeColumns(batch)
            assert type(cols) is ChangeColumns
            for op, blob in zip(cols.ops, cols.records, strict=True):
                if op == OP_TXNS:
                    txns = TxnBatch.parse(blob)
                    TAKEN[batched] += txns.count
                    LONGEST[batched] = max(LONGEST[batched], *(
                        sum(len(records) for _, records in t.runs)
                        for t in txns.transactions()))
            yield batch

    sink = SinkOptions.parse({"path": str(trail), "megabytes": "1", **(sink_options or {})},
                             "run")
    try:
        msg = write_change_batches(sink, counted())
    finally:
        cap.close()
    return msg, cap, last[0]


def _same(a: tuple[Any, PgCapture, int | None], b: tuple[Any, PgCapture, int | None]) -> None:
    (ma, ca, la), (mb, cb, lb) = a, b
    assert (ma.position, ma.last_csn, ma.last_xid, ma.last_io_time, ma.counts,
            ma.transactions, ma.skipped) == (mb.position, mb.last_csn, mb.last_xid,
                                             mb.last_io_time, mb.counts, mb.transactions,
                                             mb.skipped)
    assert (ca._delivered_lsn, ca._last_end_lsn, la) == (cb._delivered_lsn, cb._last_end_lsn,
                                                          lb)


@pytest.mark.parametrize(("seed", "tracker"), [(1, False), (2, False), (3, True)])
def test_batches_write_the_general_paths_bytes(pg_db, tmp_path, seed, tracker):
    opts = _home(tmp_path / "home", pg_db)
    parts = chunks(random_stream(seed, 1500), seed)
    TAKEN.update({False: 0, True: 0})
    general = _write(opts, pg_db, parts, tmp_path / "g" / "aa", batched=False,
                     tracker=tracker)
    batched = _write(opts, pg_db, parts, tmp_path / "b" / "aa", batched=True,
                     tracker=tracker)
    assert general[0].transactions > 1000
    assert TAKEN[False] == 0 and TAKEN[True] > general[0].transactions // 2
    assert record_bytes(tmp_path / "g" / "aa") == record_bytes(tmp_path / "b" / "aa")
    _same(general, batched)


def test_long_transactions_in_batches_write_the_general_paths_bytes(pg_db, tmp_path):
    """Transactions of up to ``BATCH_TXN_ROWS`` rows go into batches when they are whole in
    a chunk; longer ones, and those a chunk cuts, take the general path: the same bytes."""
    opts = _home(tmp_path / "home", pg_db)
    items = random_stream(13, 160, big=(40, BATCH_TXN_ROWS + 60), big_share=0.25,
                          relations=0.0005)
    parts = chunks(items, 13, most=6000)
    TAKEN.update({False: 0, True: 0})
    LONGEST.update({False: 0, True: 0})
    general = _write(opts, pg_db, parts, tmp_path / "g" / "aa", batched=False)
    batched = _write(opts, pg_db, parts, tmp_path / "b" / "aa", batched=True)
    assert TAKEN[False] == 0 and TAKEN[True] > general[0].transactions // 2
    assert 100 < LONGEST[True] <= BATCH_TXN_ROWS
    assert record_bytes(tmp_path / "g" / "aa") == record_bytes(tmp_path / "b" / "aa")
    _same(general, batched)


@pytest.mark.parametrize("batched", [False, True])
def test_columns_write_the_arrow_batches_bytes(pg_db, tmp_path, batched):
    """The streamer's read hands its rows over as columns, without Arrow: the trail, the
    commit message and the capture's positions are those of the same rows as batches."""
    opts = _home(tmp_path / "home", pg_db)
    parts = chunks(random_stream(4, 600), 4)
    arrow = _write(opts, pg_db, parts, tmp_path / "a" / "aa", batched=batched)
    columns = _write(opts, pg_db, parts, tmp_path / "c" / "aa", batched=batched,
                     columns=True)
    assert arrow[0].transactions > 400
    assert record_bytes(tmp_path / "a" / "aa") == record_bytes(tmp_path / "c" / "aa")
    _same(arrow, columns)


@pytest.mark.heavy
def test_batches_across_a_rollover(pg_db, tmp_path):
    """A 1 MB file fills up inside a batch: that batch takes the general path, and the file
    rolls over where it would have."""
    opts = _home(tmp_path / "home", pg_db)
    parts = chunks(random_stream(7, 9000), 7, most=3000)
    general = _write(opts, pg_db, parts, tmp_path / "g" / "aa", batched=False)
    batched = _write(opts, pg_db, parts, tmp_path / "b" / "aa", batched=True)
    assert general[0].position[0] >= 1  # rolled over at least once
    assert record_bytes(tmp_path / "g" / "aa") == record_bytes(tmp_path / "b" / "aa")
    _same(general, batched)


def test_batches_in_a_12c_format(pg_db, tmp_path):
    """A 12c+ trail lays every record out again, one by one: each batch's transactions
    take the general path."""
    opts = _home(tmp_path / "home", pg_db)
    twelve = {"formatRelease": "12.3"}
    parts = chunks(random_stream(8, 400), 8)
    general = _write(opts, pg_db, parts, tmp_path / "g12" / "aa", batched=False,
                     sink_options=twelve)
    batched = _write(opts, pg_db, parts, tmp_path / "b12" / "aa", batched=True,
                     sink_options=twelve)
    assert record_bytes(tmp_path / "g12" / "aa") == record_bytes(tmp_path / "b12" / "aa")
    _same(general, batched)


def test_a_replayed_batch_skips_what_the_trail_has(pg_db, tmp_path):
    """After a crash the stream sends again what the trail may already hold: a batch whose
    first transactions are in the trail writes only the rest, as the general path does."""
    opts = _home(tmp_path / "home", pg_db)
    items = random_stream(11, 600)
    parts = chunks(items, 11)
    cut = len(items) // 2
    while items[cut][1] is None or items[cut][1][:1] != b"B":
        cut += 1
    first = chunks(items[:cut], 12)
    results = []
    for name, batched in (("g", False), ("b", True)):
        trail = tmp_path / name / "aa"
        _write(opts, pg_db, first, trail, batched=False)
        results.append(_write(opts, pg_db, parts, trail, batched=batched))
        assert results[-1][0].skipped > 100
    assert record_bytes(tmp_path / "g" / "aa") == record_bytes(tmp_path / "b" / "aa")
    _same(*results)
