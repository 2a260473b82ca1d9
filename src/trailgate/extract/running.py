"""What both Extracts (PostgreSQL and Oracle redo dumps) share around their query: Spark
settings, the parameters echoed into the report, and this run's counts per table.

The counts come from the group checkpoint (what is durable in the trail), less what it held
when the run started, so the report's statistics never count a transaction the trail does
not hold.
"""

from __future__ import annotations

import time
from datetime import datetime

from trailgate.checkpoint import Checkpoint, TableStats
from trailgate.home import Home
from trailgate.params import GroupParams
from trailgate.process.runtime import GroupProcess

__all__ = ["SPARK_DEFAULTS", "ExtractStats", "echo_parameters"]

#: Arrow batches between the capture and the trail writer stay small even when rows carry
#: big (TOASTed) values: the JVM and the workers never hold more than this per batch.
SPARK_DEFAULTS = {"spark.sql.execution.arrow.maxBytesPerBatch": str(32 << 20)}


def echo_parameters(proc: GroupProcess, params: GroupParams) -> None:
    """The parameter files as read, into the report."""
    proc.echo_parameters(params.files or [params.path])


class ExtractStats:
    """Per-table counts of this run: the checkpoint's totals minus those at start."""

    def __init__(self, home: Home, group: str):
        self.home, self.group = home, group
        start = home.checkpoints.load(group, "EXTRACT")
        self.base = {t: TableStats(**s.to_json()) for t, s in (start.stats if start else
                                                                {}).items()}
        self.started = time.monotonic()
        self.last_total = 0
        self.last_time = self.started

    def current(self) -> tuple[Checkpoint | None, dict[str, TableStats]]:
        ck = self.home.checkpoints.load(self.group, "EXTRACT")
        out: dict[str, TableStats] = {}
        for table, stats in (ck.stats if ck else {}).items():
            base = self.base.get(table, TableStats())
            delta = TableStats(**{k: v - getattr(base, k) for k, v in stats.to_json().items()})
            if delta.total or delta.discards:
                out[table] = delta
        return ck, out

    def progress_line(self) -> str:
        _, per_table = self.current()
        total = sum(s.total for s in per_table.values())
        now = time.monotonic()
        rate = total / max(now - self.started, 1e-9)
        delta = (total - self.last_total) / max(now - self.last_time, 1e-9)
        self.last_total, self.last_time = total, now
        return (f"{total} records processed as of {datetime.now():%Y-%m-%d %H:%M:%S} "
                f"(rate {rate:.0f}, delta {delta:.0f})")

    def final_lines(self) -> list[str]:
        ck, per_table = self.current()
        out = [f"Output to {ck.write_trail if ck else '(none)'}:"]
        if not per_table:
            out.append("  No records written in this run.")
        for table, s in sorted(per_table.items()):
            out += ["", f"From Table {table}:",
                    f"       #                   inserts:  {s.inserts:>10}",
                    f"       #                   updates:  {s.updates:>10}",
                    f"       #                   deletes:  {s.deletes:>10}",
                    f"       #                 truncates:  {s.truncates:>10}",
                    f"       #                  discards:  {s.discards:>10}"]
            if s.ddl:
                out.append(f"       #                       ddl:  {s.ddl:>10}")
        return out
