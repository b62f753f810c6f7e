"""The gateway's hooks on the RPCs it does not just forward.

ExecutePlan and AnalyzePlan go through the dispatcher: their plugin
relations, statements and guarded commands become requests for the
handlers. An ExecutePlan holding any is a ``StatementRun`` (see
``statement_run``), which ReattachExecute and ReleaseExecute reach too.
Other RPCs that can hold a plan refuse plugin messages. The session's own
RPCs keep its state right: ReleaseSession stops its writes and forgets it
once Spark released it, CloneSession copies its tables. FetchErrorDetails
of a scan error answers what the error's status said
(``status.scan_error_details``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import NotSupportedYet
from connect_plugin.server.monitoring.audit import AuditLog
from connect_plugin.server.monitoring.statement_audit import StatementCount
from connect_plugin.server.scans.scan_rows import ScanRows
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.sessions.clone import Cloner
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.release import (
    SessionRelease,
    learn_server_side_session,
    stop_writes,
)
from connect_plugin.server.statement_run import Statements
from connect_plugin.server.statements.config_guard import ConfigGuard
from connect_plugin.server.statements.dispatch import Dispatcher
from connect_plugin.server.statements.handlers import Call, HandlerRegistry
from connect_plugin.server.table_files.views import uncache
from connect_plugin.server.transport.interception import Interception
from connect_plugin.server.transport.service import forwardable_metadata
from connect_plugin.server.transport.spark_status import scan_error_details
from connect_plugin.server.transport.upstream import SessionContext, Upstream


def _context(request: Any, context: Any) -> SessionContext:
    return SessionContext(
        session_id=request.session_id,
        user_context=request.user_context,
        metadata=forwardable_metadata(context.invocation_metadata()),
    )


class PluginHandlers:
    """The request hooks of the gateway, one per intercepted method."""

    def __init__(
        self,
        config: Config,
        sessions: SessionRegistry,
        upstream: Upstream,
        handlers: HandlerRegistry,
        scan_sessions: ScanSessions,
        cloner: Cloner,
        release: SessionRelease,
        audit: AuditLog | None = None,
        count: StatementCount | None = None,
        scan_rows: ScanRows | None = None,
    ) -> None:
        self.config = config
        self._sessions = sessions
        self._upstream = upstream
        self._scan_sessions = scan_sessions
        self._cloner = cloner
        self._release = release
        self._dispatch = Dispatcher(config, handlers, self._has_tables)
        self._guard = ConfigGuard(config.workspace)
        self.statements = Statements(
            config.detached_timeout_s,
            sessions,
            upstream,
            handlers,
            self._dispatch,
            scan_sessions,
            audit,
            count,
            scan_rows,
        )

    def _has_tables(self, user_id: str, session_id: str) -> bool:
        session = self._sessions.find(user_id, session_id)
        return session is not None and bool(session.tables or session.creating)

    def hooks(self, plan_methods: tuple[str, ...]) -> dict[str, Any]:
        hooks: dict[str, Any] = {name: self.refuse_plugin_messages for name in plan_methods}
        hooks.update(
            ExecutePlan=self.execute_plan,
            AnalyzePlan=self.analyze_plan,
            ReleaseSession=self.release_session,
            CloneSession=self.clone_session,
            ReleaseExecute=self.release_execute,
            ReattachExecute=self.reattach_execute,
            FetchErrorDetails=self.fetch_error_details,
        )
        guarded = {name: self._guarded(hooks[name]) for name in plan_methods}
        return {**hooks, **guarded, "Config": self.config_rpc}

    def _guarded(self, hook: Any) -> Any:
        """``hook`` after the config guard looked at the request's SQL."""

        async def guarded(method: str, request: Any, context: Any) -> Interception | None:
            await self._guard.check_plan(request)
            result: Interception | None = await hook(method, request, context)
            return result

        return guarded

    async def config_rpc(
        self, method: str, request: spark_proto.ConfigRequest, context: Any
    ) -> Interception | None:
        """Settings the gateway relies on cannot be set or unset; secrets read are redacted."""
        self._guard.check_config(request)
        if self._guard.reads(request):
            return Interception(respond=self._guard.redact)
        return None

    async def refuse_plugin_messages(
        self, method: str, request: Any, context: Any
    ) -> Interception | None:
        works = self._dispatch.plugin_work(request, request.session_id)
        if works:
            raise NotSupportedYet(f"[{works[0].type_name}] cannot be used in a {method} request")
        return None

    async def execute_plan(
        self, method: str, request: spark_proto.ExecutePlanRequest, context: Any
    ) -> Interception | None:
        return await self.statements.executed(request, _context(request, context))

    async def analyze_plan(
        self, method: str, request: spark_proto.AnalyzePlanRequest, context: Any
    ) -> Interception | None:
        """Plugin relations analysed without their side effects; the scans a persisted plan
        holds unrewritten are counted as cached (``cached_scans``)."""
        cached = self._scan_sessions.cached(request.user_context.user_id, request.session_id)
        works = self._dispatch.plugin_work(request, request.session_id, cached=cached)
        self._scan_sessions.analysed(request)
        if not works:
            return None
        call = Call(_context(request, context), _no_progress)
        await self._dispatch.run(works, call, analyze=True)
        return Interception(request=request)

    async def release_session(
        self, method: str, request: spark_proto.ReleaseSessionRequest, context: Any
    ) -> Interception:
        """Stop the session's CTTAS writes, let Spark release it, then forget it (and, with
        ``stop_python_workers``, stop its Python workers: its server-side id is asked for
        first when no response has named it yet)."""
        session = self._sessions.open(request.user_context.user_id, request.session_id)
        self._sessions.asked_release(session)
        upstream = self._upstream.session(_context(request, context))
        if session.writes:
            await stop_writes(session, upstream, self.config.recovery_timeout_s)
        if session.tables:
            await uncache(upstream, list(session.tables.values()))
        if self.config.stop_python_workers and not session.server_side_session_id:
            await learn_server_side_session(self._sessions, session, upstream)

        async def release() -> None:
            # Its statements end now, rather than keep the release waiting for the one
            # running; what is kept of its operations goes as the registry forgets it.
            self.statements.running.drop_session(*session.key)
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
        return self.statements.released(request)

    async def fetch_error_details(
        self, method: str, request: spark_proto.FetchErrorDetailsRequest, context: Any
    ) -> Interception:
        """Details of a scan error agree with the status that led to them (``status``), for
        the client that asks."""
        return Interception(respond=lambda response: scan_error_details(response, request))

    async def reattach_execute(
        self, method: str, request: spark_proto.ReattachExecuteRequest, context: Any
    ) -> Interception | None:
        return self.statements.reattached(request)


def _no_progress(response: spark_proto.ExecutePlanResponse) -> None:
    """Analysis runs nothing that reports progress."""
