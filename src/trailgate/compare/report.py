"""A compare's results: per table the counts a person reads at a glance, and a JSON report.

Per table: rows compared (the source's), in sync, missing on the target, extra on the
target, different (and which columns, how often), in flight (still changing after the
confirmation rounds), and a status.  The JSON report adds up to ``SAMPLES`` keys of each
kind per table, the differing values, and how the run went.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.compare.spec import CompareJob
from trailgate.compare.task import Difference

__all__ = ["SAMPLES", "TableResult", "render", "to_json"]

SAMPLES = 20


@dataclass(slots=True)
class TableResult:
    """One table's outcome."""

    source: str
    target: str
    compared: int = 0
    target_rows: int = 0
    ranges: int = 0
    ranges_differing: int = 0
    missing: int = 0
    extra: int = 0
    different: int = 0
    in_flight: int = 0
    resolved: int = 0
    columns: Counter[str] = field(default_factory=Counter)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    status: str = "in sync"

    @property
    def in_sync(self) -> int:
        return max(0, self.compared - self.missing - self.different - self.in_flight)

    @property
    def out_of_sync(self) -> int:
        return self.missing + self.extra + self.different

    def add(self, d: Difference, names: list[str]) -> None:
        kind = d.kind
        setattr(self, kind, getattr(self, kind) + d.n)
        if kind == "different":
            self.columns.update(d.columns)
        sample = self.samples.setdefault(kind, [])
        if len(sample) < SAMPLES:
            entry: dict[str, Any] = {"key": d.key}
            if d.n != 1:
                entry["rows"] = d.n
            if d.columns:
                entry["columns"] = list(d.columns)
            if d.src is not None:
                entry["source"] = dict(zip(names, d.src, strict=True))
            if d.tgt is not None:
                entry["target"] = dict(zip(names, d.tgt, strict=True))
            sample.append(entry)


def render(results: list[TableResult], job: CompareJob, seconds: float,
           note: str | None = None) -> list[str]:
    """The readable table."""
    head = (f"{'Table':<28} {'Target':<28} {'Compared':>10} {'In sync':>10} {'Missing':>8} "
            f"{'Extra':>8} {'Different':>9} {'In flight':>9}  Status")
    out = [f"Compare of EXTRACT {job.extract} ({job.describe_source()}) with REPLICAT "
           f"{job.replicat}'s target ({job.describe_target()})", "", head, "-" * len(head)]
    for r in results:
        out.append(f"{r.source:<28} {r.target:<28} {r.compared:>10,} {r.in_sync:>10,} "
                   f"{r.missing:>8,} {r.extra:>8,} {r.different:>9,} {r.in_flight:>9,}  "
                   f"{r.status}")
        if r.columns:
            cols = ", ".join(f"{c} ({n})" for c, n in r.columns.most_common())
            out.append(f"{'':<28} differing columns: {cols}")
    out.append("-" * len(head))
    bad = [r for r in results if r.status not in ("in sync",)]
    out.append(f"{len(results) - len(bad)} of {len(results)} table(s) in sync; "
               f"{sum(r.compared for r in results):,} rows compared in {seconds:.1f} s")
    for source, target in job.missing:
        out.append(f"{source}: target table {target} does not exist")
    for line in job.notes:
        out.append(line)
    if note:
        out.append(f"Not confirmed: {note}")
    return out


def to_json(results: list[TableResult], job: CompareJob, seconds: float,
            note: str | None, path: Path) -> None:
    data = {
        "extract": job.extract, "replicat": job.replicat,
        "source": job.describe_source(), "target": job.describe_target(),
        "seconds": round(seconds, 3), "confirmation": note or "confirmed",
        "missing_targets": [{"source": s, "target": t} for s, t in job.missing],
        "notes": list(job.notes),
        "tables": [{
            "source": r.source, "target": r.target, "status": r.status,
            "rows_compared": r.compared, "target_rows": r.target_rows,
            "in_sync": r.in_sync, "missing_on_target": r.missing,
            "extra_on_target": r.extra, "different": r.different,
            "in_flight": r.in_flight, "resolved_in_flight": r.resolved,
            "ranges": r.ranges, "ranges_differing": r.ranges_differing,
            "differing_columns": dict(r.columns.most_common()), "samples": r.samples,
        } for r in results],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n", "utf-8")
