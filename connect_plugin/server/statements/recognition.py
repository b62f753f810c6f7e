"""Recognising the SQL statements the gateway handles itself, without stalling anyone.

The text is tokenized by sqlglot's Spark dialect, so comments, string
literals, backticks and case never fool the match. Only statement heads
are interpreted: the query of a CTTAS is cut out of the original text at
the position of its first token and reaches Spark exactly as the user wrote
it. Anything that is not one of ours is ``None`` and goes to Spark unchanged.

Every client shares the gateway's one event loop, and tokenizing costs
microseconds per character, so a statement of megabytes must never be
tokenized whole there:

- a statement whose first keyword (after comments) starts none of ours is
  decided at once from a bounded prefix;
- the rest is tokenized in windows that grow (512, 4096, 65536 characters)
  only while a grammar rule asks for more tokens; nothing past the last
  window is ever tokenized (``MAX_TOKENIZED_CHARS``);
- a text longer than ``INLINE_CHARS`` is recognised on a worker thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from pyspark.sql.connect import proto as spark_proto
from sqlglot import Dialect, Token, TokenError, TokenType

from connect_plugin.errors import StatementSyntaxError
from connect_plugin.server.model.statements import Name, Statement

_SPARK = Dialect.get_or_raise("spark")
_PUNCTUATION = frozenset(
    (
        TokenType.L_PAREN,
        TokenType.R_PAREN,
        TokenType.COMMA,
        TokenType.DOT,
        TokenType.EQ,
        TokenType.SEMICOLON,
        TokenType.STRING,
        TokenType.NUMBER,
        TokenType.STAR,
    )
)
_NOT_A_NAME = _PUNCTUATION | {TokenType.ALIAS}
_FIRST_WORD = re.compile(r"[A-Za-z_]+")
_LINE_COMMENT = re.compile(r"--[^\n]*")
WINDOWS = (512, 4096, 65536)
"""Characters tokenized per attempt; a rule that needs more tokens gets the next window."""
MAX_TOKENIZED_CHARS = WINDOWS[-1]
PREFIX_CHARS = 4096
"""How far comments and blanks before the first keyword are looked through."""
INLINE_CHARS = 2048
"""Texts up to this long are recognised on the event loop; longer ones on a worker thread."""
LEFTOVER_SHOWN_CHARS = 80


class _NeedMore(Exception):
    """A rule asked for a token past the current window."""


@dataclass(frozen=True)
class SqlText:
    """The SQL a request holds, and how to send another text with the same arguments."""

    text: str
    relation_of: Callable[[str], spark_proto.Relation]


@dataclass(frozen=True)
class Window:
    """The tokens of a text's first ``size`` characters; ``final``: no larger window follows."""

    tokens: list[Token]
    final: bool

    @classmethod
    def of(cls, text: str, size: int) -> Window:
        complete = size >= len(text)
        return cls(_tokens(text[:size], complete=complete), complete or size >= MAX_TOKENIZED_CHARS)


class Cursor:
    """Walks the tokens of a window of the text, matching keywords by text without case."""

    def __init__(self, sql: SqlText, window: Window) -> None:
        self.sql = sql
        self.text = sql.text
        self.final = window.final
        self.tokens = window.tokens
        self.at = 0

    @classmethod
    def over(cls, sql: SqlText) -> Cursor:
        """A cursor over all of a (short) text."""
        return cls(sql, Window.of(sql.text, len(sql.text)))

    def command_words(self) -> Cursor:
        """The words after SHOW and similar commands, which sqlglot keeps as one string."""
        token = self._token(self.at)
        if token is None or token.token_type is not TokenType.STRING:
            return self
        return Cursor.over(SqlText(token.text, self.sql.relation_of))

    def _token(self, index: int) -> Token | None:
        if index < len(self.tokens):
            return self.tokens[index]
        if not self.final:
            raise _NeedMore
        return None

    def peek(self, *words: str) -> bool:
        """Whether the next tokens are ``words`` (each may be 'A|B' alternatives); a quoted
        name or a string is never a word."""
        for offset, word in enumerate(words):
            token = self._token(self.at + offset)
            if token is None or token.token_type in (TokenType.IDENTIFIER, TokenType.STRING):
                return False
            if token.text.upper() not in word.split("|"):
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.peek(*words):
            self.at += len(words)
            return True
        return False

    def expect(self, what: str, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {what}")

    def done(self) -> bool:
        return self._token(self.at) is None

    def error(self, problem: str) -> StatementSyntaxError:
        """A syntax error at the cursor, naming what stands there as Spark's parser would."""
        token = self._token(self.at)
        if token is None:
            near = "end of input"
            where = "at the end of the statement"
            if len(self.text) > MAX_TOKENIZED_CHARS:
                where = f"within its first {MAX_TOKENIZED_CHARS} characters"
        else:
            near = f"'{token.text}'"
            where = f"at [{token.text}] (line {token.line}, column {token.col})"
        return StatementSyntaxError(f"{problem} {where}", near=near, problem=problem)

    def identifier(self, what: str) -> str:
        token = self._token(self.at)
        if token is None or token.token_type in _NOT_A_NAME:
            raise self.error(f"expected {what}")
        self.at += 1
        return token.text

    def name(self, what: str) -> Name:
        """A dotted name, or ``IDENTIFIER('a.b')`` with a string literal."""
        if self.peek("IDENTIFIER", "("):
            self.at += 2
            literal = self._token(self.at)
            if literal is None or literal.token_type is not TokenType.STRING:
                raise self.error(f"expected {what} as a string literal in IDENTIFIER(...)")
            self.at += 1
            self.expect("')' after IDENTIFIER('...')", ")")
            return _name_of(literal.text, what)
        parts = [self.identifier(what)]
        while (token := self._token(self.at)) is not None and token.token_type is TokenType.DOT:
            self.at += 1
            parts.append(self.identifier(what))
        return Name(tuple(parts))

    def name_list(self, what: str) -> tuple[str, ...]:
        self.expect(f"'(' before the {what}", "(")
        names = [self.identifier(what)]
        while self.accept(","):
            names.append(self.identifier(what))
        self.expect(f"')' after the {what}", ")")
        return tuple(names)

    def column_list(self) -> tuple[tuple[str, ...], str | None]:
        """``(a, b)``: the names; ``(a INT NOT NULL, b STRING COMMENT '...')``: the original
        text of the column definitions, for Spark to parse as DDL."""
        start = self.at
        definitions = self.parenthesized("the columns")
        end = self.at
        self.at = start + 1
        names = [self.identifier("column names")]
        while self.accept(","):
            names.append(self.identifier("column names"))
        named = self.at == end - 1
        self.at = end
        return (tuple(names), None) if named else ((), definitions)

    def literal(self, what: str) -> str:
        token = self._token(self.at)
        if token is None or (
            token.token_type in _PUNCTUATION
            and token.token_type not in (TokenType.STRING, TokenType.NUMBER)
        ):
            raise self.error(f"expected {what}")
        self.at += 1
        return token.text

    def parenthesized(self, what: str) -> str:
        """The original text between ``(`` and its matching ``)``, e.g. a list of column DDL."""
        self.expect(f"'(' before {what}", "(")
        first = self._token(self.at)
        depth = 1
        while (token := self._token(self.at)) is not None:
            self.at += 1
            if token.token_type is TokenType.L_PAREN:
                depth += 1
            elif token.token_type is TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    assert first is not None
                    return self.text[first.start : token.start]
        raise self.error(f"expected ')' after {what}")

    def expression(self, what: str, *, stops: Sequence[str] = (), comma: bool = False) -> str:
        """The original text of an expression, up to a keyword of ``stops`` (or a comma,
        or the end) outside parentheses and CASE ... END; ``stops`` may be 'A B' sequences."""
        first = self._token(self.at)
        last: Token | None = None
        depth = 0
        while (token := self._token(self.at)) is not None:
            if depth == 0 and (
                (comma and token.token_type is TokenType.COMMA)
                or token.token_type is TokenType.R_PAREN
                or (token.token_type is TokenType.SEMICOLON and self._token(self.at + 1) is None)
                or any(self.peek(*stop.split()) for stop in stops)
            ):
                break
            if token.token_type in (TokenType.L_PAREN, TokenType.CASE):
                depth += 1
            elif token.token_type in (TokenType.R_PAREN, TokenType.END):
                depth -= 1
            last = token
            self.at += 1
        if first is None or last is None:
            raise self.error(f"expected {what}")
        return self.text[first.start : last.end + 1]

    def options(self) -> dict[str, str]:
        return dict(self.option_pairs())

    def option_pairs(self) -> list[tuple[str, str]]:
        """``(key 'value', ...)`` as written, repeated keys included."""
        self.expect("'(' before the options", "(")
        options: list[tuple[str, str]] = []
        while True:
            token = self._token(self.at)
            if token is not None and token.token_type is TokenType.STRING:
                self.at += 1
                key = token.text
            else:
                key = str(self.name("an option name"))
            self.accept("=")
            options.append((key, self.literal(f"a value for option [{key}]")))
            if not self.accept(","):
                break
        self.expect("')' after the options", ")")
        return options

    def rest(self) -> str:
        """The original text from the next token on (after the window too)."""
        token = self._token(self.at)
        if token is not None:
            return self.text[token.start :]
        end = self.tokens[-1].end + 1 if self.tokens else 0
        return self.text[end:] if len(self.text) > MAX_TOKENIZED_CHARS else ""

    def statement_rest(self) -> str:
        """``rest()`` without the statement's closing semicolons and the comments after them
        (a text longer than the tokenized windows loses only the semicolons it ends with)."""
        first = self._token(self.at)
        if first is None or len(self.text) > MAX_TOKENIZED_CHARS:
            rest = self.rest().rstrip()
            while rest.endswith(";"):
                rest = rest[:-1].rstrip()
            return rest
        end = self.at
        while self._token(end) is not None:
            end += 1
        while end > self.at and self.tokens[end - 1].token_type is TokenType.SEMICOLON:
            end -= 1
        if end == len(self.tokens):
            return self.text[first.start :]
        return self.text[first.start : self.tokens[end].start]

    def leftover(self) -> str:
        """What follows a statement that should have ended here ('' when nothing does).

        A single ``;`` at the very end is part of the statement; comments and
        blanks never count.
        """
        if self.peek(";") and self._token(self.at + 1) is None:
            return ""
        rest = self.rest().strip()
        if len(rest) > LEFTOVER_SHOWN_CHARS:
            rest = rest[:LEFTOVER_SHOWN_CHARS] + "..."
        return rest

    def skip_to_end(self) -> None:
        while not self.done():
            self.at += 1


def _tokens(text: str, *, complete: bool) -> list[Token]:
    """Spark SQL tokens of ``text``; of a cut text, the ones that are certainly whole."""
    tokenizer = _SPARK.tokenizer_class(dialect=_SPARK)
    try:
        tokens = list(tokenizer.tokenize(text))
    except TokenError:
        if complete:
            return []
        tokens = list(tokenizer.tokens)
    if not complete and tokens:
        tokens.pop()
    return tokens


_CHAR_TYPES = frozenset((TokenType.CHAR, TokenType.VARCHAR, TokenType.NCHAR, TokenType.NVARCHAR))


def char_types(definitions: str) -> list[str]:
    """The ``CHAR(n)`` and ``VARCHAR(n)`` types written in column definitions, as written."""
    tokens = _tokens(definitions, complete=True)
    found = []
    for at, token in enumerate(tokens[:-3]):
        if token.token_type in _CHAR_TYPES and tokens[at + 1].token_type is TokenType.L_PAREN:
            found.append(definitions[token.start : tokens[at + 3].end + 1])
    return found


_OPENING = frozenset((TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE))
_CLOSING = frozenset((TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE))
_NAMES = frozenset((TokenType.VAR, TokenType.IDENTIFIER))
_UNSPLIT = frozenset((TokenType.OR, TokenType.XOR, TokenType.CASE, TokenType.BETWEEN))
"""Words that, outside parentheses, keep ANDs from splitting a condition into conjuncts:
an OR binds looser, and CASE and BETWEEN hold ANDs of their own."""
MAX_CONDITION_CHARS = 2048
"""Longer conditions are not looked into for the columns they compare (``compared_column``)."""
_UNREAD = ("--", "/*", "${", "\\")
"""Texts a condition is not looked into with: Spark's comments (a line comment ending in a
backslash goes on in Spark, not in sqlglot), its ``${var}`` substitution before parsing,
and escapes."""


def compared_column(condition: str, qualifier: str, columns: Collection[str]) -> str | None:
    """One of ``columns``, ``c``, such that ``condition`` is a conjunction with
    ``qualifier.c = x.y`` (or ``x.y = qualifier.c``) among its terms: the condition is
    never true where that column is NULL. Names match exactly, as they do whether or not
    Spark is case-sensitive. ``None`` when it has none, or is too long or too unusual to
    look into."""
    if len(condition) > MAX_CONDITION_CHARS or any(text in condition for text in _UNREAD):
        return None
    terms: list[list[Token]] = [[]]
    depth = 0
    for token in _tokens(condition, complete=True):
        if token.token_type in _OPENING:
            depth += 1
        elif token.token_type in _CLOSING:
            depth -= 1
        elif depth == 0 and token.token_type in _UNSPLIT:
            return None
        elif depth == 0 and token.token_type is TokenType.AND:
            terms.append([])
            continue
        terms[-1].append(token)
    for term in terms:
        kinds = [t.token_type for t in term]
        if len(term) != 7 or kinds[3] is not TokenType.EQ:
            continue
        if kinds[1] is not TokenType.DOT or kinds[5] is not TokenType.DOT:
            continue
        if not all(kinds[at] in _NAMES for at in (0, 2, 4, 6)):
            continue
        for at in (0, 4):
            if term[at].text == qualifier and term[at + 2].text in columns:
                return term[at + 2].text
    return None


def _name_of(text: str, what: str) -> Name:
    try:
        parts = [t.text for t in _tokens(text, complete=True) if t.token_type is not TokenType.DOT]
    except TokenError:
        parts = []
    if not parts:
        raise StatementSyntaxError(
            f"expected {what} in IDENTIFIER('{text}')", near=f"'{text}'", problem=f"expected {what}"
        )
    return Name(tuple(parts))


Rule = Callable[[Cursor], Statement | None]
"""A grammar rule: the request the statement at the cursor is, or None if it is none of its."""


def first_keyword(text: str) -> str:
    """The first word of a statement after blanks and comments (upper case; '' if none).

    Looks no further than ``PREFIX_CHARS``, so deciding that a statement is
    none of ours costs the same for any length of statement.
    """
    head = text[:PREFIX_CHARS]
    at = 0
    while at < len(head):
        if head[at].isspace():
            at += 1
        elif head.startswith("--", at):
            match = _LINE_COMMENT.match(head, at)
            at = match.end() if match else len(head)
        elif head.startswith("/*", at):
            at = _comment_end(head, at)
        else:
            word = _FIRST_WORD.match(head, at)
            return word.group(0).upper() if word else ""
    return ""


def _comment_end(text: str, at: int) -> int:
    """Where a (possibly nested) bracketed comment starting at ``at`` ends."""
    depth, at = 1, at + 2
    while depth and at < len(text):
        opening, closing = text.find("/*", at), text.find("*/", at)
        if closing < 0:
            return len(text)
        if 0 <= opening < closing:
            depth, at = depth + 1, opening + 2
        else:
            depth, at = depth - 1, closing + 2
    return at


def recognise(sql: SqlText, rules: Sequence[Rule]) -> Statement | None:
    """The request ``sql`` is, by the first rule that recognises it; None for Spark's own."""
    for size in WINDOWS:
        window = Window.of(sql.text, size)
        try:
            for rule in rules:
                found = rule(Cursor(sql, window))
                if found is not None:
                    return found
            return None
        except _NeedMore:
            continue
    return None
