"""One error hierarchy for the whole project.

Every error a user can cause names the thing it is about (table, file, column,
line) and says what to do. The gateway maps these classes to gRPC status codes
in one place (``connect_plugin.server.transport.status``); nothing else decides codes.

Scan errors are mostly raised inside Spark's Python workers, where the only
thing that reaches the gateway is text: Spark's own error message with the
worker's traceback in it. So each scan error has an ``error_class``, the
worker puts it in front of the message (``marked_message``), and the gateway
finds it again in Spark's text (``find_marked``) to give the client that
class and message first. Both ends of that protocol live here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar


class ConnectPluginError(Exception):
    """Base class of every error raised by connect-plugin."""


class ConfigError(ConnectPluginError):
    """A setting is missing, malformed or contradicts another one."""


class EnvironmentProblem(ConnectPluginError):
    """The machine lacks something the embedded stack needs (Java, ports, jars)."""


class UpstreamUnavailable(ConnectPluginError):
    """The Spark Connect server the gateway fronts cannot be reached or did not start."""


class UpstreamFailed(ConnectPluginError):
    """Spark refused or failed a request the gateway sent on a user's behalf.

    ``error_class`` is the ``errorClass`` of the ``google.rpc.ErrorInfo``
    Spark attached (empty when it sent none), so callers decide on what
    Spark meant, never on its message text. ``status`` is Spark's own gRPC
    error, which the gateway relays to the client exactly as it came, but
    naming ``table`` where Spark calls it ``unknown``: the temp table the
    request wrote into, as the client named it (quoted as Spark quotes names).
    """

    def __init__(
        self,
        message: str,
        *,
        error_class: str = "",
        error_id: str = "",
        status: object = None,
        table: str = "",
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.error_id = error_id
        self.status = status
        self.table = table

    @property
    def message(self) -> str:
        return str(self)


class Unauthenticated(ConnectPluginError):
    """A call without a valid bearer token for a gateway that requires one."""


class InvalidSessionId(ConnectPluginError):
    """A request names its session with an id that is not a canonical UUID."""


class PlanError(ConnectPluginError):
    """A plan sent by a client is malformed or uses something the gateway does not know."""


class UnknownExtension(PlanError):
    """A plan holds an extension message the gateway has no handler for."""


class NotSupportedYet(PlanError):
    """A plugin message is known but the gateway cannot execute it in this version."""


class SessionMismatch(ConnectPluginError):
    """A plugin message carries a session id other than the session of its request."""


class TempTableError(ConnectPluginError):
    """A temporary table statement cannot be carried out as written."""


class StatementSyntaxError(TempTableError):
    """A statement the gateway recognises is not written as its grammar says.

    ``near`` is what stands where the grammar failed, as Spark's parser names
    it (a token in quotes, or ``end of input``); ``problem`` what was expected.
    """

    def __init__(self, message: str, *, near: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.near = near
        self.problem = problem


class TempTableExists(TempTableError):
    """The name is already taken by a temporary table or view of this session."""


class TempTableNotFound(TempTableError):
    """No temporary table of this session has that name."""


class AmbiguousQualifier(TempTableError):
    """``session.name`` is no temp table or view, and a database named ``session`` exists."""


class TempTableQueryFailed(TempTableError):
    """Spark failed while running the query or the write of a temporary table."""


class NotNullViolation(TempTableError):
    """A row gives NULL to a column of a temp table declared NOT NULL.

    Found by Spark while it writes (the gateway's check raises it there), so
    the gateway knows it by its class on Spark's error (``error_class``).
    """

    error_class: ClassVar[str] = "CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL"
    sql_state: ClassVar[str] = "23502"


class ValueNotHeld(TempTableError):
    """A value that a temp table's format or partition folders cannot hold exactly.

    Found by Spark while it writes, as ``NotNullViolation`` is.
    """

    error_class: ClassVar[str] = "CONNECT_PLUGIN.TEMP_TABLE_VALUE_NOT_HELD"
    sql_state: ClassVar[str] = "22000"


class MergeCardinalityViolation(TempTableQueryFailed):
    """A MERGE into a temp table matched one of its rows with several source rows."""


class WorkspaceError(ConnectPluginError):
    """The temporary workspace cannot be created, written or cleaned."""


class WorkspaceInUse(WorkspaceError):
    """Another gateway holds the lock of the workspace this one was given."""


class RegistryError(ConnectPluginError):
    """The durable session registry cannot be opened, read or written."""


class ScanError(ConnectPluginError):
    """Base class of errors raised by the scan framework.

    ``error_class`` is the condition a client sees (``getCondition()``), the
    same whether the gateway or a Spark worker raised the error.
    """

    error_class: ClassVar[str] = "CONNECT_PLUGIN.SCAN"
    sql_state: ClassVar[str] = "22023"


class LoaderStateError(ScanError):
    """A result set loader call came at the wrong point of the batch and row protocol."""


class BatchFull(LoaderStateError):
    """A row was started on a full batch; harvest it and start the next batch first."""


class ColumnNotFound(ScanError):
    """A row writer was asked for a column that was never added."""


class DuplicateColumn(ScanError):
    """A column was added under a name that, ignoring case, already exists."""


class UnsupportedColumnType(ScanError):
    """A column has an Arrow type the row writer cannot build."""


class ColumnTypeError(ScanError):
    """A value does not fit the type of the column it was written to."""


class MissingValue(ScanError):
    """A non-nullable column whose type has no empty value was left without a value."""


class RowShapeError(ScanError):
    """A row given to a bulk write is not a tuple or mapping with one value per column."""


class ValueTooLarge(ScanError):
    """A single value needs more bytes than a whole batch may hold."""


class RowTooLarge(ScanError):
    """One row needs more bytes than a whole batch may hold."""


class InvalidScanSpec(ScanError):
    """A scan request names no paths, an unknown format or policy, or a malformed column."""


class ScanPathNotFound(ScanError):
    """A path or glob of a scan matches no file or directory."""

    error_class = "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND"
    sql_state = "42K03"


class UnreadableFile(ScanError):
    """A file of a scan cannot be opened, decompressed or decoded as its format."""

    error_class = "CONNECT_PLUGIN.SCAN_UNREADABLE_FILE"
    sql_state = "KD001"


class SchemaConflict(ScanError):
    """Files give a column types that no widening rule reconciles and no schema settles."""

    error_class = "CONNECT_PLUGIN.SCAN_SCHEMA_CONFLICT"
    sql_state = "42KD9"


class SchemaEvolutionError(ScanError):
    """A file has columns the fixed schema lacks and ``evolution`` is ``fail_on_new_columns``."""

    error_class = "CONNECT_PLUGIN.SCAN_NEW_COLUMNS"
    sql_state = "KD003"


class MissingColumn(ScanError):
    """A projected column that no file has, under ``missing_columns='error'``."""

    error_class = "CONNECT_PLUGIN.SCAN_MISSING_COLUMN"
    sql_state = "42703"


class ScanWorkerLost(ScanError):
    """A Spark Python worker exited while it ran a query that reads a scan (killed, out of
    memory, crashed): the gateway knows it only from Spark's error, never raises it."""

    error_class = "CONNECT_PLUGIN.SCAN_WORKER_LOST"
    sql_state = "38000"


class BadRecord(ScanError):
    """A record cannot be read under the scan's schema and ``on_error`` is ``fail``."""

    error_class = "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    sql_state = "22000"


class ScanInternalError(ScanError):
    """The scan failed with an error of its own code, not of the files or options (a bug)."""

    error_class = "CONNECT_PLUGIN.SCAN_INTERNAL"
    sql_state = "XX000"


class SettingProtected(ConnectPluginError):
    """A client tried to change a session setting the gateway relies on."""


class QuotaExceeded(ConnectPluginError):
    """A user's session, temp table or bytes would go over a configured quota.

    ``quota`` names the quota (its setting without the ``quota_`` prefix:
    ``sessions_per_user``, ``tables_per_session``, ``bytes_per_session``), so
    the metrics count refusals by quota without reading the message.
    """

    def __init__(self, message: str, *, quota: str = "unknown") -> None:
        super().__init__(message)
        self.quota = quota


class NoEngine(ConnectPluginError):
    """Under share level user or group, a caller whose sessions have no engine to go to: a
    user in no group of the tokens file, or an owner with no engine named and none started
    here."""


class SessionClosed(ConnectPluginError):
    """A call of a session that ended without its client asking (its engine exited)."""


class RegistryInUse(RegistryError):
    """Another gateway holds the lock of the session registry this one was given."""


MARKED_MESSAGE_LIMIT = 1000
"""Characters of a scan error's message the gateway puts on the first line; the whole
message stays in Spark's text after it."""

MARK_SEARCH_LIMIT = 64 * 1024
"""Characters at the end of an error text searched for a mark. The mark is the last
line of a worker's traceback, near the end of Spark's text; this bounds the work on
errors of any size."""

_MARK = re.compile(
    re.escape(ScanError.__module__)
    + r"\.[A-Za-z_][A-Za-z0-9_]*: \[(CONNECT_PLUGIN\.SCAN(?:_[A-Z]+)*)\] ([^\n]*)"
)
"""A scan error as the last line of a Python traceback prints it: ``module.Class: message``."""


@dataclass(frozen=True)
class Marked:
    """A scan error found in text: its class and its one-line message."""

    error_class: str
    message: str

    @property
    def first_line(self) -> str:
        """The line a client should read first, in Spark's ``[CLASS] message`` form."""
        return f"[{self.error_class}] {self.message}"


def marked_message(exc: ScanError) -> str:
    """``exc``'s message on one line, led by its error class (unchanged if it already is)."""
    text = str(exc)
    lead = f"[{exc.error_class}] "
    if text.startswith(lead):
        return text
    return lead + " ".join(text.splitlines())


def scan_error_classes() -> frozenset[str]:
    """The error class of every scan error there is."""
    return frozenset(scan_sql_states())


def scan_sql_states() -> dict[str, str]:
    """The SQL state of each scan error class."""
    found: dict[str, str] = {}
    pending: list[type[ScanError]] = [ScanError]
    while pending:
        cls = pending.pop()
        found[cls.error_class] = cls.sql_state
        pending.extend(cls.__subclasses__())
    return found


def find_marked(text: str) -> Marked | None:
    """The last scan error in ``text`` printed as a traceback prints it, if any.

    Only a line of the form ``connect_plugin.errors.Name: [CLASS] message``
    with a known scan error class counts, so no other error is ever taken
    for one of ours.
    """
    window = text[-MARK_SEARCH_LIMIT:]
    known = scan_error_classes()
    found: Marked | None = None
    for match in _MARK.finditer(window):
        if match.group(1) in known:
            found = Marked(match.group(1), _bounded(match.group(2).rstrip()))
    return found


def _bounded(message: str) -> str:
    if len(message) <= MARKED_MESSAGE_LIMIT:
        return message
    return message[: MARKED_MESSAGE_LIMIT - 3] + "..."
