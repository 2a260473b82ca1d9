"""Marker and history rows (seed 004's GGS_MARKER, GGS_DDL_HIST) captured as DML, turned
back into one DDL each.

Both sources see the DDL trigger's work the same way — inserts into two tables of GGSCHEMA
in the DDL's own transaction — so this is shared: the PostgreSQL Extract feeds it decoded
rows from the slot, the Oracle Extract rows from a redo dump.  A DDL's rows arrive together
(the trigger writes them in one go); :meth:`DdlRows.take` hands out the DDLs gathered since
the last call, each with its marker text and its history text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trailgate.model import Change, OpType, TableDef
from trailgate.trail.ddl import SUBTYPE_ERROR, DdlMarker, encode_marker, parse_marker

__all__ = ["CapturedDdl", "DdlRows"]


@dataclass(slots=True)
class CapturedDdl:
    """One DDL as its rows gave it: marker text (fragments joined), the marker's subtype,
    the history text when the trigger wrote one (statement and metadata fragments
    joined), and the marker's first change (its place in the transaction)."""

    seqno: int | None
    text: str
    subtype: str = ""
    history: str | None = None
    first: Change | None = None
    _marker: DdlMarker | None = None
    problem: str | None = None

    def marker(self) -> DdlMarker:
        """The fields of :meth:`record_text`."""
        if self._marker is None:
            self._marker = parse_marker(self.record_text())
        return self._marker

    def record_text(self) -> str:
        """The D area of the DDL record: the marker text as written, or — when the rows
        cannot be read as one — a marker text carrying the sequence number, the raw text
        as the statement and ``E1`` saying what is wrong, so that the Replicat reports it
        under DDLERROR instead of the Extract stopping."""
        problem = self.problem
        if problem is None:
            try:
                parse_marker(self.text)
                return self.text
            except ValueError as exc:
                problem = f"the marker text cannot be read: {exc}"
        env = [("C5", "" if self.seqno is None else str(self.seqno)), ("E1", problem)]
        return encode_marker(self.text, env)

    @property
    def failed(self) -> bool:
        """The trigger marked it DDLERROR, or its rows cannot be read."""
        return self.subtype.upper() == SUBTYPE_ERROR or bool(self.marker().error)


@dataclass(slots=True)
class _Pieces:
    parts: dict[int, str] = field(default_factory=dict)
    subtype: str = ""
    first: Change | None = None
    problem: str | None = None


def _column(table: TableDef | None, values: dict[int, bytes | None] | None, name: str
            ) -> str | None:
    if table is None or values is None:
        return None
    try:
        index = table.column(name).index
    except KeyError:
        return None
    value = values.get(index)
    return None if value is None else value.decode("utf-8", "replace")


class DdlRows:
    """Collects the marker and history rows of GGSCHEMA ``schema`` (unquoted names compare
    case-insensitively, so ``GG01.GGS_MARKER`` and ``gg01.ggs_marker`` both are)."""

    def __init__(self, schema: str):
        self.schema = schema
        self.marker_table = f"{schema}.ggs_marker".lower()
        self.history_table = f"{schema}.ggs_ddl_hist".lower()
        self._markers: dict[int | None, _Pieces] = {}
        self._history: dict[int, dict[int, str]] = {}

    def kind(self, table: str) -> str | None:
        """``"marker"``, ``"history"`` or None for ``table`` (``schema.table``)."""
        name = table.lower()
        if name == self.marker_table:
            return "marker"
        if name == self.history_table:
            return "history"
        return None

    def is_ddl_table(self, table: str) -> bool:
        return self.kind(table) is not None

    def __len__(self) -> int:
        return len(self._markers)

    def add(self, change: Change, table: TableDef | None) -> None:
        """Take one captured row of the marker or history table (updates and deletes of
        them — a DBA's clean-up — are not DDL)."""
        if change.op is not OpType.INSERT:
            return
        kind = self.kind(change.table)
        after = change.after
        seq_text = _column(table, after, "SEQNO")
        frag_text = _column(table, after, "FRAGMENTNO")
        seq = int(seq_text) if seq_text and seq_text.strip().isdigit() else None
        frag = int(frag_text) if frag_text and frag_text.strip().isdigit() else None
        if kind == "history":
            if seq is not None and frag is not None:
                text = _column(table, after, "METADATA_TEXT") or ""
                self._history.setdefault(seq, {})[frag] = text
            return
        pieces = self._markers.get(seq)
        if pieces is None:
            pieces = self._markers[seq] = _Pieces(first=change)
        marker_text = _column(table, after, "MARKER_TEXT")
        if seq is None or frag is None or marker_text is None:
            missing = ("SEQNO" if seq is None else "FRAGMENTNO" if frag is None
                       else "MARKER_TEXT")
            pieces.problem = f"a marker row without {missing} (written by hand?)"
        pieces.parts[frag if frag is not None else len(pieces.parts) + 1] = marker_text or ""
        pieces.subtype = _column(table, after, "SUBTYPE") or pieces.subtype

    def take(self) -> list[CapturedDdl]:
        """The DDLs gathered since the last call, in the order their rows came."""
        out = []
        for seq, pieces in self._markers.items():
            text = "".join(pieces.parts[k] for k in sorted(pieces.parts))
            history = self._history.pop(seq, None) if seq is not None else None
            out.append(CapturedDdl(seq, text, pieces.subtype.strip(),
                                   None if history is None else
                                   "".join(history[k] for k in sorted(history)),
                                   pieces.first, problem=pieces.problem))
        self._markers.clear()
        return out
