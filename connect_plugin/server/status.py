"""The one place where errors become the gRPC status a client gets.

Each status of our own carries a ``google.rpc.ErrorInfo`` shaped like Spark
Connect's, so the stock client raises a real pyspark exception class (for
example ``AnalysisException``) with an ``errorClass`` of ``CONNECT_PLUGIN.*``.
An ``UpstreamFailed`` is Spark's own answer and reaches the client exactly as
Spark sent it: code, message and trailers with their details.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_plugin import errors

ERROR_DOMAIN = "connect-plugin"


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


def to_grpc_status(exc: BaseException) -> Status:
    """The status of ``exc``: Spark's own for its errors, else one pyspark rebuilds as typed."""
    if isinstance(exc, errors.UpstreamFailed) and isinstance(exc.status, grpc.aio.AioRpcError):
        return upstream_status(exc.status)
    mapping = _mapping(exc)
    message = f"[{mapping.error_class}] {exc}"
    info = error_details_pb2.ErrorInfo(
        reason=type(exc).__name__,
        domain=ERROR_DOMAIN,
        metadata={
            "classes": json.dumps([mapping.spark_class]),
            "errorClass": mapping.error_class,
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
    """Exactly the status and trailers Spark sent."""
    return Status(error.code(), error.details() or "", tuple(error.trailing_metadata() or ()))


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
