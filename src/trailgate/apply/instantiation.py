"""Instantiation CSNs: per source table, the cut an initial load read each part of it at.

As GoldenGate's ``SET INSTANTIATION CSN``: a Replicat after a load applies a change only if
its CSN is at or after the cut of the range its key is in.  A load done in one go has one
cut per table; a restarted load read its unfinished key ranges at later cuts.  The registry
``dirchk/<REPLICAT>.inst`` holds them; :meth:`TableCuts.keeps` is the rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.checkpoint import atomic_write_text
from trailgate.errors import ConfigError

__all__ = ["Cut", "Instantiation", "TableCuts", "registry_path"]


def registry_path(dirchk: Path, replicat: str) -> Path:
    return dirchk / f"{replicat.upper()}.inst"


@dataclass(frozen=True, slots=True)
class Cut:
    """Rows with ``lower`` ≤ key < ``upper`` (None: open) were read at ``csn``."""

    csn: int
    lower: int | None = None
    upper: int | None = None

    def contains(self, value: int) -> bool:
        return ((self.lower is None or value >= self.lower)
                and (self.upper is None or value < self.upper))


@dataclass(slots=True)
class TableCuts:
    """A table's cuts; ``key_column`` is None when one cut covers the whole table."""

    table: str
    load: str
    cuts: list[Cut]
    key_column: str | None = None
    complete: bool = False

    @property
    def low(self) -> int:
        return min(c.csn for c in self.cuts)

    @property
    def high(self) -> int:
        return max(c.csn for c in self.cuts)

    def cut_for(self, key: int) -> int:
        """The cut of the range holding ``key`` (a key in no range: the highest)."""
        for c in self.cuts:
            if c.contains(key):
                return c.csn
        return self.high

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "load": self.load, "key_column": self.key_column,
                "complete": self.complete,
                "cuts": [{"csn": c.csn, "lower": c.lower, "upper": c.upper}
                         for c in self.cuts]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableCuts:
        return cls(str(data["table"]), str(data["load"]),
                   [Cut(int(c["csn"]), c.get("lower"), c.get("upper")) for c in data["cuts"]],
                   data.get("key_column"), bool(data.get("complete")))


@dataclass(slots=True)
class Instantiation:
    """The registry of one Replicat."""

    replicat: str
    tables: dict[str, TableCuts] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # loads started and not finished

    @property
    def high(self) -> int:
        return max((t.high for t in self.tables.values() if t.cuts), default=0)

    def incomplete(self) -> list[TableCuts]:
        return [t for t in self.tables.values() if not t.complete]

    def save(self, dirchk: Path) -> None:
        data = {"replicat": self.replicat, "pending": sorted(set(self.pending)),
                "tables": [t.to_json() for _, t in sorted(self.tables.items())]}
        atomic_write_text(registry_path(dirchk, self.replicat), json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, dirchk: Path, replicat: str) -> Instantiation | None:
        path = registry_path(dirchk, replicat)
        try:
            data = json.loads(path.read_text("utf-8"))
            tables = [TableCuts.from_json(t) for t in data["tables"]]
            pending = [str(p) for p in data.get("pending", [])]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"the instantiation registry is unreadable ({exc}): restore it "
                              f"or run the initial load again", path=str(path)) from None
        return cls(replicat.upper(), {t.table: t for t in tables}, pending)
