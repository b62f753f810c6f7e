"""A session's temp tables once they exist: find, list, read, drop, keep private.

Names are case-insensitive and may carry the temp workspace qualifier
(``tmp.name``); a name with another qualifier is never a temp table.

A temp table is its files plus a temporary view that names them, and a
client can drop or replace that view behind the gateway's back (SQL the
gateway does not read, such as ``EXECUTE IMMEDIATE``). Reads and listings
therefore check the view before trusting it: a read asks Spark whether the
name still means exactly the table's files (``same_semantics``), a listing
whether the views still exist. A table whose view went is reported (logged,
left out, an error naming it) and cleaned up, and a read is always a read
of the table's own files, so it never reaches a permanent table of the
same name.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import (
    ConnectPluginError,
    TempTableNotFound,
    TempTableQueryFailed,
    UpstreamFailed,
)
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import Name
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.release import to_the_end
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import Outcome
from connect_plugin.server.table_files.table_names import (
    RETIRED_QUALIFIER,
    SESSION_QUALIFIERS,
    retired,
)
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.views import drop_view, files_relation, temp_view_names
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import SessionContext, Upstream, UpstreamSession

log = logging.getLogger(__name__)

VIEW_NOT_FOUND = "TABLE_OR_VIEW_NOT_FOUND"
"""Spark's error class for a name that resolves to nothing."""


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
        """The session's temp table ``name`` refers to, if it refers to one (plainly, or as
        ``session.name`` or ``system.session.name``); Drill's ``tmp.name`` of a temp table
        is an error naming ``session.``."""
        qualifier = None if name.qualifier is None else name.qualifier.lower()
        session = self._registry.find(context.user_id, context.session_id)
        table = None if session is None else session.tables.get(name.name.lower())
        if qualifier is None or qualifier in SESSION_QUALIFIERS:
            return table
        if qualifier == RETIRED_QUALIFIER and table is not None:
            raise retired(name)
        return None

    def being_created(self, context: SessionContext, name: Name) -> bool:
        """Whether a CTTAS of ``name`` is under way in the session (a DROP must wait for it)."""
        session = self._registry.find(context.user_id, context.session_id)
        return session is not None and session.creating[name.name.lower()] > 0

    async def drop(
        self, context: SessionContext, name: Name, *, if_exists: bool, strict: bool
    ) -> Outcome | None:
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
                    return _status(False, f"Temporary table [{name}] not found")
                raise TempTableNotFound(f"Temporary table [{name}] not found in this session")
            await to_the_end(self._drop(context, session, table))
        return _status(True, f"Temporary table [{table.name}] dropped")

    async def _drop(self, context: SessionContext, session: Session, table: TempTable) -> None:
        log.info("Temporary table [%s] is being dropped.", table.name)
        self._registry.begin_drop([table])
        try:
            await drop_view(self._upstream.session(context), table.name)
        except ConnectPluginError:
            self._registry.cancel_drop(table)
            raise
        self._forget_table(session, table)

    def _forget_table(self, session: Session, table: TempTable) -> None:
        self._registry.unlist(session, table)
        self._workspace.remove(table.location)
        self._registry.remove([table])

    async def listing(self, context: SessionContext) -> Outcome:
        """SHOW TEMPORARY TABLES, without the tables whose views went behind the gateway."""
        session = self._registry.find(context.user_id, context.session_id)
        if session is not None and session.tables:
            views = await temp_view_names(self._upstream.session(context))
            for table in list(session.tables.values()):
                if table.key not in views:
                    await self._out_of_step(context, table)
        tables = [] if session is None else sorted(session.tables.values(), key=lambda t: t.key)
        tables = [await self._count(context, t) for t in tables]
        rows = [
            (t.name, t.format, t.rows, self._workspace.size(t.location), t.created) for t in tables
        ]
        return Outcome.of_rows(results.LIST_COLUMNS, rows)

    def files(self, context: SessionContext, name: Name) -> spark_proto.Relation:
        """A read of the table's files, unchecked (for analysis: the schema is theirs)."""
        return files_relation(self._existing(context, name))

    def _existing(self, context: SessionContext, name: Name) -> TempTable:
        table = self.lookup(context, name)
        if table is None:
            raise TempTableNotFound(
                f"Temporary table [{name}] not found in this session; SHOW TEMPORARY "
                "TABLES lists the ones it has"
            )
        return table

    async def read(self, context: SessionContext, name: Name) -> spark_proto.Relation:
        """A read of the table's files, once its name is known to still mean them.

        A CTTAS may replace the table between the check and the lookup; the
        check then runs again on the new table.
        """
        upstream = self._upstream.session(context)
        while True:
            table = self._existing(context, name)
            if await self.view_is_table(upstream, table):
                return files_relation(table)
            if await self._out_of_step(context, table):
                raise TempTableNotFound(
                    f"Temporary table [{table.name}] not found in this session: its view was "
                    "dropped or replaced outside the gateway, so the table was dropped too"
                )

    @staticmethod
    async def view_is_table(upstream: UpstreamSession, table: TempTable) -> bool:
        named = spark_proto.Relation()
        named.read.named_table.unparsed_identifier = quote_identifier(table.name)
        try:
            return await upstream.same_semantics(named, files_relation(table))
        except UpstreamFailed as exc:
            if exc.error_class.startswith(VIEW_NOT_FOUND):
                return False
            raise TempTableQueryFailed(
                f"Temporary table [{table.name}] cannot be read: {exc.message}"
            ) from exc

    async def _out_of_step(self, context: SessionContext, table: TempTable) -> bool:
        """Report and clean up a table whose view is no longer its own (the view stays).

        False when a statement replaced or dropped the table meanwhile.
        """
        async with self._registry.statement(context.user_id, context.session_id) as session:
            if session.tables.get(table.key) is not table:
                return False
            log.warning(
                "Temporary table [%s]: its view was dropped or replaced outside the gateway; "
                "the table is dropped and its files deleted.",
                table.name,
            )
            self._registry.begin_drop([table])
            self._forget_table(session, table)
        return True

    async def written(self, context: SessionContext, name: Name) -> None:
        """Spark added files to a temp table (INSERT, a scan's rejects): make them private,
        measuring its bytes on the way (on a worker thread), and count its rows again when they are next asked
        for."""
        session = self._registry.find(context.user_id, context.session_id)
        table = self.lookup(context, name)
        if session is not None and table is not None:
            size = await asyncio.to_thread(self._workspace.secure, table.location)
            self._registry.files_added(session, table, size)

    async def _count(self, context: SessionContext, table: TempTable) -> TempTable:
        """The table with its rows counted, if Spark added files since they last were."""
        if table.rows is not None:
            return table
        relation = spark_proto.Relation()
        with deep_messages():
            relation.aggregate.input.CopyFrom(files_relation(table))
        relation.aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
        relation.aggregate.aggregate_expressions.add().expression_string.expression = (
            "count(1) AS rows"
        )
        try:
            (row,) = await self._upstream.session(context).rows(relation)
        except UpstreamFailed as exc:
            raise TempTableQueryFailed(
                f"Temporary table [{table.name}]: counting its rows failed: {exc.message}"
            ) from exc
        rows = row["rows"]
        assert isinstance(rows, int)
        session = self._registry.find(context.user_id, context.session_id)
        if session is None or session.tables.get(table.key) is not table:
            return dataclasses.replace(table, rows=rows)
        return self._registry.set_rows(session, table, rows)


def _status(ok: bool, summary: str) -> Outcome:
    return Outcome.of_rows(results.STATUS_COLUMNS, [(ok, summary)])
