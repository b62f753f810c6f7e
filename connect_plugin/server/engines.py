"""A Spark of their own: each user's or group's sessions go to that owner's engine.

With ``share_level`` ``user`` or ``group`` the gateway fronts one Spark
Connect server per owner (a user, or a group of the tokens file) instead of
one for everyone, as Apache Kyuubi's share levels do. An owner's engine is
named in ``engines`` (a server run elsewhere), or, with ``local``, started
here on the first call of its owner (``engine_process``): that call, and
every call of the owner meanwhile, waits for it, so a client sees a slow
first call, not an error. No two owners share an engine, and every call of a
session (the gateway's own in it too) goes to its owner's, since a session
belongs to the user who opened it.

An engine started here stops after ``engine_idle_timeout_s`` without a call
in flight and without a session holding temporary tables; its owner's next
call starts a new one. At most ``max_engines`` run or start at once: a new
owner over it is refused with ``QuotaExceeded`` (``RESOURCE_EXHAUSTED``),
and no running engine is disturbed.

An engine that exits on its own (killed, out of memory) is found by the
sweep, or by the next call routed to it, whichever comes first. Every
session it held ends with it: the gateway's state of each goes (``lost``:
temporary tables unlisted, their files deleted), and each later call of
such a session is refused with ``SessionClosed`` naming the cause, until
the client releases it; the owner's next new session starts a new engine.
With ``engine_os_users`` (a gateway run as root), each engine started here
runs as its owner's operating-system user (``engine_users``); an owner with
none is refused with ``NoEngine``, never run as root.
A gateway that starts stops the engines a gateway with its state folder left
behind when it died (``stop_strays``): their tokens went with it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import grpc
from google.protobuf.message import Message

from connect_plugin.config import Config
from connect_plugin.errors import NoEngine, QuotaExceeded, SessionClosed
from connect_plugin.server.engine_process import LocalEngine, stop_strays
from connect_plugin.server.engine_users import EngineUser, engine_users
from connect_plugin.server.transport.channels import channel_to
from connect_plugin.upstream_url import UpstreamUrl

log = logging.getLogger(__name__)

MAX_SWEEP_INTERVAL_S = 2.0
"""The longest between two looks at the engines (idle ones, ones that exited)."""
ENDED_KEPT = 10_000
"""Sessions of engines that exited whose calls are refused with the cause (the oldest go
first beyond these: their calls then find a session Spark does not know)."""

SessionKey = tuple[str, str]


class EngineListener(Protocol):
    """Hears of engines starting and stopping (the metrics)."""

    def engine_started(self, seconds: float) -> None: ...

    def engine_stopped(self, reason: str) -> None: ...


@dataclass
class Engine:
    """One owner's running engine and the channel to it."""

    owner: str
    channel: grpc.aio.Channel
    process: LocalEngine | None
    """None for an engine named in ``engines``, which runs elsewhere."""
    last_used: float = field(default_factory=time.monotonic)
    sessions: set[SessionKey] = field(default_factory=set)
    """The (user, session id) of every session seen going to it."""


class Engines:
    """Every owner's engine: found, started, used, stopped."""

    def __init__(
        self,
        config: Config,
        group_of: Callable[[str], str | None],
        busy_users: Callable[[], set[str]],
        lost: Callable[[str, str], Awaitable[None]] | None = None,
        extra_conf: Mapping[str, str] | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        """``group_of``: a user's group in the tokens file; ``busy_users``: the users with a
        call in flight or a session holding temporary tables; ``lost``: ends the sessions of
        an owner whose engine exited on its own, given the owner and why; ``extra_conf`` and
        ``jvm_options``: for the engines started here (``LocalEngine``)."""
        self.config = config
        self._group_of = group_of
        self._busy_users = busy_users
        self._lost = lost
        self._extra_conf = dict(extra_conf or {})
        self._jvm_options = jvm_options
        self._static: Mapping[str, UpstreamUrl] = config.static_engines
        self.os_users: dict[str, EngineUser] = engine_users(config)
        """The operating-system user of each owner's engine (none: the gateway's user)."""
        self._running: dict[str, Engine] = {}
        self._starting: dict[str, asyncio.Future[Engine]] = {}
        self._processes: set[LocalEngine] = set()
        self._stopping: set[asyncio.Future[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._ended: collections.OrderedDict[SessionKey, str] = collections.OrderedDict()
        self.listener: EngineListener | None = None
        self._closing = False
        self.starts = 0
        self.strays: list[int] = []
        """Engines a previous run left running, stopped at start."""
        self.start_seconds: list[float] = []
        self.stops: dict[str, int] = {}

    def owner_of(self, user: str | None) -> str:
        """Whose engine ``user``'s sessions go to; ``NoEngine`` for a user in no group."""
        if user is None:
            raise NoEngine(
                f"share level {self.config.share_level} needs every call authenticated"
            )
        if self.config.share_level == "user":
            return user
        group = self._group_of(user)
        if group is None:
            raise NoEngine(
                f"user {user!r} is in no group: share level group sends each group's sessions "
                "to its own Spark; add the group after the user's token in the tokens file"
            )
        return group

    def os_user_of(self, user: str) -> EngineUser | None:
        """The operating-system user ``user``'s engine runs as (None: the gateway's)."""
        try:
            return self.os_users.get(self.owner_of(user))
        except NoEngine:
            return None

    def os_uids(self) -> set[int]:
        """The users this gateway's engines and their Python workers run as, its own too."""
        return {os.getuid(), *(user.uid for user in self.os_users.values())}

    @property
    def running(self) -> int:
        """Engines started here that serve."""
        return sum(1 for engine in self._running.values() if engine.process is not None)

    @property
    def starting(self) -> int:
        return len(self._starting)

    def pids(self) -> dict[str, int]:
        """The JVM of each running engine started here, by owner."""
        return {
            owner: engine.process.pid
            for owner, engine in self._running.items()
            if engine.process is not None and engine.process.pid is not None
        }

    def channel_now(self, user: str) -> grpc.aio.Channel | None:
        """The channel of ``user``'s engine if it runs (the gateway's own calls: they never
        start one); None otherwise."""
        try:
            owner = self.owner_of(user)
        except NoEngine:
            return None
        engine = self._running.get(owner)
        return None if engine is None else engine.channel

    async def route(self, user: str | None, request: Message | None = None) -> grpc.aio.Channel:
        """The channel of ``user``'s engine, started first if it is not running; a request
        of a session whose engine exited is refused, naming the cause."""
        owner = self.owner_of(user)
        seen = _sessions_of(user, request)
        self._refuse_ended(seen, request)
        engine = self._running.get(owner)
        if engine is not None and engine.process is not None and not engine.process.running:
            await self._exited(engine)
            self._refuse_ended(seen, request)
            engine = None
        if engine is None:
            starting = self._starting.get(owner)
            if starting is None:
                starting = self._begin_start(owner)
            engine = await asyncio.shield(starting)
        engine.last_used = time.monotonic()
        engine.sessions.update(seen)
        return engine.channel

    def _refuse_ended(self, seen: list[SessionKey], request: Message | None) -> None:
        if not seen:
            return
        releasing = request is not None and request.DESCRIPTOR.name == "ReleaseSessionRequest"
        reason = self._ended.pop(seen[0], None) if releasing else self._ended.get(seen[0])
        if reason is not None and not releasing:
            raise SessionClosed(
                f"session {seen[0][1]} was closed: {reason}; its temporary tables are gone. "
                "Create a new session (SparkSession.builder...create())"
            )

    def _begin_start(self, owner: str) -> asyncio.Future[Engine]:
        static = self._static.get(owner)
        if static is not None:
            engine = Engine(owner, channel_to(static, self.config), None)
            self._running[owner] = engine
            log.info("engine of %r: %s", owner, static.redacted)
            done: asyncio.Future[Engine] = asyncio.get_running_loop().create_future()
            done.set_result(engine)
            return done
        if not self.config.local or self._closing:
            raise NoEngine(
                f"no Spark Connect engine for {self.config.share_level} {owner!r}: name one "
                "in engines (owner=sc://host:port), or start engines here with local"
            )
        if self.os_users and owner not in self.os_users:
            raise NoEngine(
                f"no operating-system user for the engine of {self.config.share_level} "
                f"{owner!r}: engine_os_users names one for each owner whose engine starts here; "
                f"add {owner}=<user> (a user made for it, e.g. by useradd)"
            )
        limit = self.config.max_engines
        if limit and self.running + self.starting >= limit:
            raise QuotaExceeded(
                f"max_engines reached: {self.running + self.starting} Spark Connect engines "
                f"run of at most {limit}, so no engine can start for "
                f"{self.config.share_level} {owner!r}; try again once one stops "
                f"(after engine_idle_timeout_s), or raise max_engines",
                quota="max_engines",
            )
        task = asyncio.ensure_future(self._start(owner))
        self._starting[owner] = task
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        return task

    async def _start(self, owner: str) -> Engine:
        process = LocalEngine(
            self.config, owner, self._extra_conf, self._jvm_options, self.os_users.get(owner)
        )
        self._processes.add(process)
        log.info("starting the Spark Connect engine of %s %r", self.config.share_level, owner)
        try:
            await asyncio.to_thread(process.start)
            if self._closing:
                raise NoEngine("the gateway is stopping")
        except BaseException:
            self._starting.pop(owner, None)
            self._processes.discard(process)
            await asyncio.to_thread(process.stop)
            raise
        engine = Engine(owner, channel_to(process.url, self.config), process)
        self._running[owner] = engine
        self._starting.pop(owner, None)
        self.starts += 1
        self.start_seconds.append(process.start_s)
        if self.listener is not None:
            self.listener.engine_started(process.start_s)
        log.info(
            "the engine of %s %r serves (pid %s, started in %.1f s)",
            self.config.share_level,
            owner,
            process.pid,
            process.start_s,
        )
        return engine

    # The sweep: idle engines stop, engines that exited are let go.

    async def start(self) -> None:
        """Stop the engines a previous run left (``stop_strays``), then sweep while serving."""
        if self.config.local:
            if os.geteuid() == 0 and not self.os_users:
                log.warning(
                    "the gateway runs as root without engine_os_users: every engine, and the "
                    "code its users run in it, runs as root; name a user per %s in "
                    "engine_os_users",
                    self.config.share_level,
                )
            self.strays = await asyncio.to_thread(stop_strays, self.config.state_dir)
            self._sweeper = asyncio.ensure_future(self._sweep_forever())

    def _sweep_interval(self) -> float:
        idle = self.config.engine_idle_timeout_s
        return min(MAX_SWEEP_INTERVAL_S, idle / 4) if idle > 0 else MAX_SWEEP_INTERVAL_S

    async def _sweep_forever(self) -> None:
        interval = self._sweep_interval()
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("looking at the engines failed; again in %.1f s", interval)

    def _busy_owners(self) -> set[str]:
        owners = set()
        for user in self._busy_users():
            with contextlib.suppress(NoEngine):
                owners.add(self.owner_of(user))
        return owners

    async def sweep(self) -> None:
        """Let go of the engines that exited, and stop the ones idle past the timeout."""
        now = time.monotonic()
        busy = self._busy_owners()
        timeout = self.config.engine_idle_timeout_s
        for owner, engine in list(self._running.items()):
            process = engine.process
            if process is None:
                continue
            if not process.running:
                await self._exited(engine)
                continue
            if owner in busy:
                engine.last_used = now
            elif timeout > 0 and now - engine.last_used >= timeout:
                log.info(
                    "the engine of %s %r was idle for %.0f s; stopping it",
                    self.config.share_level,
                    owner,
                    now - engine.last_used,
                )
                await self._let_go(engine, "idle")

    async def _exited(self, engine: Engine) -> None:
        """An engine that exited on its own: its sessions end, the cause kept for their
        clients (once, whoever finds it first)."""
        if self._running.get(engine.owner) is not engine:
            return
        assert engine.process is not None
        cause = (
            f"the Spark Connect engine of {self.config.share_level} {engine.owner!r} (pid "
            f"{engine.process.pid}) exited"
        )
        for key in engine.sessions:
            self._ended[key] = cause
            self._ended.move_to_end(key)
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        await self._let_go(engine, "exited")
        if self._lost is not None:
            await self._lost(engine.owner, cause)

    async def _let_go(self, engine: Engine, reason: str) -> None:
        """Stop using ``engine`` at once, and stop its process (which the gateway's stop
        waits for, whoever began it)."""
        if self._running.get(engine.owner) is engine:
            del self._running[engine.owner]
        if reason == "exited":
            log.warning(
                "the engine of %s %r exited; its sessions end, its next call starts a new one",
                self.config.share_level,
                engine.owner,
            )
        with contextlib.suppress(Exception):
            await engine.channel.close()
        process = engine.process
        if process is not None:
            stopping = asyncio.ensure_future(asyncio.to_thread(process.stop))
            self._stopping.add(stopping)
            try:
                await asyncio.shield(stopping)
            finally:
                if stopping.done():
                    self._stopping.discard(stopping)
                    self._processes.discard(process)
        if process is None:
            return
        self.stops[reason] = self.stops.get(reason, 0) + 1
        if self.listener is not None:
            self.listener.engine_stopped(reason)

    async def stop(self) -> None:
        """Stop every engine started here (those still starting too) and close every channel."""
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await asyncio.gather(*self._stopping, return_exceptions=True)
        running = list(self._running.values())
        starting = [p for p in self._processes if all(e.process is not p for e in running)]
        await asyncio.gather(
            *(self._let_go(engine, "gateway_stop") for engine in running),
            *(asyncio.to_thread(process.stop) for process in starting),
            *self._starting.values(),
            return_exceptions=True,
        )
        self._processes.clear()


def _sessions_of(user: str | None, request: Message | None) -> list[SessionKey]:
    """The sessions a request names: its own, and the new one of a CloneSession."""
    if user is None or request is None:
        return []
    named = [getattr(request, "session_id", ""), getattr(request, "new_session_id", "")]
    return [(user, session_id) for session_id in named if session_id]
