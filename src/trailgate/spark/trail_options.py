"""The trail source's options, checked on the driver so a mistake fails before any task runs.

``path`` names a trail (``dirdat/aa``), a glob over one trail's files (``dirdat/aa*``) or one
file (``dirdat/aa000000003``).  Everything here is plain data so it pickles to executors.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trailgate.errors import TrailFormatError
from trailgate.model import TrailPosition
from trailgate.params.names import match_table
from trailgate.spark.trail_paths import local_trail_path
from trailgate.trail.naming import TrailName, parse_trail_file

__all__ = ["TableFilter", "TrailOptions", "parse_bool", "parse_options"]

_GLOB_CHARS = frozenset("*?[")


class TableFilter:
    """GoldenGate-style table patterns (``public.*``, ``hr.emp?``); a bare name matches any
    schema.  Results are cached per table because every record asks."""

    def __init__(self, patterns: tuple[str, ...]):
        self.patterns = tuple(p if "." in p else f"*.{p}" for p in patterns)
        self._cache: dict[str, bool] = {}

    def __call__(self, table: str) -> bool:
        hit = self._cache.get(table)
        if hit is None:
            try:
                hit = any(match_table(p, table) for p in self.patterns)
            except ValueError:
                hit = False
            self._cache[table] = hit
        return hit

    def __reduce__(self) -> tuple[type[TableFilter], tuple[tuple[str, ...]]]:
        return TableFilter, (self.patterns,)


@dataclass(frozen=True, slots=True)
class TrailOptions:
    """What to read: the trail, which of its files (``None``: all), from where, and filters."""

    trail: str
    seqnos: tuple[int, ...] | None
    start: TrailPosition | None
    tables: tuple[str, ...] | None
    include_metadata: bool
    batch_rows: int
    max_records_per_trigger: int | None
    batch_window_ms: int | None = None  # ``batchWindowMs``: see spark.batch_window
    patient_window: bool = False  # ``batchWindowPatient``: no batch on quiet
    table: str | None = None  # ``table``: one table's changes, typed
    list_tables: bool = False  # ``listTables``: the trail's tables, one row each
    split_bytes: int = 32 << 20  # ``splitMegabytes``: a bigger file is several partitions

    def table_filter(self) -> TableFilter | None:
        return TableFilter(self.tables) if self.tables else None


def parse_bool(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise ValueError(f"option {name}={text!r}: expected true or false")


def _positive(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"option {name}={text!r}: expected a positive whole number")
    return value


def _whole(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"option {name}={text!r}: expected a whole number of milliseconds")
    return value


def _resolve_path(path: str) -> tuple[str, tuple[int, ...] | None]:
    """(trail, selected seqnos or None for all) for a trail, a glob or a single file."""
    if any(c in _GLOB_CHARS for c in Path(path).name):
        matched = sorted(glob.glob(path))
        files = [(Path(m), parse_trail_file(m)) for m in matched if Path(m).is_file()]
        trails = {str(TrailName(p)) for p, parsed in files if parsed}
        if not trails:
            raise TrailFormatError("no trail files match this pattern", path=path)
        if len(trails) > 1:
            raise TrailFormatError(f"the pattern matches files of {len(trails)} trails "
                                   f"({', '.join(sorted(trails))}); give one trail", path=path)
        seqs = tuple(sorted({parsed[1] for _, parsed in files if parsed}))
        return str(Path(trails.pop()).absolute()), seqs
    p = Path(path)
    parsed = parse_trail_file(p)
    if parsed is not None and p.is_file():
        return str(TrailName(p.absolute())), (parsed[1],)
    if p.is_dir():
        raise TrailFormatError("is a directory; give a trail such as dirdat/aa", path=path)
    try:
        trail = TrailName(p.absolute())
    except ValueError as exc:
        raise TrailFormatError(str(exc), path=path) from None
    if parsed is not None:
        raise TrailFormatError("no such trail file", path=path)
    return str(trail), None


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> TrailOptions:
    """Check and normalise the options; raises ``TrailFormatError``/``ValueError`` with the
    option named.  A batch read of a trail with no files is an error; a stream may start
    before its trail's first file exists."""
    path = options.get("path")
    if not path and not options:
        raise ValueError(
            "no options reached the trail source: a catalog table (CREATE TABLE … USING "
            "trail) does not hand its OPTIONS to a Python data source in this Spark version; "
            "use CREATE TEMPORARY VIEW name USING trail OPTIONS (path '…') instead")
    if not path:
        raise ValueError('the trail source needs a path: .load("dirdat/aa") or '
                         '.option("path", "dirdat/aa")')
    trail, seqnos = _resolve_path(local_trail_path(path))
    if seqnos is None and not streaming and not TrailName(trail).sequence_numbers():
        raise TrailFormatError("no trail files (expected names like aa000000000)", path=path)
    start = None
    if options.get("startingPosition"):
        try:
            start = TrailPosition.parse(options["startingPosition"].strip())
        except ValueError as exc:
            raise ValueError(f"option startingPosition: {exc}") from None
    elif streaming and seqnos:
        start = TrailPosition(seqnos[0], 0)
    table = (options.get("table") or "").strip() or None
    if table is not None and options.get("tables"):
        raise ValueError("options table and tables: give one (table: one table, typed; "
                         "tables: several, in the generic form)")
    if table is not None:
        match_table(table if "." in table else f"*.{table}", "a.b")  # syntax check
    tables = None
    if options.get("tables"):
        tables = tuple(t.strip() for t in options["tables"].split(",") if t.strip())
        for pattern in tables:
            match_table(pattern if "." in pattern else f"*.{pattern}", "a.b")  # syntax check
    limit = options.get("maxRecordsPerTrigger")
    window = options.get("batchWindowMs")
    return TrailOptions(
        trail=trail,
        seqnos=None if streaming else seqnos,
        start=start,
        tables=tables,
        include_metadata=parse_bool("includeMetadata", options.get("includeMetadata", "false")),
        batch_rows=_positive("batchRows", options.get("batchRows", "10000")),
        max_records_per_trigger=_positive("maxRecordsPerTrigger", limit) if limit else None,
        batch_window_ms=_whole("batchWindowMs", window) if window else None,
        patient_window=parse_bool("batchWindowPatient", options.get("batchWindowPatient", "false")),
        table=table,
        list_tables=parse_bool("listTables", options.get("listTables", "false")),
        split_bytes=_positive("splitMegabytes", options.get("splitMegabytes", "32")) << 20,
    )
