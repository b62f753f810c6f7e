"""The gateway's session state over a workspace, wired as the gateway wires it, for unit tests."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from connect_plugin.config import Config
from connect_plugin.server.sessions.expiry import SessionWatch
from connect_plugin.server.sessions.recovery import Recovery
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.release import SessionRelease
from connect_plugin.server.sessions.store import SqliteSessionStore, StoredSession, TableState
from connect_plugin.server.sessions.workspace import REGISTRY_FILE, Workspace
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.transport.upstream import Upstream

RECOVERY_TIMEOUT_S = 2.0


def config(workspace: Path, upstream: str, **settings: float) -> Config:
    return Config(
        port=0,
        upstream=upstream,
        workspace=workspace,
        conf_dir=None,
        recovery_timeout_s=RECOVERY_TIMEOUT_S,
        **settings,  # type: ignore[arg-type]
    )


def table(location: Path, name: str = "t") -> TempTable:
    return TempTable(
        name, location, "parquet", "{}", (), {}, 1, datetime.datetime.now(datetime.timezone.utc)
    )


def stage_table(
    workspace: Path,
    user_id: str,
    session_id: str,
    server_side_session_id: str,
    *,
    name: str = "t",
    state: TableState = TableState.READY,
    operation_id: str = "",
) -> Path:
    """A table as a previous run of the gateway left it: folder with a file, and its rows."""
    location = workspace / session_id / str(uuid.uuid4())
    location.mkdir(parents=True)
    (location / "part-00000.parquet").write_bytes(b"PAR1")
    store = SqliteSessionStore(Workspace(workspace).private_folder / REGISTRY_FILE)
    try:
        stored = StoredSession(user_id, session_id, server_side_session_id, 1.0)
        store.add_table(stored, table(location, name), state, operation_id)
    finally:
        store.close()
    return location


@dataclass
class SessionState:
    workspace: Workspace
    registry: SessionRegistry
    release: SessionRelease
    recovery: Recovery
    watch: SessionWatch


@asynccontextmanager
async def session_state(settings: Config) -> AsyncIterator[SessionState]:
    """Recovery run, watch made (not started); everything closed at the end."""
    channel = grpc.aio.insecure_channel(settings.upstream_target)
    workspace = Workspace(settings.workspace)
    lock = workspace.lock()
    store = SqliteSessionStore(workspace.private_folder / REGISTRY_FILE)
    registry = SessionRegistry(store)
    upstream = Upstream(channel)
    release = SessionRelease(registry, workspace)
    recovery = Recovery(settings, registry, workspace, upstream, release)
    watch = SessionWatch(settings, registry, upstream, release)
    try:
        await recovery.run()
        yield SessionState(workspace, registry, release, recovery, watch)
    finally:
        await watch.stop()
        await recovery.stop()
        store.close()
        lock.release()
        await channel.close()
