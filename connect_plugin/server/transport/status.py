"""The one place where errors become the gRPC status a client gets.

Each status of our own carries a complete ``google.rpc.ErrorInfo`` shaped
like Spark Connect's: the JVM class hierarchy (``classes``, from which pyspark
and the Scala client pick the exception to raise), ``errorClass``,
``messageParameters`` and ``sqlState``. Our own conditions are
``CONNECT_PLUGIN.*``; a syntax error in a statement the gateway recognises is
Spark's ``PARSE_SYNTAX_ERROR`` (a ``ParseException``); an error of ours that
Spark's own error caused (a temp table whose query does not analyse) carries
Spark's class, state and parameters. An ``UpstreamFailed`` is Spark's own
answer and reaches the client exactly as Spark sent it: code, message and
trailers with their details. ``emitted()`` lists every class of our own; the
README's table is checked against it.

Spark's own errors pass through ``spark_status``, which leaves them as
Spark sent them but for the errors of a scan in Spark's workers, of a temp
table's value checks, and a temp table Spark calls ``unknown``; for the
Scala client, whose error templates know no ``CONNECT_PLUGIN.*`` class, an
error of ours carries a class its templates know
(``spark_status.in_scala_templates``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_plugin import errors
from connect_plugin.server.transport.clients import is_scala_client
from connect_plugin.server.transport.spark_status import (
    STATUS_DETAILS_KEY,
    Status,
    in_scala_templates,
    named_status,
    upstream_status,
)

ERROR_DOMAIN = "connect-plugin"

_THROWABLE = ("java.lang.Exception", "java.lang.Throwable", "java.lang.Object")
_RUNTIME = ("java.lang.RuntimeException", *_THROWABLE)
SPARK_EXCEPTION = ("org.apache.spark.SparkException", *_THROWABLE)
RUNTIME_EXCEPTION = ("org.apache.spark.SparkRuntimeException", *_RUNTIME)
ANALYSIS_EXCEPTION = ("org.apache.spark.sql.AnalysisException", *_THROWABLE)
PARSE_EXCEPTION = ("org.apache.spark.sql.catalyst.parser.ParseException", *ANALYSIS_EXCEPTION)
SECURITY_EXCEPTION = (
    "org.apache.spark.SparkSecurityException",
    "java.lang.SecurityException",
    *_RUNTIME,
)
SQL_EXCEPTION = ("org.apache.spark.SparkSQLException", "java.sql.SQLException", *_THROWABLE)
INVALID_PLAN_INPUT = ("org.apache.spark.sql.connect.common.InvalidPlanInput", *_THROWABLE)
UNSUPPORTED_EXCEPTION = (
    "org.apache.spark.SparkUnsupportedOperationException",
    "java.lang.UnsupportedOperationException",
    *_RUNTIME,
)
"""JVM class hierarchies as Spark lists them in ``classes``: pyspark and the Scala client
take the first class they know as the exception to raise."""

PARSE_SYNTAX_ERROR = "PARSE_SYNTAX_ERROR"
PARSE_SYNTAX_SQL_STATE = "42601"


@dataclass(frozen=True)
class _Mapping:
    code: grpc.StatusCode
    classes: tuple[str, ...]
    error_class: str
    sql_state: str


_INVALID = grpc.StatusCode.INVALID_ARGUMENT
_MAPPINGS: tuple[tuple[type[errors.ConnectPluginError], _Mapping], ...] = (
    (
        errors.Unauthenticated,
        _Mapping(
            grpc.StatusCode.UNAUTHENTICATED,
            SECURITY_EXCEPTION,
            "CONNECT_PLUGIN.UNAUTHENTICATED",
            "28000",
        ),
    ),
    (
        errors.InvalidSessionId,
        _Mapping(_INVALID, SQL_EXCEPTION, "CONNECT_PLUGIN.INVALID_SESSION_ID", "HY000"),
    ),
    (
        errors.UnknownExtension,
        _Mapping(_INVALID, INVALID_PLAN_INPUT, "CONNECT_PLUGIN.UNKNOWN_EXTENSION", "56K00"),
    ),
    (
        errors.NotSupportedYet,
        _Mapping(
            grpc.StatusCode.UNIMPLEMENTED,
            UNSUPPORTED_EXCEPTION,
            "CONNECT_PLUGIN.NOT_SUPPORTED",
            "0A000",
        ),
    ),
    (
        errors.SessionMismatch,
        _Mapping(
            grpc.StatusCode.PERMISSION_DENIED,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.SESSION_MISMATCH",
            "42501",
        ),
    ),
    (
        errors.SettingProtected,
        _Mapping(
            grpc.StatusCode.PERMISSION_DENIED,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.SETTING_PROTECTED",
            "46110",
        ),
    ),
    (
        errors.NoEngine,
        _Mapping(
            grpc.StatusCode.PERMISSION_DENIED,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.NO_ENGINE",
            "42501",
        ),
    ),
    (
        errors.SessionClosed,
        _Mapping(
            grpc.StatusCode.FAILED_PRECONDITION,
            SQL_EXCEPTION,
            "CONNECT_PLUGIN.SESSION_CLOSED",
            "HY000",
        ),
    ),
    (
        errors.QuotaExceeded,
        _Mapping(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.QUOTA_EXCEEDED",
            "53400",
        ),
    ),
    (
        errors.StatementSyntaxError,
        _Mapping(_INVALID, PARSE_EXCEPTION, PARSE_SYNTAX_ERROR, PARSE_SYNTAX_SQL_STATE),
    ),
    (
        errors.TempTableExists,
        _Mapping(
            grpc.StatusCode.ALREADY_EXISTS,
            ANALYSIS_EXCEPTION,
            "CONNECT_PLUGIN.TEMP_TABLE_EXISTS",
            "42P07",
        ),
    ),
    (
        errors.TempTableNotFound,
        _Mapping(
            grpc.StatusCode.NOT_FOUND,
            ANALYSIS_EXCEPTION,
            "CONNECT_PLUGIN.TEMP_TABLE_NOT_FOUND",
            "42P01",
        ),
    ),
    (
        errors.AmbiguousQualifier,
        _Mapping(
            _INVALID,
            ANALYSIS_EXCEPTION,
            "CONNECT_PLUGIN.AMBIGUOUS_SESSION_QUALIFIER",
            "42000",
        ),
    ),
    (
        errors.MergeCardinalityViolation,
        _Mapping(
            _INVALID,
            RUNTIME_EXCEPTION,
            "MERGE_CARDINALITY_VIOLATION",
            "23K01",
        ),
    ),
    *(
        (
            checked,
            _Mapping(_INVALID, RUNTIME_EXCEPTION, checked.error_class, checked.sql_state),
        )
        for checked in (errors.NotNullViolation, errors.ValueNotHeld)
    ),
    (
        errors.TempTableQueryFailed,
        _Mapping(
            grpc.StatusCode.INTERNAL,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.TEMP_TABLE_QUERY_FAILED",
            "XX000",
        ),
    ),
    (
        errors.TempTableError,
        _Mapping(_INVALID, ANALYSIS_EXCEPTION, "CONNECT_PLUGIN.TEMP_TABLE", "42000"),
    ),
    (
        errors.WorkspaceError,
        _Mapping(
            grpc.StatusCode.FAILED_PRECONDITION,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.WORKSPACE",
            "58030",
        ),
    ),
    (
        errors.RegistryError,
        _Mapping(grpc.StatusCode.INTERNAL, SPARK_EXCEPTION, "CONNECT_PLUGIN.REGISTRY", "58030"),
    ),
    (
        errors.ScanPathNotFound,
        _Mapping(
            grpc.StatusCode.NOT_FOUND,
            ANALYSIS_EXCEPTION,
            errors.ScanPathNotFound.error_class,
            errors.ScanPathNotFound.sql_state,
        ),
    ),
    (
        errors.ScanError,
        _Mapping(
            _INVALID, ANALYSIS_EXCEPTION, errors.ScanError.error_class, errors.ScanError.sql_state
        ),
    ),
    (
        errors.PlanError,
        _Mapping(_INVALID, ANALYSIS_EXCEPTION, "CONNECT_PLUGIN.INVALID_PLAN", "56K00"),
    ),
    (
        errors.UpstreamUnavailable,
        _Mapping(
            grpc.StatusCode.UNAVAILABLE,
            SPARK_EXCEPTION,
            "CONNECT_PLUGIN.UPSTREAM_UNAVAILABLE",
            "08001",
        ),
    ),
)

_FALLBACK = _Mapping(grpc.StatusCode.INTERNAL, SPARK_EXCEPTION, "CONNECT_PLUGIN.INTERNAL", "XX000")


@dataclass(frozen=True)
class Emitted:
    """One error class the gateway itself puts in an ErrorInfo."""

    error_class: str
    exception: str
    """The JVM class clients raise it as (the first of ``classes``)."""
    sql_state: str
    code: grpc.StatusCode


def emitted() -> list[Emitted]:
    """Every error class the gateway makes itself, with its exception, SQL state and code.

    Spark's own errors, and errors of ours caused by one of Spark's, carry
    Spark's class and are not listed.
    """
    found = {
        m.error_class: Emitted(m.error_class, m.classes[0], m.sql_state, m.code)
        for m in (*(mapping for _, mapping in _MAPPINGS), _FALLBACK)
    }
    scan = _mapping(errors.ScanError())
    for error_class, sql_state in errors.scan_sql_states().items():
        found.setdefault(error_class, Emitted(error_class, scan.classes[0], sql_state, scan.code))
    return sorted(found.values(), key=lambda e: e.error_class)


def _mapping(exc: BaseException) -> _Mapping:
    return next((m for cls, m in _MAPPINGS if isinstance(exc, cls)), _FALLBACK)


def sparks_info(exc: BaseException) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo of the Spark error that caused ``exc``, if Spark gave it a class.

    It is the ErrorInfo the client would get for Spark's error itself, a scan
    error's class first (``upstream_status``).
    """
    cause = exc.__cause__
    if not isinstance(cause, errors.UpstreamFailed) or not isinstance(
        cause.status, grpc.aio.AioRpcError
    ):
        return None
    packed = dict(upstream_status(cause.status).trailing_metadata).get(STATUS_DETAILS_KEY)
    if not isinstance(packed, bytes):
        return None
    try:
        status = status_pb2.Status.FromString(packed)
    except DecodeError:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info) and info.metadata.get("errorClass") and "classes" in info.metadata:
            return info
    return None


def error_class_of(exc: BaseException) -> str:
    """The error class a client is told for ``exc`` (Spark's own for its errors)."""
    if isinstance(exc, (errors.ScanError, errors.UpstreamFailed)) and exc.error_class:
        return exc.error_class
    spark = sparks_info(exc)
    if spark is not None:
        return str(spark.metadata["errorClass"])
    return _mapping(exc).error_class


def error_info(exc: BaseException) -> error_details_pb2.ErrorInfo:
    """The complete ErrorInfo of an error the gateway reports itself.

    Clients pick the exception to raise from ``classes``, and read
    ``errorClass``, ``messageParameters`` and ``sqlState`` from it. An error
    of ours that Spark's own error caused (a temp table whose query does not
    analyse) carries Spark's class, state and parameters, so users' code
    catches it as it catches the same query's error.
    """
    spark = sparks_info(exc)
    if spark is not None:
        metadata = {
            key: spark.metadata[key]
            for key in ("classes", "errorClass", "messageParameters", "sqlState")
            if key in spark.metadata
        }
        classes = json.loads(metadata["classes"])
        return error_details_pb2.ErrorInfo(
            reason=classes[0] if classes else spark.reason, domain=ERROR_DOMAIN, metadata=metadata
        )
    mapping = _mapping(exc)
    error_class, sql_state = mapping.error_class, mapping.sql_state
    parameters = {"message": str(exc)}
    if isinstance(exc, errors.ScanError):
        error_class, sql_state = exc.error_class, exc.sql_state
    if isinstance(exc, errors.StatementSyntaxError):
        parameters = {"error": exc.near, "hint": f": {exc.problem}" if exc.problem else ""}
    return error_details_pb2.ErrorInfo(
        reason=mapping.classes[0],
        domain=ERROR_DOMAIN,
        metadata={
            "classes": json.dumps(list(mapping.classes), separators=(",", ":")),
            "errorClass": error_class,
            "messageParameters": json.dumps(parameters),
            "sqlState": sql_state,
        },
    )


def to_grpc_status(exc: BaseException, request: Message | None = None) -> Status:
    """The status of ``exc``: Spark's own for its errors, else one the client of ``request``
    rebuilds as typed (pyspark when there is no request)."""
    if isinstance(exc, errors.UpstreamFailed) and isinstance(exc.status, grpc.aio.AioRpcError):
        status = upstream_status(exc.status, request)
        return named_status(status, exc.table) if exc.table else status
    info = error_info(exc)
    lead = f"[{info.metadata['errorClass']}] "
    message = str(exc)
    if sparks_info(exc) is None and not message.startswith(lead):
        message = lead + message
    if is_scala_client(request):
        in_scala_templates(info, message)
    detail = AnyProto()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, _mapping(exc).code.name), message=message, details=[detail]
    )
    built = rpc_status.to_status(status)
    return Status(built.code, built.details, tuple(built.trailing_metadata))


async def abort_with(exc: BaseException, context: Any, request: Message | None = None) -> NoReturn:
    """End the client's call with the status of ``exc`` (for the client of ``request``)."""
    status = to_grpc_status(exc, request)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")


