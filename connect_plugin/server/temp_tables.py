"""Session temporary tables: create, drop, list, read, release.

Spark does the data work in the user's own session: the query result is
written under ``<workspace>/<session_id>/<uuid>/`` with its rows counted by
an observation on the same job, the folder is made private, and a temporary
view over the files with the written schema gives the table its name. Every
step that fails undoes the ones before it, so a failed statement leaves no
files, no view and no registry entry.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import proto_schema_to_pyspark_data_type
from pyspark.sql.types import StructType

from connect_plugin.config import TEMP_TABLE_FORMATS, Config
from connect_plugin.errors import (
    ConnectPluginError,
    RegistryError,
    TempTableError,
    TempTableExists,
    TempTableNotFound,
    TempTableQueryFailed,
    WorkspaceError,
)
from connect_plugin.server import results
from connect_plugin.server.recovery import Recovery
from connect_plugin.server.registry import SessionEntry, SessionRegistry, TempTable
from connect_plugin.server.session_store import SessionStore, SqliteSessionStore
from connect_plugin.server.statements import Name, check_table_name
from connect_plugin.server.upstream import (
    SESSION_GONE_ERRORS,
    SessionContext,
    UpstreamFailed,
    UpstreamSession,
    literal,
    quote_identifier,
)
from connect_plugin.server.workspace import REGISTRY_FILE, Workspace

log = logging.getLogger(__name__)

SESSION_FORMAT_KEY = "connect_plugin.temp_table.format"
_ROWS_METRIC = "rows"
WRITE_POLL_S = 0.1

ProgressSink = Callable[[spark_proto.ExecutePlanResponse], None]


@dataclass(frozen=True)
class CreateRequest:
    """A CTTAS, from SQL or from the Python API."""

    name: Name
    input: spark_proto.Relation
    column_names: tuple[str, ...] = ()
    partition_columns: tuple[str, ...] = ()
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    or_replace: bool = False


class TempTables:
    """The gateway's temp-table service over one workspace and one registry."""

    def __init__(
        self, config: Config, channel: grpc.aio.Channel, store: SessionStore | None = None
    ) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace)
        self._lock = self.workspace.lock()
        try:
            if store is None:
                path = config.registry_path or self.workspace.private_folder / REGISTRY_FILE
                store = SqliteSessionStore(path)
        except BaseException:
            self._lock.release()
            raise
        self.registry = SessionRegistry(store)
        self.recovery: Recovery | None = None
        self._channel = channel

    async def start(self) -> Recovery:
        """Load the registry, repair what a crash left half-done, sweep orphans."""
        self.recovery = Recovery(self)
        await self.recovery.run()
        return self.recovery

    async def stop(self) -> None:
        """Stop recovery still under way, close the registry, free the workspace."""
        try:
            if self.recovery is not None:
                await self.recovery.stop()
        finally:
            self.close()

    def close(self) -> None:
        try:
            self.registry.store.close()
        finally:
            self._lock.release()

    def upstream(self, context: SessionContext) -> UpstreamSession:
        return UpstreamSession(self._channel, context)

    def being_created(self, context: SessionContext, name: Name) -> bool:
        """Whether a CTTAS of ``name`` is under way in the session (a DROP must wait for it)."""
        entry = self.registry.find(context.user_id, context.session_id)
        return entry is not None and entry.creating[name.name.lower()] > 0

    def lookup(self, context: SessionContext, name: Name) -> TempTable | None:
        """The session's temp table ``name`` refers to, if it refers to one."""
        if name.qualifier is not None and name.qualifier.lower() != self._workspace_name:
            return None
        if len(name.parts) > 2:
            return None
        return self.registry.table(context.user_id, context.session_id, name.name)

    @property
    def _workspace_name(self) -> str:
        return self.config.temp_workspace_name.lower()

    async def create(
        self, context: SessionContext, request: CreateRequest, progress: ProgressSink | None = None
    ) -> spark_proto.Relation:
        name = check_table_name(request.name, self.config.temp_workspace_name)
        upstream = self.upstream(context)
        entry = self.registry.session(context.user_id, context.session_id)
        key = name.lower()
        entry.creating[key] += 1
        try:
            async with entry.lock:
                await self._drop_if_lost(upstream, entry)
                existing = entry.tables.get(name.lower())
                taken = existing is not None or await self._is_temp_view(upstream, name)
                if taken and request.if_not_exists:
                    return results.status(False, self._exists_message(name))
                if taken and not request.or_replace:
                    raise TempTableExists(
                        self._exists_message(name) + "; drop it first or use CREATE OR REPLACE"
                    )
                fmt = await self._format(upstream, request.format, name)
                source = await self._shaped_input(upstream, request, name)
                written = self._check_shape(source.schema, request.partition_columns, fmt, name)
                log.info("Temporary table [%s] is being created.", name)
                try:
                    location = self.workspace.new_table_folder(context.session_id)
                except WorkspaceError as exc:
                    raise WorkspaceError(
                        f"Temporary table [{name}] was not created: {exc}"
                    ) from exc
                table = TempTable(
                    name=name,
                    location=location,
                    format=fmt,
                    schema_json=written.json(),
                    partition_columns=request.partition_columns,
                    options=dict(request.options),
                    rows=0,
                    created=datetime.datetime.now(datetime.timezone.utc),
                )
                operation_id = str(uuid.uuid4())
                self.registry.begin_create(
                    entry, table, operation_id, upstream.server_side_session_id
                )
                viewing = False
                entry.writes[operation_id] = name
                try:
                    rows = await self._write(
                        upstream, source.relation, table, request, progress, operation_id
                    )
                    del entry.writes[operation_id]
                    self.workspace.secure(table.location)
                    viewing = True
                    await self._create_view(upstream, table, replace=taken)
                except BaseException:
                    entry.writes.pop(operation_id, None)
                    # Also when the client went away (cancelled): the undo must run to its end.
                    # A name taken by a plain view of the client's is not ours to give back.
                    undo_view = viewing and (existing is not None or not taken)
                    await _to_the_end(
                        self._undo_create(context, table, operation_id, existing, undo_view)
                    )
                    raise
                table = dataclasses.replace(table, rows=rows)
                self.registry.finish_create(entry, table, replaced=existing)
                if existing is not None:
                    self._remove_files(existing)
                return results.created(name, rows)
        finally:
            entry.creating[key] -= 1
            if not entry.creating[key]:
                del entry.creating[key]

    async def _undo_create(
        self,
        context: SessionContext,
        table: TempTable,
        operation_id: str,
        replaced: TempTable | None,
        undo_view: bool,
    ) -> None:
        """Undo a failed or abandoned CTTAS: stop Spark's write, give the name back, delete.

        Spark's write runs on when the client goes away, and its tasks would
        bring the folder back after it is deleted, so the write is
        interrupted and awaited first. If the upstream cannot say the write
        stopped, the row stays ``creating`` for the next start to finish.
        """
        upstream = self.upstream(context)
        try:
            await self.stop_write(upstream, operation_id, table.name)
            if undo_view and replaced is not None:
                await self.restore_view(context, replaced)
            elif undo_view:
                await self.drop_view(context, table.name)
        except (ConnectPluginError, UpstreamFailed) as exc:
            if not _session_gone(exc):
                log.warning(
                    "Temporary table [%s]: cannot undo its creation now (%s); the next start "
                    "finishes it",
                    table.name,
                    exc,
                )
                return
        try:
            self.workspace.remove(table.location)
            self.registry.remove([table])
        except (WorkspaceError, RegistryError):
            # The client hears why the CTTAS failed, not why its undo did.
            log.exception("Temporary table [%s]: the next start finishes undoing it", table.name)

    async def stop_write(self, upstream: UpstreamSession, operation_id: str, name: str) -> None:
        """Interrupt a table's write operation and wait until Spark has let go of it."""
        timeout = self.config.recovery_timeout_s

        async def interrupt_and_wait() -> None:
            if await upstream.interrupt(operation_id):
                log.info("Temporary table [%s]: interrupted its write.", name)
            while await upstream.running(operation_id):
                await asyncio.sleep(WRITE_POLL_S)

        try:
            await asyncio.wait_for(interrupt_and_wait(), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise TempTableError(
                f"Temporary table [{name}]: its write (operation {operation_id}) still runs "
                f"{timeout:.0f} s after being interrupted"
            ) from None

    async def stop_writes(self, context: SessionContext) -> None:
        """Stop the session's running CTTAS writes before the session is released upstream.

        Once Spark has released a session it can no longer say whether an
        operation of it still runs, and a write's tasks would bring a deleted
        folder back; so the writes are interrupted and awaited while it can.
        """
        entry = self.registry.find(context.user_id, context.session_id)
        if entry is None or not entry.writes:
            return
        upstream = self.upstream(context)
        outcomes = await asyncio.gather(
            *(self.stop_write(upstream, op, name) for op, name in list(entry.writes.items())),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.warning("session %s: before its release, %s", context.session_id, outcome)

    async def _drop_if_lost(self, upstream: UpstreamSession, entry: SessionEntry) -> None:
        """Drop tables left from an upstream session that is gone (caller holds the lock).

        A restarted upstream makes a new session for a known id, and a client
        that does not say which server-side session it saw (the stock client
        does) gets no SESSION_CHANGED; its old tables' views are gone.
        """
        known = entry.server_side_session_id
        if not known or not entry.tables:
            return
        try:
            current = await upstream.current_server_side_session_id()
        except (UpstreamFailed, ConnectPluginError):
            return
        if current == known:
            return
        log.info(
            "Session [%s] is a new one on the Spark Connect server; its earlier temporary "
            "tables go.",
            entry.session_id,
        )
        tables = list(entry.tables.values())
        self.registry.begin_drop(entry, tables)
        entry.tables.clear()
        for table in tables:
            self._remove_files(table)

    def _remove_files(self, table: TempTable) -> None:
        """Delete the files of a dropped table; if that fails its row stays for the next start."""
        try:
            self.workspace.remove(table.location)
        except WorkspaceError:
            log.exception("deleting the files of temporary table [%s] failed", table.name)
            return
        self.registry.remove([table])

    def _exists_message(self, name: str) -> str:
        return (
            f"A table or view with given name [{name}] already exists in schema "
            f"[{self.config.temp_workspace_name}]"
        )

    @staticmethod
    async def _is_temp_view(upstream: UpstreamSession, name: str) -> bool:
        relation = spark_proto.Relation()
        relation.sql.query = "SHOW VIEWS"
        try:
            rows = await upstream.rows(relation)
        except UpstreamFailed as exc:
            raise TempTableQueryFailed(f"cannot list the session's views: {exc}") from exc
        return any(
            bool(row.get("isTemporary")) and str(row.get("viewName", "")).lower() == name.lower()
            for row in rows
        )

    async def _format(self, upstream: UpstreamSession, given: str | None, name: str) -> str:
        fmt = given
        if not fmt:
            fmt = (await upstream.config([SESSION_FORMAT_KEY])).get(SESSION_FORMAT_KEY)
        fmt = (fmt or self.config.temp_table_format).lower()
        if fmt not in TEMP_TABLE_FORMATS:
            raise TempTableError(
                f"unknown format [{fmt}] for temporary table [{name}]; use one of "
                + ", ".join(TEMP_TABLE_FORMATS)
            )
        return fmt

    async def _shaped_input(
        self, upstream: UpstreamSession, request: CreateRequest, name: str
    ) -> _Source:
        """The query, renamed by the column list when there is one, with its schema."""
        relation = request.input
        schema = await self._schema(upstream, relation, name)
        if request.column_names:
            if len(request.column_names) != len(schema.fields):
                raise TempTableError(
                    f"temporary table [{name}]: the column list names "
                    f"{len(request.column_names)} columns but the query returns "
                    f"{len(schema.fields)} ({', '.join(schema.names)})"
                )
            renamed = spark_proto.Relation()
            renamed.to_df.input.CopyFrom(relation)
            renamed.to_df.column_names.extend(request.column_names)
            relation = renamed
            schema = await self._schema(upstream, relation, name)
        return _Source(relation, schema)

    @staticmethod
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

    @staticmethod
    def _check_shape(
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

    async def _write(
        self,
        upstream: UpstreamSession,
        relation: spark_proto.Relation,
        table: TempTable,
        request: CreateRequest,
        progress: ProgressSink | None,
        operation_id: str,
    ) -> int:
        metric = f"connect_plugin_{uuid.uuid4().hex}"
        observed = spark_proto.Relation()
        observed.collect_metrics.input.CopyFrom(relation)
        observed.collect_metrics.name = metric
        count = observed.collect_metrics.metrics.add()
        count.alias.name.append(_ROWS_METRIC)
        count.alias.expr.unresolved_function.function_name = "count"
        count.alias.expr.unresolved_function.arguments.append(literal(1))
        command = spark_proto.Command()
        write = command.write_operation
        write.input.CopyFrom(observed)
        write.source = table.format
        write.path = str(table.location)
        write.mode = spark_proto.WriteOperation.SaveMode.SAVE_MODE_ERROR_IF_EXISTS
        write.partitioning_columns.extend(request.partition_columns)
        write.options.update(request.options)
        rows: int | None = None
        try:
            plan = spark_proto.Plan(command=command)
            async for response in upstream.execute(plan, operation_id=operation_id):
                if response.HasField("execution_progress") and progress is not None:
                    progress(response)
                for metrics in response.observed_metrics:
                    if metrics.name == metric and metrics.values:
                        rows = metrics.values[0].long
        except UpstreamFailed as exc:
            raise TempTableQueryFailed(
                f"Temporary table [{request.name.name}] was not created: writing "
                f"[{table.location}] failed: {exc.message}{await _root_cause(upstream, exc)}"
            ) from exc
        if rows is None:
            rows = await _count_written(upstream, table, request.name.name)
        return rows

    async def _create_view(
        self, upstream: UpstreamSession, table: TempTable, *, replace: bool
    ) -> None:
        """The temporary view over the table's files, with the schema they were written with."""
        command = spark_proto.Command()
        view = command.create_dataframe_view
        view.name = table.name
        view.replace = replace
        source = view.input.read.data_source
        source.format = table.format
        source.schema = table.schema_json
        source.paths.append(str(table.location))
        source.options.update(table.options)
        try:
            await upstream.command(command)
        except UpstreamFailed as exc:
            raise TempTableQueryFailed(
                f"Temporary table [{table.name}] was not created: its view failed: {exc.message}"
            ) from exc

    async def restore_view(self, context: SessionContext, table: TempTable) -> None:
        """Point the table's name at its files again (after a crashed replace)."""
        await self._create_view(self.upstream(context), table, replace=True)

    async def drop_view(self, context: SessionContext, name: str) -> None:
        """Drop the session's temporary view ``name``; nothing happens if there is none."""
        relation = spark_proto.Relation()
        relation.catalog.drop_temp_view.view_name = name
        try:
            await self.upstream(context).run(spark_proto.Plan(root=relation))
        except UpstreamFailed as exc:
            raise TempTableError(
                f"Temporary table [{name}]: dropping its view failed: {exc}"
            ) from exc

    async def drop(
        self, context: SessionContext, name: Name, *, if_exists: bool, strict: bool
    ) -> spark_proto.Relation | None:
        """Drop a temp table; ``None`` when ``name`` is none and ``strict`` is off (SQL)."""
        entry = self.registry.find(context.user_id, context.session_id)
        if entry is not None and self.being_created(context, name):
            async with entry.lock:
                pass
        table = self.lookup(context, name)
        if table is None or entry is None:
            if not strict:
                return None
            if if_exists:
                return results.status(False, f"Temporary table [{name}] not found")
            raise TempTableNotFound(f"Temporary table [{name}] not found in this session")
        # A client that goes away mid-DROP must not leave the view and the row disagreeing.
        dropped = await asyncio.shield(self._drop(context, entry, table))
        if not dropped:
            return results.status(False, f"Temporary table [{name}] not found")
        return results.status(True, f"Temporary table [{table.name}] dropped")

    async def _drop(self, context: SessionContext, entry: SessionEntry, table: TempTable) -> bool:
        async with entry.lock:
            if entry.tables.get(table.key) is not table:
                return False
            log.info("Temporary table [%s] is being dropped.", table.name)
            self.registry.begin_drop(entry, [table])
            try:
                await self.drop_view(context, table.name)
            except ConnectPluginError:
                self.registry.cancel_drop(entry, table)
                raise
            self.registry.unlist(entry, table)
            self.workspace.remove(table.location)
            self.registry.remove([table])
            return True

    def listing(self, context: SessionContext) -> spark_proto.Relation:
        entry = self.registry.find(context.user_id, context.session_id)
        tables = [] if entry is None else sorted(entry.tables.values(), key=lambda t: t.key)
        rows = [
            (t.name, t.format, t.rows, self.workspace.size(t.location), t.created) for t in tables
        ]
        return results.result_relation(results.LIST_COLUMNS, rows)

    def read(self, context: SessionContext, name: str) -> spark_proto.Relation:
        table = self.lookup(context, Name((name,)))
        if table is None:
            raise TempTableNotFound(
                f"Temporary table [{name}] not found in this session; SHOW TEMPORARY TABLES "
                "lists the ones it has"
            )
        relation = spark_proto.Relation()
        relation.read.named_table.unparsed_identifier = quote_identifier(table.name)
        return relation

    def secure(self, context: SessionContext, name: Name) -> None:
        """Make files Spark added to a temp table (INSERT) private again."""
        table = self.lookup(context, name)
        if table is not None:
            self.workspace.secure(table.location)

    async def release(
        self, user_id: str, session_id: str, server_side_session_id: str | None = None
    ) -> bool:
        """Drop every temp table of a session that is going away, and its folder.

        Spark has released the session (and its views) already; the rows are
        marked dropping, the folder goes, then the rows. A crash in between
        is finished at the next start, which finds the session gone upstream.
        With ``server_side_session_id`` (a session found lost), nothing happens
        if a CTTAS has since recorded a new upstream session for the id.
        """
        entry = self.registry.find(user_id, session_id)
        if entry is None:
            if server_side_session_id is not None:
                return False
            entry = SessionEntry(user_id, session_id)
        elif server_side_session_id is None:
            self.registry.forget(user_id, session_id)
        async with entry.lock:
            if (
                server_side_session_id is not None
                and entry.server_side_session_id != server_side_session_id
            ):
                log.info("session %s lives on in a new upstream session", session_id)
                return False
            self.discard(entry)
        return True

    def discard(self, entry: SessionEntry) -> bool:
        """Delete a gone session's tables, folder and rows; False if the folder stays.

        The caller holds the session's lock (or owns the entry outright).
        When the folder cannot be deleted the rows stay, for the next start.
        """
        if self.registry.find(entry.user_id, entry.session_id) is entry:
            self.registry.forget(entry.user_id, entry.session_id)
        tables = list(entry.tables.values())
        for table in tables:
            log.info("Temporary table [%s] is being dropped.", table.name)
        if tables:
            self.registry.begin_drop(entry, tables)
            entry.tables.clear()
        if not any(other.session_id == entry.session_id for other in self.registry.sessions()):
            try:
                self.workspace.remove_session(entry.session_id)
            except WorkspaceError:
                log.exception("session %s: its folder stays for the next start", entry.session_id)
                return False
        self.registry.remove_session(entry.user_id, entry.session_id)
        return True

    async def clone(
        self, context: SessionContext, request: spark_proto.CloneSessionRequest
    ) -> spark_proto.CloneSessionResponse | None:
        """Clone a session upstream and give the clone its own copy of every temp table.

        ``None`` when the session has no temporary tables: the clone is
        forwarded as it came. Otherwise the session's lock is held from
        before the upstream clone until the copies are ready, so a running
        CTTAS or DROP ends first. Each table's files are hard-linked into the
        clone's folder and the clone's view (Spark copied the original's) is
        pointed at them, so dropping or releasing either side never touches
        the other. If a copy fails, the clone is released upstream and
        nothing of it stays; the client hears which table failed and why.
        """
        source = self.registry.find(context.user_id, context.session_id)
        if source is None:
            return None
        if not request.new_session_id:
            request.new_session_id = str(uuid.uuid4())
        async with source.lock:
            response = await self.upstream(context).clone_session(request)
            clone = SessionContext(response.new_session_id, context.user_context, context.metadata)
            try:
                await self._copy_tables(source, clone, response.new_server_side_session_id)
            except BaseException as exc:
                await _to_the_end(self._undo_clone(clone))
                if isinstance(exc, (ConnectPluginError, UpstreamFailed)):
                    raise TempTableError(
                        f"session [{context.session_id}] was not cloned: {exc}"
                    ) from exc
                raise
        return response

    async def _copy_tables(
        self, source: SessionEntry, clone: SessionContext, server_side_session_id: str
    ) -> None:
        entry = self.registry.session(clone.user_id, clone.session_id)
        upstream = self.upstream(clone)
        async with entry.lock:
            for table in sorted(source.tables.values(), key=lambda t: t.created):
                try:
                    location = self.workspace.new_table_folder(clone.session_id)
                except WorkspaceError as exc:
                    raise WorkspaceError(f"temporary table [{table.name}]: {exc}") from exc
                copy = dataclasses.replace(table, location=location)
                self.registry.begin_create(entry, copy, "", server_side_session_id)
                try:
                    self.workspace.copy_table(table.location, location)
                except WorkspaceError as exc:
                    raise WorkspaceError(
                        f"temporary table [{table.name}]: its files were not copied: {exc}"
                    ) from exc
                await self._create_view(upstream, copy, replace=True)
                self.registry.finish_create(entry, copy, replaced=None)
                log.info("Temporary table [%s] copied to session %s.", table.name, clone.session_id)

    async def _undo_clone(self, clone: SessionContext) -> None:
        """Release a clone whose tables could not be copied, and delete what was copied."""
        try:
            await self.upstream(clone).release_session()
        except (ConnectPluginError, UpstreamFailed) as exc:
            log.warning("session %s: releasing the failed clone failed: %s", clone.session_id, exc)
        entry = self.registry.find(clone.user_id, clone.session_id)
        self.discard(entry or SessionEntry(clone.user_id, clone.session_id))


async def _to_the_end(work: Awaitable[None]) -> None:
    """Await ``work`` to its end even if the caller is cancelled meanwhile (re-raised after)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError


async def _root_cause(upstream: UpstreamSession, exc: UpstreamFailed) -> str:
    """`` (caused by: ...)`` with the innermost Spark error, when Spark kept its details.

    A failed write says only "Task failed while writing rows"; what the user
    can act on (no space left, permission denied) is its root cause.
    """
    try:
        status = rpc_status.from_call(exc.error)
    except ValueError:  # details that contradict the status code
        return ""
    error_id = ""
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            error_id = info.metadata.get("errorId", "")
    if not error_id:
        return ""
    try:
        response = await upstream.error_details(error_id)
    except (UpstreamFailed, ConnectPluginError):
        return ""
    errors = response.errors
    if not errors or not response.HasField("root_error_idx"):
        return ""
    index, seen = response.root_error_idx, set()
    while errors[index].HasField("cause_idx") and index not in seen:
        seen.add(index)
        index = errors[index].cause_idx
    cause = errors[index].message
    return f" (caused by: {cause})" if cause and cause not in exc.message else ""


def _session_gone(exc: BaseException) -> bool:
    """The upstream session was released or expired: Spark stopped its operations itself."""
    message = exc.message if isinstance(exc, UpstreamFailed) else str(exc)
    return any(error in message for error in SESSION_GONE_ERRORS)


@dataclass(frozen=True)
class _Source:
    relation: spark_proto.Relation
    schema: StructType


async def _count_written(upstream: UpstreamSession, table: TempTable, name: str) -> int:
    """The rows in a table's files, when Spark sent no observed metrics with their write:
    Spark 4.0 and 4.1 sometimes leave them out (the first write after start-up most often)."""
    log.info("Spark sent no row count with the write of [%s]; counting its files", name)
    relation = spark_proto.Relation()
    source = relation.aggregate.input.read.data_source
    source.format = table.format
    source.schema = table.schema_json
    source.paths.append(str(table.location))
    source.options.update(table.options)
    relation.aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    count = relation.aggregate.aggregate_expressions.add().alias
    count.name.append(_ROWS_METRIC)
    count.expr.unresolved_function.function_name = "count"
    count.expr.unresolved_function.arguments.append(literal(1))
    try:
        (row,) = await upstream.rows(relation)
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{name}]: Spark did not report the number of rows written, and "
            f"counting them in [{table.location}] failed: {exc.message}"
        ) from exc
    rows = row[_ROWS_METRIC]
    assert isinstance(rows, int)
    return rows
