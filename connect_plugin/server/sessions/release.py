"""The end of a session: everything the gateway keeps about it goes, in one place.

A session ends when its client releases it, when the gateway expires it,
when the upstream no longer has it, or when a clone of it could not be made.
Each way ends in ``SessionRelease.forget``: the session turns ``RELEASING``
(new statements wait), the statement running in it finishes, its tables'
rows are marked dropping, its object is forgotten (``GONE``), its folder
goes, then its rows. A crash in between is finished at the next start,
which finds the session gone upstream. With ``stop_python_workers``, the
Python workers Spark started for the session go too (``stop_ended``): the
gateway learns the server-side session that names them first
(``learn_server_side_session``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection

from connect_plugin.errors import ConnectPluginError, WorkspaceError
from connect_plugin.server.sessions.registry import Lifecycle, Session, SessionRegistry
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.writes import stop_write
from connect_plugin.server.transport.upstream import UpstreamSession
from connect_plugin.spark_processes.python_daemons import stop_session

log = logging.getLogger(__name__)


class SessionRelease:
    """Forgets sessions that are gone: their tables, folder, rows and object."""

    def __init__(
        self,
        registry: SessionRegistry,
        workspace: Workspace,
        ended: Callable[[Session], object] | None = None,
    ) -> None:
        """``ended`` is told of each session forgotten (to stop its Python workers)."""
        self._registry = registry
        self._workspace = workspace
        self._ended = ended

    async def forget(self, session: Session, *, lost: str | None = None) -> bool:
        """Forget ``session`` once the statement running in it has finished.

        With ``lost`` (the server-side session found gone), nothing happens
        if the session has been seen under another server-side session since
        (a CTTAS started one). False when the session lives on.
        """
        if session.state is Lifecycle.GONE:
            return False
        if lost is not None and session.server_side_session_id != lost:
            return False
        before = session.state
        session.move_to(Lifecycle.RELEASING)
        async with session.lock:
            if lost is not None and session.server_side_session_id != lost:
                log.info("session %s lives on in a new upstream session", session.session_id)
                session.move_to(before)
                return False
            self.discard(session)
        return True

    def discard(self, session: Session) -> bool:
        """Delete a gone session's tables, folder and rows; False if the folder stays.

        The caller holds the session's lock (or owns the object outright).
        When the folder cannot be deleted the rows stay, for the next start.
        """
        for table in self._registry.unlist_all(session):
            log.info("Temporary table [%s] is being dropped.", table.name)
        self._registry.forget(session)
        if self._ended is not None:
            self._ended(session)
        if not self._registry.shares_folder(session):
            try:
                self._workspace.remove_session(session.session_id)
            except WorkspaceError:
                log.exception("session %s: its folder stays for the next start", session.session_id)
                return False
        if session.stored:
            self._registry.remove_session(session)
        return True


async def stop_writes(session: Session, upstream: UpstreamSession, timeout_s: float) -> None:
    """Stop the session's running CTTAS writes before the session is released upstream.

    Once Spark has released a session it can no longer say whether an
    operation of it still runs, so the writes are stopped while it can.
    """
    outcomes = await asyncio.gather(
        *(
            stop_write(upstream, operation_id, name, timeout_s)
            for operation_id, name in list(session.writes.items())
        ),
        return_exceptions=True,
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            log.warning("session %s: before its release, %s", session.session_id, outcome)


async def learn_server_side_session(
    registry: SessionRegistry, session: Session, upstream: UpstreamSession
) -> None:
    """Record the server-side session whose Python workers the session's end stops.

    A registration command or a release is answered without a response that
    names it, so the upstream is asked (a call that creates nothing). A
    session Spark no longer knows stays unnamed: the idle sweep finds its
    daemons.
    """
    try:
        found = upstream.server_side_session_id or await upstream.current_server_side_session_id()
    except ConnectPluginError as exc:
        log.info("session %s: no server-side session to name: %s", session.session_id, exc)
        return
    registry.record_server_side_session(session, found)


def stop_ended(session: Session, uids: Collection[int] | None = None) -> None:
    """Stop the Python workers of a session the gateway forgot (``SessionRelease``'s
    ``ended``, with ``stop_python_workers``), on a worker thread: looking through ``/proc``
    takes time the event loop must not wait for. ``uids``: whose workers, as
    ``python_daemons.stop_session`` takes them."""
    server_side = session.server_side_session_id
    if not server_side:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _stop_quietly(server_side, uids)
        return
    loop.run_in_executor(None, _stop_quietly, server_side, uids)


def _stop_quietly(server_side_session_id: str, uids: Collection[int] | None) -> None:
    try:
        stop_session(server_side_session_id, uids=uids)
    except OSError:
        log.exception("stopping the Python workers of session %s failed", server_side_session_id)


async def to_the_end(work: Awaitable[None]) -> None:
    """Await ``work`` to its end even if the caller is cancelled meanwhile (re-raised after).

    Undoing a half-made table or clone must finish although the client that
    asked for it went away.
    """
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError
