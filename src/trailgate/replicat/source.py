"""``spark.readStream.format("trailchanges")``: the trail as change rows, for Replicat and Pump.

Same offsets, batch boundaries and partitions as the ``trail`` source (``{"seqno", "rba"}``,
whole transactions, one partition per file: it *is* that reader), but rows in trail form
(:mod:`trailgate.replicat.rows`) so nothing is lost between the trail and the apply layer or
the ``trail`` sink.  Extra options:

* ``tables``: JSON ``{"rules": [[pattern, target-or-null], …], "excludes": […]}`` —
  which tables to keep and how to rename them (a pump's TABLE … TARGET);
* ``hashes``: ``true`` fills ``key_hash`` (Replicat partitioning);
* ``stopFile``: while this file exists no new batch is planned, so a stopping group lets
  the batch in flight finish and starts no other;
* ``sameHeader``: JSON ``[compatibility, uri, [uri history…]]`` — a batch never reaches
  into a file whose header differs (a pump restarts its output file there).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trailgate.model import TrailPosition
from trailgate.replicat.rows import ROW_SCHEMA_DDL, Router, read_change_rows
from trailgate.spark.trail_offsets import offset_of, position_of
from trailgate.spark.trail_options import TrailOptions, parse_options
from trailgate.spark.trail_source import TrailDataSource, TrailPartition, TrailStreamReader
from trailgate.trail.naming import TrailName

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import InputPartition
    from pyspark.sql.streaming.datasource import ReadLimit

__all__ = ["TrailChangesDataSource", "header_key", "router_option"]


def router_option(rules: list[tuple[str, str | None]], excludes: list[str]) -> str:
    """The ``tables`` option for these rules."""
    return json.dumps({"rules": [list(r) for r in rules], "excludes": list(excludes)})


def header_key(trail: str, seqno: int) -> list[Any] | None:
    """What a pump's output file must mirror of input file ``seqno``: compatibility level,
    URI and URI history (None if the file or its header is not readable yet)."""
    from trailgate.trail.reader import read_header

    try:
        h = read_header(TrailName(trail).file(seqno))
    except (OSError, ValueError):
        return None
    return [h.compatibility, h.uri, list(h.uri_history)]


class TrailChangesDataSource(TrailDataSource):
    """The ``trailchanges`` format (streaming only)."""

    @classmethod
    def name(cls) -> str:
        return "trailchanges"

    def schema(self) -> str:
        return ROW_SCHEMA_DDL

    def streamReader(self, schema: Any) -> TrailChangesStreamReader:
        opts = parse_options({k: v for k, v in self.options.items() if k != "tables"},
                             streaming=True)
        tables = json.loads(self.options.get("tables") or "{}")
        router = Router.of([(s, t) for s, t in tables.get("rules", [])],
                           tables.get("excludes", []))
        same = self.options.get("sameHeader")
        return TrailChangesStreamReader(
            opts, router, hashes=self.options.get("hashes", "false").lower() == "true",
            stop_file=self.options.get("stopFile") or None,
            same_header=json.loads(same) if same else None)


class TrailChangesStreamReader(TrailStreamReader):
    """The trail stream reader with change rows, a stop file and a header fence."""

    def __init__(self, options: TrailOptions, router: Router, *, hashes: bool,
                 stop_file: str | None, same_header: list[Any] | None):
        super().__init__(options)
        self.router = router
        self.hashes = hashes
        self.stop_file = stop_file
        self.same_header = same_header

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        begin = position_of(start) if start is not None else position_of(self.initialOffset())
        if self.stop_file and os.path.exists(self.stop_file):
            return offset_of(begin)
        if self.same_header is not None:
            fence = self._fence(begin)
            if fence is not None:
                if fence <= begin:
                    return offset_of(begin)
                saved = (self._target, self._target_set)
                if self._target is None or fence < self._target:
                    self._target, self._target_set = fence, True
                try:
                    return super().latestOffset(start, limit)
                finally:
                    self._target, self._target_set = saved
        return super().latestOffset(start, limit)

    def _fence(self, begin: TrailPosition) -> TrailPosition | None:
        """The start of the first file after ``begin``'s whose header differs from the one
        this query mirrors (``begin``'s own file is the one the query was started for, or
        holds nothing more)."""
        for seq in TrailName(self.options.trail).sequence_numbers():
            if seq <= begin.seqno:
                continue
            key = header_key(self.options.trail, seq)
            if key is not None and key != self.same_header:
                return TrailPosition(seq, 0)
        return None

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TrailPartition)
        return read_change_rows(partition.trail, partition.lower, partition.upper,
                                router=self.router, hashes=self.hashes,
                                batch_rows=self.options.batch_rows)
