"""Where the session registry survives the gateway: an embedded SQLite file.

The gateway writes every state change of a temporary table here before or
after the file and upstream action it stands for, so that whatever instant a
crash hits, the next start finds enough to finish or roll back the work:

- ``creating`` is written before Spark starts writing the table folder;
- ``ready`` once the view exists (in one transaction with the ``dropping``
  of the table it replaces, if any);
- ``dropping`` before the view and the files go;
- the row is deleted only after its folder is gone.

``SessionStore`` is the small interface the gateway needs; a shared database
can replace the SQLite file behind it. The SQLite store keeps one connection
in WAL mode with ``synchronous=NORMAL``: a commit is durable against a crash
of the gateway (SIGKILL included) and costs tens of microseconds, so the
event loop calls it inline.
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from connect_plugin.errors import RegistryError
from connect_plugin.server.sessions.private_files import secure_sqlite
from connect_plugin.server.table_files.temp_table import TempTable

SCHEMA_VERSION = 2
"""1: the first schema; 2: a table's ``size`` (a column added to a version 1 store)."""
BUSY_TIMEOUT_MS = 5_000


_UNCOUNTED = -1
"""The stored row count of a table whose rows are not known (``TempTable.rows`` None)."""


class TableState(enum.Enum):
    """Where a table is in its life; only ``ready`` tables are visible to clients."""

    CREATING = "creating"
    READY = "ready"
    DROPPING = "dropping"


@dataclass(frozen=True)
class StoredSession:
    """A session that has (or had) temporary tables."""

    user_id: str
    session_id: str
    server_side_session_id: str
    last_activity: float
    """Seconds since the epoch."""


@dataclass(frozen=True)
class StoredTable:
    """A table row: the table, whose session it is, its state and its write operation."""

    user_id: str
    session_id: str
    table: TempTable
    state: TableState
    operation_id: str = ""
    """The upstream operation that writes the table while it is ``creating``."""


@dataclass(frozen=True)
class Snapshot:
    """Everything a store holds, as loaded at start-up."""

    sessions: tuple[StoredSession, ...]
    tables: tuple[StoredTable, ...]


class SessionStore(Protocol):
    """The durable half of the session registry; every call is one short transaction."""

    def load(self) -> Snapshot: ...

    def add_table(
        self, session: StoredSession, table: TempTable, state: TableState, operation_id: str = ""
    ) -> None:
        """Insert a table row, and its session's row when it has none yet."""

    def set_state(self, locations: Sequence[Path], state: TableState) -> None: ...

    def finish_create(
        self, location: Path, rows: int | None, replaced: Path | None, *, size: int | None
    ) -> None:
        """Mark a created table ready (its rows, None when not known, and bytes) and,
        atomically, the one it replaces dropping."""

    def set_rows(self, location: Path, rows: int | None) -> None:
        """Record a table's row count (None: not known until counted again)."""

    def files_added(self, location: Path, size: int | None) -> None:
        """Spark added files to a table: its rows are not known any more, its bytes are
        ``size`` (None: not measured)."""

    def remove_tables(self, locations: Sequence[Path]) -> None: ...

    def remove_session(self, user_id: str, session_id: str) -> None:
        """Delete a session's row and all its table rows."""

    def touch(
        self, user_id: str, session_id: str, at: float, server_side_session_id: str = ""
    ) -> None:
        """Record activity (and the upstream's session id when known) of a session."""

    def close(self) -> None: ...


_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    server_side_session_id TEXT NOT NULL,
    last_activity REAL NOT NULL,
    PRIMARY KEY (user_id, session_id)
)""",
    """
CREATE TABLE IF NOT EXISTS temp_tables (
    location TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    format TEXT NOT NULL,
    schema_json TEXT NOT NULL,
    partition_columns TEXT NOT NULL,
    options TEXT NOT NULL,
    rows INTEGER NOT NULL,
    created TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('creating', 'ready', 'dropping')),
    operation_id TEXT NOT NULL,
    size INTEGER,
    FOREIGN KEY (user_id, session_id) REFERENCES sessions (user_id, session_id)
        ON DELETE CASCADE
)""",
    """
CREATE UNIQUE INDEX IF NOT EXISTS one_ready_table_per_name
    ON temp_tables (user_id, session_id, name_key) WHERE state = 'ready'""",
    "CREATE INDEX IF NOT EXISTS tables_of_session ON temp_tables (user_id, session_id)",
)

_TABLE_COLUMNS = (
    "location, user_id, session_id, name, name_key, format, schema_json, partition_columns, "
    "options, rows, created, state, operation_id, size"
)

_MIGRATIONS = {1: ("ALTER TABLE temp_tables ADD COLUMN size INTEGER",)}
"""The statements that bring a store of a version (the key) to the next one."""


class SqliteSessionStore:
    """A ``SessionStore`` in one SQLite file, for one gateway at a time.

    The workspace lock (``Workspace.lock``) keeps a second gateway away; the
    SQLite file itself is opened by this one connection only.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._guard = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            secure_sqlite(self.path)
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise RegistryError(
                f"cannot open the session registry [{self.path}]: {exc}; check that the "
                "workspace is writable"
            ) from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except (sqlite3.Error, RegistryError) as exc:
            self._db.close()
            if isinstance(exc, RegistryError):
                raise
            raise RegistryError(f"cannot use the session registry [{self.path}]: {exc}") from exc

    def _migrate(self) -> None:
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise RegistryError(
                f"the session registry [{self.path}] has schema version {version}, newer than "
                f"this gateway's {SCHEMA_VERSION}; run a newer connect-plugin"
            )
        if version == SCHEMA_VERSION:
            return
        with self._transaction() as db:
            if version == 0:
                statements: Sequence[str] = _SCHEMA
            else:
                statements = [s for v in range(version, SCHEMA_VERSION) for s in _MIGRATIONS[v]]
            for statement in statements:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._guard:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise RegistryError(
                    f"the session registry [{self.path}] failed: {exc}; the gateway repairs "
                    "half-done work at its next start"
                ) from exc

    def load(self) -> Snapshot:
        with self._transaction() as db:
            sessions = tuple(
                StoredSession(*row)
                for row in db.execute(
                    "SELECT user_id, session_id, server_side_session_id, last_activity "
                    "FROM sessions ORDER BY user_id, session_id"
                )
            )
            tables = tuple(
                _table_from_row(row)
                for row in db.execute(f"SELECT {_TABLE_COLUMNS} FROM temp_tables ORDER BY created")
            )
        return Snapshot(sessions, tables)

    def add_table(
        self, session: StoredSession, table: TempTable, state: TableState, operation_id: str = ""
    ) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT (user_id, session_id) DO "
                "UPDATE SET last_activity = excluded.last_activity, server_side_session_id = "
                "coalesce(nullif(excluded.server_side_session_id, ''), server_side_session_id)",
                (
                    session.user_id,
                    session.session_id,
                    session.server_side_session_id,
                    session.last_activity,
                ),
            )
            db.execute(
                f"INSERT INTO temp_tables ({_TABLE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(table.location),
                    session.user_id,
                    session.session_id,
                    table.name,
                    table.key,
                    table.format,
                    table.schema_json,
                    json.dumps(list(table.partition_columns)),
                    json.dumps(table.options, sort_keys=True),
                    _UNCOUNTED if table.rows is None else table.rows,
                    table.created.isoformat(),
                    state.value,
                    operation_id,
                    table.size,
                ),
            )

    def set_state(self, locations: Sequence[Path], state: TableState) -> None:
        with self._transaction() as db:
            db.executemany(
                "UPDATE temp_tables SET state = ? WHERE location = ?",
                [(state.value, str(location)) for location in locations],
            )

    def finish_create(
        self, location: Path, rows: int | None, replaced: Path | None, *, size: int | None
    ) -> None:
        with self._transaction() as db:
            if replaced is not None:
                db.execute(
                    "UPDATE temp_tables SET state = ? WHERE location = ?",
                    (TableState.DROPPING.value, str(replaced)),
                )
            db.execute(
                "UPDATE temp_tables SET state = ?, rows = ?, size = ?, operation_id = '' "
                "WHERE location = ?",
                (TableState.READY.value, _UNCOUNTED if rows is None else rows, size, str(location)),
            )

    def set_rows(self, location: Path, rows: int | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE temp_tables SET rows = ? WHERE location = ?",
                (_UNCOUNTED if rows is None else rows, str(location)),
            )

    def files_added(self, location: Path, size: int | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE temp_tables SET rows = ?, size = ? WHERE location = ?",
                (_UNCOUNTED, size, str(location)),
            )

    def remove_tables(self, locations: Sequence[Path]) -> None:
        with self._transaction() as db:
            db.executemany(
                "DELETE FROM temp_tables WHERE location = ?", [(str(p),) for p in locations]
            )

    def remove_session(self, user_id: str, session_id: str) -> None:
        with self._transaction() as db:
            db.execute(
                "DELETE FROM sessions WHERE user_id = ? AND session_id = ?", (user_id, session_id)
            )

    def touch(
        self, user_id: str, session_id: str, at: float, server_side_session_id: str = ""
    ) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT (user_id, session_id) DO "
                "UPDATE SET last_activity = max(last_activity, excluded.last_activity), "
                "server_side_session_id = "
                "coalesce(nullif(excluded.server_side_session_id, ''), server_side_session_id)",
                (user_id, session_id, server_side_session_id, at),
            )

    def close(self) -> None:
        with self._guard:
            self._db.close()


def _table_from_row(row: tuple[object, ...]) -> StoredTable:
    (
        location,
        user_id,
        session_id,
        name,
        _key,
        fmt,
        schema_json,
        partition_columns,
        options,
        rows,
        created,
        state,
        operation_id,
        size,
    ) = row
    table = TempTable(
        name=str(name),
        location=Path(str(location)),
        format=str(fmt),
        schema_json=str(schema_json),
        partition_columns=tuple(json.loads(str(partition_columns))),
        options=dict(json.loads(str(options))),
        rows=None if int(str(rows)) == _UNCOUNTED else int(str(rows)),
        created=datetime.datetime.fromisoformat(str(created)),
        size=None if size is None else int(str(size)),
    )
    return StoredTable(str(user_id), str(session_id), table, TableState(state), str(operation_id))


def now() -> float:
    """The activity clock of the registry: wall-clock seconds, comparable across restarts."""
    return time.time()
