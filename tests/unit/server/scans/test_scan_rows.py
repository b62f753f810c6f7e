"""Scan rows from the metrics of a response stream, without Spark: encoded responses only."""

from __future__ import annotations

import grpc
import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.scans.scan_rows import SCAN_NODE, ScanRows

Counted = list[tuple[str, int]]


def _no_bad_records(policy: str, records: int) -> None:
    raise AssertionError(f"no bad record was met, yet {records} were counted under {policy}")


def _metrics(*nodes: tuple[str, int]) -> bytes:
    response = spark_proto.ExecutePlanResponse(session_id="s", operation_id="op")
    for name, rows in nodes:
        node = response.metrics.metrics.add(name=name, plan_id=1)
        node.execution_metrics["numOutputRows"].value = rows
        node.execution_metrics["numOutputRows"].metric_type = "sum"
    return response.SerializeToString()


def _batch() -> bytes:
    response = spark_proto.ExecutePlanResponse(session_id="s", operation_id="op")
    response.arrow_batch.data = b"\x00" * 4096
    response.arrow_batch.row_count = 7
    return response.SerializeToString()


def _complete() -> bytes:
    response = spark_proto.ExecutePlanResponse(session_id="s", operation_id="op")
    response.result_complete.SetInParent()
    return response.SerializeToString()


def _request(operation_id: str = "op") -> spark_proto.ExecutePlanRequest:
    request = spark_proto.ExecutePlanRequest(session_id="s", operation_id=operation_id)
    request.user_context.user_id = "u"
    return request


def _reattach() -> spark_proto.ReattachExecuteRequest:
    request = spark_proto.ReattachExecuteRequest(session_id="s", operation_id="op")
    request.user_context.user_id = "u"
    return request


def test_only_the_scan_nodes_of_the_metrics_are_counted_once() -> None:
    counted: Counted = []
    rows = ScanRows(lambda policy, n: counted.append((policy, n)), _no_bad_records)
    watch = rows.executed(_request(), "skip")
    for response in (_batch(), _metrics((SCAN_NODE, 30), ("Project", 30), (SCAN_NODE, 3))):
        watch(response)
    watch(_complete())
    assert counted == [("skip", 33)]
    assert rows.reattached(_reattach()) is None


def test_a_reattached_operation_is_counted_on_its_last_stream() -> None:
    counted: Counted = []
    rows = ScanRows(lambda policy, n: counted.append((policy, n)), _no_bad_records)
    rows.executed(_request(), "null")(_batch())
    watch = rows.reattached(_reattach())
    assert watch is not None
    watch(_batch())
    watch(_metrics((SCAN_NODE, 12)))
    assert counted == [("null", 12)]
    assert rows.reattached(_reattach()) is None


def test_an_operation_without_id_and_malformed_bytes() -> None:
    counted: Counted = []
    rows = ScanRows(lambda policy, n: counted.append((policy, n)), _no_bad_records)
    watch = rows.executed(_request(operation_id=""), "fail")
    watch(b"\xff\xff\xff")
    watch(_metrics((SCAN_NODE, 4))[:-3])
    watch(_metrics((SCAN_NODE, 4)))
    assert counted == [("fail", 4)]


def _failure(details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        grpc.StatusCode.INTERNAL, grpc.aio.Metadata(), grpc.aio.Metadata(), details
    )


BAD_RECORD = (
    "[PYTHON_EXCEPTION] ...\nconnect_plugin.errors.BadRecord: "
    "[CONNECT_PLUGIN.SCAN_BAD_RECORD] line 3 of /data/0.json: not json"
)


@pytest.mark.parametrize(
    ("policy", "details", "expected"),
    [
        ("fail", BAD_RECORD, [("fail", 1)]),
        ("mixed", BAD_RECORD, [("fail", 1)]),
        ("fail", "[DIVIDE_BY_ZERO] Division by zero.", []),
        ("fail", "connect_plugin.errors.UnreadableFile: [CONNECT_PLUGIN.SCAN_UNREADABLE_FILE] x", []),
    ],
)
def test_a_query_a_bad_record_stopped_counts_one_bad_record(
    policy: str, details: str, expected: Counted
) -> None:
    counted: Counted = []
    rows = ScanRows(_no_bad_records, lambda policy, n: counted.append((policy, n)))
    failed = rows.failed(policy)
    assert failed is not None
    failed(_failure(details))
    assert counted == expected


@pytest.mark.parametrize("policy", ["skip", "null", "reject"])
def test_only_failing_scans_count_a_failure(policy: str) -> None:
    assert ScanRows(_no_bad_records, _no_bad_records).failed(policy) is None
