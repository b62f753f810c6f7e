"""Python accumulator metrics are dropped for the Scala client only, and nothing else is."""

from __future__ import annotations

from pyspark.sql.connect.proto import base_pb2

from connect_plugin.server.transport.observed_metrics import (
    PYTHON_ACCUMULATOR_METRICS,
    without_python_accumulators,
)


def _response(*names: str) -> bytes:
    response = base_pb2.ExecutePlanResponse(session_id="s", operation_id="o", response_id="r")
    for name in names:
        metrics = response.observed_metrics.add(name=name)
        metrics.values.add().long = 7
    return response.SerializeToString()


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
