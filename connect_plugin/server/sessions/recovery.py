"""Start-up of the gateway's session state: load the registry, repair, sweep.

A gateway may have died anywhere (SIGKILL included). Before it serves again:

1. Every stored session is probed upstream (without creating it). A session
   the upstream no longer has, or has under another server-side id, is
   gone: its folder and rows are deleted. A live one keeps its ready
   tables, whose views are still in the upstream session.
2. Tables a crash left ``creating`` are rolled back: their write operation is
   interrupted and awaited, the name goes back to what it was (the view of
   the table being replaced, or no view), the folder and the row are deleted.
   Tables left ``dropping`` are finished the same way.
3. The sweep: session folders with no registry entry and table folders with
   no table row (half-written) are deleted, each one logged.

When the upstream cannot be asked, nothing of the session is deleted: its
ready tables are served, the session is ``REPAIRING`` (statements in it
wait), and its unfinished rows are retried in the background, each attempt
under the session's lock, until the upstream answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from connect_plugin.config import Config
from connect_plugin.errors import ConnectPluginError, WorkspaceError
from connect_plugin.server.sessions.registry import Lifecycle, Session, SessionRegistry
from connect_plugin.server.sessions.release import SessionRelease
from connect_plugin.server.sessions.store import StoredTable, TableState
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.views import create_view, drop_view
from connect_plugin.server.table_files.writes import remove_for_good, stop_write
from connect_plugin.server.transport.liveness import Liveness, probe
from connect_plugin.server.transport.upstream import Upstream, UpstreamSession

log = logging.getLogger(__name__)

RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
T = TypeVar("T")


class _Unanswered(Exception):
    """The upstream could not be asked now; try again later."""


class Recovery:
    """Repairs what a previous run left; keeps what it found and did for the log and tests."""

    def __init__(
        self,
        config: Config,
        registry: SessionRegistry,
        workspace: Workspace,
        upstream: Upstream,
        release: SessionRelease,
    ) -> None:
        self._timeout = config.recovery_timeout_s
        self._registry = registry
        self._workspace = workspace
        self._upstream = upstream
        self._release = release
        self.sessions = 0
        self.ready_tables = 0
        self.rolled_back: list[Path] = []
        self.drops_finished: list[Path] = []
        self.sessions_gone: list[str] = []
        self.swept: list[Path] = []
        self.seconds = 0.0
        self._background: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        started = time.monotonic()
        snapshot = self._registry.load()
        self.sessions = len(snapshot.sessions)
        self.ready_tables = sum(row.state is TableState.READY for row in snapshot.tables)
        unfinished: dict[tuple[str, str], list[StoredTable]] = defaultdict(list)
        for row in snapshot.tables:
            if row.state is not TableState.READY:
                unfinished[row.user_id, row.session_id].append(row)
        await asyncio.gather(
            *(
                self._recover(session, unfinished.get(session.key, []))
                for session in self._registry.sessions()
            )
        )
        self._sweep()
        self.seconds = time.monotonic() - started
        log.info(
            "session registry loaded in %.3f s: %d sessions, %d tables; %d sessions gone "
            "upstream, %d tables rolled back, %d drops finished, %d orphan folders deleted, "
            "%d sessions left to retry",
            self.seconds,
            self.sessions,
            self.ready_tables,
            len(self.sessions_gone),
            len(self.rolled_back),
            len(self.drops_finished),
            len(self.swept),
            len(self._background),
        )

    async def stop(self) -> None:
        """Cancel the background retries (their rows stay for the next start)."""
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _recover(self, session: Session, unfinished: list[StoredTable]) -> None:
        try:
            async with session.lock:
                await self._repair(session, unfinished)
        except _Unanswered as exc:
            log.warning(
                "cannot ask the Spark Connect server about session %s now (%s); its tables "
                "are kept and %d unfinished ones retried in the background",
                session.session_id,
                exc,
                len(unfinished),
            )
            if unfinished:
                session.move_to(Lifecycle.REPAIRING)
                task = asyncio.ensure_future(self._retry(session, unfinished))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _retry(self, session: Session, unfinished: list[StoredTable]) -> None:
        """Repair a session whose upstream did not answer, until it does or the session ends."""
        delay = RETRY_FIRST_S
        while session.state is Lifecycle.REPAIRING:
            await asyncio.sleep(delay)
            try:
                async with session.lock:
                    if session.state is not Lifecycle.REPAIRING:
                        return
                    await self._repair(session, unfinished)
                    if session.state is Lifecycle.REPAIRING:
                        session.move_to(Lifecycle.ACTIVE)
            except _Unanswered as exc:
                log.debug("session %s still unanswered: %s", session.session_id, exc)
                delay = min(delay * 2, RETRY_MAX_S)

    async def _repair(self, session: Session, unfinished: list[StoredTable]) -> None:
        """Probe the session, then finish its unfinished rows (the caller holds its lock)."""
        upstream = self._upstream.stored(session.user_id, session.session_id)
        found = await probe(upstream, session.server_side_session_id, self._timeout)
        if found.liveness is Liveness.UNKNOWN:
            raise _Unanswered(found.reason)
        if found.liveness is Liveness.GONE:
            log.info(
                "Session [%s] no longer exists on the Spark Connect server; its temporary "
                "tables go.",
                session.session_id,
            )
            if self._release.discard(session):
                self.sessions_gone.append(session.session_id)
            return
        if not session.server_side_session_id:
            self._registry.record_server_side_session(session, found.server_side_session_id)
        for row in sorted(unfinished, key=lambda r: r.state is TableState.DROPPING):
            await self._finish(session, upstream, row)

    async def _finish(self, session: Session, upstream: UpstreamSession, row: StoredTable) -> None:
        """Roll back a ``creating`` table or finish a ``dropping`` one."""
        table = row.table
        if row.state is TableState.CREATING and row.operation_id:
            await self._ask(stop_write(upstream, row.operation_id, table.name, self._timeout))
        ready = session.tables.get(table.key)
        if ready is not None and row.state is TableState.CREATING:
            await self._ask(create_view(upstream, ready, replace=True))
        elif ready is None:
            await self._ask(drop_view(upstream, table.name))
        try:
            if row.state is TableState.CREATING:
                # The stopped write's straggling tasks may still bring files back.
                await remove_for_good(lambda: self._workspace.remove(table.location), self._timeout)
            else:
                self._workspace.remove(table.location)
        except WorkspaceError:
            log.exception("temporary table [%s]: its folder stays for the next start", table.name)
            return
        self._registry.remove([table])
        if row.state is TableState.CREATING:
            log.info(
                "Temporary table [%s] was rolled back: the gateway stopped while creating it.",
                table.name,
            )
            self.rolled_back.append(table.location)
        else:
            log.info("Temporary table [%s] dropped.", table.name)
            self.drops_finished.append(table.location)

    async def _ask(self, call: Awaitable[T]) -> T:
        """Await an upstream call with the recovery timeout; no answer is ``_Unanswered``."""
        try:
            return await asyncio.wait_for(call, self._timeout)
        except (TimeoutError, asyncio.TimeoutError) as exc:
            raise _Unanswered(f"no answer within {self._timeout:.0f} s") from exc
        except ConnectPluginError as exc:
            raise _Unanswered(str(exc)) from exc

    def _sweep(self) -> None:
        """Delete session folders nobody owns and table folders no row names."""
        live = {session.session_id for session in self._registry.sessions()}
        rows = {(row.session_id, row.table.location.name) for row in self._registry.table_rows()}
        for session_id in self._workspace.session_ids():
            try:
                if session_id not in live:
                    removed = self._workspace.remove_session(session_id)
                    if removed is not None:
                        self.swept.append(removed)
                    continue
                for folder in self._workspace.table_folders(session_id):
                    if (session_id, folder.name) not in rows and self._workspace.remove(folder):
                        log.info("Deleted half-written temporary table location [%s]", folder)
                        self.swept.append(folder)
            except ConnectPluginError:
                log.exception("sweeping the folder of session %s failed", session_id)
