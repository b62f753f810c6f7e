"""Stopping a CTTAS write, against a fake upstream with Spark's session semantics."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import pytest

from connect_plugin.server.sessions.release import to_the_end
from connect_plugin.server.table_files import writes
from connect_plugin.server.table_files.writes import stop_write
from connect_plugin.server.transport.upstream import SessionContext, UpstreamSession
from tests.unit.server.fake_upstream import FakeSpark, Operation, run_against_fake

USER = "cy"
TIMEOUT_S = 5.0


def test_a_running_write_is_interrupted_and_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writes, "WRITE_POLL_S", 0.0)

    async def scenario(spark: FakeSpark, channel: grpc.aio.Channel) -> None:
        session_id, operation_id = str(uuid.uuid4()), str(uuid.uuid4())
        spark.open(USER, session_id)
        spark.operations[operation_id] = Operation(polls_after_interrupt=3)
        upstream = UpstreamSession(channel, SessionContext.of_stored(USER, session_id))
        await stop_write(upstream, operation_id, "t", TIMEOUT_S)
        assert operation_id not in spark.operations
        assert spark.called("Interrupt") == [session_id]

    run_against_fake(scenario)


def test_a_write_of_a_session_spark_no_longer_has_is_not_interrupted() -> None:
    async def scenario(spark: FakeSpark, channel: grpc.aio.Channel) -> None:
        released = str(uuid.uuid4())
        spark.closed.add((USER, released))
        upstream = UpstreamSession(channel, SessionContext.of_stored(USER, released))
        await stop_write(upstream, str(uuid.uuid4()), "t", TIMEOUT_S)
        assert spark.called("Interrupt") == [], "Interrupt would recreate the session"
        assert (USER, released) not in spark.sessions

    run_against_fake(scenario)


def test_undo_finishes_although_the_caller_is_cancelled_twice() -> None:
    steps: list[str] = []
    undone = asyncio.Event()

    async def undo() -> None:
        steps.append("interrupting")
        await undone.wait()
        steps.append("deleted")

    async def create() -> None:
        try:
            raise RuntimeError("the write failed")
        except RuntimeError:
            await to_the_end(undo())
            raise

    async def main() -> None:
        task = asyncio.ensure_future(create())
        while not steps:
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        undone.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert steps == ["interrupting", "deleted"]


def test_undo_errors_reach_the_caller() -> None:
    async def failing() -> None:
        raise ValueError("undo broke")

    with pytest.raises(ValueError, match="undo broke"):
        asyncio.run(to_the_end(failing()))


def test_a_stopping_gateway_stops_its_loops_late_watches_and_no_other_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(writes, "WRITE_POLL_S", 0.0)
    monkeypatch.setattr(writes, "LATE_POLL_S", 0.01)
    # Watches of gateways that tests run before in this process started, on their own loops.
    running_before = set(writes._late_watchers)
    other = asyncio.new_event_loop()
    try:
        other.run_until_complete(writes.remove_for_good(lambda: False, TIMEOUT_S))
        (elsewhere,) = writes._late_watchers - running_before

        async def scenario() -> None:
            await writes.remove_for_good(lambda: False, TIMEOUT_S)
            assert len(writes._late_watchers - running_before) == 2
            await writes.stop_late_watches()
            assert writes._late_watchers - running_before == {elsewhere}

        asyncio.run(scenario())
        assert not elsewhere.done()
        elsewhere.cancel()
        other.run_until_complete(asyncio.gather(elsewhere, return_exceptions=True))
    finally:
        other.close()
    assert not writes._late_watchers - running_before
