"""Sessions that go away without saying so: idle ones, and ones the upstream lost.

A temp table lives exactly as long as its session, and whatever else the
gateway keeps about a session goes when Spark forgets it. A client that
vanishes never sends ReleaseSession, and a Spark Connect server that
restarts or expires a session forgets its views without telling the
gateway, so the gateway watches every session it holds something for:

- the forwarder reports every call (``begin``/``end``), so activity is known
  in memory at the cost of a dict update, and a session with a call in
  flight (a long query, an open result stream) is never idle;
- an upstream error saying the session is gone, or a response from another
  server-side session than the one recorded, ends the session at once;
- a sweeper on the gateway's event loop, every ``session_sweep_interval_s``,
  writes activity to the registry, probes each session (a ReleaseExecute
  that never creates one), ends the ones the upstream lost, and releases
  sessions with temp tables idle for longer than the timeout (upstream
  first, then folder and rows). A session without tables is never released
  by the gateway: Spark's own timeout ends it, and the probe then finds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import Message

from connect_plugin.config import Config
from connect_plugin.errors import ConnectPluginError
from connect_plugin.server.sessions.registry import Lifecycle, Session, SessionKey, SessionRegistry
from connect_plugin.server.sessions.release import SessionRelease
from connect_plugin.server.sessions.store import now
from connect_plugin.server.table_files.views import uncache
from connect_plugin.server.transport.liveness import Liveness, liveness_of, probe
from connect_plugin.server.transport.upstream import Upstream, upstream_failure

log = logging.getLogger(__name__)

UPSTREAM_TIMEOUT_KEY = "spark.connect.session.manager.defaultSessionTimeout"
SPARK_DEFAULT_SESSION_TIMEOUT_S = 3600.0
"""Spark's own default for ``UPSTREAM_TIMEOUT_KEY`` (60 minutes)."""
MAX_PARALLEL_PROBES = 16
_TIME_UNITS_S = {
    "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0,
}  # fmt: skip
_TIME = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")


def spark_duration_s(text: str, default_unit: str = "ms") -> float | None:
    """Seconds of a Spark time setting such as ``60m`` or ``3600s``; None if unreadable."""
    match = _TIME.fullmatch(text.lower())
    if match is None:
        return None
    unit = _TIME_UNITS_S.get(match.group(2) or default_unit)
    return None if unit is None else float(match.group(1)) * unit


@dataclass
class WatchFigures:
    """What the watch has done since start, for the log and for tests."""

    expired: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    sweeps: int = 0


class SessionWatch:
    """Activity of every session, and the sweeper that acts on it."""

    def __init__(
        self,
        config: Config,
        registry: SessionRegistry,
        upstream: Upstream,
        release: SessionRelease,
    ) -> None:
        self.config = config
        self._registry = registry
        self._upstream = upstream
        self._release = release
        self._cleanups: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._upstream_timeout_s: float | None = None
        self._timeout_asked = False
        self.figures = WatchFigures()

    @property
    def timeout_s(self) -> float:
        """The idle timeout: configured, else the upstream's, else Spark's default."""
        if self.config.session_idle_timeout_s > 0:
            return self.config.session_idle_timeout_s
        return self._upstream_timeout_s or SPARK_DEFAULT_SESSION_TIMEOUT_S

    # The forwarder's side: called for every call, so kept to dict updates.

    def begin(self, request: Message) -> SessionKey | None:
        session_id = getattr(request, "session_id", "")
        if not session_id:
            return None
        user_context = getattr(request, "user_context", None)
        key = (user_context.user_id if user_context is not None else "", session_id)
        self._registry.begin_call(key)
        return key

    def end(self, key: SessionKey) -> None:
        self._registry.end_call(key)

    def tracks_responses(self, key: SessionKey) -> bool:
        """Whether responses of this session are worth decoding (it has temp tables)."""
        session = self._registry.find(*key)
        return session is not None and session.stored

    def responded(self, key: SessionKey, server_side_session_id: str) -> None:
        """A response of the session: another server-side session means the old one is gone."""
        session = self._registry.find(*key)
        if session is None or not server_side_session_id:
            return
        known = session.server_side_session_id
        if not known:
            self._registry.record_server_side_session(session, server_side_session_id)
        elif known != server_side_session_id:
            self._end_later(
                session,
                known,
                f"the upstream answered from a new server-side session {server_side_session_id}",
            )

    def failed(self, key: SessionKey, error: grpc.aio.AioRpcError) -> None:
        """An upstream error of the session: some say the session is gone."""
        session = self._registry.find(*key)
        if session is None or not self._registry.holds_state(session) or session.release_asked:
            return
        failure = upstream_failure(error)
        if liveness_of(failure) is Liveness.GONE:
            self._end_later(
                session, session.server_side_session_id, f"the upstream said {failure.error_class}"
            )

    def _end_later(self, session: Session, gone: str, reason: str) -> None:
        task = asyncio.ensure_future(self._gone(session, gone, reason))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    async def settle(self) -> None:
        """Wait for the session endings under way (tests await this instead of sleeping)."""
        while self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)

    # The sweeper.

    async def start(self) -> None:
        self._sweeper = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        tasks = [*self._cleanups, *([self._sweeper] if self._sweeper is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        interval = self.config.session_sweep_interval_s
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception(
                    "sweeping idle and lost sessions failed; trying again in %.0f s", interval
                )

    async def sweep(self) -> None:
        """One round: persist activity, end lost sessions, expire idle ones."""
        self.figures.sweeps += 1
        started = now()
        limit = asyncio.Semaphore(MAX_PARALLEL_PROBES)

        async def one(session: Session) -> None:
            async with limit:
                await self._check(session, started)

        watched = [
            session
            for session in self._registry.sessions()
            if session.state is Lifecycle.ACTIVE and self._registry.holds_state(session)
        ]
        await asyncio.gather(*(one(session) for session in watched))

    async def _check(self, session: Session, at: float) -> None:
        self._registry.record_activity(session)
        if self._registry.in_flight(session) > 0:
            return
        known = session.server_side_session_id
        upstream = self._upstream.stored(session.user_id, session.session_id)
        found = await probe(upstream, known, self.config.recovery_timeout_s)
        if found.liveness is Liveness.UNKNOWN:
            log.debug(
                "session %s: the upstream cannot say now whether it has it: %s",
                session.session_id,
                found.reason,
            )
            return
        if found.liveness is Liveness.GONE:
            await self._gone(session, known, "the upstream no longer has it")
            return
        if not session.stored:
            return
        if not self._timeout_asked and self.config.session_idle_timeout_s <= 0:
            self._timeout_asked = True
            await self._read_upstream_timeout(session)
        idle = at - session.last_activity
        if idle >= self.timeout_s and self._registry.in_flight(session) == 0:
            await self._expire(session, idle)

    async def _read_upstream_timeout(self, session: Session) -> None:
        """Take the upstream's session timeout when its server sets one (asked once)."""
        upstream = self._upstream.stored(session.user_id, session.session_id)
        try:
            value = (await upstream.config([UPSTREAM_TIMEOUT_KEY])).get(UPSTREAM_TIMEOUT_KEY)
        except ConnectPluginError as exc:
            log.info("cannot read %s from the upstream (%s)", UPSTREAM_TIMEOUT_KEY, exc)
            value = None
        seconds = spark_duration_s(value) if value else None
        self._upstream_timeout_s = seconds or SPARK_DEFAULT_SESSION_TIMEOUT_S
        log.info("idle sessions with temporary tables expire after %.0f s", self.timeout_s)

    async def _expire(self, session: Session, idle: float) -> None:
        """Release an idle session upstream, then its tables (a crash between: recovery)."""
        upstream = self._upstream.stored(session.user_id, session.session_id)
        try:
            await asyncio.wait_for(
                uncache(upstream, list(session.tables.values())), self.config.recovery_timeout_s
            )
        except asyncio.TimeoutError:
            log.info("session %s: dropping its cached tables timed out", session.session_id)
        try:
            await asyncio.wait_for(upstream.release_session(), self.config.recovery_timeout_s)
        except (asyncio.TimeoutError, ConnectPluginError) as exc:
            if liveness_of(exc) is not Liveness.GONE:
                log.warning(
                    "session %s: releasing it upstream failed (%s); trying again at the next sweep",
                    session.session_id,
                    str(exc) or type(exc).__name__,
                )
                return
        log.info(
            "Session [%s] expired after %.0f s without a call; its temporary tables go.",
            session.session_id,
            idle,
        )
        if await self._release.forget(session):
            self.figures.expired.append(session.session_id)

    async def engine_lost(self, user_ids: Callable[[str], bool], reason: str) -> None:
        """End every session of the users ``user_ids`` picks, whose Spark Connect engine went
        away (``reason``) and every session in it."""
        for session in self._registry.sessions():
            if session.state is Lifecycle.ACTIVE and user_ids(session.user_id):
                await self._gone(session, session.server_side_session_id, reason)

    async def _gone(self, session: Session, gone: str, reason: str) -> None:
        """End the session unless a CTTAS meanwhile found ``gone`` replaced, or its client
        released it meanwhile (a call that raced the release then finds it gone upstream:
        that is a release, logged as one, not a loss)."""
        if session.state in (Lifecycle.GONE, Lifecycle.RELEASING):
            return
        log.info(
            "Session [%s] no longer exists on the Spark Connect server (%s); its temporary "
            "tables go.",
            session.session_id,
            reason,
        )
        if await self._release.forget(session, lost=gone):
            self.figures.gone.append(session.session_id)
