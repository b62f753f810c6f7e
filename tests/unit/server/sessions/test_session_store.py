"""The durable session registry: SQLite store, write-through registry, workspace lock."""

from __future__ import annotations

import datetime
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from connect_plugin.errors import RegistryError, WorkspaceInUse
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import (
    SCHEMA_VERSION,
    SqliteSessionStore,
    StoredSession,
    TableState,
)
from connect_plugin.server.sessions.workspace import (
    LOCK_FILE,
    PRIVATE_DIR,
    REGISTRY_FILE,
    Workspace,
)
from connect_plugin.server.table_files.temp_table import TempTable

USER = "alice"


def _table(
    workspace: Path, session_id: str, name: str = "T1", rows: int = 0, size: int | None = None
) -> TempTable:
    return TempTable(
        name=name,
        location=workspace / session_id / str(uuid.uuid4()),
        format="parquet",
        schema_json='{"type":"struct","fields":[]}',
        partition_columns=("k", "j"),
        options={"compression": "zstd", "x": "1"},
        rows=rows,
        created=datetime.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc),
        size=size,
    )


def _session(session_id: str, ssid: str = "server-1", at: float = 100.0) -> StoredSession:
    return StoredSession(USER, session_id, ssid, at)


@pytest.fixture
def store(tmp_path: Path) -> SqliteSessionStore:
    opened = SqliteSessionStore(tmp_path / PRIVATE_DIR / REGISTRY_FILE)
    yield opened  # type: ignore[misc]
    opened.close()


def _reopen(store: SqliteSessionStore) -> SqliteSessionStore:
    store.close()
    return SqliteSessionStore(store.path)


def test_round_trip_keeps_every_field(store: SqliteSessionStore, tmp_path: Path) -> None:
    sid = str(uuid.uuid4())
    table = _table(tmp_path, sid, rows=42, size=4096)
    store.add_table(_session(sid), table, TableState.READY)
    store = _reopen(store)
    try:
        snapshot = store.load()
        assert snapshot.sessions == (_session(sid),)
        (row,) = snapshot.tables
        assert (row.user_id, row.session_id, row.state) == (USER, sid, TableState.READY)
        assert row.table == table
        assert row.table.created.tzinfo is not None
    finally:
        store.close()


def test_states_follow_create_replace_drop(store: SqliteSessionStore, tmp_path: Path) -> None:
    sid = str(uuid.uuid4())
    old = _table(tmp_path, sid, "t", rows=1)
    store.add_table(_session(sid), old, TableState.CREATING, "op-1")
    assert [(r.state, r.operation_id) for r in store.load().tables] == [(TableState.CREATING, "op-1")]
    store.finish_create(old.location, 1, replaced=None, size=10)
    new = _table(tmp_path, sid, "T")
    store.add_table(_session(sid, at=200.0), new, TableState.CREATING, "op-2")
    store.finish_create(new.location, 7, replaced=old.location, size=70)
    states = {
        r.table.location: (r.state, r.table.rows, r.table.size, r.operation_id)
        for r in store.load().tables
    }
    assert states == {
        old.location: (TableState.DROPPING, 1, 10, ""),
        new.location: (TableState.READY, 7, 70, ""),
    }
    store.files_added(new.location, 95)
    (added,) = [r.table for r in store.load().tables if r.table.location == new.location]
    assert (added.rows, added.size) == (None, 95)
    store.remove_tables([old.location])
    store.set_state([new.location], TableState.DROPPING)
    assert [r.state for r in store.load().tables] == [TableState.DROPPING]
    (session,) = store.load().sessions
    assert session.last_activity == 200.0


def test_one_ready_table_per_name_and_session(store: SqliteSessionStore, tmp_path: Path) -> None:
    sid = str(uuid.uuid4())
    store.add_table(_session(sid), _table(tmp_path, sid, "same"), TableState.READY)
    with pytest.raises(RegistryError, match="UNIQUE"):
        store.add_table(_session(sid), _table(tmp_path, sid, "SAME"), TableState.READY)
    other = str(uuid.uuid4())
    store.add_table(_session(other), _table(tmp_path, other, "same"), TableState.READY)
    assert len(store.load().tables) == 2


def test_removing_a_session_removes_its_tables_only(store: SqliteSessionStore, tmp_path: Path) -> None:
    gone, kept = str(uuid.uuid4()), str(uuid.uuid4())
    for sid in (gone, kept):
        store.add_table(_session(sid), _table(tmp_path, sid, "a"), TableState.READY)
        store.add_table(_session(sid), _table(tmp_path, sid, "b"), TableState.CREATING)
    store.remove_session(USER, gone)
    snapshot = store.load()
    assert [s.session_id for s in snapshot.sessions] == [kept]
    assert {r.session_id for r in snapshot.tables} == {kept}


def test_touch_keeps_the_latest_activity_and_a_known_server_side_id(
    store: SqliteSessionStore, tmp_path: Path
) -> None:
    sid = str(uuid.uuid4())
    store.add_table(_session(sid, ssid=""), _table(tmp_path, sid), TableState.READY)
    store.touch(USER, sid, 300.0, "server-9")
    store.touch(USER, sid, 250.0)
    tableless = str(uuid.uuid4())
    store.touch(USER, tableless, 5.0)
    assert set(store.load().sessions) == {
        StoredSession(USER, sid, "server-9", 300.0),
        StoredSession(USER, tableless, "", 5.0),
    }


def test_the_file_is_wal_and_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    SqliteSessionStore(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RegistryError, match="newer connect-plugin"):
        SqliteSessionStore(path)


_VERSION_1_TABLES = """
CREATE TABLE temp_tables (
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
    FOREIGN KEY (user_id, session_id) REFERENCES sessions (user_id, session_id)
        ON DELETE CASCADE
)"""
"""The table of the first schema, as a gateway before table sizes wrote it."""


def test_a_version_1_store_keeps_its_tables_with_sizes_unknown(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    sid = str(uuid.uuid4())
    location = tmp_path / sid / str(uuid.uuid4())
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE sessions (user_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "server_side_session_id TEXT NOT NULL, last_activity REAL NOT NULL, "
            "PRIMARY KEY (user_id, session_id))"
        )
        db.execute(_VERSION_1_TABLES)
        db.execute("INSERT INTO sessions VALUES (?, ?, 'server-1', 100.0)", (USER, sid))
        db.execute(
            "INSERT INTO temp_tables VALUES (?, ?, ?, 'old', 'old', 'parquet', '{}', '[]', '{}', "
            "5, '2025-01-02T03:04:05+00:00', 'ready', '')",
            (str(location), USER, sid),
        )
        db.execute("PRAGMA user_version = 1")
    db.close()
    store = SqliteSessionStore(path)
    try:
        (row,) = store.load().tables
        assert (row.table.name, row.table.rows, row.table.size) == ("old", 5, None)
        new = _table(tmp_path, sid, "new", rows=2, size=300)
        store.add_table(_session(sid), new, TableState.CREATING, "op")
        store.finish_create(new.location, 2, replaced=location, size=300)
    finally:
        store.close()
    store = SqliteSessionStore(path)
    try:
        tables = {r.table.name: (r.state, r.table.size) for r in store.load().tables}
        assert tables == {"old": (TableState.DROPPING, None), "new": (TableState.READY, 300)}
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()


def test_an_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RegistryError, match=r"cannot open the session registry \["):
        SqliteSessionStore(blocker / "sub" / "r.sqlite3")


def test_registry_writes_through_and_loads_only_ready_tables(
    store: SqliteSessionStore, tmp_path: Path
) -> None:
    sid = str(uuid.uuid4())
    registry = SessionRegistry(store)
    entry = registry.open(USER, sid)
    kept = _table(tmp_path, sid, "Kept", rows=3)
    registry.begin_create(entry, kept, "op-1", "server-1")
    assert entry.tables == {}, "a creating table is invisible"
    registry.finish_create(entry, kept, replaced=None)
    half = _table(tmp_path, sid, "half")
    registry.begin_create(entry, half, "op-2", "")
    dropped = _table(tmp_path, sid, "dropped")
    registry.begin_create(entry, dropped, "op-3", "")
    registry.finish_create(entry, dropped, replaced=None)
    registry.begin_drop([dropped])

    again = SessionRegistry(_reopen(store))
    try:
        snapshot = again.load()
        loaded = again.find(USER, sid)
        assert loaded is not None
        assert loaded.tables == {"kept": kept}
        assert loaded.server_side_session_id == "server-1"
        assert {r.table.name: r.state for r in snapshot.tables} == {
            "Kept": TableState.READY,
            "half": TableState.CREATING,
            "dropped": TableState.DROPPING,
        }
    finally:
        again.store.close()


def test_every_step_is_on_disk_before_the_next_begins(tmp_path: Path) -> None:
    """What a crash right after each write-through call would leave: a second reader sees it."""
    sid = str(uuid.uuid4())
    store = SqliteSessionStore(tmp_path / "r.sqlite3")
    registry = SessionRegistry(store)
    entry = registry.open(USER, sid)
    table = _table(tmp_path, sid)

    def on_disk() -> list[tuple[str, str]]:
        with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True) as reader:
            return reader.execute("SELECT name, state FROM temp_tables").fetchall()

    try:
        registry.begin_create(entry, table, "op", "")
        assert on_disk() == [("T1", "creating")]
        registry.finish_create(entry, table, replaced=None)
        assert on_disk() == [("T1", "ready")]
        registry.begin_drop([table])
        assert on_disk() == [("T1", "dropping")]
        registry.remove([table])
        assert on_disk() == []
    finally:
        store.close()


_CRASHER = """
import sys, uuid, datetime, os
from pathlib import Path
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.table_files.temp_table import TempTable
store = SqliteSessionStore(Path(sys.argv[1]))
registry = SessionRegistry(store)
sid = str(uuid.uuid4())
entry = registry.open("u", sid)
table = TempTable("t", Path(sys.argv[2]) / sid / "x", "parquet", "{}", (), {}, 0,
                  datetime.datetime.now(datetime.timezone.utc))
registry.begin_create(entry, table, "op", "")
os.kill(os.getpid(), 9)
"""


def test_a_row_written_before_sigkill_survives(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    result = subprocess.run(
        [sys.executable, "-c", _CRASHER, str(path), str(tmp_path)], timeout=60, check=False
    )
    assert result.returncode == -9
    store = SqliteSessionStore(path)
    try:
        assert [(r.table.name, r.state) for r in store.load().tables] == [("t", TableState.CREATING)]
    finally:
        store.close()


def test_a_second_lock_on_one_workspace_is_refused_with_the_holder(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    first = workspace.lock()
    try:
        with pytest.raises(WorkspaceInUse) as refused:
            Workspace(tmp_path).lock()
        message = str(refused.value)
        assert f"[{tmp_path}]" in message
        assert f"pid {os.getpid()}" in message
    finally:
        first.release()
    Workspace(tmp_path).lock().release()
    assert (tmp_path / PRIVATE_DIR / LOCK_FILE).is_file()


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from connect_plugin.server.sessions.workspace import Workspace; "
            "Workspace(sys.argv[1]).lock(); print('locked', flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(WorkspaceInUse, match=f"pid {holder.pid}"):
            Workspace(tmp_path).lock()
    finally:
        holder.kill()
        holder.wait(30)
        if holder.stdout is not None:
            holder.stdout.close()
    Workspace(tmp_path).lock().release()


def test_workspace_listings_leave_out_dot_names_and_strays(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.lock().release()
    sid = str(uuid.uuid4())
    table = workspace.new_table_folder(sid)
    table.mkdir()
    (tmp_path / sid / "notes.txt").write_text("")
    (tmp_path / sid / "not-a-uuid").mkdir()
    (tmp_path / "stray").mkdir()
    (tmp_path / sid.upper()).mkdir()
    (tmp_path / sid / str(uuid.uuid4()).upper()).mkdir()
    assert workspace.session_ids() == [sid]
    assert workspace.table_folders(sid) == [table]
