"""Sessions that go away without saying so: idle ones, and ones the upstream lost.

A temp table lives exactly as long as its session. A client that vanishes
never sends ReleaseSession, and a Spark Connect server that restarts or
expires a session forgets its views without telling the gateway, so the
gateway watches the sessions that have temp tables:

- the forwarder reports every call (``begin``/``end``), so activity is known
  in memory at the cost of a dict update, and a session with a call in
  flight (a long query, an open result stream) is never idle;
- an upstream error saying the session is gone, or a response from another
  server-side session than the one recorded, drops the session's tables at
  once;
- a sweeper on the gateway's event loop, every ``session_sweep_interval_s``,
  writes activity to the registry, releases sessions idle for longer than
  the timeout (upstream first, then folder and rows), and probes the others
  with a ReleaseExecute that never creates a session, so sessions lost while
  nobody used them are found too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import Message

from connect_plugin.config import Config
from connect_plugin.errors import ConnectPluginError
from connect_plugin.server.liveness import Liveness, liveness_of, probe
from connect_plugin.server.registry import SessionEntry
from connect_plugin.server.session_store import now
from connect_plugin.server.temp_tables import TempTables
from connect_plugin.server.upstream import SessionContext, upstream_failure

log = logging.getLogger(__name__)

UPSTREAM_TIMEOUT_KEY = "spark.connect.session.manager.defaultSessionTimeout"
SPARK_DEFAULT_SESSION_TIMEOUT_S = 3600.0
"""Spark's own default for ``UPSTREAM_TIMEOUT_KEY`` (60 minutes)."""
MAX_PARALLEL_PROBES = 16
_TIME_UNITS_S = {
    "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0,
}  # fmt: skip
_TIME = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")

Key = tuple[str, str]
"""(user id, session id), as the registry keys sessions."""


def spark_duration_s(text: str, default_unit: str = "ms") -> float | None:
    """Seconds of a Spark time setting such as ``60m`` or ``3600s``; None if unreadable."""
    match = _TIME.fullmatch(text.lower())
    if match is None:
        return None
    unit = _TIME_UNITS_S.get(match.group(2) or default_unit)
    return None if unit is None else float(match.group(1)) * unit


def session_key(request: Message) -> Key | None:
    """The session a decoded request belongs to, if it names one."""
    session_id = getattr(request, "session_id", "")
    if not session_id:
        return None
    user_context = getattr(request, "user_context", None)
    return (user_context.user_id if user_context is not None else "", session_id)


@dataclass
class _Seen:
    last: float
    """Wall-clock time of the last call's start or end (the registry's clock)."""
    in_flight: int = 0
    persisted: float = 0.0


@dataclass
class WatchFigures:
    """What the watch has done since start, for the log and for tests."""

    expired: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    sweeps: int = 0


class SessionWatch:
    """Activity of sessions with temp tables, and the sweeper that acts on it."""

    def __init__(
        self,
        config: Config,
        tables: TempTables,
        forget: Callable[[str, str, str | None], Awaitable[bool]],
    ) -> None:
        self.config = config
        self._tables = tables
        self._forget = forget
        self._seen: dict[Key, _Seen] = {}
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

    def begin(self, request: Message) -> Key | None:
        key = session_key(request)
        if key is None:
            return None
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = _Seen(now())
        else:
            seen.last = now()
        seen.in_flight += 1
        return key

    def end(self, key: Key) -> None:
        seen = self._seen.get(key)
        if seen is None:
            return
        seen.in_flight -= 1
        seen.last = now()
        if seen.in_flight <= 0 and self._tables.registry.find(*key) is None:
            del self._seen[key]

    def tracks_responses(self, key: Key) -> bool:
        """Whether responses of this session are worth decoding (it has temp tables)."""
        return self._tables.registry.find(*key) is not None

    def responded(self, key: Key, server_side_session_id: str) -> None:
        """A response of the session: another server-side session means the old one is gone."""
        entry = self._tables.registry.find(*key)
        if entry is None or not server_side_session_id:
            return
        known = entry.server_side_session_id
        if not known:
            entry.server_side_session_id = server_side_session_id
            self._tables.registry.store.touch(*key, 0.0, server_side_session_id)
        elif known != server_side_session_id:
            self._cleanup_later(
                entry,
                known,
                f"the upstream answered from a new server-side session {server_side_session_id}",
            )

    def failed(self, key: Key, error: grpc.aio.AioRpcError) -> None:
        """An upstream error of the session: some say the session is gone."""
        entry = self._tables.registry.find(*key)
        if entry is None:
            return
        failure = upstream_failure(error)
        if liveness_of(failure) is Liveness.GONE:
            self._cleanup_later(
                entry, entry.server_side_session_id, f"the upstream said {failure.error_class}"
            )

    def _cleanup_later(self, entry: SessionEntry, gone: str, reason: str) -> None:
        task = asyncio.ensure_future(self._session_gone(entry, gone, reason))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    # The sweeper.

    async def start(self) -> None:
        for stored in self._tables.registry.store.load().sessions:
            key = (stored.user_id, stored.session_id)
            if key not in self._seen:
                self._seen[key] = _Seen(stored.last_activity, persisted=stored.last_activity)
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
        """One round: persist activity, expire idle sessions, probe the rest."""
        self.figures.sweeps += 1
        started = now()
        limit = asyncio.Semaphore(MAX_PARALLEL_PROBES)

        async def one(entry: SessionEntry) -> None:
            async with limit:
                await self._check(entry, started)

        await asyncio.gather(*(one(entry) for entry in self._tables.registry.sessions()))

    async def _check(self, entry: SessionEntry, at: float) -> None:
        key = (entry.user_id, entry.session_id)
        seen = self._seen.setdefault(key, _Seen(at))
        if seen.last > seen.persisted:
            self._tables.registry.store.touch(*key, seen.last)
            seen.persisted = seen.last
        if seen.in_flight > 0:
            return
        context = SessionContext.of_stored(entry.user_id, entry.session_id)
        upstream = self._tables.upstream(context)
        known = entry.server_side_session_id
        found = await probe(upstream, known, self.config.recovery_timeout_s)
        if found.liveness is Liveness.UNKNOWN:
            log.debug(
                "session %s: the upstream cannot say now whether it has it: %s",
                entry.session_id,
                found.reason,
            )
            return
        if found.liveness is Liveness.GONE:
            await self._session_gone(entry, known, "the upstream no longer has it")
            return
        if not self._timeout_asked and self.config.session_idle_timeout_s <= 0:
            self._timeout_asked = True
            await self._read_upstream_timeout(context)
        idle = at - seen.last
        if idle >= self.timeout_s and seen.in_flight == 0:
            await self._expire(entry, idle)

    async def _read_upstream_timeout(self, context: SessionContext) -> None:
        """Take the upstream's session timeout when its server sets one (asked once)."""
        try:
            value = (await self._tables.upstream(context).config([UPSTREAM_TIMEOUT_KEY])).get(
                UPSTREAM_TIMEOUT_KEY
            )
        except ConnectPluginError as exc:
            log.info("cannot read %s from the upstream (%s)", UPSTREAM_TIMEOUT_KEY, exc)
            value = None
        seconds = spark_duration_s(value) if value else None
        self._upstream_timeout_s = seconds or SPARK_DEFAULT_SESSION_TIMEOUT_S
        log.info("idle sessions with temporary tables expire after %.0f s", self.timeout_s)

    async def _expire(self, entry: SessionEntry, idle: float) -> None:
        """Release an idle session upstream, then delete its tables (a crash between: recovery)."""
        upstream = self._tables.upstream(SessionContext.of_stored(entry.user_id, entry.session_id))
        try:
            await asyncio.wait_for(upstream.release_session(), self.config.recovery_timeout_s)
        except (asyncio.TimeoutError, ConnectPluginError) as exc:
            if liveness_of(exc) is not Liveness.GONE:
                log.warning(
                    "session %s: releasing it upstream failed (%s); trying again at the next sweep",
                    entry.session_id,
                    str(exc) or type(exc).__name__,
                )
                return
        log.info(
            "Session [%s] expired after %.0f s without a call; its temporary tables go.",
            entry.session_id,
            idle,
        )
        await self._drop_all(entry)
        self.figures.expired.append(entry.session_id)

    async def _session_gone(self, entry: SessionEntry, gone: str, reason: str) -> None:
        """Drop the session's tables unless a CTTAS meanwhile found ``gone`` replaced."""
        if self._tables.registry.find(entry.user_id, entry.session_id) is not entry:
            return
        log.info(
            "Session [%s] no longer exists on the Spark Connect server (%s); its temporary "
            "tables go.",
            entry.session_id,
            reason,
        )
        if await self._drop_all(entry, gone):
            self.figures.gone.append(entry.session_id)

    async def _drop_all(self, entry: SessionEntry, gone: str | None = None) -> bool:
        key = (entry.user_id, entry.session_id)
        dropped = await self._forget(*key, gone)
        seen = self._seen.get(key)
        if dropped and seen is not None and seen.in_flight <= 0:
            del self._seen[key]
        return dropped
