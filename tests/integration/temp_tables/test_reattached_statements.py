"""A statement the gateway runs itself outlives the client's deadline for one call.

pyspark gives each ExecutePlan stream a deadline (10 minutes in 4.3) and
reattaches when it passes, as Spark lets it for its own operations; a CTTAS
or a row change that lasts longer goes on, and the reattached stream gets
its answer. Here the deadline is 1 s and the statements take several.
An INSERT that Spark runs is Spark's to keep, and the gateway's follow-up
(the new files made private, the rows counted again) waits for the stream
that reattaches to it and sees it end.
"""

from __future__ import annotations

import stat
import time
import uuid
from collections.abc import Callable

import grpc
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.client.core import RpcDeadlines
from pyspark.sql.connect.proto import base_pb2_grpc

from connect_plugin.server.gateway import Gateway
from tests.integration.support import pause, reattach_of, reattachable, release_all_of

DEADLINE_S = 1.0
ROWS = 60
PAUSE = pause(100)
"""Each of the two tasks that write or change ``ROWS`` rows takes 3 s or more, well over
``DEADLINE_S`` and over the time a release takes to reach the gateway, while the machine
does other work."""
RELEASE_TIMEOUT_S = 30.0
LONG_ROWS = (
    f"SELECT id, sha2(CAST(id AS STRING), 256) AS h FROM range(0, {ROWS}, 1, 2) WHERE {PAUSE}"
)


def _statement(spark: SparkSession, sql: str) -> spark_proto.ExecutePlanRequest:
    """A reattachable ExecutePlan of ``sql`` in ``spark``'s session, sent by a raw client."""
    return reattachable(spark.session_id, spark.client._user_id or "", sql)  # type: ignore[attr-defined]


def _short_deadlines(spark: SparkSession) -> None:
    """The client's deadline for one ExecutePlan or ReattachExecute call: ``DEADLINE_S``."""
    spark.client._rpc_deadlines = RpcDeadlines(  # type: ignore[attr-defined]
        reattachable_execute_plan=DEADLINE_S, reattach_execute=DEADLINE_S
    )


def _outlasting_the_deadline(gateway: Gateway, what: str, write: Callable[[], object]) -> None:
    """Run ``write``, which must take longer than the deadline and end on a reattached
    stream."""
    before = gateway.calls("ReattachExecute")
    began = time.monotonic()
    write()
    assert time.monotonic() - began > DEADLINE_S, f"{what} ended within the deadline"
    assert gateway.calls("ReattachExecute") - before >= 1, what


def test_a_write_longer_than_the_clients_deadline_ends_on_a_reattached_stream(
    spark: SparkSession, gateway: Gateway
) -> None:
    _short_deadlines(spark)
    before = gateway.calls("ReattachExecute")
    began = time.monotonic()
    created = spark.sql(f"CREATE TEMPORARY TABLE long_write AS {LONG_ROWS}").collect()
    took = time.monotonic() - began
    assert [tuple(r) for r in created] == [("long_write", ROWS)]
    updated = spark.sql(f"UPDATE long_write SET h = upper(h) WHERE {PAUSE} AND id % 3 = 0").collect()
    assert [tuple(r) for r in updated] == [(ROWS // 3,)]
    assert took > DEADLINE_S, "the CTTAS ended within the deadline; make ROWS larger"
    assert gateway.calls("ReattachExecute") - before >= 2
    counts = spark.sql("SELECT count(*) AS n, count_if(h = upper(h)) AS up FROM long_write").first()
    assert counts is not None
    assert (counts.n, counts.up) == (ROWS, ROWS // 3)
    assert gateway.detached is not None
    assert len(gateway.detached) == 0


def test_a_release_of_a_statement_no_stream_follows_stops_it_at_once(
    spark: SparkSession, gateway: Gateway
) -> None:
    assert gateway.detached is not None
    request = _statement(spark, f"CREATE TEMPORARY TABLE released AS {LONG_ROWS}")
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stub.ExecutePlan(request, timeout=DEADLINE_S):
                pass
        assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert len(gateway.detached) == 1, "the CTTAS ended within the deadline"
        release = release_all_of(request)
        stub.ReleaseExecute(release)
    assert len(gateway.detached) == 0
    assert gateway.sessions is not None
    session = gateway.sessions.find(request.user_context.user_id, request.session_id)
    assert session is not None
    deadline = time.monotonic() + RELEASE_TIMEOUT_S
    while session.writes or session.creating:
        assert time.monotonic() < deadline, "the released CTTAS still writes"
        time.sleep(0.1)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table("released").schema  # noqa: B018


def test_an_insert_longer_than_the_clients_deadline_is_followed_up_on_its_reattached_stream(
    spark: SparkSession, gateway: Gateway
) -> None:
    spark.sql("CREATE TEMPORARY TABLE long_insert (id BIGINT, h STRING)").collect()
    _short_deadlines(spark)
    _outlasting_the_deadline(
        gateway, "the INSERT", lambda: spark.sql(f"INSERT INTO long_insert {LONG_ROWS}").collect()
    )
    shown = {r["name"]: r for r in spark.sql("SHOW TEMPORARY TABLES").collect()}
    assert shown["long_insert"]["rows"] == ROWS
    assert gateway.sessions is not None
    session = gateway.sessions.find(spark.client._user_id or "", spark.client._session_id)  # type: ignore[attr-defined]
    assert session is not None
    files = [p for p in session.tables["long_insert"].location.rglob("*") if p.is_file()]
    assert files
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {oct(0o600)}
    assert gateway.follow_ups is not None
    assert len(gateway.follow_ups) == 0


def test_a_reattach_that_overtakes_the_end_of_the_first_stream_still_follows_the_insert_up(
    spark: SparkSession, gateway: Gateway
) -> None:
    """The client reattaches while the gateway has not yet seen its first stream end (as a
    client whose deadline passed does): the reattached stream that sees Spark's INSERT end
    makes its files private and counts its rows."""
    spark.sql("CREATE TEMPORARY TABLE overtaken (id BIGINT, h STRING)").collect()
    slow = LONG_ROWS.replace(PAUSE, pause(200))
    request = _statement(spark, f"INSERT INTO overtaken {slow}")
    reattach = reattach_of(request)
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        first = stub.ExecutePlan(request)
        time.sleep(1.5)
        reattached = stub.ReattachExecute(reattach)
        time.sleep(0.5)
        first.cancel()
        kinds = [r.WhichOneof("response_type") for r in reattached]
        release = release_all_of(request)
        stub.ReleaseExecute(release)
    assert kinds[-1] == "result_complete"
    shown = {r["name"]: r for r in spark.sql("SHOW TEMPORARY TABLES").collect()}
    assert shown["overtaken"]["rows"] == ROWS
    assert gateway.sessions is not None
    session = gateway.sessions.find(request.user_context.user_id, request.session_id)
    assert session is not None
    files = [p for p in session.tables["overtaken"].location.rglob("*") if p.is_file()]
    assert files
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {oct(0o600)}
    assert gateway.follow_ups is not None
    assert len(gateway.follow_ups) == 0


def test_inserts_the_gateway_runs_outlive_the_clients_deadline(
    spark: SparkSession, gateway: Gateway
) -> None:
    spark.sql("CREATE TEMPORARY TABLE run_inserts (id BIGINT, h STRING) USING csv").collect()
    _short_deadlines(spark)
    writes = {
        "a checked INSERT": lambda: spark.sql(f"INSERT INTO run_inserts {LONG_ROWS}").collect(),
        "writeTo().append()": lambda: spark.sql(LONG_ROWS).writeTo("run_inserts").append(),
        "INSERT OVERWRITE": lambda: spark.sql(
            f"INSERT OVERWRITE run_inserts {LONG_ROWS}"
        ).collect(),
    }
    expected = {"a checked INSERT": ROWS, "writeTo().append()": 2 * ROWS, "INSERT OVERWRITE": ROWS}
    for what, write in writes.items():
        _outlasting_the_deadline(gateway, what, write)
        shown = {r["name"]: r for r in spark.sql("SHOW TEMPORARY TABLES").collect()}
        assert shown["run_inserts"]["rows"] == expected[what], what
        assert spark.table("run_inserts").count() == expected[what], what
    assert gateway.detached is not None
    assert len(gateway.detached) == 0


def test_a_stream_cut_within_the_gateways_answer_gets_the_rest_on_reattach(
    spark: SparkSession, gateway: Gateway
) -> None:
    """Spark keeps an operation's responses until the client releases them; so does the
    gateway with an answer it gave itself, for a client whose stream ended within it."""
    request = _statement(spark, "CREATE TEMPORARY TABLE cut AS SELECT 1 AS a")
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)

        def reattached(last_response_id: str | None) -> list[str]:
            reattach = reattach_of(request, last_response_id)
            return [r.WhichOneof("response_type") for r in stub.ReattachExecute(reattach)]

        stream = stub.ExecutePlan(request)
        answer = next(r for r in stream if r.HasField("sql_command_result"))
        stream.cancel()
        assert reattached(answer.response_id) == ["result_complete"]
        assert reattached(None) == ["sql_command_result", "result_complete"]
        release = release_all_of(request)
        stub.ReleaseExecute(release)
        with pytest.raises(grpc.RpcError, match="OPERATION_NOT_FOUND"):
            reattached(None)
    assert [tuple(r) for r in spark.table("cut").collect()] == [(1,)]


@pytest.mark.parametrize("state", ["answered", "running"])
def test_a_released_session_keeps_nothing_for_a_reattach(gateway: Gateway, state: str) -> None:
    """After ReleaseSession, a reattach to one of the session's operations gets Spark's
    answer for a closed session, not an answer the gateway kept nor a statement of the
    gateway's still running."""
    query = "SELECT 1" if state == "answered" else LONG_ROWS
    request = reattachable(str(uuid.uuid4()), "releasing", f"CREATE TEMPORARY TABLE gone AS {query}")
    key = (request.user_context.user_id, request.session_id, request.operation_id)
    reattach = reattach_of(request)
    assert gateway.answers is not None
    assert gateway.detached is not None
    kept = gateway.answers if state == "answered" else gateway.detached
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        if state == "answered":
            kinds = [r.WhichOneof("response_type") for r in stub.ExecutePlan(request)]
            assert kinds[-2:] == ["sql_command_result", "result_complete"]
        else:
            with pytest.raises(grpc.RpcError, match="Deadline"):
                list(stub.ExecutePlan(request, timeout=DEADLINE_S))
        assert kept.find(key) is not None
        stub.ReleaseSession(
            spark_proto.ReleaseSessionRequest(
                session_id=request.session_id, user_context=request.user_context
            )
        )
        assert kept.find(key) is None
        with pytest.raises(grpc.RpcError) as refused:
            list(stub.ReattachExecute(reattach))
    assert "SESSION_CLOSED" in str(refused.value.details())  # type: ignore[attr-defined]
