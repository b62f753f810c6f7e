"""Every error the gateway makes itself carries a complete ErrorInfo that pyspark types.

pyspark's own ``convert_exception`` stands for the client: it picks the
exception from ``classes`` and reads ``errorClass``, ``sqlState`` and
``messageParameters``. The Scala client reads the same metadata but formats
most typed exceptions from Spark's templates, so for it alone an error class
of ours they lack becomes one they have (``test_scala_client.py`` runs the
real client).
"""

from __future__ import annotations

import json

import grpc
import pytest
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.errors import AnalysisException, ParseException, SparkRuntimeException
from pyspark.errors.exceptions.connect import SparkException, convert_exception
from pyspark.sql.connect.proto import base_pb2

from connect_plugin import errors
from connect_plugin.server.sessions.registry import admit_request, spark_refuses
from connect_plugin.server.statements.recognition import Cursor, SqlText
from connect_plugin.server.transport import status as status_module
from connect_plugin.server.transport.spark_status import (
    MESSAGE_ONLY_CLASS,
    STATUS_DETAILS_KEY,
    Status,
)
from connect_plugin.server.transport.status import emitted, error_class_of, to_grpc_status
from tests.unit.server.transport.test_clients import PYSPARK_REQUEST, SCALA_REQUEST

CANONICAL = "3d4a2c9e-1b7f-4c55-8a0e-5f6b7c8d9e0f"


def _info(status: Status) -> tuple[status_pb2.Status, error_details_pb2.ErrorInfo]:
    (packed,) = [value for key, value in status.trailing_metadata if key == STATUS_DETAILS_KEY]
    assert isinstance(packed, bytes)
    rpc = status_pb2.Status.FromString(packed)
    info = error_details_pb2.ErrorInfo()
    assert rpc.details[0].Unpack(info)
    return rpc, info


def _client_exception(exc: Exception) -> Exception:
    status = to_grpc_status(exc)
    rpc, info = _info(status)
    return convert_exception(info, rpc.message, None, False, status.code)


def _every_error() -> list[errors.ConnectPluginError]:
    """One instance of every error class of the hierarchy."""
    found: list[errors.ConnectPluginError] = []
    pending: list[type[errors.ConnectPluginError]] = [errors.ConnectPluginError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not errors.UpstreamFailed:
            found.append(cls("what went wrong, and what to do"))
    return found


@pytest.mark.parametrize("exc", _every_error(), ids=lambda e: type(e).__name__)
def test_every_error_of_ours_carries_a_complete_error_info(exc: Exception) -> None:
    _, info = _info(to_grpc_status(exc))
    classes = json.loads(info.metadata["classes"])
    assert classes[-3:] == ["java.lang.Exception", "java.lang.Throwable", "java.lang.Object"]
    assert info.reason == classes[0]
    assert info.metadata["errorClass"] == error_class_of(exc)
    assert len(info.metadata["sqlState"]) == 5
    assert json.loads(info.metadata["messageParameters"])
    raised = _client_exception(exc)
    assert raised.getCondition() == info.metadata["errorClass"]  # type: ignore[attr-defined]
    assert raised.getSqlState() == info.metadata["sqlState"]  # type: ignore[attr-defined]
    assert "what went wrong, and what to do" in str(raised)


def test_a_syntax_error_in_a_recognised_statement_is_a_parse_exception() -> None:
    text = "CREATE TEMPORARY TABLE t (a INT AS SELECT 1"
    cursor = Cursor.over(SqlText(text, lambda _: None))  # type: ignore[arg-type, return-value]
    cursor.at = 7
    exc = cursor.error("expected ')' after the columns")
    raised = _client_exception(exc)
    assert isinstance(raised, ParseException)
    assert raised.getCondition() == "PARSE_SYNTAX_ERROR"
    assert raised.getSqlState() == "42601"
    assert raised.getMessageParameters() == {
        "error": "'AS'",
        "hint": ": expected ')' after the columns",
    }
    assert "expected ')' after the columns at [AS] (line 1, column" in str(raised)


def test_a_name_problem_is_an_analysis_exception() -> None:
    raised = _client_exception(errors.TempTableExists("[t] already exists"))
    assert isinstance(raised, AnalysisException)
    assert not isinstance(raised, ParseException)
    assert raised.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_EXISTS"
    assert raised.getSqlState() == "42P07"


def _spark_error(spark_class: str, classes: list[str], sql_state: str) -> grpc.aio.AioRpcError:
    """Spark's error as a gRPC client of Spark gets it (ErrorUtils' shape)."""
    info = error_details_pb2.ErrorInfo(
        reason=classes[0],
        domain="org.apache.spark",
        metadata={
            "classes": json.dumps(classes),
            "errorClass": spark_class,
            "sqlState": sql_state,
            "messageParameters": json.dumps({"objectName": "`nope`"}),
            "errorId": "5c1ab4a5-0000-4000-8000-000000000000",
        },
    )
    detail = AnyProto()
    detail.Pack(info)
    message = f"[{spark_class}] Spark's words. SQLSTATE: {sql_state}"
    status = rpc_status.to_status(
        status_pb2.Status(code=code_pb2.INTERNAL, message=message, details=[detail])
    )
    return grpc.aio.AioRpcError(
        status.code, grpc.aio.Metadata(), grpc.aio.Metadata(*status.trailing_metadata), message
    )


def _caused_by_spark(spark_class: str, classes: list[str], sql_state: str) -> Exception:
    error = _spark_error(spark_class, classes, sql_state)
    upstream = errors.UpstreamFailed("Spark's words", error_class=spark_class, status=error)
    try:
        raise errors.TempTableQueryFailed(
            f"Temporary table [t] was not created: [{spark_class}] Spark's words"
        ) from upstream
    except errors.TempTableQueryFailed as exc:
        return exc


def test_an_error_spark_caused_carries_sparks_class_and_exception() -> None:
    exc = _caused_by_spark(
        "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION", list(status_module.ANALYSIS_EXCEPTION), "42703"
    )
    raised = _client_exception(exc)
    assert isinstance(raised, AnalysisException)
    assert raised.getCondition() == "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION"
    assert raised.getSqlState() == "42703"
    assert raised.getMessageParameters() == {"objectName": "`nope`"}
    assert str(raised).startswith("Temporary table [t] was not created: [UNRESOLVED_COLUMN")
    assert error_class_of(exc) == "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION"


def test_a_runtime_error_spark_caused_stays_a_runtime_error() -> None:
    classes = [
        "org.apache.spark.SparkRuntimeException",
        "java.lang.RuntimeException",
        "java.lang.Exception",
        "java.lang.Throwable",
        "java.lang.Object",
    ]
    raised = _client_exception(_caused_by_spark("USER_RAISED_EXCEPTION", classes, "P0001"))
    assert isinstance(raised, SparkRuntimeException)


def test_an_error_of_ours_without_sparks_class_stays_ours() -> None:
    raised = _client_exception(errors.TempTableQueryFailed("the write lost its files"))
    assert isinstance(raised, SparkException)
    assert raised.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_QUERY_FAILED"


SCALA_FORMATS_FROM_TEMPLATES = (
    "org.apache.spark.sql.AnalysisException",
    "org.apache.spark.sql.catalyst.parser.ParseException",
    "org.apache.spark.SparkRuntimeException",
    "org.apache.spark.SparkUnsupportedOperationException",
)
"""The exceptions of ours the Scala client 4.3 builds from the template of ``errorClass``
(seen in its ``GrpcExceptionConverter``); it builds the others as ``SparkException`` around the
status message."""


@pytest.mark.parametrize("exc", _every_error(), ids=lambda e: type(e).__name__)
def test_pyspark_gets_the_very_status_it_always_got(exc: Exception) -> None:
    assert to_grpc_status(exc, PYSPARK_REQUEST) == to_grpc_status(exc)


@pytest.mark.parametrize("exc", _every_error(), ids=lambda e: type(e).__name__)
def test_the_scala_client_gets_a_class_its_templates_know_and_the_rest_unchanged(
    exc: Exception,
) -> None:
    pyspark, scala = to_grpc_status(exc), to_grpc_status(exc, SCALA_REQUEST)
    assert (scala.code, scala.details) == (pyspark.code, pyspark.details)
    (pyspark_rpc, pyspark_info), (scala_rpc, scala_info) = _info(pyspark), _info(scala)
    assert scala_rpc.message == pyspark_rpc.message
    assert scala_info.reason == pyspark_info.reason
    for key in ("classes", "sqlState"):
        assert scala_info.metadata[key] == pyspark_info.metadata[key]
    ours = pyspark_info.metadata["errorClass"].startswith("CONNECT_PLUGIN.")
    if ours and pyspark_info.reason in SCALA_FORMATS_FROM_TEMPLATES:
        assert scala_info.metadata["errorClass"] == MESSAGE_ONLY_CLASS
        parameters = json.loads(scala_info.metadata["messageParameters"])
        assert parameters == {"message": pyspark_rpc.message}
        assert parameters["message"].startswith(f"[{pyspark_info.metadata['errorClass']}] ")
    else:
        assert scala_info == pyspark_info


def test_a_taken_temp_table_name_reaches_scala_as_an_analysis_exception_it_can_format() -> None:
    taken = errors.TempTableExists("Temporary table [t] already exists")
    _, info = _info(to_grpc_status(taken, SCALA_REQUEST))
    assert json.loads(info.metadata["classes"])[0] == "org.apache.spark.sql.AnalysisException"
    assert info.metadata["errorClass"] == "_LEGACY_ERROR_TEMP_3100"
    assert info.metadata["sqlState"] == "42P07"
    assert json.loads(info.metadata["messageParameters"]) == {
        "message": "[CONNECT_PLUGIN.TEMP_TABLE_EXISTS] Temporary table [t] already exists"
    }


def test_a_spark_exception_of_ours_keeps_its_class_for_scala() -> None:
    protected = errors.SettingProtected("the setting [k] is the gateway's")
    _, info = _info(to_grpc_status(protected, SCALA_REQUEST))
    assert info.metadata["errorClass"] == "CONNECT_PLUGIN.SETTING_PROTECTED"


def test_an_error_spark_caused_carries_sparks_class_for_scala_too() -> None:
    exc = _caused_by_spark(
        "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION", list(status_module.ANALYSIS_EXCEPTION), "42703"
    )
    assert to_grpc_status(exc, SCALA_REQUEST) == to_grpc_status(exc)


@pytest.mark.parametrize(
    "session_id",
    ["not-a-valid-uuid", "", "abc", "x" * 37, "a-b-c-d-g", "1-2-3-4-5-6", "1--2-3-4"],
)
def test_ids_that_are_no_uuid_at_all_are_left_to_spark(session_id: str) -> None:
    assert spark_refuses(session_id)


@pytest.mark.parametrize(
    "session_id",
    [CANONICAL, CANONICAL.upper(), "1-2-3-4-5", "+1-2-3-4-5", "\u0661-2-3-4-5"],
)
def test_ids_java_could_read_as_a_uuid_are_the_gateways_to_judge(session_id: str) -> None:
    assert not spark_refuses(session_id)


def test_admission_sends_ids_spark_refuses_to_spark_and_refuses_other_spellings() -> None:
    assert admit_request(base_pb2.ConfigRequest(session_id=CANONICAL))
    clone = base_pb2.CloneSessionRequest(session_id=CANONICAL, new_session_id="not-a-valid-uuid")
    assert not admit_request(clone)
    with pytest.raises(errors.InvalidSessionId, match="not a canonical UUID"):
        admit_request(base_pb2.ConfigRequest(session_id=CANONICAL.upper()))


def test_every_class_we_emit_has_a_sql_state_and_a_known_exception() -> None:
    listed = emitted()
    assert len({e.error_class for e in listed}) == len(listed)
    assert "PARSE_SYNTAX_ERROR" in {e.error_class for e in listed}
    assert errors.scan_error_classes() <= {e.error_class for e in listed}
    for entry in listed:
        assert len(entry.sql_state) == 5, entry
        assert entry.exception.startswith(("org.apache.spark.", "java.")), entry
