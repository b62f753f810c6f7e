"""The audit log (``audit_log``): one JSON line per statement the gateway handles and per refusal.

Each line holds the time (UTC, ISO 8601), the user (the token's user when
the gateway authenticates, else the one the client claims), the session id,
the operation id the request names (null if none), the RPC method, what was handled (``kind``: the statement or plugin message,
e.g. ``CreateTempTable``, ``DropTempTable``, ``Scan``; or ``refusal``), the
temp table it names if any, the outcome (``ok``, ``refused``, ``failed``)
and the error class of a refusal or failure. Never a token, never SQL text,
never an option value: a statement is known by its kind and table name only.

``stderr`` writes to the gateway's standard error; any other value is a
file, created (and kept) mode 0600 and appended to.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

from google.protobuf.message import Message

from connect_plugin.server.sessions.private_files import open_private
from connect_plugin.server.transport.status import error_class_of

STDERR = "stderr"


class AuditLog:
    """Writes audit lines, whole, one at a time, from any thread."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._owned: IO[str] | None = None
        if target == STDERR:
            self._stream: IO[str] = sys.stderr
        else:
            fd = open_private(Path(target).expanduser(), os.O_WRONLY | os.O_APPEND)
            self._owned = self._stream = os.fdopen(fd, "a", encoding="utf-8")

    def record(
        self,
        *,
        method: str,
        kind: str,
        outcome: str,
        user: str = "",
        session: str = "",
        table: str | None = None,
        error_class: str | None = None,
        operation: str | None = None,
    ) -> None:
        entry: dict[str, Any] = {
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
            "user": user,
            "session": session,
            "operation": operation,
            "method": method,
            "kind": kind,
            "table": table,
            "outcome": outcome,
            "error_class": error_class,
        }
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self._stream.write(line)
            self._stream.flush()

    def refused(self, method: str, reason: BaseException, message: Message | None) -> None:
        """A call the gateway refused itself (``Forwarder``'s ``refusal``), unless the
        refusal of a statement already has its line."""
        if getattr(reason, "audited", False):
            return
        user, session = who(message)
        self.record(
            method=method,
            kind="refusal",
            outcome="refused",
            user=user,
            session=session,
            error_class=error_class_of(reason),
            operation=operation_of(message),
        )

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()


def operation_of(message: Message | None) -> str | None:
    """The operation id a request names (an ExecutePlan's, which Spark tags its jobs with);
    None for a request that names none."""
    operation = getattr(message, "operation_id", "")
    return str(operation) if operation else None


def who(message: Message | None) -> tuple[str, str]:
    """The user and session a decoded request names (empty when it names none)."""
    if message is None:
        return "", ""
    user = getattr(getattr(message, "user_context", None), "user_id", "")
    return str(user or ""), str(getattr(message, "session_id", "") or "")
