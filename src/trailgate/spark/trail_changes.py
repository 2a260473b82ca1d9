"""``spark.readStream.format("trailchanges")``: the trail as change rows, for Replicat and Pump.

It is the ``trail`` source's reader (same offsets, whole transactions) with rows in trail
form, so nothing is lost between the trail and the apply layer or the ``trail`` sink; it
adds the group's routing rules (TABLE/MAP, TARGET renames) and, for the Replicat, compact
apply rows read as key partitions, so the apply needs no shuffle.  With a stream apply its
later batches reach no further than the group checkpoint (``appliedCheckpoint``).  Options:
docs/spark.md, "The trailchanges source".
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import InputPartition

from trailgate.changes.apply_rows import APPLY_SCHEMA_DDL, read_apply_rows
from trailgate.changes.range_rows import ROW_SCHEMA_DDL, read_change_rows
from trailgate.changes.routing import Router, ddl_keep
from trailgate.errors import TrailgateError
from trailgate.model import Change, TrailPosition
from trailgate.params.model import DdlRule
from trailgate.spark.batch_window import stop_requested
from trailgate.spark.key_split import (
    SPLIT_MIN_RECORDS,
    key_partitions,
    single_marker,
    write_scan_hint,
)
from trailgate.spark.trail_offsets import offset_of, position_of
from trailgate.spark.trail_options import TrailOptions, parse_options
from trailgate.spark.trail_source import TrailDataSource, TrailPartition, TrailStreamReader
from trailgate.trail.naming import TrailName

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadLimit

__all__ = ["APPLIED_OPTION", "KeyPartition", "TrailChangesDataSource", "applied_position",
           "header_key", "router_option"]

#: The option naming a group checkpoint file whose read position the source's batches may
#: not pass once a patient window's first batches are behind (module docstring).
APPLIED_OPTION = "appliedCheckpoint"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KeyPartition(InputPartition):
    """Key partition ``p`` of ``n`` of the transactions starting in ``[lower, upper)``."""

    trail: str
    lower: TrailPosition
    upper: TrailPosition
    p: int
    n: int


def router_option(rules: list[tuple[str, str | None]], excludes: list[str],
                  hop: str | None = None,
                  ddl: tuple[list[DdlRule], bool] | None = None) -> str:
    """The ``tables`` option for these rules (``hop``: the pump that reads, see
    :class:`~trailgate.changes.routing.Router`; ``ddl``: a pump's DDL rules, given)."""
    out: dict[str, Any] = {"rules": [list(r) for r in rules], "excludes": list(excludes),
                           "hop": hop}
    if ddl is not None and ddl[1]:
        out["ddl"] = [dataclasses.asdict(r) for r in ddl[0]]
    return json.dumps(out)


def applied_position(checkpoint_file: str) -> TrailPosition | None:
    """The read position of the group checkpoint in ``checkpoint_file``, None when it has
    none (or cannot be read now: the next look tries again)."""
    from trailgate.checkpoint import load_checkpoint

    try:
        ck = load_checkpoint(Path(checkpoint_file))
        return None if ck is None or not ck.read_position else position_of(ck.read_position)
    except (OSError, ValueError, TrailgateError) as exc:
        if checkpoint_file not in _UNREADABLE:  # said once: the next look tries again
            _UNREADABLE.add(checkpoint_file)
            log.warning("the group checkpoint %s cannot be read (%s): the batches wait "
                        "where they are until it can", checkpoint_file, exc)
        return None


_UNREADABLE: set[str] = set()  # checkpoint files already reported unreadable


def header_key(trail: str, seqno: int) -> list[Any] | None:
    """What a pump's output file must mirror of input file ``seqno``: compatibility level,
    URI, URI history, its encryption as ``[cipher, key name]`` or None, and its database
    details as a dict (None for the whole if the file or its header is not readable yet)."""
    from trailgate.trail.reader import read_header

    try:
        h = read_header(TrailName(trail).file(seqno))
    except (OSError, ValueError):
        return None
    enc = h.encryption
    return [h.compatibility, h.uri, list(h.uri_history),
            None if enc is None else [enc.cipher, enc.key_name], dataclasses.asdict(h.database)]


class TrailChangesDataSource(TrailDataSource):
    """The ``trailchanges`` format (streaming only)."""

    @classmethod
    def name(cls) -> str:
        return "trailchanges"

    def schema(self) -> str:
        return APPLY_SCHEMA_DDL if self.options.get("rows") == "apply" else ROW_SCHEMA_DDL

    def streamReader(self, schema: Any) -> TrailChangesStreamReader:
        o = self.options
        trail_opts = copy.copy(o)  # still case-insensitive: Spark keeps option names lower case
        trail_opts.pop("tables", None)  # here a routing rule set, not the trail source's list
        opts = parse_options(trail_opts, streaming=True)
        tables = json.loads(o.get("tables") or "{}")
        router = Router.of([(s, t) for s, t in tables.get("rules", [])],
                           tables.get("excludes", []), tables.get("hop"))
        ddl = ddl_keep(router, [DdlRule(**r) for r in tables.get("ddl", [])],
                       "ddl" in tables)
        same = o.get("sameHeader")
        reader = TrailChangesStreamReader(
            opts, router, ddl=ddl, hashes=o.get("hashes", "false").lower() == "true",
            stop_file=o.get("stopFile") or None,
            same_header=json.loads(same) if same else None,
            applied=o.get(APPLIED_OPTION) or None)
        if o.get("rows") == "apply":
            reader.apply_rows(int(o.get("keyPartitions") or 0), o.get("splitFile") or None,
                              int(o.get("splitMinRecords") or SPLIT_MIN_RECORDS))
        return reader


class TrailChangesStreamReader(TrailStreamReader):
    """The trail stream reader with change rows, a stop file and a header fence."""

    def __init__(self, options: TrailOptions, router: Router, *, hashes: bool,
                 stop_file: str | None, same_header: list[Any] | None,
                 ddl: Callable[[Change], bool] | None = None, applied: str | None = None):
        super().__init__(options)
        self.applied = applied  # the group checkpoint whose position batches may not pass
        self.router = router
        self.ddl = ddl
        self.hashes = hashes
        self.stop_file = stop_file
        self.same_header = same_header
        self.apply = False
        self.key_partitions = 0
        self.split_file: str | None = None
        self.split_min = SPLIT_MIN_RECORDS

    def apply_rows(self, key_partitions: int, split_file: str | None, split_min: int) -> None:
        """Read apply rows; with ``key_partitions``, each batch as key partitions."""
        self.apply = True
        self.key_partitions = key_partitions
        self.split_file = split_file
        self.split_min = split_min
        if key_partitions:
            self._mark = single_marker(self.router)

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        begin = position_of(start) if start is not None else position_of(self.initialOffset())
        if self.stopped():
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
        end = super().latestOffset(start, limit)
        if self.split_file and self._state is not None and self._state.boundary > begin:
            write_scan_hint(self.split_file, begin, self._state)
        return end

    def _reach(self, begin: TrailPosition, max_rows: int | None
               ) -> tuple[TrailPosition, bool]:
        """With ``appliedCheckpoint``, once the patient window's first batches are behind
        (the first starts the stream apply): to the last boundary the group checkpoint
        covers, without the record bound.  The stream apply made that much durable in the
        target, so Spark's offsets never pass it and the batch's sync has nothing to wait
        for; the bound is for batches that carry their changes."""
        window = self._window
        if self.applied is None or window is None or window.eager_now or self._target_set:
            return super()._reach(begin, max_rows)
        applied = applied_position(self.applied)
        if applied is None or applied <= begin:
            return begin, False
        saved = self._target
        self._target = applied if saved is None else min(saved, applied)
        try:
            return super()._reach(begin, None)
        finally:
            self._target = saved

    def stopped(self) -> bool:
        return stop_requested(self.stop_file)

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

    # -- key partitions ------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if not self.key_partitions:
            return super().partitions(start, end)
        lower, upper = position_of(start), position_of(end)
        if lower >= upper:
            return []
        n = self._split(lower, upper)
        return [KeyPartition(self.options.trail, lower, upper, p, n) for p in range(n)]

    def _split(self, lower: TrailPosition, upper: TrailPosition) -> int:
        """The batch's key-partition count (recorded, or decided and recorded)."""
        state = self._state if self._scan_start == lower else None
        return key_partitions(self.options.trail, lower, upper,
                              partitions=self.key_partitions, split_min=self.split_min,
                              router=self.router, path=self.split_file, scanned=state)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        o = self.options
        if isinstance(partition, KeyPartition):
            return read_apply_rows(partition.trail, partition.lower, partition.upper,
                                   router=self.router, part=(partition.p, partition.n),
                                   batch_rows=o.batch_rows)
        assert isinstance(partition, TrailPartition)
        if self.apply:
            return read_apply_rows(partition.trail, partition.lower, partition.upper,
                                   router=self.router, batch_rows=o.batch_rows)
        return read_change_rows(partition.trail, partition.lower, partition.upper,
                                router=self.router, hashes=self.hashes,
                                batch_rows=o.batch_rows, ddl=self.ddl)
