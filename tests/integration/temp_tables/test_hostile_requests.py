"""Requests that once lost data or left the gateway half-done, from the stock pyspark client.

Each test sends through the real gateway what a careless or hostile client
can send: another session's id spelled differently, text after a statement,
a plugin message where no relation belongs, a view of a temp table dropped
or changed behind the gateway's back. The gateway refuses before acting, or
acts on the whole request; no other session's data is touched.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import grpc
import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import session_folder, table_folders, temp_table_names


def _attached(gateway: Gateway, session_id: str, user_id: str | None) -> SparkSession:
    url = f"{gateway.address}/;session_id={session_id}"
    if user_id:
        url += f";user_id={user_id}"
    return SparkSession.builder.remote(url).create()


def _status(raised: pytest.ExceptionInfo[SparkConnectGrpcException]) -> grpc.StatusCode:
    code = raised.value.getGrpcStatusCode()
    assert code is not None
    return code


@pytest.mark.parametrize("user_id", [None, "mallory"], ids=["same-user", "other-user"])
def test_a_release_with_another_spelling_of_a_session_id_is_refused_and_deletes_nothing(
    spark: SparkSession, gateway: Gateway, workspace: Path, user_id: str | None
) -> None:
    spark.sql("CREATE TEMPORARY TABLE victim AS SELECT id FROM range(5)")
    folder = session_folder(workspace, spark)
    spelled = spark.client._session_id.upper()
    attacker = _attached(gateway, spelled, user_id or spark.client._user_id)
    refused: SparkConnectGrpcException | None = None
    try:
        attacker.client.release_session()
    except SparkConnectGrpcException as exc:
        refused = exc
    finally:
        attacker.release_session_on_close = False
        attacker.stop()
    assert folder.is_dir(), "a release under another spelling deleted the session's files"
    assert len(table_folders(workspace, spark)) == 1
    assert connect_plugin.temp_table(spark, "victim").count() == 5
    assert temp_table_names(spark) == ["victim"]
    assert refused is not None
    assert refused.getGrpcStatusCode() == grpc.StatusCode.INVALID_ARGUMENT
    assert spelled in str(refused)


def test_a_session_with_a_non_canonical_id_can_make_no_temp_table(
    gateway: Gateway, workspace: Path
) -> None:
    spelled = str(uuid.uuid4()).upper()
    session = _attached(gateway, spelled, None)
    try:
        with pytest.raises(SparkConnectGrpcException) as raised:
            session.sql("CREATE TEMPORARY TABLE t AS SELECT 1 AS x").collect()
        assert _status(raised) == grpc.StatusCode.INVALID_ARGUMENT
        assert spelled in str(raised.value)
        assert "lower-case" in str(raised.value)
    finally:
        session.release_session_on_close = False
        session.stop()
    assert not (workspace / spelled.lower()).exists()
