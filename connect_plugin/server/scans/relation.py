"""Turning a plugin ``Scan`` relation into a read of the scan data source.

The gateway registers the scan's Python data source once per session
(``scan_sessions``) and replaces the ``Scan`` node by ``Read.DataSource``
with the scan spec as an option. The
Filters straight above a scan prune its files through the spec
(``scan_pruning``), never through Spark's filter pushdown for Python data
sources, whose state outlives the query that pushed it.

``scan(table=...)`` reads a temporary table of the session, else a
permanent table: its files, format and schema come from the table, and its
``k=v`` partition directories become typed columns.

A scan of ``scan()`` carries the id of its call: every read of it names
the file that keeps its first plan (in the session's folder), so that
every query of the DataFrame, pruned, counted or not, has its columns,
however its files changed since (``connect_plugin.scanning.planning.kept``).

A scan with ``on_error="reject"`` gets its rejects table (``rejects``)
when its source is built, and that table is refreshed after the query ran.

Spark has no column pruning for Python data sources, so row counts over a
scan are rewritten before dispatch into scans that decode no values
(``scan_counts``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import proto_schema_to_pyspark_data_type
from pyspark.sql.types import StructType

from connect_plugin import proto
from connect_plugin.errors import InvalidScanSpec, PlanError, UpstreamFailed, WorkspaceError
from connect_plugin.scanning import (
    FileFilter,
    Format,
    OnError,
    ScanOptions,
    ScanSpec,
    ensure_format,
    format_of,
    predicates,
)
from connect_plugin.scanning.spark import (
    COUNT_OPTION,
    FILES_STAMP_OPTION,
    KEPT_PLAN_OPTION,
    SPEC_OPTION,
    ScanDataSource,
    spark_arrow_schema_of,
)
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import Name, ScanFiles
from connect_plugin.server.scans.rejects import RejectsTables
from connect_plugin.server.scans.scan_counts import push_row_counts
from connect_plugin.server.scans.scan_pruning import push_file_filters
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements.handlers import CachedScans, Call, Handler, Outcome
from connect_plugin.server.table_files.temp_table import new_files_stamp
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.transport.upstream import SessionContext, Upstream, UpstreamSession

log = logging.getLogger(__name__)

_SPARK_OPTION_NAMES = {"sep": "delimiter"}
_CALL_ID = re.compile(r"[0-9a-f]{32}")


class ScanHandler(Handler[ScanFiles]):
    """``Scan`` relations; analysing one registers the source too (Spark needs it for the schema)."""

    statement_type = ScanFiles
    message_type = proto.Scan

    def __init__(self, scans: Scans) -> None:
        self._scans = scans

    @classmethod
    def from_message(cls, message: proto.Scan) -> ScanFiles:
        return ScanFiles(message)

    def rewrite_plan(self, tree: Message, cached: CachedScans) -> bool:
        counted = push_row_counts(tree, cached)
        return push_file_filters(tree, cached) or counted

    async def analyze(self, call: Call, request: ScanFiles) -> Outcome:
        return await self.execute(call, request)

    async def execute(self, call: Call, request: ScanFiles) -> Outcome:
        read = await self._scans.read(call, request.message)
        return Outcome(read.relation, read.after)


@dataclass(frozen=True)
class ScanRead:
    """The read that replaces a scan, and the work to do once the query ran (or None)."""

    relation: spark_proto.Relation
    after: Callable[[], Awaitable[None]] | None = None


class Scans:
    """Scan relations of every session, over the temp tables for ``table=`` scans."""

    def __init__(
        self,
        sessions: ScanSessions,
        tables: Tables,
        upstream: Upstream,
        rejects: RejectsTables,
        workspace: Workspace,
    ) -> None:
        self._sessions = sessions
        self._tables = tables
        self._upstream = upstream
        self._rejects = rejects
        self._workspace = workspace

    async def read(self, call: Call, message: proto.Scan) -> ScanRead:
        """The read of a ``Scan`` relation of the query ``call`` sent."""
        session = call.context
        upstream = self._upstream.session(session)
        options = ScanOptions.from_message(message)
        file_filter = _file_filter(message.file_filter)
        spec, stamp = await self._spec(upstream, session, options, file_filter)
        if stamp:
            stamp = self._sessions.kept_stamp(session, message, stamp)
        kept = self._kept_plan(session, message.call_id, spec) if message.call_id else ""
        return await self._source(
            upstream, call, spec, count_rows=message.count_rows, files_stamp=stamp, kept_plan=kept
        )

    def _kept_plan(self, session: SessionContext, call_id: str, spec: ScanSpec) -> str:
        """The file that keeps the first plan of a ``scan()`` call: one per call and spec (a
        table replaced since is another spec), whatever a query's filter prunes."""
        if not _CALL_ID.fullmatch(call_id):
            raise PlanError(
                f"scan: call_id [{call_id[:64]}] is not 32 lower-case hex digits; it is "
                "set by connect_plugin.scan(), one per call"
            )
        name = hashlib.sha256(f"{call_id}:{spec.scan_id}".encode()).hexdigest()[:32] + ".json"
        try:
            folder = self._workspace.scans_folder
            return str(
                self._sessions.kept_plan(session, name, lambda s: folder(s, session.user_id))
            )
        except WorkspaceError as exc:
            log.warning(
                "session %s: no plan of its scans is kept, each is planned from the files "
                "there are (a DataFrame's columns may change with its files): %s",
                session.session_id,
                exc,
            )
            return ""

    async def options_read(self, call: Call, options: ScanOptions) -> ScanRead:
        """The read of a scan given as text options (``CREATE TEMPORARY VIEW ... USING scan``)."""
        upstream = self._upstream.session(call.context)
        spec, stamp = await self._spec(upstream, call.context, options)
        return await self._source(upstream, call, spec, count_rows=False, files_stamp=stamp)

    async def _source(
        self,
        upstream: UpstreamSession,
        call: Call,
        spec: ScanSpec,
        *,
        count_rows: bool,
        files_stamp: str = "",
        kept_plan: str = "",
    ) -> ScanRead:
        """The read of the scan data source for a spec: every route to a scan ends here.

        A scan that rejects records gets its rejects table here, shared with
        the query's other scans naming it, except a row count, which judges no
        record and leaves the table as it is. A scan of a temp table carries
        the table's ``files_stamp``.
        """
        after = None
        if spec.on_error is OnError.REJECT and not count_rows:
            spec, after = await self._rejects.fill(call.context, spec, call)
        await self._sessions.register(upstream, call.context)
        relation = spark_proto.Relation()
        source = relation.read.data_source
        source.format = ScanDataSource.name()
        source.options[SPEC_OPTION] = spec.to_json()
        source.options.update(spec.secret_options())
        if count_rows:
            source.options[COUNT_OPTION] = "true"
        if files_stamp:
            source.options[FILES_STAMP_OPTION] = files_stamp
        if kept_plan:
            source.options[KEPT_PLAN_OPTION] = kept_plan
        return ScanRead(relation, after)

    async def _spec(
        self,
        upstream: UpstreamSession,
        session: SessionContext,
        options: ScanOptions,
        file_filter: FileFilter | None = None,
    ) -> tuple[ScanSpec, str]:
        """The spec of a scan's options (its schema parsed, a table's files looked up), and
        the files stamp of the temp table it reads ('' for none)."""
        provided = await _provided_schema(upstream, options.schema)
        stamp = ""
        if options.table is not None:
            table = await self._table(upstream, session, options.table)
            reader = _reader_options(table.format, table.options)
            options = options.for_table(table.location, table.format, reader)
            provided = provided if provided is not None else table.schema
            stamp = table.files_stamp
        return options.to_spec(provided, file_filter), stamp

    async def _table(
        self, upstream: UpstreamSession, session: SessionContext, name: str
    ) -> _TableSource:
        temp = self._tables.lookup(session, Name((name,)))
        if temp is not None:
            struct = StructType.fromJson(json.loads(temp.schema_json))
            return _TableSource(
                name=temp.name,
                location=str(temp.location),
                format=_scan_format(temp.name, temp.format),
                options=dict(temp.options),
                schema=spark_arrow_schema_of(struct),
                files_stamp=temp.files_stamp,
            )
        return await _permanent_table(upstream, name)


async def _provided_schema(upstream: UpstreamSession, schema: object) -> pa.Schema | None:
    """A scan's provided schema as Arrow: DDL text is parsed by Spark, a DataType converted."""
    if schema is None or isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):
        return _arrow_schema(await _parse_ddl(upstream, schema))
    assert isinstance(schema, spark_proto.DataType), type(schema)
    return _arrow_schema(schema)


def _arrow_schema(data_type: spark_proto.DataType) -> pa.Schema:
    """A provided schema Spark parsed, as Arrow; it must be a struct (a list of columns)."""
    struct = proto_schema_to_pyspark_data_type(data_type)
    if not isinstance(struct, StructType):
        raise PlanError(f"scan: the provided schema must be a struct, got {struct.simpleString()}")
    return spark_arrow_schema_of(struct)


def _file_filter(text: str) -> FileFilter | None:
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PlanError(f"scan: the file filter is not JSON: {exc}") from exc
    return predicates.from_json(data)


@dataclass(frozen=True)
class _TableSource:
    """Where a scanned table's files are and how to read them."""

    name: str
    location: str
    format: Format
    options: dict[str, str]
    schema: pa.Schema
    files_stamp: str = field(default_factory=new_files_stamp)
    """A temp table's ``files_stamp``; for a catalog table, a new one for every read, since
    Spark's own read of a catalog table lists its files on every run (a DataFrame held
    since before an INSERT into it sees the new rows), and Spark cannot tell the gateway
    when they change."""


def _scan_format(table: str, file_format: str) -> Format:
    try:
        return format_of(file_format)
    except InvalidScanSpec:
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
        schema=spark_arrow_schema_of(struct),
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
    allowed = ensure_format(file_format).option_names
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
