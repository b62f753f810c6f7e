"""Turning a plugin ``Scan`` relation into a read of the scan data source.

The gateway registers the scan's Python data source once per session (the
class is pickled by reference, so Spark's Python workers import it from the
installed ``connect_plugin``; the client never ships code), turns on Spark's
filter pushdown for Python data sources in that session so that filters on
partition columns prune files, and replaces the ``Scan`` node by
``Read.DataSource`` with the scan spec as an option.

``scan(table=...)`` reads a temporary table of the session, else a
permanent table: its files, format and schema come from the table, and its
``k=v`` partition directories become typed columns.

Spark has no column pruning for Python data sources, so a row count
(``df.count()``: an ungrouped ``Aggregate`` of counts straight over a scan)
is rewritten here into a scan with no columns, which decodes no values.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from google.protobuf.message import Message
from pyspark.serializers import CloudPickleSerializer
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import proto_schema_to_pyspark_data_type
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from connect_plugin import proto
from connect_plugin.errors import PlanError
from connect_plugin.scanning.formats import format_class
from connect_plugin.scanning.loader import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS
from connect_plugin.scanning.options import (
    Compression,
    Evolution,
    Format,
    OnError,
    Partitioning,
    choice,
)
from connect_plugin.scanning.spark_source import (
    COUNT_COLUMN,
    COUNT_OPTION,
    PUSHDOWN_OPTION,
    SPEC_OPTION,
    ScanDataSource,
)
from connect_plugin.scanning.spec import ScanSpec
from connect_plugin.server.plans import type_name_of, walk_relations
from connect_plugin.server.statements import Name
from connect_plugin.server.temp_tables import TempTables
from connect_plugin.server.upstream import (
    SessionContext,
    UpstreamFailed,
    UpstreamSession,
    quote_identifier,
)

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

_SPARK_OPTION_NAMES = {"sep": "delimiter"}
_SCAN_TYPE = proto.Scan.DESCRIPTOR.full_name
_UNGROUPED = (
    spark_proto.Aggregate.GroupType.GROUP_TYPE_UNSPECIFIED,
    spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY,
)


class Scans:
    """Scan relations of every session, over the temp tables for ``table=`` scans."""

    def __init__(self, temp_tables: TempTables) -> None:
        self.temp_tables = temp_tables
        self._registered: set[tuple[str, str]] = set()

    async def relation(self, session: SessionContext, message: proto.Scan) -> spark_proto.Relation:
        upstream = self.temp_tables.upstream(session)
        spec = await self._spec(upstream, session, message)
        await self._register(upstream, session)
        pushdown = (await upstream.config([PUSHDOWN_CONF])).get(PUSHDOWN_CONF)
        relation = spark_proto.Relation()
        source = relation.read.data_source
        source.format = ScanDataSource.name()
        source.options[SPEC_OPTION] = spec.to_json()
        source.options.update(spec.secret_options())
        source.options[PUSHDOWN_OPTION] = "true" if pushdown == "true" else "false"
        if message.count_rows:
            source.options[COUNT_OPTION] = "true"
        return relation

    def forget(self, user_id: str, session_id: str) -> None:
        self._registered.discard((user_id, session_id))

    async def _register(self, upstream: UpstreamSession, session: SessionContext) -> None:
        key = (session.user_id, session.session_id)
        if key in self._registered:
            return
        cls = ScanDataSource
        command = spark_proto.Command()
        registration = command.register_data_source
        registration.name = cls.name()
        pickled = CloudPickleSerializer().dumps(cls)  # type: ignore[no-untyped-call]
        registration.python_data_source.command = pickled
        registration.python_data_source.python_ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
        try:
            await upstream.command(command)
            await upstream.set_config({PUSHDOWN_CONF: "true"})
        except UpstreamFailed as exc:
            raise PlanError(f"registering the scan data source failed: {exc}") from exc
        self._registered.add(key)

    async def _spec(
        self, upstream: UpstreamSession, session: SessionContext, message: proto.Scan
    ) -> ScanSpec:
        provided = await self._schema(upstream, message)
        partitioning = choice(
            "partitioning", proto.word_of(proto.Partitioning, message.partitioning), Partitioning
        )
        if message.WhichOneof("source") == "table":
            source = await self._table(upstream, session, message.table)
            paths, file_format = [source.location], source.format
            options = {**_reader_options(file_format, source.options), **message.options}
            provided = provided if provided is not None else source.schema
            partitioning = Partitioning.HIVE
        else:
            paths = list(message.files.paths)
            file_format = choice("format", message.files.format, Format)
            options = dict(message.options)
        return ScanSpec(
            paths=paths,
            format=file_format,
            columns=None if message.wildcard else list(message.columns),
            provided_schema=provided,
            strict=message.schema_policy == proto.SchemaPolicy.SCHEMA_POLICY_STRICT,
            partitioning=partitioning,
            on_error=choice(
                "on_error", proto.word_of(proto.BadRecordPolicy, message.on_error), OnError
            ),
            max_rows=message.limits.max_rows or DEFAULT_MAX_ROWS,
            max_bytes=message.limits.max_bytes or DEFAULT_MAX_BYTES,
            options=options,
            evolution=_evolution(message),
            rescued_column=message.rescued_column or None,
            compression=choice(
                "compression", proto.word_of(proto.Compression, message.compression), Compression
            ),
        )

    async def _table(
        self, upstream: UpstreamSession, session: SessionContext, name: str
    ) -> _TableSource:
        temp = self.temp_tables.lookup(session, Name((name,)))
        if temp is not None:
            struct = StructType.fromJson(json.loads(temp.schema_json))
            return _TableSource(
                name=temp.name,
                location=str(temp.location),
                format=_scan_format(temp.name, temp.format),
                options=dict(temp.options),
                schema=to_arrow_schema(struct),
            )
        return await _permanent_table(upstream, name)

    async def _schema(self, upstream: UpstreamSession, message: proto.Scan) -> pa.Schema | None:
        data_type: spark_proto.DataType | None = None
        if message.HasField("schema"):
            data_type = message.schema
        elif message.HasField("schema_ddl"):
            data_type = await _parse_ddl(upstream, message.schema_ddl)
        if data_type is None:
            return None
        struct = proto_schema_to_pyspark_data_type(data_type)
        if not isinstance(struct, StructType):
            raise PlanError(
                f"scan: the provided schema must be a struct, got {struct.simpleString()}"
            )
        return to_arrow_schema(struct)


def _evolution(message: proto.Scan) -> Evolution | None:
    """The message's evolution mode; None leaves it to ``strict`` (the schema policy)."""
    if message.evolution == proto.Evolution.EVOLUTION_UNSPECIFIED:
        return None
    return choice("evolution", proto.word_of(proto.Evolution, message.evolution), Evolution)


@dataclass(frozen=True)
class _TableSource:
    """Where a scanned table's files are and how to read them."""

    name: str
    location: str
    format: Format
    options: dict[str, str]
    schema: pa.Schema


def _scan_format(table: str, file_format: str) -> Format:
    try:
        return Format(file_format.lower())
    except ValueError:
        raise PlanError(
            f"scan(table=[{table}]): the table is stored as {file_format}, which the scan "
            f"cannot read; it reads {Format.words()}"
        ) from None


async def _permanent_table(upstream: UpstreamSession, name: str) -> _TableSource:
    """A catalog table's location, format, options and schema, from DESCRIBE TABLE EXTENDED."""
    relation = spark_proto.Relation()
    relation.sql.query = f"DESCRIBE TABLE EXTENDED {_qualified(name)}"
    try:
        rows = await upstream.rows(relation)
        schema_relation = spark_proto.Relation()
        schema_relation.read.named_table.unparsed_identifier = name
        data_type = await upstream.schema(schema_relation)
    except UpstreamFailed as exc:
        raise PlanError(
            f"scan(table=[{name}]): no temporary table of this session and no catalog table "
            f"has that name ({exc})"
        ) from exc
    details = {str(row["col_name"]): str(row["data_type"]) for row in rows}
    location = details.get("Location", "")
    if not location:
        raise PlanError(
            f"scan(table=[{name}]): the table has no location (a view or a catalog without "
            "files); only tables stored as files can be scanned"
        )
    if location.startswith("file:"):
        location = location[len("file:") :]
    elif "://" in location or location.split("/", 1)[0].endswith(":"):
        raise PlanError(
            f"scan(table=[{name}]): its location {location} is not on a local file system, "
            "which is all this version scans"
        )
    struct = proto_schema_to_pyspark_data_type(data_type)
    assert isinstance(struct, StructType)
    return _TableSource(
        name=name,
        location=location,
        format=_scan_format(name, details.get("Provider", "")),
        options=_storage_properties(details.get("Storage Properties", "")),
        schema=to_arrow_schema(struct),
    )


def _qualified(name: str) -> str:
    return ".".join(quote_identifier(part) for part in name.split("."))


def _storage_properties(text: str) -> dict[str, str]:
    """``[header=true, sep=;]``, as DESCRIBE prints a table's options."""
    inner = text.strip().removeprefix("[").removesuffix("]")
    pairs = (item.partition("=") for item in inner.split(", ") if item)
    return {key.strip(): value for key, sep, value in pairs if sep}


def _reader_options(file_format: Format, spark_options: Mapping[str, str]) -> dict[str, str]:
    """The Spark options a table was written with that the scan's reader takes, renamed."""
    allowed = format_class(file_format).option_names
    options: dict[str, str] = {}
    for key, value in spark_options.items():
        name = _SPARK_OPTION_NAMES.get(key.lower(), key.lower())
        if name in allowed:
            options[name] = value
    return options


async def _parse_ddl(upstream: UpstreamSession, ddl: str) -> spark_proto.DataType:
    request = spark_proto.AnalyzePlanRequest()
    request.ddl_parse.ddl_string = ddl
    try:
        response = await upstream.analyze(request)
    except UpstreamFailed as exc:
        raise PlanError(f"scan: the schema [{ddl}] is not valid DDL: {exc}") from exc
    parsed: spark_proto.DataType = response.ddl_parse.parsed
    return parsed


def prune_counted_scans(request: Message) -> bool:
    """Make scans under a bare row count read no columns, and sum per-file counts.

    Qualifies: an ungrouped ``Aggregate`` (``df.count()``, ``df.agg(...)``)
    or a ``Project`` (``df.select(F.count("*"))``) straight over a ``Scan``,
    whose every expression is a count of literals or of ``*``. The scan then
    decodes no values. When every expression is ``count(1)`` or ``count(*)``
    (aliased or not), the counts are pushed into the scan as well: it yields
    one row per file with its record count, and each expression becomes the
    sum of those, named as before. A scan that skips bad records keeps its
    columns, because which records are dropped depends on them. Returns
    whether anything changed.
    """
    changed = False
    for relation in walk_relations(request):
        found = _counted_scan(relation)
        if found is None:
            continue
        counted, expressions = found
        message = proto.Scan()
        counted.extension.Unpack(message)
        if message.on_error == proto.BadRecordPolicy.BAD_RECORD_POLICY_SKIP:
            continue
        names = [_count_name(e) for e in expressions]
        if not message.count_rows and all(names):
            message.count_rows = True
            for expression, name in zip(expressions, names, strict=True):
                expression.CopyFrom(_sum_of_counts(name or ""))
        elif not (message.wildcard or message.columns):
            continue
        message.wildcard = False
        del message.columns[:]
        counted.extension.Pack(message)
        changed = True
    return changed


def _counted_scan(
    relation: spark_proto.Relation,
) -> tuple[spark_proto.Relation, Sequence[spark_proto.Expression]] | None:
    """The scan ``relation`` only counts the rows of, and the counting expressions."""
    if relation.HasField("aggregate"):
        aggregate = relation.aggregate
        if aggregate.grouping_expressions or aggregate.group_type not in _UNGROUPED:
            return None
        child, expressions = aggregate.input, aggregate.aggregate_expressions
    elif relation.HasField("project"):
        child, expressions = relation.project.input, relation.project.expressions
    else:
        return None
    if not child.HasField("extension") or type_name_of(child.extension) != _SCAN_TYPE:
        return None
    if not expressions or not all(_counts_rows(e) for e in expressions):
        return None
    return child, expressions


def _counts_rows(expression: spark_proto.Expression) -> bool:
    if expression.HasField("alias"):
        return _counts_rows(expression.alias.expr)
    if not expression.HasField("unresolved_function"):
        return False
    function = expression.unresolved_function
    if function.function_name.lower() != "count" or function.is_distinct:
        return False
    return all(a.HasField("literal") or a.HasField("unresolved_star") for a in function.arguments)


def _count_name(expression: spark_proto.Expression) -> str | None:
    """The output name of ``count(1)``, ``count(*)`` or an alias of one; None for other counts."""
    if expression.HasField("alias"):
        inner = expression.alias.expr
        named = len(expression.alias.name) == 1 and not expression.alias.HasField("metadata")
        return expression.alias.name[0] if named and _count_name(inner) else None
    arguments = expression.unresolved_function.arguments
    if len(arguments) != 1:
        return None
    (argument,) = arguments
    if argument.HasField("unresolved_star") and not argument.unresolved_star.unparsed_target:
        return "count(1)"
    literal = argument.literal
    one = literal.WhichOneof("literal_type") in ("integer", "long") and (
        literal.integer == 1 or literal.long == 1
    )
    return "count(1)" if argument.HasField("literal") and one else None


def _sum_of_counts(name: str) -> spark_proto.Expression:
    """``coalesce(sum(rows), 0L) AS name``: a count's value, type and nullability."""
    column = spark_proto.Expression()
    column.unresolved_attribute.unparsed_identifier = quote_identifier(COUNT_COLUMN)
    total = spark_proto.Expression()
    total.unresolved_function.function_name = "sum"
    total.unresolved_function.arguments.append(column)
    zero = spark_proto.Expression()
    zero.literal.long = 0
    coalesced = spark_proto.Expression()
    coalesced.unresolved_function.function_name = "coalesce"
    coalesced.unresolved_function.arguments.extend([total, zero])
    named = spark_proto.Expression()
    named.alias.expr.CopyFrom(coalesced)
    named.alias.name.append(name)
    return named
