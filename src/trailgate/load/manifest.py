"""The load manifest ``dirchk/<GROUP>.load``: every table's ranges and how far each got.

The plan a restarted load reuses, and what INFO/STATS show.  Whether a range is done is
decided by its target (a progress row, a Delta application transaction, a file in place)
and the manifest is refreshed from that at each start, so a crash between a range's commit
and the manifest's write loses nothing.  Each range records its cut.  Written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trailgate.capture.postgres.ranges import KeyRange
from trailgate.checkpoint import atomic_write_text
from trailgate.errors import ConfigError

__all__ = ["Manifest", "RangeState", "TableState", "manifest_path"]

VERSION = 1


def manifest_path(dirchk: Path, group: str) -> Path:
    return dirchk / f"{group.upper()}.load"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class RangeState:
    """A range: done or not, its rows, and the cut it was (or is being) read at."""

    range: KeyRange
    done: bool = False
    rows: int = 0
    cut: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.range.to_json(), "done": self.done, "rows": self.rows, "cut": self.cut}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RangeState:
        return cls(KeyRange.from_json(data), bool(data.get("done")), int(data.get("rows", 0)),
                   data.get("cut"))


@dataclass(slots=True)
class TableState:
    """One table of the load.  ``generation`` grows when a table split by ctid is reloaded
    whole after a restart; ``cleared`` says its target was emptied for that generation."""

    number: int
    source: str
    target: str
    split: str
    key_column: str | None
    estimate: int | None
    ranges: list[RangeState]
    generation: int = 0
    cleared: bool = True
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return all(r.done for r in self.ranges)

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.ranges)

    @property
    def done_ranges(self) -> int:
        return sum(1 for r in self.ranges if r.done)

    @property
    def cuts(self) -> set[int]:
        return {r.cut for r in self.ranges if r.done and r.cut is not None}

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "source": self.source, "target": self.target,
                "split": self.split, "key_column": self.key_column,
                "estimate": self.estimate, "generation": self.generation,
                "cleared": self.cleared, "seconds": round(self.seconds, 3),
                "ranges": [r.to_json() for r in self.ranges]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableState:
        return cls(int(data["number"]), str(data["source"]), str(data["target"]),
                   str(data["split"]), data.get("key_column"), data.get("estimate"),
                   [RangeState.from_json(r) for r in data["ranges"]],
                   int(data.get("generation", 0)), bool(data.get("cleared", True)),
                   float(data.get("seconds", 0.0)))


@dataclass(slots=True)
class Manifest:
    """Everything about one initial load; ``extract_cut`` is the consistent point of the
    Extract slot the load created (its changes start exactly there)."""

    group: str
    output: str  # what it writes: "REPLICAT REP1" or "EXTFILE ./dirdat/il"
    tables: list[TableState] = field(default_factory=list)
    runs: int = 0
    extract: str | None = None
    extract_cut: int | None = None
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    finished: str | None = None

    @property
    def complete(self) -> bool:
        return all(t.complete for t in self.tables)

    def table(self, source: str) -> TableState | None:
        for t in self.tables:
            if t.source == source:
                return t
        return None

    def save(self, path: Path) -> None:
        self.updated = _now()
        data = {"version": VERSION, "group": self.group, "output": self.output,
                "runs": self.runs, "extract": self.extract, "extract_cut": self.extract_cut,
                "created": self.created, "updated": self.updated, "finished": self.finished,
                "tables": [t.to_json() for t in self.tables]}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Manifest | None:
        try:
            data = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the load manifest is unreadable ({exc}): restore it, or "
                              f"remove it to load everything again (the targets must then "
                              f"be emptied first)", path=str(path)) from None
        try:
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return cls(str(data["group"]), str(data["output"]),
                       [TableState.from_json(t) for t in data["tables"]],
                       int(data.get("runs", 0)), data.get("extract"), data.get("extract_cut"),
                       str(data.get("created") or _now()), str(data.get("updated") or _now()),
                       data.get("finished"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the load manifest is malformed ({exc}): remove it to load "
                              f"everything again (the targets must then be emptied first)",
                              path=str(path)) from None
