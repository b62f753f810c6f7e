"""What a CREATE TEMPORARY TABLE writes: its query fitted to the column list or to the
declared columns, and the shape of its files.

A column list renames the query's columns; column definitions are parsed
by Spark and the query's columns cast to them by position
(``DataFrame.to`` rules); without a query, a declared table is no rows of
its columns. Every column is written nullable except a declared ``NOT
NULL`` one, which the value checks enforce; inside a column's values
(elements, map values, struct fields) everything is nullable, as in Spark's
own file tables, and a NOT NULL declared there is refused. ``check_shape`` puts the
partition columns last, as Spark writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import (
    proto_schema_to_pyspark_data_type,
    pyspark_types_to_proto_types,
)
from pyspark.sql.types import StructField, StructType

from connect_plugin.errors import TempTableError, TempTableQueryFailed, UpstreamFailed
from connect_plugin.server.model.statements import CreateTempTable
from connect_plugin.server.statements.recognition import char_types
from connect_plugin.server.tables.value_checks import nullable_columns, nullable_inside
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import UpstreamSession

_SHOWN_DEFINITION_CHARS = 200


@dataclass(frozen=True)
class Source:
    """The rows a CREATE writes, and their schema."""

    relation: spark_proto.Relation
    schema: StructType


async def shaped_input(upstream: UpstreamSession, request: CreateTempTable, name: str) -> Source:
    """The query, renamed by the column list or cast to the declared columns, with its
    schema; for a declared table without a query, no rows of the declared schema."""
    if request.schema is not None and request.column_names:
        raise TempTableError(
            f"temporary table [{name}]: give column names or column definitions, not both"
        )
    if request.schema is not None:
        return await _declared_input(upstream, request.schema, request.input, name)
    relation = request.input
    if relation is None:
        raise TempTableError(
            f"temporary table [{name}] was not created: give it a query or column definitions"
        )
    schema = await _schema(upstream, relation, name)
    if request.column_names:
        if len(request.column_names) != len(schema.fields):
            raise TempTableError(
                f"temporary table [{name}]: the column list names "
                f"{len(request.column_names)} columns but the query returns "
                f"{len(schema.fields)} ({', '.join(schema.names)})"
            )
        relation = _renamed(relation, request.column_names)
        schema = await _schema(upstream, relation, name)
    return Source(relation, nullable_columns(schema))


async def _declared_input(
    upstream: UpstreamSession,
    definitions: str,
    query: spark_proto.Relation | None,
    name: str,
) -> Source:
    """The rows of a declared table: none, or the query's cast to the declared columns.

    Spark parses the definitions (as it parses ``createDataFrame``'s schema
    string) and casts with the rules of ``DataFrame.to``: by position here,
    as the columns are renamed first; a cast Spark's store assignment refuses
    is its own error, and so is a value that overflows. ``NOT NULL`` stays in
    the written schema, where the value checks find it: ``DataFrame.to``
    would refuse a nullable query column outright, where a NULL should only
    be refused when a row has one.
    """
    fixed_length = char_types(definitions)
    if fixed_length:
        raise TempTableError(
            f"Temporary table [{name}] was not created: temp tables keep no CHAR(n) or "
            f"VARCHAR(n) ({', '.join(fixed_length)}): Spark reads their files without "
            "lengths; declare the column STRING"
        )
    empty = spark_proto.Relation()
    empty.local_relation.schema = definitions
    try:
        parsed = proto_schema_to_pyspark_data_type(await upstream.schema(empty))
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{name}] was not created: its column definitions "
            f"({_shown(definitions)}) are not valid: {exc.message}"
        ) from exc
    assert isinstance(parsed, StructType)
    for field in parsed.fields:
        if nullable_inside(field.dataType) != field.dataType:
            raise TempTableError(
                f"Temporary table [{name}] was not created: column [{field.name}] declares "
                "NOT NULL inside its type; a temporary table keeps NOT NULL on whole columns "
                f"only: declare the fields of [{field.name}] without NOT NULL"
            )
    seen: set[str] = set()
    for column in parsed.names:
        if column.lower() in seen:
            raise TempTableError(
                f"Temporary table [{name}] was not created: column [{column}] is declared "
                "twice; give each column its own name"
            )
        seen.add(column.lower())
    if query is None:
        return Source(empty, parsed)
    given = await _schema(upstream, query, name)
    if len(given.fields) != len(parsed.fields):
        raise TempTableError(
            f"temporary table [{name}]: {len(parsed.fields)} columns are declared "
            f"({', '.join(parsed.names)}) but the query returns {len(given.fields)} "
            f"({', '.join(given.names)}); give the query as many columns, in the declared order"
        )
    cast = spark_proto.Relation()
    with deep_messages():
        cast.to_schema.input.CopyFrom(_renamed(query, parsed.names))
    cast.to_schema.schema.CopyFrom(pyspark_types_to_proto_types(nullable_columns(parsed)))
    result = await _schema(upstream, cast, name)
    written = [
        StructField(f.name, f.dataType, declared.nullable, f.metadata)
        for f, declared in zip(result.fields, parsed.fields, strict=True)
    ]
    return Source(cast, StructType(written))


def _renamed(relation: spark_proto.Relation, names: Sequence[str]) -> spark_proto.Relation:
    renamed = spark_proto.Relation()
    with deep_messages():
        renamed.to_df.input.CopyFrom(relation)
    renamed.to_df.column_names.extend(names)
    return renamed


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_DEFINITION_CHARS else text[:_SHOWN_DEFINITION_CHARS] + "..."


async def _schema(
    upstream: UpstreamSession, relation: spark_proto.Relation, name: str
) -> StructType:
    try:
        data_type = proto_schema_to_pyspark_data_type(await upstream.schema(relation))
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{name}] was not created: {exc.message}"
        ) from exc
    assert isinstance(data_type, StructType)
    return data_type


def check_shape(
    schema: StructType, partition_columns: tuple[str, ...], fmt: str, name: str
) -> StructType:
    """The schema the files will have once written (partition columns last)."""
    by_name = {f.name.lower(): f for f in schema.fields}
    for column in partition_columns:
        if column.lower() not in by_name:
            raise TempTableError(
                f"temporary table [{name}]: partition column [{column}] is not in the "
                f"select list ({', '.join(schema.names)})"
            )
    partition_keys = {c.lower() for c in partition_columns}
    data = [f for f in schema.fields if f.name.lower() not in partition_keys]
    if fmt == "text" and (len(data) != 1 or data[0].dataType.typeName() != "string"):
        raise TempTableError(
            f"temporary table [{name}]: format text needs exactly one string column "
            f"besides the partition columns, the query gives {schema.simpleString()}"
        )
    if not data:
        raise TempTableError(
            f"temporary table [{name}]: every column is a partition column; keep at least "
            "one data column"
        )
    return StructType([*data, *(by_name[c.lower()] for c in partition_columns)])
