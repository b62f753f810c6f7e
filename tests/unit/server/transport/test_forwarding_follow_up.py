"""A request's follow-up is done before its client sees the stream's last response.

pyspark acts on Spark's ``ResultComplete`` (the last response of an
ExecutePlan stream) without waiting for the stream to end, so a follow-up
the gateway runs after the upstream call (refreshing a rejects table,
securing the files of an insert) must be finished by then: the client's
next request finds it done. Checked with a real gRPC peer standing in for
upstream and a slow follow-up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

from connect_plugin.server.transport.forwarding import Forwarder
from connect_plugin.server.transport.interception import Interception
from connect_plugin.server.transport.service import SERVICE_NAME

FOLLOW_UP_S = 0.5


UNFINISHED = 0.0
"""What the follow-up list gets when the forwarder was told the execution goes on instead."""


def _execute(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    for index in range(3):
        yield base_pb2.ExecutePlanResponse(response_id=f"r{index}").SerializeToString()
    session_id = base_pb2.ExecutePlanRequest.FromString(request).session_id
    if session_id == "goes on":
        return
    if session_id == "breaks":
        context.abort(grpc.StatusCode.UNAVAILABLE, "the stream broke")
    complete = base_pb2.ExecutePlanResponse(response_id="done")
    complete.result_complete.SetInParent()
    yield complete.SerializeToString()


@pytest.fixture(scope="module")
def peer_port() -> Iterator[int]:
    server = grpc.server(futures.ThreadPoolExecutor(2))
    handlers = {"ExecutePlan": grpc.unary_stream_rpc_method_handler(_execute)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(0)


@pytest.fixture
def gateway(peer_port: int) -> Iterator[tuple[int, list[float]]]:
    """A forwarder whose ExecutePlan hook has a slow follow-up; yields its port and when the
    follow-up ended."""
    ended: list[float] = []
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def hook(name: str, request: Any, context: Any) -> Interception:
        async def follow_up() -> None:
            await asyncio.sleep(FOLLOW_UP_S)
            ended.append(time.monotonic())

        return Interception(finish=follow_up, unfinished=lambda: ended.append(UNFINISHED))

    async def serve() -> None:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{peer_port}")
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((Forwarder(channel, {"ExecutePlan": hook}).handler(),))
        state["port"] = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        state["stop"] = asyncio.Event()
        ready.set()
        await state["stop"].wait()
        await server.stop(0)
        await channel.close()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),))
    thread.start()
    ready.wait(10)
    try:
        yield state["port"], ended
    finally:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(10)
        loop.close()


def test_the_last_response_waits_for_the_follow_up(gateway: tuple[int, list[float]]) -> None:
    port, ended = gateway
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        received = []
        for response in stub.ExecutePlan(base_pb2.ExecutePlanRequest(session_id="s")):
            received.append((response.response_id, time.monotonic()))
            if response.HasField("result_complete"):
                break
    assert [name for name, _ in received] == ["r0", "r1", "r2", "done"]
    assert len(ended) == 1
    assert received[-1][1] >= ended[0]
    assert received[0][1] < ended[0]


def test_a_stream_that_ends_before_its_execution_leaves_the_follow_up_to_a_reattach(
    gateway: tuple[int, list[float]],
) -> None:
    """Spark ends the stream of a reattachable execution that goes on without its
    ``ResultComplete``: the follow-up is not run, the interception is told instead."""
    port, ended = gateway
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        received = [
            r.response_id for r in stub.ExecutePlan(base_pb2.ExecutePlanRequest(session_id="goes on"))
        ]
    assert received == ["r0", "r1", "r2"]
    assert ended == [UNFINISHED]


def test_a_stream_that_fails_leaves_the_follow_up_to_a_reattach(
    gateway: tuple[int, list[float]],
) -> None:
    """A stream that breaks (an error, not the execution's end) does not run the follow-up:
    the execution may go on, and the interception is told, as for a stream that ends."""
    port, ended = gateway
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        with pytest.raises(grpc.RpcError, match="the stream broke"):
            list(stub.ExecutePlan(base_pb2.ExecutePlanRequest(session_id="breaks")))
    deadline = time.monotonic() + 5.0
    while not ended and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ended == [UNFINISHED], "the interception was not told that its stream failed"
