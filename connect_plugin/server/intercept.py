"""Which requests the gateway handles itself, and how it rewrites them.

A request with a plugin relation or one of the plugin's SQL statements is
rewritten into a standard Spark Connect request: side effects (writing a
temp table, dropping one) run first in the user's session, then the handled
node is replaced by a relation that yields its result rows, and that request
goes upstream as the client's own operation. Everything else passes
untouched.

Progress of the gateway's own work reaches the client as extra
``execution_progress`` responses before Spark's. Their response ids carry a
prefix the gateway recognises: the client acknowledges each response with
ReleaseExecute (and may name one in ReattachExecute), and the gateway
answers or strips those itself, since the upstream never sent them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.config import Config
from connect_plugin.errors import NotSupportedYet, TempTableError
from connect_plugin.server import results
from connect_plugin.server.clone import Cloner
from connect_plugin.server.create import TableCreator
from connect_plugin.server.forwarding import Interception, forwardable_metadata
from connect_plugin.server.plans import FoundExtension, find_extensions
from connect_plugin.server.release import SessionRelease
from connect_plugin.server.requests import CreateTempTable as CreateRequest
from connect_plugin.server.scans import Scans, prune_counted_scans
from connect_plugin.server.sessions import SessionRegistry
from connect_plugin.server.statements import (
    CreatePersistentView,
    CreateTempTable,
    CreateTempView,
    DropTable,
    DropView,
    InsertInto,
    Name,
    ShowTempTables,
    Statement,
    parse_statement,
)
from connect_plugin.server.tables import Tables
from connect_plugin.server.upstream import SessionContext, Upstream
from connect_plugin.server.writes import ProgressSink, stop_writes

SYNTHETIC_RESPONSE_PREFIX = "connect-plugin-progress-"
T = TypeVar("T")


def _context(request: Any, context: Any) -> SessionContext:
    return SessionContext(
        session_id=request.session_id,
        user_context=request.user_context,
        metadata=forwardable_metadata(context.invocation_metadata()),
    )


def _replace(holder: spark_proto.Relation, result: spark_proto.Relation) -> None:
    """Put ``result`` where ``holder`` was, keeping the node's plan id."""
    common = spark_proto.RelationCommon()
    had_common = holder.HasField("common")
    if had_common:
        common.CopyFrom(holder.common)
    holder.CopyFrom(result)
    if had_common:
        holder.common.CopyFrom(common)


class _SqlSite:
    """Where a plan holds SQL text: a SqlCommand or a root SQL relation."""

    def __init__(self, plan: spark_proto.Plan) -> None:
        self.plan = plan
        self.command = plan.HasField("command") and plan.command.HasField("sql_command")
        self.relation = spark_proto.SQL()
        if self.command:
            sql_command = plan.command.sql_command
            if sql_command.HasField("input") and sql_command.input.HasField("sql"):
                self.relation.CopyFrom(sql_command.input.sql)
            else:
                self.relation.query = sql_command.sql
                for key, value in sql_command.args.items():
                    self.relation.args[key].CopyFrom(value)
                self.relation.pos_args.extend(sql_command.pos_args)
                for key, expression in sql_command.named_arguments.items():
                    self.relation.named_arguments[key].CopyFrom(expression)
                self.relation.pos_arguments.extend(sql_command.pos_arguments)
        elif plan.HasField("root") and plan.root.HasField("sql"):
            self.relation.CopyFrom(plan.root.sql)

    @property
    def query(self) -> str:
        return self.relation.query

    def with_query(self, query: str) -> spark_proto.Relation:
        """The same SQL relation (arguments included) with another query text."""
        relation = spark_proto.Relation()
        relation.sql.CopyFrom(self.relation)
        relation.sql.query = query
        return relation

    def put_result(self, result: spark_proto.Relation) -> None:
        if self.command:
            self.plan.command.sql_command.Clear()
            self.plan.command.sql_command.input.CopyFrom(result)
        else:
            _replace(self.plan.root, result)


class PluginHandlers:
    """The request hooks of the gateway, one per intercepted method."""

    def __init__(
        self,
        config: Config,
        registry: SessionRegistry,
        upstream: Upstream,
        tables: Tables,
        creator: TableCreator,
        cloner: Cloner,
        release: SessionRelease,
        scans: Scans,
    ) -> None:
        self.config = config
        self._registry = registry
        self._upstream = upstream
        self.temp_tables = tables
        self._creator = creator
        self._cloner = cloner
        self._release = release
        self.scans = scans

    def hooks(self, plan_methods: tuple[str, ...]) -> dict[str, Any]:
        hooks: dict[str, Any] = {name: self.refuse_plugin_messages for name in plan_methods}
        hooks.update(
            ExecutePlan=self.execute_plan,
            AnalyzePlan=self.analyze_plan,
            ReleaseSession=self.release_session,
            CloneSession=self.clone_session,
            ReleaseExecute=self.release_execute,
            ReattachExecute=self.reattach_execute,
        )
        return hooks

    def _extensions(self, request: Any) -> list[FoundExtension]:
        found = find_extensions(
            request,
            session_id=request.session_id,
            forwarded_prefixes=self.config.forward_extensions,
        )
        if any(isinstance(f.message, proto.Scan) for f in found) and prune_counted_scans(request):
            return self._extensions(request)
        return found

    async def refuse_plugin_messages(
        self, method: str, request: Message, context: Any
    ) -> Interception | None:
        found = self._extensions(request)
        if found:
            raise NotSupportedYet(f"[{found[0].type_name}] cannot be used in a {method} request")
        return None

    async def execute_plan(
        self, method: str, request: spark_proto.ExecutePlanRequest, context: Any
    ) -> Interception | None:
        found = self._extensions(request)
        site = _SqlSite(request.plan)
        statement = parse_statement(site.query) if self._may_be_ours(request, site.query) else None
        if not found and statement is None:
            return self._guard_command(request, context)
        session = _context(request, context)
        if statement is not None:
            handling = await self._sql(session, request, site, statement)
            if handling is not None or not found:
                return handling
        return self._with_progress(
            session, request, lambda sink: self._extension_work(session, found, sink)
        )

    def _may_be_ours(self, request: spark_proto.ExecutePlanRequest, query: str) -> bool:
        """Whether ``query`` is worth tokenizing: it names TEMP, or the session has temp tables.

        CTTAS and SHOW TEMPORARY TABLES contain "temp"; DROP, INSERT and CREATE VIEW
        only matter to a session that has temp tables. Every other query skips the
        tokenizer, which keeps it off the path of ordinary ``spark.sql`` calls.
        """
        if not query:
            return False
        if "temp" in query.lower():
            return True
        return self.temp_tables.has_tables(
            SessionContext(request.session_id, request.user_context, ())
        )

    def _guard_command(
        self, request: spark_proto.ExecutePlanRequest, context: Any
    ) -> Interception | None:
        """Protect temp tables from DataFrame-API commands that would break them."""
        if not request.plan.HasField("command"):
            return None
        command = request.plan.command
        session = _context(request, context)
        if command.HasField("create_dataframe_view"):
            self._refuse_view_name(session, Name((command.create_dataframe_view.name,)))
        elif command.HasField("write_operation") and command.write_operation.HasField("table"):
            target = Name(tuple(command.write_operation.table.table_name.split(".")))
            if self.temp_tables.lookup(session, target) is not None:
                return Interception(finish=self._secure_after(session, target))
        return None

    def _refuse_view_name(self, session: SessionContext, name: Name) -> None:
        if self.temp_tables.lookup(session, name) is not None:
            raise TempTableError(
                f"[{name}] is a temporary table of this session; drop it with DROP TABLE "
                f"{name} before using the name for a view"
            )

    def _secure_after(self, session: SessionContext, name: Name) -> Callable[[], Awaitable[None]]:
        async def secure() -> None:
            self.temp_tables.secure(session, name)

        return secure

    async def _sql(
        self,
        session: SessionContext,
        request: spark_proto.ExecutePlanRequest,
        site: _SqlSite,
        statement: Statement,
    ) -> Interception | None:
        tables = self.temp_tables
        if isinstance(statement, CreateTempTable):
            create = CreateRequest(
                name=statement.name,
                input=site.with_query(statement.query),
                column_names=statement.column_names,
                partition_columns=statement.partition_columns,
                format=statement.format,
                options=statement.options,
                if_not_exists=statement.if_not_exists,
                or_replace=statement.or_replace,
            )
            return self._with_progress(
                session, request, lambda sink: self._put(site, self._creator.create(session, create, sink))
            )
        if isinstance(statement, DropTable):
            known = tables.lookup(session, statement.name) or tables.being_created(
                session, statement.name
            )
            if not known:
                return None

            async def drop(_sink: ProgressSink) -> None:
                result = await tables.drop(
                    session, statement.name, if_exists=statement.if_exists, strict=False
                )
                if result is not None:
                    site.put_result(result)

            return self._with_progress(session, request, drop)
        if isinstance(statement, DropView):
            if tables.lookup(session, statement.name) is None:
                return None
            if not statement.if_exists:
                raise TempTableError(
                    f"[{statement.name}] is not a VIEW but a temporary table of this session; "
                    f"drop it with DROP TABLE {statement.name}"
                )
            site.put_result(
                results.status(
                    False,
                    f"View [{statement.name}] not found in schema "
                    f"[{self.config.temp_workspace_name}].",
                )
            )
            return Interception(request=request)
        if isinstance(statement, ShowTempTables):
            site.put_result(tables.listing(session))
            return Interception(request=request)
        if isinstance(statement, InsertInto):
            if tables.lookup(session, statement.name) is None:
                return None
            return Interception(finish=self._secure_after(session, statement.name))
        if isinstance(statement, CreateTempView):
            self._refuse_view_name(session, statement.name)
            return None
        if isinstance(statement, CreatePersistentView):
            for source in statement.sources:
                if len(source.parts) == 1 and tables.lookup(session, source) is not None:
                    raise TempTableError(
                        f"A reference to temporary table [{source}] was made in a context where "
                        f"temporary table references are not allowed (persistent view "
                        f"[{statement.name}])."
                    )
            return None
        return None

    @staticmethod
    async def _put(site: _SqlSite, work: Awaitable[spark_proto.Relation]) -> None:
        site.put_result(await work)

    async def _extension_work(
        self, session: SessionContext, found: list[FoundExtension], sink: ProgressSink | None
    ) -> None:
        """Replace each plugin node by its result; ``sink`` None: analysis, no side effects."""
        for extension in found:
            result = await self._run_extension(session, extension, sink)
            _replace(extension.holder, result)  # type: ignore[arg-type]

    async def _run_extension(
        self, session: SessionContext, extension: FoundExtension, sink: ProgressSink | None
    ) -> spark_proto.Relation:
        message = extension.message
        tables = self.temp_tables
        if isinstance(message, proto.CreateTempTableAsSelect):
            parts = (message.workspace, message.name) if message.workspace else (message.name,)
            create = CreateRequest(
                name=Name(parts),
                input=message.input,
                column_names=tuple(message.column_names),
                partition_columns=tuple(message.partition_columns),
                format=message.format or None,
                options=dict(message.options),
                if_not_exists=message.if_not_exists,
                or_replace=message.or_replace,
            )
            if sink is None:
                return results.created(message.name, 0)
            return await self._creator.create(session, create, sink)
        if isinstance(message, proto.DropTempTable):
            if sink is None:
                return results.status(True, "")
            result = await tables.drop(
                session, Name((message.name,)), if_exists=message.if_exists, strict=True
            )
            assert result is not None
            return result
        if isinstance(message, proto.ListTempTables):
            return tables.listing(session)
        if isinstance(message, proto.ReadTempTable):
            return tables.read(session, message.name)
        if isinstance(message, proto.Scan):
            return await self.scans.relation(session, message)
        raise NotSupportedYet(
            f"[{extension.type_name}] is a connect-plugin message this gateway version cannot "
            "execute yet"
        )

    def _with_progress(
        self,
        session: SessionContext,
        request: spark_proto.ExecutePlanRequest,
        work: Callable[[ProgressSink], Awaitable[None]],
    ) -> Interception:
        """Run ``work`` before forwarding, relaying its progress to the client."""

        async def prepare(handling: Interception) -> AsyncIterator[Message]:
            queue: asyncio.Queue[spark_proto.ExecutePlanResponse] = asyncio.Queue()
            task = asyncio.ensure_future(work(queue.put_nowait))
            try:
                while True:
                    waiter = asyncio.ensure_future(queue.get())
                    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                    if not waiter.done():
                        waiter.cancel()
                        break
                    yield self._progress_response(request, waiter.result())
                while not queue.empty():
                    yield self._progress_response(request, queue.get_nowait())
                await task
            finally:
                if not task.done():
                    task.cancel()
            handling.request = request

        return Interception(prepare=prepare)

    def _progress_response(
        self, request: spark_proto.ExecutePlanRequest, upstream: spark_proto.ExecutePlanResponse
    ) -> spark_proto.ExecutePlanResponse:
        session = self._registry.find(request.user_context.user_id, request.session_id)
        if session is not None and not session.server_side_session_id:
            session.server_side_session_id = upstream.server_side_session_id
        response = spark_proto.ExecutePlanResponse(
            session_id=request.session_id,
            server_side_session_id=upstream.server_side_session_id,
            operation_id=request.operation_id,
            response_id=SYNTHETIC_RESPONSE_PREFIX + str(uuid.uuid4()),
        )
        response.execution_progress.CopyFrom(upstream.execution_progress)
        return response

    async def analyze_plan(
        self, method: str, request: spark_proto.AnalyzePlanRequest, context: Any
    ) -> Interception | None:
        """Plugin relations analysed without their side effects."""
        found = self._extensions(request)
        if not found:
            return None
        await self._extension_work(_context(request, context), found, None)
        return Interception(request=request)

    async def release_session(
        self, method: str, request: spark_proto.ReleaseSessionRequest, context: Any
    ) -> Interception:
        """Stop the session's CTTAS writes, let Spark release it, then forget it."""
        session = self._registry.open(request.user_context.user_id, request.session_id)
        if session.writes:
            upstream = self._upstream.session(_context(request, context))
            await stop_writes(session, upstream, self.config.recovery_timeout_s)

        async def release() -> None:
            await self._release.forget(session)

        return Interception(finish=release)

    async def clone_session(
        self, method: str, request: spark_proto.CloneSessionRequest, context: Any
    ) -> Interception | None:
        """A clone of a session with temp tables gets its own copies of them."""
        response = await self._cloner.clone(_context(request, context), request)
        return None if response is None else Interception(answer=response)

    async def release_execute(
        self, method: str, request: spark_proto.ReleaseExecuteRequest, context: Any
    ) -> Interception | None:
        if not request.release_until.response_id.startswith(SYNTHETIC_RESPONSE_PREFIX):
            return None
        return Interception(
            answer=spark_proto.ReleaseExecuteResponse(
                session_id=request.session_id,
                server_side_session_id=self._server_side_session_id(request),
                operation_id=request.operation_id,
            )
        )

    def _server_side_session_id(self, request: spark_proto.ReleaseExecuteRequest) -> str:
        session = self._registry.find(request.user_context.user_id, request.session_id)
        return "" if session is None else session.server_side_session_id

    async def reattach_execute(
        self, method: str, request: spark_proto.ReattachExecuteRequest, context: Any
    ) -> Interception | None:
        if not request.last_response_id.startswith(SYNTHETIC_RESPONSE_PREFIX):
            return None
        request.ClearField("last_response_id")
        return Interception(request=request)
