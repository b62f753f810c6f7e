"""Session temporary tables from Python: create, drop, list and read.

Each call builds a plugin relation the gateway executes in the caller's
session; nothing here talks to Spark except through the Spark Connect
protocol, so it works on full pyspark and on the thin ``pyspark-client``.
``create_temp_table`` and ``drop_temp_table`` run at once (like
``saveAsTable``) and return their result row; ``temp_tables`` and
``temp_table`` return lazy DataFrames.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.types import StructType

from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation, session_id_of

if TYPE_CHECKING:
    from pyspark.sql import Row
    from pyspark.sql.connect.client import SparkConnectClient
    from pyspark.sql.connect.session import SparkSession


class CreateTempTable(PluginRelation):
    """CREATE TEMPORARY TABLE name [(schema)] [AS <the input DataFrame>]."""

    def __init__(
        self,
        source: DataFrame | None,
        name: str,
        *,
        workspace: str = "",
        format: str | None = None,
        partition_by: Sequence[str] = (),
        column_names: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        if_not_exists: bool = False,
        replace: bool = False,
        schema: str = "",
    ) -> None:
        super().__init__()
        self._source = source
        self._message = proto.CreateTempTableAsSelect(
            name=name,
            workspace=workspace,
            format=format or "",
            partition_columns=list(partition_by),
            column_names=list(column_names),
            options={str(k): str(v) for k, v in (options or {}).items()},
            if_not_exists=if_not_exists,
            or_replace=replace,
            schema=schema,
        )

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        message = proto.CreateTempTableAsSelect()
        message.CopyFrom(self._message)
        message.session_id = session_id_of(client)
        if self._source is not None:
            message.input.CopyFrom(self._source._plan.plan(client))
        return message


class DropTempTable(PluginRelation):
    """DROP TABLE name, for a temporary table of the session only."""

    def __init__(self, name: str, *, if_exists: bool = False) -> None:
        super().__init__()
        self._name = name
        self._if_exists = if_exists

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        return proto.DropTempTable(
            session_id=session_id_of(client), name=self._name, if_exists=self._if_exists
        )


class ListTempTables(PluginRelation):
    """SHOW TEMPORARY TABLES."""

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        return proto.ListTempTables(session_id=session_id_of(client))


class ReadTempTable(PluginRelation):
    """The rows of a temporary table; never a permanent table of the same name."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        return proto.ReadTempTable(session_id=session_id_of(client), name=self._name)


def _frame(plan: PluginRelation, spark: Any) -> DataFrame:
    return DataFrame(plan, spark)


def create_temp_table(
    df: DataFrame | SparkSession,
    name: str,
    *,
    schema: str | StructType | None = None,
    format: str | None = None,
    partition_by: Sequence[str] = (),
    column_names: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    if_not_exists: bool = False,
    replace: bool = False,
) -> Row:
    """Write ``df`` as temporary table ``name`` of its session; returns the result row.

    Given a session instead of a DataFrame, the table is declared: created
    empty with ``schema`` (Spark DDL such as ``"a INT, b STRING"``, or a
    ``StructType``). With a DataFrame, ``schema`` casts its columns by
    position, as column definitions before ``AS`` do in SQL. The row is
    ``(table, rows_written)``, or ``(ok=False, summary)`` when
    ``if_not_exists`` finds the name taken. ``name`` may be qualified with
    Spark's qualifier of temporary views (``session.name``).
    """
    source = df if isinstance(df, DataFrame) else None
    if source is None and schema is None:
        raise ValueError(
            f"create_temp_table({name!r}) from a session declares an empty table: give it "
            "schema=, e.g. schema=\"a INT, b STRING\", or pass a DataFrame instead"
        )
    if schema is not None and column_names:
        raise ValueError(
            f"create_temp_table({name!r}): schema= already names the columns; leave out "
            "column_names="
        )
    workspace, _, bare = name.rpartition(".")
    plan = CreateTempTable(
        source,
        bare,
        workspace=workspace,
        format=format,
        partition_by=partition_by,
        column_names=column_names,
        options=options,
        if_not_exists=if_not_exists,
        replace=replace,
        schema=schema.json() if isinstance(schema, StructType) else schema or "",
    )
    session = df.sparkSession if isinstance(df, DataFrame) else df
    return _frame(plan, session).collect()[0]


def drop_temp_table(spark: SparkSession, name: str, *, if_exists: bool = False) -> Row:
    """Drop temporary table ``name``; returns ``(ok, summary)``."""
    return _frame(DropTempTable(name, if_exists=if_exists), spark).collect()[0]


def temp_tables(spark: SparkSession) -> DataFrame:
    """The session's temporary tables: name, format, rows, bytes, created."""
    return _frame(ListTempTables(), spark)


def temp_table(spark: SparkSession, name: str) -> DataFrame:
    """Temporary table ``name`` of the session as a DataFrame."""
    return _frame(ReadTempTable(name), spark)
