"""A stock pyspark client gets the same answers through the gateway as from Spark."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest
from google.protobuf import wrappers_pb2
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc
from pyspark.sql.types import StringType

from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation
from connect_plugin.server.gateway import Gateway
from tests.integration.support import SENDER_MAX_STREAM_SIZE, Upstream, new_session

QUERIES: dict[str, Callable[[SparkSession], Any]] = {
    "range": lambda s: s.range(0, 1000, 7).collect(),
    "sql": lambda s: s.sql(
        "SELECT id % 3 AS k, count(*) AS n, sum(id) AS total FROM range(10000) GROUP BY 1 ORDER BY 1"
    ).collect(),
    "createDataFrame": lambda s: s.createDataFrame(
        [(1, "a", 1.5, [1, 2]), (2, None, None, []), (3, "ünï", -0.25, None)],
        "id int, s string, d double, xs array<int>",
    ).collect(),
    "toArrow": lambda s: s.range(50_000)
    .selectExpr("id", "cast(id AS string) AS s", "id / 3 AS d", "array(id, id + 1) AS xs")
    .toArrow(),
    "toPandas": lambda s: s.range(20_000)
    .selectExpr("id", "date_add(date'2020-01-01', cast(id % 400 AS int)) AS day")
    .toPandas()
    .to_dict("list"),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_results_equal_direct_and_through_gateway(
    name: str, spark: SparkSession, direct: SparkSession
) -> None:
    through_gateway = QUERIES[name](spark)
    straight = QUERIES[name](direct)
    if isinstance(straight, pa.Table):
        assert through_gateway.equals(straight)
        assert straight.num_rows == 50_000
    else:
        assert through_gateway == straight
        assert straight


def test_analysis_exception_keeps_class_error_class_and_message(
    spark: SparkSession, direct: SparkSession
) -> None:
    query = "SELECT no_such_column FROM range(3)"
    with pytest.raises(AnalysisException) as via_gateway:
        spark.sql(query).collect()
    with pytest.raises(AnalysisException) as via_direct:
        direct.sql(query).collect()
    assert type(via_gateway.value) is type(via_direct.value)
    assert via_gateway.value.getCondition() == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert via_gateway.value.getCondition() == via_direct.value.getCondition()
    assert via_gateway.value.getSqlState() == via_direct.value.getSqlState()
    assert via_gateway.value.getMessageParameters() == via_direct.value.getMessageParameters()
    assert str(via_gateway.value).splitlines()[0] == str(via_direct.value).splitlines()[0]


def test_result_stream_reattached_midway_completes(
    spark: SparkSession, gateway: Gateway, upstream: Upstream
) -> None:
    if not upstream.embedded:
        pytest.skip("needs the upstream started with a small senderMaxStreamSize")
    before = gateway.calls("ReattachExecute")
    table = spark.range(400_000).selectExpr("id", "repeat('x', 20) AS pad").toArrow()
    assert table.num_rows == 400_000
    assert table.column("id").to_pylist() == list(range(400_000))
    assert table.nbytes > 4 * SENDER_MAX_STREAM_SIZE
    assert gateway.calls("ReattachExecute") - before >= 3


def test_add_artifacts_py_file_used_by_udf(
    spark: SparkSession, tmp_path: Path, unique_name: str, gateway: Gateway
) -> None:
    module = tmp_path / f"{unique_name}_helper.py"
    module.write_text("def shout(s):\n    return s.upper() + '!'\n")
    before = gateway.calls("AddArtifacts")
    spark.addArtifacts(str(module), pyfile=True)
    assert gateway.calls("AddArtifacts") > before

    from pyspark.sql.functions import udf

    module_name = module.stem

    def shout_with_artifact(value):  # type: ignore[no-untyped-def]
        import importlib

        return importlib.import_module(module_name).shout(value)

    shout = udf(shout_with_artifact, StringType())

    rows = spark.createDataFrame([("hi",), ("yo",)], "s string").select(shout("s").alias("r"))
    assert [row.r for row in rows.collect()] == ["HI!", "YO!"]


def test_interrupt_all_stops_a_running_job(spark: SparkSession) -> None:
    outcome: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            spark.range(0, 10**12, 1, 2).selectExpr("sum(id * 7 % 13)").collect()
            outcome["result"] = "finished"
        except SparkConnectException as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    worker = threading.Thread(target=run)
    worker.start()
    interrupted: list[str] = []
    deadline = time.monotonic() + 30
    while not interrupted and time.monotonic() < deadline:
        time.sleep(0.5)
        interrupted = spark.interruptAll()
    worker.join(60)
    assert not worker.is_alive()
    assert interrupted, "no operation was running to interrupt"
    assert "error" in outcome, outcome
    assert "OPERATION_CANCELED" in str(outcome["error"]) or "cancel" in str(outcome["error"]).lower()


def test_clone_session_sees_the_original_temp_views(spark: SparkSession, unique_name: str) -> None:
    spark.range(3).createOrReplaceTempView(unique_name)
    clone = spark.cloneSession()
    try:
        assert clone.session_id != spark.session_id
        assert [r.id for r in clone.table(unique_name).collect()] == [0, 1, 2]
        clone.range(1).createOrReplaceTempView(unique_name + "_clone_only")
        assert not spark.catalog.tableExists(unique_name + "_clone_only")
    finally:
        clone.stop()
    assert spark.table(unique_name).count() == 3


def test_stop_releases_the_session_upstream(gateway: Gateway, upstream: Upstream) -> None:
    session = new_session(gateway.address)
    session.range(1).collect()
    session_id = session.session_id
    before = gateway.calls("ReleaseSession")
    session.stop()
    assert gateway.calls("ReleaseSession") == before + 1
    reattached = SparkSession.builder.remote(f"{upstream.address}/;session_id={session_id}").create()
    try:
        with pytest.raises(SparkConnectException, match="SESSION_CLOSED"):
            reattached.range(1).collect()
    finally:
        reattached.client.close()


def test_eight_concurrent_sessions_stay_apart(gateway: Gateway) -> None:
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            session = new_session(gateway.address)
            try:
                session.range(i * 1000, i * 1000 + 500).createOrReplaceTempView("mine")
                for _ in range(3):
                    row = session.sql("SELECT min(id) AS lo, count(*) AS n FROM mine").first()
                    results.setdefault(i, []).append((row.lo, row.n, session.session_id))
            finally:
                session.stop()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert sorted(results) == list(range(8))
    session_ids = {runs[0][2] for runs in results.values()}
    assert len(session_ids) == 8
    for i, runs in results.items():
        assert all((lo, n) == (i * 1000, 500) for lo, n, _ in runs)


class _Extension(PluginRelation):
    def __init__(self, message: Message) -> None:
        super().__init__()
        self._message = message

    def to_plugin_message(self, client: Any) -> Message:
        return self._message


def test_unknown_extension_is_invalid_argument_naming_the_type(spark: SparkSession) -> None:
    df = DataFrame(_Extension(wrappers_pb2.StringValue(value="x")), spark)
    with pytest.raises(SparkConnectException) as raised:
        df.collect()
    assert raised.value.getGrpcStatusCode() == grpc.StatusCode.INVALID_ARGUMENT
    assert "google.protobuf.StringValue" in str(raised.value)


def test_plugin_message_for_another_session_is_permission_denied(spark: SparkSession) -> None:
    forged = proto.ListTempTables(session_id="00000000-0000-0000-0000-000000000000")
    with pytest.raises(SparkConnectException) as raised:
        DataFrame(_Extension(forged), spark).collect()
    assert raised.value.getGrpcStatusCode() == grpc.StatusCode.PERMISSION_DENIED
    assert spark.session_id in str(raised.value)


def test_health_service_reports_serving(gateway: Gateway) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "spark.connect.SparkConnectService"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_deadline_reaches_upstream(gateway: Gateway, unique_name: str) -> None:
    request = base_pb2.ExecutePlanRequest(
        session_id="6f2b8e7c-0d43-4a53-9a39-1f1c1b7e5a11",
        user_context=base_pb2.UserContext(user_id="deadline"),
    )
    request.plan.root.sql.query = "SELECT sum(id % 7) FROM range(0, 1000000000000, 1, 2)"
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as raised:
            for _ in stub.ExecutePlan(request, timeout=1.5):
                pass
        assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 10
        release = base_pb2.ReleaseSessionRequest(
            session_id=request.session_id, user_context=request.user_context
        )
        stub.ReleaseSession(release, timeout=30)
