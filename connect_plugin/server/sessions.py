"""Sessions as the gateway knows them, starting with the one spelling of their ids.

Spark Connect keys a session by the exact (user id, session id) strings: an
upper-case copy of an id is another session to Spark. The gateway keeps a
session's files in a folder named by its id, so two spellings of one UUID
would share that folder while Spark and the registry keep them apart, and a
release of one would delete the other's tables. One rule closes that: every
request must name its session (and a clone its new session) with a
canonical UUID, lower-case 8-4-4-4-12 hex as every Spark Connect client
generates it; anything else is refused with INVALID_ARGUMENT naming the id,
before any other part of the gateway sees the request.
"""

from __future__ import annotations

import re

from google.protobuf.message import Message

from connect_plugin.errors import InvalidSessionId

_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_canonical_session_id(session_id: str) -> bool:
    return _CANONICAL.fullmatch(session_id) is not None


def check_session_id(session_id: str, what: str = "session id") -> str:
    """``session_id`` itself when canonical, else ``InvalidSessionId`` naming it."""
    if _CANONICAL.fullmatch(session_id) is None:
        raise InvalidSessionId(
            f"{what} [{session_id}] is not a canonical UUID: the gateway accepts session ids "
            "only as lower-case 8-4-4-4-12 hex (as str(uuid.uuid4()) writes them), so that one "
            "session never has two spellings; reconnect with the id in lower case"
        )
    return session_id


def admit_request(request: Message) -> None:
    """Refuse a request whose session (or clone target) id is not canonical."""
    check_session_id(getattr(request, "session_id", ""))
    new_session_id = getattr(request, "new_session_id", "")
    if new_session_id:
        check_session_id(new_session_id, "new session id")
