"""Spark's errors as the client gets them: a changed session names no details to fetch."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from connect_plugin.server.transport.spark_status import (
    SESSION_CHANGED,
    STATUS_DETAILS_KEY,
    Status,
    session_changed_status,
    upstream_status,
)
from tests.unit.server.spark_errors import rpc_error

MESSAGE = (
    "[INVALID_HANDLE.SESSION_CHANGED] The handle 2f58fbd7 is invalid. The existing Spark "
    "server driver instance has restarted. Please reconnect. SQLSTATE: 08003"
)


def _sent(error_class: str) -> Status:
    info = error_details_pb2.ErrorInfo(
        reason="org.apache.spark.SparkSQLException",
        domain="org.apache.spark",
        metadata={"errorClass": error_class, "errorId": "e-1", "sqlState": "08003"},
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=13, message=MESSAGE, details=[detail])
    trailers = (("x-other", "kept"), (STATUS_DETAILS_KEY, status.SerializeToString()))
    return Status(grpc.StatusCode.INTERNAL, MESSAGE, trailers)


def _info(sent: Status) -> error_details_pb2.ErrorInfo:
    packed = dict(sent.trailing_metadata)[STATUS_DETAILS_KEY]
    assert isinstance(packed, bytes)
    info = error_details_pb2.ErrorInfo()
    assert status_pb2.Status.FromString(packed).details[0].Unpack(info)
    return info


def test_a_changed_session_names_no_error_to_fetch_and_keeps_the_rest() -> None:
    """pyspark closes its session on this class and then fetched the details through it,
    raising NO_ACTIVE_SESSION instead of Spark's error."""
    given = _sent(SESSION_CHANGED)
    relayed = session_changed_status(given)
    assert (relayed.code, relayed.details) == (given.code, given.details)
    assert dict(relayed.trailing_metadata)["x-other"] == "kept"
    info = _info(relayed)
    assert dict(info.metadata) == {"errorClass": SESSION_CHANGED, "sqlState": "08003"}
    assert info.reason == "org.apache.spark.SparkSQLException"


def test_other_errors_keep_their_details_to_fetch() -> None:
    given = _sent("INVALID_HANDLE.SESSION_NOT_FOUND")
    assert session_changed_status(given) is given
    assert _info(given).metadata["errorId"] == "e-1"


def test_sparks_own_session_changed_is_relayed_but_for_its_error_id() -> None:
    """The error Spark 4.3 sends (recorded in spark_errors.json): everything as sent, the
    ErrorInfo without the errorId; every other class is relayed exactly (test_status)."""
    error = rpc_error(SESSION_CHANGED, "2f58fbd7")
    relayed = upstream_status(error)
    assert (relayed.code, relayed.details) == (error.code(), error.details())
    sent = Status(error.code(), error.details() or "", tuple(error.trailing_metadata()))
    assert "errorId" in _info(sent).metadata
    expected = dict(_info(sent).metadata)
    del expected["errorId"]
    assert dict(_info(relayed).metadata) == expected
    others = [item for item in relayed.trailing_metadata if item[0] != STATUS_DETAILS_KEY]
    assert others == [item for item in sent.trailing_metadata if item[0] != STATUS_DETAILS_KEY]
