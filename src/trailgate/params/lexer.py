"""Split GoldenGate parameter text into statements of tokens, keeping file and line.

The rules GoldenGate users rely on: ``--`` starts a comment anywhere outside quotes, a line
whose first word is ``COMMENT`` is a comment, a statement ends at the end of its line unless
the line ends with ``&``, and ``TABLE`` / ``MAP`` statements run until ``;`` however many
lines they take.  Keywords are case-insensitive; ``'...'`` is a string and ``"..."`` a quoted
(case-sensitive) identifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from trailgate.errors import ConfigError

__all__ = ["Statement", "Tok", "Token", "split_statements", "tokenize_line"]

#: Statements that end with ';' rather than at the end of the line.
SEMICOLON_STATEMENTS = frozenset({"TABLE", "MAP"})
#: Keywords that cannot appear inside a TABLE/MAP: seeing one first on a line means the
#: previous TABLE/MAP lacks its ';'.
_STATEMENT_STARTERS = frozenset({"TABLE", "MAP", "TABLEEXCLUDE", "MAPEXCLUDE", "EXTRACT",
                                 "REPLICAT", "EXTTRAIL", "RMTTRAIL"})
_PUNCT = {",": "COMMA", "(": "LPAREN", ")": "RPAREN", "=": "EQ", ";": "SEMI"}


class Tok(StrEnum):
    """Token kinds."""

    WORD = "WORD"  # keywords, names, numbers, paths, wildcards, @FUNCTIONS
    STRING = "STRING"  # 'text'
    QIDENT = "QIDENT"  # "Quoted Identifier"
    COMMA = "COMMA"
    LPAREN = "LPAREN"
    RPAREN = "RPAREN"
    EQ = "EQ"
    SEMI = "SEMI"
    OP = "OP"  # comparison operators inside WHERE: < > <= >= <> !=


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``value`` is unquoted, ``text`` as written; ``glued`` is True when no
    whitespace separates it from the previous token (so ``public."Tab"`` or
    ``host=x`` can be read back as one value)."""

    kind: Tok
    value: str
    text: str
    line: int
    glued: bool = False

    @property
    def upper(self) -> str:
        """The keyword form (upper case) of a WORD."""
        return self.value.upper() if self.kind is Tok.WORD else ""

    def is_kw(self, *words: str) -> bool:
        """True if this is an unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind is Tok.WORD and self.value.upper() in words


@dataclass(slots=True)
class Statement:
    """One parameter statement: its tokens, the file it came from and the line it starts."""

    tokens: list[Token]
    path: str
    line: int
    text: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def keyword(self) -> str:
        return self.tokens[0].upper


def _find_comment(text: str) -> int:
    """Index of a ``--`` comment start outside quotes, or -1."""
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "-" and text.startswith("--", i):
            return i
        i += 1
    return -1


def tokenize_line(text: str, line: int, path: str | None = None) -> list[Token]:
    """Tokenize one logical line (comments already removed)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    glued = False
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            glued = False
            continue
        start = i
        if c in "'\"":
            j = i + 1
            buf = []
            while True:
                if j >= n:
                    what = "string" if c == "'" else "quoted identifier"
                    raise ConfigError(f"unterminated {what} starting {text[start:start + 30]!r}:"
                                      f" close it with {c}", path=path, line=line)
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:  # doubled quote is a literal quote
                        buf.append(c)
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            kind = Tok.STRING if c == "'" else Tok.QIDENT
            tokens.append(Token(kind, "".join(buf), text[start:j + 1], line, glued))
            i = j + 1
        elif c in "<>" or (c == "!" and text.startswith("!=", i)):
            j = i + 1
            if j < n and text[j] in "=>":
                j += 1
            op = text[i:j]
            if op not in ("<", ">", "<=", ">=", "<>", "!="):
                raise ConfigError(f"unexpected {op!r} in {text.strip()!r}", path=path,
                                  line=line)
            tokens.append(Token(Tok.OP, op, op, line, glued))
            i = j
        elif c in _PUNCT:
            tokens.append(Token(Tok(_PUNCT[c]), c, c, line, glued))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "'\",()=;<>":
                if text[j] == "!" and j + 1 < n and text[j + 1] == "=":
                    break
                j += 1
            word = text[i:j]
            tokens.append(Token(Tok.WORD, word, word, line, glued))
            i = j
        glued = True
    return tokens


def _strip_line(raw: str) -> str:
    cut = _find_comment(raw)
    text = raw if cut < 0 else raw[:cut]
    first = text.split(None, 1)
    if first and first[0].upper() == "COMMENT":
        return ""
    return text.rstrip()


def split_statements(text: str, path: str) -> list[Statement]:
    """Split parameter-file text into statements, each knowing its file and first line."""
    statements: list[Statement] = []
    pending: Statement | None = None  # a TABLE/MAP waiting for ';' or a '&' continuation
    waiting_semi = False
    continued = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = _strip_line(raw)
        if not body.strip():
            continue
        cont = body.endswith("&")
        if cont:
            body = body[:-1]
        tokens = tokenize_line(body, lineno, path)
        if pending is not None and waiting_semi and not continued and tokens \
                and tokens[0].upper in _STATEMENT_STARTERS:
            raise ConfigError(
                f"{pending.keyword} statement starting at line {pending.line} has no ending "
                f"';': end it with ';' before the next statement", path=path, line=lineno)
        if pending is None:
            if not tokens:
                continue
            if tokens[0].kind is not Tok.WORD:
                raise ConfigError(f"a parameter must start with a parameter name, not "
                                  f"{tokens[0].text!r}", path=path, line=lineno)
            pending = Statement(tokens, path, lineno, body.strip())
            waiting_semi = pending.keyword in SEMICOLON_STATEMENTS
        else:
            pending.tokens.extend(tokens)
            pending.text += " " + body.strip()
        continued = cont
        if waiting_semi:
            semis = [k for k, t in enumerate(pending.tokens) if t.kind is Tok.SEMI]
            if semis:
                end = semis[0]
                rest = pending.tokens[end + 1:]
                if rest:
                    raise ConfigError(f"unexpected {rest[0].text!r} after ';': put each "
                                      f"statement on its own line", path=path,
                                      line=rest[0].line)
                pending.tokens = pending.tokens[:end]
                statements.append(pending)
                pending = None
        elif not cont:
            statements.append(pending)
            pending = None
    if pending is not None:
        if waiting_semi:
            raise ConfigError(f"{pending.keyword} statement has no ending ';': end it with "
                              f"';'", path=path, line=pending.line)
        raise ConfigError("the last line ends with '&' but nothing follows it", path=path,
                          line=pending.line)
    return statements
