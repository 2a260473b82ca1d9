"""A heartbeat row's hops: each group it passes stamps its name and time into the row.

A heartbeat is an insert into ``GGSCHEMA.gg_heartbeat_seed`` (:mod:`trailgate.db.heartbeat`).
The capturing Extract sets ``incoming_extract_ts``; each pump appends its name to
``incoming_routing_path`` and sets ``incoming_routing_ts``, in trail form in the after
image, so the Replicat applies them as plain columns (its set-based paths unchanged).
Pure Python: it runs in Spark's workers too.
"""

from __future__ import annotations

from datetime import UTC, datetime

from trailgate.model import Change, OpType, TableDef

__all__ = ["SEED_TABLE", "is_heartbeat", "seed_name", "stamp_hop"]

SEED_TABLE = "gg_heartbeat_seed"


def seed_name(schema: str) -> str:
    """``schema.gg_heartbeat_seed``: the name TABLE/MAP rules use for it."""
    return f"{schema}.{SEED_TABLE}"


def is_heartbeat(table: str) -> bool:
    """True for a heartbeat seed table, in any schema (names compare case-insensitively)."""
    return table.rpartition(".")[2].strip('"').lower() == SEED_TABLE


def _trail_time(when: datetime) -> bytes:
    """A timestamptz in trail form: UTC, ``YYYY-MM-DD:HH:MI:SS.FFFFFF000``."""
    utc = when.astimezone(UTC)
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}:{utc.hour:02d}:{utc.minute:02d}:"
            f"{utc.second:02d}.{utc.microsecond:06d}000").encode("ascii")


def _index(table: TableDef | None, column: str) -> int | None:
    if table is None:
        return None
    for col in table.columns:
        if col.name.lower() == column:
            return col.index
    return None


def stamp_hop(change: Change, table: TableDef | None, hop: str, group: str,
              now: datetime | None = None) -> bool:
    """Stamp ``change`` (a heartbeat insert) with this hop: ``hop`` is EXTRACT or PUMP,
    ``group`` the group's name.  Returns False for anything but a heartbeat insert (an
    Extract leaves out the seed table's deletes: the writer's clean-up is not replicated)."""
    if change.op is not OpType.INSERT or change.after is None:
        return False
    when = _trail_time(now or datetime.now(UTC))
    if hop == "EXTRACT":
        i = _index(table, "incoming_extract_ts")
        if i is not None:
            change.after[i] = when
        return True
    path_i, ts_i = _index(table, "incoming_routing_path"), _index(table, "incoming_routing_ts")
    if path_i is not None:
        before = change.after.get(path_i)
        path = before.decode("utf-8", "replace") if before else ""
        change.after[path_i] = (f"{path} ==> {group}" if path else group).encode("utf-8")
    if ts_i is not None:
        change.after[ts_i] = when
    return True
