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

One exception: a scan error raised in Spark's Python workers reaches us as
Spark's text around the worker's traceback, the cause on its last line
(``errors.find_marked``). Its status then holds the scan's class and
message on its first line and, on a second, Spark's own first line and
where the traces went: the Python traceback and the JVM stack stay in the
Spark server's log, which already has them. The ErrorInfo carries that
class and names no ``errorId``, so that pyspark shows the message alone,
without the JVM stack it would fetch; FetchErrorDetails, asked anyway,
answers the same (``scan_error_details``). Spark raises such an error from a Python worker
as ``PythonException``, which every pyspark client rebuilds with a fixed
first line and no error class; it becomes ``SparkRuntimeException``, the
exception "thrown from Spark with an error class". An analysis error stays
``AnalysisException``. Nothing else Spark sends is changed.

The Scala client (``clients.is_scala_client``) formats ``AnalysisException``,
``SparkRuntimeException`` and a few more from Spark's error templates, which
know no ``CONNECT_PLUGIN.*`` class: given one, it raises ``INTERNAL_ERROR``
instead. For it alone such an error carries ``MESSAGE_ONLY_CLASS``, a class
its templates know whose message is the status message as it is, with the
same ``classes`` and ``sqlState``, so it raises the exception pyspark
raises, with the same message (naming our class) and SQL state; only
``getCondition()`` differs. Exceptions it builds around the status message
(``SparkException``) keep our class, for it as for pyspark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.sql.connect.proto import base_pb2

from connect_plugin import errors
from connect_plugin.server.transport.clients import is_scala_client

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


_THROWABLE = ("java.lang.Exception", "java.lang.Throwable", "java.lang.Object")
_RUNTIME = ("java.lang.RuntimeException", *_THROWABLE)
SPARK_EXCEPTION = ("org.apache.spark.SparkException", *_THROWABLE)
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

OWN_CLASS_PREFIX = "CONNECT_PLUGIN."
"""Every error class of our own starts so; Spark's templates know none of them."""
SCALA_TEMPLATED = frozenset(
    (
        "org.apache.spark.sql.AnalysisException",
        "org.apache.spark.sql.catalyst.parser.ParseException",
        "org.apache.spark.SparkRuntimeException",
        "java.lang.UnsupportedOperationException",
    )
)
"""Of the JVM classes the gateway lists, those whose exception the Scala client formats from
the template of ``errorClass`` (Spark's ``GrpcExceptionConverter.errorFactory``): a class its
templates lack makes it raise ``INTERNAL_ERROR``. It builds ``SparkException`` and classes it
does not know as a ``SparkException`` around the status message, keeping any class."""
MESSAGE_ONLY_CLASS = "_LEGACY_ERROR_TEMP_3100"
"""A class in Spark's templates (``error-conditions.json``) whose message is its ``message``
parameter alone, with no prefix and no SQL state of its own: the class the Scala client itself
gives an ``AnalysisException`` that came without one. Given a ``sqlState`` with it, the client
reports that state (SPARK-54887)."""


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
            ("org.apache.spark.SparkRuntimeException", *_RUNTIME),
            "MERGE_CARDINALITY_VIOLATION",
            "23K01",
        ),
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


@dataclass(frozen=True)
class Status:
    """What ends a client's call: code, message, trailers (with the error details)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: Sequence[tuple[str, str | bytes]]


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
        return upstream_status(exc.status, request)
    info = error_info(exc)
    lead = f"[{info.metadata['errorClass']}] "
    message = str(exc)
    if sparks_info(exc) is None and not message.startswith(lead):
        message = lead + message
    if is_scala_client(request):
        _in_scala_templates(info, message)
    detail = AnyProto()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, _mapping(exc).code.name), message=message, details=[detail]
    )
    built = rpc_status.to_status(status)
    return Status(built.code, built.details, tuple(built.trailing_metadata))


def _scala_templates_lack(error_class: str, classes: Sequence[str]) -> bool:
    """Whether the Scala client would look ``error_class`` up in Spark's templates, which
    lack it."""
    return error_class.startswith(OWN_CLASS_PREFIX) and not SCALA_TEMPLATED.isdisjoint(classes)


def _in_scala_templates(info: error_details_pb2.ErrorInfo, message: str) -> None:
    """``info`` with ``MESSAGE_ONLY_CLASS`` formatting ``message``, if the Scala client's
    templates lack its class."""
    try:
        classes = json.loads(info.metadata.get("classes", "[]"))
    except ValueError:
        return
    error_class = info.metadata.get("errorClass", "")
    if isinstance(classes, list) and _scala_templates_lack(error_class, classes):
        info.metadata["errorClass"] = MESSAGE_ONLY_CLASS
        info.metadata["messageParameters"] = json.dumps({"message": message})


def upstream_status(error: grpc.aio.AioRpcError, request: Message | None = None) -> Status:
    """The status and trailers Spark sent, exactly, unless it holds a scan error."""
    sent = Status(error.code(), error.details() or "", tuple(error.trailing_metadata() or ()))
    return scan_error_status(sent, request)


def scan_error_status(sent: Status, request: Message | None = None) -> Status:
    """``sent`` leading with the scan error whose traceback it holds; else ``sent`` itself.

    For the Scala client the ErrorInfo names a class its templates know.
    """
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
    status.message = _abbreviated(scan_error_message(found, status.message))
    scala = is_scala_client(request)
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            _mark_info(info, found)
            for key in ("errorId", "stackTrace"):
                if key in info.metadata:
                    del info.metadata[key]
            if scala:
                _in_scala_templates(info, status.message)
            detail.Pack(info)
    trailers = list(sent.trailing_metadata)
    trailers[index] = (STATUS_DETAILS_KEY, status.SerializeToString())
    return Status(sent.code, status.message, tuple(trailers))


SPARKS_LEAD = re.compile(r"^(\[[A-Z][A-Z0-9_.]*\][^\n]*?)(?::\s*Traceback|\n|$)")
"""The first line of Spark's own text, up to the Python traceback it goes on with."""

SPARKS_LEAD_LIMIT = 200
"""Characters of Spark's own first line a scan error's message quotes, at most."""


def scan_error_message(found: errors.Marked, sparks_text: str) -> str:
    """What the client reads of a scan error: its class and cause, then Spark's own first
    line and where the traces are."""
    match = SPARKS_LEAD.match(sparks_text.lstrip())
    lead = "" if match is None else match.group(1).strip().rstrip(":.")
    if len(lead) > SPARKS_LEAD_LIMIT:
        lead = lead[: SPARKS_LEAD_LIMIT - 3] + ".."
    spark = f"Spark: {lead}. " if lead else ""
    return f"{found.first_line}\n{spark}The Python and JVM traces are in the Spark server's log."


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
    info.metadata["sqlState"] = errors.scan_sql_states()[found.error_class]


def _classes_of_scan_error(classes: Sequence[str]) -> list[str]:
    """The JVM classes a client should see for a scan error Spark raised as ``classes``."""
    if PYTHON_EXCEPTION in classes:
        return list(RUNTIME_EXCEPTION_CLASSES)
    return list(classes)


def scan_error_details(response: bytes, request: Message | None = None) -> bytes:
    """A FetchErrorDetails answer agreeing with ``scan_error_status``; else exactly as sent.

    pyspark and the Scala client ask for these details when the status names
    an ``errorId`` and take the message, error class and parameters from them.
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
    root.message = scan_error_message(found, root.message)
    for error in details.errors:
        del error.stack_trace[:]
    root.ClearField("cause_idx")
    classes = _classes_of_scan_error(root.error_type_hierarchy)
    del root.error_type_hierarchy[:]
    root.error_type_hierarchy.extend(classes)
    root.spark_throwable.error_class = found.error_class
    root.spark_throwable.sql_state = errors.scan_sql_states()[found.error_class]
    root.spark_throwable.message_parameters.clear()
    root.spark_throwable.message_parameters["message"] = found.message
    if is_scala_client(request) and _scala_templates_lack(found.error_class, classes):
        root.spark_throwable.error_class = MESSAGE_ONLY_CLASS
        root.spark_throwable.message_parameters["message"] = root.message
    result: bytes = details.SerializeToString()
    return result


async def abort_with(exc: BaseException, context: Any, request: Message | None = None) -> NoReturn:
    """End the client's call with the status of ``exc`` (for the client of ``request``)."""
    status = to_grpc_status(exc, request)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")


async def relay(
    error: grpc.aio.AioRpcError, context: Any, request: Message | None = None
) -> NoReturn:
    """End the client's call with exactly the status and trailers Spark sent."""
    status = upstream_status(error, request)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")
