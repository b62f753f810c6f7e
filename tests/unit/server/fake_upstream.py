"""A fake Spark Connect upstream: a real grpc.aio server on a loopback port.

It implements the calls the gateway's liveness, expiry, recovery and undo
code makes (ReleaseExecute, Interrupt, ReleaseSession, GetStatus, Config,
ExecutePlan) with the session semantics Spark 4.3 showed when recorded:
sessions are keyed by the raw (user id, session id) strings; Config,
ExecutePlan and Interrupt create a session they do not know, ReleaseExecute
and GetStatus do not; a released session is closed for good; a restart
forgets every session. Its errors are Spark's recorded ones
(``spark_errors.json``), so code under test sees exactly the ErrorInfo
Spark sends. It runs on the test's own event loop: tests await what they
start and never sleep.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from pyspark.sql.connect import proto as spark_proto

from tests.unit.server.spark_errors import status_of

SERVICE = "spark.connect.SparkConnectService"
States = spark_proto.GetStatusResponse.OperationStatus.OperationState
Key = tuple[str, str]


@dataclass
class Operation:
    """A running operation and how many status polls it still reports after an interrupt."""

    polls_after_interrupt: int = 1
    interrupted: bool = False


@dataclass
class FakeSpark:
    """The upstream's state; tests arrange it and read it back."""

    sessions: dict[Key, str] = field(default_factory=dict)
    closed: set[Key] = field(default_factory=set)
    operations: dict[str, Operation] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    unavailable: bool = False
    calls: list[tuple[str, str]] = field(default_factory=list)
    plans: list[spark_proto.Plan] = field(default_factory=list)
    port: int = 0

    @property
    def address(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def open(self, user_id: str, session_id: str) -> str:
        """A live session (as a client's first call makes one); its server-side id."""
        return self.sessions.setdefault((user_id, session_id), str(uuid.uuid4()))

    def restart(self) -> None:
        """A new server process: every session and operation is forgotten."""
        self.sessions.clear()
        self.closed.clear()
        self.operations.clear()

    def called(self, method: str) -> list[str]:
        return [session_id for name, session_id in self.calls if name == method]

    async def _enter(self, method: str, request: Any, context: Any, *, create: bool) -> Key:
        self.calls.append((method, request.session_id))
        if self.unavailable:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "fake upstream down")
        key = (request.user_context.user_id, request.session_id)
        if key in self.closed:
            await _abort(context, "INVALID_HANDLE.SESSION_CLOSED", request.session_id)
        if key not in self.sessions:
            if not create:
                await _abort(context, "INVALID_HANDLE.SESSION_NOT_FOUND", request.session_id)
            self.open(*key)
        return key

    async def _observed(self, key: Key, request: Any, context: Any) -> None:
        observed = request.client_observed_server_side_session_id
        if observed and observed != self.sessions[key]:
            await _abort(context, "INVALID_HANDLE.SESSION_CHANGED", request.session_id)

    async def release_execute(
        self, request: spark_proto.ReleaseExecuteRequest, context: Any
    ) -> spark_proto.ReleaseExecuteResponse:
        key = await self._enter("ReleaseExecute", request, context, create=False)
        return spark_proto.ReleaseExecuteResponse(
            session_id=request.session_id,
            server_side_session_id=self.sessions[key],
            operation_id=request.operation_id,
        )

    async def interrupt(
        self, request: spark_proto.InterruptRequest, context: Any
    ) -> spark_proto.InterruptResponse:
        key = await self._enter("Interrupt", request, context, create=True)
        await self._observed(key, request, context)
        response = spark_proto.InterruptResponse(
            session_id=request.session_id, server_side_session_id=self.sessions[key]
        )
        operation = self.operations.get(request.operation_id)
        if operation is not None and not operation.interrupted:
            operation.interrupted = True
            response.interrupted_ids.append(request.operation_id)
        return response

    async def get_status(
        self, request: spark_proto.GetStatusRequest, context: Any
    ) -> spark_proto.GetStatusResponse:
        key = await self._enter("GetStatus", request, context, create=False)
        await self._observed(key, request, context)
        response = spark_proto.GetStatusResponse(
            session_id=request.session_id, server_side_session_id=self.sessions[key]
        )
        for operation_id in request.operation_status.operation_ids:
            state = States.OPERATION_STATE_UNKNOWN
            operation = self.operations.get(operation_id)
            if operation is not None and not operation.interrupted:
                state = States.OPERATION_STATE_RUNNING
            elif operation is not None and operation.polls_after_interrupt > 0:
                operation.polls_after_interrupt -= 1
                state = States.OPERATION_STATE_TERMINATING
            elif operation is not None:
                del self.operations[operation_id]
            response.operation_statuses.add(operation_id=operation_id, state=state)
        return response

    async def release_session(
        self, request: spark_proto.ReleaseSessionRequest, context: Any
    ) -> spark_proto.ReleaseSessionResponse:
        self.calls.append(("ReleaseSession", request.session_id))
        if self.unavailable:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "fake upstream down")
        key = (request.user_context.user_id, request.session_id)
        response = spark_proto.ReleaseSessionResponse(session_id=request.session_id)
        if key in self.sessions:
            response.server_side_session_id = self.sessions.pop(key)
            self.closed.add(key)
        return response

    async def config_call(
        self, request: spark_proto.ConfigRequest, context: Any
    ) -> spark_proto.ConfigResponse:
        key = await self._enter("Config", request, context, create=True)
        await self._observed(key, request, context)
        response = spark_proto.ConfigResponse(
            session_id=request.session_id, server_side_session_id=self.sessions[key]
        )
        for name in request.operation.get_option.keys:
            pair = response.pairs.add(key=name)
            if name in self.config:
                pair.value = self.config[name]
        return response

    async def execute_plan(
        self, request: spark_proto.ExecutePlanRequest, context: Any
    ) -> AsyncIterator[spark_proto.ExecutePlanResponse]:
        key = await self._enter("ExecutePlan", request, context, create=True)
        await self._observed(key, request, context)
        self.plans.append(request.plan)
        yield spark_proto.ExecutePlanResponse(
            session_id=request.session_id,
            server_side_session_id=self.sessions[key],
            operation_id=request.operation_id,
        )


async def _abort(context: Any, error_class: str, handle: str) -> None:
    status = status_of(error_class, handle)
    await context.abort(status.code, status.details, status.trailing_metadata)


def _handlers(spark: FakeSpark) -> grpc.GenericRpcHandler:
    unary = {
        "ReleaseExecute": (spark.release_execute, spark_proto.ReleaseExecuteRequest),
        "Interrupt": (spark.interrupt, spark_proto.InterruptRequest),
        "GetStatus": (spark.get_status, spark_proto.GetStatusRequest),
        "ReleaseSession": (spark.release_session, spark_proto.ReleaseSessionRequest),
        "Config": (spark.config_call, spark_proto.ConfigRequest),
    }
    methods: dict[str, grpc.RpcMethodHandler] = {
        name: grpc.unary_unary_rpc_method_handler(
            handler,
            request_deserializer=request_type.FromString,
            response_serializer=lambda message: message.SerializeToString(),
        )
        for name, (handler, request_type) in unary.items()
    }
    methods["ExecutePlan"] = grpc.unary_stream_rpc_method_handler(
        spark.execute_plan,
        request_deserializer=spark_proto.ExecutePlanRequest.FromString,
        response_serializer=lambda message: message.SerializeToString(),
    )
    return grpc.method_handlers_generic_handler(SERVICE, methods)


Scenario = Callable[[FakeSpark, grpc.aio.Channel], Awaitable[None]]


def run_against_fake(scenario: Scenario) -> None:
    """Run ``scenario`` on a new event loop with a fake upstream and a channel to it."""

    async def main() -> None:
        async with FakeUpstream() as spark:
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{spark.port}")
            try:
                await scenario(spark, channel)
            finally:
                await channel.close()

    asyncio.run(main())


class FakeUpstream:
    """``async with FakeUpstream() as spark:`` serves ``spark`` on a free loopback port."""

    def __init__(self) -> None:
        self.spark = FakeSpark()
        self._server: grpc.aio.Server | None = None

    async def __aenter__(self) -> FakeSpark:
        self._server = grpc.aio.server()
        self._server.add_generic_rpc_handlers((_handlers(self.spark),))
        self.spark.port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        return self.spark

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            await self._server.stop(None)
