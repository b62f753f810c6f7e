"""CREATE TEMPORARY TABLE ... [AS SELECT]: write the files, name them, or undo every step.

Spark does the data work in the user's own session: the query result (for
a declared table without a query, no rows of its declared columns) is
written under ``<workspace>/<session_id>/<uuid>/``, the folder is made
private, and a temporary view over the files gives the table its name
(``versions``); a failed statement leaves no files, no view and no registry
entry.
"""

from __future__ import annotations

import datetime
import logging

from connect_plugin.config import TEMP_TABLE_FORMATS, Config
from connect_plugin.errors import (
    TempTableError,
    TempTableExists,
    WorkspaceError,
)
from connect_plugin.server.model.statements import CreateTempTable
from connect_plugin.server.sessions.quotas import Quotas
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import Outcome
from connect_plugin.server.table_files.table_names import check_table_name
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.views import temp_view_names
from connect_plugin.server.table_files.writes import (
    ProgressSink,
)
from connect_plugin.server.tables.lossless import layout
from connect_plugin.server.tables.table_input import check_shape, shaped_input
from connect_plugin.server.tables.value_checks import checked, rules
from connect_plugin.server.tables.versions import TableVersions
from connect_plugin.server.tables.zero_signs import refuse_zeros_of_both_signs, zero_columns
from connect_plugin.server.transport.liveness import Liveness, probe
from connect_plugin.server.transport.upstream import SessionContext, Upstream, UpstreamSession

log = logging.getLogger(__name__)

SESSION_FORMAT_KEY = "connect_plugin.temp_table.format"


class TableCreator:
    """Creates temp tables in their sessions, and undoes the ones that fail."""

    def __init__(
        self, config: Config, registry: SessionRegistry, workspace: Workspace, upstream: Upstream
    ) -> None:
        self._config = config
        self._registry = registry
        self._workspace = workspace
        self._upstream = upstream
        self._quotas = Quotas(config, registry)
        self._versions = TableVersions(config, registry, workspace)

    async def create(
        self, context: SessionContext, request: CreateTempTable, progress: ProgressSink
    ) -> Outcome:
        name = check_table_name(request.name)
        upstream = self._upstream.session(context)
        async with self._registry.creating(context.user_id, context.session_id, name) as session:
            return await self._create(session, context, upstream, request, name, progress)

    async def _create(
        self,
        session: Session,
        context: SessionContext,
        upstream: UpstreamSession,
        request: CreateTempTable,
        name: str,
        progress: ProgressSink,
    ) -> Outcome:
        await self._drop_if_lost(upstream, session)
        existing = session.tables.get(name.lower())
        taken = existing is not None or name.lower() in await temp_view_names(upstream)
        if taken and request.if_not_exists:
            return Outcome.of_rows(results.STATUS_COLUMNS, [(False, self._exists_message(name))])
        if taken and not request.or_replace:
            raise TempTableExists(
                self._exists_message(name) + "; drop it first or use CREATE OR REPLACE"
            )
        self._quotas.check_new_table(session, name, existing)
        fmt = await self._format(upstream, request.format, name)
        source = await shaped_input(upstream, request, name)
        written = check_shape(source.schema, request.partition_columns, fmt, name)
        files = layout(name, fmt, written, request.partition_columns, request.options)
        relation = checked(source.relation, name, rules(fmt, written, request.partition_columns))
        await refuse_zeros_of_both_signs(
            upstream, source.relation, name, zero_columns(fmt, written, request.partition_columns)
        )
        log.info("Temporary table [%s] is being created.", name)
        try:
            location = self._workspace.new_table_folder(context.session_id, context.user_id)
        except WorkspaceError as exc:
            raise WorkspaceError(f"Temporary table [{name}] was not created: {exc}") from exc
        table = TempTable(
            name=name,
            location=location,
            format=fmt,
            schema_json=written.json(),
            partition_columns=request.partition_columns,
            options=files.options,
            rows=0,
            created=datetime.datetime.now(datetime.timezone.utc),
        )
        done = await self._versions.write_and_swap(
            session, upstream, table, relation, existing, taken=taken, progress=progress
        )
        return Outcome.of_rows(results.CREATED_COLUMNS, [(name, done.rows)])

    async def _drop_if_lost(self, upstream: UpstreamSession, session: Session) -> None:
        """Drop tables left from an upstream session that is gone (caller holds the lock).

        A restarted upstream makes a new session for a known id, and a client
        that does not say which server-side session it saw (the stock client
        does) gets no SESSION_CHANGED; its old tables' views are gone.
        """
        known = session.server_side_session_id
        if not known or not session.tables:
            return
        found = await probe(upstream, known, self._config.recovery_timeout_s)
        if found.liveness is not Liveness.GONE:
            return
        log.info(
            "Session [%s] is a new one on the Spark Connect server; its earlier temporary "
            "tables go.",
            session.session_id,
        )
        for table in self._registry.unlist_all(session):
            self._versions.remove_files(table)

    def _exists_message(self, name: str) -> str:
        return (
            f"A table or view with given name [{name}] already exists in schema "
            "[session]"
        )

    async def _format(self, upstream: UpstreamSession, given: str | None, name: str) -> str:
        fmt = given
        if not fmt:
            fmt = (await upstream.config([SESSION_FORMAT_KEY])).get(SESSION_FORMAT_KEY)
        fmt = (fmt or self._config.temp_table_format).lower()
        if fmt not in TEMP_TABLE_FORMATS:
            raise TempTableError(
                f"unknown format [{fmt}] for temporary table [{name}]; use one of "
                + ", ".join(TEMP_TABLE_FORMATS)
            )
        return fmt
