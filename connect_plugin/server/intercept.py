"""The gateway's hooks on the RPCs it does not just forward.

ExecutePlan and AnalyzePlan go through the dispatcher: their plugin
relations, statements and guarded commands become requests for the
handlers, and the rewritten request goes upstream as the client's own
operation. Other RPCs that can hold a plan refuse plugin messages. The
session's own RPCs keep its state right: ReleaseSession stops its writes
and forgets it once Spark released it, CloneSession copies its tables.
FetchErrorDetails of a scan error answers what the error's status said
(``status.scan_error_details``).

Progress of the gateway's own work reaches the client as extra
``execution_progress`` responses before Spark's. A SQL statement or
DataFrame write whose result rows the gateway knows (``Outcome.answer``: it
ran the statement or write itself) is answered by the gateway alone, as
Spark answers a command, and so is the DataFrame's read-back of those rows
(``own_responses``, whose response ids the gateway releases and strips
itself). Spark never hears of such an operation, and releases it as any
unknown one.
Such a statement also outlives the client's stream of it, and the client's
ReattachExecute of its operation follows it to its answer (``detached``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import grpc
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import (
    ConnectPluginError,
    NotSupportedYet,
)
from connect_plugin.server.detached import (
    Answer,
    Answers,
    Detached,
    DroppedWithSessions,
    FollowUp,
    FollowUps,
    Key,
    Running,
    once,
)
from connect_plugin.server.model.statements import (
    ChangeRows,
    CreateTempTable,
    DropTempTable,
    InsertInto,
    ListTempTables,
)
from connect_plugin.server.monitoring.audit import AuditLog
from connect_plugin.server.monitoring.statement_audit import Audited, StatementCount
from connect_plugin.server.own_responses import SYNTHETIC_RESPONSE_PREFIX, OwnResponses
from connect_plugin.server.scans.scan_rows import ScanRows, scan_policy
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.sessions.clone import Cloner
from connect_plugin.server.sessions.python_workers import learn_server_side_session
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.release import SessionRelease
from connect_plugin.server.sessions.views import uncache
from connect_plugin.server.sessions.writes import ProgressSink, stop_writes
from connect_plugin.server.statements.config_guard import ConfigGuard
from connect_plugin.server.statements.dispatch import Dispatcher, SqlSite, replace_command
from connect_plugin.server.statements.handlers import Call, HandlerRegistry, Outcome
from connect_plugin.server.tables.qualifier_database import refuse_if_ambiguous
from connect_plugin.server.transport.forwarding import forwardable_metadata
from connect_plugin.server.transport.interception import Interception
from connect_plugin.server.transport.spark_status import (
    Status,
    named_status,
    scan_error_details,
    worker_lost_status,
)
from connect_plugin.server.transport.upstream import SessionContext, Upstream

Work = Callable[[ProgressSink], Awaitable[list[Outcome]]]


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
        self._audit = audit
        self._count = count
        self._scan_rows = scan_rows
        self._sessions = sessions
        self._upstream = upstream
        self._handlers = handlers
        self._scan_sessions = scan_sessions
        self._cloner = cloner
        self._release = release
        self._responses = OwnResponses(sessions)
        self._dispatch = Dispatcher(config, handlers, self._has_tables)
        self._guard = ConfigGuard(config.workspace)
        self.detached = Detached(config.detached_timeout_s)
        self.follow_ups = FollowUps(config.detached_timeout_s)
        self.answers = Answers(config.detached_timeout_s)
        sessions.add_part(DroppedWithSessions(self.detached, self.follow_ups, self.answers))

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
        read_back = self._responses.read_back(request)
        if read_back:
            self._keep(request, Answer(read_back, None))
            return Interception(answered=read_back)
        self._scan_sessions.executed(request)
        cached = self._scan_sessions.cached(request.user_context.user_id, request.session_id)
        works = self._dispatch.plugin_work(request, request.session_id, cached=cached)
        site = SqlSite.of(request.plan)
        statement = await self._dispatch.statement(request, site)
        command = self._dispatch.command(request.plan) if statement is None else None
        if not works and statement is None and command is None:
            return None
        roots = [r for r in (statement, command) if r is not None]
        handled = [*roots, *(r for w in works for r in w.requests())]
        audit = Audited(self._audit, self._count, request, handled)
        try:
            self._dispatch.check_changes(works, statement)
        except ConnectPluginError as exc:
            audit.refused(exc)
            raise
        session = _context(request, context)
        answers: list[spark_proto.Relation] = []
        answerable = not works and (command is not None or (site is not None and site.command))

        async def handle(sink: ProgressSink) -> list[Outcome]:
            call = Call(session, sink)
            outcomes = []
            try:
                for root in (statement, command):
                    if root is not None:
                        outcome = await self._handlers.execute(call, root)
                        if outcome.result is None:
                            await refuse_if_ambiguous(self._upstream.session(session), root)
                        if outcome.result is not None and root is command:
                            replace_command(request.plan, outcome.result)
                        elif outcome.result is not None:
                            assert site is not None, "only statements give results for the plan"
                            site.put_result(outcome.result)
                        if outcome.answer is not None and answerable:
                            answers.append(outcome.answer)
                        outcomes.append(outcome)
                return outcomes + await self._dispatch.run(works, call, analyze=False)
            except ConnectPluginError as exc:
                audit.refused(exc)
                raise

        def answered() -> spark_proto.Relation | None:
            return answers[0] if answers else None

        policy = scan_policy(r for w in works for r in w.requests())
        if self._scan_rows is None or policy is None:
            detachable = (
                isinstance(statement or command, ANSWERED)
                and answerable
                and _reattachable(request)
            )
            key = _key(request) if detachable else None
            interception = self._with_progress(
                request, handle, audit, answered=answered, key=key
            )
        else:
            interception = self._with_progress(
                request, handle, audit, self._scan_rows.failed(policy), answered=answered
            )
            interception.responses = self._scan_rows.executed(request, policy)
        if policy is not None:
            interception.failure = worker_lost_status
        return interception

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

    def _with_progress(
        self,
        request: spark_proto.ExecutePlanRequest,
        work: Work,
        audit: Audited,
        stopped: Callable[[grpc.aio.AioRpcError], None] | None = None,
        answered: Callable[[], spark_proto.Relation | None] = lambda: None,
        key: Key | None = None,
    ) -> Interception:
        """Run ``work`` before forwarding, relaying its progress to the client; ``audit``
        hears how it ended, and ``stopped`` of Spark's error, if the query fails. When
        ``answered`` then gives the statement's result, the gateway answers with it itself,
        as Spark answers a SQL command, and nothing is forwarded. With a ``key``, the work
        outlives the client's stream for a while, and a ReattachExecute resumes it
        (``detached``); ``audit`` hears of work that ended with no stream to see it, when
        it is forgotten."""

        made: list[FollowUp | None] = []
        settled: list[tuple[Callable[[grpc.aio.AioRpcError], None], Answer | None]] = []

        def finish_of(outcomes: list[Outcome]) -> FollowUp | None:
            """The statement's follow-up and ok lines, one run of them for every stream (a
            stream that reattached while the first was still open saw it end too) and for
            a result no stream took (``unclaimed``)."""
            if not made:
                finish = audit.finished(_after_all(outcomes))
                made.append(None if finish is None else once(finish))
            return made[0]

        def settle(handling: Interception, outcomes: list[Outcome]) -> None:
            """The statement's answer, follow-up and failure line, made once for the streams
            that saw it end; Spark's error names the temp table the statement wrote into."""
            finish = finish_of(outcomes)
            if not settled:
                failed = audit.failed if stopped is None else _both(audit.failed, stopped)
                result = answered()
                responses = None if result is None else self._responses.command_answer(request, result)
                answer = None if responses is None else Answer(responses, finish)
                settled.append((_first_only(failed), answer))
            handling.failed, answer = settled[0]
            handling.finish = finish
            named = next((o.table for o in outcomes if o.table), "")
            if named:
                handling.failure = _then(handling.failure, partial(named_status, table=named))
            if answer is not None:
                self._keep(request, answer)
                handling.answered, handling.finish = answer.responses, answer.finish
            elif finish is not None and _reattachable(request):
                key = _key(request)
                self.follow_ups.lead(key, finish)
                handling.finish = partial(self.follow_ups.run, key)
                handling.unfinished = partial(self.follow_ups.unfollow, key)

        async def unclaimed(outcomes: list[Outcome]) -> None:
            finish = finish_of(outcomes)
            if finish is not None:
                await finish()

        async def prepare(handling: Interception) -> AsyncIterator[Message]:
            running = self.detached.start(key, work, settle, unclaimed)
            async for extra in self._follow(request, running, handling):
                yield extra
            handling.request = request

        return Interception(prepare=prepare)

    def _keep(self, request: spark_proto.ExecutePlanRequest, answer: Answer) -> None:
        """Keep the gateway's ``answer`` for a stream that reattaches to ``request``."""
        if answer.responses and _reattachable(request):
            self.answers.hold(_key(request), answer)

    async def _follow(
        self,
        request: spark_proto.ExecutePlanRequest | spark_proto.ReattachExecuteRequest,
        running: Running[spark_proto.ExecutePlanResponse, list[Outcome]],
        handling: Interception,
    ) -> AsyncIterator[Message]:
        """Relay a statement's progress to the client's stream, then settle its result."""
        async for progress in running.follow():
            yield self._responses.progress(request, progress)
        outcomes = await running.result()
        assert running.settle is not None, "the gateway's statements settle their result"
        running.settle(handling, outcomes)

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
            self.detached.drop_session(*session.key)
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
        running = self.detached.find(_key(request))
        if running is not None and request.HasField("release_all"):
            running.end()
        if request.HasField("release_all"):
            self.follow_ups.drop(_key(request))
            self.answers.drop(_key(request))
        if not request.release_until.response_id.startswith(SYNTHETIC_RESPONSE_PREFIX):
            return None
        session = self._sessions.find(request.user_context.user_id, request.session_id)
        return Interception(
            answer=spark_proto.ReleaseExecuteResponse(
                session_id=request.session_id,
                server_side_session_id="" if session is None else session.server_side_session_id,
                operation_id=request.operation_id,
            )
        )

    async def fetch_error_details(
        self, method: str, request: spark_proto.FetchErrorDetailsRequest, context: Any
    ) -> Interception:
        """Details of a scan error agree with the status that led to them (``status``), for
        the client that asks."""
        return Interception(respond=lambda response: scan_error_details(response, request))

    async def reattach_execute(
        self, method: str, request: spark_proto.ReattachExecuteRequest, context: Any
    ) -> Interception | None:
        running = self.detached.find(_key(request))
        if running is not None:

            async def resume(handling: Interception) -> AsyncIterator[Message]:
                async for extra in self._follow(request, running, handling):
                    yield extra
                if not handling.answered:
                    request.ClearField("last_response_id")
                    handling.request = request

            return Interception(prepare=resume)
        answer = self.answers.find(_key(request))
        if answer is not None:
            return Interception(
                answered=answer.after(request.last_response_id), finish=answer.finish
            )
        watch = None if self._scan_rows is None else self._scan_rows.reattached(request)
        key = _key(request)
        finish: Callable[[], Awaitable[None]] | None = None
        again: Callable[[], None] | None = None
        if self.follow_ups.followed(key):
            finish = partial(self.follow_ups.run, key)
            again = partial(self.follow_ups.unfollow, key)
        if not request.last_response_id.startswith(SYNTHETIC_RESPONSE_PREFIX):
            if watch is None and finish is None:
                return None
            return Interception(responses=watch, finish=finish, unfinished=again)
        request.ClearField("last_response_id")
        return Interception(request=request, responses=watch, finish=finish, unfinished=again)


ANSWERED = (CreateTempTable, DropTempTable, ListTempTables, ChangeRows, InsertInto)
"""The statements the gateway may answer itself (an INSERT: those it runs): a client may
reattach to them."""


def _key(
    request: spark_proto.ExecutePlanRequest
    | spark_proto.ReattachExecuteRequest
    | spark_proto.ReleaseExecuteRequest,
) -> Key:
    return (request.user_context.user_id, request.session_id, request.operation_id)


def _reattachable(request: spark_proto.ExecutePlanRequest) -> bool:
    return bool(request.operation_id) and any(
        o.HasField("reattach_options") and o.reattach_options.reattachable
        for o in request.request_options
    )


def _both(
    first: Callable[[grpc.aio.AioRpcError], None], second: Callable[[grpc.aio.AioRpcError], None]
) -> Callable[[grpc.aio.AioRpcError], None]:
    def both(error: grpc.aio.AioRpcError) -> None:
        first(error)
        second(error)

    return both


def _then(
    first: Callable[[Status], Status] | None, second: Callable[[Status], Status]
) -> Callable[[Status], Status]:
    """``second`` after ``first`` (when there is one)."""
    if first is None:
        return second
    return lambda status: second(first(status))


def _first_only(
    failed: Callable[[grpc.aio.AioRpcError], None],
) -> Callable[[grpc.aio.AioRpcError], None]:
    """``failed``, told of the first stream's error only: one failure line per statement."""
    told = False

    def first(error: grpc.aio.AioRpcError) -> None:
        nonlocal told
        if not told:
            told = True
            failed(error)

    return first


def _no_progress(response: spark_proto.ExecutePlanResponse) -> None:
    """Analysis runs nothing that reports progress."""


def _after_all(outcomes: list[Outcome]) -> Callable[[], Awaitable[None]] | None:
    hooks = [o.after for o in outcomes if o.after is not None]
    if not hooks:
        return None

    async def run_all() -> None:
        for hook in hooks:
            await hook()

    return run_all

