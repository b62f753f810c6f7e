"""A session's temp tables once they exist: find, list, read, drop, keep private.

Names are case-insensitive and may carry the temp workspace qualifier
(``tmp.name``); a name with another qualifier is never a temp table.
"""

from __future__ import annotations

import logging

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import ConnectPluginError, TempTableNotFound
from connect_plugin.server import results
from connect_plugin.server.release import to_the_end
from connect_plugin.server.requests import Name
from connect_plugin.server.session_store import TempTable
from connect_plugin.server.sessions import Session, SessionRegistry
from connect_plugin.server.upstream import SessionContext, Upstream, quote_identifier
from connect_plugin.server.views import drop_view
from connect_plugin.server.workspace import Workspace

log = logging.getLogger(__name__)


class Tables:
    """Lookups, listings, reads and drops of the temp tables of each session."""

    def __init__(
        self, config: Config, registry: SessionRegistry, workspace: Workspace, upstream: Upstream
    ) -> None:
        self._config = config
        self._registry = registry
        self._workspace = workspace
        self._upstream = upstream

    def lookup(self, context: SessionContext, name: Name) -> TempTable | None:
        """The session's temp table ``name`` refers to, if it refers to one."""
        if name.qualifier is not None and name.qualifier.lower() != self._workspace_name:
            return None
        if len(name.parts) > 2:
            return None
        session = self._registry.find(context.user_id, context.session_id)
        return None if session is None else session.tables.get(name.name.lower())

    def being_created(self, context: SessionContext, name: Name) -> bool:
        """Whether a CTTAS of ``name`` is under way in the session (a DROP must wait for it)."""
        session = self._registry.find(context.user_id, context.session_id)
        return session is not None and session.creating[name.name.lower()] > 0

    @property
    def _workspace_name(self) -> str:
        return self._config.temp_workspace_name.lower()

    async def drop(
        self, context: SessionContext, name: Name, *, if_exists: bool, strict: bool
    ) -> spark_proto.Relation | None:
        """Drop a temp table; ``None`` when ``name`` is none and ``strict`` is off (SQL).

        The lookup happens under the session's lock, so a DROP of a name a
        CTTAS is creating waits for that CTTAS and sees its outcome. A client
        that goes away mid-DROP does not leave the view and the row disagreeing.
        """
        async with self._registry.statement(context.user_id, context.session_id) as session:
            table = self.lookup(context, name)
            if table is None:
                if not strict:
                    return None
                if if_exists:
                    return results.status(False, f"Temporary table [{name}] not found")
                raise TempTableNotFound(f"Temporary table [{name}] not found in this session")
            await to_the_end(self._drop_table(context, session, table))
        return results.status(True, f"Temporary table [{table.name}] dropped")

    async def _drop_table(self, context: SessionContext, session: Session, table: TempTable) -> None:
        log.info("Temporary table [%s] is being dropped.", table.name)
        self._registry.begin_drop([table])
        try:
            await drop_view(self._upstream.session(context), table.name)
        except ConnectPluginError:
            self._registry.cancel_drop(table)
            raise
        self._registry.unlist(session, table)
        self._workspace.remove(table.location)
        self._registry.remove([table])

    async def listing(self, context: SessionContext) -> spark_proto.Relation:
        session = self._registry.find(context.user_id, context.session_id)
        tables = [] if session is None else sorted(session.tables.values(), key=lambda t: t.key)
        rows = [
            (t.name, t.format, t.rows, self._workspace.size(t.location), t.created) for t in tables
        ]
        return results.result_relation(results.LIST_COLUMNS, rows)

    async def read(self, context: SessionContext, name: Name) -> spark_proto.Relation:
        table = self.lookup(context, name)
        if table is None:
            raise TempTableNotFound(
                f"Temporary table [{name}] not found in this session; SHOW TEMPORARY TABLES "
                "lists the ones it has"
            )
        relation = spark_proto.Relation()
        relation.read.named_table.unparsed_identifier = quote_identifier(table.name)
        return relation

    def secure(self, context: SessionContext, name: Name) -> None:
        """Make files Spark added to a temp table (INSERT) private again."""
        table = self.lookup(context, name)
        if table is not None:
            self._workspace.secure(table.location)
