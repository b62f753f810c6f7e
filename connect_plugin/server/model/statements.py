"""The gateway's statements: what a client asks the gateway to do, whichever way it asked.

A plugin message, a recognised SQL statement and a recognised DataFrame
command that mean the same thing become the same ``Statement``, and one
handler serves it (see ``statements.handlers``). Statements that change a
session's temp tables say so (``changes_tables``): a client's request may
hold one of them at most, so it is either refused before anything happens
or handled whole. (A *request* is what travels on gRPC: the ExecutePlan
that holds a statement.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.scanning import ScanOptions


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
class Statement:
    """Base of every statement; ``inputs`` are relations that may hold plugin relations too."""

    changes_tables: ClassVar[bool] = False
    names_existing: ClassVar[bool] = False
    """Whether the statement acts on an existing table or view it names (``name``)."""

    def inputs(self) -> tuple[spark_proto.Relation, ...]:
        return ()

    def describe(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class CreateTempTable(Statement):
    """CREATE [OR REPLACE] TEMPORARY TABLE [IF NOT EXISTS] name ... [AS <input>].

    ``schema``: the column definitions (Spark DDL, or a schema as JSON) of a
    declared table; without ``input`` the table is empty, with it the
    input's columns are cast to them by position.
    """

    changes_tables: ClassVar[bool] = True
    name: Name
    input: spark_proto.Relation | None
    column_names: tuple[str, ...] = ()
    partition_columns: tuple[str, ...] = ()
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    or_replace: bool = False
    schema: str | None = None

    def inputs(self) -> tuple[spark_proto.Relation, ...]:
        return () if self.input is None else (self.input,)

    def describe(self) -> str:
        return f"CREATE TEMPORARY TABLE [{self.name}]"


@dataclass(frozen=True)
class DropTempTable(Statement):
    """DROP TABLE [IF EXISTS] name: a temp table of the session.

    ``strict``: the plugin message, which is an error for a name that is no
    temp table; the SQL statement then goes to Spark unchanged instead.
    ``rest``: text after the statement (SQL), an error if the name is ours.
    """

    changes_tables: ClassVar[bool] = True
    names_existing: ClassVar[bool] = True
    name: Name
    if_exists: bool = False
    strict: bool = True
    rest: str = ""

    def describe(self) -> str:
        return f"DROP TABLE [{self.name}]"


@dataclass(frozen=True)
class ListTempTables(Statement):
    """SHOW TEMPORARY TABLES."""


@dataclass(frozen=True)
class ReadTempTable(Statement):
    """The rows of a temp table; never a permanent table of the same name."""

    name: Name


@dataclass(frozen=True)
class ScanFiles(Statement):
    """A schema-on-read scan of files or of a table."""

    message: proto.Scan


@dataclass(frozen=True)
class CreateScanView(Statement):
    """CREATE [OR REPLACE] TEMPORARY VIEW name [(columns)] USING scan OPTIONS (...)."""

    name: str
    options: ScanOptions
    or_replace: bool = False

    def describe(self) -> str:
        return f"CREATE TEMPORARY VIEW [{self.name}] USING scan"


@dataclass(frozen=True)
class DropView(Statement):
    """DROP VIEW [IF EXISTS] name, or ``spark.catalog.dropTempView(name)``."""

    names_existing: ClassVar[bool] = True

    name: Name
    if_exists: bool = False


@dataclass(frozen=True)
class InsertInto(Statement):
    """INSERT INTO / OVERWRITE name, or a DataFrame write to a table's name: ``insertInto``,
    ``saveAsTable``, ``writeTo``.

    ``query``: the rows of an ``INSERT INTO|OVERWRITE [TABLE] name [(columns)]
    <query>``; ``clause``: what else an INSERT of another shape has (a
    PARTITION clause, BY NAME, ...); ``write``: the DataFrame command, to check
    in place.
    """

    names_existing: ClassVar[bool] = True

    name: Name
    overwrite: bool = False
    query: spark_proto.Relation | None = None
    columns: tuple[str, ...] = ()
    clause: str = ""
    write: spark_proto.WriteOperation | None = None
    by_name: bool = False
    """``saveAsTable``/``writeTo``: ``query`` (the DataFrame) matches the columns by name."""
    condition: spark_proto.Expression | None = None
    """``writeTo(name).overwrite(condition)``: the rows replaced are those it holds for."""
    refusal: str = ""
    """Why this write cannot go into a temp table (only said when ``name`` is one)."""
    ignore: bool = False
    """``saveAsTable(mode="ignore")``: nothing happens to an existing table."""
    others: tuple[Name, ...] = ()
    """The further tables of a Hive multi-insert (``FROM src INSERT INTO a ... INSERT INTO
    b ...``)."""
    partition_rows: spark_proto.Relation | None = None
    """The query of an INSERT with a PARTITION clause (``clause``), which Spark runs as
    written: its rows give the table's data columns first, in order."""


@dataclass(frozen=True)
class CreateTempView(Statement):
    """CREATE [OR REPLACE] TEMPORARY VIEW name, or ``createOrReplaceTempView(name)``."""

    name: Name


@dataclass(frozen=True)
class CreatePersistentView(Statement):
    """CREATE [OR REPLACE] VIEW name AS ...: the relations it reads, as far as they were read."""

    name: Name
    sources: tuple[Name, ...]


@dataclass(frozen=True)
class AlterView(Statement):
    """ALTER VIEW name ... or ALTER TABLE name ...: refused for temp tables."""

    names_existing: ClassVar[bool] = True

    name: Name
    statement: str


@dataclass(frozen=True)
class Assignment:
    """``column = expression`` of an UPDATE SET or MERGE clause (the expression as written)."""

    column: Name
    expression: str


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a MERGE: ``branch`` is ``matched``, ``not matched`` (by target)
    or ``not matched by source``; ``action`` is ``update``, ``delete`` or ``insert``.

    ``star``: ``UPDATE SET *`` or ``INSERT *``; an INSERT's ``assignments`` pair its
    column list with its VALUES.
    """

    branch: str
    action: str
    condition: str | None = None
    assignments: tuple[Assignment, ...] = ()
    star: bool = False


@dataclass(frozen=True)
class ChangeRows(Statement):
    """A statement that changes the rows of a table: for a temp table, it is rewritten whole.

    ``alias``: the name the statement's expressions give the table; ``problem``:
    what the gateway could not read in the statement, reported only when the
    table is a temp table (any other table's statement is Spark's to judge).
    """

    changes_tables: ClassVar[bool] = True
    names_existing: ClassVar[bool] = True
    statement: ClassVar[str] = ""
    name: Name
    alias: str | None = None
    problem: str = ""

    def describe(self) -> str:
        return f"{self.statement} [{self.name}]"


@dataclass(frozen=True)
class DeleteFrom(ChangeRows):
    """DELETE FROM name [[AS] alias] [WHERE condition]."""

    statement: ClassVar[str] = "DELETE FROM"
    condition: str | None = None


@dataclass(frozen=True)
class UpdateTable(ChangeRows):
    """UPDATE name [[AS] alias] SET column = expression, ... [WHERE condition]."""

    statement: ClassVar[str] = "UPDATE"
    assignments: tuple[Assignment, ...] = ()
    condition: str | None = None


@dataclass(frozen=True)
class MergeInto(ChangeRows):
    """MERGE INTO name [[AS] alias] USING source [[AS] alias] ON condition WHEN ...

    ``source``: a table name or a parenthesized query, as written.
    """

    statement: ClassVar[str] = "MERGE INTO"
    source: str = ""
    source_alias: str | None = None
    on: str = ""
    clauses: tuple[MergeClause, ...] = ()


@dataclass(frozen=True)
class TruncateTable(ChangeRows):
    """TRUNCATE TABLE name."""

    statement: ClassVar[str] = "TRUNCATE TABLE"
