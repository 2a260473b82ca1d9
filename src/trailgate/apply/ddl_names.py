"""A DDL statement's object names, found with the SQL lexer and put through MAP.

GoldenGate's Replicat applies a MAPPED DDL to the MAP's target (``ALTER TABLE hr.emp ADD c``
under ``MAP hr.*, TARGET hr2.*`` runs on ``hr2.emp``).  This module finds the names a
statement gives to tables, indexes and sequences (its object, a new name, the tables it
refers to) and replaces each by its mapped name, leaving every other character as it was;
unqualified names are qualified through the source's search_path.  Limits: docs/ddl.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from trailgate.apply.sql_lexer import Kind, Token, significant, tokenize
from trailgate.params.names import parse_name

__all__ = ["NameRef", "Translation", "find_names", "quote_name", "translate"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*\Z")
_RESERVED = frozenset({
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both",
    "case", "cast", "check", "collate", "column", "constraint", "create", "current_date",
    "current_role", "current_time", "current_timestamp", "current_user", "default",
    "deferrable", "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for",
    "foreign", "from", "grant", "group", "having", "in", "initially", "intersect", "into",
    "lateral", "leading", "limit", "localtime", "localtimestamp", "not", "null", "offset",
    "on", "only", "or", "order", "placing", "primary", "references", "returning", "select",
    "session_user", "some", "symmetric", "table", "then", "to", "trailing", "true", "union",
    "unique", "user", "using", "variadic", "when", "where", "window", "with"})
#: Words that end a FROM list entry's alias position.
_CLAUSE = frozenset({"WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "UNION",
                     "EXCEPT", "INTERSECT", "JOIN", "INNER", "LEFT", "RIGHT", "FULL",
                     "CROSS", "NATURAL", "ON", "USING", "WINDOW", "FETCH", "FOR", "WITH",
                     "RETURNING", "LATERAL", "TABLESAMPLE"})
_TABLE_LIKE = ("TABLE", "VIEW", "SEQUENCE", "MATERIALIZED", "FOREIGN")


@dataclass(frozen=True, slots=True)
class NameRef:
    """A (maybe qualified) name in the statement: its parts (as the server sees them), its
    place in the text, and what it names: ``object`` (what the statement creates, alters
    or drops), ``table`` (a table it refers to), ``index`` (an index by its name),
    ``newname`` (``RENAME TO``: an unqualified new name)."""

    parts: tuple[str, ...]
    start: int
    end: int
    role: str
    ends: tuple[int, ...] = ()  # where each part ends in the text


@dataclass(slots=True)
class Shape:
    """What the lexer could tell about a statement besides its names."""

    verb: str = ""
    object_word: str = ""  # TABLE, INDEX, VIEW, …
    names: list[NameRef] = field(default_factory=list)
    renamed_columns: list[tuple[str, str]] = field(default_factory=list)
    as_query: int | None = None  # where a CREATE … AS query starts (a char offset)
    with_data: int | None = None  # where a trailing WITH [NO] DATA starts


@dataclass(slots=True)
class Translation:
    """A statement as the target should run it, and what the translation found."""

    statement: str
    search_path: list[str]
    shape: Shape
    unmapped: list[str] = field(default_factory=list)  # names no MAP takes (left as is)


def quote_name(part: str) -> str:
    """An identifier as SQL text: plain when PostgreSQL would read it back the same."""
    if _PLAIN.match(part) and part not in _RESERVED:
        return part
    return '"' + part.replace('"', '""') + '"'


class _Cursor:
    def __init__(self, tokens: list[Token]):
        self.t = tokens
        self.i = 0

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def word(self, k: int = 0) -> str:
        tok = self.peek(k)
        return tok.upper if tok is not None and tok.kind is Kind.WORD else ""

    def accept(self, *words: str) -> bool:
        if self.word() in words:
            self.i += 1
            return True
        return False

    def skip(self, *sequences: tuple[str, ...]) -> None:
        """Skip any of the keyword sequences (IF NOT EXISTS, ONLY, …), repeatedly."""
        moved = True
        while moved:
            moved = False
            for seq in sequences:
                if all(self.word(k) == w for k, w in enumerate(seq)):
                    self.i += len(seq)
                    moved = True

    def name(self, role: str) -> NameRef | None:
        """A dotted name here (WORD or "QUOTED" parts), or None."""
        first = self.peek()
        if first is None or first.kind not in (Kind.WORD, Kind.QUOTED):
            return None
        parts, ends = [first.name], [first.end]
        self.i += 1
        while (dot := self.peek()) is not None and dot.kind is Kind.OP and dot.text == "." \
                and (nxt := self.peek(1)) is not None and nxt.kind in (Kind.WORD, Kind.QUOTED):
            parts.append(nxt.name)
            ends.append(nxt.end)
            self.i += 2
        return NameRef(tuple(parts), first.start, ends[-1], role, tuple(ends))


def _query_refs(cur: _Cursor, shape: Shape) -> None:
    """Tables after FROM and JOIN from here on (function calls and subqueries left out)."""
    while cur.peek() is not None:
        word = cur.word()
        cur.i += 1
        if word not in ("FROM", "JOIN"):
            continue
        while True:
            cur.skip(("ONLY",), ("LATERAL",))
            ref = cur.name("table")
            if ref is None:
                break
            nxt = cur.peek()
            if nxt is not None and nxt.kind is Kind.OP and nxt.text == "(":
                break  # a function
            shape.names.append(ref)
            if word != "FROM":
                break
            cur.accept("AS")
            if cur.word() and cur.word() not in _CLAUSE:
                cur.i += 1  # an alias
            elif (tok := cur.peek()) is not None and tok.kind is Kind.QUOTED:
                cur.i += 1
            tok = cur.peek()
            if tok is None or tok.kind is not Kind.OP or tok.text != ",":
                break
            cur.i += 1


def _table_body(cur: _Cursor, shape: Shape) -> None:
    """The rest of CREATE TABLE / ALTER TABLE: referenced tables, column renames, a new
    name, an AS query."""
    depth = 0
    while (tok := cur.peek()) is not None:
        if tok.kind is Kind.OP and tok.text in "()":
            depth += 1 if tok.text == "(" else -1
            cur.i += 1
            continue
        word = cur.word()
        if word == "REFERENCES" or (word == "LIKE" and depth > 0):
            cur.i += 1
            ref = cur.name("table")
            if ref is not None:
                shape.names.append(ref)
            continue
        if word == "PARTITION" and cur.word(1) == "OF":
            cur.i += 2
            ref = cur.name("table")
            if ref is not None:
                shape.names.append(ref)
            continue
        if word == "INHERITS":
            cur.i += 1
            if (t := cur.peek()) is not None and t.kind is Kind.OP and t.text == "(":
                cur.i += 1
                while (ref := cur.name("table")) is not None:
                    shape.names.append(ref)
                    if (t := cur.peek()) is None or t.kind is not Kind.OP or t.text != ",":
                        break
                    cur.i += 1
            continue
        if word == "RENAME" and depth == 0:
            cur.i += 1
            if cur.accept("TO"):
                ref = cur.name("newname")
                if ref is not None:
                    shape.names.append(ref)
                continue
            cur.accept("COLUMN")
            old = cur.name("column")
            if old is not None and cur.accept("TO"):
                new = cur.name("column")
                if new is not None:
                    shape.renamed_columns.append((old.parts[-1], new.parts[-1]))
            continue
        if word == "AS" and depth == 0 and shape.verb == "CREATE":
            shape.as_query = tok.start
            cur.i += 1
            _query_refs(cur, shape)
            break
        cur.i += 1


def find_names(statement: str) -> Shape:
    """The names of a DDL statement and what they name (see :class:`NameRef`)."""
    tokens = significant(tokenize(statement))
    cur = _Cursor(tokens)
    shape = Shape(verb=cur.word())
    if shape.verb in ("CREATE", "ALTER", "DROP"):
        cur.i += 1
        cur.skip(("OR", "REPLACE"), ("GLOBAL",), ("LOCAL",), ("TEMP",), ("TEMPORARY",),
                 ("UNLOGGED",), ("UNIQUE",), ("RECURSIVE",))
        obj = cur.word()
        if obj in ("MATERIALIZED", "FOREIGN"):
            cur.i += 1
        shape.object_word = obj
        cur.i += 1
        cur.skip(("CONCURRENTLY",), ("IF", "NOT", "EXISTS"), ("IF", "EXISTS"), ("ONLY",))
        if obj == "INDEX" and shape.verb == "CREATE":
            if cur.word() != "ON":
                cur.name("newname")  # the index's own name: created in its table's schema
                cur.skip(("IF", "NOT", "EXISTS"))
            if cur.accept("ON"):
                cur.skip(("ONLY",))
                ref = cur.name("object")
                if ref is not None:
                    shape.names.append(ref)
            return shape
        if obj not in (*_TABLE_LIKE, "INDEX"):
            return shape  # functions, types, schemas, …: their text is left as it is
        role = "index" if obj == "INDEX" else "object"
        while (ref := cur.name(role)) is not None:
            shape.names.append(ref)
            tok = cur.peek()
            if shape.verb != "DROP" or tok is None or tok.kind is not Kind.OP or tok.text != ",":
                break
            cur.i += 1
        _table_body(cur, shape)
    elif shape.verb == "COMMENT" and cur.word(1) == "ON":
        cur.i += 2
        obj = cur.word()
        shape.object_word = obj
        cur.i += 1 + (cur.word(1) == "VIEW" and obj == "MATERIALIZED")
        ref = cur.name("column" if obj == "COLUMN" else "index" if obj == "INDEX"
                       else "object")
        if ref is not None and obj in (*_TABLE_LIKE, "INDEX"):
            shape.names.append(ref)
        elif ref is not None and obj == "COLUMN" and len(ref.parts) >= 2:
            shape.names.append(NameRef(ref.parts[:-1], ref.start, ref.ends[-2], "object",
                                       ref.ends[:-1]))
    return shape


def _with_data(statement: str, shape: Shape) -> None:
    tokens = significant(tokenize(statement))
    words = [t.upper for t in tokens]
    if len(words) >= 2 and words[-1] == "DATA" and words[-2] in ("WITH", "NO"):
        start = -3 if words[-2] == "NO" else -2
        shape.with_data = tokens[start].start


def translate(statement: str, *, owner: str, map_table: Callable[[str], str | None],
              map_schema: Callable[[str], str | None], search_path: Sequence[str],
              no_data: bool = False) -> Translation:
    """``statement`` with each name through MAP.  ``owner`` is the schema the source
    resolved the statement's object in (the marker's B3); ``map_table(schema.table)`` gives
    a MAP target (``schema.table``, as ``target_name`` writes it) or None;
    ``map_schema(schema)`` a target schema for a name MAP only knows by its schema (an
    index); ``search_path`` is the source session's.  ``no_data``: a CREATE TABLE AS whose
    rows come as inserts runs ``WITH NO DATA``."""
    shape = find_names(statement)
    schemas = [s.strip().strip('"') for s in search_path
               if s.strip() and s.strip() not in ('"$user"', "$user", "pg_catalog",
                                                  "pg_temp")]
    pieces: list[tuple[int, int, str]] = []
    unmapped: list[str] = []
    object_schema: str | None = None
    for ref in shape.names:
        if ref.role in ("column",):
            continue
        if ref.role == "index":
            if len(ref.parts) >= 2:
                target = map_schema(ref.parts[-2])
                if target is not None:
                    pieces.append((ref.start, ref.end,
                                   f"{quote_name(target)}.{quote_name(ref.parts[-1])}"))
            continue
        if len(ref.parts) >= 2:
            candidates = [f"{quote_name(ref.parts[-2])}.{quote_name(ref.parts[-1])}"]
        elif ref.role in ("object", "newname"):
            candidates = [f"{quote_name(owner)}.{quote_name(ref.parts[0])}"]
        else:
            candidates = [f"{quote_name(s)}.{quote_name(ref.parts[0])}" for s in schemas]
        mapped = next(((c, t) for c in candidates if (t := map_table(c)) is not None), None)
        if mapped is None:
            if ref.role != "newname":
                unmapped.append(".".join(ref.parts))
            continue
        parts = [p.text if p.quoted else p.text.lower() for p in parse_name(mapped[1])][-2:]
        if ref.role == "newname":
            pieces.append((ref.start, ref.end, quote_name(parts[-1])))
            continue
        if ref.role == "object" and object_schema is None:
            object_schema = parts[0]
        pieces.append((ref.start, ref.end, ".".join(quote_name(p) for p in parts)))
    out = statement
    if no_data and shape.verb == "CREATE" and shape.as_query is not None:
        _with_data(statement, shape)
        if shape.with_data is not None:
            out = out[:shape.with_data].rstrip() + " WITH NO DATA"
        else:
            out = out.rstrip() + " WITH NO DATA"
    for start, end, text in sorted(pieces, reverse=True):
        out = out[:start] + text + out[end:]
    path = [object_schema] if object_schema else []
    for s in schemas:
        target = map_schema(s) or s
        if target not in path:
            path.append(target)
    return Translation(out, path, shape, unmapped)
