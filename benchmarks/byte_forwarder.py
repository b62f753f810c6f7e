"""The floor the gateway is measured against: a minimal grpc.aio forwarder of bytes.

Every method of the Spark Connect service goes upstream as it came, request
and responses as bytes, with the client's metadata (minus the transport's own
headers) and deadline, each with the handler of its kind (the cheapest grpc.aio
has); nothing is decoded, counted or logged. Run as its own process, as the
gateway is:

    python -m benchmarks.byte_forwarder --upstream 127.0.0.1:15002 --port 15010
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


def handler(channel: grpc.aio.Channel) -> grpc.GenericRpcHandler:
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
    return grpc.method_handlers_generic_handler(SERVICE.full_name, handlers)


async def serve(upstream: str, port: int) -> None:
    channel = grpc.aio.insecure_channel(upstream, options=_UNBOUNDED)
    server = grpc.aio.server(options=_UNBOUNDED)
    server.add_generic_rpc_handlers((handler(channel),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"forwarding at 127.0.0.1:{bound}", flush=True)
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="host:port of the Spark Connect server")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.upstream, args.port))


if __name__ == "__main__":
    main()
