"""The session watch against a fake upstream: activity, idle expiry, lost sessions, forgetting.

Sweeps are called directly and endings awaited (``watch.settle()``); the
fake answers with Spark's recorded errors, so every decision is made on the
ErrorInfo Spark really sends.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConfigError
from connect_plugin.server.sessions.expiry import spark_duration_s
from connect_plugin.server.sessions.registry import Lifecycle, Session
from connect_plugin.server.sessions.store import now
from tests.unit.server.fake_upstream import FakeUpstream
from tests.unit.server.session_state import config, session_state, stage_table
from tests.unit.server.spark_errors import rpc_error

USER = "ann"
CHANGED = "INVALID_HANDLE.SESSION_CHANGED"
IDLE_S = 60.0


def _request(session_id: str) -> spark_proto.ConfigRequest:
    return spark_proto.ConfigRequest(
        session_id=session_id, user_context=spark_proto.UserContext(user_id=USER)
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60m", 3600.0), ("3600s", 3600.0), ("1h", 3600.0), ("5min", 300.0), ("1500", 1.5), ("2 d", 172800.0)],
)
def test_spark_durations(text: str, seconds: float) -> None:
    assert spark_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 fortnights", "-1s"])
def test_unreadable_spark_durations(text: str) -> None:
    assert spark_duration_s(text) is None


def test_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="session_idle_timeout_s"):
        config(tmp_path, "sc://127.0.0.1:1", session_idle_timeout_s=-1.0)
    with pytest.raises(ConfigError, match="session_sweep_interval_s"):
        config(tmp_path, "sc://127.0.0.1:1", session_sweep_interval_s=0.0)


def test_idle_sessions_with_tables_are_released_busy_and_unanswered_ones_are_kept(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    idle, busy = str(uuid.uuid4()), str(uuid.uuid4())

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            for session_id in (idle, busy):
                stage_table(workspace, USER, session_id, spark.open(USER, session_id))
            settings = config(workspace, spark.address, session_idle_timeout_s=IDLE_S)
            async with session_state(settings) as state:
                for session_id in (idle, busy):
                    found = state.registry.find(USER, session_id)
                    assert found is not None
                    found.last_activity = now() - 2 * IDLE_S
                call = state.watch.begin(_request(busy))
                busy_session = state.registry.find(USER, busy)
                assert call is not None
                assert busy_session is not None
                assert state.registry.in_flight(busy_session) == 1

                spark.unavailable = True
                await state.watch.sweep()
                assert state.watch.figures.expired == []
                assert (workspace / idle).is_dir()

                spark.unavailable = False
                await state.watch.sweep()
                assert state.watch.figures.expired == [idle]
                assert spark.called("ReleaseSession") == [idle], "released upstream first"
                assert state.registry.find(USER, idle) is None
                assert not (workspace / idle).exists()
                assert (workspace / busy).is_dir(), "a call in flight keeps its session"
                state.watch.end(call)
                assert state.registry.find(USER, busy) is busy_session, "its tables keep it listed"

    asyncio.run(scenario())


def test_a_session_the_upstream_lost_ends_at_once_unless_a_cttas_renewed_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    answered, failed, renewed = (str(uuid.uuid4()) for _ in range(3))

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            for session_id in (answered, failed, renewed):
                spark.sessions[USER, session_id] = "server-1"
                stage_table(workspace, USER, session_id, "server-1")
            async with session_state(config(workspace, spark.address)) as state:
                watch, registry = state.watch, state.registry
                first, failing, later = (
                    registry.find(USER, s) for s in (answered, failed, renewed)
                )
                assert first is not None
                assert failing is not None
                assert later is not None
                watch.responded(first.key, "server-1")
                watch.responded(first.key, "server-2")
                watch.failed(failing.key, rpc_error(CHANGED, failed))
                watch.failed(later.key, rpc_error(CHANGED, renewed))
                # A CTTAS records a new upstream session before the ending runs.
                later.server_side_session_id = "server-3"
                await watch.settle()
                assert sorted(watch.figures.gone) == sorted([answered, failed])
                assert first.state is failing.state is Lifecycle.GONE
                assert not (workspace / answered).exists()
                assert not (workspace / failed).exists()
                assert later.state is Lifecycle.ACTIVE
                assert registry.find(USER, renewed) is later
                assert (workspace / renewed).is_dir()

    asyncio.run(scenario())


def test_a_call_that_raced_the_sessions_release_is_no_loss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pyspark may still release an operation while it releases the session; Spark then
    answers that the session is gone. The session is being released, not lost."""
    workspace = tmp_path / "ws"
    releasing = str(uuid.uuid4())

    async def scenario() -> None:
        async with FakeUpstream() as spark:
            spark.sessions[USER, releasing] = "server-1"
            stage_table(workspace, USER, releasing, "server-1")
            async with session_state(config(workspace, spark.address)) as state:
                session = state.registry.find(USER, releasing)
                assert session is not None
                state.registry.asked_release(session)
                state.watch.failed(session.key, rpc_error(CHANGED, releasing))
                await state.watch.settle()
                session.release_asked = False
                state.watch.failed(session.key, rpc_error(CHANGED, releasing))
                session.move_to(Lifecycle.RELEASING)
                await state.watch.settle()
                assert state.watch.figures.gone == []
                assert (workspace / releasing).is_dir(), "the release, not the watch, ends it"

    with caplog.at_level("INFO"):
        asyncio.run(scenario())
    assert "no longer exists" not in caplog.text


def test_what_the_gateway_keeps_about_a_session_goes_when_spark_forgets_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    scanned, plain = str(uuid.uuid4()), str(uuid.uuid4())

    async def scenario() -> None:
        async with (
            FakeUpstream() as spark,
            session_state(config(workspace, spark.address)) as state,
        ):
            watch, registry = state.watch, state.registry
            holding = _Holding()
            registry.add_part(holding)
            for session_id in (scanned, plain):
                spark.open(USER, session_id)
                call = watch.begin(_request(session_id))
                assert call is not None
                if session_id == scanned:
                    holding.held.add(registry.open(USER, session_id))
                watch.end(call)
            assert registry.find(USER, plain) is None, "a session holding nothing is not kept"
            assert registry.find(USER, scanned) is not None

            await watch.sweep()
            assert registry.find(USER, scanned) is not None, "kept while Spark has it"
            assert spark.called("ReleaseSession") == [], "the gateway never releases it"

            del spark.sessions[USER, scanned]
            spark.closed.add((USER, scanned))
            await watch.sweep()
            assert registry.find(USER, scanned) is None
            assert len(registry) == 0
            assert holding.ended == [(USER, scanned)], "the part hears the session ended"

    asyncio.run(scenario())


class _Holding:
    """A part of the gateway holding something of the sessions it was given (as the scans
    hold their data source's registration), told when each one goes."""

    def __init__(self) -> None:
        self.held: set[Session] = set()
        self.ended: list[tuple[str, str]] = []

    def holds(self, session: Session) -> bool:
        return session in self.held

    def let_go(self, session: Session, *, ended: bool) -> None:
        self.held.discard(session)
        if ended:
            self.ended.append(session.key)
