"""Ordinary PySpark plans of any shape reach the plugin: deep ones, and plugin relations nested.

A loop of ``withColumn`` builds a plan as deep as the loop is long, and a
plugin relation may sit at its bottom or inside another plugin relation's
input; the gateway must find and handle each one, up to the depth Spark
itself accepts.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import grpc
import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect import proto as spark_proto

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import temp_table_names
from tests.unit.server.wire import nested_projections

LOOP = 60
DEEPEST_LOOP = 300
"""withColumn calls pyspark itself can still build a plan for (about 600 message levels)."""
HOSTILE_DEPTH = 40_000


def test_sixty_with_columns_over_a_temp_table(spark: SparkSession, gateway: Gateway) -> None:
    spark.sql("CREATE TEMPORARY TABLE deep_src AS SELECT id FROM range(3)")
    frame = connect_plugin.temp_table(spark, "deep_src")
    for i in range(LOOP):
        frame = frame.withColumn(f"c{i}", F.col("id") + i)
    assert len(frame.columns) == LOOP + 1
    rows = frame.orderBy("id").collect()
    assert [(r.id, r[f"c{LOOP - 1}"]) for r in rows] == [(i, i + LOOP - 1) for i in range(3)]


def test_a_plugin_relation_at_the_bottom_of_a_plan_as_deep_as_pyspark_builds(
    spark: SparkSession,
) -> None:
    spark.sql("CREATE TEMPORARY TABLE deepest_src AS SELECT id FROM range(4)")
    frame = connect_plugin.temp_table(spark, "deepest_src")
    for i in range(DEEPEST_LOOP):
        frame = frame.withColumn("id", F.col("id") + 1) if i % 2 else frame.filter("id >= 0")
    row = connect_plugin.create_temp_table(frame, "deepest_copy")
    assert tuple(row) == ("deepest_copy", 4)
    assert sorted(r.id for r in spark.table("deepest_copy").collect()) == [
        i + DEEPEST_LOOP // 2 for i in range(4)
    ]


def test_a_plan_deeper_than_spark_accepts_is_refused_by_spark_and_the_gateway_serves_on(
    gateway: Gateway, spark: SparkSession
) -> None:
    request = spark_proto.ExecutePlanRequest(session_id=str(uuid.uuid4()))
    request.user_context.user_id = "deep"
    wire = nested_projections(HOSTILE_DEPTH, request)
    with grpc.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
        call = channel.unary_stream(
            "/spark.connect.SparkConnectService/ExecutePlan",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        with pytest.raises(grpc.RpcError) as raised:
            list(call(wire, timeout=60))
    assert raised.value.code() != grpc.StatusCode.UNAVAILABLE, raised.value
    assert spark.range(3).count() == 3


def test_plugin_relations_in_each_others_input(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("CREATE TEMPORARY TABLE nest_src AS SELECT id FROM range(5)")
    row = connect_plugin.create_temp_table(
        connect_plugin.temp_table(spark, "nest_src").where("id > 1"), "nest_copy"
    )
    assert tuple(row) == ("nest_copy", 3)
    files = tmp_path / "json"
    files.mkdir()
    (files / "a.json").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(7)))
    scanned = connect_plugin.scan(spark, str(files), format="json")
    row = connect_plugin.create_temp_table(scanned, "nest_scanned", format="json")
    assert tuple(row) == ("nest_scanned", 7)
    assert sorted(r.n for r in spark.table("nest_scanned").collect()) == list(range(7))
    counted = connect_plugin.create_temp_table(scanned.groupBy().count(), "nest_count")
    assert tuple(counted) == ("nest_count", 1)
    assert spark.table("nest_count").first()[0] == 7  # type: ignore[index]
    assert sorted(temp_table_names(spark)) == [
        "nest_copy",
        "nest_count",
        "nest_scanned",
        "nest_src",
    ]


def test_a_plugin_relation_inside_a_failing_one_leaves_nothing(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE nest_taken AS SELECT 1 AS x")
    with pytest.raises(SparkConnectGrpcException, match=r"\[nest_missing\]"):
        connect_plugin.create_temp_table(
            connect_plugin.temp_table(spark, "nest_missing"), "nest_new"
        )
    assert temp_table_names(spark) == ["nest_taken"]
