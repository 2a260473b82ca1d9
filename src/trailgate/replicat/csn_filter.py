"""``START REPLICAT …, ATCSN n | AFTERCSN n``: the source transactions a run leaves out.

One rule, applied wherever a batch's changes are read: from Spark (a column filter, so the
metadata and position rows pass) or straight from the trail (a filter on the changes read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from trailgate.model import OpType
from trailgate.replicat.task_rows import TaskRows

__all__ = ["SPECIAL_OPS", "BatchFilter", "CsnFilter", "filtered"]

#: Rows of a batch that are not changes: table definitions and the position row.
SPECIAL_OPS = (int(OpType.METADATA), -1)


class BatchFilter(Protocol):
    """What leaves changes out of a batch: ``CsnFilter``, or ``inst_filter.ChangeFilter``
    (ATCSN and an initial load's cuts together)."""

    def frame(self, df: Any) -> Any: ...

    def task(self, task: TaskRows) -> TaskRows: ...


@dataclass(frozen=True, slots=True)
class CsnFilter:
    """Keep transactions with CSN ≥ ``csn`` (``ATCSN``) or > ``csn`` (``AFTERCSN``)."""

    kind: str  # "atcsn" | "aftercsn"
    csn: int

    @classmethod
    def of(cls, atcsn: int | None, aftercsn: int | None) -> CsnFilter | None:
        if atcsn is not None:
            return cls("atcsn", atcsn)
        if aftercsn is not None:
            return cls("aftercsn", aftercsn)
        return None

    def keeps(self, csn: int) -> bool:
        return csn >= self.csn if self.kind == "atcsn" else csn > self.csn

    def frame(self, df: Any) -> Any:
        """A Spark frame of apply rows without the left-out transactions' changes."""
        from pyspark.sql import functions as F

        keep = F.col("csn") >= self.csn if self.kind == "atcsn" else F.col("csn") > self.csn
        return df.where(F.col("op").isin(*SPECIAL_OPS) | keep)

    def task(self, task: TaskRows) -> TaskRows:
        """``task`` without the left-out transactions' changes (in place)."""
        task.changes = {p: kept for p, tcs in task.changes.items()
                        if (kept := [tc for tc in tcs if self.keeps(tc.csn)])}
        return task


def filtered(df: Any, csn_filter: BatchFilter | None) -> Any:
    """``df`` through ``csn_filter``, or unchanged without one."""
    return df if csn_filter is None else csn_filter.frame(df)
