"""Attacks on another user's operations and artifacts, and on the request decoder.

Raw gRPC calls under the users' tokens, over the secure gateway, against the
token-protected Spark: another user naming a session and an operation of alice
gets none of it; a claimed user id on artifact chunks is replaced by the token's
user; a request that cannot be decoded is refused without being forwarded.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.proto.base_pb2_grpc import SparkConnectServiceStub

from connect_plugin.server.gateway import Gateway
from tests.integration.security.conftest import ALICE_SECOND_TOKEN, ALICE_TOKEN, BOB_TOKEN, Pki
from tests.integration.security.test_security import CONFIG, tls

ROWS = 5


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture
def channel(secure_gateway: Gateway, pki: Pki) -> Iterator[grpc.Channel]:
    with grpc.secure_channel(f"127.0.0.1:{secure_gateway.port}", tls(pki)) as opened:
        yield opened


def user(name: str) -> spark_proto.UserContext:
    return spark_proto.UserContext(user_id=name)


def reattachable_range(session_id: str, operation_id: str) -> spark_proto.ExecutePlanRequest:
    request = spark_proto.ExecutePlanRequest(
        session_id=session_id, user_context=user("alice"), operation_id=operation_id
    )
    request.plan.root.range.end = ROWS
    request.plan.root.range.step = 1
    request.plan.root.range.num_partitions = ROWS
    request.request_options.add().reattach_options.reattachable = True
    return request


def arrow_batches(responses: Iterator[spark_proto.ExecutePlanResponse]) -> list[str]:
    """The response ids of the Arrow batches, read up to the end of the stream."""
    return [response.response_id for response in responses if response.HasField("arrow_batch")]


def test_another_user_cannot_reattach_to_or_release_an_operation(channel: grpc.Channel) -> None:
    stub = SparkConnectServiceStub(channel)
    session_id, operation_id = str(uuid.uuid4()), str(uuid.uuid4())
    responses = list(
        stub.ExecutePlan(
            reattachable_range(session_id, operation_id), metadata=bearer(ALICE_TOKEN), timeout=60
        )
    )
    batch_ids = [r.response_id for r in responses if r.HasField("arrow_batch")]
    assert len(batch_ids) > 1, "the range should come in one Arrow batch per partition"
    assert responses[-1].HasField("result_complete")

    names = {"session_id": session_id, "operation_id": operation_id, "user_context": user("alice")}
    with pytest.raises(grpc.RpcError) as reattach:
        list(
            stub.ReattachExecute(
                spark_proto.ReattachExecuteRequest(**names), metadata=bearer(BOB_TOKEN), timeout=30
            )
        )
    assert reattach.value.code() == grpc.StatusCode.INTERNAL
    assert "SESSION_NOT_FOUND" in (reattach.value.details() or "")
    release = spark_proto.ReleaseExecuteRequest(**names)
    release.release_all.SetInParent()
    with pytest.raises(grpc.RpcError) as released:
        stub.ReleaseExecute(release, metadata=bearer(BOB_TOKEN), timeout=30)
    assert released.value.code() == grpc.StatusCode.INTERNAL
    assert "SESSION_NOT_FOUND" in (released.value.details() or "")

    again = stub.ReattachExecute(
        spark_proto.ReattachExecuteRequest(**names, last_response_id=batch_ids[0]),
        metadata=bearer(ALICE_SECOND_TOKEN),
        timeout=30,
    )
    assert arrow_batches(again) == batch_ids[1:]
    stub.ReleaseExecute(release, metadata=bearer(ALICE_TOKEN), timeout=30)


def cache_chunk(
    session_id: str, claimed: str, blob: bytes
) -> tuple[spark_proto.AddArtifactsRequest, str]:
    name = f"cache/{hashlib.sha256(blob).hexdigest()}"
    request = spark_proto.AddArtifactsRequest(session_id=session_id, user_context=user(claimed))
    artifact = request.batch.artifacts.add(name=name)
    artifact.data.data = blob
    artifact.data.crc = zlib.crc32(blob)
    return request, name


def cached(stub: SparkConnectServiceStub, token: str, session_id: str, name: str) -> bool:
    response = stub.ArtifactStatus(
        spark_proto.ArtifactStatusesRequest(
            session_id=session_id, user_context=user("alice"), names=[name]
        ),
        metadata=bearer(token),
        timeout=30,
    )
    return bool(response.statuses[name].exists)


def test_artifacts_claimed_for_another_user_land_in_the_callers_session(
    channel: grpc.Channel,
) -> None:
    stub = SparkConnectServiceStub(channel)
    session_id = str(uuid.uuid4())
    first, first_name = cache_chunk(session_id, "bob", b"alice's first blob")
    second, second_name = cache_chunk(session_id, "bob", b"alice's second blob")
    added = stub.AddArtifacts(iter([first, second]), metadata=bearer(ALICE_TOKEN), timeout=60)
    assert {summary.name for summary in added.artifacts} == {first_name, second_name}
    assert cached(stub, ALICE_TOKEN, session_id, first_name)
    assert cached(stub, ALICE_SECOND_TOKEN, session_id, second_name)
    assert not cached(stub, BOB_TOKEN, session_id, first_name)
    assert not cached(stub, BOB_TOKEN, session_id, second_name)


def raw(channel: grpc.Channel, method: str, *, stream: bool) -> Callable[..., Any]:
    """A call that sends bytes as they are, so they need not be a valid message."""
    make = channel.stream_unary if stream else channel.unary_unary
    return make(method, request_serializer=None, response_deserializer=None)


UNDECODABLE = b"\x0a\xff\xff\xff\xff\x0f"
"""A length-delimited field 1 longer than the message itself."""


def test_an_undecodable_unary_request_is_refused_unforwarded(
    secure_gateway: Gateway, channel: grpc.Channel
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        raw(channel, CONFIG, stream=False)(UNDECODABLE, metadata=bearer(ALICE_TOKEN), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot be decoded" in (refused.value.details() or "")


def test_an_undecodable_artifact_chunk_is_refused_and_nothing_lands(
    channel: grpc.Channel,
) -> None:
    stub = SparkConnectServiceStub(channel)
    session_id = str(uuid.uuid4())
    valid, name = cache_chunk(session_id, "alice", b"a chunk before a broken one")
    call = raw(channel, "/spark.connect.SparkConnectService/AddArtifacts", stream=True)
    with pytest.raises(grpc.RpcError) as refused:
        call(
            iter([valid.SerializeToString(), UNDECODABLE]), metadata=bearer(ALICE_TOKEN), timeout=30
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot be decoded" in (refused.value.details() or "")
    assert not cached(stub, ALICE_TOKEN, session_id, name)
