"""Sessions as the gateway knows them: one object per (user, session), one registry.

A ``Session`` holds what the registry keeps about one Spark Connect session:
its temp tables, the CTTAS writes running in it, the server-side session id
Spark gave it, its activity and its lifecycle. The ``SessionRegistry`` owns
these objects, in memory, and writes table changes through to a
``SessionStore`` (SQLite by default) so a restarted gateway loads the same
sessions and tables. Every change to a session's fields is one of the
registry's methods (``tests/unit/server/sessions/test_session_owner.py``
holds the rest of the gateway to that).

What other parts keep per session is theirs (the scans' registration of
their data source and cached scans, the answers the gateway gave itself):
each is a ``SessionPart`` the registry asks whether a session holds anything
there, and tells when it lets a session go or the session ended. A session that holds
nothing has no object: the registry only counts its calls in flight (a dict
update per call, on the path of every RPC), so that a session made during a
long call (a CTTAS) knows the call is still running.

A session's life is an explicit state:

- ``ACTIVE``: statements run, one at a time (``Session.lock``);
- ``REPAIRING``: start-up recovery could not ask the upstream about it yet;
  statements wait until the repair is done;
- ``RELEASING``: it is being released, expired or dropped as lost;
  statements wait, then run in a new session object if the client goes on;
- ``GONE``: forgotten; whoever still holds the object lets go of it.

Ids: Spark keys a session by the exact (user id, session id) strings, while
the workspace names a session's folder by its id, so two spellings of one
UUID would share a folder that Spark and the registry keep apart. Every
request must therefore name its session (and a clone its new session) with a
canonical UUID, lower-case 8-4-4-4-12 hex as every Spark Connect client
writes it; ``admit_request`` refuses anything else with INVALID_ARGUMENT
naming the id, before any other part of the gateway sees the request. An id
that is no UUID at all Spark refuses itself: such a request goes to Spark
untouched, for Spark's own error (``INVALID_HANDLE.FORMAT``,
``INVALID_CLONE_SESSION_REQUEST.TARGET_SESSION_ID_FORMAT``).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import enum
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from google.protobuf.message import Message

from connect_plugin.errors import InvalidSessionId
from connect_plugin.server.sessions.store import (
    SessionStore,
    Snapshot,
    StoredSession,
    StoredTable,
    TableState,
    now,
)
from connect_plugin.server.table_files.temp_table import TempTable, new_files_stamp

log = logging.getLogger(__name__)

_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_JAVA_HEX = re.compile(r"\+?[0-9A-Fa-f]+")
MAX_UUID_CHARS = 36
UUID_DASHES = 4

SessionKey = tuple[str, str]
"""(user id, session id), as Spark keys sessions."""


def check_session_id(session_id: str, what: str = "session id") -> str:
    """``session_id`` itself when canonical, else ``InvalidSessionId`` naming it."""
    if _CANONICAL.fullmatch(session_id) is None:
        raise InvalidSessionId(
            f"{what} [{session_id}] is not a canonical UUID: the gateway accepts session ids "
            "only as lower-case 8-4-4-4-12 hex (as str(uuid.uuid4()) writes them), so that one "
            "session never has two spellings; reconnect with the id in lower case"
        )
    return session_id


def spark_refuses(session_id: str) -> bool:
    """Whether Spark refuses ``session_id`` itself, whatever the request.

    Spark reads an id with Java's ``UUID.fromString``, which wants at most 36
    characters, exactly four dashes and a hexadecimal number (an optional
    ``+`` first) between them. Only ids that certainly fail it count: a part
    that is not ASCII is left to the gateway's own check, as Java reads some
    other digits as hexadecimal too.
    """
    if len(session_id) > MAX_UUID_CHARS or session_id.count("-") != UUID_DASHES:
        return True
    parts = session_id.split("-")
    return all(part.isascii() for part in parts) and not all(
        _JAVA_HEX.fullmatch(part) for part in parts
    )


def admit_request(request: Message) -> bool:
    """Refuse a request whose session (or clone target) id is not canonical.

    False: an id Spark refuses by itself (``spark_refuses``); the request
    goes to Spark untouched, so the client gets Spark's own error, as it
    would without the gateway, and nothing of the gateway acts on it. Only
    CloneSession names a second session; its message exists from Spark 4.1
    on, so the field is looked up by name rather than by the message's class.
    """
    session_id = getattr(request, "session_id", "")
    new_session_id = getattr(request, "new_session_id", "")
    if not new_session_id and _CANONICAL.fullmatch(session_id) is not None:
        return True  # what nearly every request names: Spark takes it, and so does the gateway
    if spark_refuses(session_id) or (new_session_id and spark_refuses(new_session_id)):
        return False
    check_session_id(session_id)
    if new_session_id:
        check_session_id(new_session_id, "new session id")
    return True


class Lifecycle(enum.Enum):
    ACTIVE = "active"
    REPAIRING = "repairing"
    RELEASING = "releasing"
    GONE = "gone"


class SessionPart(Protocol):
    """What another part of the gateway keeps per session, beside the registry's own.

    ``holds``: whether forgetting the session now would lose something of
    the part's (the registry then keeps the session's object); ``let_go``:
    the registry keeps no object for the session any more, because it holds
    nothing (``ended`` False) or because the session ended: released,
    expired, lost (``ended`` True).
    """

    def holds(self, session: Session) -> bool: ...

    def let_go(self, session: Session, *, ended: bool) -> None: ...

@dataclass(eq=False)
class Session:
    """All the gateway keeps about one session."""

    user_id: str
    session_id: str
    tables: dict[str, TempTable] = field(default_factory=dict)
    """Ready tables by lower-cased name."""
    creating: collections.Counter[str] = field(default_factory=collections.Counter)
    """Lower-cased names with a CTTAS under way (waiting for the lock or running)."""
    writes: dict[str, str] = field(default_factory=dict)
    """Upstream operation id of each CTTAS write running now, with its table's name."""
    server_side_session_id: str = ""
    last_activity: float = field(default_factory=now)
    """Wall-clock time of the last call's start or end (the registry's clock)."""
    persisted_activity: float = 0.0
    release_asked: bool = False
    """The client asked Spark to release the session: calls of it that fail meanwhile
    because Spark no longer has it are the release, not a loss."""
    stored: bool = False
    """Whether the store has a row for the session (it has or had a table)."""
    state: Lifecycle = Lifecycle.ACTIVE
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _settled: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._settled.set()

    @property
    def key(self) -> SessionKey:
        return (self.user_id, self.session_id)

    def holds_own_state(self) -> bool:
        """Whether forgetting the session now would lose anything of the registry's."""
        return bool(
            self.tables
            or self.creating
            or self.writes
            or self.stored
            or self.state in (Lifecycle.REPAIRING, Lifecycle.RELEASING)
        )

    def move_to(self, state: Lifecycle) -> None:
        self.state = state
        if state in (Lifecycle.ACTIVE, Lifecycle.GONE):
            self._settled.set()
        else:
            self._settled.clear()

    async def settled(self) -> None:
        """Wait while the session is being repaired or released."""
        await self._settled.wait()


class SessionRegistry:
    """Every session the gateway holds something for: in memory, tables written through."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._sessions: dict[SessionKey, Session] = {}
        self._calls: dict[SessionKey, collections.Counter[int]] = {}
        """Calls in flight per session, by the epoch they began in."""
        self._epoch = 0
        self._after_calls: dict[SessionKey, list[tuple[int, Callable[[], None]]]] = {}
        self._parts: list[SessionPart] = []

    def add_part(self, part: SessionPart) -> None:
        """Ask ``part`` whether a session holds anything, and tell it when one goes."""
        self._parts.append(part)

    def holds_state(self, session: Session) -> bool:
        """Whether forgetting the session now would lose anything, here or in a part."""
        return session.holds_own_state() or any(part.holds(session) for part in self._parts)

    def close(self) -> None:
        self.store.close()

    def __len__(self) -> int:
        return len(self._sessions)

    def load(self) -> Snapshot:
        """Fill memory from the store (sessions and their ready tables); returns all rows."""
        snapshot = self.store.load()
        for stored in snapshot.sessions:
            session = self.open(stored.user_id, stored.session_id)
            session.server_side_session_id = stored.server_side_session_id
            session.last_activity = session.persisted_activity = stored.last_activity
            session.stored = True
        for row in snapshot.tables:
            if row.state is TableState.READY:
                self.open(row.user_id, row.session_id).tables[row.table.key] = row.table
        return snapshot

    def table_rows(self) -> tuple[StoredTable, ...]:
        """Every table row the store holds, whatever its state."""
        return self.store.load().tables

    def open(self, user_id: str, session_id: str) -> Session:
        """The session's object, made when the gateway had none for it."""
        key = (user_id, session_id)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = Session(user_id, session_id)
        return session

    def find(self, user_id: str, session_id: str) -> Session | None:
        return self._sessions.get((user_id, session_id))

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def shares_folder(self, session: Session) -> bool:
        """Whether another user's session has the same id (and so the same folder)."""
        return any(
            other is not session and other.session_id == session.session_id and other.stored
            for other in self._sessions.values()
        )

    def begin_call(self, key: SessionKey) -> None:
        self._calls.setdefault(key, collections.Counter())[self._epoch] += 1
        session = self._sessions.get(key)
        if session is not None:
            session.last_activity = now()

    def end_call(self, key: SessionKey) -> None:
        calls = self._calls.get(key)
        if calls:
            # Which call ended is not known: the newest one is taken to have ended, so a
            # call counts as under way for as long as, or longer than, it really is.
            newest = max(calls)
            calls[newest] -= 1
            if not calls[newest]:
                del calls[newest]
            if not calls:
                del self._calls[key]
        self._run_after_calls(key)
        session = self._sessions.get(key)
        if session is not None:
            session.last_activity = now()
            self.let_go_if_idle(session)

    def in_flight(self, session: Session) -> int:
        """Calls of the session under way now."""
        return sum(self._calls.get(session.key, collections.Counter()).values())

    def busy_users(self) -> set[str]:
        """The users with a call under way now or a session holding state."""
        holding = {s.user_id for s in self._sessions.values() if self.holds_state(s)}
        return {user for user, _ in self._calls} | holding

    def after_other_calls(self, session: Session, work: Callable[[], None]) -> None:
        """Do ``work`` now if the session has no call under way but the one asking, else
        once every call under way now has ended.

        The files of a replaced temp table go this way: a query of the session
        that began before the replacement may still be reading them.
        """
        epoch = self._epoch
        self._epoch += 1
        if self.in_flight(session) > 1:
            self._after_calls.setdefault(session.key, []).append((epoch, work))
        else:
            work()

    def _run_after_calls(self, key: SessionKey) -> None:
        waiting = self._after_calls.get(key)
        if not waiting:
            return
        calls = self._calls.get(key)
        oldest = min(calls) if calls else self._epoch
        due = [work for epoch, work in waiting if epoch < oldest]
        left = [(epoch, work) for epoch, work in waiting if epoch >= oldest]
        if left:
            self._after_calls[key] = left
        else:
            del self._after_calls[key]
        for work in due:
            try:
                work()
            except Exception:
                log.exception("session %s: work after its calls failed", key[1])

    def let_go_if_idle(self, session: Session) -> None:
        """Keep no object for a session with no call in flight and nothing to remember."""
        if session.key not in self._calls and not self.holds_state(session):
            self._unlist(session)
            self._let_go(session, ended=False)

    def forget(self, session: Session) -> None:
        """The session is gone: no part of the gateway may act on this object any more.

        The parts hear that it ended unless another object of the same session is
        listed already (the client went on in a new one, whose state is not this one's).
        """
        session.move_to(Lifecycle.GONE)
        listed = self._sessions.get(session.key)
        self._unlist(session)
        self._let_go(session, ended=listed is None or listed is session)

    def _let_go(self, session: Session, *, ended: bool) -> None:
        for part in self._parts:
            part.let_go(session, ended=ended)

    def _unlist(self, session: Session) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]

    @asynccontextmanager
    async def statement(self, user_id: str, session_id: str) -> AsyncIterator[Session]:
        """The session, locked for one statement, once it is neither repaired nor released.

        A session released meanwhile is replaced by a new object: the client
        goes on in a new upstream session, with no tables.
        """
        while True:
            session = self.open(user_id, session_id)
            await session.settled()
            await session.lock.acquire()
            if session.state is Lifecycle.ACTIVE:
                break
            session.lock.release()
            if session.state is Lifecycle.GONE:
                self._unlist(session)
        try:
            yield session
        finally:
            session.lock.release()

    @asynccontextmanager
    async def creating(self, user_id: str, session_id: str, name: str) -> AsyncIterator[Session]:
        """The session, locked for a CTTAS of ``name`` (as ``statement``), with the name
        counted as being created (``Session.creating``) from this call on, while it waits
        for the lock too: a DROP of the name meanwhile waits for the CTTAS."""
        key = name.lower()
        waiting = self.open(user_id, session_id)
        waiting.creating[key] += 1
        try:
            async with self.statement(user_id, session_id) as session:
                if session is not waiting:
                    session.creating[key] += 1
                    waiting.creating[key] -= 1
                    waiting = session
                yield session
        finally:
            waiting.creating[key] -= 1
            if not waiting.creating[key]:
                del waiting.creating[key]

    def asked_release(self, session: Session) -> None:
        """The client asked Spark to release the session (``Session.release_asked``)."""
        session.release_asked = True

    @staticmethod
    def write_began(session: Session, operation_id: str, name: str) -> None:
        """A write of table ``name``'s files runs upstream as ``operation_id``."""
        session.writes[operation_id] = name

    @staticmethod
    def write_ended(session: Session, operation_id: str) -> bool:
        """The write ``operation_id`` no longer runs; False if it was not running."""
        return session.writes.pop(operation_id, None) is not None

    # Write-through steps; the caller holds the session's lock and does the
    # file and upstream work in between, in the order the store's docstring gives.

    def record_activity(self, session: Session) -> None:
        if session.stored and session.last_activity > session.persisted_activity:
            self.store.touch(session.user_id, session.session_id, session.last_activity)
            session.persisted_activity = session.last_activity

    def record_server_side_session(self, session: Session, server_side_session_id: str) -> None:
        session.server_side_session_id = server_side_session_id
        if session.stored:
            # Time 0 keeps the stored activity: this is not the client's activity.
            self.store.touch(session.user_id, session.session_id, 0.0, server_side_session_id)

    def begin_create(
        self, session: Session, table: TempTable, operation_id: str, server_side_session_id: str
    ) -> None:
        """Record a table as ``creating`` before anything of it exists."""
        if server_side_session_id:
            session.server_side_session_id = server_side_session_id
        stored = StoredSession(
            session.user_id, session.session_id, session.server_side_session_id, now()
        )
        self.store.add_table(stored, table, TableState.CREATING, operation_id)
        session.stored = True

    def finish_create(self, session: Session, table: TempTable, replaced: TempTable | None) -> None:
        """The table's view exists: make it ``ready`` (and the replaced one ``dropping``); its
        rows None when not known (a clone of a table inserted into since it was counted)."""
        self.store.finish_create(
            table.location,
            table.rows,
            None if replaced is None else replaced.location,
            size=table.size,
        )
        session.tables[table.key] = table

    def set_rows(self, session: Session, table: TempTable, rows: int | None) -> TempTable:
        """The table with its new row count (None: to be counted), in memory and stored."""
        counted = dataclasses.replace(table, rows=rows)
        self.store.set_rows(table.location, rows)
        if session.tables.get(table.key) is table:
            session.tables[table.key] = counted
        return counted

    def files_added(self, session: Session, table: TempTable, size: int | None) -> TempTable:
        """The table once Spark added files to it: its rows not known, its bytes ``size``, in
        memory and stored."""
        uncounted = dataclasses.replace(
            table, rows=None, size=size, files_stamp=new_files_stamp()
        )
        self.store.files_added(table.location, size)
        if session.tables.get(table.key) is table:
            session.tables[table.key] = uncounted
        return uncounted

    def begin_drop(self, tables: Iterable[TempTable]) -> None:
        """Mark tables ``dropping`` before their views and files go."""
        self.store.set_state([t.location for t in tables], TableState.DROPPING)

    def unlist_all(self, session: Session) -> list[TempTable]:
        """Mark every table of the session ``dropping`` and unlist them: clients no longer
        see them; their rows stay until their files go."""
        tables = list(session.tables.values())
        if tables:
            self.begin_drop(tables)
            session.tables.clear()
        return tables

    def cancel_drop(self, table: TempTable) -> None:
        """Dropping failed before anything was removed: the table stays ``ready``."""
        self.store.set_state([table.location], TableState.READY)

    @staticmethod
    def unlist(session: Session, table: TempTable) -> None:
        """The table's view is gone: clients no longer see it (its row stays until its files go)."""
        if session.tables.get(table.key) is table:
            del session.tables[table.key]

    def remove(self, tables: Iterable[TempTable]) -> None:
        """Delete the rows of tables whose folders are gone."""
        self.store.remove_tables([t.location for t in tables])

    def remove_session(self, session: Session) -> None:
        """Delete a gone session's rows (its folder is gone)."""
        self.store.remove_session(session.user_id, session.session_id)
        session.stored = False
