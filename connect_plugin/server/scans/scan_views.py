"""Scans for every client: ``CREATE TEMPORARY VIEW name USING scan OPTIONS (...)``.

Only the Python API builds the plugin's ``Scan`` relation; ``spark.sql``,
the Scala client and SQL tools have nothing but SQL. Spark's own form for a
view over a data source is ``CREATE TEMPORARY VIEW v USING fmt OPTIONS
(...)``, so the gateway takes that form with the provider ``scan``: the
options are read by ``ScanOptions.parse`` (the one reader of text options,
which names the option in every error), the scan becomes the same read of
the scan data source that ``connect_plugin.scan`` gives, and the view is a
temporary view of the session over it, living and dying with the session.
The statement's result is what Spark gives for a view it creates: no
columns, no rows.

A column list, ``v (a BIGINT, b STRING)``, is Spark's user-given schema of
the view: the scan's ``schema`` and its ``columns`` (no ``dirN``; the
rescued-data column after them with ``evolution 'rescue'``), the files'
other columns dropped (``evolution 'none'``) unless ``evolution`` or
``strict`` says otherwise.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import InvalidScanSpec, TempTableError
from connect_plugin.scanning import Evolution, ScanOptions
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import CreateScanView, Name
from connect_plugin.server.scans.relation import Scans
from connect_plugin.server.statements.handlers import Call, Handler, Outcome
from connect_plugin.server.statements.recognition import Cursor
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.transport.upstream import Upstream

PROVIDER = "scan"
"""The ``USING`` name of the scan; any other provider's view is Spark's own."""


class CreateScanViewHandler(Handler[CreateScanView]):
    """A temporary view over a scan, from SQL; tried before the temp-view guard (``SQL_ORDER``)."""

    statement_type = CreateScanView
    sql_keywords = frozenset(("CREATE",))

    def __init__(self, scans: Scans, tables: Tables, upstream: Upstream) -> None:
        self._scans = scans
        self._tables = tables
        self._upstream = upstream

    @classmethod
    def parse(cls, cursor: Cursor) -> CreateScanView | None:
        if not cursor.accept("CREATE"):
            return None
        or_replace = cursor.accept("OR", "REPLACE")
        if not cursor.accept("TEMPORARY|TEMP", "VIEW"):
            return None
        name = cursor.name("a view name")
        columns = cursor.parenthesized("the view's columns") if cursor.peek("(") else None
        if not cursor.accept("USING", PROVIDER.upper()):
            return None
        if name.qualifier is not None:
            raise cursor.error(
                f"CREATE TEMPORARY VIEW [{name}] USING scan: a temporary view has no database; "
                f"name it {quote_identifier(name.name)}"
            )
        if not cursor.accept("OPTIONS"):
            raise cursor.error(
                f"CREATE TEMPORARY VIEW [{name}] USING scan needs OPTIONS (path '...', "
                "format '...', ...)"
            )
        pairs = cursor.option_pairs()
        leftover = cursor.leftover()
        if leftover:
            raise TempTableError(
                f"CREATE TEMPORARY VIEW [{name}] USING scan: unexpected [{leftover}] after its "
                "OPTIONS (...)"
            )
        options = ScanOptions.parse(pairs)
        if columns is not None:
            options = _with_columns(name.name, options, columns)
        return CreateScanView(name.name, options, or_replace)

    async def execute(self, call: Call, request: CreateScanView) -> Outcome:
        if self._tables.lookup(call.context, Name((request.name,))) is not None:
            raise TempTableError(
                f"[{request.name}] is a temporary table of this session; drop it with DROP "
                f"TABLE {request.name} before using the name for a view"
            )
        read = await self._scans.options_read(call, request.options)
        command = spark_proto.Command()
        view = command.create_dataframe_view
        view.name = request.name
        view.replace = request.or_replace
        view.input.CopyFrom(read.relation)
        await self._upstream.session(call.context).command(command)
        return Outcome(_no_rows(request.name))


def _with_columns(view: str, options: ScanOptions, columns: str) -> ScanOptions:
    if options.schema is not None:
        raise InvalidScanSpec(
            f"CREATE TEMPORARY VIEW [{view}] USING scan: give the columns' types either in the "
            "column list after the view name or in option 'schema', not both"
        )
    if options.columns is not None:
        raise InvalidScanSpec(
            f"CREATE TEMPORARY VIEW [{view}] USING scan: give the view's columns either in the "
            "column list after the view name or in option 'columns', not both"
        )
    evolution = options.evolution
    if evolution is None and not options.strict:
        evolution = Evolution.NONE
    return replace(options, schema=columns, evolution=evolution, schema_columns=True)


def _no_rows(view: str) -> spark_proto.Relation:
    """What Spark gives for a view it creates (no columns, no rows), from a statement that
    changes nothing: refreshing the view that was just made."""
    relation = spark_proto.Relation()
    relation.sql.query = f"REFRESH TABLE {quote_identifier(view)}"
    return relation
