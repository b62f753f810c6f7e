"""Statements the gateway runs itself, kept running while their client reattaches.

Spark keeps a reattachable operation running when the client's stream of it
ends (the client's deadline for one call, a dropped connection) and resumes
it on ``ReattachExecute``. The gateway does the same for the statements it
runs and answers itself (CTTAS, the row changes, the INSERTs it checks or
rewrites, DROP, SHOW TEMPORARY TABLES): their work goes on for
``detached_timeout_s`` after the last stream following it ended, and a
``ReattachExecute`` of the operation follows its progress and gets its
answer. Not followed again by then, the work is cancelled, which stops its
write and undoes it, as for a client that went away. Any other work ends
with the stream that follows it.

A statement Spark runs, with a follow-up of the gateway's once it succeeded
(an INSERT's files made private and its table's rows counted again), is
Spark's to keep: the follow-up is held (``FollowUps``) from the moment the
statement is forwarded, and run by whichever stream of it sees it end, the
first or one that reattached; a reattach never races the end of the stream
before it.

An answer the gateway gave itself is kept until the client releases it
(``Answers``; for ``detached_timeout_s`` at most), as Spark keeps an
operation's responses: a stream that ended within it is followed by one
that reattaches and gets the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConnectPluginError
from connect_plugin.server.sessions.registry import Session
from connect_plugin.server.transport.interception import Interception

log = logging.getLogger(__name__)

T = TypeVar("T")
P = TypeVar("P")
V = TypeVar("V")

Key = tuple[str, str, str]
"""(user id, session id, operation id) of a client's operation."""


def key_of(
    request: spark_proto.ExecutePlanRequest
    | spark_proto.ReattachExecuteRequest
    | spark_proto.ReleaseExecuteRequest,
) -> Key:
    """The operation a request names."""
    return (request.user_context.user_id, request.session_id, request.operation_id)


def reattachable(request: spark_proto.ExecutePlanRequest) -> bool:
    """Whether the client may reattach to the execution: it named the operation and asked
    for it."""
    return bool(request.operation_id) and any(
        o.HasField("reattach_options") and o.reattach_options.reattachable
        for o in request.request_options
    )


class Running(Generic[P, T]):
    """One statement's work, and the progress it reports to whichever client stream
    follows it.

    ``keep_s``: how long the work goes on with no stream following it (0: it
    is cancelled as the last stream ends); ``forget`` runs once, when no
    stream will follow it again. ``settle`` is the caller's: what a stream
    that saw the work end does with its result (the ``Interception`` the
    stream goes on with); ``unclaimed``, what is done with the result of work
    that ended with no stream left to take it (``closing`` runs it).
    """

    def __init__(
        self,
        work: Callable[[Callable[[P], None]], Awaitable[T]],
        keep_s: float,
        forget: Callable[[], None] = lambda: None,
        settle: Callable[[T], Interception] | None = None,
        unclaimed: Callable[[T], Awaitable[None]] | None = None,
    ) -> None:
        self.progress: asyncio.Queue[P] = asyncio.Queue()
        self.task: asyncio.Future[T] = asyncio.ensure_future(work(self.progress.put_nowait))
        self.task.add_done_callback(_taken)
        self.settle = settle
        self.closing: asyncio.Future[None] | None = None
        self._unclaimed = unclaimed
        self._claimed = False
        self._keep_s = keep_s
        self._forget = forget
        self._followers = 0
        self._expiry: asyncio.TimerHandle | None = None
        self._ended = False

    async def follow(self) -> AsyncIterator[P]:
        """The work's progress until it ends; then ``result`` gives its outcome."""
        self._followers += 1
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        waiter: asyncio.Future[P] | None = None
        try:
            while True:
                waiter = asyncio.ensure_future(self.progress.get())
                either: set[asyncio.Future[Any]] = {self.task, waiter}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    break
                yield waiter.result()
            while not self.progress.empty():
                yield self.progress.get_nowait()
        finally:
            if waiter is not None and not waiter.done():
                waiter.cancel()
            self._followers -= 1
            if not self._followers and not self._ended:
                if self._keep_s > 0:
                    self._expiry = asyncio.get_running_loop().call_later(self._keep_s, self.end)
                elif not self.task.done():
                    self.end()

    async def result(self) -> T:
        """The work's outcome (its error raised), taken by the stream that saw it end: no
        stream follows the work after this one."""
        self._claimed = True
        try:
            return await self.task
        finally:
            self.end()

    def end(self) -> None:
        """Cancel the work if it still runs, and forget it; a result no stream took is
        given to ``unclaimed``."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if not self.task.done():
            self.task.cancel()
        if not self._ended:
            self._ended = True
            self._forget()
            succeeded = (
                self.task.done() and not self.task.cancelled() and self.task.exception() is None
            )
            if succeeded and not self._claimed and self._unclaimed is not None:
                self.closing = asyncio.ensure_future(self._unclaimed(self.task.result()))
                self.closing.add_done_callback(_taken)


class Detached:
    """The gateway's running statements a client may reattach to, by ``Key``."""

    def __init__(self, keep_s: float) -> None:
        self.keep_s = keep_s
        self._running: dict[Key, Running[Any, Any]] = {}

    def start(
        self,
        key: Key | None,
        work: Callable[[Callable[[P], None]], Awaitable[T]],
        settle: Callable[[T], Interception] | None = None,
        unclaimed: Callable[[T], Awaitable[None]] | None = None,
    ) -> Running[P, T]:
        """Run ``work``; with a ``key``, a ``ReattachExecute`` of it finds it (``find``)
        while it runs and for ``keep_s`` after its last stream ended."""
        if key is None or self.keep_s <= 0 or key in self._running:
            return Running(work, 0.0, settle=settle, unclaimed=unclaimed)

        def forget() -> None:
            self._running.pop(key, None)

        running: Running[P, T] = Running(work, self.keep_s, forget, settle, unclaimed)
        self._running[key] = running
        return running

    def find(self, key: Key) -> Running[Any, Any] | None:
        return self._running.get(key)

    def drop_session(self, user_id: str, session_id: str) -> None:
        """End the statements of a session that was released: no stream follows them again."""
        for key, running in list(self._running.items()):
            if key[:2] == (user_id, session_id):
                running.end()

    async def stop(self) -> None:
        """End every statement no stream follows (the gateway is stopping, its streams
        ended), and wait for their writes to be undone."""
        running = list(self._running.values())
        for each in running:
            each.end()
        await asyncio.gather(*(each.task for each in running), return_exceptions=True)
        closing = [each.closing for each in running if each.closing is not None]
        await asyncio.gather(*closing, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._running)


def _taken(task: asyncio.Future[Any]) -> None:
    """A work's error is the audit's and its stream's to report; one that no stream
    followed to the end is not logged again as never retrieved."""
    if not task.cancelled():
        task.exception()


class _Held(Generic[V]):
    def __init__(self, value: V, followers: int) -> None:
        self.value = value
        self.followers = followers
        self.expiry: asyncio.TimerHandle | None = None


class Kept(Generic[V]):
    """Values by ``Key``, until taken or dropped, or for ``keep_s`` after no stream follows
    them: a stream that reattaches to an operation finds what an earlier stream left for
    it. A value followed by a stream (``follow``, or held with ``followers``) does not
    expire until every stream following it ended (``unfollow``)."""

    def __init__(self, keep_s: float) -> None:
        self.keep_s = keep_s
        self._held: dict[Key, _Held[V]] = {}

    def hold(self, key: Key, value: V, followers: int = 0) -> None:
        """Hold ``value`` in place of any held for ``key``, as followed by ``followers``
        streams (with none and ``keep_s`` 0, nothing is held)."""
        if self.keep_s <= 0 and not followers:
            return
        self.drop(key)
        self._held[key] = _Held(value, followers)
        if not followers:
            self._expire_later(key)

    def lead(self, key: Key, value: V) -> None:
        """Hold ``value`` in place of any held for ``key``, followed by one more stream."""
        held = self._held.get(key)
        self.hold(key, value, 1 if held is None else held.followers + 1)

    def follow(self, key: Key) -> V | None:
        """The value, followed by one more stream until it ``unfollow``s (or takes it)."""
        held = self._held.get(key)
        if held is None:
            return None
        held.followers += 1
        if held.expiry is not None:
            held.expiry.cancel()
            held.expiry = None
        return held.value

    def unfollow(self, key: Key) -> None:
        """A stream following the value ended without taking it; with no stream left, the
        value goes in ``keep_s``."""
        held = self._held.get(key)
        if held is None:
            return
        held.followers = max(0, held.followers - 1)
        if not held.followers:
            self._expire_later(key)

    def _expire_later(self, key: Key) -> None:
        held = self._held[key]
        if held.expiry is not None:
            held.expiry.cancel()
        if self.keep_s <= 0:
            del self._held[key]
            return
        held.expiry = asyncio.get_running_loop().call_later(self.keep_s, self._held.pop, key, None)

    def find(self, key: Key) -> V | None:
        held = self._held.get(key)
        return None if held is None else held.value

    def take(self, key: Key) -> V | None:
        held = self._held.pop(key, None)
        if held is None:
            return None
        if held.expiry is not None:
            held.expiry.cancel()
        return held.value

    def drop(self, key: Key) -> None:
        self.take(key)

    def drop_session(self, user_id: str, session_id: str) -> None:
        """Drop what is kept for the operations of a session that was released."""
        for key in [k for k in self._held if k[:2] == (user_id, session_id)]:
            self.drop(key)

    def __len__(self) -> int:
        return len(self._held)


FollowUp = Callable[[], Awaitable[None]]


class FollowUps(Kept[FollowUp]):
    """Follow-ups of Spark's operations, held from the moment the operation is forwarded:
    whichever stream of it, the first or one that reattached, sees the operation succeed
    takes the follow-up and runs it (``run``), once; a stream that ends before the
    operation did leaves it for the next."""

    def __init__(self, keep_s: float) -> None:
        super().__init__(keep_s)
        self._runs: dict[Key, asyncio.Future[None]] = {}

    def followed(self, key: Key) -> bool:
        """Whether a stream that reattaches to the operation has its follow-up to wait for:
        held (it now follows it) or running."""
        return self.follow(key) is not None or key in self._runs

    async def run(self, key: Key) -> None:
        """Run the follow-up to its end, or wait for the run another stream began: its
        next request must find it done. It ends even if the stream is cancelled meanwhile
        (its client went away): the operation succeeded."""
        running = self._runs.get(key)
        if running is None:
            follow_up = self.take(key)
            if follow_up is None:
                return
            running = _start(follow_up)
            running.add_done_callback(lambda _: self._runs.pop(key, None))
            self._runs[key] = running
        await asyncio.shield(running)


class Answer:
    """The responses with which the gateway answered an operation itself, kept until the
    client releases them (``Answers``), as Spark keeps an operation's responses: a stream
    that ended within them is followed by one that reattaches and gets the rest.
    ``finish`` (made by ``once``) runs on whichever stream reaches the last response first,
    and a stream reaching it meanwhile waits for it."""

    def __init__(
        self, responses: Sequence[spark_proto.ExecutePlanResponse], finish: FollowUp | None
    ) -> None:
        self.responses = tuple(responses)
        self.finish = finish

    def after(self, last_response_id: str) -> tuple[spark_proto.ExecutePlanResponse, ...]:
        """The responses after ``last_response_id`` (all of them for an id not among them;
        the last one again for the last one's id)."""
        ids = [r.response_id for r in self.responses]
        if last_response_id not in ids:
            return self.responses
        return self.responses[ids.index(last_response_id) + 1 :] or self.responses[-1:]


class Answers(Kept[Answer]):
    """The gateway's own answers by operation, until a ``ReleaseExecute`` of all of an
    operation's responses or ``keep_s``."""


class DroppedWithSessions:
    """What is kept by operation (running statements, follow-ups, answers) goes when its
    session ends: the registry's part (``SessionPart``) for them, which holds no session."""

    def __init__(self, *kept: Detached | Kept[Any]) -> None:
        self._kept = kept

    def holds(self, session: Session) -> bool:
        return False

    def let_go(self, session: Session, *, ended: bool) -> None:
        if ended:
            for kept in self._kept:
                kept.drop_session(*session.key)


def once(finish: FollowUp) -> FollowUp:
    """``finish``, run by its first caller in a task of its own: every caller waits for that
    run and gets its error, and a caller cancelled meanwhile (its client went away) does not
    stop it."""
    started: list[asyncio.Future[None]] = []

    async def shared() -> None:
        if not started:
            started.append(_start(finish))
        await asyncio.shield(started[0])

    return shared


def _start(work: FollowUp) -> asyncio.Future[None]:
    """``work`` as a task of its own; an error of it that no caller may be left to report is
    logged (a ``ConnectPluginError`` is its audit line's and its stream's)."""
    task = asyncio.ensure_future(work())
    task.add_done_callback(_reported)
    return task


def _reported(task: asyncio.Future[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not isinstance(error, ConnectPluginError):
        log.error("A statement's follow-up failed", exc_info=error)
