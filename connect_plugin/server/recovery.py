"""Start-up of the temp-table service: load the registry, repair, sweep.

A gateway may have died anywhere (SIGKILL included). Before it serves again:

1. Every stored session is looked up upstream (without creating it). A
   session the upstream no longer has, or has under another server-side id,
   is gone: its folder and rows are deleted. A live one keeps its ready
   tables, whose views are still in the upstream session.
2. Tables a crash left ``creating`` are rolled back: their write operation is
   interrupted and awaited, the name goes back to what it was (the view of
   the table being replaced, or no view), the folder and the row are deleted.
   Tables left ``dropping`` are finished the same way.
3. The sweep: session folders with no registry entry and table folders with
   no table row (half-written) are deleted, each one logged.

When the upstream cannot be asked, nothing of the session is deleted: its
ready tables are served and its unfinished rows are retried in the
background, under the session's lock, until the upstream answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from connect_plugin.errors import ConnectPluginError, WorkspaceError
from connect_plugin.server.liveness import Liveness, probe
from connect_plugin.server.registry import SessionEntry
from connect_plugin.server.session_store import StoredTable, TableState
from connect_plugin.server.upstream import SessionContext, UpstreamSession

if TYPE_CHECKING:
    from connect_plugin.server.temp_tables import TempTables

log = logging.getLogger(__name__)

RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
T = TypeVar("T")


class _Unanswered(Exception):
    """The upstream could not be asked now; try again later."""


class Recovery:
    """What start-up found and did, kept for the log line and for tests."""

    def __init__(self, tables: TempTables) -> None:
        self._tables = tables
        self.sessions = 0
        self.ready_tables = 0
        self.rolled_back: list[Path] = []
        self.drops_finished: list[Path] = []
        self.sessions_gone: list[str] = []
        self.swept: list[Path] = []
        self.seconds = 0.0
        self._background: set[asyncio.Task[None]] = set()

    @property
    def _timeout(self) -> float:
        return self._tables.config.recovery_timeout_s

    async def run(self) -> None:
        started = time.monotonic()
        registry = self._tables.registry
        snapshot = registry.load()
        self.sessions = len(snapshot.sessions)
        self.ready_tables = sum(row.state is TableState.READY for row in snapshot.tables)
        unfinished: dict[tuple[str, str], list[StoredTable]] = defaultdict(list)
        for row in snapshot.tables:
            if row.state is not TableState.READY:
                unfinished[row.user_id, row.session_id].append(row)
        await asyncio.gather(
            *(
                self._recover(entry, unfinished.get((entry.user_id, entry.session_id), []))
                for entry in registry.sessions()
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

    async def _recover(self, entry: SessionEntry, unfinished: list[StoredTable]) -> None:
        context = SessionContext.of_stored(entry.user_id, entry.session_id)
        await entry.lock.acquire()
        handed_over = False
        try:
            await self._repair(entry, context, unfinished)
        except _Unanswered as exc:
            log.warning(
                "cannot ask the Spark Connect server about session %s now (%s); its tables "
                "are kept and %d unfinished ones retried in the background",
                entry.session_id,
                exc,
                len(unfinished),
            )
            if unfinished:
                task = asyncio.ensure_future(self._retry(entry, context, unfinished))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
                handed_over = True
        finally:
            if not handed_over:
                entry.lock.release()

    async def _retry(
        self, entry: SessionEntry, context: SessionContext, unfinished: list[StoredTable]
    ) -> None:
        """Repair a session whose upstream did not answer; holds (then frees) its lock."""
        delay = RETRY_FIRST_S
        try:
            while True:
                await asyncio.sleep(delay)
                try:
                    await self._repair(entry, context, unfinished)
                    return
                except _Unanswered as exc:
                    log.debug("session %s still unanswered: %s", entry.session_id, exc)
                    delay = min(delay * 2, RETRY_MAX_S)
        finally:
            entry.lock.release()

    async def _repair(
        self, entry: SessionEntry, context: SessionContext, unfinished: list[StoredTable]
    ) -> None:
        upstream = self._tables.upstream(context)
        known = entry.server_side_session_id
        found = await probe(upstream, known, self._timeout)
        if found.liveness is Liveness.UNKNOWN:
            raise _Unanswered(found.reason)
        if found.liveness is Liveness.GONE:
            self._session_gone(entry)
            return
        current = found.server_side_session_id
        if not known:
            entry.server_side_session_id = current
            # Time 0 keeps the stored activity: recovery is not the client's activity.
            self._tables.registry.store.touch(entry.user_id, entry.session_id, 0.0, current)
        for row in sorted(unfinished, key=lambda r: r.state is TableState.DROPPING):
            await self._finish(entry, context, upstream, row)

    async def _finish(
        self,
        entry: SessionEntry,
        context: SessionContext,
        upstream: UpstreamSession,
        row: StoredTable,
    ) -> None:
        """Roll back a ``creating`` table or finish a ``dropping`` one."""
        table = row.table
        if row.state is TableState.CREATING and row.operation_id:
            await self._ask(self._tables.stop_write(upstream, row.operation_id, table.name))
        ready = entry.tables.get(table.key)
        if ready is not None and row.state is TableState.CREATING:
            await self._ask(self._tables.restore_view(context, ready))
        elif ready is None:
            await self._ask(self._tables.drop_view(context, table.name))
        try:
            self._tables.workspace.remove(table.location)
        except WorkspaceError:
            log.exception("temporary table [%s]: its folder stays for the next start", table.name)
            return
        self._tables.registry.remove([table])
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

    def _session_gone(self, entry: SessionEntry) -> None:
        """The upstream no longer has the session: its views are gone, so are its tables."""
        log.info(
            "Session [%s] no longer exists on the Spark Connect server; its temporary tables go.",
            entry.session_id,
        )
        if self._tables.discard(entry):
            self.sessions_gone.append(entry.session_id)

    def _sweep(self) -> None:
        """Delete session folders nobody owns and table folders no row names."""
        workspace = self._tables.workspace
        live = {entry.session_id for entry in self._tables.registry.sessions()}
        rows = {
            (row.session_id, row.table.location.name)
            for row in self._tables.registry.store.load().tables
        }
        for session_id in workspace.session_ids():
            try:
                if session_id not in live:
                    removed = workspace.remove_session(session_id)
                    if removed is not None:
                        self.swept.append(removed)
                    continue
                for folder in workspace.table_folders(session_id):
                    if (session_id, folder.name) not in rows and workspace.remove(folder):
                        log.info("Deleted half-written temporary table location [%s]", folder)
                        self.swept.append(folder)
            except ConnectPluginError:
                log.exception("sweeping the folder of session %s failed", session_id)
