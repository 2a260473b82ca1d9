"""A cursor over one statement's tokens, with the small parsing steps every parameter uses.

Errors raised here name the file and line of the token in question and quote the statement,
so a person sees exactly which text was not understood.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

from trailgate.errors import ConfigError
from trailgate.params.lexer import Statement, Tok, Token
from trailgate.params.model import (
    ColumnRef,
    Compare,
    Condition,
    Expr,
    FunctionCall,
    Literal,
    Logical,
    WhereClause,
)
from trailgate.params.names import parse_name

__all__ = ["Cursor"]

T = TypeVar("T")

#: Column-conversion functions trailgate evaluates (others are an error, not ignored).
FUNCTIONS = frozenset({"GETENV", "TOKEN", "DATENOW"})
#: Presence tests usable in WHERE.
PRESENCE = frozenset({"NULL", "PRESENT", "ABSENT"})
#: @GETENV information classes and the fields trailgate provides for each.
GETENV_FIELDS: dict[str, frozenset[str]] = {
    "GGHEADER": frozenset({
        "COMMITTIMESTAMP", "OPTYPE", "TABLENAME", "OBJECTNAME", "LOGPOSITION", "LOGRBA",
        "TRANSACTIONINDICATOR", "BEFOREAFTERINDICATOR", "RECORDLENGTH", "TIMESTAMP",
    }),
    "TRANSACTION": frozenset({"CSN", "XID", "TRANSACTIONID", "NAME", "USERNAME"}),
    "GGENVIRONMENT": frozenset({"GROUPNAME", "GROUPTYPE", "GROUPDESCRIPTION", "HOSTNAME",
                                "OSUSERNAME", "PROCESSID"}),
    "RECORD": frozenset({"FILESEQNO", "FILERBA", "TIMESTAMP"}),
}


class Cursor:
    """Walk a statement's tokens left to right."""

    def __init__(self, stmt: Statement, start: int = 1):
        self.stmt = stmt
        self.tokens = stmt.tokens
        self.i = start

    # -- basics ------------------------------------------------------------------------
    def error(self, message: str, tok: Token | None = None) -> NoReturn:
        """Raise a ConfigError at ``tok`` (or the statement), quoting the statement."""
        line = tok.line if tok is not None else self.stmt.line
        text = self.stmt.text if len(self.stmt.text) <= 120 else self.stmt.text[:117] + "..."
        raise ConfigError(f"{message} (in: {text})", path=self.stmt.path, line=line)

    def peek(self, offset: int = 0) -> Token | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def next(self, what: str) -> Token:
        """The next token; ``what`` says what was expected if there is none."""
        tok = self.peek()
        if tok is None:
            last = self.tokens[-1] if self.tokens else None
            self.error(f"{self.stmt.keyword}: expected {what} but the statement ends", last)
        self.i += 1
        return tok

    def accept(self, kind: Tok) -> Token | None:
        tok = self.peek()
        if tok is not None and tok.kind is kind:
            self.i += 1
            return tok
        return None

    def accept_kw(self, *words: str) -> str | None:
        """Consume and return (upper-cased) the next word if it is one of ``words``."""
        tok = self.peek()
        if tok is not None and tok.is_kw(*words):
            self.i += 1
            return tok.upper
        return None

    def expect(self, kind: Tok, what: str) -> Token:
        tok = self.next(what)
        if tok.kind is not kind:
            self.error(f"{self.stmt.keyword}: expected {what}, found {tok.text!r}", tok)
        return tok

    def expect_kw(self, *words: str) -> str:
        what = " or ".join(words)
        tok = self.next(what)
        if not tok.is_kw(*words):
            self.error(f"{self.stmt.keyword}: expected {what}, found {tok.text!r}", tok)
        return tok.upper

    def skip_comma(self) -> bool:
        return self.accept(Tok.COMMA) is not None

    def end(self) -> None:
        """Insist that the statement has nothing left."""
        self.accept(Tok.SEMI)  # tolerate a stray ';' at the end of a one-line parameter
        tok = self.peek()
        if tok is not None:
            self.error(f"{self.stmt.keyword}: unexpected {tok.text!r}", tok)

    # -- values ------------------------------------------------------------------------
    def value(self, what: str) -> str:
        """One value: a string, a quoted identifier, or a run of glued tokens (a path, a
        conninfo fragment like ``host=db``, a name like ``public."Tab"``) taken as written."""
        first = self.next(what)
        if first.kind in (Tok.STRING, Tok.QIDENT) and not self._glued_next():
            return first.value
        if first.kind not in (Tok.WORD, Tok.QIDENT, Tok.EQ):
            self.error(f"{self.stmt.keyword}: expected {what}, found {first.text!r}", first)
        parts = [first.text]
        while self._glued_next():
            parts.append(self.next(what).text)
        return "".join(parts)

    def _glued_next(self) -> bool:
        tok = self.peek()
        return tok is not None and tok.glued and tok.kind in (Tok.WORD, Tok.QIDENT, Tok.EQ,
                                                              Tok.STRING)

    def words_until(self, *stop: str) -> str:
        """Space-joined values up to a stop keyword, comma or the end (an unquoted
        conninfo such as ``host=db port=5432 dbname=app``)."""
        parts = []
        while not self.at_end():
            tok = self.peek()
            assert tok is not None
            if tok.kind is Tok.COMMA or tok.is_kw(*stop):
                break
            parts.append(self.value("a value"))
        if not parts:
            self.error(f"{self.stmt.keyword}: expected a value")
        return " ".join(parts)

    def integer(self, what: str, *, minimum: int | None = 0) -> int:
        tok = self.next(what)
        try:
            n = int(tok.value)
        except ValueError:
            self.error(f"{self.stmt.keyword}: expected {what} (a whole number), found "
                       f"{tok.text!r}", tok)
        if minimum is not None and n < minimum:
            self.error(f"{self.stmt.keyword}: {what} must be at least {minimum}, not {n}", tok)
        return n

    def number(self, what: str) -> float:
        tok = self.next(what)
        try:
            n = float(tok.value)
        except ValueError:
            self.error(f"{self.stmt.keyword}: expected {what} (a number), found {tok.text!r}",
                       tok)
        if n < 0:
            self.error(f"{self.stmt.keyword}: {what} cannot be negative", tok)
        return n

    def object_name(self, what: str = "a schema.table name") -> str:
        """A possibly quoted, possibly wildcarded ``schema.table`` as written."""
        tok = self.peek()
        if tok is None or tok.kind not in (Tok.WORD, Tok.QIDENT):
            self.error(f"{self.stmt.keyword}: expected {what}"
                       + (f", found {tok.text!r}" if tok else ""), tok)
        name = self.value(what)
        try:
            parts = parse_name(name)
        except ValueError as exc:
            self.error(f"{self.stmt.keyword}: {exc}", tok)
        if len(parts) == 1:
            self.error(f"{self.stmt.keyword}: {name!r} needs a schema: write schema.table "
                       f"(or schema.* for every table of a schema)", tok)
        if len(parts) > 3:
            self.error(f"{self.stmt.keyword}: {name!r} has too many parts", tok)
        return name

    def column_name(self) -> tuple[str, bool]:
        tok = self.next("a column name")
        if tok.kind not in (Tok.WORD, Tok.QIDENT):
            self.error(f"{self.stmt.keyword}: expected a column name, found {tok.text!r}", tok)
        return tok.value, tok.kind is Tok.QIDENT

    def paren_list(self, item: Callable[[], T], what: str) -> list[T]:
        """``( item, item, ... )`` with at least one item."""
        self.expect(Tok.LPAREN, f"'(' to start {what}")
        items = [item()]
        while self.skip_comma():
            items.append(item())
        self.expect(Tok.RPAREN, f"',' or ')' in {what}")
        return items

    # -- expressions -------------------------------------------------------------------
    def expr(self) -> Expr:
        """A COLMAP/TOKENS source expression: column, literal, or @FUNCTION(args)."""
        tok = self.next("an expression")
        if tok.kind is Tok.STRING:
            return Literal(tok.value)
        if tok.kind is Tok.QIDENT:
            return ColumnRef(tok.value, quoted=True)
        if tok.kind is not Tok.WORD:
            self.error(f"{self.stmt.keyword}: expected a column, literal or @function, found "
                       f"{tok.text!r}", tok)
        if tok.value.startswith("@"):
            return self._function(tok)
        if _is_number(tok.value):
            return Literal(tok.value, is_number=True)
        return ColumnRef(tok.value)

    def _function(self, tok: Token) -> FunctionCall:
        name = tok.value[1:].upper()
        if name in PRESENCE:
            return FunctionCall(name)
        if name not in FUNCTIONS:
            self.error(f"{self.stmt.keyword}: unsupported function {tok.value}; trailgate "
                       f"supports {', '.join('@' + f for f in sorted(FUNCTIONS))}", tok)
        self.expect(Tok.LPAREN, f"'(' after {tok.value}")
        args: list[Expr] = []
        if self.accept(Tok.RPAREN) is None:
            args.append(self.expr())
            while self.skip_comma():
                args.append(self.expr())
            self.expect(Tok.RPAREN, f"')' to close {tok.value}")
        return self._check_call(FunctionCall(name, tuple(args)), tok)

    def _check_call(self, call: FunctionCall, tok: Token) -> FunctionCall:
        """Validate arguments now, so a typo fails at startup rather than mid-apply."""
        def strings() -> list[str]:
            out = []
            for a in call.args:
                if not isinstance(a, Literal) or a.is_number:
                    self.error(f"{self.stmt.keyword}: @{call.name} takes quoted string "
                               f"arguments", tok)
                out.append(a.value)
            return out

        if call.name == "GETENV":
            args = [a.upper() for a in strings()]
            if len(args) != 2 or args[0] not in GETENV_FIELDS:
                self.error(f"{self.stmt.keyword}: @GETENV takes ('class', 'field') with class "
                           f"one of {', '.join(sorted(GETENV_FIELDS))}", tok)
            if args[1] not in GETENV_FIELDS[args[0]]:
                self.error(f"{self.stmt.keyword}: @GETENV('{args[0]}', ...) field must be one "
                           f"of {', '.join(sorted(GETENV_FIELDS[args[0]]))}", tok)
            return FunctionCall(call.name, tuple(Literal(a) for a in args))
        elif call.name == "TOKEN":
            if len(strings()) != 1:
                self.error(f"{self.stmt.keyword}: @TOKEN takes one token name: "
                           f"@TOKEN('name')", tok)
        elif call.name == "DATENOW" and call.args:
            self.error(f"{self.stmt.keyword}: @DATENOW takes no arguments: @DATENOW()", tok)
        return call

    def where(self) -> WhereClause:
        """``( condition )`` for WHERE: comparisons joined by AND/OR, with parentheses."""
        self.expect(Tok.LPAREN, "'(' to start the WHERE condition")
        start = self.i
        cond = self._or()
        self.expect(Tok.RPAREN, "')' to end the WHERE condition")
        text = " ".join(t.text for t in self.tokens[start:self.i - 1])
        return WhereClause(text, cond)

    def _or(self) -> Condition:
        items = [self._and()]
        while self.accept_kw("OR"):
            items.append(self._and())
        return items[0] if len(items) == 1 else Logical("OR", tuple(items))

    def _and(self) -> Condition:
        items = [self._primary()]
        while self.accept_kw("AND"):
            items.append(self._primary())
        return items[0] if len(items) == 1 else Logical("AND", tuple(items))

    def _primary(self) -> Condition:
        if self.accept(Tok.LPAREN):
            cond = self._or()
            self.expect(Tok.RPAREN, "')'")
            return cond
        left = self.expr()
        tok = self.next("a comparison operator (=, <>, <, >, <=, >=)")
        if tok.kind is Tok.EQ:
            op = "="
        elif tok.kind is Tok.OP:
            op = "<>" if tok.value == "!=" else tok.value
        else:
            self.error(f"{self.stmt.keyword}: expected a comparison operator, found "
                       f"{tok.text!r}", tok)
        return Compare(left, op, self.expr())


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
