"""Handlers of temp-table requests: create, drop, list and read.

Each handler recognises its request from a plugin message or a SQL
statement (its grammar rule is here, on the statement tokens) and does it
on the pieces that own temp tables (``TableCreator``, ``Tables``).
"""

from __future__ import annotations

from connect_plugin import proto
from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import (
    CreateTempTable,
    DropTempTable,
    ListTempTables,
    Name,
    ReadTempTable,
)
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import FORWARD, Call, Handler, Outcome
from connect_plugin.server.statements.recognition import Cursor
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator


class CreateTempTableHandler(Handler[CreateTempTable]):
    statement_type = CreateTempTable
    message_type = proto.CreateTempTableAsSelect
    sql_keywords = frozenset(("CREATE",))

    def __init__(self, creator: TableCreator) -> None:
        self._creator = creator

    @classmethod
    def from_message(cls, message: proto.CreateTempTableAsSelect) -> CreateTempTable:
        parts = (message.workspace, message.name) if message.workspace else (message.name,)
        return CreateTempTable(
            name=Name(parts),
            input=message.input if message.HasField("input") else None,
            column_names=tuple(message.column_names),
            partition_columns=tuple(message.partition_columns),
            format=message.format or None,
            options=dict(message.options),
            if_not_exists=message.if_not_exists,
            or_replace=message.or_replace,
            schema=message.schema or None,
        )

    @classmethod
    def parse(cls, cursor: Cursor) -> CreateTempTable | None:
        if not cursor.accept("CREATE"):
            return None
        or_replace = cursor.accept("OR", "REPLACE")
        if not cursor.accept("TEMPORARY|TEMP", "TABLE"):
            return None
        if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
        name = cursor.name("a temporary table name")
        column_names: tuple[str, ...] = ()
        definitions: str | None = None
        if cursor.peek("("):
            column_names, definitions = cursor.column_list()
        fmt: str | None = None
        partition_columns: tuple[str, ...] = ()
        options: dict[str, str] = {}
        seen: set[str] = set()
        while not cursor.peek("AS"):
            if definitions is not None and not cursor.leftover():
                break
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
                    f"CREATE TEMPORARY TABLE [{name}]: expected USING, PARTITIONED BY, OPTIONS "
                    "or AS"
                )
            if clause in seen:
                raise cursor.error(f"CREATE TEMPORARY TABLE [{name}]: {clause} given twice")
            seen.add(clause)
        query: str | None = None
        if cursor.accept("AS"):
            query = cursor.rest()
            if not query.strip():
                raise cursor.error(f"CREATE TEMPORARY TABLE [{name}]: a query must follow AS")
        return CreateTempTable(
            name=name,
            input=None if query is None else cursor.sql.relation_of(query),
            column_names=column_names,
            partition_columns=partition_columns,
            format=fmt,
            options=options,
            if_not_exists=if_not_exists,
            or_replace=or_replace,
            schema=definitions,
        )

    async def analyze(self, call: Call, request: CreateTempTable) -> Outcome:
        return Outcome(results.created(request.name.name, 0))

    async def execute(self, call: Call, request: CreateTempTable) -> Outcome:
        return await self._creator.create(call.context, request, call.progress)


class DropTempTableHandler(Handler[DropTempTable]):
    statement_type = DropTempTable
    message_type = proto.DropTempTable
    sql_keywords = frozenset(("DROP",))
    needs_tables = True

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def from_message(cls, message: proto.DropTempTable) -> DropTempTable:
        return DropTempTable(Name(tuple(message.name.split("."))), message.if_exists)

    @classmethod
    def parse(cls, cursor: Cursor) -> DropTempTable | None:
        if not cursor.accept("DROP", "TABLE"):
            return None
        if_exists = cursor.accept("IF", "EXISTS")
        name = cursor.name("a table name")
        cursor.accept("PURGE")
        return DropTempTable(name, if_exists, strict=False, rest=cursor.leftover())

    async def analyze(self, call: Call, request: DropTempTable) -> Outcome:
        return Outcome(results.status(True, ""))

    async def execute(self, call: Call, request: DropTempTable) -> Outcome:
        tables, context = self._tables, call.context
        if not request.strict:
            ours = tables.lookup(context, request.name) or tables.being_created(
                context, request.name
            )
            if not ours:
                return FORWARD
            if request.rest:
                raise TempTableError(
                    f"DROP TABLE [{request.name}]: [{request.rest}] follows the statement and "
                    "was not run; send one statement per call"
                )
        result = await tables.drop(
            context, request.name, if_exists=request.if_exists, strict=request.strict
        )
        return FORWARD if result is None else result


class ListTempTablesHandler(Handler[ListTempTables]):
    statement_type = ListTempTables
    message_type = proto.ListTempTables
    sql_keywords = frozenset(("SHOW",))

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def from_message(cls, message: proto.ListTempTables) -> ListTempTables:
        return ListTempTables()

    @classmethod
    def parse(cls, cursor: Cursor) -> ListTempTables | None:
        if not cursor.accept("SHOW"):
            return None
        words = cursor.command_words()
        if not words.accept("TEMPORARY|TEMP", "TABLES") or words.leftover():
            return None
        if words is not cursor:
            cursor.at += 1
            if cursor.leftover():
                return None
        return ListTempTables()

    async def analyze(self, call: Call, request: ListTempTables) -> Outcome:
        return Outcome(results.result_relation(results.LIST_COLUMNS, []))

    async def execute(self, call: Call, request: ListTempTables) -> Outcome:
        return await self._tables.listing(call.context)


class ReadTempTableHandler(Handler[ReadTempTable]):
    statement_type = ReadTempTable
    message_type = proto.ReadTempTable

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def from_message(cls, message: proto.ReadTempTable) -> ReadTempTable:
        return ReadTempTable(Name(tuple(message.name.split("."))))

    async def analyze(self, call: Call, request: ReadTempTable) -> Outcome:
        return Outcome(self._tables.files(call.context, request.name))

    async def execute(self, call: Call, request: ReadTempTable) -> Outcome:
        return Outcome(await self._tables.read(call.context, request.name))
