"""The Oracle redo dump Extract's work: ``ALTER SYSTEM DUMP LOGFILE`` traces to change rows.

Split in two so Spark can run the slow half in parallel: :func:`parse_file` parses one dump
into transaction-assembly events cached under ``dirtmp/GROUP/oracle/`` (a task per file);
:func:`assemble_rows` feeds the cached events in log order into an Assembler resumed from
the group checkpoint and yields change rows for the ``trail`` sink.  Files are taken in
name order once complete or quiet.  Configuration and running: docs/oracle-dumps.md.
"""

from __future__ import annotations

import dataclasses
import getpass
import hashlib
import json
import os
import pickle
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain, pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trailgate.errors import ConfigError, SourceError
from trailgate.extract.ddl import ExtractDdl
from trailgate.extract.tables import TableRules
from trailgate.extract.tokens import GroupEnv, check_tokens
from trailgate.home import GroupInfo, Home
from trailgate.model import datetime_from_julian
from trailgate.params import ExtractParams, parse_globals, parse_group_params
from trailgate.trail.keys import require_keys
from trailgate.trail.release import sink_format_options

if TYPE_CHECKING:
    import pyarrow as pa

    from trailgate.capture.oracle.assembly import RecordEvents
    from trailgate.capture.oracle.rowchanges import OnUnknown

__all__ = ["DUMP_SUFFIXES", "QUIET_SECONDS", "FileSummary", "OracleDumpConfig",
           "assemble_rows", "is_cached", "is_oracle_group", "list_dumps", "load_oracle_config",
           "parse_file", "ready_dumps"]

DUMP_SUFFIXES = (".dmp", ".trc")
#: A dump without ``END OF REDO DUMP`` is taken once it has not changed for this long.
QUIET_SECONDS = 5.0
TITLE = "trailgate Capture for Oracle redo log dumps"
_END = b"END OF REDO DUMP"
_CHUNK = 2000  # records per pickled chunk of a file's events


# -- configuration --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class OracleDumpConfig:
    """What one run needs, resolved once on the driver (plain data: it pickles to tasks)."""

    group: str
    home: str
    dumpdir: str
    dictionary: str
    on_unknown: OnUnknown
    trail: str
    trail_label: str
    megabytes: int
    rules: TableRules
    cache_dir: str
    spill_dir: str
    begin_scn: int | None
    params: ExtractParams
    info: GroupInfo
    format_options: dict[str, str] = field(default_factory=dict)  # FORMAT RELEASE, for the sink
    ggschema: str | None = None  # GLOBALS GGSCHEMA: inserts into its GGS_MARKER are DDL


def is_oracle_group(home: Home, info: GroupInfo | None) -> bool:
    """Whether ``trailgate run extract`` should run this group as an Oracle dump Extract:
    registered with DUMPDIR, or its parameter file says TRANLOGOPTIONS DUMPDIR."""
    if info is None or info.kind != "EXTRACT":
        return False
    if info.source == "DUMPDIR":
        return True
    if info.source != "TRANLOG":
        return False
    try:
        params = parse_group_params(home, info.name)
    except ConfigError:
        return False  # the PostgreSQL Extract reports it
    return isinstance(params, ExtractParams) and bool(params.tranlog and params.tranlog.dumpdir)


def load_oracle_config(home: Home, group: str, *, process_id: int | None = None
                       ) -> OracleDumpConfig:
    """Read and check the group's registry entry and parameter file (ConfigErrors name the
    file, line and fix)."""
    from trailgate.extract.postgres.config import _trail

    info = home.require_group(group, "EXTRACT")
    params = parse_group_params(home, info.name)
    if not isinstance(params, ExtractParams):
        raise ConfigError("the parameter file is not an Extract's (it must start with "
                          "EXTRACT)", path=params.path)
    opts = params.tranlog
    dumpdir = (opts.dumpdir if opts and opts.dumpdir else None) or info.source_path
    if not dumpdir:
        raise ConfigError("the Extract reads Oracle redo dumps but names no directory: add "
                          "TRANLOGOPTIONS DUMPDIR dir, DICTIONARY file", path=params.path)
    if not opts or not opts.dictionary:
        raise ConfigError("the Oracle dump Extract needs the object dictionary: add "
                          "TRANLOGOPTIONS DICTIONARY file (docs/oracle-dumps.md)",
                          path=params.path)
    dump_path = home.resolve(dumpdir)
    if not dump_path.is_dir():
        raise ConfigError(f"TRANLOGOPTIONS DUMPDIR {dumpdir}: no such directory "
                          f"({dump_path})", path=params.path)
    dictionary = home.resolve(opts.dictionary)
    if not dictionary.is_file():
        raise ConfigError(f"TRANLOGOPTIONS DICTIONARY {opts.dictionary}: no such file "
                          f"({dictionary})", path=params.path)
    if not params.tables:
        raise ConfigError("the Extract captures nothing: add TABLE owner.table; (or "
                          "owner.*)", path=params.path)
    for spec in params.tables:
        if spec.where is not None or spec.target is not None:
            raise ConfigError(f"TABLE {spec.name}: WHERE and TARGET are not supported in a "
                              "primary Extract", path=spec.path, line=spec.line)
        check_tokens(spec)
    trail, label, megabytes = _trail(home, info, params)
    require_keys(home.path, params.encrypt.values())
    env = GroupEnv(group=info.name, description=info.description or "",
                   hostname=socket.gethostname(), os_user=getpass.getuser(),
                   process_id=process_id or os.getpid())
    begin = info.begin if isinstance(info.begin, dict) else None
    work = Path(home.dirtmp) / info.name.lower()
    return OracleDumpConfig(
        group=info.name, home=str(home.path), dumpdir=str(dump_path),
        dictionary=str(dictionary), on_unknown="skip" if opts.on_unknown == "SKIP" else "stop",
        trail=trail, trail_label=label, megabytes=megabytes,
        rules=TableRules(params.tables, params.table_excludes, env),
        cache_dir=str(work / "oracle"), spill_dir=str(work),
        begin_scn=int(begin["scn"]) if begin and "scn" in begin else None,
        params=params, info=info, ggschema=parse_globals(home.globals_file).ggschema,
        format_options=sink_format_options(params.trail_options.get(label),
                                           params.encrypt.get(label)))


# -- the dump directory ---------------------------------------------------------------------
def list_dumps(dumpdir: str) -> list[str]:
    """Dump files of the directory in name order (= log sequence order, by convention)."""
    try:
        names = sorted(e.name for e in os.scandir(dumpdir)
                       if e.is_file() and e.name.lower().endswith(DUMP_SUFFIXES))
    except OSError as exc:
        raise SourceError(f"cannot list the dump directory {dumpdir}: {exc.strerror}") from None
    return [os.path.join(dumpdir, n) for n in names]


def _complete(path: str, now: float) -> bool:
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            f.seek(max(0, st.st_size - 4096))
            tail = f.read()
    except OSError:
        return False
    return _END in tail or now - st.st_mtime >= QUIET_SECONDS


def ready_dumps(dumpdir: str, *, wait: bool = True) -> list[str]:
    """The dump files that can be read, in name order, up to the first still being written
    (a later one must wait: files are taken in order).  ``wait=False`` (``--once``): every
    file present, as it is."""
    now = time.time()
    out = []
    for path in list_dumps(dumpdir):
        if wait and not _complete(path, now):
            break
        out.append(path)
    return out


# -- parsing one file (a Spark task's work) -----------------------------------------------
@dataclass(slots=True)
class FileSummary:
    """One parsed dump: where its events are cached and what it held."""

    path: str
    thread: int
    seq: int
    records: int
    changes: int
    events: str  # the cache file (pickled chunks of RecordEvents)
    warnings: list[str] = field(default_factory=list)


def _cache_key(path: str) -> str:
    st = os.stat(path)
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]
    return f"{Path(path).name}.{digest}.{st.st_size}.{st.st_mtime_ns}"


def parse_file(cfg: OracleDumpConfig, path: str) -> FileSummary:
    """Parse ``path`` into assembly events, or return the cached result for this exact file
    (same name, size and modification time).  SourceErrors name file, line and RBA."""
    from trailgate.capture.oracle.assembly import record_events
    from trailgate.capture.oracle.dictionary import Dictionary
    from trailgate.capture.oracle.dumpparser import parse_dump
    from trailgate.capture.oracle.rowchanges import RowBuilder

    cache = Path(cfg.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    try:
        key = _cache_key(path)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read the dump file: {exc.strerror}") from None
    meta = cache / f"{key}.json"
    events = cache / f"{key}.events"
    if meta.exists() and events.exists():
        try:
            return FileSummary(**json.loads(meta.read_text("utf-8")))
        except (ValueError, TypeError):
            pass  # damaged: parse again
    warnings: list[str] = []
    builder = RowBuilder(Dictionary.load(cfg.dictionary), cfg.on_unknown,
                         warn=warnings.append)
    tmp = events.with_suffix(f".tmp{os.getpid()}")
    first: RecordEvents | None = None
    records = changes = 0
    try:
        with open(tmp, "wb") as out:
            chunk: list[RecordEvents] = []
            for rec in parse_dump(path):
                ev = record_events(rec, builder)
                first = first or ev
                records += 1
                changes += sum(len(op[4]) for op in ev.ops if op[0] == 1)
                chunk.append(ev)
                if len(chunk) >= _CHUNK:
                    pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
                    chunk = []
            if chunk:
                pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
        if first is None:
            raise SourceError(f"{path}: no REDO RECORD found; is this an ALTER SYSTEM DUMP "
                              f"LOGFILE trace?")
        os.replace(tmp, events)
    finally:
        tmp.unlink(missing_ok=True)
    summary = FileSummary(path=path, thread=first.thread, seq=first.rba.seq, records=records,
                          changes=changes, events=str(events), warnings=warnings)
    meta.write_text(json.dumps(dataclasses.asdict(summary)), "utf-8")
    return summary


def is_cached(cfg: OracleDumpConfig, path: str) -> bool:
    """Whether ``path`` (as it is now) was parsed already."""
    try:
        key = _cache_key(path)
    except OSError:
        return False
    cache = Path(cfg.cache_dir)
    return (cache / f"{key}.json").exists() and (cache / f"{key}.events").exists()


def load_events(summary: FileSummary) -> Iterator[RecordEvents]:
    try:
        f = open(summary.events, "rb")  # noqa: SIM115 - closed below, generator-owned
    except OSError as exc:
        raise SourceError(f"{summary.path}: its parsed events {summary.events} are gone "
                          f"({exc.strerror}); they are parsed again at the next start"
                          ) from None
    with f:
        while True:
            try:
                chunk = pickle.load(f)
            except EOFError:
                return
            yield from chunk


def forget(summary: FileSummary) -> None:
    """Drop a file's cached events (its summary stays: the file needs no parsing again)."""
    Path(summary.events).unlink(missing_ok=True)


# -- assembling and emitting --------------------------------------------------------------
def _iso(julian: int | None) -> str | None:
    if julian is None:
        return None
    return datetime_from_julian(julian).isoformat(timespec="microseconds")


@dataclass(slots=True)
class AssemblyResult:
    """What a pass over the dumps did (for the report and the summary)."""

    transactions: int = 0
    records: int = 0
    rolled_back: int = 0
    warnings: list[str] = field(default_factory=list)


def assemble_rows(cfg: OracleDumpConfig, summaries: list[FileSummary],
                  resume: dict[str, Any] | None, *, batch_rows: int = 10_000,
                  result: AssemblyResult | None = None) -> Iterator[pa.RecordBatch]:
    """Change rows of the transactions committed in ``summaries`` (all dumps up to the
    batch's end, in name order), resumed from ``resume`` (the group checkpoint's
    ``assembly``), then the position row.  A dump of a log older than one captured that
    was not captured itself is an error (it arrived late); a missing log between two dumps
    is a warning; a missing log the restart needs is an error."""
    from trailgate.capture.oracle.assembly import Assembler, merge_threads
    from trailgate.capture.oracle.capture import files_by_thread
    from trailgate.capture.oracle.dictionary import Dictionary
    from trailgate.changes.change_rows import ChangeRowBuilder

    result = result if result is not None else AssemblyResult()
    resume_doc = (resume or {}).get("assembly")
    captured = _captured(resume)
    _check_sequences(summaries, captured)
    by_path = {s.path: s for s in summaries}
    threads = files_by_thread([s.path for s in summaries],
                              {s.path: (s.thread, s.seq) for s in summaries})
    asm = Assembler(resume=resume_doc, warn=result.warnings.append, spill_dir=cfg.spill_dir)
    start_seq = {t: rba.seq for t, rba in asm.start.items()}
    needed = {t: [by_path[p] for p in paths if by_path[p].seq >= start_seq.get(t, -1)]
              for t, paths in threads.items()}
    for t, seq in start_seq.items():
        if needed.get(t) and needed[t][0].seq != seq:
            raise SourceError(f"the dump of log sequence {seq} of thread {t} is missing from "
                              f"{cfg.dumpdir}: the Extract restarts there (oldest open "
                              f"transaction or last read position); put it back")
    for t, lst in needed.items():
        for a, b in pairwise(lst):
            if b.seq != a.seq + 1:
                result.warnings.append(f"log sequences {a.seq + 1}…{b.seq - 1} of thread {t} "
                                       f"are not in {cfg.dumpdir} (between {a.path} and "
                                       f"{b.path}): their changes are not captured")
    for s in (x for lst in needed.values() for x in lst):
        result.warnings.extend(s.warnings)

    def stream(files: list[FileSummary]) -> Iterator[RecordEvents]:
        for s in files:
            yield from load_events(s)

    tables = Dictionary.load(cfg.dictionary).tabledefs()
    rows = ChangeRowBuilder()
    defined: set[str] = set()
    rules = cfg.rules
    ddl = (ExtractDdl(cfg.ggschema, cfg.params.ddl, cfg.params.ddl_given, rules,
                      report=cfg.params.ddl_options.report) if cfg.ggschema else None)
    try:
        for ev in merge_threads({t: stream(f) for t, f in needed.items()}):
            for txn in asm.feed(ev):
                if cfg.begin_scn is not None and txn.csn < cfg.begin_scn:
                    continue
                result.transactions += 1
                yield from _emit(txn, tables, rules, rows, defined, batch_rows, ddl)
        asm.finish()
        result.records += asm.records
        result.rolled_back += len(asm.rolled_back)
        position = _position(asm, summaries, captured)
        rows.add_position(position)
        yield rows.take()
    finally:
        asm.close()
    for paths in threads.values():  # files wholly before the restart point: never read again
        for path in paths:
            s = by_path[path]
            if s.seq < start_seq.get(s.thread, -1):
                forget(s)


def _emit(txn: Any, tables: dict[str, Any], rules: TableRules, rows: Any, defined: set[str],
          batch_rows: int, ddl: ExtractDdl | None = None) -> Iterator[pa.RecordBatch]:
    count = len(txn.changes)
    pending = None
    for index, change in enumerate(chain(txn.changes, [None])):
        if ddl is not None and change is not None and ddl.is_ddl_table(change.table):
            ddl.add(change, tables.get(change.table))  # GGS_MARKER rows: DDL, not DML
            continue
        outs: list[Any] = []
        if ddl is not None and ddl.pending():
            for got in ddl.take(txn.csn):
                for note in got.notes:
                    rows.add_note(note, txn.csn, txn.xid)
                if got.change is not None:
                    outs.append(got.change)
        if change is not None:
            table = tables.get(change.table)
            out = rules.apply(change, table, txn.csn, txn.xid, txn.commit_time, index, count)
            if out is not None:
                if table is not None and change.table not in defined:
                    rows.add_table(table, txn.csn, txn.xid)
                    defined.add(change.table)
                outs.append(out)
        for out in outs:
            if pending is not None:
                rows.add_change(pending, txn.csn, txn.xid, False)
                if rows.full(batch_rows):
                    yield rows.take()
            pending = out
    if pending is not None:
        rows.add_change(pending, txn.csn, txn.xid, True)
        if rows.full(batch_rows):
            yield rows.take()


def _captured(resume: dict[str, Any] | None) -> dict[int, list[list[int]]]:
    """Log sequences captured so far per thread, as ``[low, high]`` ranges."""
    doc = (resume or {}).get("seqs") or {}
    return {int(t): [[int(lo), int(hi)] for lo, hi in ranges] for t, ranges in doc.items()}


def _check_sequences(summaries: list[FileSummary], captured: dict[int, list[list[int]]]
                     ) -> None:
    """A dump of a log older than one already captured, that was not captured itself,
    arrived late: its transactions would be missed, so stop."""
    for s in summaries:
        ranges = captured.get(s.thread, [])
        if not ranges or any(lo <= s.seq <= hi for lo, hi in ranges):
            continue
        high = max(hi for _, hi in ranges)
        if s.seq < high:
            raise SourceError(f"{s.path} holds log sequence {s.seq} of thread {s.thread}, "
                              f"but sequence {high} was already captured: dump file names "
                              f"must sort in log sequence order and each log's dump must "
                              f"arrive before later ones (e.g. thread1_seq000123.dmp)")


def _add_range(ranges: list[list[int]], seq: int) -> None:
    for r in ranges:
        if r[0] <= seq <= r[1]:
            return
        if seq == r[1] + 1:
            r[1] = seq
            return
        if seq == r[0] - 1:
            r[0] = seq
            return
    ranges.append([seq, seq])
    ranges.sort()


def _position(asm: Any, summaries: list[FileSummary], captured: dict[int, list[list[int]]]
              ) -> dict[str, Any]:
    """The read checkpoint the sink stores: GGSCI-readable fields first, then what a
    restart needs (the assembly checkpoint, the last file, log sequences captured)."""
    ck = asm.checkpoint()
    seqs = {t: [list(r) for r in ranges] for t, ranges in captured.items()}
    for s in summaries:
        _add_range(seqs.setdefault(s.thread, []), s.seq)
    position: dict[str, Any] = {}
    reads = [v["read"] for v in ck["threads"].values() if v.get("read")]
    if reads:
        last = max(reads, key=lambda r: r["scn"])
        position.update({"scn": ck.get("last_commit_scn") or last["scn"],
                         "thread": last["thread"], "rba": last["rba"],
                         "file": last["file"], "line": last["line"]})
    position["last_file"] = summaries[-1].path if summaries else None
    position["seqs"] = {str(t): ranges for t, ranges in sorted(seqs.items())}
    position["assembly"] = ck
    recoveries = [v["recovery"] for v in ck["threads"].values() if v.get("recovery")]
    if recoveries:
        oldest = min(recoveries, key=lambda r: r["scn"])
        position["recovery"] = {k: oldest[k] for k in ("scn", "thread", "rba", "file", "line")}
    if asm.last_commit_time is not None:
        position["read_time"] = _iso(asm.last_commit_time)
    return position
