"""Guards: Spark statements that would break a temp table behind the gateway's back.

A view may not take a temp table's name, a persistent view may not read
one, DROP VIEW and ``spark.catalog.dropTempView`` may not drop one, and
ALTER may not change or rename one (INSERT, which may go on, is
``inserts``). Each is recognised from SQL or a DataFrame command and
otherwise goes to Spark unchanged; they matter only to sessions that have
temp tables.
"""

from __future__ import annotations

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import (
    AlterView,
    CreatePersistentView,
    CreateTempView,
    DropView,
    Name,
)
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import FORWARD, Call, Handler, Outcome
from connect_plugin.server.statements.recognition import Cursor
from connect_plugin.server.tables.catalog import Tables

CREATE = frozenset(("CREATE",))


class DropViewHandler(Handler[DropView]):
    """DROP VIEW on a temp table is an error (IF EXISTS: ok = false); so is dropTempView."""

    statement_type = DropView
    sql_keywords = frozenset(("DROP",))
    needs_tables = True

    def __init__(self, config: Config, tables: Tables) -> None:
        self._config = config
        self._tables = tables

    @classmethod
    def parse(cls, cursor: Cursor) -> DropView | None:
        if not cursor.accept("DROP", "VIEW"):
            return None
        if_exists = cursor.accept("IF", "EXISTS")
        return DropView(cursor.name("a view name"), if_exists)

    @classmethod
    def from_plan(cls, plan: spark_proto.Plan) -> DropView | None:
        if plan.HasField("root") and plan.root.HasField("catalog"):
            catalog = plan.root.catalog
            if catalog.HasField("drop_temp_view"):
                return DropView(Name((catalog.drop_temp_view.view_name,)), if_exists=False)
        return None

    async def execute(self, call: Call, request: DropView) -> Outcome:
        if self._tables.lookup(call.context, request.name) is None:
            return FORWARD
        if not request.if_exists:
            raise TempTableError(
                f"[{request.name}] is not a VIEW but a temporary table of this session; "
                f"drop it with DROP TABLE {request.name}"
            )
        return Outcome(
            results.status(
                False,
                f"View [{request.name}] not found in schema [session].",
            )
        )


class CreateTempViewHandler(Handler[CreateTempView]):
    """A temp view may not take a temp table's name (it would orphan the table's files)."""

    statement_type = CreateTempView
    sql_keywords = CREATE
    needs_tables = True

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def parse(cls, cursor: Cursor) -> CreateTempView | None:
        if not cursor.accept("CREATE"):
            return None
        cursor.accept("OR", "REPLACE")
        if not cursor.accept("TEMPORARY|TEMP", "VIEW"):
            return None
        cursor.accept("IF", "NOT", "EXISTS")
        return CreateTempView(cursor.name("a view name"))

    @classmethod
    def from_plan(cls, plan: spark_proto.Plan) -> CreateTempView | None:
        if plan.HasField("command") and plan.command.HasField("create_dataframe_view"):
            return CreateTempView(Name((plan.command.create_dataframe_view.name,)))
        return None

    async def execute(self, call: Call, request: CreateTempView) -> Outcome:
        if self._tables.lookup(call.context, request.name) is not None:
            raise TempTableError(
                f"[{request.name}] is a temporary table of this session; drop it with DROP "
                f"TABLE {request.name} before using the name for a view"
            )
        return FORWARD


class CreatePersistentViewHandler(Handler[CreatePersistentView]):
    """A persistent view may not read a temp table (Drill's message, before Spark's)."""

    statement_type = CreatePersistentView
    sql_keywords = CREATE
    needs_tables = True

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def parse(cls, cursor: Cursor) -> CreatePersistentView | None:
        if not cursor.accept("CREATE"):
            return None
        cursor.accept("OR", "REPLACE")
        if not cursor.accept("VIEW"):
            return None
        cursor.accept("IF", "NOT", "EXISTS")
        name = cursor.name("a view name")
        sources: list[Name] = []
        while not cursor.done():
            if cursor.accept("FROM|JOIN") and not cursor.peek("("):
                try:
                    sources.append(cursor.name("a relation name"))
                except TempTableError:
                    continue
            else:
                cursor.at += 1
        return CreatePersistentView(name, tuple(sources))

    async def execute(self, call: Call, request: CreatePersistentView) -> Outcome:
        for source in request.sources:
            if len(source.parts) == 1 and self._tables.lookup(call.context, source) is not None:
                raise TempTableError(
                    f"A reference to temporary table [{source}] was made in a context where "
                    f"temporary table references are not allowed (persistent view "
                    f"[{request.name}])."
                )
        return FORWARD


class AlterViewHandler(Handler[AlterView]):
    """ALTER VIEW / ALTER TABLE of a temp table would change or rename it behind the gateway."""

    statement_type = AlterView
    sql_keywords = frozenset(("ALTER",))
    needs_tables = True

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    @classmethod
    def parse(cls, cursor: Cursor) -> AlterView | None:
        if not cursor.accept("ALTER"):
            return None
        kind = "VIEW" if cursor.accept("VIEW") else "TABLE" if cursor.accept("TABLE") else ""
        if not kind:
            return None
        return AlterView(cursor.name(f"a {kind.lower()} name"), f"ALTER {kind}")

    async def execute(self, call: Call, request: AlterView) -> Outcome:
        if self._tables.lookup(call.context, request.name) is not None:
            raise TempTableError(
                f"[{request.name}] is a temporary table of this session; {request.statement} "
                "cannot change it: replace it with CREATE OR REPLACE TEMPORARY TABLE, or drop "
                "it with DROP TABLE"
            )
        return FORWARD
