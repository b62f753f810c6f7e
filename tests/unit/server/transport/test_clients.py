"""The Scala client is told from pyspark and others by its user agent."""

from __future__ import annotations

from pyspark.sql.connect.proto import base_pb2

from connect_plugin.server.transport.clients import is_scala_client

SCALA = "_SPARK_CONNECT_SCALA spark/4.3.0 scala/2.13.18 jvm/17.0.15 os/linux"
PYTHON = "_SPARK_CONNECT_PYTHON spark/4.3.0 os/linux python/3.11.2"
SCALA_REQUEST = base_pb2.ExecutePlanRequest(client_type=SCALA)
PYSPARK_REQUEST = base_pb2.ExecutePlanRequest(client_type=PYTHON)
"""Requests as the user agents in the pyspark wheel send them (Spark 4.3)."""


def test_the_scala_client_is_known_by_its_scala_word() -> None:
    assert is_scala_client(SCALA_REQUEST)
    assert is_scala_client(
        base_pb2.ReattachExecuteRequest(client_type="my-app " + SCALA.split(" ", 1)[1])
    )
    assert is_scala_client(base_pb2.FetchErrorDetailsRequest(client_type=SCALA))


def test_other_clients_and_no_request_are_not() -> None:
    assert not is_scala_client(PYSPARK_REQUEST)
    assert not is_scala_client(base_pb2.ExecutePlanRequest())
    assert not is_scala_client(None)
