"""Whether the upstream still has a session: alive, gone, or unknown.

Expiry, start-up recovery and the undo of a failed CTTAS all ask this, and
all ask it here. The answer comes from the structured ``google.rpc.ErrorInfo``
Spark attaches to its errors (``metadata["errorClass"]``), never from the
wording of a message:

- ``INVALID_HANDLE.SESSION_NOT_FOUND`` and ``INVALID_HANDLE.SESSION_CLOSED``:
  gone (never created, released, or expired by Spark);
- ``INVALID_HANDLE.SESSION_CHANGED``: gone as well. Spark raises it when a
  request names the server-side session it saw and Spark now holds another
  one under the same id, after a restart. The views that were the temp
  tables lived in the old server-side session, so for the gateway that
  session is gone whatever answers under the id now; the probe below reaches
  the same answer for the gateway's own calls by comparing server-side ids.
- ``INVALID_HANDLE.OPERATION_NOT_FOUND``: alive (the session answered; only
  the operation is unknown);
- anything else (no answer, a timeout, another error): unknown, and nothing
  is deleted on an unknown answer.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

from connect_plugin.errors import ConnectPluginError, UpstreamFailed
from connect_plugin.server.transport.upstream import UpstreamSession

GONE_ERROR_CLASSES = frozenset(
    (
        "INVALID_HANDLE.SESSION_NOT_FOUND",
        "INVALID_HANDLE.SESSION_CLOSED",
        "INVALID_HANDLE.SESSION_CHANGED",
    )
)
ALIVE_ERROR_CLASSES = frozenset(("INVALID_HANDLE.OPERATION_NOT_FOUND",))


class Liveness(enum.Enum):
    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"


def liveness_of(exc: BaseException) -> Liveness:
    """What an error of a call in the session says about the session."""
    if isinstance(exc, UpstreamFailed):
        if exc.error_class in GONE_ERROR_CLASSES:
            return Liveness.GONE
        if exc.error_class in ALIVE_ERROR_CLASSES:
            return Liveness.ALIVE
    return Liveness.UNKNOWN


@dataclass(frozen=True)
class Probe:
    """One probe's answer; ``server_side_session_id`` is the upstream's when alive."""

    liveness: Liveness
    server_side_session_id: str = ""
    reason: str = ""


async def probe(upstream: UpstreamSession, known: str, timeout_s: float) -> Probe:
    """Ask the upstream about the session without creating it.

    ``known`` is the server-side session id the gateway saw the session
    under ("" when it has seen none): another one means the session the
    gateway knew is gone.
    """
    try:
        current = await asyncio.wait_for(upstream.current_server_side_session_id(), timeout_s)
    except (TimeoutError, asyncio.TimeoutError):
        return Probe(Liveness.UNKNOWN, reason=f"no answer within {timeout_s:.0f} s")
    except ConnectPluginError as exc:
        found = liveness_of(exc)
        return Probe(Liveness.UNKNOWN if found is Liveness.ALIVE else found, reason=str(exc))
    if known and current != known:
        return Probe(
            Liveness.GONE,
            current,
            f"the upstream now has server-side session {current}, not {known}",
        )
    return Probe(Liveness.ALIVE, current)
