"""A statement's work outlives its client's stream for a while, as Spark's operations do."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConnectPluginError
from connect_plugin.server.detached import (
    Answer,
    Answers,
    Detached,
    FollowUp,
    FollowUps,
    Running,
    once,
)

KEY = ("user", "session", "operation")


async def _steps(report: Callable[[str], None], gate: asyncio.Event) -> str:
    report("started")
    await gate.wait()
    report("writing")
    return "done"


async def _follow_until(running: Running[str, str], seen: list[str], stop_at: str) -> None:
    """Follow until ``stop_at``, then end the stream (as a client's deadline ends it)."""
    async with contextlib.aclosing(running.follow()) as progress:
        async for step in progress:
            seen.append(step)
            if step == stop_at:
                return


def test_a_reattached_stream_follows_the_work_and_takes_its_result() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=5.0)
        gate = asyncio.Event()
        running = detached.start(KEY, lambda report: _steps(report, gate))
        first: list[str] = []
        await _follow_until(running, first, "started")
        assert detached.find(KEY) is running
        assert not running.task.done()
        gate.set()
        again = detached.find(KEY)
        assert again is running
        second = [p async for p in again.follow()]
        assert (first, second) == (["started"], ["writing"])
        assert await again.result() == "done"
        assert detached.find(KEY) is None
        assert len(detached) == 0

    asyncio.run(scenario())


def test_work_no_stream_follows_again_is_cancelled_after_keep_s() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=0.05)
        running = detached.start(KEY, lambda report: _steps(report, asyncio.Event()))
        await _follow_until(running, [], "started")
        await asyncio.sleep(0.2)
        assert running.task.cancelled()
        assert detached.find(KEY) is None

    asyncio.run(scenario())


@pytest.mark.parametrize("key", [None, KEY], ids=["not reattachable", "kept for 0 s"])
def test_work_that_may_not_be_reattached_ends_with_its_stream(key: tuple[str, str, str] | None) -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=0.0 if key else 5.0)
        running = detached.start(key, lambda report: _steps(report, asyncio.Event()))
        await _follow_until(running, [], "started")
        await asyncio.sleep(0)
        assert running.task.cancelled()
        assert len(detached) == 0

    asyncio.run(scenario())


def test_ending_it_cancels_the_work_at_once() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=5.0)
        running = detached.start(KEY, lambda report: _steps(report, asyncio.Event()))
        await _follow_until(running, [], "started")
        running.end()
        await asyncio.sleep(0)
        assert running.task.cancelled()
        assert detached.find(KEY) is None

    asyncio.run(scenario())


def test_a_second_start_of_a_running_operation_is_not_reattachable() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=5.0)
        gate = asyncio.Event()
        first = detached.start(KEY, lambda report: _steps(report, gate))
        second = detached.start(KEY, lambda report: _steps(report, gate))
        assert detached.find(KEY) is first
        gate.set()
        assert [p async for p in second.follow()] == ["started", "writing"]
        assert await second.result() == "done"
        assert detached.find(KEY) is first
        first.end()

    asyncio.run(scenario())


def test_a_stopping_gateway_ends_the_statements_no_stream_follows() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=5.0)
        undone: list[str] = []

        async def write(report: Callable[[str], None]) -> str:
            try:
                return await _steps(report, asyncio.Event())
            except asyncio.CancelledError:
                await asyncio.sleep(0.01)
                undone.append("undone")
                raise

        running = detached.start(KEY, write)
        await _follow_until(running, [], "started")
        await detached.stop()
        assert running.task.cancelled()
        assert undone == ["undone"]
        assert len(detached) == 0

    asyncio.run(scenario())


@pytest.mark.parametrize("ended_by", ["expiry", "stop"])
def test_a_result_no_stream_took_is_given_to_unclaimed_when_forgotten(ended_by: str) -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=0.05 if ended_by == "expiry" else 5.0)
        gate = asyncio.Event()
        heard: list[str] = []

        async def unclaimed(result: str) -> None:
            await asyncio.sleep(0.01)
            heard.append(result)

        running = detached.start(KEY, lambda report: _steps(report, gate), unclaimed=unclaimed)
        await _follow_until(running, [], "started")
        gate.set()
        await running.task
        assert heard == []
        assert detached.find(KEY) is running
        if ended_by == "expiry":
            await asyncio.sleep(0.2)
        else:
            await detached.stop()
        assert heard == ["done"]
        assert detached.find(KEY) is None

    asyncio.run(scenario())


@pytest.mark.parametrize("outcome", ["taken", "failed", "cancelled"])
def test_unclaimed_hears_nothing_of_a_result_taken_failed_or_cancelled(outcome: str) -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=0.05)
        gate = asyncio.Event()
        heard: list[object] = []

        async def work(report: Callable[[str], None]) -> str:
            done = await _steps(report, gate)
            if outcome == "failed":
                raise ValueError("the write failed")
            return done

        async def unclaimed(result: str) -> None:
            heard.append(result)

        running = detached.start(KEY, work, unclaimed=unclaimed)
        await _follow_until(running, [], "started")
        if outcome == "cancelled":
            running.end()
        else:
            gate.set()
            if outcome == "taken":
                assert [p async for p in running.follow()] == ["writing"]
                assert await running.result() == "done"
        await asyncio.sleep(0.2)
        assert heard == []
        assert running.task.done()

    asyncio.run(scenario())


async def _follow_up() -> None:
    return None


@pytest.mark.parametrize("keep_s", [0.05, 0.0], ids=["kept", "kept for 0 s"])
def test_a_held_follow_up_is_taken_once_or_dropped_after_keep_s(keep_s: float) -> None:
    async def scenario() -> None:
        follow_ups = FollowUps(keep_s)
        follow_ups.hold(KEY, _follow_up)
        if not keep_s:
            assert follow_ups.take(KEY) is None
            return
        assert follow_ups.take(KEY) is _follow_up
        assert follow_ups.take(KEY) is None
        follow_ups.hold(KEY, _follow_up)
        await asyncio.sleep(0.2)
        assert follow_ups.take(KEY) is None
        assert len(follow_ups) == 0

    asyncio.run(scenario())


def test_a_release_drops_a_held_follow_up() -> None:
    async def scenario() -> None:
        follow_ups = FollowUps(5.0)
        follow_ups.hold(KEY, _follow_up)
        follow_ups.hold(("user", "session", "other"), _follow_up)
        follow_ups.drop(KEY)
        assert follow_ups.take(KEY) is None
        assert len(follow_ups) == 1

    asyncio.run(scenario())


def test_a_released_session_ends_its_running_statements_only() -> None:
    async def scenario() -> None:
        detached = Detached(keep_s=5.0)
        gate = asyncio.Event()
        other = ("user", "another session", "operation")
        ours = detached.start(KEY, lambda report: _steps(report, gate))
        theirs = detached.start(other, lambda report: _steps(report, gate))
        detached.drop_session("user", "session")
        await asyncio.gather(ours.task, return_exceptions=True)
        assert ours.task.cancelled()
        assert detached.find(KEY) is None
        assert detached.find(other) is theirs
        gate.set()
        assert await theirs.task == "done"

    asyncio.run(scenario())


def test_a_released_session_drops_what_is_kept_for_its_operations_only() -> None:
    async def scenario() -> None:
        follow_ups = FollowUps(5.0)
        follow_ups.hold(KEY, _follow_up)
        follow_ups.hold(("user", "session", "other"), _follow_up, followers=1)
        follow_ups.hold(("user", "another session", "operation"), _follow_up)
        follow_ups.hold(("another user", "session", "operation"), _follow_up)
        follow_ups.drop_session("user", "session")
        assert follow_ups.find(KEY) is None
        assert follow_ups.find(("user", "session", "other")) is None
        assert len(follow_ups) == 2

    asyncio.run(scenario())


def test_a_follow_up_followed_by_a_stream_does_not_expire_until_no_stream_follows_it() -> None:
    async def scenario() -> None:
        follow_ups = FollowUps(0.05)
        follow_ups.hold(KEY, _follow_up, followers=1)
        await asyncio.sleep(0.2)
        assert follow_ups.follow(KEY) is _follow_up, "a reattach finds it while the first runs"
        follow_ups.unfollow(KEY)
        await asyncio.sleep(0.2)
        assert follow_ups.find(KEY) is _follow_up, "the reattached stream still follows it"
        follow_ups.unfollow(KEY)
        await asyncio.sleep(0.2)
        assert follow_ups.find(KEY) is None
        follow_ups.unfollow(KEY)
        assert len(follow_ups) == 0, "a stream ending after the value went holds nothing"

    asyncio.run(scenario())


def test_kept_for_0_s_a_follow_up_lasts_while_a_stream_follows_it() -> None:
    async def scenario() -> None:
        follow_ups = FollowUps(0.0)
        follow_ups.hold(KEY, _follow_up)
        assert follow_ups.find(KEY) is None, "no stream follows it, and it is kept for 0 s"
        follow_ups.lead(KEY, _follow_up)
        assert follow_ups.follow(KEY) is _follow_up
        follow_ups.unfollow(KEY)
        assert follow_ups.find(KEY) is _follow_up
        follow_ups.unfollow(KEY)
        assert follow_ups.find(KEY) is None

    asyncio.run(scenario())


def test_a_statement_sent_again_leads_with_its_own_follow_up() -> None:
    """A client sends an operation again (its first ExecutePlan did not reach Spark): the
    new attempt's follow-up replaces the first's, and the first's stream still counts."""

    async def again() -> None:
        return None

    async def scenario() -> None:
        follow_ups = FollowUps(0.05)
        follow_ups.lead(KEY, _follow_up)
        follow_ups.lead(KEY, again)
        follow_ups.unfollow(KEY)
        await asyncio.sleep(0.2)
        assert follow_ups.find(KEY) is again

    asyncio.run(scenario())


def _slow_follow_up(ran: list[str]) -> Callable[[], Awaitable[None]]:
    """A follow-up that takes 0.1 s, then notes that it ran in ``ran``."""

    async def follow_up() -> None:
        await asyncio.sleep(0.1)
        ran.append("followed up")

    return follow_up


def _led(follow_up: FollowUp) -> FollowUps:
    """Follow-ups holding ``follow_up`` for ``KEY``, led by one stream."""
    follow_ups = FollowUps(5.0)
    follow_ups.lead(KEY, follow_up)
    return follow_ups


def test_a_stream_that_reattaches_while_the_follow_up_runs_waits_for_its_end() -> None:
    async def scenario() -> None:
        ran: list[str] = []
        follow_ups = _led(_slow_follow_up(ran))
        first = asyncio.ensure_future(follow_ups.run(KEY))
        await asyncio.sleep(0.02)
        assert follow_ups.followed(KEY), "the reattached stream has the run to wait for"
        await follow_ups.run(KEY)
        assert ran == ["followed up"], "the reattached stream's run ended with the first's"
        await first
        assert ran == ["followed up"]
        assert not follow_ups.followed(KEY)

    asyncio.run(scenario())


def test_a_follow_up_runs_to_its_end_when_the_stream_running_it_is_cancelled() -> None:
    async def scenario() -> None:
        ran: list[str] = []
        follow_ups = _led(_slow_follow_up(ran))
        stream = asyncio.ensure_future(follow_ups.run(KEY))
        await asyncio.sleep(0.02)
        stream.cancel()
        await asyncio.gather(stream, return_exceptions=True)
        await asyncio.sleep(0.2)
        assert ran == ["followed up"]

    asyncio.run(scenario())


def test_a_follow_up_runs_once_on_whichever_stream_sees_the_operation_end() -> None:
    async def scenario() -> None:
        ran: list[str] = []

        async def follow_up() -> None:
            ran.append("followed up")

        follow_ups = FollowUps(5.0)
        follow_ups.hold(KEY, follow_up, followers=1)
        assert follow_ups.follow(KEY) is follow_up
        await follow_ups.run(KEY)
        follow_ups.unfollow(KEY)
        await follow_ups.run(KEY)
        assert ran == ["followed up"]
        assert len(follow_ups) == 0

    asyncio.run(scenario())


def _responses(*ids: str) -> list[spark_proto.ExecutePlanResponse]:
    return [spark_proto.ExecutePlanResponse(response_id=i) for i in ids]


@pytest.mark.parametrize(
    ("last", "rest"),
    [
        ("result", ["complete"]),
        ("complete", ["complete"]),
        ("progress", ["result", "complete"]),
        ("", ["result", "complete"]),
    ],
)
def test_a_kept_answer_gives_what_follows_the_last_response_seen(last: str, rest: list[str]) -> None:
    answer = Answer(_responses("result", "complete"), None)
    assert [r.response_id for r in answer.after(last)] == rest


def test_a_kept_answers_finish_runs_once_whichever_stream_reaches_it() -> None:
    async def scenario() -> None:
        ran: list[str] = []

        async def finish() -> None:
            ran.append("finished")

        answers = Answers(5.0)
        answers.hold(KEY, Answer(_responses("result", "complete"), once(finish)))
        kept = answers.find(KEY)
        assert kept is not None
        assert kept.finish is not None
        await kept.finish()
        again = answers.find(KEY)
        assert again is kept
        assert again.finish is not None
        await again.finish()
        assert ran == ["finished"]
        answers.drop(KEY)
        assert answers.find(KEY) is None

    asyncio.run(scenario())


def test_once_runs_for_the_first_caller_and_every_caller_waits_for_that_run() -> None:
    """A statement's finish shared by two streams: the one that reaches it second waits for
    the run the first began, which goes on if the first is cancelled, and both get its
    error."""

    async def scenario() -> None:
        ran: list[str] = []
        gate = asyncio.Event()

        async def finish() -> None:
            await gate.wait()
            ran.append("finished")

        shared = once(finish)
        first = asyncio.ensure_future(shared())
        second = asyncio.ensure_future(shared())
        await asyncio.sleep(0.01)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        assert not second.done(), "the second caller waits for the run the first began"
        gate.set()
        await second
        await shared()
        assert ran == ["finished"]

        async def failing() -> None:
            raise ConnectPluginError("the follow-up failed")

        refused = once(failing)
        outcomes = await asyncio.gather(refused(), refused(), return_exceptions=True)
        assert [str(o) for o in outcomes] == ["the follow-up failed"] * 2

    asyncio.run(scenario())
