"""Forwarding every SparkConnectService RPC to the upstream server.

Requests and responses cross the gateway as bytes: responses are never
decoded, and requests are decoded only for the RPCs whose messages can hold a
plan (found from the service descriptor, so RPCs added upstream are covered
without code changes). Metadata, deadlines, cancellation and error statuses
with their trailers go through intact, so the client rebuilds the same
exception Spark raised. One exception to the bytes: results that carry Python
accumulator metrics for the Scala client, which cannot read them
(``observed_metrics``). With metrics on, the results of a request that held a
scan have their plan metrics read, and only those (``scan_rows``). What the
gateway's hooks and observers give and hear is theirs to say
(``interception``); what the service is, method by method, is ``service``'s;
requests go on as the authenticated user's (``as_user``). With a ``route``,
each call goes to the channel its user's route gives (the engine of a share
level), awaited before the hooks see the call, so a call waits while its
engine starts.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, NoReturn

import grpc
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import DecodeError, Message
from pyspark.sql.connect.proto import base_pb2

from connect_plugin.errors import ConnectPluginError, PlanError
from connect_plugin.server.transport.as_user import UNDECODABLE, ReassignedChunks, assign_user
from connect_plugin.server.transport.clients import is_scala_client
from connect_plugin.server.transport.interception import (
    Admission,
    Authentication,
    CallMetrics,
    CallObserver,
    Interception,
    Refusal,
    RequestHook,
)
from connect_plugin.server.transport.observed_metrics import (
    RESULT_METHODS,
    without_python_accumulators,
)
from connect_plugin.server.transport.plans import decode as decode_request
from connect_plugin.server.transport.service import (
    SERVICE,
    SERVICE_NAME,
    UpstreamMethod,
    call_kind,
    forwardable_metadata,
    message_class,
)
from connect_plugin.server.transport.spark_status import Status, relay
from connect_plugin.server.transport.status import abort_with

log = logging.getLogger(__name__)

_UNCHECKED_RESPONSES = frozenset(("ReleaseSession", "CloneSession"))
"""Methods whose responses may name a server-side session other than the request's own."""

Route = Callable[[str | None, Message | None], Awaitable[grpc.aio.Channel]]
"""The channel of a call, given its authenticated user (None: unauthenticated) and its
decoded request (None: not decoded); raises a ``ConnectPluginError`` to refuse the call."""


class Forwarder:
    """Builds one generic handler that forwards every method of the service."""

    def __init__(
        self,
        channel: grpc.aio.Channel | None,
        hooks: Mapping[str, RequestHook] | None = None,
        observer: CallObserver[Any] | None = None,
        admit: Admission | None = None,
        authenticate: Authentication | None = None,
        metrics: CallMetrics | None = None,
        refusal: Refusal | None = None,
        screen: Callable[[bytes], None] | None = None,
        route: Route | None = None,
    ):
        """``screen``: looks at every request's bytes (of methods with one request) before
        anything else, and raises to refuse it; ``route``: the channel of each call, instead
        of ``channel``."""
        self._channel = channel
        self._route = route
        self._screen = screen
        self._metrics = metrics
        self._refusal = refusal
        self._hooks = dict(hooks or {})
        self._observer = observer
        self._admit = admit
        self._authenticate = authenticate
        self.calls: collections.Counter[str] = collections.Counter()
        self._responses: dict[str, type[Message]] = {}

    def handler(self) -> grpc.GenericRpcHandler:
        handlers = {method.name: self._method_handler(method) for method in SERVICE.methods}
        return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)

    def _method_handler(self, method: MethodDescriptor) -> grpc.RpcMethodHandler:
        path = f"/{SERVICE_NAME}/{method.name}"
        decode: type[Message] | None = None
        watched = self._observer is not None
        checked = watched or self._admit is not None or self._authenticate is not None
        if (method.name in self._hooks or checked) and not method.client_streaming:
            decode = message_class(method.input_type)
        chunk_type = message_class(method.input_type) if method.client_streaming else None
        if (
            watched
            and method.name not in _UNCHECKED_RESPONSES
            and "server_side_session_id" in method.output_type.fields_by_name
        ):
            self._responses[method.name] = message_class(method.output_type)
        kind = call_kind(method)
        make_call = UpstreamMethod(path, kind, self._channel)
        if method.server_streaming:
            forward_stream = self._streaming(method.name, make_call, decode)
            if method.client_streaming:
                return grpc.stream_stream_rpc_method_handler(forward_stream)
            return grpc.unary_stream_rpc_method_handler(forward_stream)
        forward = self._single(method.name, make_call, decode, chunk_type)
        if method.client_streaming:
            return grpc.stream_unary_rpc_method_handler(forward)
        return grpc.unary_unary_rpc_method_handler(forward)

    async def _identify(self, name: str, context: Any) -> str | None:
        """The authenticated user of the call (None: the gateway authenticates no one).

        A call without a valid token ends here, before its request is read.
        """
        if self._authenticate is None:
            return None
        try:
            return self._authenticate(context.invocation_metadata() or ())
        except ConnectPluginError as exc:
            await self._refuse(name, exc, None, context)

    async def _begin(
        self, name: str, decode: type[Message] | None, request: Any, context: Any
    ) -> tuple[Message | None, Any, str | None, bool]:
        """The decoded request (None if not decoded), the session the observer tracks, the
        authenticated user (None: no authentication) and whether the hooks may see it.

        The request's user becomes the authenticated user, if any. A call
        without a valid token, or the admission refuses, ends here.
        """
        user = await self._identify(name, context)
        if self._screen is not None and isinstance(request, bytes):
            try:
                self._screen(request)
            except ConnectPluginError as exc:
                await self._refuse(name, exc, None, context)
        if decode is None:
            return None, None, user, False
        message = decode_request(decode, request)
        if message is None:
            if user is not None:
                await abort_with(PlanError(UNDECODABLE), context)
            # the upstream says what is wrong with it (or that it is too deep)
            return None, None, user, False
        if user is not None:
            assign_user(message, user)
        if self._admit is not None:
            try:
                admitted = self._admit(message)
            except ConnectPluginError as exc:
                await self._refuse(name, exc, message, context)
            if not admitted:
                return message, None, user, False
        key = None if self._observer is None else self._observer.begin(message)
        return message, key, user, True

    async def _refuse(
        self, name: str, exc: ConnectPluginError, message: Message | None, context: Any
    ) -> NoReturn:
        """End the call with ``exc``, which the refusal listener hears of."""
        log.info("refused %s: %s", name, exc)
        self._refused(name, exc, message)
        await abort_with(exc, context, message)

    def _refused(self, name: str, reason: BaseException, message: Message | None) -> None:
        if self._refusal is not None:
            self._refusal(name, reason, message)

    def _end(self, key: Any) -> None:
        if key is not None and self._observer is not None:
            self._observer.end(key)

    def _failed(self, key: Any, error: grpc.aio.AioRpcError) -> None:
        if self._metrics is not None:
            self._metrics.upstream_failed(error)
        if key is not None and self._observer is not None:
            self._observer.failed(key, error)

    def _responded(self, key: Any, name: str, response: bytes) -> None:
        """Tell the observer which server-side session answered (first response only)."""
        response_type = self._responses.get(name)
        if key is None or self._observer is None or response_type is None:
            return
        if self._observer.tracks_responses(key):
            try:
                decoded: Any = response_type.FromString(response)
            except DecodeError:
                return
            self._observer.responded(key, str(decoded.server_side_session_id))

    async def _inspect(
        self, name: str, message: Message | None, hooked: bool, context: Any
    ) -> Interception | None:
        if message is None or not hooked or name not in self._hooks:
            return None
        try:
            return await self._hooks[name](name, message, context)
        except ConnectPluginError as exc:
            await self._refuse(name, exc, message, context)

    @staticmethod
    async def _finish_interception(
        handling: Interception | None, name: str, message: Message | None, context: Any
    ) -> None:
        if handling is None or handling.finish is None:
            return
        try:
            await handling.finish()
        except ConnectPluginError as exc:
            log.warning("%s succeeded upstream but its follow-up failed: %s", name, exc)
            await abort_with(exc, context, message)

    async def _routed(
        self,
        upstream: UpstreamMethod,
        name: str,
        user: str | None,
        message: Message | None,
        context: Any,
    ) -> Callable[..., Any]:
        """The upstream call's callable: on the fixed channel, or on the user's route (whose
        refusal ends the call)."""
        if self._route is None:
            return upstream.fixed
        try:
            channel = await self._route(user, message)
        except ConnectPluginError as exc:
            await self._refuse(name, exc, message, context)
        return upstream.on(channel)

    def _call(
        self,
        name: str,
        upstream: Callable[..., Any],
        request: bytes,
        handling: Interception | None,
        context: Any,
    ) -> Any:
        """The upstream call of ``request`` (as the hook rewrote it, if it did), with the
        client's forwardable metadata and deadline."""
        if handling is not None and handling.request is not None:
            request = handling.request.SerializeToString()
        if self._metrics is not None:
            self._metrics.sent_upstream(name, request)
        return upstream(
            request,
            metadata=forwardable_metadata(context.invocation_metadata()),
            timeout=context.time_remaining(),
        )

    @staticmethod
    async def _send_initial_metadata(call: Any, context: Any) -> None:
        initial = await call.initial_metadata()
        if initial:
            await context.send_initial_metadata(tuple(initial))

    @staticmethod
    async def _finish(call: Any, context: Any) -> None:
        trailing = await call.trailing_metadata()
        if trailing:
            context.set_trailing_metadata(tuple(trailing))

    def _single(
        self,
        name: str,
        upstream: UpstreamMethod,
        decode: type[Message] | None,
        chunk_type: type[Message] | None,
    ) -> Callable[[Any, Any], Awaitable[bytes]]:
        """Forwarder for RPCs with one response; the request is bytes or a stream of them."""

        async def forward(request: Any, context: Any) -> bytes:
            if self._metrics is None:
                return await forward_any(request, context)
            started = time.perf_counter()
            failure: BaseException | None = None
            try:
                response = await forward_any(request, context)
                self._metrics.sent_to_client(response)
                return response
            except BaseException as exc:
                failure = exc
                raise
            finally:
                code = _status_code(context, failure)
                self._metrics.finished(name, code, time.perf_counter() - started)

        async def forward_any(request: Any, context: Any) -> bytes:
            self.calls[name] += 1
            message, key, user, hooked = await self._begin(name, decode, request, context)
            if chunk_type is not None and user is not None:
                chunks = ReassignedChunks(request, chunk_type, user)
                try:
                    return await forward_call(chunks, None, False, key, user, context)
                except asyncio.CancelledError:
                    if chunks.undecodable:
                        await abort_with(PlanError(UNDECODABLE), context)
                    raise
                except grpc.RpcError:
                    if chunks.undecodable:
                        await abort_with(PlanError(UNDECODABLE), context)
                    raise
            try:
                return await forward_call(request, message, hooked, key, user, context)
            finally:
                self._end(key)

        async def forward_call(
            request: Any,
            message: Message | None,
            hooked: bool,
            key: Any,
            user: str | None,
            context: Any,
        ) -> bytes:
            routed = await self._routed(upstream, name, user, message, context)
            handling = await self._inspect(name, message, hooked, context)
            if self._authenticate is not None and message is not None:
                request = message.SerializeToString()
            if handling is not None and handling.answer is not None:
                return handling.answer.SerializeToString()
            call = self._call(name, routed, request, handling, context)
            try:
                response: bytes = await call
            except grpc.aio.AioRpcError as error:
                self._failed(key, error)
                _tell_failed(handling, error)
                await relay(error, context, message, _failure(handling))
            except asyncio.CancelledError:
                call.cancel()
                raise
            self._responded(key, name, response)
            await self._send_initial_metadata(call, context)
            await self._finish(call, context)
            await self._finish_interception(handling, name, message, context)
            if handling is not None and handling.respond is not None:
                return handling.respond(response)
            return response

        return forward

    def _streaming(
        self, name: str, upstream: UpstreamMethod, decode: type[Message] | None
    ) -> Callable[[Any, Any], AsyncIterator[bytes]]:
        """Forwarder for RPCs with a response stream, relayed message by message."""
        results = name in RESULT_METHODS

        async def forward(request: Any, context: Any) -> AsyncIterator[bytes]:
            metrics = self._metrics
            if metrics is None:
                async for response in forward_any(request, context):
                    yield response
                return
            started = time.perf_counter()
            failure: BaseException | None = None
            metrics.active_streams.inc()
            try:
                async for response in forward_any(request, context):
                    metrics.sent_to_client(response)
                    yield response
            except BaseException as exc:
                failure = exc
                raise
            finally:
                metrics.active_streams.dec()
                code = _status_code(context, failure)
                metrics.finished(name, code, time.perf_counter() - started)

        async def forward_any(request: Any, context: Any) -> AsyncIterator[bytes]:
            self.calls[name] += 1
            message, key, user, hooked = await self._begin(name, decode, request, context)
            try:
                async for response in forward_call(request, message, hooked, key, user, context):
                    yield response
            finally:
                self._end(key)

        async def forward_call(
            request: Any,
            message: Message | None,
            hooked: bool,
            key: Any,
            user: str | None,
            context: Any,
        ) -> AsyncIterator[bytes]:
            routed = await self._routed(upstream, name, user, message, context)
            handling = await self._inspect(name, message, hooked, context)
            if self._authenticate is not None and message is not None:
                request = message.SerializeToString()
            scrub = results and is_scala_client(message)
            if handling is not None:
                if handling.prepare is not None:
                    try:
                        async for extra in handling.prepare():
                            if isinstance(extra, Interception):
                                handling = extra
                            else:
                                yield extra.SerializeToString()
                    except ConnectPluginError as exc:
                        await self._refuse(name, exc, message, context)
                if handling.answered:
                    *leading, final = handling.answered
                    for answer in leading:
                        yield answer.SerializeToString()
                    await self._finish_interception(handling, name, message, context)
                    yield final.SerializeToString()
                    return
            call = None
            finished = False
            try:
                call = self._call(name, routed, request, handling, context)
                await self._send_initial_metadata(call, context)
                read = call.read
                eof = grpc.aio.EOF
                response = await read()
                if response is not eof:
                    self._responded(key, name, response)
                held = handling is not None and handling.finish is not None
                seen = None if handling is None else handling.responses
                last = None
                while response is not eof:
                    if seen is not None:
                        seen(response)
                    if scrub:
                        response = without_python_accumulators(response)
                    if held:
                        if last is not None:
                            yield last
                        last = response
                    else:
                        yield response
                    response = await read()
                await self._finish(call, context)
                if handling is None or handling.unfinished is None or _completes(last):
                    finished = True
                    await self._finish_interception(handling, name, message, context)
                if last is not None:
                    yield last
            except grpc.aio.AioRpcError as error:
                self._failed(key, error)
                _tell_failed(handling, error)
                await relay(error, context, message, _failure(handling))
            finally:
                if call is not None and not call.done():
                    call.cancel()
                if not finished and handling is not None and handling.unfinished is not None:
                    handling.unfinished()

        return forward


def _completes(last: bytes | None) -> bool:
    """Whether an execution's stream ended with its ``ResultComplete``: Spark also ends the
    stream of a reattachable execution that goes on, for the client to reattach to it."""
    if last is None:
        return False
    return base_pb2.ExecutePlanResponse.FromString(last).HasField("result_complete")


def _failure(handling: Interception | None) -> Callable[[Status], Status] | None:
    return None if handling is None else handling.failure


def _tell_failed(handling: Interception | None, error: grpc.aio.AioRpcError) -> None:
    if handling is not None and handling.failed is not None:
        handling.failed(error)


def _status_code(context: Any, failure: BaseException | None) -> str:
    """The gRPC status code a call ended with: OK, the one it was aborted with, or what an
    exception means."""
    if failure is None:
        return "OK"
    if isinstance(failure, asyncio.CancelledError):
        return "CANCELLED"
    code = context.code()
    if isinstance(code, grpc.StatusCode) and code is not grpc.StatusCode.OK:
        return str(code.name)
    if isinstance(code, int) and code:
        return next((str(c.name) for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN")
    return "UNKNOWN"
