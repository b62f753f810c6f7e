"""Start-up repair against a fake upstream: gone sessions go, live ones keep, unanswered ones wait.

The fake upstream answers with Spark's recorded errors; every background
step is awaited, never slept for.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from connect_plugin.errors import WorkspaceInUse
from connect_plugin.server.sessions import recovery as recovery_module
from connect_plugin.server.sessions.registry import Lifecycle
from connect_plugin.server.sessions.store import SqliteSessionStore, TableState
from connect_plugin.server.sessions.workspace import PRIVATE_DIR, REGISTRY_FILE, Workspace
from tests.unit.server.fake_upstream import FakeUpstream, Operation
from tests.unit.server.session_state import config, session_state, stage_table

USER = "bob"


def _states(workspace: Path) -> dict[str, TableState]:
    store = SqliteSessionStore(workspace / PRIVATE_DIR / REGISTRY_FILE)
    try:
        return {row.table.name: row.state for row in store.load().tables}
    finally:
        store.close()


def test_gone_sessions_go_live_ones_keep_their_tables_and_lose_half_made_ones(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    live, lost, restarted = (str(uuid.uuid4()) for _ in range(3))
    write = str(uuid.uuid4())

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            server_side = spark.open(USER, live)
            spark.open(USER, restarted)
            kept = stage_table(workspace, USER, live, server_side, name="kept")
            half = stage_table(
                workspace, USER, live, server_side, name="half",
                state=TableState.CREATING, operation_id=write,
            )  # fmt: skip
            spark.operations[write] = Operation(polls_after_interrupt=1)
            stage_table(workspace, USER, lost, "server-of-lost")
            stage_table(workspace, USER, restarted, "server-before-restart")
            orphan = workspace / str(uuid.uuid4())
            orphan.mkdir()
            async with session_state(config(workspace, spark.address)) as state:
                found = state.recovery
                assert sorted(found.sessions_gone) == sorted([lost, restarted])
                assert found.rolled_back == [half]
                assert found.swept == [orphan]
                session = state.registry.find(USER, live)
                assert session is not None
                assert list(session.tables) == ["kept"]
                assert session.state is Lifecycle.ACTIVE
                assert state.registry.find(USER, lost) is None
                assert spark.called("Interrupt") == [live], "the half-made table's write stopped"
                assert write not in spark.operations, "recovery waited for the write to end"
                assert (USER, lost) not in spark.sessions, "probing never creates a session"
            assert kept.is_dir()
            assert not half.exists()
            assert not (workspace / lost).exists()
            assert not (workspace / restarted).exists()
            assert not orphan.exists()

    asyncio.run(scenario())
    assert _states(workspace) == {"kept": TableState.READY}


def test_an_unanswering_upstream_keeps_everything_and_the_repair_resumes_when_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recovery_module, "RETRY_FIRST_S", 0.0)
    workspace = tmp_path / "ws"
    session_id = str(uuid.uuid4())

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            server_side = spark.open(USER, session_id)
            stage_table(workspace, USER, session_id, server_side, name="kept")
            half = stage_table(
                workspace, USER, session_id, server_side, name="half",
                state=TableState.CREATING, operation_id=str(uuid.uuid4()),
            )  # fmt: skip
            spark.unavailable = True
            async with session_state(config(workspace, spark.address)) as state:
                session = state.registry.find(USER, session_id)
                assert session is not None
                assert list(session.tables) == ["kept"]
                assert session.state is Lifecycle.REPAIRING, "statements wait for the repair"
                assert half.is_dir()
                assert _states(workspace) == {"kept": TableState.READY, "half": TableState.CREATING}

                spark.unavailable = False
                async with state.registry.statement(USER, session_id) as ready:
                    assert ready is session
                    assert session.state is Lifecycle.ACTIVE
                assert not half.exists()
                assert state.recovery.rolled_back == [half]

    asyncio.run(scenario())
    assert _states(workspace) == {"kept": TableState.READY}


def test_a_stop_during_the_retries_leaves_the_rows_for_the_next_start(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    session_id = str(uuid.uuid4())

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            stage_table(
                workspace, USER, session_id, "s", name="half",
                state=TableState.CREATING, operation_id="op",
            )  # fmt: skip
            spark.unavailable = True
            async with session_state(config(workspace, spark.address)) as state:
                session = state.registry.find(USER, session_id)
                assert session is not None
                assert session.state is Lifecycle.REPAIRING
            assert not session.lock.locked()

    asyncio.run(scenario())
    assert _states(workspace) == {"half": TableState.CREATING}


def test_a_second_gateway_on_one_workspace_is_refused_until_the_first_stops(
    tmp_path: Path,
) -> None:
    workspace = Workspace(tmp_path / "ws")
    first = workspace.lock()
    try:
        with pytest.raises(WorkspaceInUse, match=r"is in use by another gateway \(pid \d+\)"):
            workspace.lock()
    finally:
        first.release()
    workspace.lock().release()
