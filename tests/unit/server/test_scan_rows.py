"""Scan rows from the metrics of a response stream, without Spark: encoded responses only."""

from __future__ import annotations

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.scan_rows import SCAN_NODE, ScanRows

Counted = list[tuple[str, int]]


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
    rows = ScanRows(lambda policy, n: counted.append((policy, n)))
    watch = rows.executed(_request(), "skip")
    for response in (_batch(), _metrics((SCAN_NODE, 30), ("Project", 30), (SCAN_NODE, 3))):
        watch(response)
    watch(_complete())
    assert counted == [("skip", 33)]
    assert rows.reattached(_reattach()) is None


def test_a_reattached_operation_is_counted_on_its_last_stream() -> None:
    counted: Counted = []
    rows = ScanRows(lambda policy, n: counted.append((policy, n)))
    rows.executed(_request(), "null")(_batch())
    watch = rows.reattached(_reattach())
    assert watch is not None
    watch(_batch())
    watch(_metrics((SCAN_NODE, 12)))
    assert counted == [("null", 12)]
    assert rows.reattached(_reattach()) is None


def test_an_operation_without_id_and_malformed_bytes() -> None:
    counted: Counted = []
    rows = ScanRows(lambda policy, n: counted.append((policy, n)))
    watch = rows.executed(_request(operation_id=""), "fail")
    watch(b"\xff\xff\xff")
    watch(_metrics((SCAN_NODE, 4))[:-3])
    watch(_metrics((SCAN_NODE, 4)))
    assert counted == [("fail", 4)]
