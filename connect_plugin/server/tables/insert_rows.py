"""INSERT into a temp table whose format refuses some values: the values are checked as written.

An INSERT reaches the table's files through its view, with Spark's own
casts (by position, store-assignment rules). When the table's format cannot
hold some values of its column types (``value_checks``), the insert's query
gets the same filter a CTTAS gets, applied to each value cast to its
column's type, and the gateway runs it as Spark's ``insertInto`` of the
view: a refused value fails the job, and Spark commits no file. A DataFrame
``insertInto`` is checked in place and goes to Spark as the client's own
operation; a SQL INSERT is run by the gateway, like a CTTAS, and answers
with Spark's empty result. An overwrite is no INSERT of Spark's (which
deletes the table's files before its job runs): it rewrites the table
(``rewrites``) with the rows of ``table_rows``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import (
    proto_schema_to_pyspark_data_type,
    pyspark_types_to_proto_types,
)
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    UserDefinedType,
)

from connect_plugin.errors import ConnectPluginError, TempTableError, UpstreamFailed
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.sessions.release import to_the_end
from connect_plugin.server.statements.results import refreshed
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.writes import ProgressSink, stop_write
from connect_plugin.server.tables.value_checks import Rule, checked, nullable_columns, rules
from connect_plugin.server.tables.zero_signs import refuse_zeros_of_both_signs, zero_columns
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import UpstreamSession

log = logging.getLogger(__name__)

_GIVEN = "__connect_plugin_given{}"
_STORED = "__connect_plugin_column{}"


def table_rules(table: TempTable) -> list[Rule]:
    """The value rules of an existing table (none: an INSERT needs no checking, unless it has
    ``table_zero_columns``)."""
    schema = StructType.fromJson(_json(table.schema_json))
    return rules(table.format, schema, table.partition_columns)


def table_zero_columns(table: TempTable) -> list[StructField]:
    """The columns of an existing table an INSERT must not give zeros of both signs."""
    schema = StructType.fromJson(_json(table.schema_json))
    return zero_columns(table.format, schema, table.partition_columns)


async def checked_input(
    upstream: UpstreamSession,
    table: TempTable,
    query: spark_proto.Relation,
    columns: Sequence[str] = (),
    added: Sequence[Rule] = (),
) -> spark_proto.Relation:
    """``query`` in the table's column order, with its values checked as they will be stored.

    ``columns``: the INSERT's column list; the table's other columns get NULL,
    as Spark gives them (a temp table's columns have no defaults). Without a
    list, a query of another width than the table is left as it is: Spark
    refuses the insert with its own error before writing anything. ``added``:
    the rules the session's write settings add (``write_settings``).
    """
    found, zeros = [*table_rules(table), *added], table_zero_columns(table)
    if not found and not zeros:
        return query
    given = proto_schema_to_pyspark_data_type(await upstream.schema(query))
    target = StructType.fromJson(_json(table.schema_json))
    assert isinstance(given, StructType)
    if not columns and len(given.fields) != len(target.fields):
        return query
    sources = _sources(table, target, columns or target.names, len(given.fields))
    ordered = _in_table_order(query, len(given.fields), target, sources, _STORED.format)
    positions = {f.name: i for i, f in enumerate(target.fields)}

    def stored(name: str, data_type: DataType) -> str:
        at = positions[name]
        column = quote_identifier(_STORED.format(at))
        source = sources[at]
        if source is None or sql_type(given.fields[source].dataType) == sql_type(data_type):
            return column
        return f"try_cast({column} AS {sql_type(data_type)})"

    await refuse_zeros_of_both_signs(
        upstream, ordered, table.name, zeros, lambda f: stored(f.name, f.dataType)
    )
    return checked(ordered, table.name, found, lambda r: stored(r.column, r.data_type))


async def refuse_zeros_before_partition_insert(
    upstream: UpstreamSession, table: TempTable, query: spark_proto.Relation
) -> None:
    """Refuse an INSERT with a PARTITION clause whose ``query`` gives a column of
    ``table_zero_columns`` zeros of both signs: its first columns are the table's data
    columns, in order (a query Spark cannot take is left for Spark to refuse)."""
    zeros = table_zero_columns(table)
    if not zeros:
        return
    try:
        given = proto_schema_to_pyspark_data_type(await upstream.schema(query))
    except UpstreamFailed:
        return
    assert isinstance(given, StructType)
    partitions = {c.lower() for c in table.partition_columns}
    target = StructType.fromJson(_json(table.schema_json))
    data = StructType([f for f in target.fields if f.name.lower() not in partitions])
    if len(given.fields) < len(data.fields):
        return
    width = len(given.fields)
    ordered = _in_table_order(query, width, data, range(len(data.fields)), _STORED.format)
    at = {f.name: i for i, f in enumerate(data.fields)}

    def stored(field: StructField) -> str:
        column = quote_identifier(_STORED.format(at[field.name]))
        if sql_type(given.fields[at[field.name]].dataType) == sql_type(field.dataType):
            return column
        return f"try_cast({column} AS {sql_type(field.dataType)})"

    await refuse_zeros_of_both_signs(upstream, ordered, table.name, zeros, stored)


async def table_rows(
    upstream: UpstreamSession,
    table: TempTable,
    query: spark_proto.Relation,
    columns: Sequence[str] = (),
    *,
    by_name: bool = False,
) -> spark_proto.Relation:
    """``query``'s rows as rows of the table, for an overwrite that rewrites it.

    The query's columns fill the table's by position, by the INSERT's
    column list (the others NULL), or ``by_name`` (as ``saveAsTable`` and
    ``writeTo`` match them: every column of the table, in any order); values
    are cast by Spark's store-assignment rules, as an INSERT casts them.
    """
    given = proto_schema_to_pyspark_data_type(await upstream.schema(query))
    target = StructType.fromJson(_json(table.schema_json))
    assert isinstance(given, StructType)
    if by_name:
        missing = [n for n in target.names if n.lower() not in {g.lower() for g in given.names}]
        if missing:
            raise TempTableError(
                f"writing temporary table [{table.name}] by column name: the rows have no "
                f"column [{missing[0]}] (they have {', '.join(given.names)}; the table has "
                f"{', '.join(target.names)})"
            )
        columns = given.names
    elif not columns and len(given.fields) != len(target.fields):
        raise TempTableError(
            f"INSERT into temporary table [{table.name}]: the query gives "
            f"{len(given.fields)} columns ({', '.join(given.names)}) for the table's "
            f"{len(target.fields)} ({', '.join(target.names)})"
        )
    sources = _sources(table, target, columns or target.names, len(given.fields))
    ordered = _in_table_order(
        query, len(given.fields), target, sources, lambda at: target.fields[at].name
    )
    cast = spark_proto.Relation()
    with deep_messages():
        cast.to_schema.input.CopyFrom(ordered)
    cast.to_schema.schema.CopyFrom(pyspark_types_to_proto_types(nullable_columns(target)))
    return cast


def _in_table_order(
    query: spark_proto.Relation,
    width: int,
    target: StructType,
    sources: Sequence[int | None],
    alias: Callable[[int], str],
) -> spark_proto.Relation:
    """``query``'s columns in the table's order (``sources``: the query column of each table
    column, None for NULL of its type), the table's column ``at`` named ``alias(at)``."""
    with deep_messages():
        renamed = spark_proto.Relation()
        renamed.to_df.input.CopyFrom(query)
        renamed.to_df.column_names.extend(_GIVEN.format(i) for i in range(width))
        ordered = spark_proto.Relation()
        ordered.project.input.CopyFrom(renamed)
    for at, (field, source) in enumerate(zip(target.fields, sources, strict=True)):
        value = (
            quote_identifier(_GIVEN.format(source))
            if source is not None
            else f"CAST(NULL AS {sql_type(field.dataType)})"
        )
        expression = ordered.project.expressions.add()
        expression.expression_string.expression = f"{value} AS {quote_identifier(alias(at))}"
    return ordered


def _sources(
    table: TempTable, target: StructType, columns: Sequence[str], width: int
) -> list[int | None]:
    """For each table column, the position of the query column that fills it (None: NULL)."""
    at = {name.lower(): i for i, name in enumerate(columns)}
    unknown = [c for c in columns if c.lower() not in {n.lower() for n in target.names}]
    if unknown or len(at) != len(columns) or len(columns) != width:
        raise TempTableError(
            f"INSERT into temporary table [{table.name}] ({', '.join(columns)}): "
            + (
                f"no column [{unknown[0]}] in the table ({', '.join(target.names)})"
                if unknown
                else "a column is listed twice"
                if len(at) != len(columns)
                else f"the query gives {width} columns for the {len(columns)} listed"
            )
        )
    return [at.get(name.lower()) for name in target.names]


async def run_insert(
    upstream: UpstreamSession,
    table: TempTable,
    query: spark_proto.Relation,
    columns: Sequence[str],
    *,
    progress: ProgressSink,
    stop_timeout_s: float,
    added: Sequence[Rule] = (),
) -> None:
    """Insert ``query`` into the table's view, checked, as one Spark write the gateway runs.

    Spark's errors reach the client as Spark sent them: the statement is the
    client's own. The view's file listing is then brought up to date (``REFRESH TABLE``).
    """
    source = await checked_input(upstream, table, query, columns, added)
    modes = spark_proto.WriteOperation.SaveMode
    with deep_messages():
        command = spark_proto.Command()
        write = command.write_operation
        write.input.CopyFrom(source)
        write.table.table_name = quote_identifier(table.name)
        write.table.save_method = (
            spark_proto.WriteOperation.SaveTable.TableSaveMethod.TABLE_SAVE_METHOD_INSERT_INTO
        )
        write.mode = modes.SAVE_MODE_APPEND
        plan = spark_proto.Plan(command=command)
    operation_id = str(uuid.uuid4())
    try:
        async for response in upstream.execute(plan, operation_id=operation_id):
            if response.HasField("execution_progress"):
                progress(response)
    except UpstreamFailed:
        raise
    except BaseException:
        # The client went away: the insert must not go on writing behind its back.
        try:
            await to_the_end(stop_write(upstream, operation_id, table.name, stop_timeout_s))
        except ConnectPluginError as exc:
            log.warning("INSERT into temporary table [%s]: cannot stop its write: %s", table.name, exc)
        raise
    refresh = spark_proto.Command()
    refresh.sql_command.input.CopyFrom(refreshed(table.name))
    await upstream.command(refresh)


def sql_type(data_type: DataType) -> str:
    """``data_type`` in Spark SQL, struct field names quoted (nullability left out)."""
    if isinstance(data_type, UserDefinedType):
        return sql_type(data_type.sqlType())
    if isinstance(data_type, StructType):
        fields = ", ".join(
            f"{quote_identifier(f.name)}: {sql_type(f.dataType)}" for f in data_type.fields
        )
        return f"STRUCT<{fields}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{sql_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{sql_type(data_type.keyType)}, {sql_type(data_type.valueType)}>"
    return data_type.simpleString()


def _json(text: str) -> dict[str, object]:
    loaded = json.loads(text)
    assert isinstance(loaded, dict)
    return loaded
