"""The Spark side of a temp table: the temporary view that gives its files their name.

A temp table is a temporary view of the session over the table's folder,
read with the schema the files were written with. Create, drop, clone and
recovery all make, restore or drop that view through these functions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import (
    ConnectPluginError,
    TempTableError,
    TempTableQueryFailed,
    UpstreamFailed,
)
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.transport.upstream import UpstreamSession

log = logging.getLogger(__name__)


async def uncache(upstream: UpstreamSession, tables: Iterable[TempTable]) -> None:
    """Drop what Spark cached of the tables (``CACHE TABLE``) while their views still exist:
    Spark Connect keeps a session's cache after the session ends (SPARK-50569), and
    only the view's own name finds the cached plan (a read of the same files does not)."""
    for table in tables:
        relation = spark_proto.Relation()
        relation.catalog.uncache_table.table_name = quote_identifier(table.name)
        try:
            await upstream.run(spark_proto.Plan(root=relation))
        except ConnectPluginError as exc:
            log.info("Temporary table [%s]: cannot drop its cached data: %s", table.name, exc)


def files_relation(table: TempTable) -> spark_proto.Relation:
    """A read of the table's files with their written schema: what its view stands for."""
    relation = spark_proto.Relation()
    source = relation.read.data_source
    source.format = table.format
    source.schema = table.schema_json
    source.paths.append(str(table.location))
    source.options.update(table.options)
    return relation


async def create_view(
    upstream: UpstreamSession, table: TempTable, *, replace: bool, outcome: str = "was not created"
) -> None:
    """The temporary view over the table's files, with the schema they were written with."""
    command = spark_proto.Command()
    view = command.create_dataframe_view
    view.name = table.name
    view.replace = replace
    view.input.CopyFrom(files_relation(table))
    try:
        await upstream.command(command)
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{table.name}] {outcome}: its view failed: {exc.message}"
        ) from exc


async def drop_view(upstream: UpstreamSession, name: str) -> None:
    """Drop the session's temporary view ``name``; nothing happens if there is none."""
    relation = spark_proto.Relation()
    relation.catalog.drop_temp_view.view_name = name
    try:
        await upstream.run(spark_proto.Plan(root=relation))
    except UpstreamFailed as exc:
        raise TempTableError(f"Temporary table [{name}]: dropping its view failed: {exc}") from exc


async def temp_view_names(upstream: UpstreamSession) -> set[str]:
    """Lower-cased names of the session's temporary views."""
    relation = spark_proto.Relation()
    relation.sql.query = "SHOW VIEWS"
    try:
        rows = await upstream.rows(relation)
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(f"cannot list the session's views: {exc}") from exc
    return {str(row.get("viewName", "")).lower() for row in rows if row.get("isTemporary")}
