"""A scan error inside Spark's text reaches the client with its class first; nothing else changes.

The statuses are shaped as Spark 4.3 sends them (recorded by hand from a
real server, see the integration tests for the real thing); pyspark's own
``convert_exception`` shows what the stock client makes of the result.
"""

from __future__ import annotations

import base64
import json
import uuid
from urllib.parse import quote

import grpc
import pytest
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.errors import AnalysisException, PythonException, SparkRuntimeException
from pyspark.errors.exceptions.connect import convert_exception
from pyspark.sql.connect.proto import base_pb2

from connect_plugin import errors
from connect_plugin.server.transport.spark_status import (
    MESSAGE_ONLY_CLASS,
    SESSION_CHANGED,
    STATUS_DETAILS_KEY,
    STATUS_MESSAGE_LIMIT,
    Status,
    checked_value_status,
    named_status,
    scan_error_details,
    scan_error_message,
    scan_error_status,
    upstream_status,
    worker_lost_status,
)
from connect_plugin.server.transport.status import to_grpc_status
from tests.unit.server.spark_errors import load, rpc_error
from tests.unit.server.transport.test_clients import PYSPARK_REQUEST, SCALA_REQUEST

ANALYSIS = [
    "org.apache.spark.sql.AnalysisException",
    "java.lang.Exception",
    "java.lang.Throwable",
    "java.lang.Object",
]
PYTHON = [
    "org.apache.spark.api.python.PythonException",
    "java.lang.RuntimeException",
    "java.lang.Exception",
    "java.lang.Throwable",
    "java.lang.Object",
]
MISSING = "path '/data/x' does not exist (looked for /data/x); check the path"
BAD = "file /data/b.json, line 2: malformed json (Expecting value)"


def traceback_of(name: str, error_class: str, message: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/site/connect_plugin/scanning/spark/worker_errors.py", line 46, in call\n'
        "    raise reportable(exc) from None\n"
        '  File "/site/connect_plugin/scanning/files/files.py", line 89, in _expand\n'
        f"    raise {name}(\n"
        f"connect_plugin.errors.{name}: [{error_class}] {message}\n"
    )


PLANNING = (
    "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
    + traceback_of("ScanPathNotFound", "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND", MISSING)
    + " SQLSTATE: 38000"
)
READING = (
    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
    + traceback_of("BadRecord", "CONNECT_PLUGIN.SCAN_BAD_RECORD", BAD)
    + " SQLSTATE: 38000"
)
TRACES = "The Python and JVM traces are in the Spark server's log."
PLANNING_CONTEXT = (
    f"Spark: [PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance. {TRACES}"
)
READING_CONTEXT = f"Spark: [PYTHON_EXCEPTION] An exception was thrown from the Python worker. {TRACES}"
USER_UDF = (
    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
    "Traceback (most recent call last):\n"
    '  File "<stdin>", line 1, in <lambda>\n'
    "ZeroDivisionError: division by zero\n SQLSTATE: 38000"
)


def spark_status(classes: list[str], message: str) -> Status:
    """A status as Spark Connect builds it (ErrorUtils.buildStatusFromThrowable)."""
    info = error_details_pb2.ErrorInfo(
        reason=classes[0],
        domain="org.apache.spark",
        metadata={
            "classes": json.dumps(classes, separators=(",", ":")),
            "sqlState": "38000",
            "errorId": str(uuid.uuid4()),
        },
    )
    detail = AnyProto()
    detail.Pack(info)
    status = rpc_status.to_status(
        status_pb2.Status(code=code_pb2.INTERNAL, message=message, details=[detail])
    )
    return Status(status.code, status.details, tuple(status.trailing_metadata))


def info_of(status: Status) -> tuple[status_pb2.Status, error_details_pb2.ErrorInfo]:
    (packed,) = [value for key, value in status.trailing_metadata if key == STATUS_DETAILS_KEY]
    assert isinstance(packed, bytes)
    rpc = status_pb2.Status.FromString(packed)
    info = error_details_pb2.ErrorInfo()
    assert rpc.details[0].Unpack(info)
    return rpc, info


def client_exception(status: Status) -> Exception:
    """What pyspark raises for ``status`` when it does not fetch the error's details."""
    rpc, info = info_of(status)
    return convert_exception(info, rpc.message, None, False, status.code)


def test_a_planning_error_leads_with_the_scans_class_and_stays_an_analysis_exception() -> None:
    sent = spark_status(ANALYSIS, PLANNING)
    given = scan_error_status(sent)
    rpc, info = info_of(given)
    first_line = f"[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] {MISSING}"
    assert given.details == rpc.message == f"{first_line}\n{PLANNING_CONTEXT}"
    assert given.code == sent.code
    assert info.metadata["errorClass"] == "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND"
    assert json.loads(info.metadata["messageParameters"]) == {"message": MISSING}
    assert json.loads(info.metadata["classes"]) == ANALYSIS
    assert "errorId" not in info.metadata
    assert info.metadata["sqlState"] == errors.ScanPathNotFound.sql_state == "42K03"
    raised = client_exception(given)
    assert type(raised).__name__ == "AnalysisException"
    assert isinstance(raised, AnalysisException)
    assert str(raised).splitlines()[0] == first_line
    assert raised.getCondition() == "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND"  # type: ignore[attr-defined]


def test_a_reading_error_becomes_a_spark_runtime_exception_with_the_scans_class() -> None:
    before = client_exception(spark_status(PYTHON, READING))
    assert isinstance(before, PythonException)
    assert str(before).splitlines()[0] == ""
    given = scan_error_status(spark_status(PYTHON, READING))
    _, info = info_of(given)
    assert json.loads(info.metadata["classes"])[0] == "org.apache.spark.SparkRuntimeException"
    assert info.reason == "org.apache.spark.SparkRuntimeException"
    raised = client_exception(given)
    assert isinstance(raised, SparkRuntimeException)
    assert str(raised).splitlines() == [f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] {BAD}", READING_CONTEXT]
    assert raised.getCondition() == "CONNECT_PLUGIN.SCAN_BAD_RECORD"


def test_a_scan_errors_status_names_no_error_id_so_the_client_shows_no_jvm_stack() -> None:
    sent = spark_status(PYTHON, READING)
    rpc, info = info_of(sent)
    info.metadata["stackTrace"] = "org.apache.spark.SparkRuntimeException\n\tat x.y(z.scala:1)"
    rpc.details[0].Pack(info)
    sent = Status(sent.code, sent.details, ((STATUS_DETAILS_KEY, rpc.SerializeToString()),))
    _, given = info_of(scan_error_status(sent))
    assert "errorId" not in given.metadata
    assert "stackTrace" not in given.metadata
    raised = convert_exception(given, scan_error_status(sent).details, None, True, sent.code)
    assert "JVM stacktrace" not in str(raised)
    assert len(str(raised).splitlines()) == 2


@pytest.mark.parametrize(
    ("spark_text", "context"),
    [
        ("[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback", READING_CONTEXT),
        ("Job aborted\n[X] Traceback", TRACES),
        ("[" + "A" * 300 + "] long", "Spark: [" + "A" * 196 + "... " + TRACES),
    ],
)
def test_the_context_line_quotes_sparks_first_line_only(spark_text: str, context: str) -> None:
    found = errors.Marked("CONNECT_PLUGIN.SCAN_BAD_RECORD", BAD)
    assert scan_error_message(found, spark_text).splitlines() == [found.first_line, context]


@pytest.mark.parametrize("message", [USER_UDF, "[CONNECT_PLUGIN.SCAN_BAD_RECORD] said by a user"])
def test_other_python_errors_are_left_exactly_as_sent(message: str) -> None:
    sent = spark_status(PYTHON, message)
    assert scan_error_status(sent) is sent


@pytest.mark.parametrize("error_class", sorted(set(load()) - {SESSION_CHANGED}))
def test_sparks_own_errors_are_relayed_exactly(error_class: str) -> None:
    error = rpc_error(error_class, str(uuid.uuid4()))
    relayed = upstream_status(error)
    assert relayed.code == error.code()
    assert relayed.details == error.details()
    assert relayed.trailing_metadata == tuple(error.trailing_metadata())


def trailer_bytes(status: Status) -> int:
    """What the trailers weigh against gRPC's limit (RFC 7541 sizes, values as sent)."""
    fields = [("grpc-message", quote(status.details, safe=" ")), *status.trailing_metadata]
    return sum(
        len(key) + 32 + len(base64.b64encode(value) if isinstance(value, bytes) else value)
        for key, value in fields
    )


def test_a_long_scan_error_stays_within_the_size_spark_keeps_its_statuses() -> None:
    long_message = "x" * 5000
    text = (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
        + traceback_of("BadRecord", "CONNECT_PLUGIN.SCAN_BAD_RECORD", long_message)
    )[:2045] + "..."
    given = scan_error_status(spark_status(PYTHON, text))
    assert len(given.details) < STATUS_MESSAGE_LIMIT
    assert len(given.details.splitlines()[0]) == len("[CONNECT_PLUGIN.SCAN_BAD_RECORD] ") + 1000
    assert given.details.startswith("[CONNECT_PLUGIN.SCAN_BAD_RECORD] xxx")
    assert given.details.splitlines()[0].endswith("...")
    assert trailer_bytes(given) < 8192
    assert client_exception(given).getCondition() == "CONNECT_PLUGIN.SCAN_BAD_RECORD"  # type: ignore[attr-defined]


def test_classes_spark_did_not_list_as_json_are_kept() -> None:
    spark = spark_status(PYTHON, READING)
    rpc, info = info_of(spark)
    info.metadata["classes"] = "not json"
    rpc.details[0].Pack(info)
    sent = Status(spark.code, spark.details, ((STATUS_DETAILS_KEY, rpc.SerializeToString()),))
    _, given = info_of(scan_error_status(sent))
    assert given.metadata["classes"] == "not json"
    assert given.metadata["errorClass"] == "CONNECT_PLUGIN.SCAN_BAD_RECORD"


def test_a_marked_text_without_status_details_is_left_alone() -> None:
    sent = Status(grpc.StatusCode.INTERNAL, PLANNING, (("other", "x"),))
    assert scan_error_status(sent) is sent


def test_other_trailers_keep_their_place() -> None:
    spark = spark_status(ANALYSIS, PLANNING)
    sent = Status(spark.code, spark.details, (("before", "1"), *spark.trailing_metadata))
    given = scan_error_status(sent)
    assert given.trailing_metadata[0] == ("before", "1")
    assert given.trailing_metadata[1][0] == STATUS_DETAILS_KEY


def details_response(root_classes: list[str], message: str) -> base_pb2.FetchErrorDetailsResponse:
    response = base_pb2.FetchErrorDetailsResponse(root_error_idx=0)
    root = response.errors.add(message=message, error_type_hierarchy=root_classes, cause_idx=1)
    root.stack_trace.add(declaring_class="org.apache.spark.api.python.X", method_name="read")
    root.spark_throwable.error_class = "PYTHON_EXCEPTION"
    root.spark_throwable.message_parameters["msg"] = "An exception was thrown"
    root.spark_throwable.sql_state = "38000"
    response.errors.add(message="a cause", error_type_hierarchy=["java.io.IOException"])
    return response


def test_fetched_details_agree_with_the_status() -> None:
    sent = details_response(PYTHON, READING)
    response = base_pb2.FetchErrorDetailsResponse.FromString(
        scan_error_details(sent.SerializeToString())
    )
    root = response.errors[response.root_error_idx]
    assert root.message == f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] {BAD}\n{READING_CONTEXT}"
    assert root.error_type_hierarchy[0] == "org.apache.spark.SparkRuntimeException"
    assert root.spark_throwable.error_class == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    assert dict(root.spark_throwable.message_parameters) == {"message": BAD}
    assert root.spark_throwable.sql_state == errors.BadRecord.sql_state
    assert not root.HasField("cause_idx")
    assert all(not error.stack_trace for error in response.errors)
    given = scan_error_status(spark_status(PYTHON, READING))
    rpc, info = info_of(given)
    raised = convert_exception(info, rpc.message, response, False, given.code)
    assert isinstance(raised, SparkRuntimeException)
    assert str(raised).splitlines()[0] == f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] {BAD}"
    assert raised.getMessageParameters() == {"message": BAD}


@pytest.mark.parametrize(
    ("classes", "message", "sql_state"),
    [(ANALYSIS, PLANNING, "42K03"), (PYTHON, READING, "22000")],
    ids=["planning", "reading"],
)
def test_the_scala_client_is_given_a_class_its_templates_know_for_a_scan_error(
    classes: list[str], message: str, sql_state: str
) -> None:
    sent = spark_status(classes, message)
    pyspark = scan_error_status(sent)
    assert scan_error_status(sent, PYSPARK_REQUEST) == pyspark
    given = scan_error_status(sent, SCALA_REQUEST)
    assert (given.code, given.details) == (pyspark.code, pyspark.details)
    (_, pyspark_info), (_, info) = info_of(pyspark), info_of(given)
    assert info.metadata["errorClass"] == MESSAGE_ONLY_CLASS
    assert json.loads(info.metadata["messageParameters"]) == {"message": given.details}
    assert given.details.startswith("[CONNECT_PLUGIN.SCAN_")
    assert info.metadata["sqlState"] == sql_state
    assert info.metadata["classes"] == pyspark_info.metadata["classes"]


def test_the_scala_client_fetches_details_with_a_class_its_templates_know() -> None:
    sent = details_response(PYTHON, READING).SerializeToString()
    assert scan_error_details(sent, PYSPARK_REQUEST) == scan_error_details(sent)
    asking = base_pb2.FetchErrorDetailsRequest(client_type=SCALA_REQUEST.client_type)
    response = base_pb2.FetchErrorDetailsResponse.FromString(scan_error_details(sent, asking))
    root = response.errors[response.root_error_idx]
    assert root.message == f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] {BAD}\n{READING_CONTEXT}"
    assert root.error_type_hierarchy[0] == "org.apache.spark.SparkRuntimeException"
    assert root.spark_throwable.error_class == MESSAGE_ONLY_CLASS
    assert dict(root.spark_throwable.message_parameters) == {"message": root.message}
    assert root.spark_throwable.sql_state == errors.BadRecord.sql_state


@pytest.mark.parametrize("message", [USER_UDF, "no scan here"])
def test_other_fetched_details_are_the_same_bytes(message: str) -> None:
    sent = details_response(PYTHON, message).SerializeToString()
    assert scan_error_details(sent) is sent
    assert scan_error_details(sent, SCALA_REQUEST) is sent


def test_undecodable_details_are_passed_on() -> None:
    sent = b"\xff[CONNECT_PLUGIN.SCAN_BAD_RECORD]"
    assert scan_error_details(sent) is sent


def test_scan_errors_the_gateway_raises_carry_their_own_class() -> None:
    _, bad = info_of(to_grpc_status(errors.BadRecord(BAD)))
    assert bad.metadata["errorClass"] == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    _, spec = info_of(to_grpc_status(errors.InvalidScanSpec("option 'x' is not an option")))
    assert spec.metadata["errorClass"] == "CONNECT_PLUGIN.SCAN"
    missing = to_grpc_status(errors.ScanPathNotFound(MISSING))
    assert missing.code == grpc.StatusCode.NOT_FOUND
    assert missing.details == f"[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] {MISSING}"


RUNTIME = [
    "org.apache.spark.SparkRuntimeException",
    "java.lang.RuntimeException",
    "java.lang.Exception",
    "java.lang.Throwable",
    "java.lang.Object",
]
REFUSED = (
    "Temporary table [t]: column [a] is declared NOT NULL and a row gives it NULL; the write "
    "stopped before committing any file (give the column a value in every row, or declare it "
    "without NOT NULL)"
)


def classed_status(
    classes: list[str], message: str, error_class: str, parameters: dict[str, str]
) -> Status:
    """A status of Spark's for an error with a class and parameters."""
    sent = spark_status(classes, message)
    rpc, info = info_of(sent)
    info.metadata["errorClass"] = error_class
    info.metadata["messageParameters"] = json.dumps(parameters)
    rpc.details[0].Pack(info)
    return Status(sent.code, message, ((STATUS_DETAILS_KEY, rpc.SerializeToString()),))


def test_a_value_checks_error_gets_its_own_class_and_message() -> None:
    raised = f"[CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL] {REFUSED}"
    sent = classed_status(
        RUNTIME,
        f"[USER_RAISED_EXCEPTION] {raised} SQLSTATE: P0001",
        "USER_RAISED_EXCEPTION",
        {"errorMessage": raised},
    )
    given = checked_value_status(sent)
    rpc, info = info_of(given)
    assert given.details == rpc.message == raised
    assert info.metadata["errorClass"] == "CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL"
    assert info.metadata["sqlState"] == errors.NotNullViolation.sql_state == "23502"
    assert json.loads(info.metadata["messageParameters"]) == {"message": REFUSED}
    assert "errorId" not in info.metadata
    raised_by_client = client_exception(given)
    assert isinstance(raised_by_client, SparkRuntimeException)
    assert str(raised_by_client) == raised
    scala = info_of(checked_value_status(sent, SCALA_REQUEST))[1]
    assert scala.metadata["errorClass"] == MESSAGE_ONLY_CLASS


@pytest.mark.parametrize(
    "text",
    [
        "[CONNECT_PLUGIN.SOMETHING_ELSE] a class no check raises",
        "Temporary table [t]: no class at all",
    ],
)
def test_other_raised_errors_stay_as_sent(text: str) -> None:
    sent = classed_status(
        RUNTIME, f"[USER_RAISED_EXCEPTION] {text} SQLSTATE: P0001", "USER_RAISED_EXCEPTION",
        {"errorMessage": text},
    )  # fmt: skip
    assert checked_value_status(sent) is sent


ARITY = (
    "[INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS] Cannot write to `unknown`, the "
    "reason is not enough data columns:\nTable columns: `unknown`, `b`.\nData columns: `col1`. "
    "SQLSTATE: 21S01"
)


def test_a_temp_table_spark_calls_unknown_is_named() -> None:
    sent = classed_status(
        ANALYSIS, ARITY, "INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS",
        {"tableName": "`unknown`", "tableColumns": "`unknown`, `b`", "dataColumns": "`col1`"},
    )  # fmt: skip
    given = named_status(sent, "`session`.`MyT`")
    rpc, info = info_of(given)
    assert given.details == rpc.message == ARITY.replace(
        "write to `unknown`", "write to `session`.`MyT`"
    )
    assert "Table columns: `unknown`, `b`" in given.details
    assert json.loads(info.metadata["messageParameters"]) == {
        "tableName": "`session`.`MyT`", "tableColumns": "`unknown`, `b`", "dataColumns": "`col1`",
    }  # fmt: skip
    assert info.metadata["errorClass"] == "INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS"
    assert "errorId" not in info.metadata
    partitions = classed_status(
        ANALYSIS,
        "[PARTITIONS_NOT_FOUND] The partition(s) `unknown` cannot be found in table `unknown`.",
        "PARTITIONS_NOT_FOUND",
        {"partitionList": "`unknown`", "tableName": "`unknown`"},
    )
    assert named_status(partitions, "`t`").details == (
        "[PARTITIONS_NOT_FOUND] The partition(s) `unknown` cannot be found in table `t`."
    )


def test_an_error_that_names_no_unknown_table_stays_as_sent() -> None:
    sent = classed_status(ANALYSIS, "[X] column `unknown` is ambiguous", "X", {})
    assert named_status(sent, "`t`") is sent


CRASH = (
    "Job aborted due to stage failure: Task 1 in stage 29.0 failed 1 times, most recent "
    "failure: Lost task 1.0 in stage 29.0 (TID 30) (host executor driver): "
    "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). Consider "
    "setting 'spark.sql.execution.pyspark.udf.faulthandler.enabled' or"
    "'spark.python.worker.faulthandler.enabled' configuration to 'true' for the better "
    "Python traceback.\n\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator"
)
SPARK_EXCEPTION = ["org.apache.spark.SparkException", "java.lang.Exception", "java.lang.Throwable", "java.lang.Object"]


def test_a_lost_python_worker_of_a_scans_query_gets_the_scans_class() -> None:
    given = worker_lost_status(spark_status(SPARK_EXCEPTION, CRASH))
    _, info = info_of(given)
    first, context = given.details.splitlines()
    assert first.startswith(
        "[CONNECT_PLUGIN.SCAN_WORKER_LOST] a Spark Python worker exited unexpectedly while "
        "the query ran"
    )
    assert context == TRACES
    assert info.metadata["errorClass"] == "CONNECT_PLUGIN.SCAN_WORKER_LOST"
    assert info.metadata["sqlState"] == "38000"
    assert "errorId" not in info.metadata
    raised = client_exception(given)
    assert type(raised).__name__ == "SparkException"
    assert raised.getCondition() == "CONNECT_PLUGIN.SCAN_WORKER_LOST"  # type: ignore[attr-defined]
    assert len(str(raised).splitlines()) == 2


def test_other_errors_are_no_lost_worker() -> None:
    for sent in (spark_status(SPARK_EXCEPTION, "Job aborted: disk full"), spark_status(PYTHON, READING)):
        assert worker_lost_status(sent) is sent
    classed = classed_status(SPARK_EXCEPTION, CRASH, "SOME_CLASS", {})
    assert worker_lost_status(classed) is classed
