"""Who is calling: bearer tokens mapped to users.

The tokens file holds one ``user_id token [group]`` line per token (``#``
starts a comment); the group, which a user's lines must agree on, says whose
engine the user's sessions go to under ``share_level = "group"``. The gateway refuses a file that group or others can read, a token
shorter than ``MIN_TOKEN_LENGTH``, a token given twice, and a file without
tokens; its messages name the file and line, never a token. Only SHA-256
digests are kept, and a presented token is compared with every one of them
with ``hmac.compare_digest`` (the time taken does not depend on which
entry, if any, matches). ``reload`` (SIGHUP) swaps the tokens in one step,
or keeps the old ones when the new file is bad.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from connect_plugin.errors import ConfigError, Unauthenticated

log = logging.getLogger(__name__)

MIN_TOKEN_LENGTH = 16
AUTHORIZATION = "authorization"
_BEARER = "bearer "


@dataclass(frozen=True)
class _Entry:
    user_id: str
    digest: bytes
    group: str | None = None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def read_private_text(path: Path, what: str) -> str:
    """The text of a file of secrets (``what`` names it in errors), which only its owner may
    read; ``ConfigError`` naming what is wrong, never its content."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} [{path}]: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the {what} [{path}] is not UTF-8 text") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"the {what} [{path}] is open to group or others (mode {stat.S_IMODE(mode):o}); "
            f"make it private: chmod 600 {path}"
        )
    return text


def read_tokens(path: Path) -> tuple[_Entry, ...]:
    """The entries of the tokens file at ``path``; ``ConfigError`` naming what is wrong."""
    text = read_private_text(path, "tokens file")
    entries: list[_Entry] = []
    seen: dict[bytes, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        fields = content.split()
        if len(fields) not in (2, 3):
            raise ConfigError(
                f"{path}, line {number}: expected 'user_id token [group]', found "
                f"{len(fields)} fields"
            )
        user_id, token = fields[:2]
        group = fields[2] if len(fields) == 3 else None
        earlier = next((entry for entry in entries if entry.user_id == user_id), None)
        if earlier is not None and earlier.group != group:
            raise ConfigError(
                f"{path}, line {number}: user {user_id!r} is in group {group or '(none)'!r} "
                f"here and in {earlier.group or '(none)'!r} on an earlier line; give every "
                "line of a user the same group"
            )
        if len(token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"{path}, line {number}: the token of user {user_id!r} is shorter than "
                f"{MIN_TOKEN_LENGTH} characters; use e.g. "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        digest = _digest(token)
        if digest in seen:
            raise ConfigError(
                f"{path}, line {number}: the token of user {user_id!r} repeats the one on "
                f"line {seen[digest]}; every token must be different"
            )
        seen[digest] = number
        entries.append(_Entry(user_id, digest, group))
    if not entries:
        raise ConfigError(f"the tokens file [{path}] holds no 'user_id token [group]' line")
    return tuple(entries)


class TokenAuthenticator:
    """Maps the bearer token of a call's metadata to its user."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries = read_tokens(path)
        self._lock = threading.Lock()

    @property
    def users(self) -> frozenset[str]:
        return frozenset(entry.user_id for entry in self._entries)

    def group_of(self, user_id: str) -> str | None:
        """The group the tokens file puts ``user_id`` in; None: none."""
        return next((e.group for e in self._entries if e.user_id == user_id), None)

    def reload(self) -> bool:
        """Re-read the file; on a bad file keep the current tokens, log why, return False."""
        try:
            entries = read_tokens(self.path)
        except ConfigError as exc:
            log.error("kept the previous tokens: %s", exc)
            return False
        with self._lock:
            self._entries = entries
        log.info("re-read the tokens file [%s]: %d tokens", self.path, len(entries))
        return True

    def user_of(self, token: str) -> str | None:
        """The user whose token this is, comparing with every entry; None if none."""
        digest = _digest(token)
        found: str | None = None
        for entry in self._entries:
            if hmac.compare_digest(digest, entry.digest):
                found = entry.user_id
        return found

    def authenticate(self, metadata: Sequence[tuple[str, str | bytes]] | None) -> str:
        """The user of the call's ``authorization: Bearer`` token; ``Unauthenticated`` if none."""
        values = [value for key, value in metadata or () if key == AUTHORIZATION]
        if not values:
            raise Unauthenticated(
                "the gateway needs a token: connect with sc://host:port/;token=<your token>"
            )
        if len(values) > 1:
            raise Unauthenticated("the call carries more than one authorization header")
        value = values[0]
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text[: len(_BEARER)].lower() != _BEARER:
            raise Unauthenticated("the authorization header is not a Bearer token")
        user = self.user_of(text[len(_BEARER) :].strip())
        if user is None:
            raise Unauthenticated("the token is not one the gateway knows")
        return user
