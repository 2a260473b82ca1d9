"""One run of a Data Pump: the input trail streamed into the output trail, exactly once.

A ``trailchanges`` query whose micro-batches the trail sink's writer appends
(:mod:`trailgate.pump.batch`).  Output files mirror the input's header unless the output
names a ``FORMAT RELEASE`` (the pump then converts); a query writes files of one header, so
an input file with another header ends the query, and the next begins a new output file
(seed 002).  With RMTHOST the output is mirrored to a collector before every checkpoint,
at start and at the end.  docs/pump.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from typing import Any

from trailgate.checkpoint import TableStats
from trailgate.collector.client import TrailMirror
from trailgate.errors import NetworkError, SourceError, TrailgateError, marked
from trailgate.home import Home
from trailgate.model import TrailPosition
from trailgate.process.query import query_failure, watch
from trailgate.process.runtime import GroupProcess
from trailgate.pump.config import PumpConfig, load_pump_config
from trailgate.spark.trail_changes import header_key
from trailgate.trail.naming import TrailName
from trailgate.trail.release import encryption_line

__all__ = ["input_header", "run_pump"]

TITLE = "trailgate Data Pump"
_ROLL = "the input trail's file header changed"


def input_header(trail: str, position: TrailPosition) -> list[Any] | None:
    """The header the output must mirror for input read from ``position``: that of the file
    holding the next complete transaction (the position's file, else the next one)."""
    from trailgate.spark.trail_offsets import scan_boundary

    seqs = [s for s in TrailName(trail).sequence_numbers() if s >= position.seqno]
    if not seqs:
        return None
    if seqs[0] == position.seqno:
        more, _, _ = scan_boundary(trail, position,
                                   limit=TrailPosition(position.seqno + 1, 0))
        if more > position or len(seqs) == 1:
            return header_key(trail, position.seqno)
        return header_key(trail, seqs[1])
    return header_key(trail, seqs[0])


def _fenced(trail: str, position: TrailPosition, header: list[Any]) -> bool:
    """True when everything before the next differently-headed input file is written."""
    from trailgate.spark.trail_offsets import scan_boundary

    for seq in TrailName(trail).sequence_numbers():
        if seq <= position.seqno:
            continue  # the position's own file: the one this query was started for
        key = header_key(trail, seq)
        if key is not None and key != header:
            boundary, _, _ = scan_boundary(trail, position, limit=TrailPosition(seq, 0))
            return boundary <= position
    return False


class _Pump:
    """The driver: one query per output-header, a new run id (new output file) each."""

    def __init__(self, home: Home, cfg: PumpConfig, proc: GroupProcess, args: Any):
        self.home, self.cfg, self.proc, self.args = home, cfg, proc, args
        self.stop_file = home.dirchk / f"{cfg.group}.stop"
        self.spark_dir = home.spark_checkpoint_dir(cfg.group) / "spark"
        self.start_stats = self._stats()
        self.mirror = TrailMirror(cfg.trail, cfg.remote, report=self._network_event) \
            if cfg.remote is not None else None

    def _network_event(self, level: str, message: str) -> None:
        if level == "WARNING":
            self.proc.warn(message, code="OGG-01223")  # GoldenGate's TCP/IP error
        else:
            self.proc.event(level, "OGG-01229", f"EXTRACT {self.cfg.group}: {message}")

    def sync_remote(self) -> None:
        """Bring the collector's trail level with the staging trail (retrying with
        backoff), then drop staging files the collector and the checkpoint are past."""
        if self.mirror is None:
            return
        self.mirror.sync_retrying(lambda: self.proc.stop_requested)
        self._purge_staging()

    def sync_in_batch(self) -> None:
        """:meth:`sync_remote` from a micro-batch: its error marked for the driver."""
        try:
            self.sync_remote()
        except TrailgateError as exc:  # a network failure, or a TLS/credential setting
            raise type(exc)(marked(str(exc))) from None

    def _purge_staging(self) -> None:

        assert self.mirror is not None
        if self.cfg.keep_staging:
            return
        ck = self.home.checkpoints.load(self.cfg.group, "EXTRACT")
        if ck is None or ck.write_position is None or self.mirror.remote_last is None:
            return
        keep = min(ck.write_position.seqno, self.mirror.remote_last)
        trail = TrailName(self.cfg.trail)
        for seq in trail.sequence_numbers():
            if seq < keep:
                trail.file(seq).unlink(missing_ok=True)

    def position(self) -> TrailPosition:
        ck = self.home.checkpoints.load(self.cfg.group, "EXTRACT")
        pos = ck.read_position if ck is not None and ck.read_position else self.cfg.begin
        return TrailPosition(int(pos.get("seqno", 0)), int(pos.get("rba", 0)))

    def _stats(self) -> dict[str, TableStats]:
        ck = self.home.checkpoints.load(self.cfg.group, "EXTRACT")
        return {t: TableStats(**s.to_json()) for t, s in (ck.stats if ck else {}).items()}

    def sink_options(self, run_id: str, header: list[Any]) -> dict[str, str]:
        """The output's options: the input's format (CompatibilityLevel, and byte order as
        GoldenGate's pump keeps it), unless the output names a FORMAT RELEASE; the input's
        database details (the source a 12c+ TDR's types belong to); the input's
        encryption, unless DECRYPTTRAIL or the output's own ENCRYPTTRAIL says otherwise (an
        encrypted trail passes through encrypted)."""
        from trailgate.trail.release12 import input_byte_order

        compatibility, uri, history, encryption, database = header
        options = {"path": self.cfg.trail, "trailLabel": self.cfg.trail_label,
                   "megabytes": str(self.cfg.megabytes), "home": self.cfg.home,
                   "group": self.cfg.group, "runId": run_id, "producer": self.cfg.group,
                   "uriHistory": json.dumps([*history, uri]),
                   "compatibility": str(compatibility)}
        if self.cfg.named_as:
            options["namedAs"] = self.cfg.named_as
        order = input_byte_order(self.cfg.source, self.position().seqno)
        options["database"] = json.dumps(database)
        if order is not None and compatibility > 3:
            options["trailByteOrder"] = order
        if encryption is not None and self.cfg.params.decrypt is None:
            options["encryptTrail"], options["keyName"] = encryption
        return {**options, **self.cfg.format_options}

    def start(self, spark: Any, run_id: str, header: list[Any]) -> Any:
        from trailgate.changes.routing import ddl_keep
        from trailgate.pump.batch import PumpBatch
        from trailgate.spark.batch_window import WINDOW_OPTION, ZERO_TRIGGER, window_ms
        from trailgate.spark.trail_changes import TrailChangesDataSource, router_option
        from trailgate.spark.trail_sink import SinkOptions

        spark.dataSource.register(TrailChangesDataSource)
        pos = self.position()
        reader = (spark.readStream.format("trailchanges").option("path", self.cfg.source)
                  .option("startingPosition", f"{pos.seqno}:{pos.rba}")
                  .option("stopFile", str(self.stop_file))
                  .option("sameHeader", json.dumps(header))
                  .option("tables", router_option(self.cfg.rules, self.cfg.excludes,
                                                  self.cfg.group,
                                                  (self.cfg.params.ddl,
                                                   self.cfg.params.ddl_given))))
        if not self.args.once:  # the source keeps the batch window (spark.batch_window)
            seconds = self.cfg.params.batch_seconds(self.args.trigger, patient=False)
            reader = reader.option(WINDOW_OPTION, window_ms(seconds))
        sink = SinkOptions.parse(self.sink_options(run_id, header), run_id)
        router = self.cfg.router()
        writer = (reader.load().writeStream
                  .foreachBatch(PumpBatch(self.cfg.source, router, sink, self.spark_dir,
                                          ddl_keep(router, self.cfg.params.ddl,
                                                   self.cfg.params.ddl_given),
                                          self.sync_in_batch if self.mirror else None))
                  .option("checkpointLocation", str(self.spark_dir))
                  .queryName(f"pump_{self.cfg.group.lower()}"))
        if self.args.once:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=ZERO_TRIGGER)
        return writer.start()

    def finish(self, run_id: str, header: list[Any]) -> None:
        """Complete the output file this query wrote (FileSize, LastCSN in its header)."""
        from trailgate.spark.trail_sink import SinkOptions, finish_run

        finish_run(SinkOptions.parse(self.sink_options(run_id, header), run_id))
        try:
            self.sync_remote()
        except NetworkError as exc:
            self.proc.warn(f"{exc}; the collector is behind: the next run sends the rest")

    def wait_for_input(self) -> list[Any] | None:
        """The input header to mirror; waits (stoppably) for the input's first file."""
        warned = False
        while not self.proc.stop_requested:
            header = input_header(self.cfg.source, self.position())
            if header is not None:
                return header
            if not warned:
                self.proc.warn(f"input trail {self.cfg.source_label} has no file yet; "
                               f"waiting for it")
                warned = True
            time.sleep(1.0)
        return None

    def run(self, spark: Any) -> str:
        batches_left = self.args.max_batches
        self.sync_remote()  # what a previous run wrote and did not send
        while True:
            header = self.wait_for_input()
            if header is None:
                return self.proc.stop_reason or "stop requested"
            run_id = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
            self.stop_file.unlink(missing_ok=True)
            query = self.start(spark, run_id, header)
            self.proc.started()
            last_look = [0.0]

            def idle(header: list[Any] = header, last_look: list[float] = last_look
                     ) -> str | None:
                now = time.monotonic()
                if now - last_look[0] < 2.0:
                    return None
                last_look[0] = now
                return _ROLL if _fenced(self.cfg.source, self.position(), header) else None

            try:
                reason = watch(self.proc, query, stop_file=self.stop_file,
                               max_batches=batches_left, stop_timeout=600.0,
                               report_every=60.0, progress=self.progress_line, idle=idle)
            finally:
                self.stop_file.unlink(missing_ok=True)
                self.finish(run_id, header)
            if reason == "the query ended" and _fenced(self.cfg.source, self.position(),
                                                       header):
                reason = _ROLL
            if reason != _ROLL:
                if self.args.once and reason == "the query ended":
                    return "everything in the input trail written (--once)"
                return reason
            self.proc.event("INFO", "OGG-01026", f"EXTRACT {self.cfg.group}: {_ROLL}; "
                            f"rolling over to a new output file")

    def progress_line(self) -> str:
        total = sum(s.total for s in self._stats().values()) - sum(
            s.total for s in self.start_stats.values())
        return f"{total} records written to {self.cfg.trail_label} in this run"

    def final_lines(self) -> list[str]:
        out = [f"Output to {self.cfg.trail_label}:"]
        rows = []
        for table, s in sorted(self._stats().items()):
            base = self.start_stats.get(table, TableStats())
            d = TableStats(**{k: v - getattr(base, k) for k, v in s.to_json().items()})
            if d.total or d.discards:
                rows.append((table, d))
        if not rows:
            out.append("  No records written in this run.")
        for table, d in rows:
            out += ["", f"From Table {table}:",
                    f"       #                   inserts:  {d.inserts:>10}",
                    f"       #                   updates:  {d.updates:>10}",
                    f"       #                   deletes:  {d.deletes:>10}",
                    f"       #                 truncates:  {d.truncates:>10}"]
        return out


def _echo(proc: GroupProcess, cfg: PumpConfig) -> None:
    report = proc.report
    assert report is not None
    proc.echo_parameters(cfg.params.files or [cfg.params.path])
    report.section("Input and output")
    report.line(f"Input trail:      {cfg.source_label} ({cfg.source})")
    report.line(f"Output trail:     {cfg.trail_label} ({cfg.trail}, {cfg.megabytes} MB files)")
    report.line(f"Mode:             {'PASSTHRU' if cfg.params.passthru else 'NOPASSTHRU'}")
    report.line(f"Encryption:       {encryption_line(cfg.params, cfg.trail_label, pump=True)}")
    if cfg.remote is not None:
        r = cfg.remote
        security = ("TLS" + (" with a client certificate" if r.tls.cert else "")
                    if r.tls else "plain TCP")
        report.line(f"RMTHOST:          {r.host}, PORT {r.port} ({security}"
                    f"{', token' if r.token else ''}{', COMPRESS zlib' if r.compress else ''})")
        report.line(f"Staging trail:    {cfg.trail} (mirrored to the collector)")
    report.line()


def run_pump(home: Home, name: str, args: argparse.Namespace, *, spark: Any = None) -> int:
    """Run the data pump ``name`` in the foreground until it is stopped."""
    from trailgate.spark import stop_spark
    from trailgate.trail.keys import use_home

    use_home(home.path)  # an encrypted input outside the home is read with its keys

    with GroupProcess(home, "EXTRACT", name, title=TITLE) as proc, proc.report_log():
        cfg = load_pump_config(home, name)
        _echo(proc, cfg)
        pump = _Pump(home, cfg, proc, args)
        own = spark is None
        if own:
            spark = proc.start_spark(cfg.params.spark.master, cfg.params.spark.conf)
        try:
            reason = pump.run(spark)
        except TrailgateError:
            raise
        except Exception as exc:  # py4j/Spark errors: a message, not a Java stack
            raise query_failure(exc, SourceError) from None
        finally:
            if own:
                stop_spark()
        assert proc.report is not None
        proc.report.section("Run Time Statistics")
        for line in pump.final_lines():
            proc.report.line(line)
        proc.stopped(reason)
    return 0
