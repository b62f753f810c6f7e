"""Spark's errors on their way to the client: as Spark sent them, but for a few of ours.

Spark's error reaches the client exactly as Spark sent it (code, message,
trailers with their details), except where it holds an error the gateway
knows better than Spark's text says:

- A scan error raised in Spark's Python workers reaches us as Spark's text
  around the worker's traceback, the cause on its last line
  (``errors.find_marked``). Its status then holds the scan's class and
  message on its first line and, on a second, Spark's own first line and
  where the traces went: the Python traceback and the JVM stack stay in the
  Spark server's log, which already has them. The ErrorInfo carries that
  class and names no ``errorId``, so that pyspark shows the message alone,
  without the JVM stack it would fetch; FetchErrorDetails, asked anyway,
  answers the same (``scan_error_details``). Spark raises such an error
  from a Python worker as ``PythonException``, which every pyspark client
  rebuilds with a fixed first line and no error class; it becomes
  ``SparkRuntimeException``, the exception "thrown from Spark with an error
  class". An analysis error stays ``AnalysisException``.
- A temp table's value check (a NULL in a column declared NOT NULL, a value
  its format cannot hold) fails the write in Spark through ``raise_error``,
  which Spark reports as ``USER_RAISED_EXCEPTION``: the client gets the
  check's own class and message (``checked_value_status``).
- A Python worker of a query that reads a scan exits unexpectedly (it was
  killed, ran out of memory or crashed): Spark's error has no class and a
  JVM stack; the client gets the scan's ``SCAN_WORKER_LOST`` and what to do
  (``worker_lost_status``, for requests the gateway knows hold a scan).
- Spark says ``INVALID_HANDLE.SESSION_CHANGED`` when it restarted under a
  session: the ErrorInfo names no ``errorId``, since pyspark, which closes
  its session on that class, would fetch the details through the closed
  session and raise ``NO_ACTIVE_SESSION`` instead (``session_changed_status``).
- Spark names a temp table ``unknown`` in the errors of a write into it;
  the gateway, which knows which table the statement named, names it as the
  client wrote it (``named_status``).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from pyspark.sql.connect.proto import base_pb2

from connect_plugin import errors
from connect_plugin.server.transport.clients import is_scala_client

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
class Status:
    """What ends a client's call: code, message, trailers (with the error details)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: Sequence[tuple[str, str | bytes]]


def scala_templates_lack(error_class: str, classes: Sequence[str]) -> bool:
    """Whether the Scala client would look ``error_class`` up in Spark's templates, which
    lack it."""
    return error_class.startswith(OWN_CLASS_PREFIX) and not SCALA_TEMPLATED.isdisjoint(classes)


def in_scala_templates(info: error_details_pb2.ErrorInfo, message: str) -> None:
    """``info`` with ``MESSAGE_ONLY_CLASS`` formatting ``message``, if the Scala client's
    templates lack its class."""
    try:
        classes = json.loads(info.metadata.get("classes", "[]"))
    except ValueError:
        return
    error_class = info.metadata.get("errorClass", "")
    if isinstance(classes, list) and scala_templates_lack(error_class, classes):
        info.metadata["errorClass"] = MESSAGE_ONLY_CLASS
        info.metadata["messageParameters"] = json.dumps({"message": message})


def upstream_status(error: grpc.aio.AioRpcError, request: Message | None = None) -> Status:
    """The status and trailers Spark sent, exactly, unless it holds a scan error or the
    error of a temp table's value check, or says that Spark's session changed."""
    sent = Status(error.code(), error.details() or "", tuple(error.trailing_metadata() or ()))
    return session_changed_status(checked_value_status(scan_error_status(sent, request), request))


SESSION_CHANGED = "INVALID_HANDLE.SESSION_CHANGED"


def session_changed_status(sent: Status) -> Status:
    """``sent`` naming no details to fetch when it says the session's server-side session
    changed (Spark restarted; a ``--local`` gateway restarts its Spark with it).

    pyspark closes its session on that class and then fetches the error's
    details through the session it closed, which raises ``NO_ACTIVE_SESSION``
    in place of Spark's error; without an ``errorId`` the client raises
    Spark's class and message ("... The existing Spark server driver instance
    has restarted. Please reconnect.").
    """
    decoded = _decoded(sent)
    if decoded is None:
        return sent
    index, status = decoded
    changed = False
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info) and info.metadata.get("errorClass") == SESSION_CHANGED:
            _without_details_to_fetch(info)
            detail.Pack(info)
            changed = True
    return _encoded(sent, index, status) if changed else sent


def _decoded(sent: Status) -> tuple[int, status_pb2.Status] | None:
    """Where ``sent``'s trailers hold its status details, and those details decoded."""
    keys = [key for key, _ in sent.trailing_metadata]
    if STATUS_DETAILS_KEY not in keys:
        return None
    index = keys.index(STATUS_DETAILS_KEY)
    packed = sent.trailing_metadata[index][1]
    if not isinstance(packed, bytes):
        return None
    try:
        return index, status_pb2.Status.FromString(packed)
    except DecodeError:
        return None


def _encoded(sent: Status, index: int, status: status_pb2.Status) -> Status:
    """``sent`` with the details ``status`` at ``index`` of its trailers, and its message."""
    trailers = list(sent.trailing_metadata)
    trailers[index] = (STATUS_DETAILS_KEY, status.SerializeToString())
    return Status(sent.code, status.message, tuple(trailers))


def _without_details_to_fetch(info: error_details_pb2.ErrorInfo) -> None:
    """``info`` naming no error to fetch: pyspark then shows the status message alone, without
    the JVM stack (and the text) that FetchErrorDetails would give."""
    for key in ("errorId", "stackTrace"):
        if key in info.metadata:
            del info.metadata[key]


def scan_error_status(sent: Status, request: Message | None = None) -> Status:
    """``sent`` leading with the scan error whose traceback it holds; else ``sent`` itself.

    For the Scala client the ErrorInfo names a class its templates know.
    """
    if _SCAN_MARK not in sent.details[-errors.MARK_SEARCH_LIMIT :]:
        return sent
    decoded = _decoded(sent)
    if decoded is None:
        return sent
    index, status = decoded
    found = errors.find_marked(status.message)
    if found is None:
        return sent
    status.message = _abbreviated(scan_error_message(found, status.message))
    scala = is_scala_client(request)
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            _mark_info(info, found)
            _without_details_to_fetch(info)
            if scala:
                in_scala_templates(info, status.message)
            detail.Pack(info)
    return _encoded(sent, index, status)


USER_RAISED = "USER_RAISED_EXCEPTION"
CHECKS = {cls.error_class: cls.sql_state for cls in (errors.NotNullViolation, errors.ValueNotHeld)}
"""The classes of the errors a temp table's value checks raise in Spark, and their SQL states."""
_RAISED = re.compile(
    r"^\[USER_RAISED_EXCEPTION\] \[(CONNECT_PLUGIN\.[A-Z_]+)\] (.*?)(?: SQLSTATE: P0001)?$",
    re.DOTALL,
)


def checked_value_status(sent: Status, request: Message | None = None) -> Status:
    """``sent`` as the error of a temp table's value check (``tables.value_checks``), when it
    is one: Spark raises it as ``USER_RAISED_EXCEPTION`` with the check's class leading its
    message; the client gets that class, its SQL state and the message alone."""
    if not sent.details.startswith(f"[{USER_RAISED}] [{OWN_CLASS_PREFIX}"):
        return sent
    decoded = _decoded(sent)
    if decoded is None:
        return sent
    index, status = decoded
    found = _RAISED.match(status.message)
    if found is None or found.group(1) not in CHECKS:
        return sent
    error_class, message = found.group(1), " ".join(found.group(2).split())
    status.message = f"[{error_class}] {message}"
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info) and info.metadata.get("errorClass") == USER_RAISED:
            info.metadata["errorClass"] = error_class
            info.metadata["messageParameters"] = json.dumps({"message": message})
            info.metadata["sqlState"] = CHECKS[error_class]
            _without_details_to_fetch(info)
            if is_scala_client(request):
                in_scala_templates(info, status.message)
            detail.Pack(info)
    return _encoded(sent, index, status)


WORKER_EXITED = "Python worker exited unexpectedly"
"""What Spark says of a Python worker that died under a task (``PythonRunner``)."""


def worker_lost_status(sent: Status) -> Status:
    """``sent`` as ``ScanWorkerLost`` when Spark says, with no class of its own, that a
    Python worker exited unexpectedly: a status of a request that reads a scan."""
    if WORKER_EXITED not in sent.details:
        return sent
    decoded = _decoded(sent)
    if decoded is None:
        return sent
    index, status = decoded
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            if info.metadata.get("errorClass"):
                return sent
            infos.append((detail, info))
    lost = errors.ScanWorkerLost
    message = (
        "a Spark Python worker exited unexpectedly while the query ran (it was killed, ran "
        "out of memory or crashed); the query reads a scan, whose files those workers read: "
        "run it again, and if it fails again look for the worker's end in the Spark server's "
        "log (spark.python.worker.faulthandler.enabled=true prints a crashed worker's stack)"
    )
    status.message = scan_error_message(errors.Marked(lost.error_class, message), status.message)
    for detail, info in infos:
        info.metadata["errorClass"] = lost.error_class
        info.metadata["messageParameters"] = json.dumps({"message": message})
        info.metadata["sqlState"] = lost.sql_state
        _without_details_to_fetch(info)
        detail.Pack(info)
    return _encoded(sent, index, status)


_UNKNOWN_TABLE = re.compile(r"\b(to|table) `unknown`")
"""How Spark names a temp table in its errors: the relation a temp table's view reads is
files, which have no table name."""


def named_status(sent: Status, table: str) -> Status:
    """``sent`` naming the temp table ``table`` (quoted as Spark quotes names) where Spark
    says ``unknown``: its message and its ``tableName`` parameter. The ErrorInfo then names
    no error to fetch, whose text would say ``unknown`` still."""
    if "`unknown`" not in sent.details:
        return sent
    decoded = _decoded(sent)
    if decoded is None:
        return sent

    def renamed(text: str) -> str:
        return _UNKNOWN_TABLE.sub(lambda m: f"{m.group(1)} {table}", text, count=1)

    index, status = decoded
    if _UNKNOWN_TABLE.search(status.message) is None:
        return sent
    status.message = renamed(status.message)
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            parameters = _parameters(info)
            if parameters.get("tableName") == "`unknown`":
                parameters["tableName"] = table
                info.metadata["messageParameters"] = json.dumps(parameters)
            _without_details_to_fetch(info)
            detail.Pack(info)
    return _encoded(sent, index, status)


def _parameters(info: error_details_pb2.ErrorInfo) -> dict[str, str]:
    try:
        parameters = json.loads(info.metadata.get("messageParameters", "{}"))
    except ValueError:
        return {}
    return parameters if isinstance(parameters, dict) else {}


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
    if is_scala_client(request) and scala_templates_lack(found.error_class, classes):
        root.spark_throwable.error_class = MESSAGE_ONLY_CLASS
        root.spark_throwable.message_parameters["message"] = root.message
    result: bytes = details.SerializeToString()
    return result


async def relay(
    error: grpc.aio.AioRpcError,
    context: Any,
    request: Message | None = None,
    adjust: Callable[[Status], Status] | None = None,
) -> NoReturn:
    """End the client's call with the status and trailers Spark sent (``upstream_status``),
    ``adjust``ed by what the gateway knows of the request."""
    status = upstream_status(error, request)
    if adjust is not None:
        status = adjust(status)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")
