"""One liveness answer from Spark's structured errors, against a fake upstream with Spark's shapes."""

from __future__ import annotations

import uuid

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import UpstreamFailed, UpstreamUnavailable
from connect_plugin.server.transport.liveness import Liveness, Probe, liveness_of, probe
from connect_plugin.server.transport.upstream import (
    SessionContext,
    UpstreamSession,
    upstream_failure,
)
from tests.unit.server.fake_upstream import FakeSpark, run_against_fake
from tests.unit.server.spark_errors import load

USER = "ann"
TIMEOUT_S = 5.0


def _upstream(channel: grpc.aio.Channel, session_id: str) -> UpstreamSession:
    return UpstreamSession(channel, SessionContext.of_stored(USER, session_id))


def test_the_recording_has_every_error_class_the_gateway_decides_on() -> None:
    recorded = load()
    assert set(recorded) == {
        "INVALID_HANDLE.SESSION_NOT_FOUND",
        "INVALID_HANDLE.SESSION_CLOSED",
        "INVALID_HANDLE.SESSION_CHANGED",
        "INVALID_HANDLE.OPERATION_NOT_FOUND",
    }
    for error_class, shape in recorded.items():
        assert shape["metadata"]["errorClass"] == error_class


def test_probe_answers_alive_gone_and_unknown() -> None:
    async def scenario(spark: FakeSpark, channel: grpc.aio.Channel) -> None:
        live, released, never = (str(uuid.uuid4()) for _ in range(3))
        server_side = spark.open(USER, live)
        spark.open(USER, released)
        spark.closed.add((USER, released))
        del spark.sessions[USER, released]

        answers = {
            name: await probe(_upstream(channel, session_id), known, TIMEOUT_S)
            for name, session_id, known in (
                ("live", live, server_side),
                ("live-unseen", live, ""),
                ("released", released, ""),
                ("never", never, ""),
                ("restarted", live, "an-earlier-server-side-id"),
            )
        }
        assert answers["live"] == Probe(Liveness.ALIVE, server_side)
        assert answers["live-unseen"] == Probe(Liveness.ALIVE, server_side)
        assert answers["released"].liveness is Liveness.GONE
        assert answers["never"].liveness is Liveness.GONE
        assert answers["restarted"].liveness is Liveness.GONE
        assert answers["restarted"].server_side_session_id == server_side
        assert (USER, never) not in spark.sessions, "a probe never creates the session"

        spark.unavailable = True
        down = await probe(_upstream(channel, live), server_side, TIMEOUT_S)
        assert down.liveness is Liveness.UNKNOWN

    run_against_fake(scenario)


@pytest.mark.parametrize(
    ("error_class", "expected"),
    [
        ("INVALID_HANDLE.SESSION_NOT_FOUND", Liveness.GONE),
        ("INVALID_HANDLE.SESSION_CLOSED", Liveness.GONE),
        ("INVALID_HANDLE.SESSION_CHANGED", Liveness.GONE),
        ("INVALID_HANDLE.OPERATION_NOT_FOUND", Liveness.ALIVE),
    ],
)
def test_each_recorded_error_reaches_the_gateway_with_its_class(
    error_class: str, expected: Liveness
) -> None:
    async def scenario(spark: FakeSpark, channel: grpc.aio.Channel) -> None:
        session_id = str(uuid.uuid4())
        server_side = spark.open(USER, session_id)
        upstream = _upstream(channel, session_id)
        failure: BaseException | None = None
        try:
            if error_class == "INVALID_HANDLE.SESSION_CLOSED":
                await upstream.release_session()
                await upstream.current_server_side_session_id()
            elif error_class == "INVALID_HANDLE.SESSION_NOT_FOUND":
                await _upstream(channel, str(uuid.uuid4())).current_server_side_session_id()
            elif error_class == "INVALID_HANDLE.SESSION_CHANGED":
                request = spark_proto.ConfigRequest(
                    session_id=session_id,
                    user_context=spark_proto.UserContext(user_id=USER),
                    client_observed_server_side_session_id=server_side + "-old",
                )
                await channel.unary_unary(
                    "/spark.connect.SparkConnectService/Config",
                    request_serializer=spark_proto.ConfigRequest.SerializeToString,
                    response_deserializer=spark_proto.ConfigResponse.FromString,
                )(request)
            else:
                failure = UpstreamFailed("x", error_class=error_class)
        except grpc.aio.AioRpcError as error:
            failure = upstream_failure(error)
        except UpstreamFailed as exc:
            failure = exc
        assert isinstance(failure, UpstreamFailed)
        assert failure.error_class == error_class
        assert liveness_of(failure) is expected

    run_against_fake(scenario)


def _rpc_error(message: str, error_class: str | None) -> grpc.aio.AioRpcError:
    status = status_pb2.Status(code=code_pb2.INTERNAL, message=message)
    if error_class is not None:
        status.details.add().Pack(error_details_pb2.ErrorInfo(metadata={"errorClass": error_class}))
    built = rpc_status.to_status(status)
    return grpc.aio.AioRpcError(
        built.code, grpc.aio.Metadata(), grpc.aio.Metadata(*built.trailing_metadata), message
    )


def test_the_decision_reads_the_error_info_never_the_message_text() -> None:
    misleading = _rpc_error("[INVALID_HANDLE.SESSION_NOT_FOUND] in a user's string", "OTHER")
    assert liveness_of(upstream_failure(misleading)) is Liveness.UNKNOWN
    plain = _rpc_error("gone", "INVALID_HANDLE.SESSION_CLOSED")
    assert liveness_of(upstream_failure(plain)) is Liveness.GONE
    bare = _rpc_error("[INVALID_HANDLE.SESSION_CLOSED] no details attached", None)
    assert liveness_of(upstream_failure(bare)) is Liveness.UNKNOWN
    assert liveness_of(UpstreamUnavailable("down")) is Liveness.UNKNOWN
    assert liveness_of(TimeoutError()) is Liveness.UNKNOWN
