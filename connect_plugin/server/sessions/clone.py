"""CloneSession of a session with temp tables: the clone gets its own copy of each.

Spark copies the session's temporary views into the clone; the gateway
hard-links each table's files into the clone's folder and points the
clone's view at them, so dropping, replacing or releasing either side never
touches the other. The source session is locked from before the upstream
clone until the copies are ready, so a running CTTAS or DROP ends first. If
a copy fails, the clone is released upstream and nothing of it stays.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConnectPluginError, TempTableError, WorkspaceError
from connect_plugin.server.sessions.quotas import Quotas
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.release import SessionRelease, to_the_end
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.views import create_view
from connect_plugin.server.transport.upstream import SessionContext, Upstream

log = logging.getLogger(__name__)


class Cloner:
    """Clones sessions upstream and copies their temp tables into the clone."""

    def __init__(
        self,
        registry: SessionRegistry,
        workspace: Workspace,
        upstream: Upstream,
        release: SessionRelease,
        quotas: Quotas,
    ) -> None:
        self._registry = registry
        self._workspace = workspace
        self._upstream = upstream
        self._release = release
        self._quotas = quotas

    async def clone(
        self, context: SessionContext, request: spark_proto.CloneSessionRequest
    ) -> spark_proto.CloneSessionResponse | None:
        """The clone's response; ``None`` when the session has no tables (forwarded as it came)."""
        source = self._registry.find(context.user_id, context.session_id)
        if source is None or not (source.tables or source.creating):
            return None
        if not request.new_session_id:
            request.new_session_id = str(uuid.uuid4())
        async with self._registry.statement(context.user_id, context.session_id):
            self._quotas.check_clone(source)
            response = await self._upstream.session(context).clone_session(request)
            clone = SessionContext(response.new_session_id, context.user_context, context.metadata)
            try:
                await self._copy_tables(context, clone, response.new_server_side_session_id)
            except BaseException as exc:
                await to_the_end(self._undo(clone))
                if isinstance(exc, ConnectPluginError):
                    raise TempTableError(
                        f"session [{context.session_id}] was not cloned: {exc}"
                    ) from exc
                raise
        return response

    async def _copy_tables(
        self, context: SessionContext, clone: SessionContext, server_side_session_id: str
    ) -> None:
        source = self._registry.find(context.user_id, context.session_id)
        assert source is not None, "the caller holds the source session"
        upstream = self._upstream.session(clone)
        async with self._registry.statement(clone.user_id, clone.session_id) as target:
            for table in sorted(source.tables.values(), key=lambda t: t.created):
                try:
                    location = self._workspace.new_table_folder(clone.session_id, clone.user_id)
                except WorkspaceError as exc:
                    raise WorkspaceError(f"temporary table [{table.name}]: {exc}") from exc
                copy = dataclasses.replace(table, location=location)
                self._registry.begin_create(target, copy, "", server_side_session_id)
                try:
                    self._workspace.copy_table(
                        table.location, location, self._workspace.owner_of(clone.user_id)
                    )
                except WorkspaceError as exc:
                    raise WorkspaceError(
                        f"temporary table [{table.name}]: its files were not copied: {exc}"
                    ) from exc
                await create_view(upstream, copy, replace=True)
                self._registry.finish_create(target, copy, replaced=None)
                log.info("Temporary table [%s] copied to session %s.", table.name, clone.session_id)

    async def _undo(self, clone: SessionContext) -> None:
        """Release a clone whose tables could not be copied, and delete what was copied."""
        try:
            await self._upstream.session(clone).release_session()
        except ConnectPluginError as exc:
            log.warning("session %s: releasing the failed clone failed: %s", clone.session_id, exc)
        await self._release.forget(self._registry.open(clone.user_id, clone.session_id))
