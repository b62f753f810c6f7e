"""One ExecutePlan the gateway handles, from recognising its statement to its release.

An ExecutePlan whose plan holds one of the gateway's SQL statements, a
DataFrame command a handler guards, or plugin relations is a
``StatementRun``. Its life, in the order of this module:

1. recognised (``Statements.executed``): the plugin relations found, the
   statement or command at the plan's root read;
2. checked: at most one request that changes temp tables, or none of it
   happens (``check``);
3. run (``run``), before anything is forwarded: the handlers do their work,
   relaying the progress of their Spark jobs to the client as
   ``execution_progress`` responses, and each result takes its place in the
   plan. A statement the gateway answers itself (CTTAS, the row changes, the
   INSERTs it runs, DROP, SHOW TEMPORARY TABLES) runs detached: it outlives
   the client's stream for ``detached_timeout_s``, and a ReattachExecute of
   its operation follows it (``resumed``);
4. answered (``settled``): as Spark answers a SQL command, when the gateway
   knows the result's rows, else by Spark, with the rewritten plan;
5. followed up: the handlers' work for after Spark ran the request (an
   INSERT's files made private) runs once, on whichever stream sees the end,
   then the audit's ``ok`` lines (a failure's line is the audit's too);
6. released: a ReleaseExecute of all of its responses drops what is kept of
   it (``Statements.released``), and a session's end drops the rest
   (``DroppedWithSessions``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

import grpc
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConnectPluginError
from connect_plugin.server.detached import (
    Answer,
    Answers,
    Detached,
    DroppedWithSessions,
    FollowUp,
    FollowUps,
    Running,
    key_of,
    once,
    reattachable,
)
from connect_plugin.server.model.statements import (
    ChangeRows,
    CreateTempTable,
    DropTempTable,
    InsertInto,
    ListTempTables,
    Statement,
)
from connect_plugin.server.monitoring.audit import AuditLog
from connect_plugin.server.monitoring.statement_audit import Audited, StatementCount
from connect_plugin.server.own_responses import SYNTHETIC_RESPONSE_PREFIX, OwnResponses
from connect_plugin.server.releases import RelayedReleases
from connect_plugin.server.scans.scan_rows import ResponseWatch, ScanRows, scan_policy
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.statements.dispatch import Dispatcher, Recognised
from connect_plugin.server.statements.handlers import Call, HandlerRegistry, Outcome
from connect_plugin.server.table_files.writes import ProgressSink
from connect_plugin.server.tables.qualifier_database import refuse_if_ambiguous
from connect_plugin.server.transport.interception import Interception
from connect_plugin.server.transport.spark_status import (
    Status,
    named_status,
    worker_lost_status,
)
from connect_plugin.server.transport.upstream import SessionContext, Upstream

ANSWERED = (CreateTempTable, DropTempTable, ListTempTables, ChangeRows, InsertInto)
"""The statements the gateway may answer itself (an INSERT: those it runs): a client may
reattach to them."""

Failed = Callable[[grpc.aio.AioRpcError], None]


class Statements:
    """The gateway's statements in ExecutePlan, and what is kept of them for a client that
    reattaches to one or releases it: those running detached, their follow-ups, their
    answers."""

    def __init__(
        self,
        keep_s: float,
        sessions: SessionRegistry,
        upstream: Upstream,
        handlers: HandlerRegistry,
        dispatch: Dispatcher,
        scan_sessions: ScanSessions,
        audit: AuditLog | None = None,
        count: StatementCount | None = None,
        scan_rows: ScanRows | None = None,
    ) -> None:
        self.sessions = sessions
        self.upstream = upstream
        self.handlers = handlers
        self.dispatch = dispatch
        self.audit = audit
        self.count = count
        self.scan_rows = scan_rows
        self.responses = OwnResponses(sessions)
        self._scan_sessions = scan_sessions
        self.running = Detached(keep_s)
        """The statements it runs itself that a client may reattach to."""
        self.follow_ups = FollowUps(keep_s)
        """Follow-ups of Spark's executions, for whichever of their streams sees them end."""
        self.answers = Answers(keep_s)
        """The gateway's own answers, kept for a stream that reattaches to them."""
        self.releases = RelayedReleases(keep_s)
        """Spark's operations the gateway relays, whose releases it answers."""
        sessions.add_part(DroppedWithSessions(self.running, self.follow_ups, self.answers))
        sessions.add_part(self.releases)

    async def executed(
        self, request: spark_proto.ExecutePlanRequest, context: SessionContext
    ) -> Interception | None:
        """What the gateway does with an ExecutePlan (None: nothing, it is Spark's)."""
        read_back = self.responses.read_back(request)
        if read_back:
            self.keep(request, Answer(read_back, None))
            return Interception(answered=read_back)
        self._scan_sessions.executed(request)
        cached = self._scan_sessions.cached(request.user_context.user_id, request.session_id)
        recognised = await self.dispatch.recognise(request, cached)
        if recognised is None:
            if reattachable(request):
                return Interception(responses=self.releases.relaying(key_of(request)))
            return None
        run = StatementRun(self, request, context, recognised)
        run.check()
        return Interception(prepare=run.prepare)

    def keep(self, request: spark_proto.ExecutePlanRequest, answer: Answer) -> None:
        """Keep the gateway's ``answer`` for a stream that reattaches to ``request``."""
        if answer.responses and reattachable(request):
            self.answers.hold(key_of(request), answer)

    def reattached(self, request: spark_proto.ReattachExecuteRequest) -> Interception | None:
        """A stream reattaching to an operation: to a statement running detached, to the
        gateway's kept answer, or to Spark's execution with its follow-up."""
        key = key_of(request)
        running = self.running.find(key)
        if running is not None:
            return Interception(prepare=partial(_resumed, self.responses, request, running))
        answer = self.answers.find(key)
        if answer is not None:
            return Interception(
                answered=answer.after(request.last_response_id), finish=answer.finish
            )
        watch = None if self.scan_rows is None else self.scan_rows.reattached(request)
        watch = _both(watch, self.releases.reattaching(key))
        finish: FollowUp | None = None
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

    def released(self, request: spark_proto.ReleaseExecuteRequest) -> Interception | None:
        """A client released responses: all of them ends what is kept of the operation;
        responses the gateway made itself it acknowledges itself, and those of Spark's
        operations it relays as ``releases`` says."""
        key = key_of(request)
        if request.HasField("release_all"):
            running = self.running.find(key)
            if running is not None:
                running.end()
            self.follow_ups.drop(key)
            self.answers.drop(key)
        if not request.release_until.response_id.startswith(SYNTHETIC_RESPONSE_PREFIX):
            relayed = self.releases.answer(request)
            return None if relayed is None else Interception(answer=relayed)
        session = self.sessions.find(request.user_context.user_id, request.session_id)
        return Interception(
            answer=spark_proto.ReleaseExecuteResponse(
                session_id=request.session_id,
                server_side_session_id="" if session is None else session.server_side_session_id,
                operation_id=request.operation_id,
            )
        )


class StatementRun:
    """One ExecutePlan's statement, command or plugin relations (``recognised``), from check
    to follow-up. What a stream that saw the run end decides (the follow-up, the answer,
    who hears a failure) is made once, and every stream of the operation gets the same."""

    def __init__(
        self,
        statements: Statements,
        request: spark_proto.ExecutePlanRequest,
        context: SessionContext,
        recognised: Recognised,
    ) -> None:
        self._statements = statements
        self.request = request
        self.context = context
        self.recognised = recognised
        self.audit = Audited(statements.audit, statements.count, request, recognised.statements())
        self.policy = scan_policy(recognised.plugin_statements())
        """The bad-record policy of the scans it holds (None: no scan)."""
        self._result: spark_proto.Relation | None = None
        """The rows of the root's result, when the gateway may answer with them."""
        self._follow_up: FollowUp | None = None
        self._followed_up = False
        self._answer: Answer | None = None
        self._answered = False
        self._failure_told = False
        scan_rows = statements.scan_rows
        self._watch: ResponseWatch | None = None
        self._stopped: Failed | None = None
        if scan_rows is not None and self.policy is not None:
            self._watch = scan_rows.executed(request, self.policy)
            self._stopped = scan_rows.failed(self.policy)

    def check(self) -> None:
        """At most one request that changes temp tables, or the whole request is refused."""
        try:
            self.recognised.check_changes()
        except ConnectPluginError as exc:
            self.audit.refused(exc)
            raise

    @property
    def detachable(self) -> bool:
        """Whether the run outlives its client's stream, for a ReattachExecute to follow: a
        statement the gateway answers itself, in a reattachable operation (never a query
        of scans, whose rows Spark's own execution counts)."""
        return (
            isinstance(self.recognised.root, ANSWERED)
            and self.recognised.answerable
            and (self._statements.scan_rows is None or self.policy is None)
            and reattachable(self.request)
        )

    async def prepare(self) -> AsyncIterator[Message | Interception]:
        """The run, its progress relayed to the client's stream, then what the stream does
        next: forward the rewritten request, or give the gateway's answer."""
        key = key_of(self.request) if self.detachable else None
        running = self._statements.running.start(key, self.run, self.settled, self.unclaimed)
        async for extra in _followed(self._statements.responses, self.request, running):
            yield extra
        outcomes = await running.result()
        yield dataclasses.replace(self.settled(outcomes), request=self.request)

    async def run(self, progress: ProgressSink) -> list[Outcome]:
        """Handle the root, then the plugin relations, inner ones first; each result takes
        its place in the plan. A refusal is the audit's."""
        call = Call(self.context, progress)
        root, works = self.recognised.root, self.recognised.works
        try:
            outcomes = [] if root is None else [await self._execute(call, root)]
            return outcomes + await self._statements.dispatch.run(works, call, analyze=False)
        except ConnectPluginError as exc:
            self.audit.refused(exc)
            raise

    async def _execute(self, call: Call, root: Statement) -> Outcome:
        statements = self._statements
        outcome = await statements.handlers.execute(call, root)
        if outcome.result is None:
            await refuse_if_ambiguous(statements.upstream.session(self.context), root)
        else:
            self.recognised.put_result(self.request.plan, outcome.result)
        if outcome.answer is not None and self.recognised.answerable:
            self._result = outcome.answer
        return outcome

    def followed_up(self, outcomes: list[Outcome]) -> FollowUp | None:
        """The handlers' follow-ups, then the ``ok`` lines: one run of them for every stream
        (a stream that reattached while the first was still open saw it end too) and for a
        result no stream took (``unclaimed``)."""
        if not self._followed_up:
            self._followed_up = True
            finish = self.audit.finished(_after_all(outcomes))
            self._follow_up = None if finish is None else once(finish)
        return self._follow_up

    def answered(self, finish: FollowUp | None) -> Answer | None:
        """The gateway's own answer, as Spark answers a SQL command, when it knows the
        result's rows (made once: the session keeps its rows for a read-back)."""
        if not self._answered:
            self._answered = True
            if self._result is not None:
                responses = self._statements.responses.command_answer(self.request, self._result)
                self._answer = Answer(responses, finish)
        return self._answer

    def failed(self, error: grpc.aio.AioRpcError) -> None:
        """Spark's error, heard once per statement (the first stream's): its audit line, and
        the bad record that stopped its scans."""
        if self._failure_told:
            return
        self._failure_told = True
        self.audit.failed(error)
        if self._stopped is not None:
            self._stopped(error)

    def settled(self, outcomes: list[Outcome]) -> Interception:
        """What a stream that saw the run end does: give the answer or forward the request,
        with the follow-up, its releases answered (``releases``); Spark's error names the
        temp table the statement wrote into."""
        finish = self.followed_up(outcomes)
        answer = self.answered(finish)
        failure: Callable[[Status], Status] | None = None
        if self.policy is not None:
            failure = worker_lost_status
        named = next((o.table for o in outcomes if o.table), "")
        if named:
            failure = _then(failure, partial(named_status, table=named))
        settled = Interception(failed=self.failed, failure=failure, responses=self._watch)
        if answer is not None:
            self._statements.keep(self.request, answer)
            return dataclasses.replace(settled, answered=answer.responses, finish=answer.finish)
        if reattachable(self.request):
            relayed = self._statements.releases.relaying(key_of(self.request))
            settled = dataclasses.replace(settled, responses=_both(self._watch, relayed))
        if finish is not None and reattachable(self.request):
            key = key_of(self.request)
            follow_ups = self._statements.follow_ups
            follow_ups.lead(key, finish)
            return dataclasses.replace(
                settled,
                finish=partial(follow_ups.run, key),
                unfinished=partial(follow_ups.unfollow, key),
            )
        return dataclasses.replace(settled, finish=finish)

    async def unclaimed(self, outcomes: list[Outcome]) -> None:
        """A run that ended with no stream left to take its result still follows up."""
        finish = self.followed_up(outcomes)
        if finish is not None:
            await finish()


async def _followed(
    responses: OwnResponses,
    request: spark_proto.ExecutePlanRequest | spark_proto.ReattachExecuteRequest,
    running: Running[spark_proto.ExecutePlanResponse, list[Outcome]],
) -> AsyncIterator[Message]:
    """A run's progress, as responses of the stream of ``request``, until it ends."""
    async for progress in running.follow():
        yield responses.progress(request, progress)


async def _resumed(
    responses: OwnResponses,
    request: spark_proto.ReattachExecuteRequest,
    running: Running[spark_proto.ExecutePlanResponse, list[Outcome]],
) -> AsyncIterator[Message | Interception]:
    """A reattached stream following a detached run: its progress, then what the run
    settled, the reattach going on to Spark from the first response when the gateway does
    not answer it."""
    async for extra in _followed(responses, request, running):
        yield extra
    outcomes = await running.result()
    assert running.settle is not None, "the gateway's statements settle their result"
    settled = running.settle(outcomes)
    if settled.answered:
        yield settled
        return
    request.ClearField("last_response_id")
    yield dataclasses.replace(settled, request=request)


def _both(first: ResponseWatch | None, second: ResponseWatch | None) -> ResponseWatch | None:
    """Both watches of a stream's responses, or the one there is."""
    if first is None or second is None:
        return first or second

    def both(response: bytes) -> None:
        first(response)
        second(response)

    return both


def _then(
    first: Callable[[Status], Status] | None, second: Callable[[Status], Status]
) -> Callable[[Status], Status]:
    """``second`` after ``first`` (when there is one)."""
    if first is None:
        return second
    return lambda status: second(first(status))


def _after_all(outcomes: list[Outcome]) -> Callable[[], Awaitable[None]] | None:
    hooks = [o.after for o in outcomes if o.after is not None]
    if not hooks:
        return None

    async def run_all() -> None:
        for hook in hooks:
            await hook()

    return run_all
