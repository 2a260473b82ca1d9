"""PostgreSQL's SQL as tokens, each with its place in the text.

What the Replicat needs to rewrite the object names of a DDL statement without touching
anything else: identifiers (plain and ``"quoted"``), keywords are plain identifiers here,
string constants (``'…'`` with ``''``, ``E'…'`` with backslash escapes, ``$tag$…$tag$``),
comments (``--`` and nested ``/* */``), numbers, parameters and operators.  Joining the
tokens' texts gives the statement back exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

__all__ = ["Kind", "Token", "significant", "split_statements", "tokenize"]


class Kind(Enum):
    SPACE = "space"
    COMMENT = "comment"
    WORD = "word"  # an unquoted identifier or keyword
    QUOTED = "quoted"  # a "quoted identifier"
    STRING = "string"  # '…', E'…', B'…', X'…', U&'…', $$…$$
    NUMBER = "number"
    PARAM = "param"  # $1
    OP = "op"  # operators and punctuation: . , ; ( ) [ ] :: etc.


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def upper(self) -> str:
        """A word in upper case (keywords compare so); other tokens as they are."""
        return self.text.upper() if self.kind is Kind.WORD else self.text

    @property
    def name(self) -> str:
        """The identifier this token names: a plain word folds to lower case, a quoted one
        keeps its text."""
        if self.kind is Kind.QUOTED:
            return self.text[1:-1].replace('""', '"')
        return self.text.lower()


_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
_NUMBER = re.compile(r"(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_PARAM = re.compile(r"\$\d+")
_DOLLAR = re.compile(r"\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
_OPS = re.compile(r"::|[.,;()\[\]]|[-+*/<>=~!@#%^&|`?:]+")


def _string_end(text: str, i: int, escapes: bool) -> int:
    """The end of the string constant whose opening quote is at ``i``."""
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if escapes and c == "\\":
            j += 2
            continue
        if c == "'":
            if j + 1 < n and text[j + 1] == "'":
                j += 2
                continue
            return j + 1
        j += 1
    return n


def _comment_end(text: str, i: int) -> int:
    depth, j, n = 0, i, len(text)
    while j < n:
        if text.startswith("/*", j):
            depth += 1
            j += 2
        elif text.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``; an unterminated quote or comment runs to the end."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            m = _SPACE.match(text, i)
            assert m is not None
            j, kind = m.end(), Kind.SPACE
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j, kind = (n if j < 0 else j), Kind.COMMENT
        elif text.startswith("/*", i):
            j, kind = _comment_end(text, i), Kind.COMMENT
        elif c == "'":
            j, kind = _string_end(text, i, False), Kind.STRING
        elif c in "eEbBxXnN" and i + 1 < n and text[i + 1] == "'":
            j, kind = _string_end(text, i + 1, c in "eE"), Kind.STRING
        elif c in "uU" and text.startswith("&'", i + 1):
            j, kind = _string_end(text, i + 2, False), Kind.STRING
        elif c in "uU" and text.startswith('&"', i + 1):
            end = text.find('"', i + 3)
            j, kind = (n if end < 0 else end + 1), Kind.QUOTED
        elif c == '"':
            j = i + 1
            while True:
                j = text.find('"', j)
                if j < 0:
                    j = n
                    break
                if text.startswith('""', j):
                    j += 2
                    continue
                j += 1
                break
            kind = Kind.QUOTED
        elif c == "$" and (m := _DOLLAR.match(text, i)) is not None:
            end = text.find(m.group(), m.end())
            j, kind = (n if end < 0 else end + len(m.group())), Kind.STRING
        elif c == "$" and (m := _PARAM.match(text, i)) is not None:
            j, kind = m.end(), Kind.PARAM
        elif (m := _WORD.match(text, i)) is not None:
            j, kind = m.end(), Kind.WORD
        elif (m := _NUMBER.match(text, i)) is not None:
            j, kind = m.end(), Kind.NUMBER
        elif (m := _OPS.match(text, i)) is not None:
            j, kind = m.end(), Kind.OP
        else:
            j, kind = i + 1, Kind.OP
        out.append(Token(kind, text[i:j], i))
        i = j
    return out


def significant(tokens: list[Token]) -> list[Token]:
    """The tokens without spaces and comments."""
    return [t for t in tokens if t.kind not in (Kind.SPACE, Kind.COMMENT)]


def split_statements(text: str) -> list[str]:
    """The statements of a query string, split at semicolons outside quotes and comments
    (each without its semicolon; blank ones left out)."""
    out: list[str] = []
    start = 0
    for tok in tokenize(text):
        if tok.kind is Kind.OP and tok.text == ";":
            out.append(text[start:tok.start])
            start = tok.end
    out.append(text[start:])
    return [s for s in out if significant(tokenize(s))]
