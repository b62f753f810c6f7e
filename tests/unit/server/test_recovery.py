"""Start-up of the temp-table service when the upstream does not answer: keep, sweep, retry.

No Spark here: the upstream channel points at a port nobody listens on, so
every question to it fails the way an unreachable server does.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path

import grpc
import pytest

from connect_plugin.config import Config
from connect_plugin.errors import WorkspaceInUse
from connect_plugin.server.embedded import free_port
from connect_plugin.server.session_store import (
    SqliteSessionStore,
    StoredSession,
    TableState,
    TempTable,
)
from connect_plugin.server.temp_tables import TempTables
from connect_plugin.server.workspace import PRIVATE_DIR, REGISTRY_FILE

USER = "bob"


def _config(workspace: Path) -> Config:
    return Config(
        port=0,
        upstream=f"sc://127.0.0.1:{free_port()}",
        workspace=workspace,
        conf_dir=None,
        recovery_timeout_s=2.0,
    )


def _folder_with_a_file(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "part-00000.parquet").write_bytes(b"PAR1")
    return path


def _table(location: Path, name: str) -> TempTable:
    return TempTable(
        name, location, "parquet", "{}", (), {}, 1, datetime.datetime.now(datetime.timezone.utc)
    )


def test_unreachable_upstream_keeps_tables_sweeps_orphans_and_retries_later(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    session_id = str(uuid.uuid4())
    ready = _folder_with_a_file(workspace / session_id / str(uuid.uuid4()))
    creating = _folder_with_a_file(workspace / session_id / str(uuid.uuid4()))
    half_written = _folder_with_a_file(workspace / session_id / str(uuid.uuid4()))
    orphan = _folder_with_a_file(workspace / str(uuid.uuid4()) / str(uuid.uuid4())).parent
    store = SqliteSessionStore(workspace / PRIVATE_DIR / REGISTRY_FILE)
    session = StoredSession(USER, session_id, "server-1", 1.0)
    store.add_table(session, _table(ready, "kept"), TableState.READY)
    store.add_table(session, _table(creating, "half"), TableState.CREATING, "op-1")
    store.close()

    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(_config(workspace).upstream_target)
        tables = TempTables(_config(workspace), channel)
        try:
            recovery = await tables.start()
            entry = tables.registry.find(USER, session_id)
            assert entry is not None
            assert list(entry.tables) == ["kept"]
            assert entry.lock.locked(), "the unfinished row is retried under the session lock"
            assert set(recovery.swept) == {orphan, half_written}
            assert recovery.rolled_back == []
            assert recovery.sessions_gone == []
            assert ready.is_dir()
            assert creating.is_dir()
            assert not orphan.exists()
            assert not half_written.exists()
        finally:
            await tables.stop()
            await channel.close()
        assert not entry.lock.locked()

    asyncio.run(scenario())
    store = SqliteSessionStore(workspace / PRIVATE_DIR / REGISTRY_FILE)
    try:
        states = {row.table.name: row.state for row in store.load().tables}
    finally:
        store.close()
    assert states == {"kept": TableState.READY, "half": TableState.CREATING}


def test_a_second_service_on_one_workspace_is_refused_until_the_first_stops(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path / "ws")

    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(config.upstream_target)
        first = TempTables(config, channel)
        try:
            with pytest.raises(WorkspaceInUse, match=r"is in use by another gateway \(pid \d+\)"):
                TempTables(config, channel)
        finally:
            await first.stop()
        second = TempTables(config, channel)
        await second.stop()
        await channel.close()

    asyncio.run(scenario())
