"""A DDL record's marker text (seed 004's ``GGS_MARKER.MARKER_TEXT``) as named fields.

The D area of an IOType 160 record is the marker text as the source's DDL trigger wrote it:
``,C1='statement'`` then the environment (``,C5='501',B3='US01',B4='T100',B5='TABLE',
B6='ALTER',…``, session settings as ``C17('n')``/``C18('n')`` pairs, ``C19`` their count),
the marker rows' fragments end to end.  Capture, Replicat and Logdump all read it
through :func:`parse_marker` (keys: seed 004's ``DDLREPLICATION`` constants, ``E1``/``E2``
trailgate's); every group judging a DDL record gets its
:class:`~trailgate.model.DdlObject` from :func:`read_ddl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from trailgate.model import DdlObject
from trailgate.trail.metadata import decode_kv, encode_kv

__all__ = ["FRAGMENT_CHARS", "SUBTYPE_ERROR", "SUBTYPE_INFO", "DdlMarker", "DdlRecord",
           "ddl_fields", "ddl_object", "encode_marker", "fragments", "parse_marker",
           "read_ddl", "report_line"]

#: The marker and history tables keep text in VARCHAR(4000) columns: longer text is split.
FRAGMENT_CHARS = 4000
#: ``GGS_MARKER.SUBTYPE`` of a DDL the trigger described, and of one it could not.
SUBTYPE_INFO = "DDLINFO"
SUBTYPE_ERROR = "DDLERROR"


@dataclass(slots=True)
class DdlMarker:
    """The marker of one DDL statement.  ``values`` holds the plain keys, ``indexed`` the
    indexed ones (``C17('1')`` is ``indexed["C17"]["1"]``)."""

    values: dict[str, str] = field(default_factory=dict)
    indexed: dict[str, dict[str, str]] = field(default_factory=dict)

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key, default)

    @property
    def seqno(self) -> int | None:
        """The DDL sequence number (``C5``, from the marker sequence)."""
        text = self.get("C5").strip()
        return int(text) if text.isdigit() else None

    statement = property(lambda self: self.get("C1"), doc="the statement (C1)")
    owner = property(lambda self: self.get("B3"), doc="the object's schema (B3)")
    name = property(lambda self: self.get("B4"), doc="the object's name (B4)")
    object_type = property(lambda self: self.get("B5").upper(), doc="TABLE, INDEX, … (B5)")
    ddl_type = property(lambda self: self.get("B6").upper(), doc="CREATE, ALTER, … (B6)")
    master_owner = property(lambda self: self.get("C12"),
                            doc="an index's table's schema (C12)")
    master_name = property(lambda self: self.get("C13"), doc="an index's table (C13)")
    login_user = property(lambda self: self.get("B9"), doc="who ran it (B9)")
    error = property(lambda self: self.get("E1"),
                     doc="why the trigger could not describe it (trailgate's E1)")

    @property
    def rows_follow(self) -> bool:
        """A CREATE TABLE AS whose rows travel as inserts (trailgate's ``E2='YES'``)."""
        return self.get("E2").upper() == "YES"

    @property
    def qualified_name(self) -> str:
        """``owner.name`` (or ``name`` for an object without a schema)."""
        return f"{self.owner}.{self.name}" if self.owner else self.name

    @property
    def master_qualified_name(self) -> str | None:
        """The table an index (or trigger, constraint) belongs to, when known."""
        if not self.master_name:
            return None
        return (f"{self.master_owner}.{self.master_name}" if self.master_owner
                else self.master_name)

    def settings(self) -> dict[str, str]:
        """The session settings recorded with the statement (``C17``/``C18`` pairs)."""
        names, values = self.indexed.get("C17", {}), self.indexed.get("C18", {})
        return {names[i]: values.get(i, "") for i in sorted(names, key=_number)}

    def missing_values(self) -> dict[str, str]:
        """What existing rows hold in columns added with a default (trailgate's ``E3``,
        by column name; PostgreSQL's ``attmissingval``, unwrapped from its array text)."""
        return {name: _unwrap(text) for name, text in self.indexed.get("E3", {}).items()}

    def describe(self) -> str:
        """``DDL sequence 501 [ALTER TABLE t100 ADD c4 NUMBER]``, for messages."""
        seq = self.get("C5") or "?"
        return f"DDL sequence {seq} [{self.statement.strip()}]"


def _unwrap(text: str) -> str:
    """The one element of an array's text form: ``{7}`` -> ``7``, ``{"a \\"b\\""}`` ->
    ``a "b"``."""
    inner = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    if inner.startswith('"') and inner.endswith('"') and len(inner) > 1:
        out, i = [], 1
        while i < len(inner) - 1:
            if inner[i] == "\\" and i + 1 < len(inner) - 1:
                i += 1
            out.append(inner[i])
            i += 1
        return "".join(out)
    return inner


def _number(text: str) -> int:
    return int(text) if text.isdigit() else 1 << 30


def parse_marker(text: str) -> DdlMarker:
    """The fields of a marker text; ``ValueError`` when it is not marker text."""
    marker = DdlMarker()
    for key, index, value in decode_kv(text):
        if index is None:
            marker.values[key] = value
        else:
            marker.indexed.setdefault(key, {})[index] = value
    return marker


@dataclass(frozen=True, slots=True)
class DdlRecord:
    """A DDL record's text read: its marker, the object the DDL rules judge, and — when the
    text is not marker text — why (``unreadable``; the marker is then the raw text as the
    statement with ``E1`` saying so, which DDLERROR handles)."""

    marker: DdlMarker
    obj: DdlObject
    unreadable: str | None = None


def ddl_object(marker: DdlMarker) -> DdlObject:
    """What the DDL rules look at in ``marker``."""
    return DdlObject(marker.owner, marker.name, marker.object_type, marker.ddl_type,
                     marker.statement, marker.master_qualified_name, marker.error)


def read_ddl(text: str) -> DdlRecord:
    """The marker and object of a DDL record's text; never raises."""
    try:
        marker = parse_marker(text)
        problem = None
    except ValueError as exc:
        problem = str(exc)
        marker = DdlMarker({"C1": text,
                            "E1": f"the DDL record's marker text cannot be read: {problem}"})
    return DdlRecord(marker, ddl_object(marker), problem)


def encode_marker(statement: str, env: list[tuple[str, str]], *,
                  settings: dict[str, str] | None = None) -> str:
    """Marker text: ``C1`` the statement, then ``env`` (key, value) in order, then the
    settings as ``C17``/``C18`` pairs and their count ``C19``."""
    items: list[tuple[str, str | None, str]] = [("C1", None, statement)]
    items += [(key, None, value) for key, value in env]
    if settings is not None:
        for n, (name, value) in enumerate(settings.items(), start=1):
            items += [("C17", str(n), name), ("C18", str(n), value)]
        items.append(("C19", None, str(len(settings))))
    return encode_kv(items)


def fragments(text: str, size: int = FRAGMENT_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters (marker and history rows);
    their concatenation is the text."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def ddl_fields(text: str) -> dict[str, str]:
    """A DDL record's text as named fields, for people and tools (``trail export``, the
    ``trail`` Spark source): statement, DDL sequence, operation and object; ``error`` when
    the marker says what went wrong; ``text`` alone when it cannot be read."""
    try:
        m = parse_marker(text)
    except ValueError:
        return {"text": text}
    out = {"statement": m.statement, "seqno": m.get("C5"), "optype": m.ddl_type,
           "objtype": m.object_type, "objowner": m.owner, "objname": m.name}
    if m.error:
        out["error"] = m.error
    return out


def report_line(level: str, code: str, text: str) -> str:
    """A report line about a DDL: ``2026-11-21 10:00:00  INFO    OGG-01487  text`` (no code
    where we do not know GoldenGate's)."""
    return f"{datetime.now():%Y-%m-%d %H:%M:%S}  {level:<8}{code + '  ' if code else ''}{text}"
