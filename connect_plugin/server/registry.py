"""Which temporary tables each session has.

Sessions are keyed by (user id, session id), tables by their lower-cased name
(Spark names are case-insensitive). Each session has an ``asyncio.Lock`` so
statements of one session that touch its tables run one at a time, while
different sessions never wait for each other.

The registry answers from memory and writes every change through to a
``SessionStore`` (SQLite in the workspace by default), so a restarted gateway
loads the same sessions and tables. Only ``ready`` tables live in memory;
rows a crash left ``creating`` or ``dropping`` are for start-up recovery.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterable
from dataclasses import dataclass, field

from connect_plugin.server.session_store import (
    SessionStore,
    Snapshot,
    StoredSession,
    TableState,
    TempTable,
    now,
)

__all__ = ["SessionEntry", "SessionRegistry", "TempTable"]


@dataclass
class SessionEntry:
    user_id: str
    session_id: str
    tables: dict[str, TempTable] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    server_side_session_id: str = ""
    creating: collections.Counter[str] = field(default_factory=collections.Counter)
    """Lower-cased names with a CTTAS under way (waiting for the lock or running)."""
    writes: dict[str, str] = field(default_factory=dict)
    """Upstream operation id of each CTTAS write running now, with its table's name."""


class SessionRegistry:
    """All sessions that have or had temporary tables: in memory, written through."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._sessions: dict[tuple[str, str], SessionEntry] = {}

    def load(self) -> Snapshot:
        """Fill memory from the store (sessions and their ready tables); returns all rows."""
        snapshot = self.store.load()
        for stored in snapshot.sessions:
            entry = self.session(stored.user_id, stored.session_id)
            entry.server_side_session_id = stored.server_side_session_id
        for row in snapshot.tables:
            if row.state is TableState.READY:
                self.session(row.user_id, row.session_id).tables[row.table.key] = row.table
        return snapshot

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

    # Write-through steps; the caller holds the session's lock and does the
    # file and upstream work in between, in the order the store's docstring gives.

    def begin_create(
        self, entry: SessionEntry, table: TempTable, operation_id: str, server_side_session_id: str
    ) -> None:
        """Record a table as ``creating`` before anything of it exists."""
        if server_side_session_id:
            entry.server_side_session_id = server_side_session_id
        stored = StoredSession(entry.user_id, entry.session_id, entry.server_side_session_id, now())
        self.store.add_table(stored, table, TableState.CREATING, operation_id)

    def finish_create(
        self, entry: SessionEntry, table: TempTable, replaced: TempTable | None
    ) -> None:
        """The table's view exists: make it ``ready`` (and the replaced one ``dropping``)."""
        self.store.finish_create(
            table.location, table.rows, None if replaced is None else replaced.location
        )
        entry.tables[table.key] = table

    def begin_drop(self, entry: SessionEntry, tables: Iterable[TempTable]) -> None:
        """Mark tables ``dropping`` before their views and files go."""
        self.store.set_state([t.location for t in tables], TableState.DROPPING)

    def cancel_drop(self, entry: SessionEntry, table: TempTable) -> None:
        """Dropping failed before anything was removed: the table stays ``ready``."""
        self.store.set_state([table.location], TableState.READY)

    def unlist(self, entry: SessionEntry, table: TempTable) -> None:
        """The table's view is gone: clients no longer see it (its row stays until its files go)."""
        if entry.tables.get(table.key) is table:
            del entry.tables[table.key]

    def remove(self, tables: Iterable[TempTable]) -> None:
        """Delete the rows of tables whose folders are gone."""
        self.store.remove_tables([t.location for t in tables])

    def remove_session(self, user_id: str, session_id: str) -> None:
        """Delete a released session's rows (its folder is gone)."""
        self.store.remove_session(user_id, session_id)
