"""Recognising the SQL statements the gateway handles itself.

The text is tokenized by sqlglot's Spark dialect, so comments, string
literals, backticks and case never fool the match. Only the statement head is
interpreted; the query of a CTTAS is cut out of the original text at the
position of its first token and reaches Spark exactly as the user wrote it.
Anything that is not one of ours returns ``None`` and goes to Spark unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import Dialect, Token, TokenError, TokenType

from connect_plugin.errors import TempTableError

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
MAX_NAME_LENGTH = 128


@dataclass(frozen=True)
class Name:
    """A possibly qualified object name as the user spelled it."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def qualifier(self) -> str | None:
        return ".".join(self.parts[:-1]) if len(self.parts) > 1 else None

    def __str__(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class CreateTempTable:
    name: Name
    query: str
    column_names: tuple[str, ...] = ()
    format: str | None = None
    partition_columns: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    or_replace: bool = False


@dataclass(frozen=True)
class DropTable:
    name: Name
    if_exists: bool


@dataclass(frozen=True)
class DropView:
    name: Name
    if_exists: bool


@dataclass(frozen=True)
class ShowTempTables:
    pass


@dataclass(frozen=True)
class InsertInto:
    name: Name


@dataclass(frozen=True)
class CreateTempView:
    name: Name


@dataclass(frozen=True)
class CreatePersistentView:
    name: Name
    sources: tuple[Name, ...]


Statement = (
    CreateTempTable
    | DropTable
    | DropView
    | ShowTempTables
    | InsertInto
    | CreateTempView
    | CreatePersistentView
)


class _Cursor:
    """Walks a token list with keyword matching by text, ignoring case."""

    def __init__(self, sql: str, tokens: Sequence[Token]) -> None:
        self.sql = sql
        self.tokens = tokens
        self.at = 0

    def peek(self, *words: str) -> bool:
        """Whether the next tokens are ``words`` (each may be 'A|B' alternatives)."""
        for offset, word in enumerate(words):
            index = self.at + offset
            if index >= len(self.tokens):
                return False
            token = self.tokens[index]
            if token.token_type is TokenType.IDENTIFIER or token.text.upper() not in word.split("|"):
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
        return self.at >= len(self.tokens)

    def error(self, problem: str) -> TempTableError:
        if self.done():
            where = "at the end of the statement"
        else:
            token = self.tokens[self.at]
            where = f"at [{token.text}] (line {token.line}, column {token.col})"
        return TempTableError(f"{problem} {where}")

    def identifier(self, what: str) -> str:
        if self.done() or self.tokens[self.at].token_type in _NOT_A_NAME:
            raise self.error(f"expected {what}")
        token = self.tokens[self.at]
        self.at += 1
        return token.text

    def name(self, what: str) -> Name:
        parts = [self.identifier(what)]
        while not self.done() and self.tokens[self.at].token_type is TokenType.DOT:
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

    def literal(self, what: str) -> str:
        if self.done():
            raise self.error(f"expected {what}")
        token = self.tokens[self.at]
        if token.token_type in _PUNCTUATION and token.token_type not in (
            TokenType.STRING,
            TokenType.NUMBER,
        ):
            raise self.error(f"expected {what}")
        self.at += 1
        return token.text

    def option_key(self) -> str:
        if not self.done() and self.tokens[self.at].token_type is TokenType.STRING:
            self.at += 1
            return self.tokens[self.at - 1].text
        return str(self.name("an option name"))

    def options(self) -> dict[str, str]:
        self.expect("'(' before the options", "(")
        options: dict[str, str] = {}
        while True:
            key = self.option_key()
            self.accept("=")
            options[key] = self.literal(f"a value for option [{key}]")
            if not self.accept(","):
                break
        self.expect("')' after the options", ")")
        return options

    def rest(self) -> str:
        return self.sql[self.tokens[self.at].start :] if not self.done() else ""


def tokenize(sql: str) -> list[Token]:
    """Spark SQL tokens of ``sql``; an empty list for text that is not SQL at all."""
    try:
        return [t for t in _SPARK.tokenize(sql) if t.token_type is not TokenType.SEMICOLON]
    except TokenError:
        return []


def parse_statement(sql: str) -> Statement | None:
    """The statement ``sql`` holds when the gateway handles it, else ``None``."""
    cursor = _Cursor(sql, tokenize(sql))
    if cursor.accept("CREATE"):
        return _create(cursor)
    if cursor.accept("DROP"):
        return _drop(cursor)
    if cursor.accept("SHOW"):
        return _show(sql, cursor)
    if cursor.accept("INSERT", "INTO|OVERWRITE"):
        cursor.accept("TABLE")
        return InsertInto(cursor.name("a table name"))
    return None


def _show(sql: str, cursor: _Cursor) -> Statement | None:
    """SHOW statements: sqlglot keeps everything after SHOW as one command string."""
    if cursor.done():
        return None
    rest = cursor.tokens[cursor.at]
    words = _Cursor(sql, tokenize(rest.text)) if rest.token_type is TokenType.STRING else cursor
    if words.accept("TEMPORARY|TEMP", "TABLES") and words.done():
        return ShowTempTables()
    return None


def _create(cursor: _Cursor) -> Statement | None:
    or_replace = cursor.accept("OR", "REPLACE")
    if cursor.accept("TEMPORARY|TEMP", "TABLE"):
        return _create_temp_table(cursor, or_replace)
    if cursor.accept("GLOBAL"):
        return None
    if cursor.accept("TEMPORARY|TEMP", "VIEW"):
        cursor.accept("IF", "NOT", "EXISTS")
        return CreateTempView(cursor.name("a view name"))
    if cursor.accept("VIEW"):
        cursor.accept("IF", "NOT", "EXISTS")
        return CreatePersistentView(cursor.name("a view name"), _sources(cursor))
    return None


def _create_temp_table(cursor: _Cursor, or_replace: bool) -> CreateTempTable | None:
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a temporary table name")
    column_names: tuple[str, ...] = ()
    if cursor.peek("("):
        column_names = cursor.name_list("column names")
    fmt: str | None = None
    partition_columns: tuple[str, ...] = ()
    options: dict[str, str] = {}
    seen: set[str] = set()
    while not cursor.peek("AS"):
        if cursor.done():
            return None
        if cursor.accept("USING"):
            clause, fmt = "USING", cursor.identifier("a format name after USING")
        elif cursor.accept("PARTITIONED BY") or cursor.accept("PARTITIONED", "BY"):
            clause, partition_columns = "PARTITIONED BY", cursor.name_list("partition columns")
        elif cursor.accept("OPTIONS"):
            clause, options = "OPTIONS", cursor.options()
        else:
            raise cursor.error(
                f"CREATE TEMPORARY TABLE [{name}]: expected USING, PARTITIONED BY, OPTIONS or AS"
            )
        if clause in seen:
            raise cursor.error(f"CREATE TEMPORARY TABLE [{name}]: {clause} given twice")
        seen.add(clause)
    cursor.expect("AS", "AS")
    query = cursor.rest()
    if not query.strip():
        raise cursor.error(f"CREATE TEMPORARY TABLE [{name}]: a query must follow AS")
    return CreateTempTable(
        name=name,
        query=query,
        column_names=column_names,
        format=fmt,
        partition_columns=partition_columns,
        options=options,
        if_not_exists=if_not_exists,
        or_replace=or_replace,
    )


def _drop(cursor: _Cursor) -> Statement | None:
    if cursor.accept("TABLE"):
        if_exists = cursor.accept("IF", "EXISTS")
        return DropTable(cursor.name("a table name"), if_exists)
    if cursor.accept("VIEW"):
        if_exists = cursor.accept("IF", "EXISTS")
        return DropView(cursor.name("a view name"), if_exists)
    return None


def _sources(cursor: _Cursor) -> tuple[Name, ...]:
    """Names that follow FROM or JOIN: the relations a view may read."""
    sources: list[Name] = []
    while not cursor.done():
        if cursor.accept("FROM|JOIN") and not cursor.peek("("):
            try:
                sources.append(cursor.name("a relation name"))
            except TempTableError:
                continue
        else:
            cursor.at += 1
    return tuple(sources)


def check_table_name(name: Name, temp_workspace: str) -> str:
    """The bare name of a temp table to create, or a clear error for a bad one."""
    if len(name.parts) > 2:
        raise TempTableError(
            f"[{name}] is not a valid temporary table name: use a plain name or "
            f"{temp_workspace}.<name>"
        )
    if name.qualifier is not None and name.qualifier.lower() != temp_workspace.lower():
        raise TempTableError(
            "Temporary tables are not allowed to be created outside of default temporary "
            f"workspace [{temp_workspace}]."
        )
    bare = name.name
    if not bare.strip() or len(bare) > MAX_NAME_LENGTH or any(ord(ch) < 32 for ch in bare):
        raise TempTableError(
            f"[{bare}] is not a valid temporary table name: names need 1 to "
            f"{MAX_NAME_LENGTH} printable characters"
        )
    return bare
