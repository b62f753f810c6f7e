"""Work the gateway does in a user's own Spark Connect session.

The gateway sends ordinary Spark Connect requests on its upstream channel,
stamped with the user's session id, user context and call metadata (so any
authentication the upstream checks applies to the gateway's work exactly as
to the user's). It never opens or releases sessions of its own. With a share
level other than ``server`` each user's requests go to the channel of the
user's engine; a user whose engine is not running has no session anywhere,
which the gateway's own calls learn as Spark says it (``SESSION_CLOSED``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import pyarrow as pa
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import UpstreamFailed, UpstreamUnavailable
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.spark_status import STATUS_DETAILS_KEY, upstream_status

_SERVICE = "/spark.connect.SparkConnectService/"
CLIENT_TYPE = "connect-plugin-gateway"
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
SESSION_CLOSED = "INVALID_HANDLE.SESSION_CLOSED"


@dataclass(frozen=True)
class SessionContext:
    """Who a request came from: enough to act in the same upstream session."""

    session_id: str
    user_context: spark_proto.UserContext
    metadata: tuple[tuple[str, str | bytes], ...]

    @property
    def user_id(self) -> str:
        return self.user_context.user_id

    @classmethod
    def of_stored(cls, user_id: str, session_id: str) -> SessionContext:
        """The gateway acting in a stored session on its own, with no client call to copy."""
        return cls(session_id, spark_proto.UserContext(user_id=user_id), ())


class Upstream:
    """The gateway's channel to the Spark Connect server, lent out per session."""

    def __init__(
        self,
        channel: grpc.aio.Channel | None,
        engine_of: Callable[[str], grpc.aio.Channel | None] | None = None,
    ) -> None:
        """``engine_of``: with a share level other than ``server``, the channel of a user's
        running engine (None: none runs), instead of ``channel``."""
        self._channel = channel
        self._engine_of = engine_of

    def channel_of(self, user_id: str) -> grpc.aio.Channel | None:
        """The channel of ``user_id``'s requests; None when the user's engine is not running."""
        return self._channel if self._engine_of is None else self._engine_of(user_id)

    def session(self, context: SessionContext) -> UpstreamSession:
        """Requests in the session of a client's call, with that call's metadata."""
        return UpstreamSession(self.channel_of(context.user_id), context)

    def stored(self, user_id: str, session_id: str) -> UpstreamSession:
        """Requests in a session the gateway acts on by itself (expiry, recovery)."""
        context = SessionContext.of_stored(user_id, session_id)
        return UpstreamSession(self.channel_of(user_id), context)


class UpstreamSession:
    """Requests in one user's session over the gateway's upstream channel."""

    def __init__(self, channel: grpc.aio.Channel | None, context: SessionContext) -> None:
        self._channels = channel
        self.context = context
        self.server_side_session_id = ""

    @property
    def _channel(self) -> grpc.aio.Channel:
        if self._channels is None:
            raise UpstreamFailed(
                f"session {self.context.session_id} is closed: the Spark Connect engine of "
                f"user {self.context.user_id!r} is not running",
                error_class=SESSION_CLOSED,
            )
        return self._channels

    def _stamp(self, request: object) -> None:
        request.session_id = self.context.session_id  # type: ignore[attr-defined]
        request.user_context.CopyFrom(self.context.user_context)  # type: ignore[attr-defined]
        request.client_type = CLIENT_TYPE  # type: ignore[attr-defined]

    async def execute(
        self, plan: spark_proto.Plan, *, operation_id: str | None = None
    ) -> AsyncIterator[spark_proto.ExecutePlanResponse]:
        """Run ``plan`` (as ``operation_id`` if given) and yield every response Spark sends."""
        with deep_messages():
            request = spark_proto.ExecutePlanRequest(
                plan=plan, operation_id=operation_id or str(uuid.uuid4())
            )
        self._stamp(request)
        call = self._channel.unary_stream(
            _SERVICE + "ExecutePlan",
            request_serializer=spark_proto.ExecutePlanRequest.SerializeToString,
            response_deserializer=spark_proto.ExecutePlanResponse.FromString,
        )(request, metadata=self.context.metadata)
        try:
            async for response in call:
                if response.server_side_session_id:
                    self.server_side_session_id = response.server_side_session_id
                yield response
        except grpc.aio.AioRpcError as error:
            raise _failure(error) from None
        finally:
            if not call.done():
                call.cancel()

    async def run(self, plan: spark_proto.Plan) -> list[spark_proto.ExecutePlanResponse]:
        return [response async for response in self.execute(plan)]

    async def command(self, command: spark_proto.Command) -> list[spark_proto.ExecutePlanResponse]:
        with deep_messages():
            plan = spark_proto.Plan(command=command)
        return await self.run(plan)

    async def rows(self, relation: spark_proto.Relation) -> list[dict[str, object]]:
        """The rows of a (small) relation, as dicts."""
        batches = []
        for response in await self.run(spark_proto.Plan(root=relation)):
            if response.HasField("arrow_batch"):
                reader = pa.ipc.open_stream(response.arrow_batch.data)
                batches.extend(reader)
        rows: list[dict[str, object]] = []
        for batch in batches:
            rows.extend(batch.to_pylist())
        return rows

    async def _unary(self, method: str, request: Any, response_type: type[Any]) -> Any:
        """One unary RPC in the user's session; Spark's refusal becomes ``UpstreamFailed``."""
        self._stamp(request)
        call = self._channel.unary_unary(
            _SERVICE + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=response_type.FromString,
        )
        try:
            response = await call(request, metadata=self.context.metadata)
        except grpc.aio.AioRpcError as error:
            raise _failure(error) from None
        if getattr(response, "server_side_session_id", ""):
            self.server_side_session_id = response.server_side_session_id
        return response

    async def analyze(
        self, request: spark_proto.AnalyzePlanRequest
    ) -> spark_proto.AnalyzePlanResponse:
        response: spark_proto.AnalyzePlanResponse = await self._unary(
            "AnalyzePlan", request, spark_proto.AnalyzePlanResponse
        )
        return response

    async def schema(self, relation: spark_proto.Relation) -> spark_proto.DataType:
        request = spark_proto.AnalyzePlanRequest()
        with deep_messages():
            request.schema.plan.root.CopyFrom(relation)
        response = await self.analyze(request)
        schema: spark_proto.DataType = response.schema.schema
        return schema

    async def same_semantics(
        self, first: spark_proto.Relation, second: spark_proto.Relation
    ) -> bool:
        """Whether Spark resolves both relations to the same result (its ``sameSemantics``)."""
        request = spark_proto.AnalyzePlanRequest()
        request.same_semantics.target_plan.root.CopyFrom(first)
        request.same_semantics.other_plan.root.CopyFrom(second)
        response = await self.analyze(request)
        return bool(response.same_semantics.result)

    async def set_config(self, pairs: Mapping[str, str]) -> None:
        request = spark_proto.ConfigRequest()
        for key, value in pairs.items():
            request.operation.set.pairs.add(key=key, value=value)
        await self._unary("Config", request, spark_proto.ConfigResponse)

    async def config(self, keys: Sequence[str]) -> dict[str, str | None]:
        """Session settings (``None`` for unset ones)."""
        request = spark_proto.ConfigRequest()
        request.operation.get_option.keys.extend(keys)
        response = await self._unary("Config", request, spark_proto.ConfigResponse)
        return {pair.key: pair.value if pair.HasField("value") else None for pair in response.pairs}

    async def current_server_side_session_id(self) -> str:
        """The upstream's server-side id of this session; Spark's error when it has none.

        Asks with a ReleaseExecute of an operation that never existed: unlike
        most RPCs (Interrupt and FetchErrorDetails included) it never creates
        the session it names.
        """
        request = spark_proto.ReleaseExecuteRequest(operation_id=str(uuid.uuid4()))
        request.release_all.SetInParent()
        response = await self._unary("ReleaseExecute", request, spark_proto.ReleaseExecuteResponse)
        return str(response.server_side_session_id)

    async def release_session(self) -> None:
        """Release this session upstream (its views and operations go with it)."""
        await self._unary(
            "ReleaseSession",
            spark_proto.ReleaseSessionRequest(),
            spark_proto.ReleaseSessionResponse,
        )

    async def clone_session(
        self, request: spark_proto.CloneSessionRequest
    ) -> spark_proto.CloneSessionResponse:
        """Clone this session upstream as the client asked (``new_session_id`` set)."""
        response: spark_proto.CloneSessionResponse = await self._unary(
            "CloneSession", request, spark_proto.CloneSessionResponse
        )
        return response

    async def error_details(self, error_id: str) -> spark_proto.FetchErrorDetailsResponse:
        """Spark's chain of errors behind ``errorId`` of a failed call of this session."""
        request = spark_proto.FetchErrorDetailsRequest(error_id=error_id)
        response: spark_proto.FetchErrorDetailsResponse = await self._unary(
            "FetchErrorDetails", request, spark_proto.FetchErrorDetailsResponse
        )
        return response

    async def interrupt(self, operation_id: str) -> bool:
        """Interrupt one operation of this session; False when it was not running."""
        request = spark_proto.InterruptRequest(
            interrupt_type=spark_proto.InterruptRequest.InterruptType.INTERRUPT_TYPE_OPERATION_ID,
            operation_id=operation_id,
        )
        response = await self._unary("Interrupt", request, spark_proto.InterruptResponse)
        return operation_id in response.interrupted_ids

    async def running(self, operation_id: str) -> bool:
        """Whether an operation of this session is still running or terminating."""
        request = spark_proto.GetStatusRequest()
        request.operation_status.operation_ids.append(operation_id)
        response = await self._unary("GetStatus", request, spark_proto.GetStatusResponse)
        states = spark_proto.GetStatusResponse.OperationStatus.OperationState
        busy = (states.OPERATION_STATE_RUNNING, states.OPERATION_STATE_TERMINATING)
        return any(
            status.operation_id == operation_id and status.state in busy
            for status in response.operation_statuses
        )


def _failure(error: grpc.aio.AioRpcError) -> Exception:
    if error.code() in _UNREACHABLE:
        return UpstreamUnavailable(
            f"the Spark Connect server did not answer the gateway: {error.details()}"
        )
    return upstream_failure(error)


def upstream_failure(error: grpc.aio.AioRpcError) -> UpstreamFailed:
    """Spark's error as ``UpstreamFailed``, with the error class and id its ErrorInfo gives.

    Its message and class are the ones the client would read (a scan error's
    class and cause first, ``upstream_status``), so an error of ours that
    quotes it names the cause early, and the audit and the metrics name the
    class the client was told.
    """
    relayed = upstream_status(error)
    error_class = error_id = ""
    packed = dict(relayed.trailing_metadata).get(STATUS_DETAILS_KEY)
    try:
        status = status_pb2.Status.FromString(packed) if isinstance(packed, bytes) else None
    except DecodeError:
        status = None
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            error_class = info.metadata.get("errorClass", "")
            error_id = info.metadata.get("errorId", "")
    return UpstreamFailed(
        relayed.details or error.code().name,
        error_class=error_class,
        error_id=error_id,
        status=error,
    )
