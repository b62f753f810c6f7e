"""The one place where errors become the gRPC status a client gets.

Each status of our own carries a ``google.rpc.ErrorInfo`` shaped like Spark
Connect's, so the stock client raises a real pyspark exception class (for
example ``AnalysisException``) with an ``errorClass`` of ``CONNECT_PLUGIN.*``.
An ``UpstreamFailed`` is Spark's own answer and reaches the client exactly as
Spark sent it: code, message and trailers with their details.

One exception: a scan error raised in Spark's Python workers reaches us as
Spark's text around the worker's traceback, the cause on its last line
(``errors.find_marked``). Its status then leads with the scan's class and
message, Spark's text following; the ErrorInfo carries that class, and
FetchErrorDetails, where pyspark takes the message from, answers the same
(``scan_error_details``). Spark raises such an error from a Python worker
as ``PythonException``, which every pyspark client rebuilds with a fixed
first line and no error class; it becomes ``SparkRuntimeException``, the
exception "thrown from Spark with an error class". An analysis error stays
``AnalysisException``. Nothing else Spark sends is changed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.sql.connect.proto import base_pb2

from connect_plugin import errors

ERROR_DOMAIN = "connect-plugin"
STATUS_DETAILS_KEY = "grpc-status-details-bin"

PYTHON_EXCEPTION = "org.apache.spark.api.python.PythonException"
RUNTIME_EXCEPTION_CLASSES = (
    "org.apache.spark.SparkRuntimeException",
    "java.lang.RuntimeException",
    "java.lang.Exception",
    "java.lang.Throwable",
    "java.lang.Object",
)
"""The JVM classes of a scan error Spark raised as ``PythonException``, as Spark lists them."""

STATUS_MESSAGE_LIMIT = 2048
"""Characters of a status message, cut as Spark Connect cuts its own: a client's trailers
(message, and the status with its ErrorInfo) stay about as large as Spark's, under
gRPC's 8 KiB soft limit on received metadata."""

_SCAN_MARK = "[CONNECT_PLUGIN.SCAN"
_SCAN_MARK_BYTES = _SCAN_MARK.encode()


@dataclass(frozen=True)
class _Mapping:
    code: grpc.StatusCode
    spark_class: str
    error_class: str


_MAPPINGS: tuple[tuple[type[errors.ConnectPluginError], _Mapping], ...] = (
    (
        errors.Unauthenticated,
        _Mapping(
            grpc.StatusCode.UNAUTHENTICATED,
            "org.apache.spark.SparkSecurityException",
            "CONNECT_PLUGIN.UNAUTHENTICATED",
        ),
    ),
    (
        errors.InvalidSessionId,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.SparkSQLException",
            "CONNECT_PLUGIN.INVALID_SESSION_ID",
        ),
    ),
    (
        errors.UnknownExtension,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.sql.connect.common.InvalidPlanInput",
            "CONNECT_PLUGIN.UNKNOWN_EXTENSION",
        ),
    ),
    (
        errors.NotSupportedYet,
        _Mapping(
            grpc.StatusCode.UNIMPLEMENTED,
            "java.lang.UnsupportedOperationException",
            "CONNECT_PLUGIN.NOT_SUPPORTED",
        ),
    ),
    (
        errors.SessionMismatch,
        _Mapping(
            grpc.StatusCode.PERMISSION_DENIED,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.SESSION_MISMATCH",
        ),
    ),
    (
        errors.SettingProtected,
        _Mapping(
            grpc.StatusCode.PERMISSION_DENIED,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.SETTING_PROTECTED",
        ),
    ),
    (
        errors.QuotaExceeded,
        _Mapping(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.QUOTA_EXCEEDED",
        ),
    ),
    (
        errors.TempTableExists,
        _Mapping(
            grpc.StatusCode.ALREADY_EXISTS,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.TEMP_TABLE_EXISTS",
        ),
    ),
    (
        errors.TempTableNotFound,
        _Mapping(
            grpc.StatusCode.NOT_FOUND,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.TEMP_TABLE_NOT_FOUND",
        ),
    ),
    (
        errors.MergeCardinalityViolation,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.SparkRuntimeException",
            "MERGE_CARDINALITY_VIOLATION",
        ),
    ),
    (
        errors.TempTableQueryFailed,
        _Mapping(
            grpc.StatusCode.INTERNAL,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.TEMP_TABLE_QUERY_FAILED",
        ),
    ),
    (
        errors.TempTableError,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.TEMP_TABLE",
        ),
    ),
    (
        errors.WorkspaceError,
        _Mapping(
            grpc.StatusCode.FAILED_PRECONDITION,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.WORKSPACE",
        ),
    ),
    (
        errors.RegistryError,
        _Mapping(
            grpc.StatusCode.INTERNAL,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.REGISTRY",
        ),
    ),
    (
        errors.ScanPathNotFound,
        _Mapping(
            grpc.StatusCode.NOT_FOUND,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND",
        ),
    ),
    (
        errors.ScanError,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.SCAN",
        ),
    ),
    (
        errors.PlanError,
        _Mapping(
            grpc.StatusCode.INVALID_ARGUMENT,
            "org.apache.spark.sql.AnalysisException",
            "CONNECT_PLUGIN.INVALID_PLAN",
        ),
    ),
    (
        errors.UpstreamUnavailable,
        _Mapping(
            grpc.StatusCode.UNAVAILABLE,
            "org.apache.spark.SparkException",
            "CONNECT_PLUGIN.UPSTREAM_UNAVAILABLE",
        ),
    ),
)

_FALLBACK = _Mapping(
    grpc.StatusCode.INTERNAL, "org.apache.spark.SparkException", "CONNECT_PLUGIN.INTERNAL"
)


@dataclass(frozen=True)
class Status:
    """What ends a client's call: code, message, trailers (with the error details)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: Sequence[tuple[str, str | bytes]]


def _mapping(exc: BaseException) -> _Mapping:
    return next((m for cls, m in _MAPPINGS if isinstance(exc, cls)), _FALLBACK)


def error_class_of(exc: BaseException) -> str:
    """The error class a client is told for ``exc`` (Spark's own for its errors)."""
    if isinstance(exc, (errors.ScanError, errors.UpstreamFailed)) and exc.error_class:
        return exc.error_class
    return _mapping(exc).error_class


def to_grpc_status(exc: BaseException) -> Status:
    """The status of ``exc``: Spark's own for its errors, else one pyspark rebuilds as typed."""
    if isinstance(exc, errors.UpstreamFailed) and isinstance(exc.status, grpc.aio.AioRpcError):
        return upstream_status(exc.status)
    mapping = _mapping(exc)
    error_class = exc.error_class if isinstance(exc, errors.ScanError) else mapping.error_class
    message = f"[{error_class}] {exc}"
    info = error_details_pb2.ErrorInfo(
        reason=type(exc).__name__,
        domain=ERROR_DOMAIN,
        metadata={
            "classes": json.dumps([mapping.spark_class]),
            "errorClass": error_class,
            "messageParameters": json.dumps({"message": str(exc)}),
        },
    )
    detail = AnyProto()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, mapping.code.name), message=message, details=[detail]
    )
    built = rpc_status.to_status(status)
    return Status(built.code, built.details, tuple(built.trailing_metadata))


def upstream_status(error: grpc.aio.AioRpcError) -> Status:
    """The status and trailers Spark sent, exactly, unless it holds a scan error."""
    sent = Status(error.code(), error.details() or "", tuple(error.trailing_metadata() or ()))
    return scan_error_status(sent)


def scan_error_status(sent: Status) -> Status:
    """``sent`` leading with the scan error whose traceback it holds; else ``sent`` itself."""
    if _SCAN_MARK not in sent.details[-errors.MARK_SEARCH_LIMIT :]:
        return sent
    keys = [key for key, _ in sent.trailing_metadata]
    if STATUS_DETAILS_KEY not in keys:
        return sent
    index = keys.index(STATUS_DETAILS_KEY)
    packed = sent.trailing_metadata[index][1]
    if not isinstance(packed, bytes):
        return sent
    try:
        status = status_pb2.Status.FromString(packed)
    except DecodeError:
        return sent
    found = errors.find_marked(status.message)
    if found is None:
        return sent
    status.message = _abbreviated(f"{found.first_line}\n{status.message}")
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            _mark_info(info, found)
            detail.Pack(info)
    trailers = list(sent.trailing_metadata)
    trailers[index] = (STATUS_DETAILS_KEY, status.SerializeToString())
    return Status(sent.code, status.message, tuple(trailers))


def _abbreviated(message: str) -> str:
    if len(message) <= STATUS_MESSAGE_LIMIT:
        return message
    return message[: STATUS_MESSAGE_LIMIT - 3] + "..."


def _mark_info(info: error_details_pb2.ErrorInfo, found: errors.Marked) -> None:
    try:
        sent = json.loads(info.metadata.get("classes", "[]"))
    except ValueError:
        sent = None
    if isinstance(sent, list) and all(isinstance(c, str) for c in sent):
        classes = _classes_of_scan_error(sent)
        info.metadata["classes"] = json.dumps(classes, separators=(",", ":"))
        info.reason = classes[0] if classes else info.reason
    info.metadata["errorClass"] = found.error_class
    info.metadata["messageParameters"] = json.dumps({"message": found.message})


def _classes_of_scan_error(classes: Sequence[str]) -> list[str]:
    """The JVM classes a client should see for a scan error Spark raised as ``classes``."""
    if PYTHON_EXCEPTION in classes:
        return list(RUNTIME_EXCEPTION_CLASSES)
    return list(classes)


def scan_error_details(response: bytes) -> bytes:
    """A FetchErrorDetails answer agreeing with ``scan_error_status``; else exactly as sent.

    pyspark asks for these details when the status names an ``errorId`` and
    takes the message, error class and parameters from them.
    """
    if _SCAN_MARK_BYTES not in response:
        return response
    try:
        details = base_pb2.FetchErrorDetailsResponse.FromString(response)
    except DecodeError:
        return response
    if not details.HasField("root_error_idx") or details.root_error_idx >= len(details.errors):
        return response
    root = details.errors[details.root_error_idx]
    found = errors.find_marked(root.message)
    if found is None:
        return response
    root.message = f"{found.first_line}\n{root.message}"
    classes = _classes_of_scan_error(root.error_type_hierarchy)
    del root.error_type_hierarchy[:]
    root.error_type_hierarchy.extend(classes)
    root.spark_throwable.error_class = found.error_class
    root.spark_throwable.message_parameters.clear()
    root.spark_throwable.message_parameters["message"] = found.message
    result: bytes = details.SerializeToString()
    return result


async def abort_with(exc: BaseException, context: Any) -> NoReturn:
    """End the client's call with the status of ``exc``."""
    status = to_grpc_status(exc)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")


async def relay(error: grpc.aio.AioRpcError, context: Any) -> NoReturn:
    """End the client's call with exactly the status and trailers Spark sent."""
    status = upstream_status(error)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")
