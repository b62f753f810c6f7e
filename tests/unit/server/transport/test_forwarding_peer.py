"""What the gateway passes on, observed by a real gRPC peer standing in for upstream.

Spark Connect reads no custom metadata and sends no trailers on success, so
these properties of the forwarding layer are checked against a small gRPC
server that records what reaches it; everything Spark-specific is covered
against a real Spark Connect server in tests/integration.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

from connect_plugin.config import Config
from connect_plugin.server.gateway import Gateway, serve

SERVICE = "spark.connect.SparkConnectService"
SESSION_1 = "0f7a3c2e-5b1d-4e8a-9c6f-2d4b8e1a7c30"
SESSION_2 = "6c1e9b4a-2f7d-4a3e-8b5c-9e0d1f2a3b41"


class _Peer:
    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def config(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        self.seen["metadata"] = dict(context.invocation_metadata())
        self.seen["time_remaining"] = context.time_remaining()
        self.seen["request"] = request
        context.set_trailing_metadata((("x-peer-trailer", "t1"),))
        return base_pb2.ConfigResponse(session_id="from-peer").SerializeToString()

    def execute(self, request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        yield base_pb2.ExecutePlanResponse(operation_id="op-1").SerializeToString()
        info = error_details_pb2.ErrorInfo(reason="r", domain="d", metadata={"errorClass": "X.Y"})
        status = status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message="peer says no")
        status.details.add().Pack(info)
        context.abort_with_status(rpc_status.to_status(status))


@pytest.fixture(scope="module")
def peer() -> Iterator[tuple[_Peer, int]]:
    recorder = _Peer()
    server = grpc.server(futures.ThreadPoolExecutor(4))
    handlers = {
        "Config": grpc.unary_unary_rpc_method_handler(recorder.config),
        "ExecutePlan": grpc.unary_stream_rpc_method_handler(recorder.execute),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield recorder, port
    finally:
        server.stop(0)


@pytest.fixture(scope="module")
def gateway(peer: tuple[_Peer, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = serve(
        Config(
            port=0,
            upstream=f"sc://127.0.0.1:{peer[1]}",
            conf_dir=None,
            workspace=tmp_path_factory.mktemp("ws"),
        )
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def stub(gateway: Gateway) -> Iterator[base_pb2_grpc.SparkConnectServiceStub]:
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
        yield base_pb2_grpc.SparkConnectServiceStub(channel)


def test_metadata_deadline_bytes_and_trailers_pass_through(
    peer: tuple[_Peer, int], stub: base_pb2_grpc.SparkConnectServiceStub
) -> None:
    request = base_pb2.ConfigRequest(session_id=SESSION_1)
    reply, call = stub.Config.with_call(
        request, metadata=(("x-client-header", "v1"), ("x-bin", b"\x00\xff")), timeout=7.0
    )
    recorder = peer[0]
    assert reply.session_id == "from-peer"
    assert recorder.seen["metadata"]["x-client-header"] == "v1"
    assert recorder.seen["metadata"]["x-bin"] == b"\x00\xff"
    # gRPC encodes timeouts coarsely, so the peer may see a few ms more than was set.
    assert 5.0 < recorder.seen["time_remaining"] <= 7.5
    assert recorder.seen["request"] == request.SerializeToString()
    assert ("x-peer-trailer", "t1") in tuple(call.trailing_metadata())


def test_error_status_details_reach_the_client_intact(
    stub: base_pb2_grpc.SparkConnectServiceStub,
) -> None:
    request = base_pb2.ExecutePlanRequest(session_id=SESSION_2)
    request.plan.root.range.end = 1
    responses = stub.ExecutePlan(request, timeout=10)
    assert next(responses).operation_id == "op-1"
    with pytest.raises(grpc.RpcError) as raised:
        next(responses)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert raised.value.details() == "peer says no"
    status = rpc_status.from_call(raised.value)
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.metadata["errorClass"] == "X.Y"


@pytest.mark.parametrize(
    "session_id",
    [SESSION_1.upper(), SESSION_1.upper().replace("A", "a", 1), "1-2-3-4-5"],
    ids=["upper-case", "mixed-case", "short-parts"],
)
def test_a_session_id_spelled_other_than_canonically_is_refused_before_forwarding(
    peer: tuple[_Peer, int], stub: base_pb2_grpc.SparkConnectServiceStub, session_id: str
) -> None:
    """Spark reads these as UUIDs, so two spellings would be two sessions to Spark."""
    recorder = peer[0]
    recorder.seen.clear()
    with pytest.raises(grpc.RpcError) as raised:
        stub.Config(base_pb2.ConfigRequest(session_id=session_id), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"[{session_id}]" in (raised.value.details() or "")
    assert recorder.seen == {}, "a refused request never reaches the upstream"
    clone = base_pb2.CloneSessionRequest(session_id=SESSION_1, new_session_id=session_id)
    with pytest.raises(grpc.RpcError) as raised:
        stub.CloneSession(clone, timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "new session id" in (raised.value.details() or "")


@pytest.mark.parametrize(
    "session_id",
    ["{" + SESSION_1 + "}", SESSION_1.replace("-", ""), "s-1", ""],
    ids=["braces", "no-dashes", "not-a-uuid", "empty"],
)
def test_a_session_id_that_is_no_uuid_at_all_goes_to_the_upstream_untouched(
    peer: tuple[_Peer, int], stub: base_pb2_grpc.SparkConnectServiceStub, session_id: str
) -> None:
    """Spark refuses these itself, with its own error class: the client gets Spark's answer."""
    recorder = peer[0]
    recorder.seen.clear()
    request = base_pb2.ConfigRequest(session_id=session_id)
    assert stub.Config(request, timeout=10).session_id == "from-peer"
    assert recorder.seen["request"] == request.SerializeToString()
