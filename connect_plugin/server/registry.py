"""Which temporary tables each session has.

Sessions are keyed by (user id, session id), tables by their lower-cased name
(Spark names are case-insensitive). Each session has an ``asyncio.Lock`` so
statements of one session that touch its tables run one at a time, while
different sessions never wait for each other.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class TempTable:
    """One temporary table: the name the user gave and where its files are."""

    name: str
    location: Path
    format: str
    schema_json: str
    partition_columns: tuple[str, ...]
    options: dict[str, str]
    rows: int
    created: datetime.datetime

    @property
    def key(self) -> str:
        return self.name.lower()


@dataclass
class SessionEntry:
    user_id: str
    session_id: str
    tables: dict[str, TempTable] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    server_side_session_id: str = ""


class SessionRegistry:
    """All sessions that have or had temporary tables, in this gateway's memory."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], SessionEntry] = {}

    def session(self, user_id: str, session_id: str) -> SessionEntry:
        key = (user_id, session_id)
        entry = self._sessions.get(key)
        if entry is None:
            entry = self._sessions[key] = SessionEntry(user_id, session_id)
        return entry

    def find(self, user_id: str, session_id: str) -> SessionEntry | None:
        return self._sessions.get((user_id, session_id))

    def table(self, user_id: str, session_id: str, name: str) -> TempTable | None:
        entry = self._sessions.get((user_id, session_id))
        return None if entry is None else entry.tables.get(name.lower())

    def forget(self, user_id: str, session_id: str) -> SessionEntry | None:
        return self._sessions.pop((user_id, session_id), None)

    def sessions(self) -> list[SessionEntry]:
        return list(self._sessions.values())
