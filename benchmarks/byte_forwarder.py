"""The floor the gateway is measured against: a minimal grpc.aio forwarder of bytes.

Every method of the Spark Connect service goes upstream as it came, request
and responses as bytes, with the client's metadata (minus the transport's own
headers) and deadline, each with the handler of its kind (the cheapest grpc.aio
has); nothing is decoded, counted or logged. Run as its own process, as the
gateway is:

    python -m benchmarks.byte_forwarder --upstream 127.0.0.1:15002 --port 15010

With ``--answer-releases`` it does the least any gateway that serves the
client's calls and sends Spark only three per small query must do: it
answers a ``ReleaseExecute`` up to a response itself (the ids of the request,
and the server-side session id learnt from the session's ``Config`` answers)
and sends on only the one that releases all. Its CPU per query is the floor
of such a gateway in grpc.aio.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from pyspark.sql.connect.proto import base_pb2

SERVICE = base_pb2.DESCRIPTOR.services_by_name["SparkConnectService"]
_OWN_HEADERS = frozenset(("user-agent", "te", "content-type", "grpc-accept-encoding"))
_UNBOUNDED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


def _metadata(context: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(
        (key, value)
        for key, value in context.invocation_metadata() or ()
        if key not in _OWN_HEADERS and not key.startswith((":", "grpc-"))
    )


async def _failed(error: grpc.aio.AioRpcError, context: Any) -> None:
    context.set_trailing_metadata(tuple(error.trailing_metadata() or ()))
    await context.abort(error.code(), error.details() or "")


def _single(upstream: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    async def relay(request: Any, context: Any) -> bytes:
        call = upstream(request, metadata=_metadata(context), timeout=context.time_remaining())
        try:
            response: bytes = await call
        except grpc.aio.AioRpcError as error:
            await _failed(error, context)
        context.set_trailing_metadata(tuple(await call.trailing_metadata() or ()))
        return response

    return relay


def _stream(upstream: Callable[..., Any]) -> Callable[[Any, Any], AsyncIterator[bytes]]:
    async def relay(request: Any, context: Any) -> AsyncIterator[bytes]:
        call = upstream(request, metadata=_metadata(context), timeout=context.time_remaining())
        try:
            async for response in call:
                yield response
            context.set_trailing_metadata(tuple(await call.trailing_metadata() or ()))
        except grpc.aio.AioRpcError as error:
            await _failed(error, context)
        finally:
            call.cancel()

    return relay


class _Releases:
    """Answers the releases up to a response; sends on the releases of all."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._config = _single(channel.unary_unary(f"/{SERVICE.full_name}/Config"))
        self._release = _single(channel.unary_unary(f"/{SERVICE.full_name}/ReleaseExecute"))
        self._server_sessions: dict[str, str] = {}

    async def config(self, request: bytes, context: Any) -> bytes:
        response: bytes = await self._config(request, context)
        answer = base_pb2.ConfigResponse.FromString(response)
        self._server_sessions[answer.session_id] = answer.server_side_session_id
        return response

    async def release(self, request: bytes, context: Any) -> bytes:
        asked = base_pb2.ReleaseExecuteRequest.FromString(request)
        if asked.HasField("release_all"):
            released: bytes = await self._release(request, context)
            return released
        return base_pb2.ReleaseExecuteResponse(
            session_id=asked.session_id,
            server_side_session_id=self._server_sessions.get(asked.session_id, ""),
            operation_id=asked.operation_id,
        ).SerializeToString()


def handler(channel: grpc.aio.Channel, answer_releases: bool = False) -> grpc.GenericRpcHandler:
    handlers = {}
    for method in SERVICE.methods:
        path = f"/{SERVICE.full_name}/{method.name}"
        kind = (method.client_streaming, method.server_streaming)
        if kind == (False, False):
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _single(channel.unary_unary(path))
            )
        elif kind == (True, False):
            handlers[method.name] = grpc.stream_unary_rpc_method_handler(
                _single(channel.stream_unary(path))
            )
        elif kind == (False, True):
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _stream(channel.unary_stream(path))
            )
        else:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                _stream(channel.stream_stream(path))
            )
    if answer_releases:
        releases = _Releases(channel)
        handlers["Config"] = grpc.unary_unary_rpc_method_handler(releases.config)
        handlers["ReleaseExecute"] = grpc.unary_unary_rpc_method_handler(releases.release)
    return grpc.method_handlers_generic_handler(SERVICE.full_name, handlers)


async def serve(upstream: str, port: int, answer_releases: bool = False) -> None:
    channel = grpc.aio.insecure_channel(upstream, options=_UNBOUNDED)
    server = grpc.aio.server(options=_UNBOUNDED)
    server.add_generic_rpc_handlers((handler(channel, answer_releases),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"forwarding at 127.0.0.1:{bound}", flush=True)
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="host:port of the Spark Connect server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--answer-releases",
        action="store_true",
        help="answer releases up to a response; send on only the releases of all",
    )
    args = parser.parse_args()
    asyncio.run(serve(args.upstream, args.port, args.answer_releases))


if __name__ == "__main__":
    main()
