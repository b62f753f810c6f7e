"""Python accumulator metrics are dropped for the Scala client only, and nothing else is."""

from __future__ import annotations

from pyspark.sql.connect.proto import base_pb2

from connect_plugin.server.observed_metrics import (
    PYTHON_ACCUMULATOR_METRICS,
    reads_no_python_accumulators,
    without_python_accumulators,
)

SCALA = "_SPARK_CONNECT_SCALA spark/4.3.0 scala/2.13.18 jvm/17.0.15 os/linux"
PYTHON = "_SPARK_CONNECT_PYTHON spark/4.3.0 os/linux python/3.11.2"


def _response(*names: str) -> bytes:
    response = base_pb2.ExecutePlanResponse(session_id="s", operation_id="o", response_id="r")
    for name in names:
        metrics = response.observed_metrics.add(name=name)
        metrics.values.add().long = 7
    return response.SerializeToString()


def test_only_the_scala_client_is_spared_them() -> None:
    assert reads_no_python_accumulators(base_pb2.ExecutePlanRequest(client_type=SCALA))
    assert reads_no_python_accumulators(
        base_pb2.ReattachExecuteRequest(client_type="my-app " + SCALA.split(" ", 1)[1])
    )
    assert not reads_no_python_accumulators(base_pb2.ExecutePlanRequest(client_type=PYTHON))
    assert not reads_no_python_accumulators(base_pb2.ExecutePlanRequest())


def test_the_accumulator_metrics_go_and_the_rest_stays() -> None:
    kept = base_pb2.ExecutePlanResponse.FromString(
        without_python_accumulators(_response("mine", PYTHON_ACCUMULATOR_METRICS))
    )
    assert [m.name for m in kept.observed_metrics] == ["mine"]
    assert (kept.session_id, kept.operation_id, kept.response_id) == ("s", "o", "r")


def test_a_response_without_them_is_the_same_bytes() -> None:
    sent = _response("mine")
    assert without_python_accumulators(sent) is sent
    undecodable = b"\xff" + PYTHON_ACCUMULATOR_METRICS.encode()
    assert without_python_accumulators(undecodable) is undecodable
